package operator

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllertest"
	"sigs.k8s.io/yaml"

	"github.com/seedlabs/webhook-operator/internal/scheme"
)

func TestTheCRDCacheKeepsOfACRDWhetherItIsEstablished(t *testing.T) {
	deleted := metav1.Now()
	crd := func(deletion *metav1.Time, conditions ...apiextensionsv1.CustomResourceDefinitionCondition) *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: "welcomes.auth.seedlabs.dev", UID: "u1", ResourceVersion: "7", Generation: 2, DeletionTimestamp: deletion,
				Labels: map[string]string{"padding": "x"}, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "auth.seedlabs.dev", Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1alpha1", Served: true, Storage: true, Schema: &apiextensionsv1.CustomResourceValidation{}},
			}},
			Status: apiextensionsv1.CustomResourceDefinitionStatus{Conditions: conditions, StoredVersions: []string{"v1alpha1"}},
		}
	}
	kept := func(deletion *metav1.Time, conditions ...apiextensionsv1.CustomResourceDefinitionCondition) *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: "welcomes.auth.seedlabs.dev", UID: "u1", ResourceVersion: "7", Generation: 2, DeletionTimestamp: deletion},
			Spec:       apiextensionsv1.CustomResourceDefinitionSpec{Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1alpha1", Served: true, Storage: true}}},
			Status:     apiextensionsv1.CustomResourceDefinitionStatus{Conditions: conditions, StoredVersions: []string{"v1alpha1"}},
		}
	}
	condition := func(t apiextensionsv1.CustomResourceDefinitionConditionType, s apiextensionsv1.ConditionStatus) apiextensionsv1.CustomResourceDefinitionCondition {
		return apiextensionsv1.CustomResourceDefinitionCondition{Type: t, Status: s, Reason: "R"}
	}
	established := condition(apiextensionsv1.Established, apiextensionsv1.ConditionTrue)
	namesAccepted := condition(apiextensionsv1.NamesAccepted, apiextensionsv1.ConditionTrue)
	tests := []struct {
		name            string
		in              *apiextensionsv1.CustomResourceDefinition
		want            *apiextensionsv1.CustomResourceDefinition
		wantEstablished bool
	}{
		{"established", crd(nil, namesAccepted, established), kept(nil, established), true},
		{"not yet established", crd(nil, namesAccepted, condition(apiextensionsv1.Established, apiextensionsv1.ConditionFalse)),
			kept(nil, condition(apiextensionsv1.Established, apiextensionsv1.ConditionFalse)), false},
		{"just created", crd(nil), kept(nil), false},
		{"being deleted", crd(&deleted, established, condition(apiextensionsv1.Terminating, apiextensionsv1.ConditionTrue)), kept(&deleted, established), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := keepEstablished(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("kept (-want +got):\n%s", diff)
			}
			if establishedCRD(got) != tt.wantEstablished {
				t.Errorf("established: %t, want %t", establishedCRD(got), tt.wantEstablished)
			}
		})
	}
	if establishedCRD(nil) {
		t.Error("nothing is established")
	}
}

