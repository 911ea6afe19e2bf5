package operator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	policyv1 "github.com/seedlabs/webhook-operator/api/policy/v1"
	"github.com/seedlabs/webhook-operator/webhooks"
)

// +kubebuilder:rbac:groups=policy.seedlabs.dev,resources=admissionpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=list;watch

// policyGeneration is the generation of the AdmissionPolicy this replica enforces, 0 while none
// exists: every replica applies the policy on its own, so a scrape of each shows that all of them
// enforce the stored generation.
var policyGeneration = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "webhook_operator_admission_policy_generation",
	Help: "The generation of the AdmissionPolicy this replica enforces; 0 while none exists.",
})

func init() {
	metrics.Registry.MustRegister(policyGeneration)
}

// watchPolicy keeps live set to the AdmissionPolicy named cluster as it changes: every replica
// watches it, since every replica serves the webhooks, and applies a change without a restart.
// Deleting it restores the default policy of the manager's flags; a policy without
// allowedRegistries takes images' (the flag's). A stored policy the webhook would refuse (stored
// with the webhook bypassed, or by a version that allowed what this one does not) is applied in
// what is valid, as webhooks.NewPolicy says, and what is not is logged: every replica, whenever it
// started, applies the same stored policy the same way.
//
// Deleting the AdmissionPolicy's CRD deletes the policy first: that is no user's delete, and the
// policy in force stays while the CRD is gone. Once the CRD is back, no AdmissionPolicy is stored
// until one is created, so the flags' policy is in force, as on a replica that started while the
// CRD was gone. Until the CRD is established, the flags' policy is in force.
//
// The readiness check it returns passes once the namespaces' labels are cached and the policy
// stored when the replica started is in force (the flags' when the CRD is missing), so that a
// starting replica never answers under the flags' policy while an AdmissionPolicy says otherwise,
// nor waits for a cache on a request. From then on it fails only while the API server has not
// confirmed the policy in force for staleness (policyConfirmation; 0 never).
func watchPolicy(mgr ctrl.Manager, crds *crdWatch, live *livePolicy, images webhooks.ImagePolicy, staleness time.Duration) (healthz.Checker, error) {
	log := mgr.GetLogger().WithName("admission-policy")
	var (
		namespacesSynced, ready atomic.Bool
		// mu orders the changes of the policy in force.
		mu sync.Mutex
		// kept is set while the policy in force outlives the AdmissionPolicy, deleted with its CRD.
		kept         bool
		confirmation = newPolicyConfirmation(mgr.GetAPIReader(), live, staleness)
	)
	check := func(r *http.Request) error {
		switch {
		case ready.Load():
			return confirmation.check(r)
		case !namespacesSynced.Load():
			return errors.New("the namespaces are not cached yet")
		case !crds.isSynced():
			return errors.New("the CustomResourceDefinitions are not cached yet")
		case crds.isEstablished(admissionPolicyCRD.name):
			return errors.New("the AdmissionPolicy is not cached yet")
		}
		// No AdmissionPolicy CRD: the flags' policy is the one stored, as the list of the CRDs says.
		if !ready.Swap(true) {
			confirmation.confirmed()
		}
		return nil
	}
	apply := func(obj any) {
		p, ok := obj.(*policyv1.AdmissionPolicy)
		if !ok || p.Name != policyv1.PolicyName {
			return
		}
		compiled, errs := webhooks.NewPolicy(p, images)
		mu.Lock()
		defer mu.Unlock()
		live.set(compiled, p.ResourceVersion)
		kept = false
		policyGeneration.Set(float64(p.Generation))
		if len(errs) > 0 {
			log.Error(errs.ToAggregate(), "applied the AdmissionPolicy but for what it holds that cannot be applied",
				"generation", p.Generation, "rules", compiled.String(), "allowedRegistries", compiled.Images().AllowedRegistries())
			return
		}
		log.Info("applied the AdmissionPolicy", "generation", p.Generation, "rules", compiled.String(),
			"allowedRegistries", compiled.Images().AllowedRegistries())
	}
	deleted := func(ctx context.Context, obj any) {
		if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = tombstone.Obj
		}
		p, ok := obj.(*policyv1.AdmissionPolicy)
		if !ok || p.Name != policyv1.PolicyName {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		switch withCRD, err := crds.deleting(ctx, admissionPolicyCRD.name); {
		case ctx.Err() != nil:
			return // the manager stops
		case err != nil:
			log.Error(err, "cannot tell whether the AdmissionPolicy was deleted with its CustomResourceDefinition; taking it for deleted by a user")
		case withCRD:
			kept = true
			live.unstored()
			log.Info("the AdmissionPolicy was deleted with its CustomResourceDefinition: the policy in force stays while the CustomResourceDefinition is gone",
				"generation", p.Generation)
			return
		}
		live.set(nil, "")
		policyGeneration.Set(0)
		log.Info("the AdmissionPolicy was deleted; the default policy is in force")
	}
	// restore puts the flags' policy in force if the policy kept while the CRD was gone is not
	// stored again now that the CRD is back.
	restore := func(ctx context.Context) {
		mu.Lock()
		defer mu.Unlock()
		if !kept {
			return
		}
		err := mgr.GetCache().Get(ctx, client.ObjectKey{Name: policyv1.PolicyName}, &policyv1.AdmissionPolicy{})
		if !apierrors.IsNotFound(err) {
			return // stored again, and applied
		}
		kept = false
		live.set(nil, "")
		policyGeneration.Set(0)
		log.Info("the AdmissionPolicy's CustomResourceDefinition is back without the AdmissionPolicy; the default policy is in force")
	}
	return check, mgr.Add(runnableFunc(func(ctx context.Context) error {
		// Until it applies an AdmissionPolicy, the replica enforces none: the gauge says so even
		// where a manager before it in the same process had set it.
		policyGeneration.Set(0)
		go confirmation.run(ctx, log)
		namespaces, err := mgr.GetCache().GetInformer(ctx, &corev1.Namespace{})
		if err != nil {
			return fmt.Errorf("watching the namespaces: %w", err)
		}
		if !toolscache.WaitForCacheSync(ctx.Done(), namespaces.HasSynced) {
			return nil // stopped before the cache synced
		}
		namespacesSynced.Store(true)
		// Without a limit: until the AdmissionPolicy is cached, the replica is not ready.
		informer, err := crds.informer(ctx, admissionPolicyCRD, 0)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("watching the AdmissionPolicy: %w", err)
		}
		registration, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    apply,
			UpdateFunc: func(_, obj any) { apply(obj) },
			DeleteFunc: func(obj any) { deleted(ctx, obj) },
		})
		if err != nil {
			return fmt.Errorf("watching the AdmissionPolicy: %w", err)
		}
		if !toolscache.WaitForCacheSync(ctx.Done(), registration.HasSynced) {
			return nil // stopped before the cache synced
		}
		// The list that synced the watch is the first confirmation of the policy in force.
		confirmation.confirmed()
		ready.Store(true)
		for crds.await(ctx, admissionPolicyCRD.name, false) && crds.await(ctx, admissionPolicyCRD.name, true) {
			restore(ctx)
		}
		return nil
	}))
}

