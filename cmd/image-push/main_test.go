package main

import (
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/seedlabs/webhook-operator/internal/image"
)

// TestRunPushesTheLayoutByItsDigest: the registry serves the layout's index under the tag and under
// its digest, with every platform's image.
func TestRunPushesTheLayoutByItsDigest(t *testing.T) {
	reg := httptest.NewServer(registry.New())
	t.Cleanup(reg.Close)
	host := strings.TrimPrefix(reg.URL, "http://")

	dir, want := writeLayout(t)

	ref := host + "/seedlabs/webhook-operator:v9.9.9"
	if err := run(t.Context(), []string{"--layout", dir, "--ref", ref, "--plain-http"}); err != nil {
		t.Fatal(err)
	}
	for _, pulled := range []string{ref, host + "/seedlabs/webhook-operator@" + want.String()} {
		r, err := name.ParseReference(pulled, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		got, err := remote.Index(r, remote.WithContext(t.Context()))
		if err != nil {
			t.Fatalf("pulling %s: %v", pulled, err)
		}
		digest, err := got.Digest()
		if err != nil || digest != want {
			t.Errorf("%s is %s (%v), want the layout's %s", pulled, digest, err, want)
		}
		manifest, err := got.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		for _, desc := range manifest.Manifests {
			if _, err := remote.Image(r.Context().Digest(desc.Digest.String()), remote.WithContext(t.Context())); err != nil {
				t.Errorf("the %s image of %s: %v", desc.Platform, pulled, err)
			}
		}
	}
}

func TestRunRefusesWhatItCannotPush(t *testing.T) {
	dir, _ := writeLayout(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no flags", nil, "missing --layout, --ref"},
		{"no layout there", []string{"--layout", filepath.Join(t.TempDir(), "none"), "--ref", "127.0.0.1:1/a:v1"}, "no such file"},
		{"a reference without a tag", []string{"--layout", dir, "--ref", "127.0.0.1:1/a"}, "not an image reference with a tag"},
		{"no registry there", []string{"--layout", dir, "--ref", "127.0.0.1:1/a:v1", "--plain-http"}, "pushing 127.0.0.1:1/a:v1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := run(t.Context(), tc.args)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("run(%q) = %v, want an error with %q", tc.args, err, tc.want)
			}
		})
	}
}

// writeLayout writes a layout of two platforms' images, as image-build does, and returns it and
// its index's digest.
func writeLayout(t *testing.T) (string, v1.Hash) {
	t.Helper()
	idx, err := image.Build(image.Spec{
		Entrypoint: []string{"/manager"},
		User:       image.NonRoot,
		Base:       image.NonRootBase(),
		Platforms: []image.Platform{
			{Platform: v1.Platform{OS: "linux", Architecture: "amd64"}, Files: []image.File{{Path: "/manager", Mode: 0o755, Data: []byte("amd64")}}},
			{Platform: v1.Platform{OS: "linux", Architecture: "arm64"}, Files: []image.File{{Path: "/manager", Mode: 0o755, Data: []byte("arm64")}}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "layout")
	if err := image.WriteLayout(dir, "ghcr.io/seedlabs/webhook-operator:v9.9.9", idx); err != nil {
		t.Fatal(err)
	}
	digest, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return dir, digest
}
