//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	"github.com/seedlabs/webhook-operator/test/fixtures"
)

// release is the Helm release the specs install the chart as, into the operator's namespace.
const release = "webhook-operator"

// clientCAValue has the chart's manager serve only callers with a client certificate of the CA
// in the ConfigMap clientCAConfigMap, which helmInstall then creates: kube-apiserver's.
const clientCAValue = "webhook.clientCA.configMap=" + clientCAConfigMap

// helm runs the helm built from the Go module proxy against the cluster, as the admin.
func helm(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, cfg.helm, args...)
	home := filepath.Join(cfg.artifacts, "helm")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kube.Kubeconfig, "HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// thisChart is the chart of this tree.
func thisChart() string { return filepath.Join(cfg.root, "dist", "chart") }

// chartValues are the --set flags that run the images the suite built, as make deploy's IMG,
// WELCOME_IMG and MEMCACHED_IMG do, and then values.
func chartValues(values ...string) []string {
	repository, tag := splitImage(cfg.image)
	args := []string{"--set", "image.repository=" + repository, "--set", "image.tag=" + tag,
		"--set", "operands.welcomeImage=" + cfg.welcome, "--set", "operands.memcachedImage=" + cfg.memcached}
	for _, v := range values {
		args = append(args, "--set", v)
	}
	return args
}

// splitImage splits an image reference name:tag at its last colon (a registry may have a port).
func splitImage(image string) (repository, tag string) {
	i := strings.LastIndex(image, ":")
	ExpectWithOffset(1, i).To(BeNumerically(">", strings.LastIndex(image, "/")), "image %q has no tag", image)
	return image[:i], image[i+1:]
}

// helmInstall creates the operator's namespace (createReleaseNamespace), installs chart with the
// suite's images and values and waits for it to be ready.
func helmInstall(ctx context.Context, chart string, values ...string) {
	createReleaseNamespace(ctx)
	if slices.Contains(values, clientCAValue) {
		createClientCAConfigMap(ctx)
	}
	helmInstallArgs(ctx, "helm install "+strings.Join(values, " "), append([]string{chart}, chartValues(values...)...)...)
}

// createReleaseNamespace creates the operator's namespace as docs/install.md says (restricted);
// the spec's end uninstalls the release if it is still there and deletes what uninstall leaves.
func createReleaseNamespace(ctx context.Context) {
	ns := restrictedNamespace(fixtures.Namespace)
	ExpectWithOffset(1, k8s.Create(ctx, ns)).To(Succeed())
	DeferCleanup(removeRelease, []string{fixtures.Namespace}, NodeTimeout(5*time.Minute))
}

// removeRelease puts the cluster back as it was before an install, whatever the spec left: the
// release uninstalled if it is still there, the webhook configurations (which would judge the next
// specs' objects) and the CRDs it keeps deleted, and then namespaces, waiting until they are gone.
func removeRelease(ctx SpecContext, namespaces []string) {
	out, err := helm(ctx, "uninstall", release, "--namespace", fixtures.Namespace, "--ignore-not-found", "--wait", "--timeout", "2m")
	Expect(err).NotTo(HaveOccurred(), "helm uninstall:\n%s", out)
	for _, configuration := range []client.Object{
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: fixtures.MutatingWebhookConfiguration}},
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: fixtures.ValidatingWebhookConfiguration}},
	} {
		Expect(client.IgnoreNotFound(k8s.Delete(ctx, configuration))).To(Succeed())
	}
	deleteKeptCRDs(ctx)
	for _, name := range namespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		Expect(client.IgnoreNotFound(k8s.Delete(ctx, ns))).To(Succeed())
		Eventually(func() error { return k8s.Get(ctx, client.ObjectKeyFromObject(ns), ns) }).
			WithContext(ctx).WithTimeout(2 * time.Minute).Should(Satisfy(apierrors.IsNotFound))
	}
}

