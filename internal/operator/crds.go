package operator

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	cachev1 "github.com/seedlabs/webhook-operator/api/cache/v1"
	"github.com/seedlabs/webhook-operator/api/conditions"
	policyv1 "github.com/seedlabs/webhook-operator/api/policy/v1"
)

// The manager reads its own four CustomResourceDefinitions, by name, and no other.
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch,resourceNames=welcomes.auth.seedlabs.dev;memcacheds.cache.seedlabs.dev;deployobjects.app.seedlabs.dev;admissionpolicies.policy.seedlabs.dev

// The environment variables the downward API fills with the manager's own Pod, which the Events
// about missing CustomResourceDefinitions regard. Without POD_NAME and POD_NAMESPACE the manager
// records none, and only logs.
const (
	// EnvPodName holds the Pod's name (metadata.name).
	EnvPodName = "POD_NAME"
	// EnvPodNamespace holds the Pod's namespace (metadata.namespace).
	EnvPodNamespace = "POD_NAMESPACE"
	// EnvPodUID holds the Pod's UID (metadata.uid), by which kubectl describe finds its Events.
	EnvPodUID = "POD_UID"
)

// crd is one of the operator's CustomResourceDefinitions and the kind it serves.
type crd struct {
	name string
	obj  client.Object
	// missing says what stops while it is not established.
	missing string
}

// The operator's CustomResourceDefinitions.
var (
	welcomeCRD = crd{name: "welcomes.auth.seedlabs.dev", obj: &authv1.Welcome{},
		missing: "no Welcome can be stored, and none is reconciled until it is established again"}
	memcachedCRD = crd{name: "memcacheds.cache.seedlabs.dev", obj: &cachev1.Memcached{},
		missing: "no Memcached can be stored, and none is reconciled until it is established again"}
	deployObjectCRD = crd{name: "deployobjects.app.seedlabs.dev", obj: &appv1.DeployObject{},
		missing: "no DeployObject can be stored, and none is reconciled until it is established again"}
	admissionPolicyCRD = crd{name: "admissionpolicies.policy.seedlabs.dev", obj: &policyv1.AdmissionPolicy{},
		missing: "the AdmissionPolicy cannot be changed: a running replica keeps the policy it enforces, " +
			"one that starts meanwhile enforces the manager's flags"}
	operatorCRDs = []crd{welcomeCRD, memcachedCRD, deployObjectCRD, admissionPolicyCRD}
)

// crdEstablished is 1 for each of the operator's CustomResourceDefinitions that is established
// and not being deleted, 0 for one that is not, as this replica sees them, from the moment it has
// seen them all. Only tests run more than one manager in a process, and then it reports the last
// one's.
var crdEstablished = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "webhook_operator_crd_established",
	Help: "1 while the operator's CustomResourceDefinition crd is established and not being deleted, 0 while it is missing: " +
		"its kind's controller waits for it, admission of the other kinds goes on.",
}, []string{"crd"})

// storageMigrationPending is 1 for each of the operator's CustomResourceDefinitions whose
// status.storedVersions lists a version other than its storage version, as this replica sees them:
// objects may still be stored at it, until the leader's storage migration has rewritten them.
var storageMigrationPending = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "webhook_operator_storage_migration_pending",
	Help: "1 while the CustomResourceDefinition crd lists a stored version other than its storage version: the leader rewrites " +
		"its objects at the storage version, then trims status.storedVersions (docs/upgrade.md).",
}, []string{"crd"})

func init() {
	metrics.Registry.MustRegister(crdEstablished, storageMigrationPending)
}

