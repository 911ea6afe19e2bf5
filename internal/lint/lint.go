// Package lint runs the operator's admission (defaulting, then validation) over manifests, offline,
// as kube-apiserver would run it on `kubectl apply`: the same Go rules the webhooks serve, the
// same strict decoding of unknown and duplicate fields, and the same 422 Invalid message.
package lint

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/operation"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/yaml"

	authv1alpha1 "github.com/seedlabs/webhook-operator/api/auth/v1alpha1"
	cachev1 "github.com/seedlabs/webhook-operator/api/cache/v1"
	cachev1alpha1 "github.com/seedlabs/webhook-operator/api/cache/v1alpha1"
	policyv1alpha1 "github.com/seedlabs/webhook-operator/api/policy/v1alpha1"
	"github.com/seedlabs/webhook-operator/internal/scheme"
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
	// Unchecked objects are in a namespace the webhooks' namespaceSelector leaves out: the API
	// server stores them without calling the operator's webhooks, so neither their defaulting nor
	// their rules apply, only what the API server checks itself.
	Unchecked Verdict = "Unchecked"
)

// DefaultOperatorNamespace is the namespace config/default installs the operator in.
const DefaultOperatorNamespace = "webhook-operator-system"

// ExcludedNamespaces are the namespaces whose objects the API server sends to none of the
// operator's webhooks: the values of the namespaceSelector that config/webhook/namespace_selector.yaml
// gives every webhook, kube-system and the operator's own namespace (named "system" there until
// config/default renames it).
func ExcludedNamespaces(operatorNamespace string) []string {
	return []string{metav1.NamespaceSystem, operatorNamespace}
}

// GeneratedNameSuffix stands for the random characters the API server appends to the
// generateName of an object that has no name; it is one of the names the server could generate.
const GeneratedNameSuffix = "xxxxx"

// GeneratedName is the name the API server generates from generateName, with GeneratedNameSuffix
// for its random part: generateName cut to leave room for the suffix within 63 characters.
func GeneratedName(generateName string) string {
	if len(generateName) > names.MaxGeneratedNameLength {
		generateName = generateName[:names.MaxGeneratedNameLength]
	}
	return generateName + GeneratedNameSuffix
}

// Result is the verdict on one object of a manifest.
type Result struct {
	// Source is the file the object came from, "-" for standard input.
	Source string `json:"source"`
	// Document is the object's position in Source, from 1; objects of a List share it.
	Document int `json:"document"`
	// Item is the object's place among the items of the List that is its document, such as
	// items[2], or items[1].items[0] for an item of a List among a List's items; "" when the
	// document is the object itself.
	Item       string `json:"item,omitempty"`
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
	// Namespace is the namespace the object goes to: its own, or the Linter's for an object of
	// the operator's kinds that names none.
	Namespace string `json:"namespace,omitempty"`
	// Name is metadata.name or, for an object with only a generateName, the name the API server
	// would generate, GeneratedName(GenerateName).
	Name         string  `json:"name,omitempty"`
	GenerateName string  `json:"generateName,omitempty"`
	Verdict      Verdict `json:"verdict"`
	// Message is the API server's message for a refusal, as kubectl prints it, or why an object
	// is Unchecked.
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
	// NamespaceLabels are the labels of the namespaces the objects go to, for the policy's
	// namespace overrides. Each object's namespace also has kubernetes.io/metadata.name, its
	// name, which the API server gives every namespace.
	NamespaceLabels labels.Set
	// Namespace is the namespace of objects that name none, as kubectl's --namespace; "" is
	// "default".
	Namespace string
	// EnforceNamespace refuses objects that name a namespace other than Namespace, as kubectl does
	// when --namespace is given.
	EnforceNamespace bool
	// OperatorNamespace is the namespace the operator is installed in, whose objects the webhooks
	// are not called for, as for kube-system's; "" is DefaultOperatorNamespace.
	OperatorNamespace string
}

// decoder decodes the operator's kinds strictly, as `kubectl apply` sends them.
var decoder = scheme.StrictDecoder()

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
			result := l.object(obj.data)
			result.Source, result.Document, result.Item = source, document, obj.item
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
		Name         string `json:"name"`
		GenerateName string `json:"generateName"`
		Namespace    string `json:"namespace"`
	} `json:"metadata"`
}

// maxListDepth is how deeply Lists may nest in one document: a List among the items of a List is
// walked, and so on, down to this many Lists; a List deeper still makes its document Invalid, so
// that a hostile document cannot have every item re-read at every level of thousands.
const maxListDepth = 10