// helmInstallArgs runs helm install of the release into its namespace with args (the chart and
// flags), waiting for it to be ready, and reports how long that took as what.
func helmInstallArgs(ctx context.Context, what string, args ...string) {
	start := time.Now()
	out, err := helm(ctx, append([]string{"install", release, "--namespace", fixtures.Namespace, "--wait", "--timeout", "3m"}, args...)...)
	ExpectWithOffset(2, err).NotTo(HaveOccurred(), "helm install:\n%s", out)
	AddReportEntry(what, time.Since(start).Round(time.Millisecond).String())
}

// deleteKeptCRDs deletes the CRDs helm uninstall keeps, and with them every custom resource,
// once the garbage collector has deleted their children (it cannot once their kind is gone).
func deleteKeptCRDs(ctx context.Context) {
	list := &apiextensionsv1.CustomResourceDefinitionList{}
	Expect(k8s.List(ctx, list)).To(Succeed())
	for i := range list.Items {
		crd := &list.Items[i]
		if !strings.HasSuffix(crd.Spec.Group, ".seedlabs.dev") {
			continue
		}
		Expect(client.IgnoreNotFound(k8s.Delete(ctx, crd))).To(Succeed())
		Eventually(func() error { return k8s.Get(ctx, client.ObjectKeyFromObject(crd), crd) }).
			WithContext(ctx).WithTimeout(2 * time.Minute).Should(Satisfy(apierrors.IsNotFound))
	}
}

// releaseObjects are the objects of the release's manifest, as helm get manifest prints them.
func releaseObjects(ctx context.Context) []*unstructured.Unstructured {
	out, err := helm(ctx, "get", "manifest", release, "--namespace", fixtures.Namespace)
	Expect(err).NotTo(HaveOccurred(), "helm get manifest:\n%s", out)
	var objects []*unstructured.Unstructured
	for _, doc := range strings.Split("\n"+out, "\n---\n") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		u := &unstructured.Unstructured{}
		Expect(yaml.Unmarshal([]byte(doc), &u.Object)).To(Succeed())
		if len(u.Object) > 0 {
			objects = append(objects, u)
		}
	}
	Expect(objects).NotTo(BeEmpty())
	return objects
}

// expectAdmissionServed: a valid Welcome is defaulted by the mutating webhook and an invalid one
// refused by the validating webhook, with its field.
func expectAdmissionServed(ctx context.Context, g Gomega, namespace string) {
	expectAdmissionServedAt(ctx, g, namespace, "v1")
}

// expectAdmissionServedAt is expectAdmissionServed for Welcomes at version.
func expectAdmissionServedAt(ctx context.Context, g Gomega, namespace, version string) {
	valid := welcomeAt(&authv1.Welcome{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "helm-probe"},
		Spec:       authv1.WelcomeSpec{Name: "Helm"},
	}, version)
	g.ExpectWithOffset(2, k8s.Create(ctx, valid, client.DryRunAll)).To(Succeed())
	_, defaulted, _ := unstructured.NestedInt64(valid.Object, "spec", "port")
	g.ExpectWithOffset(2, defaulted).To(BeTrue(), "not defaulted")
	invalid := welcomeAt(&authv1.Welcome{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "helm-probe-invalid"},
		Spec:       authv1.WelcomeSpec{Name: "Helm", Email: "not-an-email"},
	}, version)
	err := k8s.Create(ctx, invalid, client.DryRunAll)
	g.ExpectWithOffset(2, apierrors.IsInvalid(err)).To(BeTrue(), "want the webhook's 422, got %v", err)
	g.ExpectWithOffset(2, err.Error()).To(ContainSubstring("spec.email"))
}

