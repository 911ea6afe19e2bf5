package deploy

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	cachev1 "github.com/seedlabs/webhook-operator/api/cache/v1"
	"github.com/seedlabs/webhook-operator/api/conditions"
	policyv1 "github.com/seedlabs/webhook-operator/api/policy/v1"
	"github.com/seedlabs/webhook-operator/webhooks"
)

// unboundedByDesign are the fields of the CRDs' schemas that carry no size bound of their own and
// no CEL rule that bounds them, each with the reason that is safe. Keyed by CRD file, then path.
var unboundedByDesign = map[string]map[string]string{
	"*": {
		"apiVersion": "kube-apiserver requires it to name the CRD's group and version",
		"kind":       "kube-apiserver requires it to name the CRD's kind",
	},
	"policy.seedlabs.dev_admissionpolicies.yaml": {
		// metav1.LabelSelector's fields cannot carry markers, and a CEL rule that walks its
		// labels or expressions is too costly for kube-apiserver's estimate at this depth (it is
		// evaluated for each of up to 128 rules times 32 overrides): its counts are bounded by
		// rules on the selector; the policy is written by cluster admins only; and the webhook
		// holds keys and values to Kubernetes' label rules.
		"spec.rules[*].namespaces[*].selector.matchLabels[*]":                "a selector's label value",
		"spec.rules[*].namespaces[*].selector.matchExpressions[*].key":       "a selector's label key",
		"spec.rules[*].namespaces[*].selector.matchExpressions[*].operator":  "a selector's operator",
		"spec.rules[*].namespaces[*].selector.matchExpressions[*].values":    "a selector's values",
		"spec.rules[*].namespaces[*].selector.matchExpressions[*].values[*]": "a selector's value",
	},
}

// boundedFormats are string formats whose values kube-apiserver parses, which bounds their length.
var boundedFormats = []string{"date-time"}

