// Package lint runs the operator's admission (defaulting, then validation) over manifests, offline,
// as kube-apiserver would run it on `kubectl apply`: the same Go rules the webhooks serve, the
// same strict decoding of unknown and duplicate fields, and the same 422 Invalid message.
package lint

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	authv1alpha1 "github.com/seedlabs/webhook-operator/api/auth/v1alpha1"
	cachev1alpha1 "github.com/seedlabs/webhook-operator/api/cache/v1alpha1"
	"github.com/seedlabs/webhook-operator/webhooks"
)

// Verdict is what admission makes of one object.
type Verdict string

const (
	// Valid objects would be admitted, perhaps with warnings.
	Valid Verdict = "Valid"
	// Invalid objects would be refused: they break a rule, or do not decode as their kind.
	Invalid Verdict = "Invalid"
	// Skipped objects are of a kind the operator does not admit.
	Skipped Verdict = "Skipped"
)

// Result is the verdict on one object of a manifest.
type Result struct {
	// Source is the file the object came from, "-" for standard input.
	Source string `json:"source"`
	// Document is the object's position in Source, from 1; objects of a List share it.
	Document   int     `json:"document"`
	APIVersion string  `json:"apiVersion,omitempty"`
	Kind       string  `json:"kind,omitempty"`
	Namespace  string  `json:"namespace,omitempty"`
	Name       string  `json:"name,omitempty"`
	Verdict    Verdict `json:"verdict"`
	// Message is the API server's message for a refusal, as kubectl prints it.
	Message    string      `json:"message,omitempty"`
	Violations []Violation `json:"violations,omitempty"`
	Warnings   []string    `json:"warnings,omitempty"`
	// Audited are the rules the object breaks that the policy only counts.
	Audited []string `json:"audited,omitempty"`
}

// Violation is one broken rule, as a cause of the API server's 422 Invalid.
type Violation struct {
	Field   string `json:"field"`
	Type    string `json:"type"`
	Message string `json:"message"`
}

// Linter lints manifests under an admission policy, as a manager with it in force admits them.
type Linter struct {
	// Policy is the policy in force; nil is the default policy with no registry allow-list.
	Policy *webhooks.Policy
	// Namespace are the labels of the namespace the objects go to, for the policy's namespace
	// overrides; nil matches only the overrides that select every namespace.
	Namespace labels.Set
}

// decoder decodes the operator's kinds strictly: an unknown or duplicate field is an error, as it
// is for `kubectl apply`, whose field validation is Strict by default.
var decoder = func() runtime.Decoder {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{authv1alpha1.AddToScheme, cachev1alpha1.AddToScheme, appv1.AddToScheme} {
		if err := add(scheme); err != nil {
			panic(err)
		}
	}
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
}()

// Lint reads the YAML or JSON documents of source from r and returns a result per object. A
// document that does not parse, has a key twice or is not a Kubernetes object is an Invalid
// result; only a stream that cannot be read is an error.
func (l Linter) Lint(source string, r io.Reader) ([]Result, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var results []Result
	for document := 1; ; document++ {
		data, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return results, nil
		}
		if err != nil {
			return results, fmt.Errorf("%s: %w", source, err)
		}
		if len(bytes.TrimSpace(data)) == 0 || isOnlyComments(data) {
			document--
			continue
		}
		objects, err := splitList(data)
		if err != nil {
			results = append(results, Result{Source: source, Document: document, Verdict: Invalid,
				Message: fmt.Sprintf("error parsing document %d: %v", document, err)})
			continue
		}
		for _, obj := range objects {
			result := l.object(obj)
			result.Source, result.Document = source, document
			results = append(results, result)
		}
	}
}

// isOnlyComments reports whether a YAML document holds nothing but comments.
func isOnlyComments(data []byte) bool {
	for line := range strings.SplitSeq(string(data), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			return false
		}
	}
	return true
}

// typeAndName is what every Kubernetes object has.
type typeAndName struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Items []json.RawMessage `json:"items"`
}

// splitList returns the objects of a YAML document as JSON: the document itself, or the items of
// a List, as kubectl reads them. A key given twice is an error, as strict field validation makes
// it on the API server; converting to JSON first would silently keep the last.
func splitList(data []byte) ([][]byte, error) {
	object, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, err
	}
	var meta typeAndName
	if err := json.Unmarshal(object, &meta); err != nil {
		return nil, fmt.Errorf("not a Kubernetes object: %w", err)
	}
	if meta.APIVersion == "" || meta.Kind == "" {
		return nil, errors.New("not a Kubernetes object: apiVersion and kind are required")
	}
	if meta.APIVersion != "v1" || !strings.HasSuffix(meta.Kind, "List") {
		return [][]byte{object}, nil
	}
	items := make([][]byte, 0, len(meta.Items))
	for _, item := range meta.Items {
		items = append(items, item)
	}
	return items, nil
}

