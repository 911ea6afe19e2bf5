// Package version holds the version and commit a binary was built from, which the Makefile and
// the Dockerfile stamp in with -ldflags "-X".
package version

import "fmt"

// Stamped at link time; a plain `go build` or `go test` leaves these defaults.
var (
	version = "dev"
	commit  = "unknown"
)

// Version is the release the binary was built as, such as v0.1.0, or "dev".
func Version() string { return version }

// Commit is the git commit the binary was built from, or "unknown".
func Commit() string { return commit }

// String is what a program's --version prints: its name, version and commit.
func String(program string) string {
	return fmt.Sprintf("%s %s (commit %s)", program, version, commit)
}
