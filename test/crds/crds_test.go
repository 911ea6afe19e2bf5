// Package crds runs the manager with its CustomResourceDefinitions missing, against a real
// kube-apiserver: with each deleted in turn, or all of them, a restarted manager becomes ready,
// serves the webhooks of the kinds whose CRDs exist, names the missing CRD in its metric and in a
// Warning Event on its Pod, and starts the kind's controller once the CRD is back, without a
// restart; deleting the CRD again leaves the manager running. Deleting the AdmissionPolicy's CRD
// keeps the policy in force.
//
// Deleting a CRD would break the specs of test/integration, which share one control plane, so
// this suite has its own.
package crds

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	cachev1 "github.com/seedlabs/webhook-operator/api/cache/v1"
	"github.com/seedlabs/webhook-operator/api/conditions"
	policyv1 "github.com/seedlabs/webhook-operator/api/policy/v1"
	"github.com/seedlabs/webhook-operator/internal/operator"
	"github.com/seedlabs/webhook-operator/internal/scheme"
	"github.com/seedlabs/webhook-operator/test/testenv"
	"github.com/seedlabs/webhook-operator/webhooks"
)

// The manager's Pod, as the downward API names it to the manager. envtest runs no kubelet: the
// Pod is only an object, for the manager's Events to regard.
const (
	namespace = "webhook-operator-system"
	podName   = "webhook-operator-controller-manager-0"
)

// The operator's CustomResourceDefinitions.
const (
	welcomes          = "welcomes.auth.seedlabs.dev"
	memcacheds        = "memcacheds.cache.seedlabs.dev"
	deployObjects     = "deployobjects.app.seedlabs.dev"
	admissionPolicies = "admissionpolicies.policy.seedlabs.dev"
)

func TestCRDs(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "Missing CustomResourceDefinitions")
}

var (
	env *testenv.Env
	// k8s reads and writes through the API server, CRDs included.
	k8s client.Client
	pod *corev1.Pod
	// installed are the CRDs as config/crd installed them, to install again.
	installed = map[string]*apiextensionsv1.CustomResourceDefinition{}
)

var _ = BeforeSuite(func(ctx SpecContext) {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	var err error
	env, err = testenv.Start()
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })
	s := scheme.New()
	Expect(apiextensionsv1.AddToScheme(s)).To(Succeed())
	k8s, err = client.New(env.Config, client.Options{Scheme: s})
	Expect(err).NotTo(HaveOccurred())
	for _, name := range []string{welcomes, memcacheds, deployObjects, admissionPolicies} {
		c := &apiextensionsv1.CustomResourceDefinition{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, c)).To(Succeed())
		installed[name] = c
	}

	Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})).To(Succeed())
	env.ManagerConfig = asManager(ctx)
	pod = &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: podName},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "controller:latest"}}},
	}
	Expect(k8s.Create(ctx, pod)).To(Succeed())
	for name, value := range map[string]string{
		operator.EnvPodName: pod.Name, operator.EnvPodNamespace: pod.Namespace, operator.EnvPodUID: string(pod.UID),
	} {
		Expect(os.Setenv(name, value)).To(Succeed())
		DeferCleanup(os.Unsetenv, name)
	}
	restart(ctx)
})

// asManager binds the manager's ClusterRole of config/rbac to its ServiceAccount, and returns a
// config that impersonates it: the manager runs with the permissions it is installed with.
func asManager(ctx context.Context) *rest.Config {
	GinkgoHelper()
	root, err := testenv.ModuleRoot()
	Expect(err).NotTo(HaveOccurred())
	data, err := os.ReadFile(filepath.Join(root, "config", "rbac", "role.yaml"))
	Expect(err).NotTo(HaveOccurred())
	role := &rbacv1.ClusterRole{}
	Expect(yaml.Unmarshal(data, role)).To(Succeed())
	Expect(k8s.Create(ctx, role)).To(Succeed())
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "controller-manager"}}
	Expect(k8s.Create(ctx, sa)).To(Succeed())
	Expect(k8s.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: sa.Namespace, Name: sa.Name}},
	})).To(Succeed())
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: serviceaccount.MakeUsername(sa.Namespace, sa.Name),
		Groups:   append(serviceaccount.MakeGroupNames(sa.Namespace), user.AllAuthenticated),
	}
	return cfg
}