// listedObject is one object of a YAML document, as JSON, and its place among the items of the
// document's Lists ("" for a document that is the object itself).
type listedObject struct {
	item string
	data []byte
}

// splitList returns the objects of a YAML document as JSON: the document itself, or the items of
// a list, as kubectl reads them, in the order written; an item that is a list itself gives its
// own items in its place, down to maxListDepth lists. Like kubectl, it takes any object with items
// for a list, such as a v1 List or a WelcomeList, and gives an item with neither apiVersion nor
// kind its list's apiVersion and its kind without "List". A key given twice is an error, as strict
// field validation makes it on the API server; converting to JSON first would silently keep the
// last.
func splitList(data []byte) ([]listedObject, error) {
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
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(object, &fields); err != nil {
		return nil, fmt.Errorf("not a Kubernetes object: %w", err)
	}
	return listItems(fields, object, meta.APIVersion, meta.Kind, "", 1)
}

// listItems returns object, whose fields are fields, or the objects among its items if it is a
// list of the given apiVersion and kind, itself depth lists deep at the place item.
func listItems(fields map[string]json.RawMessage, object []byte, apiVersion, kind, item string, depth int) ([]listedObject, error) {
	raw, isList := fields["items"]
	if !isList {
		return []listedObject{{item: item, data: object}}, nil
	}
	prefix := item
	if prefix != "" {
		prefix += "."
	}
	if depth > maxListDepth {
		return nil, fmt.Errorf("%s: a %s nested %d lists deep, counting the document's, deeper than the %d lint reads: "+
			"move its items into a list higher up", item, kind, depth, maxListDepth)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("%sitems: %w", prefix, err)
	}
	var objects []listedObject
	for i, data := range items {
		place := fmt.Sprintf("%sitems[%d]", prefix, i)
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(data, &fields); err != nil || fields == nil {
			return nil, fmt.Errorf("%s: not a Kubernetes object", place)
		}
		_, hasAPIVersion := fields["apiVersion"]
		_, hasKind := fields["kind"]
		if !hasAPIVersion && !hasKind {
			typed := map[string]any{"apiVersion": apiVersion, "kind": strings.TrimSuffix(kind, "List")}
			for key, value := range fields {
				typed[key] = value // a json.RawMessage: every number stays as written
			}
			var err error
			if data, err = json.Marshal(typed); err != nil {
				return nil, fmt.Errorf("%s: %w", place, err)
			}
		}
		var meta typeAndName
		if _, isList := fields["items"]; isList {
			if err := json.Unmarshal(data, &meta); err != nil {
				return nil, fmt.Errorf("%s: not a Kubernetes object: %w", place, err)
			}
		}
		listed, err := listItems(fields, data, meta.APIVersion, meta.Kind, place, depth+1)
		if err != nil {
			return nil, err
		}
		objects = append(objects, listed...)
	}
	return objects, nil
}

// deprecations are the warnings the API server answers a request at a deprecated version of the
// operator's kinds with: the CRDs' deprecationWarning.
var deprecations = map[schema.GroupVersionKind]string{
	authv1alpha1.GroupVersion.WithKind("Welcome"):           authv1alpha1.DeprecationWarning,
	cachev1alpha1.GroupVersion.WithKind("Memcached"):        cachev1alpha1.DeprecationWarning,
	policyv1alpha1.GroupVersion.WithKind("AdmissionPolicy"): policyv1alpha1.DeprecationWarning,
}

