// Package integration drives the operator through a real kube-apiserver: the CRDs and webhook
// configurations from config/, and the Manager built as cmd/manager builds it.
package integration

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/yaml"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	cachev1 "github.com/seedlabs/webhook-operator/api/cache/v1"
	"github.com/seedlabs/webhook-operator/api/conditions"
	"github.com/seedlabs/webhook-operator/test/testenv"
	"github.com/seedlabs/webhook-operator/webhooks"
)

var (
	env *testenv.Env
	k8s client.Client
)

// admission labels the specs of what the API server does with an object before it is stored, and
// whether the controllers can apply what it admits: the CRDs' schemas, the webhook configurations
// and their matchConditions, the webhooks' answers through the API server, and the admission
// contract. make test-oldest-kube runs them (-ginkgo.label-filter=admission) against the oldest
// supported kube-apiserver as well (docs/kubernetes-versions.md).
var admission = Label("admission")

func TestIntegration(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(20 * time.Second)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	// An Eventually given the spec's context would otherwise poll until the spec ends, and a spec
	// without a timeout never does: a failure would hang the suite instead of failing it.
	EnforceDefaultTimeoutsWhenUsingContexts()
	RunSpecs(t, "Integration suite")
}

// Every process of the suite starts a control plane and a Manager of its own (make test runs
// three, with the Ginkgo CLI), and runs one spec at a time: a spec may change what is cluster-wide,
// the webhook configurations or the AdmissionPolicy, as long as it restores it, with no other spec
// running against the same API server.
var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	var err error
	env, err = testenv.Start()
	Expect(err).NotTo(HaveOccurred())
	k8s = env.Client
	DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })
})

// newNamespace creates a namespace of the spec's own and deletes it when the spec ends.
func newNamespace(ctx context.Context) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "it-"}}
	Expect(k8s.Create(ctx, ns)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		// envtest runs no namespace controller: the operator's objects would outlive their
		// namespace, and the manager would go on reconciling them in the specs that follow.
		for _, obj := range []client.Object{&appv1.DeployObject{}, &authv1.Welcome{}, &cachev1.Memcached{}} {
			Expect(k8s.DeleteAllOf(ctx, obj, client.InNamespace(ns.Name))).To(Succeed())
		}
		// The namespace goes once the manager's cache holds none of them: a reconcile of one it
		// still holds would apply its children in a namespace being deleted, be refused, and be
		// retried with back-off into the specs that follow (CI saw a spec's Welcome get no status
		// in 20 s while ten deleted ones were retried; the cache was 16 s behind their deletion).
		Eventually(func(g Gomega) {
			for _, list := range []client.ObjectList{&appv1.DeployObjectList{}, &authv1.WelcomeList{}, &cachev1.MemcachedList{}} {
				g.Expect(env.Manager.GetCache().List(ctx, list, client.InNamespace(ns.Name))).To(Succeed())
				g.Expect(meta.LenList(list)).To(BeZero(), "%T in the manager's cache", list)
			}
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
		Expect(client.IgnoreNotFound(k8s.Delete(ctx, ns))).To(Succeed())
	})
	return ns.Name
}

// update reads obj again, changes it and updates it, as kubectl edit does, and returns what the
// update returned. The operator writes the status of its objects at any time, and the API server
// checks an update's resourceVersion before it calls a webhook, so a copy read before such a write
// is refused with a conflict: it is read again and changed again, within the suite's Eventually
// bounds. Any other answer, a refusal included, is returned as it is.
func update(ctx context.Context, obj client.Object, change func()) error {
	GinkgoHelper()
	var err error
	Eventually(func() bool {
		if err = k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return true
		}
		change()
		err = k8s.Update(ctx, obj)
		return !apierrors.IsConflict(err)
	}).WithContext(ctx).Should(BeTrue(), "an update of %s that conflicts each time", client.ObjectKeyFromObject(obj))
	return err
}

// bypassValidation makes the validating webhooks skip namespace ns, so that a spec can store an
// object as if it had been written before the webhooks existed. The returned function restores
// them; so does the end of the spec.
func bypassValidation(ctx context.Context, ns string) (restore func()) {
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	Expect(k8s.Get(ctx, types.NamespacedName{Name: "validating-webhook-configuration"}, vwc)).To(Succeed())
	original := vwc.DeepCopy()
	for i := range vwc.Webhooks {
		vwc.Webhooks[i].NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpNotIn, Values: []string{ns},
		}}}
	}
	Expect(k8s.Update(ctx, vwc)).To(Succeed())
	restored := false
	restore = func() {
		if restored {
			return
		}
		current := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(original), current)).To(Succeed())
		current.Webhooks = original.Webhooks
		Expect(k8s.Update(context.Background(), current)).To(Succeed())
		restored = true
	}
	DeferCleanup(restore)
	return restore
}

