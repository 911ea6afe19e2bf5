// Command kubectl-webhook_operator is webhook-operator's kubectl plugin: on PATH it runs as
// `kubectl webhook-operator`. Its lint command runs the operator's admission over manifests
// offline, so CI can check them before they reach a cluster.
package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/seedlabs/webhook-operator/internal/lint"
	"github.com/seedlabs/webhook-operator/webhooks"
)

// Exit codes.
const (
	exitValid   = 0
	exitInvalid = 1 // an object would be refused
	exitUsage   = 2 // bad arguments, or a file that cannot be read
)

const usage = `Run webhook-operator's admission over manifests, offline.

Usage:
  kubectl webhook-operator lint -f FILENAME [-f FILENAME ...] [-R] [-o text|json] [--allowed-registries=LIST]

Each Welcome, Memcached and DeployObject is defaulted and validated by the same rules the
operator's webhooks serve, and decoded as strictly as kubectl apply sends it. FILENAME is a file,
a directory (its .yaml, .yml and .json files; -R for its subdirectories too) or - for standard
input, which is also read when no -f is given. Objects of other kinds are skipped.

Exit status: 0 when every object would be admitted (warnings allowed), 1 when one would be
refused, 2 on bad usage or a file that cannot be read.

Flags:
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "lint" {
		_, _ = fmt.Fprint(stderr, usage)
		_, _ = fmt.Fprintln(stderr, "  (see lint --help)")
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			return exitValid
		}
		_, _ = fmt.Fprintln(stderr, `error: unknown command; the only command is "lint"`)
		return exitUsage
	}
	fs := pflag.NewFlagSet("lint", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		_, _ = fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	files := fs.StringArrayP("filename", "f", nil, "A file, directory or - (standard input) to lint; may be repeated.")
	recursive := fs.BoolP("recursive", "R", false, "Lint the files of directories' subdirectories too.")
	output := fs.StringP("output", "o", "text", "Output format: text (kubectl's words) or json.")
	registries := fs.StringSlice("allowed-registries", nil,
		"Registries an image may come from, as the manager's --allowed-registries; unset allows any.")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return exitValid
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		_, _ = fmt.Fprintf(stderr, "error: unexpected arguments %q; name files with -f\n", fs.Args())
		return exitUsage
	}
	if *output != "text" && *output != "json" {
		_, _ = fmt.Fprintf(stderr, "error: --output must be text or json, not %q\n", *output)
		return exitUsage
	}
	var allowed []string
	for _, r := range *registries {
		if r = strings.TrimSpace(r); r != "" {
			allowed = append(allowed, r)
		}
	}
	policy, err := webhooks.NewImagePolicy(allowed)
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "error: --allowed-registries: %v\n", err)
		return exitUsage
	}
	sources, err := expand(*files, *recursive)
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "error: %v\n", err)
		return exitUsage
	}

	linter := lint.Linter{Policy: policy}
	var results []lint.Result
	for _, source := range sources {
		got, err := lintSource(linter, source, stdin)
		results = append(results, got...)
		if err != nil {
			_, _ = fmt.Fprintf(stderr, "error: %v\n", err)
			return exitUsage
		}
	}

	if *output == "json" {
		err = lint.WriteJSON(stdout, results)
	} else {
		err = lint.WriteText(stdout, stderr, results)
	}
	if err != nil {
		return exitUsage
	}
	if lint.Summarize(results).Invalid > 0 {
		return exitInvalid
	}
	return exitValid
}

// lintSource lints the file source, or stdin for "-".
func lintSource(linter lint.Linter, source string, stdin io.Reader) ([]lint.Result, error) {
	if source == "-" {
		return linter.Lint(source, stdin)
	}
	f, err := os.Open(source)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	return linter.Lint(source, f)
}

// expand turns the -f arguments into the files to read, in order: a directory's manifests by
// name, its subdirectories' when recursive; no argument means standard input.
func expand(args []string, recursive bool) ([]string, error) {
	if len(args) == 0 {
		return []string{"-"}, nil
	}
	var files []string
	for _, arg := range args {
		if arg == "-" {
			files = append(files, arg)
			continue
		}
		info, err := os.Stat(arg)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			files = append(files, arg)
			continue
		}
		var found []string
		err = filepath.WalkDir(arg, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path != arg && !recursive {
					return filepath.SkipDir
				}
				return nil
			}
			if ext := filepath.Ext(path); ext == ".yaml" || ext == ".yml" || ext == ".json" {
				found = append(found, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("%s: no .yaml, .yml or .json files", arg)
		}
		slices.Sort(found)
		files = append(files, found...)
	}
	return files, nil
}
