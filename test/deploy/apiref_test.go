package deploy

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"io/fs"
	"math"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	cachev1 "github.com/seedlabs/webhook-operator/api/cache/v1"
	policyv1 "github.com/seedlabs/webhook-operator/api/policy/v1"
	"github.com/seedlabs/webhook-operator/test/docblock"
)

// The block of docs/api.md that TestAPIReferenceIsInSync generates.
const (
	apiBegin = "<!-- begin: generated from config/crd/bases by make docs -->\n"
	apiEnd   = "<!-- end: generated -->"
)

// apiKinds are the kinds of the reference, at the version stored, with their CRDs' files.
var apiKinds = []struct {
	object any
	crd    string
}{
	{authv1.Welcome{}, "auth.seedlabs.dev_welcomes.yaml"},
	{cachev1.Memcached{}, "cache.seedlabs.dev_memcacheds.yaml"},
	{appv1.DeployObject{}, "app.seedlabs.dev_deployobjects.yaml"},
	{policyv1.AdmissionPolicy{}, "policy.seedlabs.dev_admissionpolicies.yaml"},
}

// apiModule is where the API's Go types live: the reference lists the fields of these, and names
// a type of another module (a Kubernetes core type) instead of listing its fields.
const apiModule = "github.com/seedlabs/webhook-operator/api/"

// TestAPIReferenceIsInSync holds docs/api.md to the CRDs: for each kind at the version stored, its
// description and a row for every field of its spec and status, with the schema's type, default
// and bounds and the description kubectl explain prints, down to the types of another module.
func TestAPIReferenceIsInSync(t *testing.T) {
	root := moduleRoot(t)
	var page strings.Builder
	for _, kind := range apiKinds {
		crd := decode[apiextensionsv1.CustomResourceDefinition](t, readManifests(t, filepath.Join(root, "config", "crd", "bases", kind.crd))[0])
		version := storageVersion(t, crd)
		schema := version.Schema.OpenAPIV3Schema
		scope := map[apiextensionsv1.ResourceScope]string{apiextensionsv1.NamespaceScoped: "namespaced", apiextensionsv1.ClusterScoped: "cluster-scoped"}[crd.Spec.Scope]
		fmt.Fprintf(&page, "\n## %s\n\n`%s/%s`, %s. %s\n\n", crd.Spec.Names.Kind, crd.Spec.Group, version.Name, scope, oneLine(schema.Description))
		page.WriteString("| field | schema | description |\n|---|---|---|\n")
		typ := reflect.TypeOf(kind.object)
		for _, part := range []string{"spec", "status"} {
			field, ok := fieldByJSONName(typ, part)
			if !ok {
				continue
			}
			rows := fieldRows(t, field.Type, schema.Properties[part], part)
			for _, r := range rows {
				fmt.Fprintf(&page, "| `%s` | %s | %s |\n", r.path, r.schema, r.description)
			}
		}
	}
	docblock.Check(t, filepath.Join(root, "docs", "api.md"), apiBegin, apiEnd, page.String()+"\n", "config/crd/bases")
}

// apiRow is a row of a kind's table.
type apiRow struct{ path, schema, description string }

// fieldRows are the rows of the fields of typ, a struct of the API, at path, whose schema is s.
func fieldRows(t *testing.T, typ reflect.Type, s apiextensionsv1.JSONSchemaProps, at string) []apiRow {
	t.Helper()
	typ = elem(typ)
	var rows []apiRow
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, inline := jsonName(f)
		switch {
		case name == "-" || !f.IsExported():
			continue
		case inline:
			rows = append(rows, fieldRows(t, f.Type, s, at)...)
			continue
		}
		prop, ok := s.Properties[name]
		if !ok {
			t.Errorf("%s.%s: the schema has no such property", at, name)
			continue
		}
		p := at + "." + name
		rows = append(rows, apiRow{path: p, schema: schemaOf(prop, slices.Contains(s.Required, name), f.Type), description: oneLine(prop.Description)})
		inner, innerSchema := elem(f.Type), prop
		if prop.Items != nil && prop.Items.Schema != nil {
			innerSchema, p = *prop.Items.Schema, p+"[]"
		} else if prop.AdditionalProperties != nil && prop.AdditionalProperties.Schema != nil {
			innerSchema, p = *prop.AdditionalProperties.Schema, p+"[*]"
		}
		if inner.Kind() == reflect.Struct && strings.HasPrefix(inner.PkgPath(), apiModule) {
			rows = append(rows, fieldRows(t, inner, innerSchema, p)...)
		}
	}
	return rows
}

