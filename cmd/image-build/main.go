// Command image-build writes an OCI image layout of a program for one or more platforms, without
// a container engine: make images builds the manager's and welcome-web's images with it, and the
// end-to-end test the images of its own programs. See internal/image for what an image holds.
//
//	image-build --ref ghcr.io/seedlabs/webhook-operator:v0.1.0 --entrypoint /manager \
//	    --platform linux/amd64=bin/linux_amd64/manager --platform linux/arm64=bin/linux_arm64/manager \
//	    --out bin/images/webhook-operator
//
// A platform's source is a file, which becomes the entrypoint, or a directory, which is copied to
// the image's root as it is. It prints the index's digest and each image's compressed size.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/seedlabs/webhook-operator/internal/image"
)

// listFlag is a flag that may be given many times.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "image-build:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	flags := flag.NewFlagSet("image-build", flag.ContinueOnError)
	ref := flags.String("ref", "", "The image's name and tag, recorded in the layout (required).")
	out := flags.String("out", "", "The directory of the OCI image layout, replaced (required).")
	entrypoint := flags.String("entrypoint", "", "The program's path in the image (required).")
	user := flags.String("user", image.NonRoot, "The user and group the program runs as.")
	var platforms, env, labels, fixedArgs listFlag
	flags.Var(&platforms, "platform", "os/arch[/variant]=source: a file that becomes the entrypoint, or a root file system directory (repeatable, required).")
	flags.Var(&env, "env", "NAME=value in the image's environment (repeatable).")
	flags.Var(&labels, "label", "key=value label of the image (repeatable).")
	flags.Var(&fixedArgs, "arg", "An argument after the entrypoint (repeatable).")
	if err := flags.Parse(args); err != nil {
		return err
	}
	var missing []string
	for _, f := range []struct{ name, value string }{{"ref", *ref}, {"out", *out}, {"entrypoint", *entrypoint}} {
		if f.value == "" {
			missing = append(missing, "--"+f.name)
		}
	}
	if len(platforms) == 0 {
		missing = append(missing, "--platform")
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing %s", strings.Join(missing, ", "))
	}

	spec := image.Spec{
		Entrypoint: append([]string{*entrypoint}, fixedArgs...),
		User:       *user,
		Env:        env,
		Base:       image.NonRootBase(),
	}
	if len(labels) > 0 {
		spec.Labels = map[string]string{}
		for _, l := range labels {
			k, v, ok := strings.Cut(l, "=")
			if !ok {
				return fmt.Errorf("--label %q: want key=value", l)
			}
			spec.Labels[k] = v
		}
	}
	for _, p := range platforms {
		platform, source, err := parsePlatform(p)
		if err != nil {
			return err
		}
		files, err := platformFiles(source, *entrypoint)
		if err != nil {
			return err
		}
		spec.Platforms = append(spec.Platforms, image.Platform{Platform: platform, Files: files})
	}

	idx, err := image.Build(spec)
	if err != nil {
		return err
	}
	if err := image.WriteLayout(*out, *ref, idx); err != nil {
		return err
	}
	return printSummary(*ref, idx)
}

// parsePlatform parses os/arch[/variant]=source.
func parsePlatform(s string) (v1.Platform, string, error) {
	name, source, ok := strings.Cut(s, "=")
	if !ok || source == "" {
		return v1.Platform{}, "", fmt.Errorf("--platform %q: want os/arch[/variant]=source", s)
	}
	p, err := v1.ParsePlatform(name)
	if err != nil || p.OS == "" || p.Architecture == "" {
		return v1.Platform{}, "", fmt.Errorf("--platform %q: want os/arch[/variant]=source", s)
	}
	return *p, source, nil
}

// platformFiles are the files of a platform's source: a file is the entrypoint, a directory the
// image's root file system.
func platformFiles(source, entrypoint string) ([]image.File, error) {
	info, err := os.Stat(source)
	if err != nil {
		return nil, err
	}
	if info.IsDir() {
		return image.Tree(source)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is neither a regular file nor a directory", source)
	}
	if info.Mode()&0o111 == 0 {
		return nil, fmt.Errorf("%s is not executable", source)
	}
	return []image.File{{Path: entrypoint, Mode: fs.FileMode(0o755), Source: source}}, nil
}

// printSummary prints the index's digest and every image's platform and compressed size.
func printSummary(ref string, idx v1.ImageIndex) error {
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	manifest, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	var sizes []string
	for _, desc := range manifest.Manifests {
		img, err := idx.Image(desc.Digest)
		if err != nil {
			return err
		}
		size, err := image.CompressedSize(img)
		if err != nil {
			return err
		}
		sizes = append(sizes, fmt.Sprintf("%s %.1f MB", desc.Platform.String(), float64(size)/1e6))
	}
	if len(sizes) == 0 {
		return errors.New("the index holds no image")
	}
	fmt.Printf("%s %s (%s)\n", ref, digest, strings.Join(sizes, ", "))
	return nil
}
