package image

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// entry is what a test reads of one tar entry.
type entry struct {
	Name     string
	Type     byte
	Mode     int64
	UID, GID int
	Link     string
	Data     string
	ModTime  int64
}

func layerEntries(t *testing.T, l v1.Layer) []entry {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	var entries []entry
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return entries
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, entry{Name: hdr.Name, Type: hdr.Typeflag, Mode: hdr.Mode, UID: hdr.Uid, GID: hdr.Gid,
			Link: hdr.Linkname, Data: string(data), ModTime: hdr.ModTime.Unix()})
	}
}

func testSpec(binary string) Spec {
	return Spec{
		Entrypoint: []string{"/manager"},
		User:       NonRoot,
		Env:        []string{"A=b"},
		Labels:     map[string]string{"org.opencontainers.image.version": "v9"},
		Base:       NonRootBase(),
		Platforms: []Platform{
			{Platform: v1.Platform{OS: "linux", Architecture: "amd64"}, Files: []File{{Path: "/manager", Mode: 0o755, Source: binary}}},
			{Platform: v1.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}, Files: []File{{Path: "/manager", Mode: 0o755, Data: []byte("arm")}}},
		},
	}
}

func writeBinary(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "manager")
	if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestBuildMakesAnOCIIndexOfOneImagePerPlatform(t *testing.T) {
	idx, err := Build(testSpec(writeBinary(t, "amd")))
	if err != nil {
		t.Fatal(err)
	}
	if mt, _ := idx.MediaType(); mt != types.OCIImageIndex {
		t.Errorf("index media type %s, want %s", mt, types.OCIImageIndex)
	}
	manifest, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(manifest.Manifests) != 2 {
		t.Fatalf("%d manifests, want 2", len(manifest.Manifests))
	}
	wantBinary := map[string]string{"linux/amd64": "amd", "linux/arm64/v8": "arm"}
	for _, desc := range manifest.Manifests {
		img, err := idx.Image(desc.Digest)
		if err != nil {
			t.Fatal(err)
		}
		if desc.MediaType != types.OCIManifestSchema1 {
			t.Errorf("%s: manifest media type %s", desc.Platform, desc.MediaType)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		got := cfg.OS + "/" + cfg.Architecture
		if cfg.Variant != "" {
			got += "/" + cfg.Variant
		}
		if got != desc.Platform.String() {
			t.Errorf("config platform %s, descriptor %s", got, desc.Platform)
		}
		want := v1.Config{Entrypoint: []string{"/manager"}, User: "65532:65532", Env: []string{"A=b"}, WorkingDir: "/",
			Labels: map[string]string{"org.opencontainers.image.version": "v9"}}
		if diff := cmp.Diff(want, cfg.Config); diff != "" {
			t.Errorf("%s config (-want +got):\n%s", got, diff)
		}
		if cfg.Created.Unix() != 0 {
			t.Errorf("%s: created %s, want the epoch", got, cfg.Created)
		}
		layers, err := img.Layers()
		if err != nil {
			t.Fatal(err)
		}
		if len(layers) != 2 {
			t.Fatalf("%s: %d layers, want the base and the program's", got, len(layers))
		}
		for _, l := range layers {
			if mt, _ := l.MediaType(); mt != types.OCILayer {
				t.Errorf("%s: layer media type %s", got, mt)
			}
		}
		base := layerEntries(t, layers[0])
		wantBase := []entry{
			{Name: "etc/", Type: tar.TypeDir, Mode: 0o755},
			{Name: "etc/group", Type: tar.TypeReg, Mode: 0o644, Data: "root:x:0:\nnonroot:x:65532:\n"},
			{Name: "etc/passwd", Type: tar.TypeReg, Mode: 0o644, Data: "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"},
			{Name: "home/", Type: tar.TypeDir, Mode: 0o755},
			{Name: "home/nonroot/", Type: tar.TypeDir, Mode: 0o700, UID: 65532, GID: 65532},
			{Name: "tmp/", Type: tar.TypeDir, Mode: 0o1777},
		}
		if diff := cmp.Diff(wantBase, base); diff != "" {
			t.Errorf("%s base layer (-want +got):\n%s", got, diff)
		}
		program := layerEntries(t, layers[1])
		if diff := cmp.Diff([]entry{{Name: "manager", Type: tar.TypeReg, Mode: 0o755, Data: wantBinary[got]}}, program); diff != "" {
			t.Errorf("%s program layer (-want +got):\n%s", got, diff)
		}
	}
}

func TestBuildIsReproducible(t *testing.T) {
	binary := writeBinary(t, "the same program")
	digest := func() v1.Hash {
		idx, err := Build(testSpec(binary))
		if err != nil {
			t.Fatal(err)
		}
		d, err := idx.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	first := digest()
	// A file's time on disk is not the layer's.
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(binary, later, later); err != nil {
		t.Fatal(err)
	}
	if again := digest(); again != first {
		t.Errorf("two builds of the same inputs: %s, then %s", first, again)
	}
	if err := os.WriteFile(binary, []byte("another program"), 0o755); err != nil {
		t.Fatal(err)
	}
	if changed := digest(); changed == first {
		t.Errorf("a different program gave the same digest %s", first)
	}
}

func TestBuildRefusesBadSpecs(t *testing.T) {
	for name, tc := range map[string]struct {
		mutate func(*Spec)
		want   string
	}{
		"no platform":         {func(s *Spec) { s.Platforms = nil }, "no platform"},
		"relative entrypoint": {func(s *Spec) { s.Entrypoint = []string{"manager"} }, "absolute"},
		"no entrypoint":       {func(s *Spec) { s.Entrypoint = nil }, "absolute"},
		"relative path":       {func(s *Spec) { s.Base = append(s.Base, File{Path: "etc/x"}) }, "clean absolute path"},
		"unclean path":        {func(s *Spec) { s.Base = append(s.Base, File{Path: "/etc/../x"}) }, "clean absolute path"},
		"twice":               {func(s *Spec) { s.Base = append(s.Base, File{Path: "/tmp", Dir: true}) }, "twice"},
		"two kinds":           {func(s *Spec) { s.Base = append(s.Base, File{Path: "/x", Dir: true, Link: "/y"}) }, "want one of"},
		"missing source":      {func(s *Spec) { s.Platforms[0].Files[0].Source = "/does/not/exist" }, "no such file"},
	} {
		t.Run(name, func(t *testing.T) {
			spec := testSpec(writeBinary(t, "x"))
			tc.mutate(&spec)
			_, err := Build(spec)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Build: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestTreeListsARootFileSystem(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"usr/bin", "usr/lib"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "usr/bin/memcached"), []byte("elf"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "usr/lib/libx.so.1.0"), []byte("lib"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("libx.so.1.0", filepath.Join(root, "usr/lib/libx.so.1")); err != nil {
		t.Fatal(err)
	}
	files, err := Tree(root)
	if err != nil {
		t.Fatal(err)
	}
	l, err := newLayer(files)
	if err != nil {
		t.Fatal(err)
	}
	want := []entry{
		{Name: "usr/", Type: tar.TypeDir, Mode: 0o755},
		{Name: "usr/bin/", Type: tar.TypeDir, Mode: 0o755},
		{Name: "usr/bin/memcached", Type: tar.TypeReg, Mode: 0o755, Data: "elf"},
		{Name: "usr/lib/", Type: tar.TypeDir, Mode: 0o755},
		{Name: "usr/lib/libx.so.1", Type: tar.TypeSymlink, Mode: 0o777, Link: "libx.so.1.0"},
		{Name: "usr/lib/libx.so.1.0", Type: tar.TypeReg, Mode: 0o644, Data: "lib"},
	}
	if diff := cmp.Diff(want, layerEntries(t, l)); diff != "" {
		t.Errorf("layer of the tree (-want +got):\n%s", diff)
	}

	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Tree(root); err == nil || !strings.Contains(err.Error(), "only directories, regular files and symbolic links") {
		t.Errorf("Tree with a named pipe: %v", err)
	}
}

func TestLayoutRoundTripsAndArchives(t *testing.T) {
	idx, err := Build(testSpec(writeBinary(t, "amd")))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "layout")
	const ref = "ghcr.io/seedlabs/webhook-operator:v9"
	if err := WriteLayout(dir, ref, idx); err != nil {
		t.Fatal(err)
	}
	// Writing again replaces what was there.
	if err := WriteLayout(dir, ref, idx); err != nil {
		t.Fatal(err)
	}
	read, name, err := ReadLayout(dir)
	if err != nil {
		t.Fatal(err)
	}
	if name != ref {
		t.Errorf("layout names %q, want %q", name, ref)
	}
	want, _ := idx.Digest()
	if got, _ := read.Digest(); got != want {
		t.Errorf("read back %s, wrote %s", got, want)
	}

	var archive bytes.Buffer
	if err := Archive(&archive, dir); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	tr := tar.NewReader(&archive)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names[hdr.Name] = true
	}
	for _, name := range []string{"oci-layout", "index.json", "blobs/", "blobs/sha256/", "blobs/sha256/" + want.Hex} {
		if !names[name] {
			t.Errorf("the archive has no %s; it has %v", name, names)
		}
	}
}

func TestCompressedSizeCountsWhatAPullTransfers(t *testing.T) {
	idx, err := Build(testSpec(writeBinary(t, strings.Repeat("x", 1<<20))))
	if err != nil {
		t.Fatal(err)
	}
	manifest, _ := idx.IndexManifest()
	img, err := idx.Image(manifest.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	size, err := CompressedSize(img)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := img.Manifest()
	raw, _ := img.RawManifest()
	want := m.Config.Size + int64(len(raw))
	for _, l := range m.Layers {
		want += l.Size
	}
	if size != want || size >= 1<<20 {
		t.Errorf("compressed size %d, want %d (layers, config and manifest), below the 1 MiB uncompressed", size, want)
	}
}
