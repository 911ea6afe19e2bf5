// Package convert rewrites manifests of the operator's kinds from v1alpha1 to v1, as kube-apiserver
// converts them: a Welcome by the conversion webhook's own code (its password into the
// conversion-data annotation), a Memcached and an AdmissionPolicy by their apiVersion alone, their
// versions having the same fields. What it writes, applied at v1, makes the objects the manifest
// makes applied at v1alpha1.
package convert

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	authv1alpha1 "github.com/seedlabs/webhook-operator/api/auth/v1alpha1"
	cachev1 "github.com/seedlabs/webhook-operator/api/cache/v1"
	cachev1alpha1 "github.com/seedlabs/webhook-operator/api/cache/v1alpha1"
	policyv1 "github.com/seedlabs/webhook-operator/api/policy/v1"
	policyv1alpha1 "github.com/seedlabs/webhook-operator/api/policy/v1alpha1"
	"github.com/seedlabs/webhook-operator/internal/scheme"
)

// versions are the groups whose v1alpha1 kinds convert, each to its v1.
var versions = map[schema.GroupVersion]schema.GroupVersion{
	authv1alpha1.GroupVersion:   authv1.GroupVersion,
	cachev1alpha1.GroupVersion:  cachev1.GroupVersion,
	policyv1alpha1.GroupVersion: policyv1.GroupVersion,
}

// decoder decodes the kinds strictly, as `kubectl apply` sends them.
var decoder = scheme.StrictDecoder()

// Manifest writes to w the YAML documents of r, each object of the operator's kinds at v1alpha1
// (or a list's item) converted to v1, and returns how many it converted. A document with nothing
// to convert is written as it was, comments and all; one that converts is written anew, its keys
// sorted, without its comments. A document that does not parse, or an object that does not decode
// as its kind, is an error naming it, and nothing is written.
func Manifest(r io.Reader, w io.Writer) (int, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var out bytes.Buffer
	converted := 0
	for document := 1; ; document++ {
		data, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, err
		}
		if len(bytes.TrimSpace(data)) == 0 {
			document--
			continue
		}
		n, doc, err := convertDocument(data)
		if err != nil {
			return 0, fmt.Errorf("document %d: %w", document, err)
		}
		if out.Len() > 0 {
			out.WriteString("---\n")
		}
		out.Write(doc)
		if !bytes.HasSuffix(doc, []byte("\n")) {
			out.WriteByte('\n')
		}
		converted += n
	}
	_, err := w.Write(out.Bytes())
	return converted, err
}

// convertDocument converts the objects of one YAML document; a document with none to convert, or
// only comments, is returned as it was.
func convertDocument(data []byte) (int, []byte, error) {
	object, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return 0, nil, err
	}
	if string(object) == "null" {
		return 0, data, nil // comments only
	}
	var fields map[string]any
	if err := json.Unmarshal(object, &fields); err != nil || fields == nil {
		return 0, nil, errors.New("not a Kubernetes object")
	}
	n, err := convertObject(fields, "", "")
	if err != nil || n == 0 {
		return 0, data, err
	}
	out, err := yaml.Marshal(fields)
	return n, out, err
}

// convertObject converts obj in place, or each of its items if it is a list: an item with neither
// apiVersion nor kind is of its list's apiVersion and of its kind without "List", as kubectl reads
// it. It returns how many objects it converted.
func convertObject(obj map[string]any, listAPIVersion, listKind string) (int, error) {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	_, hasAPIVersion := obj["apiVersion"]
	_, hasKind := obj["kind"]
	if !hasAPIVersion && !hasKind && listKind != "" {
		apiVersion, kind = listAPIVersion, strings.TrimSuffix(listKind, "List")
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil || apiVersion == "" || kind == "" {
		return 0, errors.New("not a Kubernetes object: apiVersion and kind are required")
	}
	if items, isList := obj["items"]; isList {
		list, ok := items.([]any)
		if !ok && items != nil {
			return 0, errors.New("items: not a list")
		}
		converted := 0
		for i, item := range list {
			fields, ok := item.(map[string]any)
			if !ok {
				return 0, fmt.Errorf("items[%d]: not a Kubernetes object", i)
			}
			n, err := convertObject(fields, apiVersion, kind)
			if err != nil {
				return 0, fmt.Errorf("items[%d]: %w", i, err)
			}
			converted += n
		}
		if to, ok := versions[gv]; ok && hasAPIVersion {
			obj["apiVersion"] = to.String() // a WelcomeList at v1alpha1, say
		}
		return converted, nil
	}
	to, ok := versions[gv]
	if !ok {
		return 0, nil
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return 0, err
	}
	if !hasAPIVersion {
		var typed map[string]any
		_ = json.Unmarshal(data, &typed) // it was just marshalled
		typed["apiVersion"], typed["kind"] = apiVersion, kind
		if data, err = json.Marshal(typed); err != nil {
			return 0, err
		}
	}
	decoded, _, err := decoder.Decode(data, nil, nil)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", kind, nameOf(obj), err)
	}
	welcome, isWelcome := decoded.(*authv1alpha1.Welcome)
	if !isWelcome {
		// The same fields at v1: only the version changes, as kube-apiserver converts them.
		if hasAPIVersion {
			obj["apiVersion"] = to.String()
		}
		return 1, nil
	}
	hub := &authv1.Welcome{}
	if err := welcome.ConvertTo(hub); err != nil {
		return 0, fmt.Errorf("%s %s: %w", kind, nameOf(obj), err)
	}
	if hasAPIVersion || hasKind {
		hub.SetGroupVersionKind(authv1.GroupVersion.WithKind(kind))
	}
	fields, err := runtime.DefaultUnstructuredConverter.ToUnstructured(hub)
	if err != nil {
		return 0, err
	}
	clear(obj)
	for k, v := range fields {
		obj[k] = v
	}
	return 1, nil
}

// nameOf is obj's name, or its generateName, for an error to name it by.
func nameOf(obj map[string]any) string {
	metadata, _ := obj["metadata"].(map[string]any)
	if name, _ := metadata["name"].(string); name != "" {
		return name
	}
	name, _ := metadata["generateName"].(string)
	return name
}
