package operator

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/endpoints/discovery"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	cachev1alpha1 "github.com/seedlabs/webhook-operator/api/cache/v1alpha1"
	"github.com/seedlabs/webhook-operator/internal/scheme"
)

// TestStorageMigration: what the migration writes, by a fake API server (which keeps objects at
// one version: the CRDs here go back to v1alpha1); kube-apiserver itself stores the objects in
// the integration suite (test/integration/migration_test.go).
func TestStorageMigration(t *testing.T) {
	const name = "memcacheds.cache.seedlabs.dev"
	crd := func(storage string, stored ...string) *apiextensionsv1.CustomResourceDefinition {
		c := &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "cache.seedlabs.dev",
				Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "memcacheds", Kind: "Memcached"}},
			Status: apiextensionsv1.CustomResourceDefinitionStatus{StoredVersions: stored},
		}
		for _, v := range []string{"v1alpha1", "v1"} {
			c.Spec.Versions = append(c.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: v, Served: true, Storage: v == storage})
		}
		return c
	}
	unservedStorage := crd("v1", "v1alpha1", "v1")
	unservedStorage.Spec.Versions[1].Served = false
	memcached := func(name string) *cachev1alpha1.Memcached {
		return &cachev1alpha1.Memcached{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: cachev1alpha1.MemcachedSpec{Size: ptr.To[int32](1)}}
	}
	for _, tc := range []struct {
		name string
		crd  *apiextensionsv1.CustomResourceDefinition
		// refuse names an object whose patch fails.
		refuse      string
		wantPatched []string
		wantStored  []string
		wantErr     string
	}{
		{name: "stored at the storage version alone: nothing to do", crd: crd("v1alpha1", "v1alpha1"), wantStored: []string{"v1alpha1"}},
		{name: "another storage version: every object patched, then the stored versions trimmed", crd: crd("v1alpha1", "v1", "v1alpha1"),
			wantPatched: []string{"a", "b", "c"}, wantStored: []string{"v1alpha1"}},
		{name: "a storage version not served: the objects patched at a version served, with no storage version hash to wait for", crd: unservedStorage,
			wantPatched: []string{"a", "b", "c"}, wantStored: []string{"v1"}},
		{name: "one object refused: the others patched, the stored versions kept", crd: crd("v1alpha1", "v1", "v1alpha1"), refuse: "b",
			wantPatched: []string{"a", "c"}, wantStored: []string{"v1", "v1alpha1"}, wantErr: "1 of the memcacheds could not be stored at v1alpha1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var patched []string
			c := fake.NewClientBuilder().WithScheme(scheme.New()).
				WithObjects(tc.crd, memcached("a"), memcached("b"), memcached("c")).
				WithStatusSubresource(&apiextensionsv1.CustomResourceDefinition{}, &cachev1alpha1.Memcached{}).
				WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
					if _, ok := obj.(*apiextensionsv1.CustomResourceDefinition); !ok {
						if obj.GetName() == tc.refuse {
							return errors.New("refused by a webhook")
						}
						if v := obj.GetObjectKind().GroupVersionKind().Version; v != "v1alpha1" {
							t.Errorf("%s patched at %s, want v1alpha1: the storage version, or the version served", obj.GetName(), v)
						}
						patched = append(patched, obj.GetName())
					}
					return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
				}}).Build()
			disco := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{{
				GroupVersion: "cache.seedlabs.dev/v1alpha1",
				APIResources: []metav1.APIResource{{Name: "memcacheds", Kind: "Memcached",
					StorageVersionHash: discovery.StorageVersionHash("cache.seedlabs.dev", storageVersion(tc.crd), "Memcached")}},
			}}}}
			m := &storageMigration{api: c, writer: c, discovery: disco, log: logr.Discard(), cleaned: map[string]int64{}}

			err := m.migrate(context.Background(), name)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("migrate: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("migrate: %v, want an error saying %q", err, tc.wantErr)
			}
			if strings.Join(patched, ",") != strings.Join(tc.wantPatched, ",") {
				t.Errorf("patched %v, want %v", patched, tc.wantPatched)
			}
			got := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(context.Background(), client.ObjectKey{Name: name}, got); err != nil {
				t.Fatal(err)
			}
			if strings.Join(got.Status.StoredVersions, ",") != strings.Join(tc.wantStored, ",") {
				t.Errorf("stored versions %v, want %v", got.Status.StoredVersions, tc.wantStored)
			}
		})
	}
}

