// Command kubectl-webhook_operator is webhook-operator's kubectl plugin: on PATH it runs as
// `kubectl webhook-operator`. Its lint command runs the operator's admission over manifests
// offline, so CI can check them before they reach a cluster; its convert command rewrites them
// at the API's next version.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	policyv1 "github.com/seedlabs/webhook-operator/api/policy/v1"
	policyv1alpha1 "github.com/seedlabs/webhook-operator/api/policy/v1alpha1"
	"github.com/seedlabs/webhook-operator/internal/convert"
	"github.com/seedlabs/webhook-operator/internal/lint"
	"github.com/seedlabs/webhook-operator/internal/version"
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
  kubectl webhook-operator version                  print the version and commit the plugin was built from
  kubectl webhook-operator rules [-o text|json]     list the rules an AdmissionPolicy can name
  kubectl webhook-operator convert -f FILENAME [-f FILENAME ...] [-R]
                                                    write manifests' v1alpha1 objects at v1 (convert --help)
  kubectl webhook-operator lint -f FILENAME [-f FILENAME ...] [-R] [-o text|json] [-n NAMESPACE]
      [--policy=FILE [--namespace-labels=KEY=VALUE,...]] [--allowed-registries=LIST]
      [--operator-namespace=NAMESPACE]

Each Welcome, Memcached and DeployObject is defaulted and validated by the same rules the
operator's webhooks serve, and decoded as strictly as kubectl apply sends it; so is each item of
a list (a v1 List, a WelcomeList, ...), and of a list among its items, down to 10 lists. FILENAME is a file, a directory (its .yaml, .yml and .json
files; -R for its subdirectories too) or - for standard input, which is also read when no -f is
given. Objects of other kinds are skipped. An object with only a generateName is judged under the
name the API server would generate, with xxxxx for its random part. Objects in kube-system and in
the operator's namespace (--operator-namespace) are unchecked: the API server calls none of the
operator's webhooks for them. With --policy, an AdmissionPolicy decides what each broken rule
does (Enforce refuses, Warn warns, Audit only lists it in the JSON output), for objects in a
namespace of the given labels and kubernetes.io/metadata.name, the namespace's name; without it,
every rule refuses or warns as by default. --allowed-registries is the manager's flag: the
registries allowed unless the policy names its own (its allowedRegistries, where [] allows any).

Exit status: 0 when every object would be admitted (warnings allowed, unchecked too), 1 when one
would be refused, 2 on bad usage, a bad policy or a file that cannot be read.