// schemaOf says what the schema holds a field to: its type, and whether it is required, its
// default, its values and its bounds; for a struct of another module, the Go type, whose fields
// kubectl explain lists.
func schemaOf(s apiextensionsv1.JSONSchemaProps, required bool, typ reflect.Type) string {
	what := s.Type
	switch {
	case s.XIntOrString:
		what = "integer or string"
	case s.Type == "array" && s.Items != nil && s.Items.Schema != nil:
		what = "array of " + s.Items.Schema.Type
	case s.Type == "object" && s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil:
		what = "map of " + s.AdditionalProperties.Schema.Type
		if s.AdditionalProperties.Schema.XIntOrString {
			what = "map of integer or string"
		}
	}
	parts := []string{what}
	if inner := elem(typ); inner.Kind() == reflect.Struct && !strings.HasPrefix(inner.PkgPath(), apiModule) {
		parts[0] += fmt.Sprintf(" (`%s.%s`)", path.Base(path.Dir(inner.PkgPath()))+path.Base(inner.PkgPath()), inner.Name())
	}
	if required {
		parts = append(parts, "required")
	}
	if s.Default != nil {
		parts = append(parts, "default `"+string(s.Default.Raw)+"`")
	}
	if len(s.Enum) > 0 {
		var values []string
		for _, v := range s.Enum {
			values = append(values, "`"+string(v.Raw)+"`")
		}
		parts = append(parts, "one of "+strings.Join(values, ", "))
	}
	if s.Format != "" {
		parts[0] += " (" + s.Format + ")"
	}
	// The bounds of its format say nothing more (the schema states them so that the API server
	// names the field of a number out of range).
	formatBounds := map[string][2]float64{"int32": {math.MinInt32, math.MaxInt32}, "int64": {math.MinInt64, math.MaxInt64}}[s.Format]
	bound := func(name string, v int64) {
		parts = append(parts, fmt.Sprintf("%s %d", name, v))
	}
	if s.Minimum != nil && *s.Minimum != formatBounds[0] {
		bound("min", int64(*s.Minimum))
	}
	if s.Maximum != nil && *s.Maximum != formatBounds[1] {
		bound("max", int64(*s.Maximum))
	}
	if s.MaxLength != nil {
		bound("max length", *s.MaxLength)
	}
	if s.MaxItems != nil {
		bound("max items", *s.MaxItems)
	}
	if s.MaxProperties != nil {
		bound("max entries", *s.MaxProperties)
	}
	return strings.Join(parts, "; ")
}

