package operator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/endpoints/discovery"
	discoveryclient "k8s.io/client-go/discovery"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The manager trims the stored versions of its own CRDs, by name, once it has rewritten their
// objects at the storage version.
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions/status,verbs=patch,resourceNames=welcomes.auth.seedlabs.dev;memcacheds.cache.seedlabs.dev;deployobjects.app.seedlabs.dev;admissionpolicies.policy.seedlabs.dev
// It drops the managedFields entries of versions a CRD no longer serves, which only a patch of the
// object itself can write (the API server takes managedFields from no subresource's request).
// +kubebuilder:rbac:groups=auth.seedlabs.dev,resources=welcomes,verbs=patch
// +kubebuilder:rbac:groups=cache.seedlabs.dev,resources=memcacheds,verbs=patch
// +kubebuilder:rbac:groups=app.seedlabs.dev,resources=deployobjects,verbs=patch
// +kubebuilder:rbac:groups=policy.seedlabs.dev,resources=admissionpolicies,verbs=patch

// migrationPageSize is how many objects the storage migration lists at a time.
const migrationPageSize = 500

// How often, and how long, the storage migration asks the API server whether it stores a CRD's
// objects at the storage version yet.
const (
	storageSwitchPoll    = 200 * time.Millisecond
	storageSwitchTimeout = 30 * time.Second
)

// migrationRetry is how long the storage migration waits before it tries a CRD again after an
// error, unless a CRD changes first.
const migrationRetry = 30 * time.Second

// storageMigrationObjects counts the objects the storage migration patched, by CRD and result:
// rewritten (the API server stored it again, at the storage version), current (it was stored at
// it already), gone (deleted meanwhile), conflict (written meanwhile, so at the storage version)
// or failed.
var storageMigrationObjects = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "webhook_operator_storage_migration_objects_total",
	Help: "Objects the leader's storage migration patched, by crd and result: rewritten at the storage version, current " +
		"(stored at it already), gone, conflict (written meanwhile) or failed.",
}, []string{"crd", "result"})

// storageMigrationManagedFields counts the objects whose managedFields the storage migration
// read for entries of versions their CRD does not serve, by CRD and result: cleaned (the entries
// dropped), current (none there), gone (deleted meanwhile) or failed.
var storageMigrationManagedFields = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "webhook_operator_storage_migration_managed_fields_total",
	Help: "Objects whose managedFields the leader's storage migration read for entries of versions their crd does not serve, " +
		"by crd and result: cleaned (the entries dropped), current (none there), gone or failed.",
}, []string{"crd", "result"})

func init() {
	metrics.Registry.MustRegister(storageMigrationObjects, storageMigrationManagedFields)
}

// storageMigration has the leader store every object of the operator's CRDs at the CRD's storage
// version, and then trim the CRD's status.storedVersions to that version alone, as cluster-api's
// crdmigrator does: a version can leave a CRD only once no object is stored at it, and only
// storedVersions says so. It runs whenever a CRD lists a stored version other than its storage
// version (crdWatch follows them), as after an upgrade that changed the storage version. While a
// CRD lists a version it does not serve, as in the release before the one that removes it, the
// migration also drops that version's managedFields entries from every object (cleanManagedFields),
// once per leader and generation of the CRD.
//
// Each object is rewritten by an empty merge patch of its /status (no admission webhook is called
// for it) with its resourceVersion as precondition: the API server stores the object again only
// when its encoding changes, as it does at another version, and bumps its resourceVersion only
// then. storedVersions is trimmed under an optimistic lock on the CRD, so that a CRD changed
// meanwhile (another storage version, another install) is read and migrated again.
type storageMigration struct {
	crds *crdWatch
	// api lists past the cache; writer patches; discovery tells the storage version in use.
	api       client.Reader
	writer    client.Client
	discovery discoveryclient.DiscoveryInterface
	log       logr.Logger
	// cleaned holds, by CRD, the generation at which the managedFields entries of the versions it
	// did not serve were dropped; only Start's goroutine reads and writes it.
	cleaned map[string]int64
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: the leader alone migrates.
func (m *storageMigration) NeedLeaderElection() bool { return true }

// Start implements manager.Runnable: it migrates every CRD that waits for it, and again whenever
// one does, until ctx is done.
func (m *storageMigration) Start(ctx context.Context) error {
	for {
		states, changed := m.crds.storageStates()
		var retry <-chan time.Time
		for _, c := range operatorCRDs {
			if !states[c.name].pending(m.cleaned[c.name]) {
				continue
			}
			if err := m.migrate(ctx, c.name); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				m.log.Error(err, "the storage migration failed; it is tried again", "crd", c.name, "after", migrationRetry)
				retry = time.After(migrationRetry)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-retry:
		}
	}
}

// migrate stores every object of the CRD named name at its storage version, then trims its stored
// versions to that one; and drops the managedFields entries of the versions it does not serve.
func (m *storageMigration) migrate(ctx context.Context, name string) error {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := m.api.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
		return client.IgnoreNotFound(err)
	}
	i := slices.IndexFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Storage })
	if i < 0 {
		return nil
	}
	storage := crd.Spec.Versions[i].Name
	// The objects are read and written at the storage version, or at a version served if it is
	// not: the API server stores them at the storage version whichever version a request names.
	if !crd.Spec.Versions[i].Served {
		if i = slices.IndexFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Served }); i < 0 {
			return nil // no version served: no object can be read or written
		}
	}
	gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: crd.Spec.Versions[i].Name, Kind: crd.Spec.Names.Kind}
	if !slices.Equal(crd.Status.StoredVersions, []string{storage}) {
		if err := m.store(ctx, crd, storage, gvk); err != nil {
			return err
		}
	}
	if unservedVersions(crd) != "" && m.cleaned[name] != crd.Generation {
		if err := m.cleanManagedFields(ctx, crd, gvk); err != nil {
			return err
		}
		m.cleaned[name] = crd.Generation
	}
	return nil
}

