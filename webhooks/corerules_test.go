package webhooks

import (
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	authv1alpha1 "github.com/seedlabs/webhook-operator/api/auth/v1alpha1"
	"github.com/seedlabs/webhook-operator/test/fixtures"
)

var q = resource.MustParse

func forbidden(path, detail string) *field.Error {
	return &field.Error{Type: field.ErrorTypeForbidden, Field: path, BadValue: "", Detail: detail}
}

const (
	dns1035Detail = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an " +
		"alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used " +
		"for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
	nameRoleDetail   = "; the name is also the name of the Service and a label value of the pods, so it must be a DNS-1035 label"
	secretRefDetail  = "a DeployObject may not read Secrets, since whoever can edit it could read any Secret of the namespace; use a configMapKeyRef, or a Deployment of your own"
	fileKeyRefDetail = "the pod has no volumes to read a file from; use value or another source"
	envNameCharset   = "a valid environment variable name must consist only of printable ASCII characters other than '='"
)

// TestObjectNameIsAServiceName holds all three kinds to the same rule on metadata.name, on create,
// and lets an update of an object already stored under such a name through.
func TestObjectNameIsAServiceName(t *testing.T) {
	long := strings.Repeat("a", 64)
	tests := []struct {
		name string
		want field.ErrorList
	}{
		{name: "shop"},
		{name: strings.Repeat("a", 63)},
		{name: "hello.world", want: field.ErrorList{invalid("metadata.name", "hello.world", dns1035Detail+nameRoleDetail)}},
		{name: "1shop", want: field.ErrorList{invalid("metadata.name", "1shop", dns1035Detail+nameRoleDetail)}},
		{name: long, want: field.ErrorList{invalid("metadata.name", long, "must be no more than 63 characters"+nameRoleDetail)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := welcome()
			w.Name = tc.name
			m := memcached(ptr.To[int32](1), nil)
			m.Name = tc.name
			d := deployObject()
			d.Name = tc.name
			results := map[string]field.ErrorList{}
			results["Welcome"], _ = Welcome.Validate(nil, w, nil)
			results["Memcached"], _ = Memcached.Validate(nil, m, nil)
			results["DeployObject"], _ = ValidateDeployObject(nil, d, nil)
			for kind, got := range results {
				if diff := gocmp.Diff(tc.want, got, compareFieldErrors, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("%s errors (-want +got):\n%s", kind, diff)
				}
			}

			// The name is immutable: an object stored under it keeps being editable.
			updated := map[string]field.ErrorList{}
			updated["Welcome"], _ = Welcome.Validate(w, w.DeepCopy(), nil)
			updated["Memcached"], _ = Memcached.Validate(m, m.DeepCopy(), nil)
			updated["DeployObject"], _ = ValidateDeployObject(d, d.DeepCopy(), nil)
			for kind, got := range updated {
				if len(got) > 0 {
					t.Errorf("%s: an unchanged update is refused: %v", kind, got)
				}
			}
		})
	}
}

