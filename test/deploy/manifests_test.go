package deploy

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/yaml"

	"github.com/seedlabs/webhook-operator/internal/operator"
)

// object is one document of a kustomize build: its unstructured form, and its YAML for decoding
// into the typed API struct.
type object struct {
	*unstructured.Unstructured
	raw []byte
}

// key names an object in messages and inventories.
func (o object) key() string {
	if ns := o.GetNamespace(); ns != "" {
		return o.GetKind() + " " + ns + "/" + o.GetName()
	}
	return o.GetKind() + " " + o.GetName()
}

// manifests are the objects a kustomize build printed, in its order.
type manifests []object

// kustomizeBuild runs $KUSTOMIZE build dir and parses the multi-document YAML it prints.
func kustomizeBuild(t *testing.T, dir string) manifests {
	t.Helper()
	kustomize := toolPath(t, "KUSTOMIZE")
	var stderr bytes.Buffer
	cmd := exec.CommandContext(t.Context(), kustomize, "build", dir)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s build %s: %v\n%s", kustomize, dir, err, stderr.String())
	}
	return parseManifests(t, dir, out)
}

// toolPath is the pinned tool make test points variable at (KUSTOMIZE, HELM, PROMTOOL), or fails
// the test saying how to set it.
func toolPath(t *testing.T, variable string) string {
	t.Helper()
	path := os.Getenv(variable)
	if path == "" {
		t.Fatalf("%s is not set: run this test through 'make test-deploy', which installs the pinned tool into bin/ "+
			"(or set %s=bin/<tool>-<version> yourself)", variable, variable)
	}
	return path
}

// parseManifests splits multi-document YAML on its "---" lines and decodes every document.
func parseManifests(t *testing.T, source string, data []byte) manifests {
	t.Helper()
	var objects manifests
	for i, doc := range strings.Split("\n"+string(data), "\n---\n") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		json, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			t.Fatalf("%s: document %d is not YAML: %v", source, i, err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(json); err != nil {
			t.Fatalf("%s: document %d is not a Kubernetes object: %v", source, i, err)
		}
		objects = append(objects, object{Unstructured: u, raw: []byte(doc)})
	}
	if len(objects) == 0 {
		t.Fatalf("%s: no objects", source)
	}
	return objects
}

// readManifests parses a YAML file of the repository, such as a generated one under config/.
func readManifests(t *testing.T, path string) manifests {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return parseManifests(t, path, data)
}