// crdWatch follows the operator's CustomResourceDefinitions on every replica, so that the manager
// runs with any of them missing: it starts the informer of a kind only once its CRD is
// established, since an informer that cannot sync holds back every controller's start
// (controller-runtime's WaitForCacheSync waits for every informer of the cache, and a controller
// gives up after its CacheSyncTimeout). It reports each CRD in the metric crdEstablished, in the
// log, and in Events on the manager's Pod.
//
// Each CRD is watched alone, by a field selector on its name, so that the manager may read its
// own CRDs (RBAC resourceNames) and caches none of the cluster's others; and of each only its
// name, its deletion, its Established condition and its versions' names, flags and stored
// versions (which the storage migration follows).
type crdWatch struct {
	mgr      ctrl.Manager
	cache    cache.Cache
	api      client.Reader
	log      logr.Logger
	recorder events.EventRecorder
	// pod is the manager's Pod, which the Events regard; nil records none.
	pod *corev1.Pod

	mu          sync.Mutex
	synced      bool
	established map[string]bool
	// storage holds what the storage migration follows of each CRD.
	storage map[string]storageState
	// changed is closed, and replaced, whenever a CRD's establishment, or whether it waits for a
	// storage migration, changes.
	changed chan struct{}
	// acquiring holds one token per CRD: one caller at a time makes its kind's informer.
	acquiring map[string]chan struct{}
}

// newCRDWatch is the watch of mgr's CRDs; mgr must run it (it is a runnable of every replica).
func newCRDWatch(mgr ctrl.Manager) *crdWatch {
	w := &crdWatch{
		mgr:         mgr,
		cache:       mgr.GetCache(),
		api:         mgr.GetAPIReader(),
		log:         mgr.GetLogger().WithName("crds"),
		recorder:    mgr.GetEventRecorder(EventSource),
		pod:         podFromEnv(os.Getenv),
		established: make(map[string]bool, len(operatorCRDs)),
		storage:     make(map[string]storageState, len(operatorCRDs)),
		changed:     make(chan struct{}),
		acquiring:   make(map[string]chan struct{}, len(operatorCRDs)),
	}
	for _, c := range operatorCRDs {
		w.acquiring[c.name] = make(chan struct{}, 1)
	}
	return w
}

// podFromEnv is the manager's Pod as the downward API names it, or nil.
func podFromEnv(getenv func(string) string) *corev1.Pod {
	name, namespace := getenv(EnvPodName), getenv(EnvPodNamespace)
	if name == "" || namespace == "" {
		return nil
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, UID: types.UID(getenv(EnvPodUID))}}
}

// crdScheme is the scheme of the watch's own caches.
var crdScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	return s
}()

// NeedLeaderElection implements manager.LeaderElectionRunnable: every replica watches.
func (w *crdWatch) NeedLeaderElection() bool { return false }

// Start implements manager.Runnable: it watches each CRD until ctx is done.
func (w *crdWatch) Start(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	synced := make([]toolscache.InformerSynced, 0, len(operatorCRDs))
	for _, c := range operatorCRDs {
		informers, err := cache.New(w.mgr.GetConfig(), cache.Options{
			HTTPClient: w.mgr.GetHTTPClient(),
			Scheme:     crdScheme,
			Mapper:     w.mgr.GetRESTMapper(),
			ByObject: map[client.Object]cache.ByObject{&apiextensionsv1.CustomResourceDefinition{}: {
				Field:     fields.OneTermEqualSelector("metadata.name", c.name),
				Transform: keepEstablished,
			}},
		})
		if err != nil {
			return fmt.Errorf("watching the CustomResourceDefinition %s: %w", c.name, err)
		}
		informer, err := informers.GetInformer(ctx, &apiextensionsv1.CustomResourceDefinition{}, cache.BlockUntilSynced(false))
		if err != nil {
			return fmt.Errorf("watching the CustomResourceDefinition %s: %w", c.name, err)
		}
		registration, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { w.observe(c, establishedCRD(obj)); w.observeStorage(c, storageStateOf(obj)) },
			UpdateFunc: func(_, obj any) { w.observe(c, establishedCRD(obj)); w.observeStorage(c, storageStateOf(obj)) },
			DeleteFunc: func(any) { w.observe(c, false); w.observeStorage(c, storageState{}) },
		})
		if err != nil {
			return fmt.Errorf("watching the CustomResourceDefinition %s: %w", c.name, err)
		}
		synced = append(synced, registration.HasSynced)
		g.Go(func() error { return informers.Start(ctx) })
	}
	g.Go(func() error {
		if toolscache.WaitForCacheSync(ctx.Done(), synced...) {
			w.markSynced()
		}
		return nil
	})
	return g.Wait()
}