// restart restarts the manager, as a Pod restarts, and waits until it is ready.
func restart(ctx context.Context) {
	GinkgoHelper()
	Expect(env.RestartManager()).To(Succeed())
	Eventually(func(g Gomega) {
		code, body := readyz(ctx)
		g.Expect(code).To(Equal(http.StatusOK), body)
	}).Should(Succeed())
}

// readyz is the manager's answer to /readyz?verbose.
func readyz(ctx context.Context) (int, string) {
	GinkgoHelper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+env.ProbeAddress+"/readyz?verbose", nil)
	Expect(err).NotTo(HaveOccurred())
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return resp.StatusCode, string(body)
}

// expectRunning asserts that the manager has not stopped.
func expectRunning() {
	GinkgoHelper()
	Expect(env.ManagerDone()).NotTo(Receive(), "the manager stopped")
}

// deleteCRD deletes the CRD named name, and waits until the API server has deleted its objects
// and it is gone.
//
// kube-apiserver's finalizer of a deleted CRD lists its objects through the CRD's storage, which
// the API server creates at the first request for them and whose watch cache refuses lists
// ("storage is (re)initializing") until it has synced. The finalizer retries with a backoff that
// doubles each time, to minutes: a CI run met a CRD installed a moment before still Terminating
// after 2 minutes. So the objects are listed first, until the storage answers.
func deleteCRD(ctx context.Context, name string) {
	GinkgoHelper()
	Eventually(func() error {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(storageVersionOf(installed[name]).WithKind(installed[name].Spec.Names.ListKind))
		return k8s.List(ctx, list)
	}).Should(Succeed(), "the storage of %s lists its objects", name)
	c := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}}
	Expect(k8s.Delete(ctx, c)).To(Succeed())
	Eventually(func(g Gomega) {
		err := k8s.Get(ctx, client.ObjectKey{Name: name}, c)
		g.Expect(err).To(Satisfy(apierrors.IsNotFound), "%s: finalizers %v, conditions %+v", name, c.Finalizers, c.Status.Conditions)
	}).WithTimeout(2*time.Minute).Should(Succeed(), "kube-apiserver deletes the objects of a CRD, then the CRD")
}

// storageVersionOf is the group and version in which the API server stores crd's objects.
func storageVersionOf(crd *apiextensionsv1.CustomResourceDefinition) schema.GroupVersion {
	GinkgoHelper()
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return schema.GroupVersion{Group: crd.Spec.Group, Version: v.Name}
		}
	}
	Fail(fmt.Sprintf("CRD %s has no storage version", crd.Name))
	return schema.GroupVersion{}
}

// reinstallAfter installs every CRD config/crd has again when the spec ends, if a failure left one
// deleted, so that the other specs find them.
func reinstallAfter() {
	DeferCleanup(func(ctx SpecContext) {
		for name := range installed {
			if err := k8s.Get(ctx, client.ObjectKey{Name: name}, &apiextensionsv1.CustomResourceDefinition{}); apierrors.IsNotFound(err) {
				installCRD(ctx, name)
			}
		}
	})
}

// installCRD installs the CRD named name again, as config/crd has it, and waits until it is
// established.
func installCRD(ctx context.Context, name string) {
	GinkgoHelper()
	c := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: installed[name].Annotations, Labels: installed[name].Labels},
		Spec:       *installed[name].Spec.DeepCopy(),
	}
	Expect(k8s.Create(ctx, c)).To(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, c)).To(Succeed())
		for _, cond := range c.Status.Conditions {
			if cond.Type == apiextensionsv1.Established {
				g.Expect(cond.Status).To(Equal(apiextensionsv1.ConditionTrue))
				return
			}
		}
		g.Expect(c.Status.Conditions).To(ContainElement(HaveField("Type", apiextensionsv1.Established)))
	}).Should(Succeed())
}