// installNamespaceSelector gives every webhook of the suite's configurations the namespaceSelector
// of config/webhook/namespace_selector.yaml, with operatorNamespace for its "system", as
// config/default installs them; the end of the spec restores them.
func installNamespaceSelector(ctx SpecContext, operatorNamespace string) {
	GinkgoHelper()
	root, err := testenv.ModuleRoot()
	Expect(err).NotTo(HaveOccurred())
	data, err := os.ReadFile(filepath.Join(root, "config", "webhook", "namespace_selector.yaml"))
	Expect(err).NotTo(HaveOccurred())
	var file struct {
		NamespaceSelector metav1.LabelSelector `json:"namespaceSelector"`
	}
	Expect(yaml.Unmarshal(data, &file)).To(Succeed())
	selector := file.NamespaceSelector.DeepCopy()
	Expect(selector.MatchExpressions).To(HaveLen(1))
	values := selector.MatchExpressions[0].Values
	Expect(values).To(ContainElement("system"), "config/default renames the operator's namespace \"system\"")
	values[slices.Index(values, "system")] = operatorNamespace

	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
	Expect(k8s.Get(ctx, client.ObjectKey{Name: "mutating-webhook-configuration"}, mwc)).To(Succeed())
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	Expect(k8s.Get(ctx, client.ObjectKey{Name: "validating-webhook-configuration"}, vwc)).To(Succeed())
	mutating, validating := slices.Clone(mwc.Webhooks), slices.Clone(vwc.Webhooks)
	for i := range mwc.Webhooks {
		mwc.Webhooks[i].NamespaceSelector = selector.DeepCopy()
	}
	for i := range vwc.Webhooks {
		vwc.Webhooks[i].NamespaceSelector = selector.DeepCopy()
	}
	Expect(k8s.Update(ctx, mwc)).To(Succeed())
	Expect(k8s.Update(ctx, vwc)).To(Succeed())
	// kube-apiserver reads webhook configurations from its own cache: wait until neither webhook
	// touches a DeployObject in kube-system, one that both would change or refuse.
	Eventually(func(g Gomega) {
		probe := newDeployObject(metav1.NamespaceSystem, "probe", "nginx:latest", httpPort(80))
		g.Expect(k8s.Create(ctx, probe, client.DryRunAll)).To(Succeed())
		g.Expect(probe.Spec.Ports[0].TargetPort).To(Equal(intstr.IntOrString{}))
	}).WithContext(ctx).Should(Succeed(), "kube-apiserver still calls the webhooks in %s", metav1.NamespaceSystem)
	DeferCleanup(func(ctx SpecContext) {
		current := &admissionregistrationv1.MutatingWebhookConfiguration{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(mwc), current)).To(Succeed())
		current.Webhooks = mutating
		Expect(k8s.Update(ctx, current)).To(Succeed())
		currentV := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(vwc), currentV)).To(Succeed())
		currentV.Webhooks = validating
		Expect(k8s.Update(ctx, currentV)).To(Succeed())
	})
}

// refuseDeployments creates a ResourceQuota that allows no Deployment in namespace ns, so that the
// API server refuses the operator's apply, and returns it for the spec to delete.
func refuseDeployments(ctx context.Context, ns string) *corev1.ResourceQuota {
	GinkgoHelper()
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "no-deployments"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/deployments.apps": resource.MustParse("0")}},
	}
	Expect(k8s.Create(ctx, quota)).To(Succeed())
	// envtest runs no quota controller: the status it would write is what admission reads.
	quota.Status = corev1.ResourceQuotaStatus{Hard: quota.Spec.Hard, Used: corev1.ResourceList{"count/deployments.apps": resource.MustParse("0")}}
	Expect(k8s.Status().Update(ctx, quota)).To(Succeed())
	return quota
}

// conditioned is one of the operator's custom resources: an object with status conditions.
type conditioned interface {
	client.Object
	GetConditions() []metav1.Condition
}

// storedConditionOf is the condition of type t of the stored obj, nil if it has none; obj is left
// as it is.
func storedConditionOf(g Gomega, ctx SpecContext, obj conditioned, t string) *metav1.Condition {
	c, _ := storedCondition(g, ctx, obj, t)
	return c
}

// conditionOf is the condition of type t of the stored obj, once the controller wrote one for the
// object's generation.
func conditionOf(g Gomega, ctx SpecContext, obj conditioned, t string) *metav1.Condition {
	c, generation := storedCondition(g, ctx, obj, t)
	g.Expect(c).NotTo(BeNil(), "no %s condition yet", t)
	g.Expect(c.ObservedGeneration).To(Equal(generation))
	return c
}

func storedCondition(g Gomega, ctx SpecContext, obj conditioned, t string) (*metav1.Condition, int64) {
	got := obj.DeepCopyObject().(conditioned)
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(obj), got)).To(Succeed())
	return meta.FindStatusCondition(got.GetConditions(), t), got.GetGeneration()
}

// stalledOf is the Stalled condition of the stored obj, of its generation.
func stalledOf(g Gomega, ctx SpecContext, obj conditioned) *metav1.Condition {
	return conditionOf(g, ctx, obj, conditions.Stalled)
}

// expectHeldBack requires that the controller holds obj's spec back as InvalidSpec for breaking rule.
func expectHeldBack(g Gomega, ctx SpecContext, obj conditioned, rule webhooks.RuleID) {
	stalled := stalledOf(g, ctx, obj)
	g.Expect(stalled.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(stalled.Reason).To(Equal(conditions.ReasonInvalidSpec))
	g.Expect(stalled.Message).To(ContainSubstring("(rule " + string(rule) + ")"))
}