// keepEstablished is the transform of the watch's caches: of a CRD, what tells whether it is
// established and whether its stored objects wait for a storage migration (its versions' names
// and flags, and its stored versions), and no more (a CRD's schemas can be large).
func keepEstablished(obj any) (any, error) {
	c, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
	if !ok {
		return obj, nil
	}
	kept := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{
		Name:              c.Name,
		UID:               c.UID,
		ResourceVersion:   c.ResourceVersion,
		Generation:        c.Generation,
		DeletionTimestamp: c.DeletionTimestamp,
	}}
	for _, v := range c.Spec.Versions {
		kept.Spec.Versions = append(kept.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: v.Name, Served: v.Served, Storage: v.Storage})
	}
	kept.Status.StoredVersions = c.Status.StoredVersions
	for _, cond := range c.Status.Conditions {
		if cond.Type == apiextensionsv1.Established {
			kept.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{cond}
		}
	}
	return kept, nil
}

// establishedCRD reports whether obj is a CRD that serves its kind: established, and not being
// deleted (a CRD being deleted deletes its objects, and admits no new one).
func establishedCRD(obj any) bool {
	c, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
	if !ok || c.DeletionTimestamp != nil {
		return false
	}
	for _, cond := range c.Status.Conditions {
		if cond.Type == apiextensionsv1.Established {
			return cond.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

// storageState is what the storage migration follows of a CRD.
type storageState struct {
	// unmigrated: the CRD may store objects at a version other than its storage version, since its
	// status.storedVersions lists another.
	unmigrated bool
	// unserved names the versions the CRD lists and does not serve, comma-separated: its objects'
	// managedFields entries of those versions are to be dropped before a version leaves the CRD.
	unserved string
	// generation is the CRD's metadata.generation.
	generation int64
}

// pending reports whether the storage migration has work to do for the CRD, having dropped the
// managedFields entries of versions not served at the CRD's generation cleaned (0 if at none):
// again at every generation, since a version served meanwhile may have had entries added.
func (s storageState) pending(cleaned int64) bool {
	return s.unmigrated || (s.unserved != "" && s.generation != cleaned)
}

// storageStateOf is the storageState of obj, a CRD; the zero state if it is being deleted.
func storageStateOf(obj any) storageState {
	c, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
	if !ok || c.DeletionTimestamp != nil {
		return storageState{}
	}
	storage := storageVersion(c)
	return storageState{
		unmigrated: storage != "" && !slices.Equal(c.Status.StoredVersions, []string{storage}),
		unserved:   unservedVersions(c),
		generation: c.Generation,
	}
}

// unservedVersions names the versions c lists and does not serve, comma-separated.
func unservedVersions(c *apiextensionsv1.CustomResourceDefinition) string {
	var names []string
	for _, v := range c.Spec.Versions {
		if !v.Served {
			names = append(names, v.Name)
		}
	}
	return strings.Join(names, ",")
}

// storageVersion is the version c stores its objects at; empty if it names none.
func storageVersion(c *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range c.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

// observeStorage records c's storage state: whether it waits for a storage migration, in
// storageMigrationPending, and the whole state for the migration (storageStates), which a change
// wakes.
func (w *crdWatch) observeStorage(c crd, state storageState) {
	w.mu.Lock()
	defer w.mu.Unlock()
	storageMigrationPending.WithLabelValues(c.name).Set(map[bool]float64{false: 0, true: 1}[state.unmigrated])
	if w.storage[c.name] == state {
		return
	}
	w.storage[c.name] = state
	w.notifyLocked()
}

// notifyLocked wakes whoever waits on the channel of a change, and gives the next change its own.
func (w *crdWatch) notifyLocked() {
	close(w.changed)
	w.changed = make(chan struct{})
}

// storageStates are the CRDs' storage states now, by name, and a channel closed at the next change
// of any CRD's state.
func (w *crdWatch) storageStates() (states map[string]storageState, changed <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.storage), w.changed
}

// observe records what the watch of c saw, and reports a change once every CRD is cached.
func (w *crdWatch) observe(c crd, established bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.established[c.name] == established {
		return
	}
	w.established[c.name] = established
	w.notifyLocked()
	if w.synced {
		w.reportLocked(c, established, false)
	}
}

// markSynced reports every CRD as first cached.
func (w *crdWatch) markSynced() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.synced = true
	for _, c := range operatorCRDs {
		w.reportLocked(c, w.established[c.name], true)
	}
}

// reportLocked reports c established or missing: the metric always, the log and an Event when it
// is missing or comes back. It holds mu, so that the reports of a CRD come in the order of its
// changes.
func (w *crdWatch) reportLocked(c crd, established, first bool) {
	switch {
	case established:
		crdEstablished.WithLabelValues(c.name).Set(1)
		if first {
			return
		}
		w.log.Info("a CustomResourceDefinition is established again", "crd", c.name)
		w.event(c, corev1.EventTypeNormal, conditions.EventReasonCRDEstablished, fmt.Sprintf("The CustomResourceDefinition %s is established again.", c.name))
	default:
		crdEstablished.WithLabelValues(c.name).Set(0)
		w.log.Info("a CustomResourceDefinition is missing, not established or being deleted: the operator goes on without it",
			"crd", c.name, "meanwhile", c.missing)
		w.event(c, corev1.EventTypeWarning, conditions.EventReasonCRDMissing, fmt.Sprintf(
			"The CustomResourceDefinition %s is missing, not established or being deleted: %s. Install it again (docs/operations.md).",
			c.name, c.missing))
	}
}

// event records an Event on the manager's Pod, if it is known, related to c: the recorder folds
// the Events of one regarding, related, reason and action into one series, whatever their notes.
func (w *crdWatch) event(c crd, eventType, reason, note string) {
	if w.pod == nil {
		return
	}
	related := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: c.name}}
	related.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	w.recorder.Eventf(w.pod, related, eventType, reason, "WatchCustomResourceDefinition", "%s", note)
}

