package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/seedlabs/webhook-operator/internal/operator"
)

// makeVariable is the value of a variable of the Makefile as make expands it, with the given
// variables set on make's command line.
func makeVariable(t *testing.T, name string, set ...string) string {
	t.Helper()
	args := append([]string{"--no-print-directory", "-s", "-C", moduleRoot(t), "--eval=print-%: ; @echo '$($*)'", "print-" + name}, set...)
	cmd := exec.Command("make", args...)
	// The test may run under make test, whose variables must not leak into this make.
	cmd.Env = append(os.Environ(), "MAKEFLAGS=", "MAKELEVEL=")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("make print-%s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}

// dockerfileBuild matches the Dockerfile's go build of a command: its CGO_ENABLED, then the
// command line from go build to the package.
var dockerfileBuild = regexp.MustCompile(`(CGO_ENABLED=\S+)\s+GOOS=\S+\s+GOARCH=\S+\s+(go build .*?) -o /out/\S+ (\./cmd/[\w-]+)`)

// TestDockerfileBuildsLikeMake keeps the Dockerfile's builds of the manager and welcome-web in
// step with the Makefile's GO_BUILD, which make build and make images build them with: the
// same environment and flags, with the Dockerfile's build arguments where make has VERSION and
// COMMIT. (The end-to-end test holds the images' binaries, user and entrypoint to the Dockerfile.)
func TestDockerfileBuildsLikeMake(t *testing.T) {
	root := moduleRoot(t)
	data, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	dockerfile := strings.ReplaceAll(string(data), "\\\n", " ")
	want := makeVariable(t, "GO_BUILD", "VERSION=$${VERSION}", "COMMIT=$${COMMIT}")
	if !strings.HasPrefix(want, "CGO_ENABLED=0 go build -trimpath ") {
		t.Errorf("GO_BUILD = %s; want a static (CGO_ENABLED=0), -trimpath build", want)
	}
	built := map[string]bool{}
	for _, m := range dockerfileBuild.FindAllStringSubmatch(dockerfile, -1) {
		built[m[3]] = true
		if got := m[1] + " " + m[2]; got != want {
			t.Errorf("the Dockerfile builds %s differently:\n Dockerfile: %s\n   GO_BUILD: %s", m[3], got, want)
		}
	}
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range []string{"./cmd/manager", "./cmd/welcome-web"} {
		if !built[pkg] {
			t.Errorf("the Dockerfile does not build %s", pkg)
		}
		if n := regexp.MustCompile(`\$\(GO_BUILD\) -o \S+ `+regexp.QuoteMeta(pkg)+`\b`).FindAll(makefile, -1); len(n) != 2 {
			t.Errorf("the Makefile builds %s with $(GO_BUILD) %d times; want 2: make build and make images", pkg, len(n))
		}
	}
}

// TestDefaultWelcomeImageIsBuilt holds the welcome-web image the operator runs by default to the
// one make images builds at the Makefile's version.
func TestDefaultWelcomeImageIsBuilt(t *testing.T) {
	if got := makeVariable(t, "WELCOME_IMG"); got != operator.DefaultWelcomeImage {
		t.Errorf("make images builds welcome-web as %s; the operator runs %s by default", got, operator.DefaultWelcomeImage)
	}
}