// namespaceWait is how long a request waits for the cache to see a namespace it does not know: one
// created a moment before the object in it, as kubectl apply of a file holding both does. The
// request's own deadline, the webhook's timeout, ends the wait sooner.
const namespaceWait = 2 * time.Second

// cachedNamespaces are the cluster's namespaces as the manager's cache holds them. A namespace the
// cache does not know is never read from the API server: a review names its namespace, anyone who
// can reach the webhook can send one, and each read would be made with the operator's identity.
type cachedNamespaces struct {
	cache client.Reader
}

// NamespaceLabels implements webhooks.Namespaces.
func (n cachedNamespaces) NamespaceLabels(ctx context.Context, name string) (map[string]string, error) {
	ns, err := n.namespace(ctx, name)
	if err != nil {
		return nil, err
	}
	return ns.Labels, nil
}

// HasNamespace implements webhooks.Namespaces.
func (n cachedNamespaces) HasNamespace(ctx context.Context, name string) bool {
	_, err := n.namespace(ctx, name)
	return err == nil
}

// namespace reads the namespace from the cache, waiting up to namespaceWait for one it does not know.
func (n cachedNamespaces) namespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	ns := &corev1.Namespace{}
	var err error
	if waitErr := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, namespaceWait, true, func(ctx context.Context) (bool, error) {
		err = n.cache.Get(ctx, client.ObjectKey{Name: name}, ns)
		return !apierrors.IsNotFound(err), nil
	}); waitErr != nil && err == nil {
		err = waitErr
	}
	if err != nil {
		return nil, err
	}
	return ns, nil
}

// runnableFunc runs on every replica, leader or not.
type runnableFunc func(context.Context) error

func (f runnableFunc) Start(ctx context.Context) error { return f(ctx) }

// NeedLeaderElection implements manager.LeaderElectionRunnable: every replica serves webhooks.
func (runnableFunc) NeedLeaderElection() bool { return false }
