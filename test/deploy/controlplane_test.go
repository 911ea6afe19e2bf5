package deploy

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestControlPlaneFromSetupEnvtest: make takes etcd, kube-apiserver and kubectl from setup-envtest
// when it can download them, and builds them from the Go module proxy when it cannot, failing over
// at once. The download is served here, from an index and an archive in setup-envtest's format.
func TestControlPlaneFromSetupEnvtest(t *testing.T) {
	version := strings.TrimPrefix(makeVariable(t, "KUBE_VERSION"), "v")
	binaries := map[string][]byte{}
	var archive bytes.Buffer
	gz := gzip.NewWriter(&archive)
	tw := tar.NewWriter(gz)
	for _, name := range []string{"etcd", "kube-apiserver", "kubectl"} {
		binaries[name] = []byte("#!/bin/sh\necho " + name + " from the served archive\n")
		if err := tw.WriteHeader(&tar.Header{Name: "controller-tools/envtest/" + name, Mode: 0o755, Size: int64(len(binaries[name]))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(binaries[name]); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	sum := sha512.Sum512(archive.Bytes())
	archiveName := fmt.Sprintf("envtest-v%s-%s-%s.tar.gz", version, runtime.GOOS, runtime.GOARCH)

	mux := http.NewServeMux()
	server := httptest.NewServer(mux)
	defer server.Close()
	mux.HandleFunc("/envtest-releases.yaml", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprintf(w, "releases:\n  v%s:\n    %s:\n      hash: %s\n      selfLink: %s/%s\n",
			version, archiveName, hex.EncodeToString(sum[:]), server.URL, archiveName)
	})
	mux.HandleFunc("/"+archiveName, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(archive.Bytes()) })

	t.Run("downloaded when setup-envtest can", func(t *testing.T) {
		assets := filepath.Join(t.TempDir(), "assets")
		for _, name := range []string{"etcd", "kube-apiserver", "kubectl"} {
			start := time.Now()
			out, err := runMake(t, filepath.Join(assets, name), "KUBEBUILDER_ASSETS="+assets,
				"ENVTEST_INDEX="+server.URL+"/envtest-releases.yaml", "ENVTEST_DOWNLOAD_DIR="+filepath.Join(t.TempDir(), "envtest"))
			if err != nil || !strings.Contains(out, name+" v"+version+": downloaded by setup-envtest") {
				t.Fatalf("make %s: %v\n%s", name, err, out)
			}
			t.Logf("%s: downloaded and installed in %s", name, time.Since(start).Round(time.Millisecond))
			got, err := os.ReadFile(filepath.Join(assets, name))
			if err != nil || !bytes.Equal(got, binaries[name]) {
				t.Errorf("%s in KUBEBUILDER_ASSETS is not the served one (%v)", name, err)
			}
		}
	})

	t.Run("built from source when setup-envtest cannot, failing over at once", func(t *testing.T) {
		unreachable := "http://127.0.0.1:1/envtest-releases.yaml"
		start := time.Now()
		if err := exec.CommandContext(t.Context(), makeVariable(t, "SETUP_ENVTEST"), "use", version, "--bin-dir", t.TempDir(),
			"--index", unreachable, "-p", "path").Run(); err == nil {
			t.Fatal("setup-envtest downloaded from an unreachable index")
		}
		t.Logf("setup-envtest failed in %s", time.Since(start).Round(time.Millisecond))

		assets := filepath.Join(t.TempDir(), "assets")
		out, err := runMake(t, filepath.Join(assets, "etcd"), "KUBEBUILDER_ASSETS="+assets, "ENVTEST_INDEX="+unreachable,
			"ENVTEST_DOWNLOAD_DIR="+filepath.Join(t.TempDir(), "envtest"))
		if err != nil || !strings.Contains(out, "etcd v"+version+": setup-envtest cannot download it; building it from the Go module proxy") {
			t.Fatalf("make etcd: %v\n%s", err, out)
		}
		built, err := exec.CommandContext(t.Context(), filepath.Join(assets, "etcd"), "--version").Output()
		if err != nil || !strings.Contains(string(built), "etcd Version:") {
			t.Errorf("the etcd built: %q, %v", built, err)
		}
	})
}

// TestToolsModuleSharesVersions: every module that kube-apiserver or etcd and the packages make
// test builds both compile packages of is at one version in test/tools/kube and here, so that a
// fresh clone's make test compiles those packages once (KUBE_BUILD in the Makefile). Go chooses
// each module's versions on its own: a bump in one alone still builds, and costs minutes.
func TestToolsModuleSharesVersions(t *testing.T) {
	modules := func(dir string, packages ...string) map[string]string {
		t.Helper()
		// Read here, go.mod is one of the files the test's cached result depends on.
		if _, err := os.ReadFile(filepath.Join(dir, "go.mod")); err != nil {
			t.Fatal(err)
		}
		versions := map[string]string{}
		for _, line := range goList(t, dir, append([]string{"-deps", "-test", "-f",
			"{{with .Module}}{{.Path}} {{with .Replace}}{{.Version}}{{else}}{{.Version}}{{end}}{{end}}"}, packages...)...) {
			if path, version, ok := strings.Cut(line, " "); ok {
				versions[path] = version
			}
		}
		return versions
	}
	root := moduleRoot(t)
	var tested []string
	for _, pkg := range goList(t, root, "./...") {
		if !strings.HasSuffix(pkg, "/test/deploy") {
			tested = append(tested, pkg)
		}
	}
	ours := modules(root, tested...)
	kube := modules(filepath.Join(root, "test", "tools", "kube"), "./cmd/etcd", "./cmd/kube-apiserver")
	shared := 0
	for path, version := range kube {
		if ourVersion, ok := ours[path]; ok {
			shared++
			if ourVersion != version {
				t.Errorf("%s is %s in test/tools/kube and %s here: go get it at one version in both", path, version, ourVersion)
			}
		}
	}
	// k8s.io/api, apimachinery, client-go and apiserver, with what they import, are most of both.
	if shared < 50 {
		t.Errorf("only %d modules are shared; the listing is wrong", shared)
	}
	t.Logf("%d modules shared", shared)
}

// goList runs go list with args in dir and returns the lines it prints.
func goList(t *testing.T, dir string, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s in %s: %v", strings.Join(args, " "), dir, err)
	}
	var lines []string
	for line := range strings.Lines(string(out)) {
		if line = strings.TrimSpace(line); line != "" {
			lines = append(lines, line)
		}
	}
	return lines
}