// object admits one object as kube-apiserver would with the operator installed.
func (l Linter) object(data []byte) Result {
	var meta typeAndName
	_ = json.Unmarshal(data, &meta) // splitList decoded it once already
	result := Result{APIVersion: meta.APIVersion, Kind: meta.Kind, Namespace: meta.Metadata.Namespace, Name: meta.Metadata.Name}
	gv, err := schema.ParseGroupVersion(meta.APIVersion)
	if err != nil {
		return l.refused(result, err)
	}
	gk := gv.WithKind(meta.Kind).GroupKind()
	switch gv.WithKind(meta.Kind) {
	case authv1alpha1.GroupVersion.WithKind("Welcome"), cachev1alpha1.GroupVersion.WithKind("Memcached"),
		appv1.GroupVersion.WithKind("DeployObject"):
	default:
		result.Verdict = Skipped
		return result
	}
	obj, _, err := decoder.Decode(data, nil, nil)
	if err != nil {
		return l.refused(result, apierrors.NewBadRequest(err.Error()))
	}
	var errs field.ErrorList
	var warnings []string
	switch o := obj.(type) {
	case *authv1alpha1.Welcome:
		webhooks.DefaultWelcome(o)
		errs, warnings = webhooks.ValidateWelcome(nil, o, l.Policy.Images())
	case *cachev1alpha1.Memcached:
		// kube-apiserver refuses a negative scale subresource replica count itself, before any
		// validating webhook runs, and says only that.
		if o.Spec.Size != nil && *o.Spec.Size < 0 {
			return l.refused(result, apierrors.NewInvalid(gk, meta.Metadata.Name, field.ErrorList{
				field.Invalid(field.NewPath(".spec.size"), *o.Spec.Size, "should be a non-negative integer")}))
		}
		webhooks.DefaultMemcached(o)
		errs, warnings = webhooks.ValidateMemcached(nil, o)
	case *appv1.DeployObject:
		webhooks.DefaultDeployObject(o)
		errs, warnings = webhooks.ValidateDeployObject(nil, o, l.Policy.Images())
	}
	verdict := l.Policy.Judge(errs, warnings, l.Namespace)
	errs, result.Warnings = verdict.Refused, verdict.Warnings
	for _, id := range verdict.Audited {
		result.Audited = append(result.Audited, string(id))
	}
	if len(errs) == 0 {
		result.Verdict = Valid
		return result
	}
	return l.refused(result, apierrors.NewInvalid(gk, meta.Metadata.Name, errs))
}

// refused is result refused with err, a cause per violation when err is a 422 Invalid.
func (Linter) refused(result Result, err error) Result {
	result.Verdict, result.Message = Invalid, err.Error()
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Details != nil {
		for _, c := range status.Status().Details.Causes {
			result.Violations = append(result.Violations, Violation{Field: c.Field, Type: string(c.Type), Message: c.Message})
		}
	}
	return result
}

// Summary counts the verdicts of results.
type Summary struct {
	Valid   int `json:"valid"`
	Invalid int `json:"invalid"`
	Skipped int `json:"skipped"`
}

// Summarize counts the verdicts of results.
func Summarize(results []Result) Summary {
	var s Summary
	for _, r := range results {
		switch r.Verdict {
		case Valid:
			s.Valid++
		case Invalid:
			s.Invalid++
		case Skipped:
			s.Skipped++
		}
	}
	return s
}

// WriteText writes results as kubectl writes what it applies: a line per object admitted or
// skipped on out, and the warnings and refusals on errOut, each refusal after its file's name in
// exactly the words `kubectl apply` prints for it.
func WriteText(out, errOut io.Writer, results []Result) error {
	for _, r := range results {
		for _, w := range r.Warnings {
			if _, err := fmt.Fprintf(errOut, "Warning: %s\n", w); err != nil {
				return err
			}
		}
		var err error
		switch r.Verdict {
		case Valid:
			_, err = fmt.Fprintf(out, "%s valid\n", resourceName(r))
		case Skipped:
			_, err = fmt.Fprintf(out, "%s skipped: not a kind webhook-operator admits\n", resourceName(r))
		case Invalid:
			_, err = fmt.Fprintf(errOut, "%s: %s", r.Source, KubectlMessage(r))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// KubectlMessage is what kubectl prints when the API server refuses r, ending in a newline: for a
// 422 Invalid, "The <Kind> "<name>" is invalid: " and the causes, one on the line or each on its
// own "* " line (kubectl's cmdutil.CheckErr); for anything else, the error after its reason.
func KubectlMessage(r Result) string {
	if len(r.Violations) == 0 {
		return fmt.Sprintf("error: %s\n", r.Message)
	}
	prefix := fmt.Sprintf("The %s %q is invalid: ", r.Kind, r.Name)
	if len(r.Violations) == 1 {
		return fmt.Sprintf("%s%s: %s\n", prefix, r.Violations[0].Field, r.Violations[0].Message)
	}
	var b strings.Builder
	b.WriteString(prefix + "\n")
	for _, v := range r.Violations {
		fmt.Fprintf(&b, "* %s: %s\n", v.Field, v.Message)
	}
	return b.String()
}

// WriteJSON writes results and their summary as one JSON object.
func WriteJSON(out io.Writer, results []Result) error {
	if results == nil {
		results = []Result{}
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Summary Summary  `json:"summary"`
		Results []Result `json:"results"`
	}{Summarize(results), results})
}

// resourceName names the object as kubectl does: kind.group/name, in lower case.
func resourceName(r Result) string {
	kind := strings.ToLower(r.Kind)
	if gv, err := schema.ParseGroupVersion(r.APIVersion); err == nil && gv.Group != "" {
		kind += "." + gv.Group
	}
	return kind + "/" + r.Name
}
