// Command image-push pushes the image index an OCI image layout of image-build holds to a
// registry, by the digest it was built with, and tags it: make publish pushes a release's images
// with it.
//
//	image-push --layout dist/release/images/webhook-operator --ref ghcr.io/seedlabs/webhook-operator:v0.1.0
//
// It prints the reference by digest, which a release's install.yaml and chart already name. The
// credentials are docker's (~/.docker/config.json, or DOCKER_CONFIG); --plain-http speaks HTTP, to
// a registry on localhost.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"

	"github.com/seedlabs/webhook-operator/internal/image"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "image-push:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	flags := flag.NewFlagSet("image-push", flag.ContinueOnError)
	layout := flags.String("layout", "", "The OCI image layout image-build wrote (required).")
	ref := flags.String("ref", "", "The repository and tag to push to, such as ghcr.io/seedlabs/webhook-operator:v0.1.0 (required).")
	plainHTTP := flags.Bool("plain-http", false, "Speak HTTP to the registry, not HTTPS.")
	if err := flags.Parse(args); err != nil {
		return err
	}
	var missing []string
	for _, f := range []struct{ name, value string }{{"layout", *layout}, {"ref", *ref}} {
		if f.value == "" {
			missing = append(missing, "--"+f.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing %s", strings.Join(missing, ", "))
	}
	idx, _, err := image.ReadLayout(*layout)
	if err != nil {
		return err
	}
	pushed, err := image.Push(ctx, idx, *ref, *plainHTTP)
	if err != nil {
		return err
	}
	fmt.Println(pushed)
	return nil
}
