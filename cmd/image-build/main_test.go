package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seedlabs/webhook-operator/internal/image"
)

func TestRunWritesANamedLayoutWithAnImagePerPlatform(t *testing.T) {
	dir := t.TempDir()
	binary := filepath.Join(dir, "manager")
	if err := os.WriteFile(binary, []byte("program"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "layout")
	const ref = "ghcr.io/seedlabs/webhook-operator:v9"
	err := run([]string{"--ref", ref, "--entrypoint", "/manager", "--label", "a=b", "--env", "X=y",
		"--platform", "linux/amd64=" + binary, "--platform", "linux/arm64=" + binary, "--out", out})
	if err != nil {
		t.Fatal(err)
	}
	idx, name, err := image.ReadLayout(out)
	if err != nil {
		t.Fatal(err)
	}
	if name != ref {
		t.Errorf("layout names %q, want %q", name, ref)
	}
	manifest, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, desc := range manifest.Manifests {
		platforms = append(platforms, desc.Platform.String())
		img, err := idx.Image(desc.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Config.User != image.NonRoot || cfg.Config.Labels["a"] != "b" || len(cfg.Config.Env) != 1 || cfg.Config.Env[0] != "X=y" {
			t.Errorf("%s: config %+v", desc.Platform, cfg.Config)
		}
	}
	if strings.Join(platforms, " ") != "linux/amd64 linux/arm64" {
		t.Errorf("platforms %v", platforms)
	}
}

func TestRunRefusesBadArguments(t *testing.T) {
	dir := t.TempDir()
	notExecutable := filepath.Join(dir, "data")
	if err := os.WriteFile(notExecutable, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		args []string
		want []string
	}{
		"nothing":        {nil, []string{"--ref", "--out", "--entrypoint", "--platform"}},
		"no platform os": {[]string{"--ref", "r:1", "--out", dir + "/o", "--entrypoint", "/p", "--platform", "amd64"}, []string{"want os/arch"}},
		"not executable": {[]string{"--ref", "r:1", "--out", dir + "/o", "--entrypoint", "/p", "--platform", "linux/amd64=" + notExecutable}, []string{"not executable"}},
		"missing source": {[]string{"--ref", "r:1", "--out", dir + "/o", "--entrypoint", "/p", "--platform", "linux/amd64=" + dir + "/none"}, []string{"no such file"}},
		"bad label":      {[]string{"--ref", "r:1", "--out", dir + "/o", "--entrypoint", "/p", "--label", "x", "--platform", "linux/amd64=" + notExecutable}, []string{"key=value"}},
	} {
		t.Run(name, func(t *testing.T) {
			err := run(tc.args)
			if err == nil {
				t.Fatal("run succeeded")
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %q", err, want)
				}
			}
		})
	}
}