// ofKind returns the objects of one kind.
func (m manifests) ofKind(kind string) manifests {
	var out manifests
	for _, o := range m {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// get returns the one object of kind with name, failing the test when there is not exactly one.
func (m manifests) get(t *testing.T, kind, name string) object {
	t.Helper()
	var found []object
	for _, o := range m.ofKind(kind) {
		if o.GetName() == name {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one %s named %q in the build, found %d", kind, name, len(found))
	}
	return found[0]
}

// decode decodes an object into its typed API struct, refusing fields the struct does not
// have, so a misspelt field fails here rather than being dropped by the API server.
func decode[T any](t *testing.T, o object) *T {
	t.Helper()
	out := new(T)
	if err := yaml.UnmarshalStrict(o.raw, out); err != nil {
		t.Fatalf("%s does not decode into %T: %v", o.key(), *out, err)
	}
	return out
}

// get decodes the one object of kind with name.
func get[T any](t *testing.T, m manifests, kind, name string) *T {
	t.Helper()
	return decode[T](t, m.get(t, kind, name))
}

// managerOptions parses args with the manager's own flags, as cmd/manager does, and returns the
// configuration the manager would run with.
func managerOptions(t *testing.T, args []string) operator.Options {
	t.Helper()
	// The certificate directories default to $TMPDIR/..., and the manager's container sets no
	// TMPDIR, so they are read here as the container would see them.
	t.Setenv("TMPDIR", "")
	var opts operator.Options
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	opts.BindFlags(fs)
	(&zap.Options{}).BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("the manager refuses the Deployment's args %q: %v", args, err)
	}
	if fs.NArg() != 0 {
		t.Fatalf("the manager ignores the Deployment's arguments %q", fs.Args())
	}
	return opts
}

// addressPort is the port of a host:port address such as ":8081".
func addressPort(t *testing.T, flagName, address string) int32 {
	t.Helper()
	_, port, err := net.SplitHostPort(address)
	if err != nil {
		t.Fatalf("--%s=%q: %v", flagName, address, err)
	}
	n, err := strconv.ParseInt(port, 10, 32)
	if err != nil {
		t.Fatalf("--%s=%q: %v", flagName, address, err)
	}
	return int32(n)
}

// containerPort resolves a port a probe or a Service refers to, by number or by name, to the
// container's port number; 0 when the container does not declare the named port.
func containerPort(c *corev1.Container, port intstr.IntOrString) int32 {
	if port.Type == intstr.Int {
		return port.IntVal
	}
	for _, p := range c.Ports {
		if p.Name == port.StrVal {
			return p.ContainerPort
		}
	}
	return 0
}

// container returns the container named name.
func container(t *testing.T, spec *corev1.PodSpec, name string) *corev1.Container {
	t.Helper()
	for i := range spec.Containers {
		if spec.Containers[i].Name == name {
			return &spec.Containers[i]
		}
	}
	t.Fatalf("the pod has no container named %q", name)
	return nil
}

// secretMountedAt returns the Secret whose volume the container mounts at path, failing the
// test when the mount is missing, writable or not a Secret.
func secretMountedAt(t *testing.T, spec *corev1.PodSpec, c *corev1.Container, path string) string {
	t.Helper()
	for _, m := range c.VolumeMounts {
		if m.MountPath != path {
			continue
		}
		if !m.ReadOnly {
			t.Errorf("container %s mounts %s writable; want readOnly", c.Name, path)
		}
		for _, v := range spec.Volumes {
			if v.Name == m.Name {
				if v.Secret == nil {
					t.Fatalf("volume %s mounted at %s is not a Secret", v.Name, path)
				}
				return v.Secret.SecretName
			}
		}
		t.Fatalf("container %s mounts volume %s, which the pod does not have", c.Name, m.Name)
	}
	t.Fatalf("container %s mounts nothing at %s", c.Name, path)
	return ""
}

// selects reports whether a Service's or NetworkPolicy's label selector selects a pod with
// podLabels. An empty selector selects nothing here: none of ours may be empty.
func selects(selector, podLabels map[string]string) bool {
	return len(selector) > 0 && labels.SelectorFromSet(selector).Matches(labels.Set(podLabels))
}

// allows reports whether rules allow verb on the named object of group and resource; name ""
// asks for a rule without resourceNames, as a create or a list needs.
func allows(rules []rbacv1.PolicyRule, group, resource, name, verb string) bool {
	matches := func(values []string, v string) bool {
		return slices.Contains(values, v) || slices.Contains(values, rbacv1.ResourceAll)
	}
	for _, r := range rules {
		if matches(r.APIGroups, group) && matches(r.Resources, resource) && matches(r.Verbs, verb) &&
			(len(r.ResourceNames) == 0 || (name != "" && slices.Contains(r.ResourceNames, name))) {
			return true
		}
	}
	return false
}

// roleRefs lists, as "Kind name", the roles the bindings grant to the ServiceAccount, and fails
// the test when a binding names a role the build lacks or sits outside its Role's namespace.
func roleRefs(t *testing.T, m manifests, namespace, serviceAccount string) []string {
	t.Helper()
	bound := func(subjects []rbacv1.Subject) bool {
		return slices.ContainsFunc(subjects, func(s rbacv1.Subject) bool {
			return s.Kind == rbacv1.ServiceAccountKind && s.Name == serviceAccount && s.Namespace == namespace
		})
	}
	var refs []string
	for _, o := range m.ofKind("ClusterRoleBinding") {
		b := decode[rbacv1.ClusterRoleBinding](t, o)
		if bound(b.Subjects) {
			if b.RoleRef.Kind != "ClusterRole" {
				t.Errorf("%s binds a %s; want a ClusterRole", o.key(), b.RoleRef.Kind)
			}
			m.get(t, b.RoleRef.Kind, b.RoleRef.Name)
			refs = append(refs, b.RoleRef.Kind+" "+b.RoleRef.Name)
		}
	}
	for _, o := range m.ofKind("RoleBinding") {
		b := decode[rbacv1.RoleBinding](t, o)
		if bound(b.Subjects) {
			role := m.get(t, b.RoleRef.Kind, b.RoleRef.Name)
			if b.RoleRef.Kind == "Role" && role.GetNamespace() != b.Namespace {
				t.Errorf("%s binds %s from another namespace", o.key(), role.key())
			}
			refs = append(refs, b.RoleRef.Kind+" "+b.RoleRef.Name)
		}
	}
	slices.Sort(refs)
	return refs
}

// nestedString reads a string field, failing the test when it is missing.
func nestedString(t *testing.T, o object, fields ...string) string {
	t.Helper()
	v, found, err := unstructured.NestedString(o.Object, fields...)
	if err != nil || !found {
		t.Fatalf("%s: no string at %s (%v)", o.key(), strings.Join(fields, "."), err)
	}
	return v
}

// nestedStrings reads a list of strings, failing the test when it is missing.
func nestedStrings(t *testing.T, o object, fields ...string) []string {
	t.Helper()
	v, found, err := unstructured.NestedStringSlice(o.Object, fields...)
	if err != nil || !found {
		t.Fatalf("%s: no list of strings at %s (%v)", o.key(), strings.Join(fields, "."), err)
	}
	return v
}

// nestedInt reads an integer field, failing the test when it is missing.
func nestedInt(t *testing.T, o object, fields ...string) int64 {
	t.Helper()
	v, found, err := unstructured.NestedInt64(o.Object, fields...)
	if err != nil || !found {
		t.Fatalf("%s: no integer at %s (%v)", o.key(), strings.Join(fields, "."), err)
	}
	return v
}

// serviceDNSNames are the names a serving certificate for a Service must hold.
func serviceDNSNames(service, namespace string) []string {
	return []string{
		fmt.Sprintf("%s.%s.svc", service, namespace),
		fmt.Sprintf("%s.%s.svc.cluster.local", service, namespace),
	}
}

// The unstructured* helpers read an optional field, reporting whether it is there and failing
// only when it has another type.
func unstructuredString(o object, fields ...string) (string, bool, error) {
	return unstructuredNested[string](o, fields...)
}

func unstructuredBool(o object, fields ...string) (bool, bool, error) {
	return unstructuredNested[bool](o, fields...)
}

func unstructuredSlice(o object, fields ...string) ([]any, bool, error) {
	return unstructuredNested[[]any](o, fields...)
}

func unstructuredMap(o object, fields ...string) (map[string]any, bool, error) {
	return unstructuredNested[map[string]any](o, fields...)
}

func unstructuredStringMap(o object, fields ...string) (map[string]string, bool, error) {
	v, found, err := unstructuredMap(o, fields...)
	out := map[string]string{}
	for k, s := range v {
		if str, ok := s.(string); ok {
			out[k] = str
		}
	}
	return out, found, err
}

// unstructuredNested reads a field without the copy the unstructured helpers make.
func unstructuredNested[T any](o object, fields ...string) (T, bool, error) {
	var zero T
	v, found, err := unstructured.NestedFieldNoCopy(o.Object, fields...)
	if err != nil || !found {
		return zero, found, err
	}
	typed, ok := v.(T)
	if !ok {
		return zero, true, fmt.Errorf("%s: %s is a %T, not a %T", o.key(), strings.Join(fields, "."), v, zero)
	}
	return typed, true, nil
}

// toUnstructured wraps a nested map, such as a list item, as an object.
func toUnstructured(v any) *unstructured.Unstructured {
	m, _ := v.(map[string]any)
	return &unstructured.Unstructured{Object: m}
}