// object admits one object as kube-apiserver would with the operator installed.
func (l Linter) object(data []byte) Result {
	var meta typeAndName
	if err := json.Unmarshal(data, &meta); err != nil {
		return l.refused(Result{}, apierrors.NewBadRequest(err.Error()))
	}
	result := Result{APIVersion: meta.APIVersion, Kind: meta.Kind, Namespace: meta.Metadata.Namespace, Name: meta.Metadata.Name}
	gv, err := schema.ParseGroupVersion(meta.APIVersion)
	if err != nil {
		return l.refused(result, err)
	}
	gk := gv.WithKind(meta.Kind).GroupKind()
	// The API server answers any request at a deprecated version with its warning.
	warning, deprecated := deprecations[gv.WithKind(meta.Kind)]
	kind, ok := webhooks.KindOf(gv.WithKind(meta.Kind))
	if !ok {
		result.Verdict = Skipped
		if deprecated {
			result.Warnings = []string{warning}
		}
		return result
	}

	// kubectl sends the object to its own namespace or, naming none, to --namespace's, and
	// refuses before any request one whose namespace is not the --namespace given.
	namespace := l.namespace()
	if result.Namespace != "" {
		if l.EnforceNamespace && result.Namespace != namespace {
			result.Verdict = Invalid
			result.Message = fmt.Sprintf("the namespace from the provided object %q does not match the namespace %q. "+
				"You must pass '--namespace=%s' to perform this operation.", result.Namespace, namespace, result.Namespace)
			return result
		}
		namespace = result.Namespace
	}
	result.Namespace = namespace
	if deprecated {
		result.Warnings = []string{warning}
	}
	obj, _, err := decoder.Decode(data, nil, nil)
	if err != nil {
		return l.refused(result, apierrors.NewBadRequest(err.Error()))
	}

	// The object as the API server admits it: in its namespace, and named from its generateName
	// when it has no name.
	objectMeta := obj.(metav1.ObjectMetaAccessor).GetObjectMeta()
	objectMeta.SetNamespace(namespace)
	if result.GenerateName = meta.Metadata.GenerateName; result.Name == "" && result.GenerateName != "" {
		result.Name = GeneratedName(result.GenerateName)
		objectMeta.SetName(result.Name)
	}

	// kube-apiserver's own validation, in every namespace, before any validating webhook.
	if errs := serverValidation(obj); len(errs) > 0 {
		return l.refused(result, apierrors.NewInvalid(gk, result.Name, errs))
	}
	if slices.Contains(ExcludedNamespaces(l.operatorNamespace()), namespace) {
		result.Verdict = Unchecked
		result.Message = fmt.Sprintf("the API server does not call webhook-operator's webhooks for objects in namespace %s", namespace)
		return result
	}

	errs, warnings, _ := kind.Admit(obj, l.Policy)
	namespaceLabels := maps.Clone(l.NamespaceLabels)
	if namespaceLabels == nil {
		namespaceLabels = labels.Set{}
	}
	namespaceLabels[corev1.LabelMetadataName] = namespace
	verdict := l.Policy.Judge(errs, warnings, namespaceLabels)
	errs, result.Warnings = verdict.Refused, append(result.Warnings, webhooks.ListedWarnings(verdict.Warnings)...)
	for _, id := range verdict.Audited() {
		result.Audited = append(result.Audited, string(id))
	}
	if len(errs) == 0 {
		result.Verdict = Valid
		return result
	}
	return l.refused(result, webhooks.Refusal(gk, result.Name, errs))
}

// namespace is the namespace of objects that name none.
func (l Linter) namespace() string {
	if l.Namespace == "" {
		return metav1.NamespaceDefault
	}
	return l.Namespace
}

// operatorNamespace is the namespace the operator is installed in.
func (l Linter) operatorNamespace() string {
	if l.OperatorNamespace == "" {
		return DefaultOperatorNamespace
	}
	return l.OperatorNamespace
}

// serverValidation is what kube-apiserver refuses itself in a new object of the operator's kinds,
// named and in its namespace: its metadata, as for every custom resource (the generateName, and
// the name generated from it, must make a DNS-1123 subdomain), and a negative Memcached size,
// which the scale subresource refuses. When it refuses, no validating webhook is called.
func serverValidation(obj runtime.Object) field.ErrorList {
	objectMeta := obj.(metav1.ObjectMetaAccessor).GetObjectMeta().(*metav1.ObjectMeta).DeepCopy()
	objectMeta.Generation = 1 // the API server sets it, and the fields below, on create
	objectMeta.UID, objectMeta.CreationTimestamp = "", metav1.Time{}
	objectMeta.DeletionTimestamp, objectMeta.DeletionGracePeriodSeconds = nil, nil
	errs := apimachineryvalidation.ValidateObjectMetaDeclaratively(context.Background(), operation.Create, objectMeta, nil, true,
		apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"), true)
	var size *int32
	switch m := obj.(type) {
	case *cachev1.Memcached:
		size = m.Spec.Size
	case *cachev1alpha1.Memcached:
		size = m.Spec.Size
	}
	if size != nil && *size < 0 {
		errs = append(errs, field.Invalid(field.NewPath(".spec.size"), *size, "should be a non-negative integer"))
	}
	return errs
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
	// Unchecked counts the objects the webhooks are not called for.
	Unchecked int `json:"unchecked"`
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
		case Unchecked:
			s.Unchecked++
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
		case Unchecked:
			_, err = fmt.Fprintf(out, "%s unchecked: %s\n", resourceName(r), r.Message)
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
