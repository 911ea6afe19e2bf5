// Package image builds the project's container images without a container engine: an OCI image
// index with one image per platform, each a base layer the project makes from files it owns and a
// layer of the program's files, written as an OCI image layout. go-containerregistry assembles the
// layers, configurations, manifests and index, and pushes them; this package only says what goes
// in them.
//
// A build is reproducible: every time in a layer and in a configuration is the Unix epoch, files
// are ordered by path and owned by numeric ids, so the same inputs give the same digest.
package image

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// NonRoot is the user and group the project's programs run as: distroless' "nonroot", which
// the restricted Pod Security Standard accepts because it is numeric and not 0.
const NonRoot = "65532:65532"

// Annotations of the index in an OCI layout that name its image: the OCI one, and the one
// containerd's import reads first.
const (
	AnnotationRefName        = "org.opencontainers.image.ref.name"
	AnnotationContainerdName = "io.containerd.image.name"
)

// epoch is the time of every file and configuration, for reproducible digests.
var epoch = time.Unix(0, 0).UTC()

// File is one entry of a layer. At most one of Data, Source, Dir and Link says what it is; none
// makes an empty regular file.
type File struct {
	// Path is where the file is in the image, absolute.
	Path string
	// Mode is its permission bits (and sticky bit, for a directory).
	Mode fs.FileMode
	// UID and GID own it.
	UID, GID int
	// Data is a regular file's content.
	Data []byte
	// Source is a regular file on this machine to copy in, read when the layer is written.
	Source string
	// Dir makes the entry a directory.
	Dir bool
	// Link makes the entry a symbolic link to Link.
	Link string
}

// Spec is one image: what every platform's image shares, and each platform's own files.
type Spec struct {
	// Entrypoint is the configuration's entrypoint: the program, then fixed arguments.
	Entrypoint []string
	// User is the configuration's user, "uid:gid".
	User string
	// Env is the configuration's environment, NAME=value.
	Env []string
	// Labels are the configuration's labels, such as org.opencontainers.image.version.
	Labels map[string]string
	// Base is the first layer of every platform's image.
	Base []File
	// Platforms are the images of the index, in order.
	Platforms []Platform
}

// Platform is the image of one operating system and architecture.
type Platform struct {
	v1.Platform
	// Files are the layer on top of the base: the program and whatever it needs.
	Files []File
}

// NonRootBase is a base for static programs that run as NonRoot: an /etc/passwd and /etc/group
// that name root and nonroot, nonroot's home, and a /tmp. It holds no shell, no package manager
// and no CA certificates: nothing the project ships makes a TLS connection but to the API server,
// whose CA comes with the pod's service account token.
func NonRootBase() []File {
	return []File{
		{Path: "/etc", Mode: 0o755, Dir: true},
		{Path: "/etc/group", Mode: 0o644, Data: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{Path: "/etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{Path: "/home", Mode: 0o755, Dir: true},
		{Path: "/home/nonroot", Mode: 0o700, UID: 65532, GID: 65532, Dir: true},
		{Path: "/tmp", Mode: 0o777 | fs.ModeSticky, Dir: true},
	}
}

// Tree lists the files under dir, a root file system on this machine, as they would be at the
// image's root, with their modes, owned by root. Symbolic links stay links.
func Tree(dir string) ([]File, error) {
	var files []File
	err := filepath.WalkDir(dir, func(file string, d fs.DirEntry, err error) error {
		if err != nil || file == dir {
			return err
		}
		rel, err := filepath.Rel(dir, file)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		f := File{Path: "/" + filepath.ToSlash(rel), Mode: info.Mode().Perm() | info.Mode()&fs.ModeSticky}
		switch {
		case d.IsDir():
			f.Dir = true
		case d.Type()&fs.ModeSymlink != 0:
			if f.Link, err = os.Readlink(file); err != nil {
				return err
			}
		case d.Type().IsRegular():
			f.Source = file
		default:
			return fmt.Errorf("%s: only directories, regular files and symbolic links go into an image", file)
		}
		files = append(files, f)
		return nil
	})
	return files, err
}

// Build assembles the image index of spec.
func Build(spec Spec) (v1.ImageIndex, error) {
	if len(spec.Platforms) == 0 {
		return nil, errors.New("no platform to build")
	}
	if len(spec.Entrypoint) == 0 || !path.IsAbs(spec.Entrypoint[0]) {
		return nil, fmt.Errorf("entrypoint %q: want an absolute program path", spec.Entrypoint)
	}
	base, err := newLayer(spec.Base)
	if err != nil {
		return nil, fmt.Errorf("the base layer: %w", err)
	}
	var adds []mutate.IndexAddendum
	for _, p := range spec.Platforms {
		files, err := newLayer(p.Files)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.String(), err)
		}
		img, err := mutate.AppendLayers(mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON), base, files)
		if err != nil {
			return nil, err
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		cfg = cfg.DeepCopy()
		cfg.OS, cfg.Architecture, cfg.Variant, cfg.OSVersion = p.OS, p.Architecture, p.Variant, p.OSVersion
		cfg.Created = v1.Time{Time: epoch}
		cfg.Config = v1.Config{
			Entrypoint: spec.Entrypoint,
			User:       spec.User,
			Env:        spec.Env,
			Labels:     spec.Labels,
			WorkingDir: "/",
		}
		for i := range cfg.History {
			cfg.History[i].Created = v1.Time{Time: epoch}
		}
		if img, err = mutate.ConfigFile(img, cfg); err != nil {
			return nil, err
		}
		platform := p.Platform
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &platform}})
	}
	return mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...), nil
}