// established is webhook_operator_crd_established of the CRD named name, as the manager serves it.
func established(name string) func(g Gomega) float64 {
	return func(g Gomega) float64 {
		families, err := metrics.Registry.Gather()
		g.Expect(err).NotTo(HaveOccurred())
		for _, f := range families {
			if f.GetName() != "webhook_operator_crd_established" {
				continue
			}
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "crd" && l.GetValue() == name {
						return m.GetGauge().GetValue()
					}
				}
			}
		}
		g.Expect(name).To(BeEmpty(), "no webhook_operator_crd_established series for the CRD")
		return -1
	}
}

// podEvents are the notes of the Events of reason on the manager's Pod, found as kubectl describe
// pod finds them: by the Pod's kind, namespace, name and UID.
func podEvents(reason string) func(g Gomega) []string {
	return func(g Gomega) []string {
		events := &corev1.EventList{}
		g.Expect(k8s.List(context.Background(), events, client.InNamespace(namespace), client.MatchingFields{
			"involvedObject.kind": "Pod", "involvedObject.name": pod.Name, "involvedObject.uid": string(pod.UID),
		})).To(Succeed())
		var notes []string
		for _, e := range events.Items {
			if e.Reason == reason {
				notes = append(notes, e.Message)
			}
		}
		return notes
	}
}

// forgetEvents deletes the Events of the manager's namespace, so that a spec sees only its own.
func forgetEvents(ctx context.Context) {
	GinkgoHelper()
	Expect(k8s.DeleteAllOf(ctx, &corev1.Event{}, client.InNamespace(namespace))).To(Succeed())
}

// newNamespace creates a namespace of the spec's own.
func newNamespace(ctx context.Context) string {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "crds-"}}
	Expect(k8s.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

// kind is one of the three app kinds, with an object its webhooks admit and one they refuse.
type kind struct {
	crd string
	// valid is an object of the kind named name.
	valid   func(ns, name string) client.Object
	invalid func(ns string) client.Object
	// rule is the rule the invalid object breaks.
	rule webhooks.RuleID
}

var kinds = []kind{
	{
		crd: welcomes,
		valid: func(ns, name string) client.Object {
			return &authv1.Welcome{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: authv1.WelcomeSpec{Name: "Ada"}}
		},
		invalid: func(ns string) client.Object { return badEmail(ns) },
		rule:    webhooks.WelcomeEmail,
	},
	{
		crd: memcacheds,
		valid: func(ns, name string) client.Object {
			return &cachev1.Memcached{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: cachev1.MemcachedSpec{Size: ptr.To[int32](1)}}
		},
		invalid: func(ns string) client.Object {
			return &cachev1.Memcached{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "too-big"}, Spec: cachev1.MemcachedSpec{Size: ptr.To[int32](4)}}
		},
		rule: webhooks.MemcachedSize,
	},
	{
		crd: deployObjects,
		valid: func(ns, name string) client.Object {
			return &appv1.DeployObject{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: appv1.DeployObjectSpec{
				Image: "docker.io/library/nginx:1.27", Ports: []corev1.ServicePort{{Name: "http", Port: 80}},
			}}
		},
		invalid: func(ns string) client.Object {
			return &appv1.DeployObject{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "elsewhere"}, Spec: appv1.DeployObjectSpec{
				Image: "quay.io/team/app:1.0", Ports: []corev1.ServicePort{{Name: "http", Port: 80}},
			}}
		},
		rule: webhooks.DeployObjectImageRegistry,
	},
}