// TestCRDSchemasBoundEveryField holds every CRD to structural bounds, so that kube-apiserver
// refuses an absurd size with a 422 before it calls any validating webhook: every array has
// maxItems, every string maxLength (or an enum or a format it parses), every map maxProperties,
// and every int32 minimum and maximum within the int32 range, unless a CEL rule of the field or
// an ancestor names the field in its message (the fields of Kubernetes' own types, which cannot
// carry markers), or unboundedByDesign gives the reason it is safe. An int64 needs no bound: a
// JSON number beyond int64 decodes as a float too large to be a JSON integer, which the schema's
// type refuses.
//
// The int32 range closes, besides, the hole of a kube-apiserver that does not enforce a schema's
// int32 format (before 1.36): a number beyond int32 in a field the may-be-refused matchCondition
// reads is no violation to the condition, so the validating webhook would be skipped, the object
// stored, and the controller unable to decode it.
func TestCRDSchemasBoundEveryField(t *testing.T) {
	root := moduleRoot(t)
	crds, err := filepath.Glob(filepath.Join(root, "config", "crd", "bases", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(crds) != 4 {
		t.Fatalf("found %d CRDs in config/crd/bases, want the four kinds'", len(crds))
	}
	for _, path := range crds {
		file := filepath.Base(path)
		crd := decode[apiextensionsv1.CustomResourceDefinition](t, readManifests(t, path)[0])
		allowed := map[string]string{}
		for _, scope := range []string{"*", file} {
			for p, reason := range unboundedByDesign[scope] {
				allowed[p] = reason
			}
		}
		for _, v := range crd.Spec.Versions {
			w := &boundsWalk{allowed: allowed, used: map[string]bool{}}
			w.walk("", *v.Schema.OpenAPIV3Schema, nil)
			for _, problem := range w.problems {
				t.Errorf("%s %s: %s", crd.Name, v.Name, problem)
			}
			for p := range allowed {
				if !w.used[p] {
					t.Errorf("%s %s: unboundedByDesign lists %s, which is bounded or no longer exists", crd.Name, v.Name, p)
				}
			}
			if w.checked == 0 {
				t.Errorf("%s %s: no field checked", crd.Name, v.Name)
			}
		}
	}
}

// boundsWalk collects the fields of a schema that lack a structural bound.
type boundsWalk struct {
	allowed  map[string]string
	used     map[string]bool
	problems []string
	checked  int
}

// walk checks p, at path, and what it holds; messages are those of the CEL rules of p's ancestors.
// A map's values go by the map's path followed by [*], as the items of an array.
func (w *boundsWalk) walk(path string, p apiextensionsv1.JSONSchemaProps, messages []string) {
	for _, rule := range p.XValidations {
		messages = append(slices.Clip(messages), rule.Message)
	}
	if path == "metadata" {
		return // kube-apiserver's own schema, not the CRD's
	}
	if path != "" {
		w.checked++
		if problem := unbounded(p); problem != "" && !namedByRule(path, messages) {
			if _, ok := w.allowed[path]; ok {
				w.used[path] = true
			} else {
				w.problems = append(w.problems, path+": "+problem)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(p.Properties)) {
		child := name
		if path != "" {
			child = path + "." + name
		}
		w.walk(child, p.Properties[name], messages)
	}
	if p.Items != nil && p.Items.Schema != nil {
		w.walk(path+"[*]", *p.Items.Schema, messages)
	}
	if p.AdditionalProperties != nil && p.AdditionalProperties.Schema != nil {
		w.walk(path+"[*]", *p.AdditionalProperties.Schema, messages)
	}
}

// unbounded says which structural bound p lacks, or "" when it has its bounds.
func unbounded(p apiextensionsv1.JSONSchemaProps) string {
	if p.XIntOrString {
		return "int-or-string, with no CEL rule that bounds its number and its string"
	}
	switch p.Type {
	case "array":
		if p.MaxItems == nil {
			return "array without maxItems"
		}
	case "string":
		if p.MaxLength == nil && len(p.Enum) == 0 && !slices.Contains(boundedFormats, p.Format) {
			return "string without maxLength, enum or a format that bounds it"
		}
	case "object":
		if p.AdditionalProperties != nil && p.MaxProperties == nil {
			return "map without maxProperties"
		}
	case "integer":
		if p.Format == "int64" {
			return ""
		}
		if p.Minimum == nil || *p.Minimum < math.MinInt32 || p.Maximum == nil || *p.Maximum > math.MaxInt32 {
			return fmt.Sprintf("int32 whose schema allows [%s, %s]; want minimum and maximum within the int32 range",
				deref(p.Minimum), deref(p.Maximum))
		}
	}
	return ""
}

// namedByRule reports whether one of messages names path, as the CEL rule that bounds a field
// Kubernetes' own type holds names it.
func namedByRule(path string, messages []string) bool {
	named := regexp.MustCompile(regexp.QuoteMeta(path) + `($|[^A-Za-z0-9_.\[])`)
	return slices.ContainsFunc(messages, named.MatchString)
}

func deref(f *float64) string {
	if f == nil {
		return "unbounded"
	}
	return strconv.FormatFloat(*f, 'f', -1, 64)
}

// schemaBound is a bound or default a Go constant of api/ states and the CRD's schema must hold.
type schemaBound struct {
	constant string
	value    any
	// file is the CRD's file in config/crd/bases, path the field (as TestCRDSchemasBoundEveryField
	// names them).
	file, path string
	// what is the schema's keyword (maxItems, maxLength, maxProperties, maximum, default), or
	// "rule": a CEL rule of the field whose expression holds fmt.Sprint(value) in rule's place of %v.
	what, rule string
}

// TestSchemaBoundsAndDefaultsAreTheGoConstants holds each bound and default the api/ packages
// state as a Go constant, for the webhooks and controllers to use, equal to what the CRD's
// generated schema holds: markers cannot name a constant, so this test ties the two.
func TestSchemaBoundsAndDefaultsAreTheGoConstants(t *testing.T) {
	const (
		welcome   = "auth.seedlabs.dev_welcomes.yaml"
		memcached = "cache.seedlabs.dev_memcacheds.yaml"
		deploy    = "app.seedlabs.dev_deployobjects.yaml"
		policy    = "policy.seedlabs.dev_admissionpolicies.yaml"
	)
	bounds := []schemaBound{
		{"conditions.MaxItems", conditions.MaxItems, welcome, "status.conditions", "maxItems", ""},
		{"conditions.MaxItems", conditions.MaxItems, memcached, "status.conditions", "maxItems", ""},
		{"conditions.MaxItems", conditions.MaxItems, deploy, "status.conditions", "maxItems", ""},
		{"conditions.MaxItems", conditions.MaxItems, policy, "status.conditions", "maxItems", ""},

		{"authv1.DefaultReplicas", authv1.DefaultReplicas, welcome, "spec.replicas", "default", ""},
		{"authv1.DefaultPort", authv1.DefaultPort, welcome, "spec.port", "default", ""},
		{"authv1.DefaultServiceType", authv1.DefaultServiceType, welcome, "spec.serviceType", "default", ""},
		{"authv1.MaxGroupsItems", authv1.MaxGroupsItems, welcome, "spec.groups", "maxItems", ""},
		{"authv1.MaxStringLength", authv1.MaxStringLength, welcome, "spec.name", "maxLength", ""},
		{"authv1.MaxStringLength", authv1.MaxStringLength, welcome, "spec.groups[*]", "maxLength", ""},
		{"authv1.MaxStringLength", authv1.MaxStringLength, welcome, "spec.email", "maxLength", ""},
		{"authv1.MaxStringLength", authv1.MaxStringLength, welcome, "spec.password", "maxLength", ""},
		{"authv1.MaxStringLength", authv1.MaxStringLength, welcome, "spec.image", "maxLength", ""},
		{"authv1.MaxServiceURLLength", authv1.MaxServiceURLLength, welcome, "status.serviceURL", "maxLength", ""},

		{"cachev1.DefaultSize", cachev1.DefaultSize, memcached, "spec.size", "default", ""},
		{"cachev1.DefaultContainerPort", cachev1.DefaultContainerPort, memcached, "spec.containerPort", "default", ""},
		{"cachev1.MaxNodesItems", cachev1.MaxNodesItems, memcached, "status.nodes", "maxItems", ""},
		{"cachev1.MaxSelectorLength", cachev1.MaxSelectorLength, memcached, "status.selector", "maxLength", ""},

		{"appv1.DefaultReplicas", appv1.DefaultReplicas, deploy, "spec.replicas", "default", ""},
		{"appv1.MaxImageLength", appv1.MaxImageLength, deploy, "spec.image", "maxLength", ""},
		{"appv1.MaxEnvItems", appv1.MaxEnvItems, deploy, "spec.env", "maxItems", ""},
		{"appv1.MaxEnvNameLength", appv1.MaxEnvNameLength, deploy, "spec.env", "rule", "e.name.size() <= %v"},
		{"appv1.MaxEnvValueLength", appv1.MaxEnvValueLength, deploy, "spec.env", "rule", "e.value.size() <= %v"},
		{"appv1.MaxPortsItems", appv1.MaxPortsItems, deploy, "spec.ports", "maxItems", ""},
		{"appv1.MaxResourcesProperties", appv1.MaxResourcesProperties, deploy, "spec.resources", "rule", "self.limits.size() <= %v"},
		{"appv1.MaxResourcesProperties", appv1.MaxResourcesProperties, deploy, "spec.resources", "rule", "self.requests.size() <= %v"},
		{"appv1.MaxQuantityLength", appv1.MaxQuantityLength, deploy, "spec.resources", "rule", "self.limits[k].size() <= %v"},
		{"appv1.MaxQuantityLength", appv1.MaxQuantityLength, deploy, "spec.resources", "rule", "self.requests[k].size() <= %v"},
		{"appv1.MaxQuantityLength", appv1.MaxQuantityLength, deploy, "spec.env", "rule", "e.valueFrom.resourceFieldRef.divisor.size() <= %v"},
		{"appv1.MaxClaimsItems", appv1.MaxClaimsItems, deploy, "spec.resources", "rule", "self.claims.size() <= %v"},
		{"appv1.MaxCommandItems", appv1.MaxCommandItems, deploy, "spec.command", "maxItems", ""},
		{"appv1.MaxCommandItems", appv1.MaxCommandItems, deploy, "spec.args", "maxItems", ""},
		{"appv1.MaxCommandItemLength", appv1.MaxCommandItemLength, deploy, "spec.command[*]", "maxLength", ""},
		{"appv1.MaxCommandItemLength", appv1.MaxCommandItemLength, deploy, "spec.args[*]", "maxLength", ""},
		{"appv1.MaxImagePullSecretsItems", appv1.MaxImagePullSecretsItems, deploy, "spec.imagePullSecrets", "maxItems", ""},
		{"appv1.MaxImagePullSecretNameLength", appv1.MaxImagePullSecretNameLength, deploy, "spec.imagePullSecrets", "rule", "s.name.size() <= %v"},
		{"appv1.MaxDeploymentConditionsItems", appv1.MaxDeploymentConditionsItems, deploy, "status.deploymentConditions", "maxItems", ""},
		{"appv1.MaxConditionTypeLength", appv1.MaxConditionTypeLength, deploy, "status.deploymentConditions", "rule", "c.type.size() <= %v"},
		{"appv1.MaxConditionStatusLength", appv1.MaxConditionStatusLength, deploy, "status.deploymentConditions", "rule", "c.status.size() <= %v"},
		{"appv1.MaxConditionReasonLength", appv1.MaxConditionReasonLength, deploy, "status.deploymentConditions", "rule", "c.reason.size() <= %v"},
		{"appv1.MaxConditionMessageLength", appv1.MaxConditionMessageLength, deploy, "status.deploymentConditions", "rule", "c.message.size() <= %v"},

		{"policyv1.MaxAllowedRegistriesItems", policyv1.MaxAllowedRegistriesItems, policy, "spec.allowedRegistries", "maxItems", ""},
		{"policyv1.MaxRegistryLength", policyv1.MaxRegistryLength, policy, "spec.allowedRegistries[*]", "maxLength", ""},
		{"policyv1.MaxRulesItems", policyv1.MaxRulesItems, policy, "spec.rules", "maxItems", ""},
		{"policyv1.MaxRuleIDLength", policyv1.MaxRuleIDLength, policy, "spec.rules[*].id", "maxLength", ""},
		{"policyv1.MaxActionLength", policyv1.MaxActionLength, policy, "spec.rules[*].action", "maxLength", ""},
		{"policyv1.MaxActionLength", policyv1.MaxActionLength, policy, "spec.rules[*].namespaces[*].action", "maxLength", ""},
		{"policyv1.MaxNamespacesItems", policyv1.MaxNamespacesItems, policy, "spec.rules[*].namespaces", "maxItems", ""},
		{"policyv1.MaxMatchLabelsProperties", policyv1.MaxMatchLabelsProperties, policy, "spec.rules[*].namespaces[*].selector", "rule", "self.matchLabels.size() <= %v"},
		{"policyv1.MaxMatchExpressionsItems", policyv1.MaxMatchExpressionsItems, policy, "spec.rules[*].namespaces[*].selector", "rule", "self.matchExpressions.size() <= %v"},
	}
	// The rules list of a policy names each rule at most once, so its bound must leave room for
	// every rule, and for every ID.
	if n := len(webhooks.Rules()); n > policyv1.MaxRulesItems {
		t.Errorf("there are %d rules, more than policyv1.MaxRulesItems (%d) lets a policy list", n, policyv1.MaxRulesItems)
	}
	for _, r := range webhooks.Rules() {
		if len(r.ID) > policyv1.MaxRuleIDLength {
			t.Errorf("rule ID %s is longer than policyv1.MaxRuleIDLength (%d)", r.ID, policyv1.MaxRuleIDLength)
		}
	}

	// Every version of a CRD that has the field holds the constant; a field may be missing from
	// some (v1alpha1's spec.password, which Welcome v1 dropped), not from all.
	versions := map[string][]apiextensionsv1.CustomResourceDefinitionVersion{}
	for _, file := range []string{welcome, memcached, deploy, policy} {
		crd := decode[apiextensionsv1.CustomResourceDefinition](t, readManifests(t, filepath.Join(moduleRoot(t), "config", "crd", "bases", file))[0])
		versions[file] = crd.Spec.Versions
	}
	for _, b := range bounds {
		found := false
		for _, v := range versions[b.file] {
			if field, ok := schemaAt(*v.Schema.OpenAPIV3Schema, b.path); ok {
				found = true
				checkBound(t, b.constant, b.value, b.file+" "+v.Name, b.path, b.what, b.rule, field)
			}
		}
		if !found {
			t.Errorf("%s: %s has no field %s in any version", b.constant, b.file, b.path)
		}
	}
}

// checkBound reports when field, at path of schema, does not hold constant's value as what:
// maxItems, maxLength, maxProperties, its default, or a CEL rule (rule, with the value).
func checkBound(t *testing.T, constant string, value any, schema, path, what, rule string, field apiextensionsv1.JSONSchemaProps) {
	t.Helper()
	want := fmt.Sprint(value)
	var got string
	switch what {
	case "maxItems":
		got = derefInt(field.MaxItems)
	case "maxLength":
		got = derefInt(field.MaxLength)
	case "maxProperties":
		got = derefInt(field.MaxProperties)
	case "default":
		got = "none"
		if field.Default != nil {
			var v any
			if err := json.Unmarshal(field.Default.Raw, &v); err != nil {
				t.Fatal(err)
			}
			got = fmt.Sprint(v)
		}
	case "rule":
		expr := fmt.Sprintf(rule, value)
		if !slices.ContainsFunc(field.XValidations, func(r apiextensionsv1.ValidationRule) bool { return strings.Contains(r.Rule, expr) }) {
			t.Errorf("%s = %v, but no CEL rule of %s %s holds %q", constant, value, schema, path, expr)
		}
		return
	}
	if got != want {
		t.Errorf("%s = %s, but %s %s has %s %s", constant, want, schema, path, what, got)
	}
}

// schemaAt is the schema of the field at path, as TestCRDSchemasBoundEveryField names fields.
func schemaAt(root apiextensionsv1.JSONSchemaProps, path string) (apiextensionsv1.JSONSchemaProps, bool) {
	p := root
	for part := range strings.SplitSeq(path, ".") {
		name, items := strings.CutSuffix(part, "[*]")
		next, ok := p.Properties[name]
		if !ok {
			return p, false
		}
		p = next
		if items {
			if p.Items == nil || p.Items.Schema == nil {
				return p, false
			}
			p = *p.Items.Schema
		}
	}
	return p, true
}

func derefInt(i *int64) string {
	if i == nil {
		return "none"
	}
	return strconv.FormatInt(*i, 10)
}

// TestWelcomeVersionsDifferOnlyByPassword holds Welcome's two versions to one shape: v1 is
// v1alpha1 without spec.password, with the same bounds, defaults, columns and subresources, so
// that the conversion has nothing else to carry and a manifest means the same at either version.
func TestWelcomeVersionsDifferOnlyByPassword(t *testing.T) {
	crd := decode[apiextensionsv1.CustomResourceDefinition](t, readManifests(t, filepath.Join(moduleRoot(t), "config", "crd", "bases", "auth.seedlabs.dev_welcomes.yaml"))[0])
	byName := map[string]apiextensionsv1.CustomResourceDefinitionVersion{}
	for _, v := range crd.Spec.Versions {
		byName[v.Name] = *v.DeepCopy()
	}
	alpha, hub := byName["v1alpha1"], byName["v1"]
	if alpha.Schema == nil || hub.Schema == nil {
		t.Fatalf("the Welcome CRD lists %v, want v1alpha1 and v1", slices.Collect(maps.Keys(byName)))
	}
	if _, ok := alpha.Schema.OpenAPIV3Schema.Properties["spec"].Properties["password"]; !ok {
		t.Fatal("v1alpha1 has no spec.password")
	}
	spec := alpha.Schema.OpenAPIV3Schema.Properties["spec"]
	delete(spec.Properties, "password")
	alpha.Schema.OpenAPIV3Schema.Properties["spec"] = spec
	// The kinds' own descriptions say how the versions differ.
	alpha.Schema.OpenAPIV3Schema.Description, hub.Schema.OpenAPIV3Schema.Description = "", ""
	if diff := cmp.Diff(alpha.Schema, hub.Schema); diff != "" {
		t.Errorf("Welcome v1's schema is not v1alpha1's without spec.password (-v1alpha1 +v1):\n%s", diff)
	}
	if diff := cmp.Diff(alpha.AdditionalPrinterColumns, hub.AdditionalPrinterColumns); diff != "" {
		t.Errorf("the versions' columns differ (-v1alpha1 +v1):\n%s", diff)
	}
	if diff := cmp.Diff(alpha.Subresources, hub.Subresources); diff != "" {
		t.Errorf("the versions' subresources differ (-v1alpha1 +v1):\n%s", diff)
	}
}

// TestNoneKindsVersionsAreIdentical holds the versions of the kinds the CRDs convert with strategy
// None (the API server only rewrites apiVersion) to one shape: the same schema, columns and
// subresources, and no conversion webhook, so that an object stored at either version is valid,
// and means the same, at the other.
func TestNoneKindsVersionsAreIdentical(t *testing.T) {
	for _, file := range []string{"cache.seedlabs.dev_memcacheds.yaml", "policy.seedlabs.dev_admissionpolicies.yaml"} {
		t.Run(file, func(t *testing.T) {
			crd := decode[apiextensionsv1.CustomResourceDefinition](t, readManifests(t, filepath.Join(moduleRoot(t), "config", "crd", "bases", file))[0])
			if c := crd.Spec.Conversion; c != nil && c.Strategy != apiextensionsv1.NoneConverter {
				t.Errorf("%s converts with strategy %s, want None", crd.Name, c.Strategy)
			}
			byName := map[string]apiextensionsv1.CustomResourceDefinitionVersion{}
			for _, v := range crd.Spec.Versions {
				byName[v.Name] = v
			}
			alpha, v1 := byName["v1alpha1"], byName["v1"]
			if alpha.Schema == nil || v1.Schema == nil {
				t.Fatalf("%s lists %v, want v1alpha1 and v1", crd.Name, slices.Sorted(maps.Keys(byName)))
			}
			if alpha.Storage || !alpha.Served || !alpha.Deprecated || !v1.Served || !v1.Storage {
				t.Errorf("%s: v1alpha1 served %t, storage %t, deprecated %t; v1 served %t, storage %t; want v1alpha1 served and deprecated, v1 served and stored",
					crd.Name, alpha.Served, alpha.Storage, alpha.Deprecated, v1.Served, v1.Storage)
			}
			if diff := cmp.Diff(alpha.Schema, v1.Schema); diff != "" {
				t.Errorf("the versions' schemas differ (-v1alpha1 +v1):\n%s", diff)
			}
			if diff := cmp.Diff(alpha.AdditionalPrinterColumns, v1.AdditionalPrinterColumns); diff != "" {
				t.Errorf("the versions' columns differ (-v1alpha1 +v1):\n%s", diff)
			}
			if diff := cmp.Diff(alpha.Subresources, v1.Subresources); diff != "" {
				t.Errorf("the versions' subresources differ (-v1alpha1 +v1):\n%s", diff)
			}
		})
	}
}