// store rewrites every object of crd at its storage version, reading and writing them at gvk, then
// trims crd's stored versions to storage.
func (m *storageMigration) store(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, storage string, gvk schema.GroupVersionKind) error {
	if err := m.awaitStorageVersion(ctx, crd, storage, gvk); err != nil {
		return err
	}
	counts, failures, err := m.patchEach(ctx, crd.Name, gvk, storageMigrationObjects, m.rewrite)
	if err != nil {
		return fmt.Errorf("listing the %s to store them at %s: %w", crd.Spec.Names.Plural, storage, err)
	}
	if len(failures) > 0 {
		return fmt.Errorf("%d of the %s could not be stored at %s, so the stored versions stay %v: %w",
			len(failures), crd.Spec.Names.Plural, storage, crd.Status.StoredVersions, errors.Join(failures...))
	}
	stored := crd.Status.StoredVersions
	patch := client.MergeFromWithOptions(crd.DeepCopy(), client.MergeFromWithOptimisticLock{})
	crd.Status.StoredVersions = []string{storage}
	if err := m.writer.Status().Patch(ctx, crd, patch, client.FieldOwner(EventSource)); err != nil {
		return fmt.Errorf("trimming the stored versions %v to %s: %w", stored, storage, err)
	}
	m.log.Info("stored every object at the storage version, and trimmed the stored versions to it",
		"crd", crd.Name, "storageVersion", storage, "storedVersions", stored, "objects", counts)
	return nil
}

// cleanManagedFields drops from every object of crd, read and written at gvk, the managedFields
// entries of the versions crd does not serve, as cluster-api's crdmigrator does: on every
// server-side apply the API server converts the object to each entry's version, and once a version
// has left spec.versions that conversion fails, and with it every apply, by any field manager
// ("request to convert CR to an invalid group/version", kubernetes/kubernetes#111937). The entries
// are dropped once the version is no longer served, since until then a write at it adds them
// again; a version not served still converts, so nothing fails in between. What the dropped
// entries owned is owned by no one until its manager applies it again at a version served.
func (m *storageMigration) cleanManagedFields(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, gvk schema.GroupVersionKind) error {
	served := map[string]bool{}
	for _, v := range crd.Spec.Versions {
		served[crd.Spec.Group+"/"+v.Name] = v.Served
	}
	drop := func(ctx context.Context, gvk schema.GroupVersionKind, obj *metav1.PartialObjectMetadata) (string, error) {
		return m.dropManagedFields(ctx, gvk, obj, served)
	}
	unserved := unservedVersions(crd)
	counts, failures, err := m.patchEach(ctx, crd.Name, gvk, storageMigrationManagedFields, drop)
	if err != nil {
		return fmt.Errorf("listing the %s to drop the managed fields of %s: %w", crd.Spec.Names.Plural, unserved, err)
	}
	if len(failures) > 0 {
		return fmt.Errorf("the managed fields of %s stay on %d of the %s: %w", unserved, len(failures), crd.Spec.Names.Plural, errors.Join(failures...))
	}
	m.log.Info("dropped the managed fields of the versions not served", "crd", crd.Name, "versions", unserved, "objects", counts)
	return nil
}

// patchEach lists the objects of gvk's kind, a page at a time, and patches each with patch, counting
// its result in counter by crd. Every object is patched, even past one that fails (a webhook of
// someone else's, say), so that one object holds back no other: patchEach returns the results'
// counts and the failures, and an error only when a list fails.
func (m *storageMigration) patchEach(ctx context.Context, crd string, gvk schema.GroupVersionKind, counter *prometheus.CounterVec,
	patch func(context.Context, schema.GroupVersionKind, *metav1.PartialObjectMetadata) (string, error),
) (counts map[string]int, failures []error, _ error) {
	counts = map[string]int{}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	for token := ""; ; {
		if err := m.api.List(ctx, list, client.Limit(migrationPageSize), client.Continue(token)); err != nil {
			return counts, failures, err
		}
		for i := range list.Items {
			result, err := patch(ctx, gvk, &list.Items[i])
			counter.WithLabelValues(crd, result).Inc()
			counts[result]++
			if err != nil {
				failures = append(failures, err)
			}
		}
		if token = list.Continue; token == "" {
			return counts, failures, nil
		}
	}
}

