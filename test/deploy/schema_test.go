package deploy

import (
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// TestInt32FieldsAreBoundedWhereAWebhookMayBeSkipped closes the hole of a kube-apiserver that
// does not enforce a schema's int32 format (before 1.36): a number beyond int32 in a field the
// may-be-refused matchCondition reads is no violation to the condition, so the validating webhook
// is skipped, the object is stored, and the controller cannot decode it. Every int32 field of a
// CRD whose validating webhook has that condition must therefore carry the int32 range as the
// schema's own minimum and maximum, which every version enforces.
func TestInt32FieldsAreBoundedWhereAWebhookMayBeSkipped(t *testing.T) {
	root := moduleRoot(t)
	skippable := map[string]bool{} // "group/resource" of the webhooks with may-be-refused
	for _, o := range readManifests(t, filepath.Join(root, "config", "webhook", "manifests.yaml")).ofKind("ValidatingWebhookConfiguration") {
		for _, w := range decode[admissionregistrationv1.ValidatingWebhookConfiguration](t, o).Webhooks {
			if !slices.ContainsFunc(w.MatchConditions, func(c admissionregistrationv1.MatchCondition) bool { return c.Name == "may-be-refused" }) {
				continue
			}
			for _, r := range w.Rules {
				for _, g := range r.APIGroups {
					for _, res := range r.Resources {
						skippable[g+"/"+res] = true
					}
				}
			}
		}
	}
	crds, err := filepath.Glob(filepath.Join(root, "config", "crd", "bases", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, path := range crds {
		crd := decode[apiextensionsv1.CustomResourceDefinition](t, readManifests(t, path)[0])
		if !skippable[crd.Spec.Group+"/"+crd.Spec.Names.Plural] {
			continue
		}
		for _, v := range crd.Spec.Versions {
			spec := v.Schema.OpenAPIV3Schema.Properties["spec"]
			for _, field := range int32Fields("spec", spec) {
				checked++
				p := field.props
				if p.Minimum == nil || *p.Minimum < math.MinInt32 || p.Maximum == nil || *p.Maximum > math.MaxInt32 {
					t.Errorf("%s %s: %s is int32 but its schema allows [%v, %v]; want the int32 range as minimum and maximum",
						crd.Name, v.Name, field.path, deref(p.Minimum), deref(p.Maximum))
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no int32 field found behind a may-be-refused webhook; the test checks nothing")
	}
}

type schemaField struct {
	path  string
	props apiextensionsv1.JSONSchemaProps
}

// int32Fields lists the int32 properties at or below path, in a stable order.
func int32Fields(path string, p apiextensionsv1.JSONSchemaProps) []schemaField {
	var out []schemaField
	if p.Format == "int32" {
		out = append(out, schemaField{path: path, props: p})
	}
	names := make([]string, 0, len(p.Properties))
	for name := range p.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		out = append(out, int32Fields(path+"."+name, p.Properties[name])...)
	}
	if p.Items != nil && p.Items.Schema != nil {
		out = append(out, int32Fields(path+"[*]", *p.Items.Schema)...)
	}
	return out
}

func deref(f *float64) string {
	if f == nil {
		return "unbounded"
	}
	return strconv.FormatFloat(*f, 'f', -1, 64)
}