Flags:
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "rules" {
		return listRules(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "convert" {
		return convertFiles(args[1:], stdin, stdout, stderr)
	}
	if len(args) == 1 && (args[0] == "version" || args[0] == "--version") {
		_, _ = fmt.Fprintln(stdout, version.String("kubectl-webhook_operator"))
		return exitValid
	}
	if len(args) == 0 || args[0] != "lint" {
		_, _ = fmt.Fprint(stderr, usage)
		_, _ = fmt.Fprintln(stderr, "  (see lint --help)")
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			return exitValid
		}
		_, _ = fmt.Fprintln(stderr, `error: unknown command; the commands are "lint", "rules", "convert" and "version"`)
		return exitUsage
	}
	fs, files, recursive := fileCommand("lint", usage, "lint", stderr)
	output := fs.StringP("output", "o", "text", "Output format: text (kubectl's words) or json.")
	registries := fs.StringSlice("allowed-registries", nil,
		"Registries an image may come from, as the manager's --allowed-registries; unset allows any.")
	policyFile := fs.String("policy", "", "An AdmissionPolicy (YAML) to lint under, as the cluster's named cluster.")
	namespaceLabels := fs.StringToString("namespace-labels", nil,
		"The labels of the namespaces the objects go to, for the policy's namespace overrides; kubernetes.io/metadata.name is each one's name.")
	namespace := fs.StringP("namespace", "n", metav1.NamespaceDefault,
		"The namespace of objects that name none; given, objects that name another are refused, as kubectl refuses them.")
	operatorNamespace := fs.String("operator-namespace", lint.DefaultOperatorNamespace,
		"The namespace the operator is installed in: the webhooks are not called for its objects, nor for kube-system's.")
	if code, ok := parseFileCommand(fs, args[1:], stderr); !ok {
		return code
	}
	if *output != "text" && *output != "json" {
		_, _ = fmt.Fprintf(stderr, "error: --output must be text or json, not %q\n", *output)
		return exitUsage
	}
	if _, set := (*namespaceLabels)[corev1.LabelMetadataName]; set {
		_, _ = fmt.Fprintf(stderr, "error: --namespace-labels: the API server sets %s to the namespace's name; name the namespace with --namespace\n",
			corev1.LabelMetadataName)
		return exitUsage
	}
	for _, flag := range []struct{ name, value string }{{"namespace", *namespace}, {"operator-namespace", *operatorNamespace}} {
		if msgs := apimachineryvalidation.ValidateNamespaceName(flag.value, false); len(msgs) > 0 {
			_, _ = fmt.Fprintf(stderr, "error: --%s: %q: %s\n", flag.name, flag.value, strings.Join(msgs, "; "))
			return exitUsage
		}
	}
	var allowed []string
	for _, r := range *registries {
		if r = strings.TrimSpace(r); r != "" {
			allowed = append(allowed, r)
		}
	}
	images, err := webhooks.NewImagePolicy(allowed)
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "error: --allowed-registries: %v\n", err)
		return exitUsage
	}
	policy := webhooks.DefaultPolicy(images)
	if *policyFile != "" {
		if policy, err = readPolicy(*policyFile, images); err != nil {
			_, _ = fmt.Fprintf(stderr, "error: --policy: %v\n", err)
			return exitUsage
		}
	}
	sources, err := expand(*files, *recursive)
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "error: %v\n", err)
		return exitUsage
	}

	linter := lint.Linter{
		Policy:            policy,
		NamespaceLabels:   *namespaceLabels,
		Namespace:         *namespace,
		EnforceNamespace:  fs.Changed("namespace"),
		OperatorNamespace: *operatorNamespace,
	}
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

// listedRule is one rule as `rules -o json` lists it.
type listedRule struct {
	ID      string   `json:"id"`
	Kind    string   `json:"kind"`
	Field   string   `json:"field"`
	Summary string   `json:"summary"`
	Default string   `json:"defaultAction"`
	Allowed []string `json:"allowedActions"`
}

// listRules prints every rule: its ID, what it holds, and what an AdmissionPolicy may do with it.
func listRules(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("rules", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	output := fs.StringP("output", "o", "text", "Output format: text or json.")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return exitValid
		}
		return exitUsage
	}
	var list []listedRule
	for _, r := range webhooks.Rules() {
		item := listedRule{ID: string(r.ID), Kind: r.Kind, Field: r.Field, Summary: r.Summary, Default: string(r.Default)}
		for _, a := range r.Actions {
			item.Allowed = append(item.Allowed, string(a))
		}
		list = append(list, item)
	}
	switch *output {
	case "json":
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(list); err != nil {
			return exitUsage
		}
	case "text":
		w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		_, _ = fmt.Fprintln(w, "RULE\tFIELD\tDEFAULT\tACTIONS\tREQUIRES")
		for _, r := range list {
			_, _ = fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", r.ID, r.Field, r.Default, strings.Join(r.Allowed, ","), r.Summary)
		}
		if err := w.Flush(); err != nil {
			return exitUsage
		}
	default:
		_, _ = fmt.Fprintf(stderr, "error: --output must be text or json, not %q\n", *output)
		return exitUsage
	}
	return exitValid
}

