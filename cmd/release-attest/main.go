// Command release-attest writes what make release says of its images besides their digests, which
// make publish attaches to them as signed in-toto attestations (docs/release.md):
//
//	release-attest sbom --binary manager --version v0.1.0 --created 1764000000 --out webhook-operator.cdx.json
//	release-attest provenance --source https://github.com/seedlabs/webhook-operator --commit <sha> \
//	    --builder <uri> --param VERSION=v0.1.0 --out provenance.json
//
// sbom writes the CycloneDX 1.6 SBOM of a Go binary, from the build information in it; provenance
// writes the SLSA v1 provenance predicate of the release, naming the toolchain release-attest was
// built with, which make runs it with (go run), as it builds the binaries.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/seedlabs/webhook-operator/internal/attest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "release-attest:", err)
		os.Exit(1)
	}
}

func run(_ context.Context, args []string) error {
	if len(args) == 0 {
		return errors.New("name what to write: sbom or provenance")
	}
	switch args[0] {
	case "sbom":
		return sbom(args[1:])
	case "provenance":
		return provenance(args[1:])
	default:
		return fmt.Errorf("%q is neither sbom nor provenance", args[0])
	}
}

func sbom(args []string) error {
	flags := flag.NewFlagSet("release-attest sbom", flag.ContinueOnError)
	binary := flags.String("binary", "", "The Go binary to describe (required).")
	version := flags.String("version", "", "The release's version, the program's (required).")
	created := flags.Int64("created", 0, "The SBOM's time, in seconds since 1970 (SOURCE_DATE_EPOCH).")
	out := flags.String("out", "", "The file to write (required).")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if err := required(map[string]string{"binary": *binary, "version": *version, "out": *out}); err != nil {
		return err
	}
	bom, err := attest.SBOM(*binary, *version, time.Unix(*created, 0))
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := attest.WriteSBOM(&buf, bom); err != nil {
		return err
	}
	return os.WriteFile(*out, buf.Bytes(), 0o644)
}

func provenance(args []string) error {
	flags := flag.NewFlagSet("release-attest provenance", flag.ContinueOnError)
	b := attest.Build{GoVersion: runtime.Version(), Parameters: map[string]string{}}
	flags.StringVar(&b.Source, "source", "", "The repository's URL (required).")
	flags.StringVar(&b.Commit, "commit", "", "The commit built (required).")
	flags.StringVar(&b.Builder, "builder", "", "Who ran make release, as a URI: a CI run's URL, say (required).")
	flags.Func("param", "A make variable that selects what is built, NAME=VALUE (repeatable).", func(s string) error {
		name, value, ok := strings.Cut(s, "=")
		if !ok || name == "" {
			return fmt.Errorf("%q is not NAME=VALUE", s)
		}
		b.Parameters[name] = value
		return nil
	})
	out := flags.String("out", "", "The file to write (required).")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if err := required(map[string]string{"source": b.Source, "commit": b.Commit, "builder": b.Builder, "out": *out}); err != nil {
		return err
	}
	data, err := attest.Provenance(b)
	if err != nil {
		return err
	}
	return os.WriteFile(*out, data, 0o644)
}

// required fails naming each flag of flags that is empty, in a stable order.
func required(flags map[string]string) error {
	var missing []string
	for name, value := range flags {
		if value == "" {
			missing = append(missing, "--"+name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	slices.Sort(missing)
	return fmt.Errorf("missing %s", strings.Join(missing, ", "))
}
