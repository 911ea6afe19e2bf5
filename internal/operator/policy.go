package operator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
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

	policyv1alpha1 "github.com/seedlabs/webhook-operator/api/policy/v1alpha1"
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
// The readiness check it returns passes once the policy stored when the replica started is in
// force and the namespaces' labels are cached, so that a starting replica never answers under the
// flags' policy while an AdmissionPolicy says otherwise, nor waits for a cache on a request.
func watchPolicy(mgr ctrl.Manager, live *livePolicy, images webhooks.ImagePolicy) (healthz.Checker, error) {
	log := mgr.GetLogger().WithName("admission-policy")
	var synced atomic.Bool
	ready := func(*http.Request) error {
		if !synced.Load() {
			return errors.New("the AdmissionPolicy and the namespaces are not cached yet")
		}
		return nil
	}
	return ready, mgr.Add(runnableFunc(func(ctx context.Context) error {
		namespaces, err := mgr.GetCache().GetInformer(ctx, &corev1.Namespace{})
		if err != nil {
			return fmt.Errorf("watching the namespaces: %w", err)
		}
		informer, err := mgr.GetCache().GetInformer(ctx, &policyv1alpha1.AdmissionPolicy{})
		if err != nil {
			return fmt.Errorf("watching the AdmissionPolicy: %w", err)
		}
		apply := func(obj any) {
			p, ok := obj.(*policyv1alpha1.AdmissionPolicy)
			if !ok || p.Name != policyv1alpha1.PolicyName {
				return
			}
			compiled, errs := webhooks.NewPolicy(p, images)
			live.set(compiled)
			policyGeneration.Set(float64(p.Generation))
			if len(errs) > 0 {
				log.Error(errs.ToAggregate(), "applied the AdmissionPolicy but for what it holds that cannot be applied",
					"generation", p.Generation, "rules", compiled.String(), "allowedRegistries", compiled.Images().AllowedRegistries())
				return
			}
			log.Info("applied the AdmissionPolicy", "generation", p.Generation, "rules", compiled.String(),
				"allowedRegistries", compiled.Images().AllowedRegistries())
		}
		registration, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    apply,
			UpdateFunc: func(_, obj any) { apply(obj) },
			DeleteFunc: func(obj any) {
				if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
					obj = tombstone.Obj
				}
				if p, ok := obj.(*policyv1alpha1.AdmissionPolicy); ok && p.Name == policyv1alpha1.PolicyName {
					live.set(nil)
					policyGeneration.Set(0)
					log.Info("the AdmissionPolicy was deleted; the default policy is in force")
				}
			},
		})
		if err != nil {
			return fmt.Errorf("watching the AdmissionPolicy: %w", err)
		}
		if !toolscache.WaitForCacheSync(ctx.Done(), registration.HasSynced, namespaces.HasSynced) {
			return nil // stopped before the caches synced
		}
		synced.Store(true)
		<-ctx.Done()
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
	return ns.Labels, nil
}

// HasNamespace implements webhooks.Namespaces.
func (n cachedNamespaces) HasNamespace(ctx context.Context, name string) bool {
	return n.cache.Get(ctx, client.ObjectKey{Name: name}, &corev1.Namespace{}) == nil
}

// runnableFunc runs on every replica, leader or not.
type runnableFunc func(context.Context) error

func (f runnableFunc) Start(ctx context.Context) error { return f(ctx) }

// NeedLeaderElection implements manager.LeaderElectionRunnable: every replica serves webhooks.
func (runnableFunc) NeedLeaderElection() bool { return false }