// isSynced reports whether every CRD has been cached, so that established answers for them.
func (w *crdWatch) isSynced() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.synced
}

// isEstablished reports whether the CRD named name is established now.
func (w *crdWatch) isEstablished(name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.established[name]
}

// await returns true once the CRD named name is established (want) or not, false if ctx is done
// first.
func (w *crdWatch) await(ctx context.Context, name string, want bool) bool {
	for {
		w.mu.Lock()
		is, changed := w.established[name], w.changed
		w.mu.Unlock()
		if is == want {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-changed:
		}
	}
}

// whileEstablished waits until c is established, and returns a context that ends when it no
// longer is, or ctx ends; ok is false when ctx ended first.
func (w *crdWatch) whileEstablished(ctx context.Context, c crd) (_ context.Context, _ context.CancelFunc, ok bool) {
	if !w.await(ctx, c.name, true) {
		return nil, nil, false
	}
	lifetime, cancel := context.WithCancel(ctx)
	go func() {
		if w.await(lifetime, c.name, false) {
			cancel()
		}
	}()
	return lifetime, cancel, true
}

// informer returns the informer of c's kind in the manager's cache, synced, once c is
// established: its kind's controllers and the policy watch start from it. An informer whose CRD
// goes away before it syncs is removed from the cache, and made again when the CRD is back; one
// that has synced stays when its CRD is deleted, and picks up the kind's objects again when the
// CRD is back, so what watches it idles meanwhile. An informer that does not sync within
// syncTimeout (none when 0) while its CRD is established is an error, as a controller's source
// that does not sync within its CacheSyncTimeout is: RBAC, most likely.
func (w *crdWatch) informer(ctx context.Context, c crd, syncTimeout time.Duration) (cache.Informer, error) {
	select {
	case w.acquiring[c.name] <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-w.acquiring[c.name] }()
	for {
		lifetime, cancel, ok := w.whileEstablished(ctx, c)
		if !ok {
			return nil, ctx.Err()
		}
		attempt, cancelAttempt := lifetime, cancel
		if syncTimeout > 0 {
			attempt, cancelAttempt = context.WithTimeout(lifetime, syncTimeout)
		}
		var informer cache.Informer
		err := wait.PollUntilContextCancel(attempt, time.Second, true, func(ctx context.Context) (bool, error) {
			i, err := w.cache.GetInformer(ctx, c.obj)
			if meta.IsNoMatchError(err) {
				return false, nil // discovery has not caught up with the CRD yet
			}
			informer = i
			return err == nil, err
		})
		gone := lifetime.Err() != nil
		cancelAttempt()
		cancel()
		if err == nil {
			return informer, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// An informer that has not synced holds back every controller's start.
		if err := w.cache.RemoveInformer(ctx, c.obj); err != nil {
			return nil, fmt.Errorf("removing the informer of %s: %w", c.name, err)
		}
		if !gone {
			return nil, fmt.Errorf("caching the kind of %s, established: %w", c.name, err)
		}
		w.log.Info("a CustomResourceDefinition went away before its kind was cached; waiting for it again", "crd", c.name)
	}
}

// deleting reports whether the CRD named name is being deleted or gone, as the API server says
// now: a delete of an object of its kind is then the CRD's, not a user's.
func (w *crdWatch) deleting(ctx context.Context, name string) (bool, error) {
	c := &metav1.PartialObjectMetadata{}
	c.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	err := retry.OnError(retry.DefaultBackoff, func(err error) bool { return !apierrors.IsNotFound(err) }, func() error {
		return w.api.Get(ctx, client.ObjectKey{Name: name}, c)
	})
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, err
	}
	return c.DeletionTimestamp != nil, nil
}