const convertUsage = `Write manifests' Welcomes, Memcacheds and AdmissionPolicies at v1alpha1 at v1, as the API
server converts them, to standard output.

Usage:
  kubectl webhook-operator convert -f FILENAME [-f FILENAME ...] [-R]

A Welcome's spec.password, which v1 has no field for, goes into its annotation
auth.seedlabs.dev/conversion-data; the other two kinds change only their apiVersion. Items of
lists are converted where they are. A document with nothing to convert is written as it was;
one that converts is written anew, keys sorted, without its comments. FILENAME is a file, a
directory (its .yaml, .yml and .json files; -R for its subdirectories too) or - for standard
input, which is also read when no -f is given; the documents of all of them are written in order,
separated by ---. An object that does not decode as its kind (an unknown field, say) is an error,
and nothing is written.

Exit status: 0 when everything was written, 2 on bad usage or a file that cannot be read or
converted.

Flags:
`

// convertFiles converts the -f files to stdout.
func convertFiles(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, files, recursive := fileCommand("convert", convertUsage, "convert", stderr)
	if code, ok := parseFileCommand(fs, args, stderr); !ok {
		return code
	}
	sources, err := expand(*files, *recursive)
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "error: %v\n", err)
		return exitUsage
	}
	var out strings.Builder
	for _, source := range sources {
		var converted strings.Builder
		err := withSource(source, stdin, func(r io.Reader) error {
			_, err := convert.Manifest(r, &converted)
			return err
		})
		if err != nil {
			_, _ = fmt.Fprintf(stderr, "error: %s: %v\n", source, err)
			return exitUsage
		}
		if out.Len() > 0 && converted.Len() > 0 {
			out.WriteString("---\n")
		}
		out.WriteString(converted.String())
	}
	if _, err := io.WriteString(stdout, out.String()); err != nil {
		return exitUsage
	}
	return exitValid
}

// fileCommand is the flag set of the command name, whose usage is text, with the flags -f and -R
// that name the files it reads to verb them.
func fileCommand(name, text, verb string, stderr io.Writer) (fs *pflag.FlagSet, files *[]string, recursive *bool) {
	fs = pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		_, _ = fmt.Fprint(stderr, text)
		fs.PrintDefaults()
	}
	files = fs.StringArrayP("filename", "f", nil, "A file, directory or - (standard input) to "+verb+"; may be repeated.")
	recursive = fs.BoolP("recursive", "R", false, strings.ToUpper(verb[:1])+verb[1:]+" the files of directories' subdirectories too.")
	return fs, files, recursive
}

// parseFileCommand parses the arguments of a fileCommand, and reports false, with the exit status,
// for --help, a bad flag or an argument that is not a flag.
func parseFileCommand(fs *pflag.FlagSet, args []string, stderr io.Writer) (int, bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return exitValid, false
		}
		return exitUsage, false
	}
	if fs.NArg() > 0 {
		_, _ = fmt.Fprintf(stderr, "error: unexpected arguments %q; name files with -f\n", fs.Args())
		return exitUsage, false
	}
	return exitValid, true
}

// readPolicy reads an AdmissionPolicy from file, as strictly as kubectl would send it, and
// compiles it with images where it names no registries, or says every reason the operator's
// webhook would refuse it for.
func readPolicy(file string, images webhooks.ImagePolicy) (*webhooks.Policy, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var p policyv1.AdmissionPolicy
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	// v1alpha1, deprecated, has v1's fields: the same strict read holds either.
	if p.Kind != "AdmissionPolicy" || (p.APIVersion != policyv1.GroupVersion.String() && p.APIVersion != policyv1alpha1.GroupVersion.String()) {
		return nil, fmt.Errorf("%s: not a %s or %s AdmissionPolicy", file, policyv1.GroupVersion, policyv1alpha1.GroupVersion)
	}
	compiled, errs := webhooks.NewPolicy(&p, images)
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s: %w", file, errs.ToAggregate())
	}
	return compiled, nil
}

// lintSource lints the file source, or stdin for "-".
func lintSource(linter lint.Linter, source string, stdin io.Reader) (results []lint.Result, err error) {
	err = withSource(source, stdin, func(r io.Reader) error {
		results, err = linter.Lint(source, r)
		return err
	})
	return results, err
}

// withSource calls read with the file source open, or with stdin for "-".
func withSource(source string, stdin io.Reader, read func(io.Reader) error) error {
	if source == "-" {
		return read(stdin)
	}
	f, err := os.Open(source)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	return read(f)
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