// expectOnlyLeftovers: once helm uninstall returned, of the release's objects only the CRDs
// remain (kept, with every custom resource), and once the manager's pods are gone the operator's
// namespace holds nothing but what docs/install.md lists as left to delete with it: the leader
// election Lease, and the Secrets cert-manager wrote; beside them, the user's own objects, such as
// the ConfigMap of the client CA, each as "<Kind> <name>".
func expectOnlyLeftovers(ctx context.Context, objects []*unstructured.Unstructured, secrets []string, usersOwn ...string) {
	for _, o := range objects {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(o.GroupVersionKind())
		err := k8s.Get(ctx, types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}, got)
		if o.GetKind() == "CustomResourceDefinition" {
			Expect(err).NotTo(HaveOccurred(), "helm uninstall deleted CRD %s; the chart keeps them", o.GetName())
			continue
		}
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%s %s/%s is left after helm uninstall (%v)", o.GetKind(), o.GetNamespace(), o.GetName(), err)
	}

	want := []string{"Lease webhook-operator.seedlabs.dev"}
	for _, s := range secrets {
		want = append(want, "Secret "+s)
	}
	want = append(want, usersOwn...)
	slices.Sort(want)
	Eventually(func(g Gomega) []string {
		pods := &corev1.PodList{}
		g.Expect(k8s.List(ctx, pods, client.InNamespace(fixtures.Namespace))).To(Succeed())
		g.Expect(pods.Items).To(BeEmpty(), "the manager's pods are still there")
		var left []string
		for _, list := range []client.ObjectList{&corev1.SecretList{}, &coordinationv1.LeaseList{}, &appsv1.DeploymentList{},
			&appsv1.ReplicaSetList{}, &corev1.ServiceList{}, &corev1.ServiceAccountList{}, &corev1.ConfigMapList{}} {
			g.Expect(k8s.List(ctx, list, client.InNamespace(fixtures.Namespace))).To(Succeed())
			items, err := meta.ExtractList(list)
			g.Expect(err).NotTo(HaveOccurred())
			for _, item := range items {
				o := item.(client.Object)
				kind := strings.TrimSuffix(strings.TrimPrefix(fmt.Sprintf("%T", list), "*v1."), "List")
				// Every namespace has these, made by kube-controller-manager.
				if kind == "ServiceAccount" && o.GetName() == "default" || kind == "ConfigMap" && o.GetName() == "kube-root-ca.crt" {
					continue
				}
				left = append(left, kind+" "+o.GetName())
			}
		}
		slices.Sort(left)
		return left
	}).WithContext(ctx).WithTimeout(time.Minute).Should(Equal(want), "what helm uninstall leaves in %s", fixtures.Namespace)

	for _, list := range []client.ObjectList{&admissionregistrationv1.MutatingWebhookConfigurationList{}, &admissionregistrationv1.ValidatingWebhookConfigurationList{}} {
		Expect(k8s.List(ctx, list, client.MatchingLabels{"app.kubernetes.io/instance": release})).To(Succeed())
		Expect(list).To(HaveField("Items", BeEmpty()), "webhook configurations after helm uninstall")
	}
}