// gate is mgr as the controller of c's kind is set up with it: the controller starts once c is
// established and its kind cached (which may be long after the manager started), and idles while
// c is deleted again. As the controller's own sources would, it fails when the kind is not cached
// within the controllers' CacheSyncTimeout while c is established.
func (w *crdWatch) gate(mgr ctrl.Manager, c crd) ctrl.Manager {
	// controller-runtime's default when the manager sets none.
	syncTimeout := cmp.Or(mgr.GetControllerOptions().CacheSyncTimeout, 2*time.Minute)
	return crdGated{Manager: mgr, crds: w, crd: c, syncTimeout: syncTimeout}
}

// crdGated is a manager whose runnables wait for a CRD.
type crdGated struct {
	ctrl.Manager
	crds        *crdWatch
	crd         crd
	syncTimeout time.Duration
}

// Add implements manager.Manager.
func (m crdGated) Add(r manager.Runnable) error {
	return m.Manager.Add(afterCRD{Runnable: r, crds: m.crds, crd: m.crd, syncTimeout: m.syncTimeout})
}

// afterCRD starts its runnable once the informer of a CRD's kind has synced.
type afterCRD struct {
	manager.Runnable
	crds        *crdWatch
	crd         crd
	syncTimeout time.Duration
}

// NeedLeaderElection implements manager.LeaderElectionRunnable as the runnable does.
func (a afterCRD) NeedLeaderElection() bool {
	le, ok := a.Runnable.(manager.LeaderElectionRunnable)
	return !ok || le.NeedLeaderElection()
}

// Start implements manager.Runnable.
func (a afterCRD) Start(ctx context.Context) error {
	if _, err := a.crds.informer(ctx, a.crd, a.syncTimeout); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	a.crds.log.Info("starting the controller of a CustomResourceDefinition's kind", "crd", a.crd.name)
	return a.Runnable.Start(ctx)
}