// TestACRDWaitsForAStorageMigrationWhileItListsAnotherStoredVersionOrAVersionNotServed: what
// crdWatch tells the storage migration, from what its cache keeps of a CRD.
func TestACRDWaitsForAStorageMigrationWhileItListsAnotherStoredVersionOrAVersionNotServed(t *testing.T) {
	crd := func(storage string, stored ...string) *apiextensionsv1.CustomResourceDefinition {
		c := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "welcomes.auth.seedlabs.dev"}}
		for _, v := range []string{"v1alpha1", "v1"} {
			c.Spec.Versions = append(c.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: v, Served: true, Storage: v == storage})
		}
		c.Status.StoredVersions = stored
		return c
	}
	deleting := crd("v1", "v1alpha1", "v1")
	deleting.DeletionTimestamp = ptr.To(metav1.Now())
	unserved := crd("v1", "v1")
	unserved.Spec.Versions[0].Served = false
	unserved.Generation = 3
	unservedUnmigrated := crd("v1", "v1alpha1", "v1")
	unservedUnmigrated.Spec.Versions[0].Served = false
	unservedUnmigrated.Generation = 3
	for _, tc := range []struct {
		name string
		crd  *apiextensionsv1.CustomResourceDefinition
		want storageState
		// cleaned is the generation the migration dropped the managed fields at; wantPending
		// whether it then has work to do.
		cleaned     int64
		wantPending bool
	}{
		{"stored at its storage version alone", crd("v1alpha1", "v1alpha1"), storageState{}, 0, false},
		{"the storage version changed", crd("v1", "v1alpha1", "v1"), storageState{unmigrated: true}, 0, true},
		{"stored at the previous storage version alone, as after a storage version change in place", crd("v1", "v1alpha1"), storageState{unmigrated: true}, 0, true},
		{"back to the earlier storage version", crd("v1alpha1", "v1alpha1", "v1"), storageState{unmigrated: true}, 0, true},
		{"no storage version", crd("", "v1alpha1"), storageState{}, 0, false},
		{"being deleted", deleting, storageState{}, 0, false},
		{"a version not served, its managed fields not yet dropped", unserved, storageState{unserved: "v1alpha1", generation: 3}, 0, true},
		{"a version not served, its managed fields dropped at this generation", unserved, storageState{unserved: "v1alpha1", generation: 3}, 3, false},
		{"a version not served, its managed fields dropped at an earlier generation", unserved, storageState{unserved: "v1alpha1", generation: 3}, 2, true},
		{"a version not served, and objects stored at it", unservedUnmigrated, storageState{unmigrated: true, unserved: "v1alpha1", generation: 3}, 3, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kept, err := keepEstablished(tc.crd)
			if err != nil {
				t.Fatal(err)
			}
			got := storageStateOf(kept)
			if got != tc.want {
				t.Errorf("storageStateOf = %+v, want %+v", got, tc.want)
			}
			if pending := got.pending(tc.cleaned); pending != tc.wantPending {
				t.Errorf("pending(%d) = %t, want %t", tc.cleaned, pending, tc.wantPending)
			}
		})
	}
}

// TestOperatorCRDsAreConfigCRDsAndTheManagerMayReadThem holds operatorCRDs to the CRDs of
// config/crd, each serving its object's kind, and to the resourceNames the manager's role lets it
// read.
func TestOperatorCRDsAreConfigCRDsAndTheManagerMayReadThem(t *testing.T) {
	root := filepath.Join("..", "..")
	s := scheme.New()
	var names []string
	for _, c := range operatorCRDs {
		names = append(names, c.name)
		gvk, err := apiutil.GVKForObject(c.obj, s)
		if err != nil {
			t.Fatal(err)
		}
		files, err := filepath.Glob(filepath.Join(root, "config", "crd", "bases", gvk.Group+"_*.yaml"))
		if err != nil || len(files) != 1 {
			t.Fatalf("config/crd/bases has %v for the group %s, want one file", files, gvk.Group)
		}
		data, err := os.ReadFile(files[0])
		if err != nil {
			t.Fatal(err)
		}
		installed := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(data, installed); err != nil {
			t.Fatal(err)
		}
		if installed.Name != c.name || installed.Spec.Names.Kind != gvk.Kind ||
			!slices.ContainsFunc(installed.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == gvk.Version && v.Served }) {
			t.Errorf("%s serves %s %v, not %s", installed.Name, installed.Spec.Names.Kind, installed.Spec.Versions, gvk)
		}
	}

	data, err := os.ReadFile(filepath.Join(root, "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.Unmarshal(data, role); err != nil {
		t.Fatal(err)
	}
	var rules []rbacv1.PolicyRule
	for _, r := range role.Rules {
		if slices.Contains(r.Resources, "customresourcedefinitions") {
			rules = append(rules, r)
		}
	}
	want := []rbacv1.PolicyRule{{
		APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"},
		ResourceNames: slices.Sorted(slices.Values(names)), Verbs: []string{"get", "list", "watch"},
	}}
	if diff := cmp.Diff(want, rules); diff != "" {
		t.Errorf("the manager's rules on CRDs (-want +got):\n%s", diff)
	}
}

func TestTheEventsRegardThePodTheDownwardAPINames(t *testing.T) {
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	if diff := cmp.Diff(
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "manager-0", Namespace: "ops", UID: "u1"}},
		podFromEnv(env(map[string]string{EnvPodName: "manager-0", EnvPodNamespace: "ops", EnvPodUID: "u1"})),
	); diff != "" {
		t.Errorf("pod (-want +got):\n%s", diff)
	}
	for _, vars := range []map[string]string{{}, {EnvPodName: "manager-0"}, {EnvPodNamespace: "ops", EnvPodUID: "u1"}} {
		if pod := podFromEnv(env(vars)); pod != nil {
			t.Errorf("podFromEnv(%v) = %v, want none", vars, pod)
		}
	}
}