func TestValidateEnvVar(t *testing.T) {
	configMapRef := func(name, key string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key,
		}}
	}
	fieldRef := func(apiVersion, path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: apiVersion, FieldPath: path}}
	}
	resourceRef := func(container, res, divisor string) *corev1.EnvVarSource {
		ref := &corev1.ResourceFieldSelector{ContainerName: container, Resource: res}
		if divisor != "" {
			ref.Divisor = q(divisor)
		}
		return &corev1.EnvVarSource{ResourceFieldRef: ref}
	}
	const p = "spec.env[0]"
	tests := []struct {
		name string
		env  corev1.EnvVar
		want field.ErrorList
	}{
		{name: "plain value", env: corev1.EnvVar{Name: "LOG_LEVEL", Value: "debug"}},
		{name: "relaxed name with a space and a digit first", env: corev1.EnvVar{Name: "1 A.b-c", Value: "x"}},
		{
			name: "name with =",
			env:  corev1.EnvVar{Name: "A=B", Value: "x"},
			want: field.ErrorList{invalid(p+".name", "A=B", envNameCharset)},
		},
		{
			name: "name with a non-ASCII letter",
			env:  corev1.EnvVar{Name: "GRÜSSE", Value: "x"},
			want: field.ErrorList{invalid(p+".name", "GRÜSSE", envNameCharset)},
		},
		{name: "configMapKeyRef", env: corev1.EnvVar{Name: "A", ValueFrom: configMapRef("settings", "log.level")}},
		{
			name: "configMapKeyRef without a name or key",
			env:  corev1.EnvVar{Name: "A", ValueFrom: configMapRef("", "")},
			want: field.ErrorList{
				required(p+".valueFrom.configMapKeyRef.name", "name the ConfigMap to read"),
				required(p+".valueFrom.configMapKeyRef.key", "name the key to read"),
			},
		},
		{
			name: "configMapKeyRef with a bad name and key",
			env:  corev1.EnvVar{Name: "A", ValueFrom: configMapRef("Settings", "a/b")},
			want: field.ErrorList{
				invalid(p+".valueFrom.configMapKeyRef.name", "Settings", "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
				invalid(p+".valueFrom.configMapKeyRef.key", "a/b", "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"),
			},
		},
		{
			name: "secretKeyRef is forbidden",
			env: corev1.EnvVar{Name: "A", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password",
			}}},
			want: field.ErrorList{forbidden(p+".valueFrom.secretKeyRef", secretRefDetail)},
		},
		{
			// The Pod API's rules hold too, for a policy that relaxes the rule on Secrets.
			name: "secretKeyRef without a name, with a bad key",
			env: corev1.EnvVar{Name: "A", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				Key: "a/b",
			}}},
			want: field.ErrorList{
				forbidden(p+".valueFrom.secretKeyRef", secretRefDetail),
				required(p+".valueFrom.secretKeyRef.name", "name the Secret to read"),
				invalid(p+".valueFrom.secretKeyRef.key", "a/b", "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"),
			},
		},
		{
			name: "fileKeyRef is forbidden",
			env: corev1.EnvVar{Name: "A", ValueFrom: &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{
				VolumeName: "config", Path: "app.env", Key: "A",
			}}},
			want: field.ErrorList{forbidden(p+".valueFrom.fileKeyRef", fileKeyRefDetail)},
		},
		{
			name: "empty valueFrom",
			env:  corev1.EnvVar{Name: "A", ValueFrom: &corev1.EnvVarSource{}},
			want: field.ErrorList{required(p+".valueFrom", "must set one of fieldRef, resourceFieldRef or configMapKeyRef")},
		},
		{
			name: "value and valueFrom",
			env:  corev1.EnvVar{Name: "A", Value: "x", ValueFrom: fieldRef("", "metadata.name")},
			want: field.ErrorList{invalid(p+".valueFrom", "A", "must not be set together with value; keep one of them")},
		},
		{
			name: "two sources",
			env: corev1.EnvVar{Name: "A", ValueFrom: &corev1.EnvVarSource{
				FieldRef:        &corev1.ObjectFieldSelector{FieldPath: "metadata.name"},
				ConfigMapKeyRef: configMapRef("settings", "a").ConfigMapKeyRef,
			}},
			want: field.ErrorList{invalid(p+".valueFrom", 2, "must set only one source")},
		},
		{name: "fieldRef with apiVersion defaulted", env: corev1.EnvVar{Name: "A", ValueFrom: fieldRef("", "status.podIP")}},
		{name: "fieldRef of a label", env: corev1.EnvVar{Name: "A", ValueFrom: fieldRef("v1", "metadata.labels['app.kubernetes.io/name']")}},
		{name: "fieldRef of an annotation", env: corev1.EnvVar{Name: "A", ValueFrom: fieldRef("v1", "metadata.annotations['Example.com/Note']")}},
		{
			name: "fieldRef of an unsupported field",
			env:  corev1.EnvVar{Name: "A", ValueFrom: fieldRef("v1", "spec.containers")},
			want: field.ErrorList{notSupported(p+".valueFrom.fieldRef.fieldPath", "spec.containers",
				`supported values: "metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs", "metadata.labels['<key>']", "metadata.annotations['<key>']"`)},
		},
		{
			name: "fieldRef of a bad label key",
			env:  corev1.EnvVar{Name: "A", ValueFrom: fieldRef("v1", "metadata.labels['a b']")},
			want: field.ErrorList{invalid(p+".valueFrom.fieldRef.fieldPath", "metadata.labels['a b']",
				"name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")},
		},
		{
			name: "fieldRef of another API version",
			env:  corev1.EnvVar{Name: "A", ValueFrom: fieldRef("v2", "metadata.name")},
			want: field.ErrorList{notSupported(p+".valueFrom.fieldRef.apiVersion", "v2", `supported values: "v1"`)},
		},
		{name: "resourceFieldRef", env: corev1.EnvVar{Name: "A", ValueFrom: resourceRef("app", "limits.memory", "1Mi")}},
		{name: "resourceFieldRef of huge pages", env: corev1.EnvVar{Name: "A", ValueFrom: resourceRef("", "requests.hugepages-2Mi", "")}},
		{
			name: "resourceFieldRef of another container, an unknown resource",
			env:  corev1.EnvVar{Name: "A", ValueFrom: resourceRef("sidecar", "limits.gpu", "")},
			want: field.ErrorList{
				notSupported(p+".valueFrom.resourceFieldRef.containerName", "sidecar", `supported values: "app"`),
				notSupported(p+".valueFrom.resourceFieldRef.resource", "limits.gpu",
					`supported values: "limits.cpu", "limits.ephemeral-storage", "limits.memory", "requests.cpu", "requests.ephemeral-storage", "requests.memory", "limits.hugepages-<size>", "requests.hugepages-<size>"`),
			},
		},
		{
			name: "resourceFieldRef with a cpu divisor of 1Mi",
			env:  corev1.EnvVar{Name: "A", ValueFrom: resourceRef("", "requests.cpu", "1Mi")},
			want: field.ErrorList{notSupported(p+".valueFrom.resourceFieldRef.divisor", "1Mi", `supported values: "1m", "1"`)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := validateEnvVar(tc.env, field.NewPath("spec", "env").Index(0))
			if diff := gocmp.Diff(tc.want, got, compareUnruledErrors, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateResourcesAsThePodAPI(t *testing.T) {
	const p = "spec.resources"
	tests := []struct {
		name      string
		resources corev1.ResourceRequirements
		want      field.ErrorList
	}{
		{
			name: "extended resource with request equal to limit",
			resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{"example.com/gpu": q("1")},
				Limits:   corev1.ResourceList{"example.com/gpu": q("1")},
			},
		},
		{
			name:      "extended resource limit alone",
			resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"example.com/gpu": q("2")}},
		},
		{
			name:      "negative quantities",
			resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("-1")}, Limits: corev1.ResourceList{corev1.ResourceMemory: q("-1Mi")}},
			want: field.ErrorList{
				invalid(p+".limits[memory]", "-1Mi", "must not be negative"),
				invalid(p+".requests[cpu]", "-1", "must not be negative"),
			},
		},
		{
			name:      "extended resource requested without a limit",
			resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"example.com/gpu": q("1")}},
			want: field.ErrorList{required(p+".limits[example.com/gpu]",
				"example.com/gpu cannot be overcommitted, so its limit must be set, equal to the request 1")},
		},
		{
			name:      "fraction of an extended resource",
			resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"example.com/gpu": q("500m")}},
			want: field.ErrorList{invalid(p+".limits[example.com/gpu]", "500m",
				"must be a whole number: extended resources are counted in units")},
		},
		{
			name:      "huge pages without cpu or memory",
			resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"hugepages-2Mi": q("4Mi")}, Requests: corev1.ResourceList{"hugepages-2Mi": q("4Mi")}},
			want:      field.ErrorList{forbidden(p, "huge pages require a cpu or memory request or limit")},
		},
		{
			name:      "huge pages not a multiple of the page size",
			resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"hugepages-2Mi": q("3Mi"), corev1.ResourceMemory: q("1Gi")}},
			want: field.ErrorList{invalid(p+".limits[hugepages-2Mi]", "3Mi",
				"must be a whole multiple of the page size of hugepages-2Mi")},
		},
		{
			name:      "unknown resource names",
			resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"gpu": q("1"), "requests.example.com/gpu": q("1"), "a b": q("1")}},
			want: field.ErrorList{
				invalid(p+".limits[a b]", corev1.ResourceName("a b"), "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
				invalid(p+".limits[gpu]", corev1.ResourceName("gpu"), "must be cpu, memory, ephemeral-storage, hugepages-<size>, or an extended resource such as example.com/gpu"),
				invalid(p+".limits[requests.example.com/gpu]", corev1.ResourceName("requests.example.com/gpu"), "is not a valid extended resource name, such as example.com/gpu"),
			},
		},
		{
			name:      "claims",
			resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}}},
			want:      field.ErrorList{forbidden(p+".claims[0]", "the pod has no resource claims to refer to; remove the claim")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := validateResources(tc.resources, field.NewPath("spec", "resources"))
			if diff := gocmp.Diff(tc.want, got, compareUnruledErrors, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAppProtocolIsAQualifiedName(t *testing.T) {
	d := deployObject(func(s *appv1.DeployObjectSpec) {
		s.Ports[0].AppProtocol = ptr.To("kubernetes.io/h2c")
	})
	if errs, _ := ValidateDeployObject(nil, d, nil); len(errs) > 0 {
		t.Errorf("kubernetes.io/h2c refused: %v", errs)
	}
	d.Spec.Ports[0].AppProtocol = ptr.To("HTTP 2")
	errs, _ := ValidateDeployObject(nil, d, nil)
	want := field.ErrorList{invalid("spec.ports[0].appProtocol", "HTTP 2",
		"name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")}
	if diff := gocmp.Diff(want, errs, compareFieldErrors, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

// TestWelcomeImageFollowsTheImageRules holds a Welcome's spec.image to the rules and registry
// allow-list of a DeployObject's, and leaves an unset image (the operator's own) alone.
func TestWelcomeImageFollowsTheImageRules(t *testing.T) {
	policy := imagePolicy(t, "ghcr.io")
	tests := []struct {
		image string
		want  field.ErrorList
	}{
		{image: ""},
		{image: "ghcr.io/seedlabs/welcome-web:v0.2.0"},
		{image: "ghcr.io/seedlabs/welcome-web", want: field.ErrorList{untaggedImage("ghcr.io/seedlabs/welcome-web",
			"ghcr.io/seedlabs/welcome-web:latest", "ghcr.io/seedlabs/welcome-web")}},
		{image: "ghcr.io/seedlabs/welcome-web:latest", want: field.ErrorList{latestImage("ghcr.io/seedlabs/welcome-web:latest", "ghcr.io/seedlabs/welcome-web")}},
		{image: "quay.io/x/welcome:1", want: field.ErrorList{disallowedRegistry("quay.io/x/welcome:1", "quay.io", "ghcr.io")}},
	}
	for _, tc := range tests {
		t.Run(tc.image, func(t *testing.T) {
			w := welcome(func(s *authv1alpha1.WelcomeSpec) { s.Image = tc.image })
			got, _ := Welcome.Validate(nil, w, DefaultPolicy(policy))
			if diff := gocmp.Diff(tc.want, got, compareFieldErrors, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			// An image stored before the allow-list changed stays admitted while it is untouched.
			if got, _ := Welcome.Validate(w, w.DeepCopy(), DefaultPolicy(policy)); len(got) > 0 {
				t.Errorf("an unchanged update is refused: %v", got)
			}
		})
	}
}

// TestMemcachedSizeKeptOutOfRange lets an object stored with a size below the range through an
// update that keeps it, as any other rule ratchets, while a change to another bad size is refused.
func TestMemcachedSizeKeptOutOfRange(t *testing.T) {
	stored := memcached(ptr.To[int32](0), nil)
	if errs, _ := Memcached.Validate(stored, stored.DeepCopy(), nil); len(errs) > 0 {
		t.Errorf("keeping size 0 is refused: %v", errs)
	}
	changed := memcached(ptr.To[int32](-1), nil)
	errs, _ := Memcached.Validate(stored, changed, nil)
	want := field.ErrorList{invalid("spec.size", int32(-1), "must be between 1 and 3")}
	if diff := gocmp.Diff(want, errs, compareFieldErrors, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

// TestDeployObjectEdges holds the rules to the table the envtest suite holds admission through the
// API server to: the causes of each refusal, by field, and nothing for the cases admitted.
func TestDeployObjectEdges(t *testing.T) {
	for _, tc := range fixtures.DeployObjectEdges {
		t.Run(tc.Name, func(t *testing.T) {
			d := fixtures.EdgeDeployObject("default", "edge")
			tc.Edit(d)
			DefaultDeployObject(d)
			errs, _ := ValidateDeployObject(nil, d, nil)
			got := make([]string, 0, len(errs))
			for _, e := range errs {
				got = append(got, e.Field)
			}
			if diff := gocmp.Diff(tc.Refused, got, cmpopts.EquateEmpty(), cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
				t.Errorf("fields of the causes (-want +got):\n%s\nerrors: %v", diff, errs)
			}
		})
	}
}