// awaitStorageVersion waits until the API server has taken storage for crd's storage version:
// until its discovery document, at gvk's version, gives the resource that version's storage
// version hash. The API server switches a CRD's storage a moment after the CRD changes, and its
// discovery follows the same change of the CRD it caches; an object rewritten before the switch
// would be stored at the previous version again, with the stored versions trimmed as if it were
// not. Behind several API servers, discovery is one server's view: the others take the change
// within about the same moment, and a CRD changed again is migrated again. Discovery gives no
// hash for a storage version that is not served: then nothing is awaited.
func (m *storageMigration) awaitStorageVersion(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, storage string, gvk schema.GroupVersionKind) error {
	if gvk.Version != storage {
		return nil
	}
	want := discovery.StorageVersionHash(gvk.Group, storage, gvk.Kind)
	var got string
	err := wait.PollUntilContextTimeout(ctx, storageSwitchPoll, storageSwitchTimeout, true, func(context.Context) (bool, error) {
		resources, err := m.discovery.ServerResourcesForGroupVersion(gvk.GroupVersion().String())
		if err != nil {
			return false, nil //nolint:nilerr // not served yet: asked again
		}
		for _, r := range resources.APIResources {
			if r.Name == crd.Spec.Names.Plural {
				got = r.StorageVersionHash
			}
		}
		return got == want, nil
	})
	if err != nil {
		return fmt.Errorf("the API server does not store %s at %s yet (storage version hash %q, want %q): %w",
			crd.Spec.Names.Plural, storage, got, want, err)
	}
	return nil
}

// rewrite has the API server store obj again, at the storage version if it is stored at another,
// and says what came of it.
func (m *storageMigration) rewrite(ctx context.Context, gvk schema.GroupVersionKind, obj *metav1.PartialObjectMetadata) (result string, _ error) {
	meta := map[string]any{"name": obj.Name, "resourceVersion": obj.ResourceVersion}
	if obj.Namespace != "" {
		meta["namespace"] = obj.Namespace
	}
	body, err := json.Marshal(map[string]any{"apiVersion": gvk.GroupVersion().String(), "kind": gvk.Kind, "metadata": meta})
	if err != nil {
		return "failed", err
	}
	u := patchTarget(gvk, obj)
	switch err := m.writer.Status().Patch(ctx, u, client.RawPatch(types.MergePatchType, body), client.FieldOwner(EventSource)); {
	case apierrors.IsNotFound(err):
		return "gone", nil
	case apierrors.IsConflict(err):
		return "conflict", nil
	case err != nil:
		return "failed", fmt.Errorf("rewriting %s %s: %w", gvk.Kind, client.ObjectKeyFromObject(obj), err)
	case u.GetResourceVersion() == obj.ResourceVersion:
		return "current", nil
	}
	return "rewritten", nil
}

// dropManagedFields drops from obj, of gvk's kind, the managedFields entries of versions not
// served, by a JSON patch of the object with its resourceVersion as precondition (read again after
// a conflict), and says what came of it. An object left with no entry gets one of the operator's,
// owning only its name: the API server would read an empty list as "keep the entries".
func (m *storageMigration) dropManagedFields(ctx context.Context, gvk schema.GroupVersionKind, obj *metav1.PartialObjectMetadata, served map[string]bool) (result string, _ error) {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if result != "" { // a conflict: the object as it is now
			obj.SetGroupVersionKind(gvk)
			if err := m.api.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
				return err
			}
		}
		kept := slices.DeleteFunc(slices.Clone(obj.ManagedFields), func(e metav1.ManagedFieldsEntry) bool { return !served[e.APIVersion] })
		if len(kept) == len(obj.ManagedFields) {
			result = "current"
			return nil
		}
		if len(kept) == 0 {
			kept = []metav1.ManagedFieldsEntry{{
				Manager: EventSource, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: gvk.GroupVersion().String(),
				Time: ptr.To(metav1.Now()), FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:name":{}}}`),
			}}
		}
		body, err := json.Marshal([]map[string]any{
			{"op": "replace", "path": "/metadata/resourceVersion", "value": obj.ResourceVersion},
			{"op": "replace", "path": "/metadata/managedFields", "value": kept},
		})
		if err != nil {
			return err
		}
		result = "cleaned"
		return m.writer.Patch(ctx, patchTarget(gvk, obj), client.RawPatch(types.JSONPatchType, body), client.FieldOwner(EventSource))
	})
	switch {
	case apierrors.IsNotFound(err):
		return "gone", nil
	case err != nil:
		return "failed", fmt.Errorf("dropping the managed fields of versions not served from %s %s: %w", gvk.Kind, client.ObjectKeyFromObject(obj), err)
	}
	return result, nil
}

// patchTarget is the object a patch of obj, of gvk's kind, is sent for and its reply read into.
func patchTarget(gvk schema.GroupVersionKind, obj *metav1.PartialObjectMetadata) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(obj.Namespace)
	u.SetName(obj.Name)
	return u
}