// TestDropManagedFields: the patch that drops the managedFields entries of versions not served, by
// a fake API server; kube-apiserver applies it in test/integration/nextrelease_test.go.
func TestDropManagedFields(t *testing.T) {
	gvk := cachev1alpha1.GroupVersion.WithKind("Memcached")
	gvk.Version = "v1"
	served := map[string]bool{"cache.seedlabs.dev/v1": true, "cache.seedlabs.dev/v1alpha1": false}
	entry := func(manager, version string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationApply, APIVersion: "cache.seedlabs.dev/" + version,
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:size":{}}}`)}
	}
	type patch struct {
		Op    string          `json:"op"`
		Path  string          `json:"path"`
		Value json.RawMessage `json:"value"`
	}
	for _, tc := range []struct {
		name    string
		entries []metav1.ManagedFieldsEntry
		// conflicts is how many patches the API server refuses as written meanwhile; getErr what
		// reading the object again then returns.
		conflicts   int
		getErr      error
		wantResult  string
		wantPatches int
		// wantManagers are the managers the last patch keeps, by manager@version.
		wantManagers []string
	}{
		{name: "entries of versions served alone: nothing to patch", entries: []metav1.ManagedFieldsEntry{entry("kubectl", "v1")},
			wantResult: "current"},
		{name: "entries of a version not served dropped, the others kept", entries: []metav1.ManagedFieldsEntry{entry("kubectl", "v1alpha1"), entry("helm", "v1"), entry("argocd", "v1alpha1")},
			wantResult: "cleaned", wantPatches: 1, wantManagers: []string{"helm@cache.seedlabs.dev/v1"}},
		{name: "no entry left: one of the operator's, owning the name", entries: []metav1.ManagedFieldsEntry{entry("kubectl", "v1alpha1")},
			wantResult: "cleaned", wantPatches: 1, wantManagers: []string{EventSource + "@cache.seedlabs.dev/v1"}},
		{name: "written meanwhile: read again and patched again", entries: []metav1.ManagedFieldsEntry{entry("kubectl", "v1alpha1"), entry("helm", "v1")}, conflicts: 1,
			wantResult: "cleaned", wantPatches: 2, wantManagers: []string{"helm@cache.seedlabs.dev/v1"}},
		{name: "deleted meanwhile", entries: []metav1.ManagedFieldsEntry{entry("kubectl", "v1alpha1")}, conflicts: 1, getErr: apierrors.NewNotFound(schema.GroupResource{}, "a"),
			wantResult: "gone", wantPatches: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: "10", ManagedFields: tc.entries}}
			var rvs []string
			var managers []string
			patches := 0
			c := fake.NewClientBuilder().WithScheme(scheme.New()).WithInterceptorFuncs(interceptor.Funcs{
				Get: func(_ context.Context, _ client.WithWatch, _ client.ObjectKey, got client.Object, _ ...client.GetOption) error {
					if tc.getErr != nil {
						return tc.getErr
					}
					got.SetManagedFields(tc.entries)
					got.SetResourceVersion("11")
					return nil
				},
				Patch: func(_ context.Context, _ client.WithWatch, patched client.Object, p client.Patch, _ ...client.PatchOption) error {
					patches++
					if p.Type() != types.JSONPatchType {
						t.Errorf("patch type %s, want a JSON patch", p.Type())
					}
					if v := patched.GetObjectKind().GroupVersionKind(); v != gvk {
						t.Errorf("patched at %v, want %v", v, gvk)
					}
					body, err := p.Data(patched)
					if err != nil {
						t.Fatal(err)
					}
					var ops []patch
					if err := json.Unmarshal(body, &ops); err != nil {
						t.Fatal(err)
					}
					managers = nil
					for _, op := range ops {
						switch op.Path {
						case "/metadata/resourceVersion":
							var rv string
							_ = json.Unmarshal(op.Value, &rv)
							rvs = append(rvs, rv)
						case "/metadata/managedFields":
							var kept []metav1.ManagedFieldsEntry
							if err := json.Unmarshal(op.Value, &kept); err != nil {
								t.Fatal(err)
							}
							for _, e := range kept {
								managers = append(managers, e.Manager+"@"+e.APIVersion)
							}
						}
					}
					if patches <= tc.conflicts {
						return apierrors.NewConflict(schema.GroupResource{Group: "cache.seedlabs.dev", Resource: "memcacheds"}, "a", errors.New("modified"))
					}
					return nil
				},
			}).Build()
			m := &storageMigration{api: c, writer: c, log: logr.Discard()}

			result, err := m.dropManagedFields(context.Background(), gvk, obj, served)
			if err != nil {
				t.Fatalf("dropManagedFields: %v", err)
			}
			if result != tc.wantResult {
				t.Errorf("result %q, want %q", result, tc.wantResult)
			}
			if patches != tc.wantPatches {
				t.Errorf("%d patches, want %d", patches, tc.wantPatches)
			}
			if tc.wantResult == "cleaned" && !slices.Equal(managers, tc.wantManagers) {
				t.Errorf("the entries kept are %v, want %v", managers, tc.wantManagers)
			}
			if want := []string{"10", "11"}[:min(patches, 2)]; !slices.Equal(rvs, want) {
				t.Errorf("the patches' resourceVersion preconditions are %v, want %v (the one read, then the one read again)", rvs, want)
			}
		})
	}
}
