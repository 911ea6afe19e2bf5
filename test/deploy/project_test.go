package deploy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// project is what kubebuilder's PROJECT file (version 3) records of the tree.
type project struct {
	CLIVersion  string   `json:"cliVersion"`
	Domain      string   `json:"domain"`
	Layout      []string `json:"layout"`
	MultiGroup  bool     `json:"multigroup"`
	ProjectName string   `json:"projectName"`
	Repo        string   `json:"repo"`
	Resources   []struct {
		API *struct {
			CRDVersion string `json:"crdVersion"`
			Namespaced bool   `json:"namespaced"`
		} `json:"api"`
		Controller bool   `json:"controller"`
		Domain     string `json:"domain"`
		Group      string `json:"group"`
		Kind       string `json:"kind"`
		Path       string `json:"path"`
		Version    string `json:"version"`
		Webhooks   *struct {
			Conversion     bool     `json:"conversion"`
			Defaulting     bool     `json:"defaulting"`
			Spoke          []string `json:"spoke"`
			Validation     bool     `json:"validation"`
			WebhookVersion string   `json:"webhookVersion"`
		} `json:"webhooks"`
	} `json:"resources"`
	Version string `json:"version"`
}

// TestProjectFileMatchesTheTree holds PROJECT, which kubebuilder's plugins read, to what the
// tree has: one resource per version of each CRD of config/crd/bases, with its scope, its API
// package, its controller (which reads the storage version), the webhooks config/webhook
// registers for it, and, for the hub of a kind whose versions convert, the versions it converts.
func TestProjectFileMatchesTheTree(t *testing.T) {
	root := moduleRoot(t)
	data, err := os.ReadFile(filepath.Join(root, "PROJECT"))
	if err != nil {
		t.Fatal(err)
	}
	var p project
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		t.Fatalf("PROJECT does not decode: %v", err)
	}
	goMod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	module := strings.TrimSpace(strings.TrimPrefix(strings.SplitN(string(goMod), "\n", 2)[0], "module"))
	if p.Version != "3" || !slices.Equal(p.Layout, []string{"go.kubebuilder.io/v4"}) || !p.MultiGroup ||
		p.Repo != module || p.Domain != "seedlabs.dev" || p.ProjectName != "webhook-operator" {
		t.Errorf("PROJECT: version %q, layout %v, multigroup %t, repo %q, domain %q, projectName %q; want 3, [go.kubebuilder.io/v4], true, %q, seedlabs.dev, webhook-operator",
			p.Version, p.Layout, p.MultiGroup, p.Repo, p.Domain, p.ProjectName, module)
	}

	webhooks := readManifests(t, filepath.Join(root, "config", "webhook", "manifests.yaml"))
	registered := func(kind, group, version, resource string) bool {
		for _, o := range webhooks.ofKind(kind) {
			var rules []admissionregistrationv1.RuleWithOperations
			switch kind {
			case "MutatingWebhookConfiguration":
				for _, w := range decode[admissionregistrationv1.MutatingWebhookConfiguration](t, o).Webhooks {
					rules = append(rules, w.Rules...)
				}
			default:
				for _, w := range decode[admissionregistrationv1.ValidatingWebhookConfiguration](t, o).Webhooks {
					rules = append(rules, w.Rules...)
				}
			}
			for _, r := range rules {
				if slices.Contains(r.APIGroups, group) && slices.Contains(r.APIVersions, version) && slices.Contains(r.Resources, resource) {
					return true
				}
			}
		}
		return false
	}

	crds, err := filepath.Glob(filepath.Join(root, "config", "crd", "bases", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var want, got []string
	for _, path := range crds {
		crd := decode[apiextensionsv1.CustomResourceDefinition](t, readManifests(t, path)[0])
		group, _, _ := strings.Cut(crd.Spec.Group, ".")
		for _, v := range crd.Spec.Versions {
			var spokes []string
			if isHub(t, filepath.Join(root, "api", group, v.Name), crd.Spec.Names.Kind) {
				for _, other := range crd.Spec.Versions {
					if other.Name != v.Name {
						spokes = append(spokes, other.Name)
					}
				}
			}
			want = append(want, strings.Join([]string{group, v.Name, crd.Spec.Names.Kind,
				"namespaced=" + boolString(crd.Spec.Scope == apiextensionsv1.NamespaceScoped),
				"controller=" + boolString(v.Storage && dirExists(filepath.Join(root, "internal", "controller", strings.ToLower(crd.Spec.Names.Kind)))),
				"defaulting=" + boolString(registered("MutatingWebhookConfiguration", crd.Spec.Group, v.Name, crd.Spec.Names.Plural)),
				"validation=" + boolString(registered("ValidatingWebhookConfiguration", crd.Spec.Group, v.Name, crd.Spec.Names.Plural)),
				"spokes=" + strings.Join(spokes, ","),
			}, " "))
		}
	}
	for _, r := range p.Resources {
		if r.Domain != p.Domain || r.API == nil || r.API.CRDVersion != "v1" {
			t.Errorf("PROJECT resource %s: domain %q, api %+v; want %s and crdVersion v1", r.Kind, r.Domain, r.API, p.Domain)
		}
		if wantPath := p.Repo + "/api/" + r.Group + "/" + r.Version; r.Path != wantPath || !dirExists(filepath.Join(root, "api", r.Group, r.Version)) {
			t.Errorf("PROJECT resource %s: path %q, want %q, a package of the tree", r.Kind, r.Path, wantPath)
		}
		defaulting, validation, spokes := false, false, ""
		if r.Webhooks != nil {
			defaulting, validation = r.Webhooks.Defaulting, r.Webhooks.Validation
			if r.Webhooks.Conversion != (len(r.Webhooks.Spoke) > 0) {
				t.Errorf("PROJECT resource %s %s: conversion %t with spokes %v", r.Kind, r.Version, r.Webhooks.Conversion, r.Webhooks.Spoke)
			}
			spokes = strings.Join(r.Webhooks.Spoke, ",")
		}
		namespaced := r.API != nil && r.API.Namespaced
		got = append(got, strings.Join([]string{r.Group, r.Version, r.Kind, "namespaced=" + boolString(namespaced),
			"controller=" + boolString(r.Controller), "defaulting=" + boolString(defaulting), "validation=" + boolString(validation),
			"spokes=" + spokes}, " "))
	}
	slices.Sort(want)
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("PROJECT resources differ from the tree (-tree +PROJECT):\n%s", diff)
	}
}

// isHub reports whether the API package in dir marks kind as the hub of its conversions.
func isHub(t *testing.T, dir, kind string) bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), "func (*"+kind+") Hub() {}") {
			return true
		}
	}
	return false
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func dirExists(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.IsDir()
}