// badEmail is a Welcome that breaks welcome.email.format.
func badEmail(ns string) *authv1.Welcome {
	return &authv1.Welcome{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bad-email"}, Spec: authv1.WelcomeSpec{Name: "Ada", Email: "ada-at-example.com"}}
}

// expectServed asserts that the webhooks of k answer through the API server, and its controller
// reconciles: a valid object is stored and gets its Deployment, an invalid one is refused by rule.
func expectServed(ctx context.Context, k kind, ns, name string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		err := k8s.Create(ctx, k.invalid(ns), client.DryRunAll)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		g.Expect(err.Error()).To(ContainSubstring("(rule " + string(k.rule) + ")"))
	}).Should(Succeed())
	// The kinds' Deployments are named after their objects: each kind names its own.
	obj := k.valid(ns, strings.Split(k.crd, ".")[0]+"-"+name)
	Expect(k8s.Create(ctx, obj)).To(Succeed())
	Eventually(func(g Gomega) {
		d := &appsv1.Deployment{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(obj), d)).To(Succeed())
		g.Expect(metav1.IsControlledBy(d, obj)).To(BeTrue(), "controlled by %s", obj.GetName())
	}).Should(Succeed(), "the controller of %s reconciles", k.crd)
}

var _ = Describe("With a CustomResourceDefinition missing, the manager", Ordered, func() {
	for _, missing := range kinds {
		It("starts, serves the other kinds, reports "+missing.crd+" missing, and starts its controller once it is back", func(ctx SpecContext) {
			reinstallAfter()
			ns := newNamespace(ctx)
			forgetEvents(ctx)
			deleteCRD(ctx, missing.crd)

			By("becoming ready, restarted without the CRD")
			restart(ctx)
			for _, other := range kinds {
				if other.crd != missing.crd {
					expectServed(ctx, other, ns, "served")
				}
			}

			By("naming the CRD in its metric and in a Warning Event on its Pod")
			Eventually(established(missing.crd)).Should(BeZero())
			for _, other := range []string{welcomes, memcacheds, deployObjects, admissionPolicies} {
				if other != missing.crd {
					Expect(established(other)(Default)).To(BeEquivalentTo(1), other)
				}
			}
			Eventually(podEvents(conditions.EventReasonCRDMissing)).Should(HaveEach(ContainSubstring(missing.crd)))

			By("starting the kind's controller once the CRD is installed again")
			installCRD(ctx, missing.crd)
			Eventually(established(missing.crd)).Should(BeEquivalentTo(1))
			Eventually(podEvents(conditions.EventReasonCRDEstablished)).Should(HaveEach(ContainSubstring(missing.crd)))
			expectServed(ctx, missing, ns, "back")

			By("running on when the CRD is deleted again, and reconciling once it is back")
			deleteCRD(ctx, missing.crd)
			Eventually(established(missing.crd)).Should(BeZero())
			installCRD(ctx, missing.crd)
			Eventually(established(missing.crd)).Should(BeEquivalentTo(1))
			expectServed(ctx, missing, ns, "again")
			code, body := readyz(ctx)
			Expect(code).To(Equal(http.StatusOK), body)
			expectRunning()
		})
	}

	It("starts with none of its CRDs, and runs every controller once they are back", func(ctx SpecContext) {
		reinstallAfter()
		ns := newNamespace(ctx)
		names := []string{welcomes, memcacheds, deployObjects, admissionPolicies}
		for _, name := range names {
			deleteCRD(ctx, name)
		}
		restart(ctx)
		for _, name := range names {
			Eventually(established(name)).Should(BeZero())
		}
		for _, name := range names {
			installCRD(ctx, name)
		}
		for _, k := range kinds {
			expectServed(ctx, k, ns, "after-all")
		}
		p := &policyv1.AdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: policyv1.PolicyName}}
		Expect(k8s.Create(ctx, p)).To(Succeed())
		expectReady(ctx)
		Expect(k8s.Delete(ctx, p)).To(Succeed())
		expectRunning()
	})
})