var _ = Describe("The operator installed with Helm in cert-manager mode (helm install, upgrade, uninstall)", Ordered, func() {
	const namespace = "e2e-helm"
	var (
		rec      *podRecorder
		children map[string]types.UID
		objects  []*unstructured.Unstructured
	)

	BeforeAll(func(ctx SpecContext) {
		rec = recordManagers("managers-helm")
		helmInstall(ctx, thisChart(), clientCAValue)
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
		Expect(k8s.Create(ctx, ns)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(k8s.Delete(ctx, ns))).To(Succeed()) })
	}, NodeTimeout(5*time.Minute))

	AfterEach(func() {
		Expect(rec.exits()).To(BeEmpty(), "manager containers exited on their own")
	})

	welcomeChildren := func(ctx context.Context, g Gomega) map[string]types.UID {
		key := types.NamespacedName{Namespace: namespace, Name: "helm-welcome"}
		deployment, service := &appsv1.Deployment{}, &corev1.Service{}
		g.ExpectWithOffset(1, k8s.Get(ctx, key, deployment)).To(Succeed())
		g.ExpectWithOffset(1, k8s.Get(ctx, key, service)).To(Succeed())
		return map[string]types.UID{"Deployment": deployment.UID, "Service": service.UID}
	}

	It("installs: every replica ready, the CA injected by cert-manager, admission served, a Welcome reconciled", func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			expectManagerReady(ctx, g)
			bundles, err := caBundles(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(bundles).To(HaveEach(Equal(servingSecretData(ctx).Data["ca.crt"])))
			expectAdmissionServed(ctx, g, namespace)
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		// kube-apiserver, whose calls were just served, presents the client certificate the
		// manager now requires.
		Expect(managerContainer(&corev1.Pod{Spec: managerDeployment(ctx, Default).Spec.Template.Spec}).Args).
			To(ContainElement("--webhook-client-ca=/etc/webhook-operator/client-ca/ca.crt"), "webhook.clientCA.configMap sets the flag")

		By("helm test: the chart's own check of both webhooks, in namespace default")
		out, err := helm(ctx, "test", release, "--namespace", fixtures.Namespace, "--timeout", "2m")
		Expect(err).NotTo(HaveOccurred(), "helm test:\n%s", out)
		Expect(out).To(And(ContainSubstring("webhook-operator-admission-check"), MatchRegexp(`Phase:\s+Succeeded`)), "helm test:\n%s", out)
		AddReportEntry("helm test", out)
		Eventually(func() error {
			return k8s.Get(ctx, types.NamespacedName{Namespace: fixtures.Namespace, Name: "webhook-operator-admission-check"}, &corev1.Pod{})
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Satisfy(apierrors.IsNotFound), "the test pod, which passed, is left")

		Expect(k8s.Create(ctx, &authv1.Welcome{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "helm-welcome"},
			Spec:       authv1.WelcomeSpec{Name: "Helm"},
		})).To(Succeed())
		Eventually(func(g Gomega) { children = welcomeChildren(ctx, g) }).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
	}, SpecTimeout(4*time.Minute))

	It("upgrades, rolling every replica, under admission load: no request fails, no child is recreated", func(ctx SpecContext) {
		load := startAdmissionLoad(ctx, namespace, nil)
		before := managerPods(ctx, Default)

		start := time.Now()
		args := append([]string{"upgrade", release, thisChart(), "--namespace", fixtures.Namespace,
			"--wait", "--timeout", "4m"}, chartValues("replicaCount=3", "webhook.timeoutSeconds=2", "podAnnotations.e2e/upgraded=v2", clientCAValue)...)
		out, err := helm(ctx, args...)
		Expect(err).NotTo(HaveOccurred(), "helm upgrade:\n%s", out)
		AddReportEntry("helm upgrade, rolling the managers", time.Since(start).Round(time.Millisecond).String())

		var after []corev1.Pod
		Eventually(func(g Gomega) {
			after = expectManagerReady(ctx, g)
			g.Expect(after).To(HaveLen(3))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Succeed())
		for _, pod := range before {
			Expect(after).NotTo(ContainElement(HaveField("UID", pod.UID)), "pod %s was not replaced", pod.Name)
		}
		validating := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		Expect(k8s.Get(ctx, types.NamespacedName{Name: fixtures.ValidatingWebhookConfiguration}, validating)).To(Succeed())
		Expect(validating.Webhooks).To(HaveEach(HaveField("TimeoutSeconds", HaveValue(BeEquivalentTo(2)))))

		load.finish(ctx, "helm upgrade")
		Expect(welcomeChildren(ctx, Default)).To(Equal(children), "a Welcome's children were recreated")
		expectAdmissionServed(ctx, Default, namespace)
	}, SpecTimeout(6*time.Minute))

	It("uninstalls: nothing of the release is left but the CRDs, with the custom resources, and cert-manager's Secrets", func(ctx SpecContext) {
		objects = releaseObjects(ctx)
		out, err := helm(ctx, "uninstall", release, "--namespace", fixtures.Namespace, "--wait", "--timeout", "2m")
		Expect(err).NotTo(HaveOccurred(), "helm uninstall:\n%s", out)
		expectOnlyLeftovers(ctx, objects, []string{fixtures.NamePrefix + "ca", "metrics-server-cert", "webhook-server-cert"}, "ConfigMap "+clientCAConfigMap)
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: namespace, Name: "helm-welcome"}, &authv1.Welcome{})).To(Succeed(),
			"the Welcome is kept with its CRD")
	}, SpecTimeout(3*time.Minute))
})
