package deploy

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// goBuild is one `go build` of a command: its environment settings, flags and package.
type goBuild struct {
	env     []string
	flags   string
	pkg     string
	context string
}

var goBuildLine = regexp.MustCompile(`((?:[A-Z_]+=\S+\s+)*)go build\s+(.*?)\s+-o\s+\S+\s+(\./cmd/[\w-]+)`)

// goBuilds returns every `go build` of a ./cmd package in text, with continuation lines joined.
func goBuilds(t *testing.T, path string) map[string]goBuild {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(data), "\\\n", " ")
	builds := map[string]goBuild{}
	for _, m := range goBuildLine.FindAllStringSubmatch(text, -1) {
		env := strings.Fields(m[1])
		// The target platform differs by design: the Dockerfile builds for TARGETOS/TARGETARCH.
		env = slices.DeleteFunc(env, func(e string) bool { return strings.HasPrefix(e, "GOOS=") || strings.HasPrefix(e, "GOARCH=") })
		slices.Sort(env)
		builds[m[3]] = goBuild{env: env, flags: strings.Join(strings.Fields(m[2]), " "), pkg: m[3], context: m[0]}
	}
	return builds
}

// TestDockerfileBuildsLikeMake keeps the Dockerfile's builds of the manager and welcome-web in
// step with `make build`, which the end-to-end test runs in place of a container image.
func TestDockerfileBuildsLikeMake(t *testing.T) {
	root := moduleRoot(t)
	docker := goBuilds(t, filepath.Join(root, "Dockerfile"))
	makefile := goBuilds(t, filepath.Join(root, "Makefile"))
	for _, pkg := range []string{"./cmd/manager", "./cmd/welcome-web"} {
		d, inDocker := docker[pkg]
		m, inMake := makefile[pkg]
		if !inDocker || !inMake {
			t.Errorf("%s: built by the Dockerfile: %t, by make build: %t; want both", pkg, inDocker, inMake)
			continue
		}
		if !slices.Equal(d.env, m.env) || d.flags != m.flags {
			t.Errorf("%s is built differently:\n Dockerfile: %s\n   Makefile: %s", pkg, d.context, m.context)
		}
		if !slices.Contains(d.env, "CGO_ENABLED=0") || !strings.Contains(d.flags, "-trimpath") {
			t.Errorf("%s: want a static (CGO_ENABLED=0), -trimpath build, got %s", pkg, d.context)
		}
	}
}