var _ = Describe("The manager's role", func() {
	It("lets it read its own CustomResourceDefinitions, by name, and no other", func(ctx SpecContext) {
		manager, err := client.New(env.ManagerConfig, client.Options{Scheme: k8s.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		crds := &apiextensionsv1.CustomResourceDefinitionList{}
		Expect(manager.List(ctx, crds, client.MatchingFields{"metadata.name": welcomes})).To(Succeed())
		Expect(crds.Items).To(HaveLen(1))
		Expect(manager.Get(ctx, client.ObjectKey{Name: deployObjects}, &apiextensionsv1.CustomResourceDefinition{})).To(Succeed())
		Expect(manager.List(ctx, crds)).To(Satisfy(apierrors.IsForbidden))
		Expect(manager.List(ctx, crds, client.MatchingFields{"metadata.name": "crontabs.stable.example.com"})).To(Satisfy(apierrors.IsForbidden))
	})
})

var _ = Describe("With the AdmissionPolicy's CustomResourceDefinition deleted", Ordered, func() {
	var ns string
	BeforeAll(func(ctx SpecContext) { ns = newNamespace(ctx) })

	// admitted reports whether admission lets through a Welcome that breaks welcome.email.format,
	// which the AdmissionPolicy below Warns about and the default policy Enforces.
	admitted := func(ctx context.Context) func(g Gomega) bool {
		return func(g Gomega) bool {
			err := k8s.Create(ctx, badEmail(ns), client.DryRunAll)
			if err == nil {
				return true
			}
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
			g.Expect(err.Error()).To(ContainSubstring("(rule welcome.email.format)"))
			return false
		}
	}
	warn := func(ctx context.Context) {
		GinkgoHelper()
		Expect(k8s.Create(ctx, &policyv1.AdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: policyv1.PolicyName},
			Spec: policyv1.AdmissionPolicySpec{Rules: []policyv1.RulePolicy{
				{ID: string(webhooks.WelcomeEmail), Action: policyv1.Warn},
			}},
		})).To(Succeed())
		Eventually(admitted(ctx)).Should(BeTrue())
	}

	AfterAll(func(ctx SpecContext) {
		p := &policyv1.AdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: policyv1.PolicyName}}
		Expect(client.IgnoreNotFound(k8s.Delete(ctx, p))).To(Succeed())
		Eventually(admitted(ctx)).Should(BeFalse(), "the default policy is back for the other specs")
	})

	It("keeps the policy in force while the CRD is gone, and the flags' once it is back without one", func(ctx SpecContext) {
		reinstallAfter()
		Expect(admitted(ctx)(Default)).To(BeFalse(), "the default policy Enforces welcome.email.format")
		warn(ctx)

		deleteCRD(ctx, admissionPolicies)
		Consistently(admitted(ctx)).WithTimeout(2*time.Second).Should(BeTrue(), "the policy stays in force")
		Eventually(established(admissionPolicies)).Should(BeZero())
		expectRunning()

		installCRD(ctx, admissionPolicies)
		Eventually(admitted(ctx)).Should(BeFalse(), "no AdmissionPolicy is stored: the flags' policy")
	})

	It("starts ready under the flags' policy, reports the CRD missing, and applies a policy once it is back", func(ctx SpecContext) {
		reinstallAfter()
		forgetEvents(ctx)
		deleteCRD(ctx, admissionPolicies)
		restart(ctx)
		Expect(admitted(ctx)(Default)).To(BeFalse(), "the flags' policy Enforces welcome.email.format")
		Eventually(established(admissionPolicies)).Should(BeZero())
		Eventually(podEvents(conditions.EventReasonCRDMissing)).Should(HaveEach(ContainSubstring(admissionPolicies)))

		installCRD(ctx, admissionPolicies)
		warn(ctx)
		expectReady(ctx)
		expectRunning()
	})
})

// expectReady waits until the AdmissionPolicy controller has reported the policy Ready.
func expectReady(ctx context.Context) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		p := &policyv1.AdmissionPolicy{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: policyv1.PolicyName}, p)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(p.Status.Conditions, conditions.Ready)).To(BeTrue())
	}).Should(Succeed(), "the AdmissionPolicy controller reconciles")
}
