package webhooks

import (
	"fmt"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	authv1alpha1 "github.com/seedlabs/webhook-operator/api/auth/v1alpha1"
	cachev1alpha1 "github.com/seedlabs/webhook-operator/api/cache/v1alpha1"
)

const valueAndValueFromDetail = "must not be set together with value; keep one of them"

// secretVar reads the key token of Secret secret into the variable name.
func secretVar(name, secret string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: "token",
	}}}
}

// readsSecret is the violation of the variable at index of spec.env that reads a Secret.
func readsSecret(index int) *field.Error {
	path := fmt.Sprintf("spec.env[%d].valueFrom.secretKeyRef", index)
	return &field.Error{Type: field.ErrorTypeForbidden, Field: path, BadValue: "", Detail: secretRefDetail, Origin: anyRule}
}

// withEnv sets the environment to vars.
func withEnv(vars ...corev1.EnvVar) func(*appv1.DeployObjectSpec) {
	return func(s *appv1.DeployObjectSpec) { s.Env = vars }
}

// TestRatchetDeployObject updates a DeployObject stored with violations (before their rules
// existed, or past the webhook) and refuses exactly the violations whose field the update changes.
func TestRatchetDeployObject(t *testing.T) {
	valueBesideConfigMap := corev1.EnvVar{Name: "MODE", Value: "blue", ValueFrom: &corev1.EnvVarSource{
		ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "modes"}, Key: "mode"},
	}}
	tests := []struct {
		name   string
		stored *appv1.DeployObject
		update func(*appv1.DeployObject)
		want   field.ErrorList
	}{
		{
			name:   "Forbidden: a Secret kept as it is, with replicas changed",
			stored: deployObject(withEnv(secretVar("TOKEN", "app-token"))),
			update: func(d *appv1.DeployObject) { d.Spec.Replicas = ptr.To[int32](3) },
		},
		{
			name:   "Forbidden: a Secret kept as it is, with labels and annotations added",
			stored: deployObject(withEnv(secretVar("TOKEN", "app-token"))),
			update: func(d *appv1.DeployObject) {
				d.Labels = map[string]string{"team": "shop"}
				d.Annotations = map[string]string{"example.com/owner": "ada"}
			},
		},
		{
			name:   "Forbidden: a Secret repointed to another Secret",
			stored: deployObject(withEnv(secretVar("TOKEN", "app-token"))),
			update: func(d *appv1.DeployObject) { d.Spec.Env[0].ValueFrom.SecretKeyRef.Name = "db-password" },
			want:   field.ErrorList{readsSecret(0)},
		},
		{
			name:   "Forbidden: another key of the same Secret",
			stored: deployObject(withEnv(secretVar("TOKEN", "app-token"))),
			update: func(d *appv1.DeployObject) { d.Spec.Env[0].ValueFrom.SecretKeyRef.Key = "admin-token" },
			want:   field.ErrorList{readsSecret(0)},
		},
		{
			name:   "Forbidden: a second Secret beside the kept one",
			stored: deployObject(withEnv(secretVar("TOKEN", "app-token"))),
			update: func(d *appv1.DeployObject) { d.Spec.Env = append(d.Spec.Env, secretVar("PASSWORD", "db-password")) },
			want:   field.ErrorList{readsSecret(1)},
		},
		{
			name:   "list index shift: removing a variable moves another Secret onto the kept one's index",
			stored: deployObject(withEnv(secretVar("TOKEN", "app-token"), secretVar("PASSWORD", "db-password"))),
			update: func(d *appv1.DeployObject) { d.Spec.Env = d.Spec.Env[1:] },
			want:   field.ErrorList{readsSecret(0)},
		},
		{
			name:   "list index shift: a variable inserted before a kept Secret moves it to an index that had none",
			stored: deployObject(withEnv(secretVar("TOKEN", "app-token"))),
			update: func(d *appv1.DeployObject) {
				d.Spec.Env = append([]corev1.EnvVar{{Name: "MODE", Value: "blue"}}, d.Spec.Env...)
			},
			want: field.ErrorList{readsSecret(1)},
		},
		{
			name:   "Required: a variable without a name kept as it is, with replicas changed",
			stored: deployObject(withEnv(corev1.EnvVar{Value: "blue"})),
			update: func(d *appv1.DeployObject) { d.Spec.Replicas = ptr.To[int32](3) },
		},
		{
			name:   "Required: an empty name replaced by a blank one",
			stored: deployObject(withEnv(corev1.EnvVar{Value: "blue"})),
			update: func(d *appv1.DeployObject) { d.Spec.Env[0].Name = "  " },
			want:   field.ErrorList{required("spec.env[0].name", envNameDetail)},
		},
		{
			name: "Required: a limit missing from both, with replicas changed",
			stored: deployObject(func(s *appv1.DeployObjectSpec) {
				s.Resources.Requests = corev1.ResourceList{"example.com/gpu": q("1")}
			}),
			update: func(d *appv1.DeployObject) { d.Spec.Replicas = ptr.To[int32](3) },
		},
		{
			name: "Required: a limit added for another resource, the missing one still missing",
			stored: deployObject(func(s *appv1.DeployObjectSpec) {
				s.Resources.Requests = corev1.ResourceList{"example.com/gpu": q("1")}
			}),
			update: func(d *appv1.DeployObject) {
				d.Spec.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: q("128Mi")}
			},
		},
		{
			name:   "Invalid: replicas below zero changed to another value below zero",
			stored: deployObject(func(s *appv1.DeployObjectSpec) { s.Replicas = ptr.To[int32](-1) }),
			update: func(d *appv1.DeployObject) { d.Spec.Replicas = ptr.To[int32](-2) },
			want:   field.ErrorList{invalid("spec.replicas", int32(-2), replicasDetail)},
		},
		{
			name:   "Invalid: the same bad value named, with the field repointed to another ConfigMap",
			stored: deployObject(withEnv(valueBesideConfigMap)),
			update: func(d *appv1.DeployObject) { d.Spec.Env[0].ValueFrom.ConfigMapKeyRef.Name = "other-modes" },
			want:   field.ErrorList{invalid("spec.env[0].valueFrom", "MODE", valueAndValueFromDetail)},
		},
		{
			name:   "Invalid: the same bad value named, with the field kept",
			stored: deployObject(withEnv(valueBesideConfigMap)),
			update: func(d *appv1.DeployObject) { d.Spec.Image = "nginx:1.28" },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if errs, _ := ValidateDeployObject(nil, tc.stored, nil); len(errs) == 0 {
				t.Fatal("the stored object breaks no rule, so there is nothing to ratchet")
			}
			updated := tc.stored.DeepCopy()
			tc.update(updated)

			got, _ := ValidateDeployObject(tc.stored, updated, nil)

			if diff := gocmp.Diff(tc.want, got, compareFieldErrors, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRatchetWelcome holds a Welcome's update to the same ratchet: a Required error is forgiven
// only while its field keeps its value.
func TestRatchetWelcome(t *testing.T) {
	noName := func(s *authv1alpha1.WelcomeSpec) { s.Name = "" }
	stored := welcome(noName)
	tests := []struct {
		name    string
		updated *authv1alpha1.Welcome
		want    field.ErrorList
	}{
		{
			name:    "an empty name kept, with the port changed",
			updated: welcome(noName, func(s *authv1alpha1.WelcomeSpec) { s.Port = ptr.To[int32](8080) }),
		},
		{
			name:    "an empty name replaced by a blank one",
			updated: welcome(func(s *authv1alpha1.WelcomeSpec) { s.Name = " " }),
			want:    field.ErrorList{required("spec.name", nameDetail)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := Welcome.Validate(stored, tc.updated, nil)
			if diff := gocmp.Diff(tc.want, got, compareFieldErrors, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRatchetMemcached holds a Memcached's update to the same ratchet.
func TestRatchetMemcached(t *testing.T) {
	stored := memcached(ptr.To[int32](1), ptr.To[int32](0))
	tests := []struct {
		name    string
		updated *cachev1alpha1.Memcached
		want    field.ErrorList
	}{
		{name: "containerPort 0 kept, with the size changed", updated: memcached(ptr.To[int32](2), ptr.To[int32](0))},
		{
			name:    "containerPort 0 changed to 70000",
			updated: memcached(ptr.To[int32](1), ptr.To[int32](70000)),
			want:    field.ErrorList{invalid("spec.containerPort", int32(70000), portDetail)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := Memcached.Validate(stored, tc.updated, nil)
			if diff := gocmp.Diff(tc.want, got, compareFieldErrors, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRatchetResolvesFieldPaths gives ratchet a violation the stored object had at a field path,
// and holds it to forgiving it only where the path resolves in both objects to the same value: a
// missing field or key is a value (nil), a key is read whole whatever it holds, and a path the
// objects have no such place for is kept.
func TestRatchetResolvesFieldPaths(t *testing.T) {
	stored := deployObject(func(s *appv1.DeployObjectSpec) {
		s.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: q("100m")}
	})
	stored.Labels = map[string]string{"app.kubernetes.io/name": "shop", "a": "1", "a]b.c[0]": "2"}
	tests := []struct {
		name   string
		field  string
		update func(*appv1.DeployObject)
		kept   bool
	}{
		{name: "a field, unchanged", field: "spec.image", update: func(d *appv1.DeployObject) { d.Spec.Replicas = ptr.To[int32](2) }},
		{name: "a field, changed", field: "spec.image", update: func(d *appv1.DeployObject) { d.Spec.Image = "nginx:1.28" }, kept: true},
		{name: "a field missing from both", field: "spec.env", update: func(d *appv1.DeployObject) { d.Spec.Image = "nginx:1.28" }},
		{name: "a field under a missing one", field: "spec.env[0].valueFrom.secretKeyRef", update: func(*appv1.DeployObject) {}},
		{
			name: "a field missing from the stored object only", field: "spec.env",
			update: func(d *appv1.DeployObject) { d.Spec.Env = []corev1.EnvVar{{Name: "MODE", Value: "blue"}} }, kept: true,
		},
		{name: "an index, unchanged", field: "spec.ports[0]", update: func(d *appv1.DeployObject) { d.Spec.Image = "nginx:1.28" }},
		{name: "an index, changed", field: "spec.ports[0]", update: func(d *appv1.DeployObject) { d.Spec.Ports[0].Port = 81 }, kept: true},
		{
			name: "a map key holding dots, unchanged", field: "metadata.labels[app.kubernetes.io/name]",
			update: func(d *appv1.DeployObject) { d.Labels["a"] = "changed" },
		},
		{
			name: "a map key holding dots, changed", field: "metadata.labels[app.kubernetes.io/name]",
			update: func(d *appv1.DeployObject) { d.Labels["app.kubernetes.io/name"] = "cart" }, kept: true,
		},
		{
			name: "a map key holding brackets, read whole, unchanged", field: "metadata.labels[a]b.c[0]]",
			update: func(d *appv1.DeployObject) { d.Labels["a"] = "changed" },
		},
		{
			name: "a map key holding brackets, read whole, changed", field: "metadata.labels[a]b.c[0]]",
			update: func(d *appv1.DeployObject) { d.Labels["a]b.c[0]"] = "changed" }, kept: true,
		},
		{
			name: "a map key missing from both", field: "spec.resources.limits[example.com/gpu]",
			update: func(d *appv1.DeployObject) { d.Spec.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: q("1")} },
		},
		{
			name: "a quantity written another way is the same quantity", field: "spec.resources.requests[cpu]",
			update: func(d *appv1.DeployObject) { d.Spec.Resources.Requests[corev1.ResourceCPU] = q("0.1") },
		},
		{name: "unresolvable: a field of a string", field: "spec.image.tag", update: func(*appv1.DeployObject) {}, kept: true},
		{name: "unresolvable: a field of a list", field: "spec.ports.name", update: func(*appv1.DeployObject) {}, kept: true},
		{name: "unresolvable: an index past the end", field: "spec.ports[1].name", update: func(*appv1.DeployObject) {}, kept: true},
		{name: "unresolvable: an index that is no number", field: "spec.ports[http]", update: func(*appv1.DeployObject) {}, kept: true},
		{name: "unresolvable: a key of a string", field: "spec.image[0]", update: func(*appv1.DeployObject) {}, kept: true},
		{name: "unresolvable: an index that does not end", field: "spec.ports[0", update: func(*appv1.DeployObject) {}, kept: true},
		{name: "unresolvable: a key that does not end", field: "metadata.labels[team", update: func(*appv1.DeployObject) {}, kept: true},
		{
			name: "unresolvable: a key that resolves but leaves more path", field: "metadata.labels[a]x",
			update: func(*appv1.DeployObject) {}, kept: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			updated := stored.DeepCopy()
			tc.update(updated)
			violation := field.ErrorList{required(tc.field, "test")}
			var want field.ErrorList
			if tc.kept {
				want = violation
			}

			got := ratchet(violation, violation, stored, updated)

			if diff := gocmp.Diff(want, got, compareFieldErrors, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("ratchet (-want +got):\n%s", diff)
			}
		})
	}
}
