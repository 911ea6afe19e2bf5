//go:build e2e

package e2e

import (
	"errors"
	"fmt"
	"os"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	cachev1 "github.com/seedlabs/webhook-operator/api/cache/v1"
	"github.com/seedlabs/webhook-operator/api/conditions"
	"github.com/seedlabs/webhook-operator/webhooks"
)

// kind is what the suite needs of each of the operator's kinds: the admission rules the unit
// tests hold the webhooks to, and what "rolled out" means for its status.
type kind struct {
	newObject func() client.Object
	// admit applies the webhooks' own rules to obj, as admission would on create: defaults,
	// then the violations.
	admit func(obj client.Object) field.ErrorList
	// spec is the object's spec, to compare what the API server stored with what the rules give.
	spec func(obj client.Object) any
	// replicas is how many pods the object asks for.
	replicas func(obj client.Object) int32
	// rolledOut returns nil once the status reports every replica ready and the condition of
	// type ready True, for the generation it was given.
	rolledOut func(obj client.Object, ready string) error
}

// available returns nil once obj, of kind k, reports every replica ready and the object Ready,
// for the generation it was given, as this tree's operator reports it.
func (k kind) available(obj client.Object) error {
	return k.rolledOut(obj, conditions.Ready)
}

// defaultPolicy is the policy of a manager deployed without --allowed-registries, as
// config/default deploys it, and no AdmissionPolicy.
var defaultPolicy = func() *webhooks.Policy {
	p, err := webhooks.NewImagePolicy(nil)
	if err != nil {
		panic(err)
	}
	return webhooks.DefaultPolicy(p)
}()

// admitted is what admission of a create makes of an object of k: the violations of the object,
// defaulted, under defaultPolicy.
func admitted(k webhooks.AnyKind) func(client.Object) field.ErrorList {
	return func(obj client.Object) field.ErrorList {
		errs, _, ok := k.Admit(obj, defaultPolicy)
		if !ok {
			panic(fmt.Sprintf("a %T is no %s", obj, k.Kind()))
		}
		return errs
	}
}

var kinds = map[string]kind{
	"Welcome": {
		newObject: func() client.Object { return &authv1.Welcome{} },
		admit:     admitted(webhooks.WelcomeV1),
		spec:      func(obj client.Object) any { return obj.(*authv1.Welcome).Spec },
		replicas:  func(obj client.Object) int32 { return *obj.(*authv1.Welcome).Spec.Replicas },
		rolledOut: func(obj client.Object, ready string) error {
			w := obj.(*authv1.Welcome)
			if w.Status.ServiceURL == "" {
				return errors.New("status.serviceURL is empty")
			}
			return rolledOut(w, w.Status.ObservedGeneration, w.Status.ReadyReplicas, *w.Spec.Replicas, w.Status.Conditions, ready)
		},
	},
	"Memcached": {
		newObject: func() client.Object { return &cachev1.Memcached{} },
		admit:     admitted(webhooks.MemcachedV1),
		spec:      func(obj client.Object) any { return obj.(*cachev1.Memcached).Spec },
		replicas:  func(obj client.Object) int32 { return *obj.(*cachev1.Memcached).Spec.Size },
		rolledOut: func(obj client.Object, ready string) error {
			m := obj.(*cachev1.Memcached)
			if len(m.Status.Nodes) != int(*m.Spec.Size) {
				return fmt.Errorf("status.nodes %v, want %d", m.Status.Nodes, *m.Spec.Size)
			}
			return rolledOut(m, m.Status.ObservedGeneration, m.Status.Replicas, *m.Spec.Size, m.Status.Conditions, ready)
		},
	},
	"DeployObject": {
		newObject: func() client.Object { return &appv1.DeployObject{} },
		admit:     admitted(webhooks.DeployObject),
		spec:      func(obj client.Object) any { return obj.(*appv1.DeployObject).Spec },
		replicas:  func(obj client.Object) int32 { return *obj.(*appv1.DeployObject).Spec.Replicas },
		rolledOut: func(obj client.Object, ready string) error {
			d := obj.(*appv1.DeployObject)
			if !slices.ContainsFunc(d.Status.DeploymentConditions, func(c appsv1.DeploymentCondition) bool {
				return c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue
			}) {
				return fmt.Errorf("the Deployment's Available condition, as mirrored, is not True: %+v", d.Status.DeploymentConditions)
			}
			return rolledOut(d, d.Status.ObservedGeneration, d.Status.ReadyReplicas, *d.Spec.Replicas, d.Status.Conditions, ready)
		},
	},
}

func rolledOut(obj client.Object, observedGeneration int64, ready, want int32, conditions []metav1.Condition, readyType string) error {
	if observedGeneration != obj.GetGeneration() {
		return fmt.Errorf("status describes generation %d, not %d", observedGeneration, obj.GetGeneration())
	}
	if ready != want {
		return fmt.Errorf("%d of %d replicas ready", ready, want)
	}
	c := meta.FindStatusCondition(conditions, readyType)
	if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != obj.GetGeneration() {
		return fmt.Errorf("not %s for generation %d: %+v", readyType, obj.GetGeneration(), c)
	}
	return nil
}

// sample is one file of config/samples, decoded into its kind.
type sample struct {
	file string
	kind kind
	obj  client.Object
}

func readSample(path string) (sample, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return sample{}, err
	}
	var typeMeta metav1.TypeMeta
	if err := yaml.Unmarshal(data, &typeMeta); err != nil {
		return sample{}, fmt.Errorf("%s: %w", path, err)
	}
	k, known := kinds[typeMeta.Kind]
	if !known {
		return sample{}, fmt.Errorf("%s: kind %q is not one of the operator's", path, typeMeta.Kind)
	}
	obj := k.newObject()
	if err := yaml.UnmarshalStrict(data, obj); err != nil {
		return sample{}, fmt.Errorf("%s: %w", path, err)
	}
	return sample{file: path, kind: k, obj: obj}, nil
}
