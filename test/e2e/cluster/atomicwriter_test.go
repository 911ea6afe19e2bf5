//go:build linux

package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteVolumeSwapsEveryFileAtOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "serving-certs")
	if err := writeVolume(dir, map[string][]byte{"tls.crt": []byte("cert 1"), "tls.key": []byte("key 1")}, 0o644); err != nil {
		t.Fatal(err)
	}
	firstVersion := readLink(t, filepath.Join(dir, dataDirLink))
	checkVolume(t, dir, map[string]string{"tls.crt": "cert 1", "tls.key": "key 1"})

	if err := writeVolume(dir, map[string][]byte{"tls.crt": []byte("cert 2"), "tls.key": []byte("key 2")}, 0o644); err != nil {
		t.Fatal(err)
	}
	checkVolume(t, dir, map[string]string{"tls.crt": "cert 2", "tls.key": "key 2"})
	if got := readLink(t, filepath.Join(dir, dataDirLink)); got == firstVersion {
		t.Errorf("%s still points at %s after an update", dataDirLink, got)
	}

	// The visible names stay symlinks through ..data, and only the current version is kept.
	for _, name := range []string{"tls.crt", "tls.key"} {
		if got := readLink(t, filepath.Join(dir, name)); got != filepath.Join(dataDirLink, name) {
			t.Errorf("%s links to %s, want %s", name, got, filepath.Join(dataDirLink, name))
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var versions []string
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), "..") {
			versions = append(versions, e.Name())
		}
	}
	if len(versions) != 1 {
		t.Errorf("version directories %v, want only the current one", versions)
	}
}

func TestWriteVolumeRefusesNestedNames(t *testing.T) {
	for _, name := range []string{"a/b", "..data"} {
		if err := writeVolume(t.TempDir(), map[string][]byte{name: []byte("x")}, 0o644); err == nil {
			t.Errorf("file name %q was accepted", name)
		}
	}
}

func checkVolume(t *testing.T, dir string, want map[string]string) {
	t.Helper()
	for name, content := range want {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != content {
			t.Errorf("%s holds %q, want %q", name, got, content)
		}
	}
}

func readLink(t *testing.T, path string) string {
	t.Helper()
	target, err := os.Readlink(path)
	if err != nil {
		t.Fatal(err)
	}
	return target
}