// TestKubectlExplainReadsWell holds the description of every field of every version the CRDs serve,
// which kubectl explain prints, to what its reader can use: every field has one, and none names a
// Go constant or variable of the API (such as a Go name for an annotation), which a reader of
// kubectl explain cannot look up; one whose value is its own name (Ready, Enforce) is that value,
// and is read as one.
func TestKubectlExplainReadsWell(t *testing.T) {
	root := moduleRoot(t)
	names := goNamesOfTheAPI(t, filepath.Join(root, "api"))
	word := regexp.MustCompile(`\b[A-Z][A-Za-z0-9]+\b`)
	files, err := filepath.Glob(filepath.Join(root, "config", "crd", "bases", "*.yaml"))
	if err != nil || len(files) != len(apiKinds) {
		t.Fatalf("the CRDs: %v, %v", files, err)
	}
	for _, file := range files {
		crd := decode[apiextensionsv1.CustomResourceDefinition](t, readManifests(t, file)[0])
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			var walk func(s apiextensionsv1.JSONSchemaProps, at string)
			walk = func(s apiextensionsv1.JSONSchemaProps, at string) {
				// kubectl explain prints the description of a field, not of a list's items.
				if s.Description == "" && !strings.HasSuffix(at, "[]") && !slices.Contains([]string{"apiVersion", "kind", "metadata"}, at) {
					t.Errorf("%s %s %s: no description for kubectl explain", crd.Spec.Names.Kind, v.Name, at)
				}
				for _, w := range word.FindAllString(s.Description, -1) {
					if value, ok := names[w]; ok && value != w {
						t.Errorf("%s %s %s: the description names the Go identifier %s: %q", crd.Spec.Names.Kind, v.Name, at, w, oneLine(s.Description))
					}
				}
				for name, p := range s.Properties {
					walk(p, strings.TrimPrefix(at+"."+name, "."))
				}
				if s.Items != nil && s.Items.Schema != nil {
					walk(*s.Items.Schema, at+"[]")
				}
			}
			walk(*v.Schema.OpenAPIV3Schema, "")
		}
	}
}

// goNamesOfTheAPI are the exported constants and variables of the Go packages under dir, with
// their values where they are constant strings.
func goNamesOfTheAPI(t *testing.T, dir string) map[string]string {
	t.Helper()
	names := map[string]string{}
	err := filepath.WalkDir(dir, func(file string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(file, ".go") || strings.HasSuffix(file, "_test.go") {
			return err
		}
		parsed, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range parsed.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || (gen.Tok != token.CONST && gen.Tok != token.VAR) {
				continue
			}
			for _, spec := range gen.Specs {
				values := spec.(*ast.ValueSpec)
				for i, name := range values.Names {
					if !name.IsExported() {
						continue
					}
					// Another package's name for the same constant (v1alpha1's of v1's) has no
					// literal: the literal, wherever found, is its value.
					if _, seen := names[name.Name]; !seen {
						names[name.Name] = ""
					}
					if i < len(values.Values) {
						if lit, ok := values.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							names[name.Name] = constant.StringVal(constant.MakeFromLiteral(lit.Value, lit.Kind, 0))
						}
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 20 {
		t.Fatalf("only %d names found under %s", len(names), dir)
	}
	return names
}

func storageVersion(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) apiextensionsv1.CustomResourceDefinitionVersion {
	t.Helper()
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v
		}
	}
	t.Fatalf("%s has no storage version", crd.Name)
	return apiextensionsv1.CustomResourceDefinitionVersion{}
}

// fieldByJSONName is the field of the struct typ named name in JSON.
func fieldByJSONName(typ reflect.Type, name string) (reflect.StructField, bool) {
	for i := range typ.NumField() {
		if n, _ := jsonName(typ.Field(i)); n == name {
			return typ.Field(i), true
		}
	}
	return reflect.StructField{}, false
}

// jsonName is f's name in JSON, and whether it is inlined.
func jsonName(f reflect.StructField) (string, bool) {
	tag := f.Tag.Get("json")
	name, options, _ := strings.Cut(tag, ",")
	if slices.Contains(strings.Split(options, ","), "inline") || (name == "" && f.Anonymous) {
		return "", true
	}
	if name == "" {
		name = f.Name
	}
	return name, false
}

// elem is typ without its pointers, slices and maps.
func elem(typ reflect.Type) reflect.Type {
	for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Map {
		typ = typ.Elem()
	}
	return typ
}

// oneLine is a description on one line of a Markdown table.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.ReplaceAll(s, "|", `\|`)
}
