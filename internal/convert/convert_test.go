package convert

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestManifest(t *testing.T) {
	tests := []struct {
		name, in, want string
		converted      int
	}{{
		name: "a Welcome's password goes into the conversion-data annotation, beside the others",
		in: `apiVersion: auth.seedlabs.dev/v1alpha1
kind: Welcome
metadata:
  name: w
  annotations: {team: web}
spec: {name: Ada, password: hunter2, replicas: 2}
`,
		want: `apiVersion: auth.seedlabs.dev/v1
kind: Welcome
metadata:
  annotations:
    auth.seedlabs.dev/conversion-data: '{"spec":{"password":"hunter2"}}'
    team: web
  name: w
spec:
  name: Ada
  replicas: 2
`,
		converted: 1,
	}, {
		name: "a Welcome without a password loses a conversion-data annotation it came with, as the API server's conversion drops it",
		in: `apiVersion: auth.seedlabs.dev/v1alpha1
kind: Welcome
metadata:
  name: w
  annotations: {auth.seedlabs.dev/conversion-data: '{"spec":{"password":"old"}}'}
spec: {name: Ada}
`,
		want: `apiVersion: auth.seedlabs.dev/v1
kind: Welcome
metadata:
  name: w
spec:
  name: Ada
`,
		converted: 1,
	}, {
		name: "a Memcached and an AdmissionPolicy change their apiVersion alone; other documents stay as written",
		in: `# the pool
apiVersion: cache.seedlabs.dev/v1alpha1
kind: Memcached
metadata: {name: pool, namespace: team}
spec: {size: 2, containerPort: 11211}
---
# kept as written, comments and all
apiVersion: app.seedlabs.dev/v1
kind: DeployObject
metadata: {name: app}
spec: {image: "ghcr.io/x/app:1.0"}
---
apiVersion: policy.seedlabs.dev/v1alpha1
kind: AdmissionPolicy
metadata: {name: cluster}
spec:
  allowedRegistries: []
  rules:
  - id: welcome.email.format
    action: Warn
    namespaces:
    - selector: {matchLabels: {env: dev}}
      action: Audit
---
# only a comment
`,
		want: `apiVersion: cache.seedlabs.dev/v1
kind: Memcached
metadata:
  name: pool
  namespace: team
spec:
  containerPort: 11211
  size: 2
---
# kept as written, comments and all
apiVersion: app.seedlabs.dev/v1
kind: DeployObject
metadata: {name: app}
spec: {image: "ghcr.io/x/app:1.0"}
---
apiVersion: policy.seedlabs.dev/v1
kind: AdmissionPolicy
metadata:
  name: cluster
spec:
  allowedRegistries: []
  rules:
  - action: Warn
    id: welcome.email.format
    namespaces:
    - action: Audit
      selector:
        matchLabels:
          env: dev
---
# only a comment
`,
		converted: 2,
	}, {
		name: "the items of lists, where they are; an item without apiVersion and kind is of its list's",
		in: `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: c}
- apiVersion: auth.seedlabs.dev/v1alpha1
  kind: WelcomeList
  items:
  - metadata: {name: w}
    spec: {name: Ada, password: p}
- apiVersion: cache.seedlabs.dev/v1alpha1
  kind: Memcached
  metadata: {name: m}
`,
		want: `apiVersion: v1
items:
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: c
- apiVersion: auth.seedlabs.dev/v1
  items:
  - metadata:
      annotations:
        auth.seedlabs.dev/conversion-data: '{"spec":{"password":"p"}}'
      name: w
    spec:
      name: Ada
  kind: WelcomeList
- apiVersion: cache.seedlabs.dev/v1
  kind: Memcached
  metadata:
    name: m
kind: List
`,
		converted: 2,
	}, {
		name: "objects at v1 already are left as written",
		in: `apiVersion: auth.seedlabs.dev/v1
kind: Welcome
metadata: {name: w}
spec: {name: Ada}
`,
		want: `apiVersion: auth.seedlabs.dev/v1
kind: Welcome
metadata: {name: w}
spec: {name: Ada}
`,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			n, err := Manifest(strings.NewReader(tc.in), &out)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, out.String()); diff != "" || n != tc.converted {
				t.Errorf("converted %d objects, want %d; output (-want +got):\n%s", n, tc.converted, diff)
			}
			var again bytes.Buffer
			if n, err := Manifest(strings.NewReader(out.String()), &again); err != nil || n != 0 || again.String() != out.String() {
				t.Errorf("converting the output again converts %d objects (%v) and writes:\n%s", n, err, again.String())
			}
		})
	}
}

// TestManifestRefuses: what kubectl apply could not send is an error naming it, and nothing is
// written.
func TestManifestRefuses(t *testing.T) {
	welcome := "apiVersion: auth.seedlabs.dev/v1alpha1\nkind: Welcome\nmetadata: {name: w}\nspec: {name: Ada}\n"
	tests := map[string]struct{ in, want string }{
		"an unknown field": {welcome + "---\n" + strings.Replace(welcome, "{name: Ada}", "{name: Ada, pasword: p}", 1),
			`document 2: Welcome w: strict decoding error: unknown field "spec.pasword"`},
		"a field given twice": {strings.Replace(welcome, "{name: Ada}", "{name: Ada, name: Bob}", 1), "document 1: yaml: unmarshal errors:\n  line 4: key \"name\" already set in map"},
		"no kind":             {"apiVersion: v1\nmetadata: {name: x}\n", "document 1: not a Kubernetes object: apiVersion and kind are required"},
		"not an object":       {"- a\n- b\n", "document 1: not a Kubernetes object"},
		"a field of a list item": {"apiVersion: v1\nkind: List\nitems:\n- apiVersion: cache.seedlabs.dev/v1alpha1\n  kind: Memcached\n  metadata: {name: m}\n  spec: {size: two}\n",
			"document 1: items[0]: Memcached m: "},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			_, err := Manifest(strings.NewReader(tc.in), &out)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("got error %v, want one starting %q", err, tc.want)
			}
			if out.Len() > 0 {
				t.Errorf("wrote %q", out.String())
			}
		})
	}
}