// WriteLayout writes idx as the OCI image layout dir, replacing what was there, with the index
// named ref: its one manifest is idx, annotated with ref.
func WriteLayout(dir, ref string, idx v1.ImageIndex) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	return p.AppendIndex(idx, layout.WithAnnotations(map[string]string{AnnotationRefName: ref, AnnotationContainerdName: ref}))
}

// ReadLayout reads the image index an OCI layout written by WriteLayout holds, and its name.
func ReadLayout(dir string) (v1.ImageIndex, string, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, "", err
	}
	root, err := p.ImageIndex()
	if err != nil {
		return nil, "", err
	}
	manifest, err := root.IndexManifest()
	if err != nil {
		return nil, "", err
	}
	if len(manifest.Manifests) != 1 {
		return nil, "", fmt.Errorf("%s: want one image index in the layout, found %d manifests", dir, len(manifest.Manifests))
	}
	desc := manifest.Manifests[0]
	idx, err := root.ImageIndex(desc.Digest)
	if err != nil {
		return nil, "", err
	}
	return idx, desc.Annotations[AnnotationRefName], nil
}

// Push writes idx to a registry as ref, a tag, and returns the digest it is stored by, which is
// idx's: what an install that names the image by digest pulls. The credentials are those docker and
// crane keep (~/.docker/config.json, or DOCKER_CONFIG). plainHTTP speaks HTTP to the registry, as
// to one on localhost for tests; without it the registry must serve HTTPS. opts, when given,
// replace docker's credentials: a test's transport and user.
func Push(ctx context.Context, idx v1.ImageIndex, ref string, plainHTTP bool, opts ...remote.Option) (name.Digest, error) {
	nameOpts := []name.Option{name.StrictValidation}
	if plainHTTP {
		nameOpts = append(nameOpts, name.Insecure)
	}
	tag, err := name.NewTag(ref, nameOpts...)
	if err != nil {
		return name.Digest{}, fmt.Errorf("%q is not an image reference with a tag: %w", ref, err)
	}
	digest, err := idx.Digest()
	if err != nil {
		return name.Digest{}, err
	}
	if len(opts) == 0 {
		opts = []remote.Option{remote.WithAuthFromKeychain(authn.DefaultKeychain)}
	}
	opts = append([]remote.Option{remote.WithContext(ctx)}, opts...)
	if err := remote.WriteIndex(tag, idx, opts...); err != nil {
		return name.Digest{}, fmt.Errorf("pushing %s: %w", tag, err)
	}
	return tag.Context().Digest(digest.String()), nil
}

// Archive writes the OCI layout dir to w as a tar archive, the form `ctr images import` reads.
func Archive(w io.Writer, dir string) error {
	files, err := Tree(dir)
	if err != nil {
		return err
	}
	return writeTar(w, files)
}

// CompressedSize is what pulling img transfers: its layers, configuration and manifest.
func CompressedSize(img v1.Image) (int64, error) {
	manifest, err := img.Manifest()
	if err != nil {
		return 0, err
	}
	size := manifest.Config.Size
	for _, l := range manifest.Layers {
		size += l.Size
	}
	raw, err := img.RawManifest()
	return size + int64(len(raw)), err
}

// newLayer is a layer of files, as a gzipped tar with OCI's media type.
func newLayer(files []File) (v1.Layer, error) {
	files = slices.Clone(files)
	slices.SortFunc(files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	for i, f := range files {
		if !path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path {
			return nil, fmt.Errorf("%q: want a clean absolute path", f.Path)
		}
		if i > 0 && files[i-1].Path == f.Path {
			return nil, fmt.Errorf("%s is in the layer twice", f.Path)
		}
		kinds := 0
		for _, set := range []bool{f.Data != nil, f.Source != "", f.Dir, f.Link != ""} {
			if set {
				kinds++
			}
		}
		if kinds > 1 {
			return nil, fmt.Errorf("%s: want one of data, source, directory and link", f.Path)
		}
	}
	var buf bytes.Buffer
	if err := writeTar(&buf, files); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
}

// writeTar writes files, sorted by path, as a tar stream with every time the epoch.
func writeTar(w io.Writer, files []File) error {
	tw := tar.NewWriter(w)
	for _, f := range files {
		hdr := &tar.Header{
			Name:    strings.TrimPrefix(f.Path, "/"),
			Mode:    int64(f.Mode.Perm()),
			Uid:     f.UID,
			Gid:     f.GID,
			ModTime: epoch,
			Format:  tar.FormatPAX,
		}
		if f.Mode&fs.ModeSticky != 0 {
			hdr.Mode |= 0o1000
		}
		data := f.Data
		switch {
		case f.Dir:
			hdr.Typeflag, hdr.Name = tar.TypeDir, hdr.Name+"/"
		case f.Link != "":
			hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, f.Link
		case f.Source != "":
			var err error
			if data, err = os.ReadFile(f.Source); err != nil {
				return err
			}
			fallthrough
		default:
			hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(data))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	return tw.Close()
}