// stubInformers is a cache whose GetInformer answers with get; each call of it, and of
// RemoveInformer, sends on asked and removed.
type stubInformers struct {
	informertest.FakeInformers
	get            func(ctx context.Context) (cache.Informer, error)
	asked, removed chan struct{}
}

func (s *stubInformers) GetInformer(ctx context.Context, _ client.Object, _ ...cache.InformerGetOption) (cache.Informer, error) {
	s.asked <- struct{}{}
	return s.get(ctx)
}

func (s *stubInformers) RemoveInformer(context.Context, client.Object) error {
	s.removed <- struct{}{}
	return nil
}

func newStubWatch(get func(ctx context.Context) (cache.Informer, error)) (*crdWatch, *stubInformers) {
	informers := &stubInformers{get: get, asked: make(chan struct{}, 100), removed: make(chan struct{}, 100)}
	w := &crdWatch{
		cache: informers, log: logr.Discard(),
		established: map[string]bool{}, changed: make(chan struct{}), acquiring: map[string]chan struct{}{},
	}
	for _, c := range operatorCRDs {
		w.acquiring[c.name] = make(chan struct{}, 1)
	}
	return w, informers
}

// unsynced is GetInformer of an informer that never syncs: it waits until ctx is done.
func unsynced(ctx context.Context) (cache.Informer, error) {
	<-ctx.Done()
	return nil, apierrors.NewTimeoutError("failed waiting for Informer to sync", 0)
}

func TestTheInformerOfAKindIsMadeOnceItsCRDIsEstablishedAndRemovedIfTheCRDGoesFirst(t *testing.T) {
	synced := controllertest.NewFakeInformer(controllertest.Synced)
	first := true
	// The first informer never syncs, the next does.
	w, informers := newStubWatch(func(ctx context.Context) (cache.Informer, error) {
		if first {
			first = false
			return unsynced(ctx)
		}
		return synced, nil
	})
	got := make(chan cache.Informer, 1)
	go func() {
		i, err := w.informer(t.Context(), welcomeCRD, 0)
		if err != nil {
			t.Error(err)
		}
		got <- i
	}()

	w.observe(welcomeCRD, true)
	receive(t, informers.asked, "the informer is asked for once the CRD is established")
	w.observe(welcomeCRD, false)
	receive(t, informers.removed, "the unsynced informer is removed once the CRD is gone")
	w.observe(welcomeCRD, true)
	if i := receive(t, got, "an informer is returned once the CRD is established again"); i != synced {
		t.Errorf("informer %v, want the synced one", i)
	}
	if asked, removed := len(informers.asked), len(informers.removed); asked != 1 || removed != 0 {
		t.Errorf("asked for %d more informers and removed %d more, want 1 and 0: none while the CRD was gone", asked, removed)
	}
}

func TestAKindNotCachedWithinTheSyncTimeoutWhileItsCRDIsEstablishedIsAnError(t *testing.T) {
	for name, get := range map[string]func(ctx context.Context) (cache.Informer, error){
		"an informer that never syncs": unsynced,
		"a kind discovery never serves": func(context.Context) (cache.Informer, error) {
			return nil, &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "auth.seedlabs.dev", Kind: "Welcome"}}
		},
	} {
		t.Run(name, func(t *testing.T) {
			w, informers := newStubWatch(get)
			w.observe(welcomeCRD, true)
			_, err := w.informer(t.Context(), welcomeCRD, 1500*time.Millisecond)
			if err == nil || !strings.Contains(err.Error(), "caching the kind of welcomes.auth.seedlabs.dev, established") {
				t.Errorf("error %v, want one naming the CRD", err)
			}
			if len(informers.removed) != 1 {
				t.Errorf("%d informers removed, want 1: an unsynced informer holds back every controller's start", len(informers.removed))
			}
		})
	}
}

func TestNoInformerIsMadeWhileTheCRDIsMissing(t *testing.T) {
	w, informers := newStubWatch(unsynced)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if _, err := w.informer(ctx, welcomeCRD, 0); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v, want the context's", err)
	}
	if len(informers.asked) != 0 {
		t.Error("an informer was asked for")
	}
}
