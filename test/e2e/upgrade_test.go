//go:build e2e

package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	authv1alpha1 "github.com/seedlabs/webhook-operator/api/auth/v1alpha1"
	cachev1alpha1 "github.com/seedlabs/webhook-operator/api/cache/v1alpha1"
	"github.com/seedlabs/webhook-operator/api/conditions"
	policyv1alpha1 "github.com/seedlabs/webhook-operator/api/policy/v1alpha1"
	"github.com/seedlabs/webhook-operator/test/fixtures"
)

// makePrevious runs `make <target>` in the tree of the previous version (E2E_PREVIOUS_TREE, a
// fixed earlier commit of this repository), with its own Makefile and config/, as a user of that
// version would, running its manager image and today's operand images.
func makePrevious(ctx context.Context, target string, variables ...string) (string, error) {
	return makeIn(ctx, cfg.previous.tree, target, append([]string{"IMG=" + cfg.previous.image, "CONTROLLER_GEN=" + cfg.previous.controllerGen}, variables...)...)
}

// upgradeState is what must survive an upgrade: each custom resource and each child's uid, and
// each child Deployment's pod template and pods. Not its generation: the operator applies each
// child once more to name its owner at v1, and the change of the hash of what it applies, an
// annotation, bumps a Deployment's generation.
type upgradeState map[string]string

func observeUpgradeState(ctx context.Context, g Gomega, namespace string, objects []client.Object) upgradeState {
	state := upgradeState{}
	for _, obj := range objects {
		current := obj.DeepCopyObject().(client.Object)
		g.ExpectWithOffset(1, k8s.Get(ctx, client.ObjectKeyFromObject(obj), current)).To(Succeed())
		kind := fmt.Sprintf("%T", obj)
		state[kind+" "+obj.GetName()] = string(current.GetUID())
		if current.GetNamespace() == "" {
			continue
		}
		deployment, service := &appsv1.Deployment{}, &corev1.Service{}
		g.ExpectWithOffset(1, k8s.Get(ctx, client.ObjectKeyFromObject(obj), deployment)).To(Succeed())
		g.ExpectWithOffset(1, k8s.Get(ctx, client.ObjectKeyFromObject(obj), service)).To(Succeed())
		template, err := json.Marshal(deployment.Spec.Template)
		g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
		state[kind+" "+obj.GetName()+" Deployment"] = fmt.Sprintf("%s template %x", deployment.UID, sha256.Sum256(template))
		state[kind+" "+obj.GetName()+" Service"] = string(service.UID)
		pods := &corev1.PodList{}
		g.ExpectWithOffset(1, k8s.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabels(deployment.Spec.Selector.MatchLabels))).To(Succeed())
		var uids []string
		for _, pod := range pods.Items {
			uids = append(uids, string(pod.UID))
		}
		state[kind+" "+obj.GetName()+" pods"] = strings.Join(uids, ",")
	}
	return state
}

// createEveryKind creates an AdmissionPolicy and a Welcome, a Memcached and a DeployObject in
// namespace, at the versions the previous release serves (the first three at v1alpha1), and waits
// until each has rolled out under the previous version.
func createEveryKind(ctx context.Context, namespace string) []client.Object {
	objects := []client.Object{
		&policyv1alpha1.AdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "cluster"},
			Spec: policyv1alpha1.AdmissionPolicySpec{
				AllowedRegistries: []string{strings.SplitN(cfg.echo, "/", 2)[0]},
				Rules:             []policyv1alpha1.RulePolicy{{ID: "welcome.email.format", Action: policyv1alpha1.Warn}},
			},
		},
		&authv1alpha1.Welcome{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "welcome"},
			Spec:       authv1alpha1.WelcomeSpec{Name: "Ada", Email: "not-an-email", Password: "hunter2"},
		},
		&cachev1alpha1.Memcached{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "memcached"},
			Spec:       cachev1alpha1.MemcachedSpec{Size: ptr.To[int32](2)},
		},
		&appv1.DeployObject{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "echo"},
			Spec: appv1.DeployObjectSpec{
				Image:    cfg.echo + ":v1",
				Replicas: ptr.To[int32](2),
				Ports:    []corev1.ServicePort{{Name: "http", Port: 8080}},
				Env:      []corev1.EnvVar{{Name: "LISTEN", Value: "8080"}},
			},
		},
	}
	// Each replica learns the AdmissionPolicy through its watch: until it has, the Welcome's email
	// is refused (Enforce) and the echo image's registry may be, and a refused create stores nothing.
	for _, obj := range objects {
		EventuallyWithOffset(1, func() error { return k8s.Create(ctx, obj) }).WithContext(ctx).WithTimeout(30*time.Second).
			Should(Succeed(), "%T %s", obj, obj.GetName())
	}
	waitEveryKindRolledOut(ctx, objects, conditions.Ready)
	return objects
}

// waitEveryKindRolledOut waits until every object of the operator's app kinds reports every
// replica ready and the condition of type ready True for its generation.
func waitEveryKindRolledOut(ctx context.Context, objects []client.Object, ready string) {
	for _, kind := range []string{"Welcome", "Memcached", "DeployObject"} {
		for _, obj := range objects {
			if strings.HasSuffix(fmt.Sprintf("%T", obj), "."+kind) {
				waitRolledOut(ctx, kind, obj, ready)
			}
		}
	}
}

// deleteObjects deletes the objects, then their namespace.
func deleteObjects(ctx context.Context, namespace string, objects []client.Object) {
	for _, obj := range objects {
		ExpectWithOffset(1, client.IgnoreNotFound(k8s.Delete(ctx, obj))).To(Succeed())
	}
	ExpectWithOffset(1, client.IgnoreNotFound(k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}))).To(Succeed())
}

// expectManagersRun waits until every replica of the manager runs image and is ready.
func expectManagersRun(ctx context.Context, image string, timeout time.Duration) []corev1.Pod {
	var managers []corev1.Pod
	EventuallyWithOffset(1, func(g Gomega) {
		managers = expectManagerReady(ctx, g)
		for _, pod := range managers {
			g.Expect(pod.Spec.Containers[0].Image).To(Equal(image), "pod %s", pod.Name)
		}
	}).WithContext(ctx).WithTimeout(timeout).WithPolling(time.Second).Should(Succeed())
	return managers
}

// expectUpgradedInPlace: once every replica runs this tree's manager, a new leader holds the
// Lease and has reconciled every object, and for a while nothing of before has changed; every
// object is still available and stored at v1, and the admission and read load saw no failure.
func expectUpgradedInPlace(ctx context.Context, namespace string, objects []client.Object, before upgradeState,
	previousLeader string, load *admissionLoad, what string, start time.Time,
) {
	managers := expectManagersRun(ctx, cfg.image, 3*time.Minute)
	AddReportEntry(what+": to every replica of this tree ready", time.Since(start).Round(time.Millisecond).String())
	// The new leader lists every object and reconciles it once it holds the Lease; what it would
	// change, it changes within seconds of that.
	ExpectWithOffset(1, liveLeader(ctx, managers)).NotTo(Equal(previousLeader))
	ConsistentlyWithOffset(1, func(g Gomega) upgradeState { return observeUpgradeState(ctx, g, namespace, objects) }).
		WithContext(ctx).WithTimeout(15*time.Second).WithPolling(time.Second).Should(Equal(before),
		"custom resources, children and operand pods after the upgrade (uids, and each Deployment's pod template)")
	waitEveryKindRolledOut(ctx, objects, conditions.Ready)
	expectStoredAtV1(ctx, objects)
	load.finish(ctx, what)
}

// describeUpgrade declares the specs of an upgrade: install installs the previous version, whose
// manager runs previousImage() (the suite's settings are read once the tree of specs is built); an
// object of every kind rolls out under it; then upgrade installs this tree's over it, under
// admission load; then the next release's CRDs are taken or, when rollback is given, it goes back
// to the previous version.
func describeUpgrade(text, namespace string, previousImage func() string, install func(ctx SpecContext),
	upgrade, rollback func(ctx SpecContext) (string, error),
) {
	Describe(text, Ordered, func() {
		var (
			objects []client.Object
			before  upgradeState
			rec     *podRecorder
		)

		BeforeAll(func(ctx SpecContext) {
			rec = recordManagers("managers-" + namespace)
			install(ctx)
			Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})).To(Succeed())
			DeferCleanup(func(ctx SpecContext) { deleteObjects(ctx, namespace, objects) })
		}, NodeTimeout(5*time.Minute))

		It("runs the previous version, with an object of every kind rolled out", func(ctx SpecContext) {
			expectManagersRun(ctx, previousImage(), 2*time.Minute)
			Eventually(func(g Gomega) { expectAdmissionServedAt(ctx, g, namespace, "v1alpha1") }).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
			objects = createEveryKind(ctx, namespace)
			before = observeUpgradeState(ctx, Default, namespace, objects)
		}, SpecTimeout(5*time.Minute))

		It("upgrades to this tree under admission and read load: no request fails, no object is lost, no child recreated, no operand rolled", func(ctx SpecContext) {
			load := startAdmissionLoadAt(ctx, namespace, nil, "v1alpha1", []string{"v1alpha1", "v1"})
			previousLeader, _ := leaseHolder(ctx, Default)

			start := time.Now()
			out, err := upgrade(ctx)
			Expect(err).NotTo(HaveOccurred(), "the upgrade:\n%s", out)
			expectUpgradedInPlace(ctx, namespace, objects, before, previousLeader, load, namespace, start)
			Expect(rec.exits()).To(BeEmpty(), "manager containers exited on their own")
		}, SpecTimeout(8*time.Minute))

		// The spec of the next release's CRDs deletes the namespace, so it follows the upgrade
		// where no rollback does. Both install paths run the same manager with the same RBAC
		// (test/deploy holds the chart's to kustomize's): one path's run of it proves both.
		if rollback == nil {
			It("takes the next release's CRDs, v1alpha1 not served: the manager drops the v1alpha1 managedFields, server-side apply works, the garbage collector deletes a Welcome's children and the namespace is deleted", func(ctx SpecContext) {
				expectTakesTheNextReleasesCRDs(ctx, namespace, objects)
			}, SpecTimeout(8*time.Minute))
			return
		}
		It("rolls back one release under admission and read load at v1alpha1: no request fails, and every object reads at v1alpha1 as it was written, through the previous release's conversion webhook", func(ctx SpecContext) {
			// v1 stops being served: the load writes and reads v1alpha1 alone.
			load := startAdmissionLoadAt(ctx, namespace, nil, "v1alpha1", []string{"v1alpha1"})
			out, err := rollback(ctx)
			Expect(err).NotTo(HaveOccurred(), "the rollback:\n%s", out)
			expectManagersRun(ctx, previousImage(), 3*time.Minute)
			expectReadAtV1alpha1(ctx, objects)
			load.finish(ctx, namespace+" rollback")
		}, SpecTimeout(8*time.Minute))
	})
}

// expectReadAtV1alpha1: every object reads at v1alpha1 (the DeployObject at v1, its only version),
// stored at v1 by this tree and converted by the previous release's conversion webhook, and a
// Welcome's password reads back as it was written.
func expectReadAtV1alpha1(ctx context.Context, objects []client.Object) {
	for _, obj := range objects {
		gvk, err := apiutil.GVKForObject(obj, k8s.Scheme())
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
		if gvk.Group != appv1.GroupVersion.Group {
			gvk.Version = "v1alpha1"
		}
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(gvk)
		EventuallyWithOffset(1, func() error { return k8s.Get(ctx, client.ObjectKeyFromObject(obj), got) }).WithContext(ctx).WithTimeout(30*time.Second).
			Should(Succeed(), "%s %s", gvk, obj.GetName())
		ExpectWithOffset(1, got.GetUID()).To(Equal(obj.GetUID()), "%s %s, the same object", gvk, obj.GetName())
	}
	welcome := &authv1alpha1.Welcome{}
	ExpectWithOffset(1, k8s.Get(ctx, client.ObjectKeyFromObject(objects[1]), welcome)).To(Succeed())
	ExpectWithOffset(1, welcome.Spec.Password).To(Equal("hunter2"))
}

// convertedCRDs are the CRDs whose kinds move from v1alpha1 to v1.
var convertedCRDs = []string{"welcomes.auth.seedlabs.dev", "memcacheds.cache.seedlabs.dev", "admissionpolicies.policy.seedlabs.dev"}

// expectTakesTheNextReleasesCRDs: the objects, written at v1alpha1 by the previous release and its
// controllers and upgraded, under the CRDs of the release after this one, which serve v1alpha1 no
// more (this tree's with v1alpha1 not served): this tree's leader drops every v1alpha1
// managedFields entry, so that a server-side apply would still work once v1alpha1 is removed; a
// server-side apply at v1 by kubectl works; the garbage collector, which finds an owner through
// the version its owner reference names, deletes a deleted Welcome's Deployment and Service; and
// the namespace controller, which lists every kind the namespace may hold at the versions served,
// deletes the namespace. The CRDs are put back as they were when the spec ends.
func expectTakesTheNextReleasesCRDs(ctx context.Context, namespace string, objects []client.Object) {
	versionsOf := func(g Gomega, obj client.Object) []string {
		gvk, err := apiutil.GVKForObject(obj, k8s.Scheme())
		g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
		meta := &metav1.PartialObjectMetadata{}
		meta.SetGroupVersionKind(schema.GroupVersionKind{Group: gvk.Group, Version: "v1", Kind: gvk.Kind})
		g.ExpectWithOffset(1, k8s.Get(ctx, client.ObjectKeyFromObject(obj), meta)).To(Succeed())
		var versions []string
		for _, e := range meta.ManagedFields {
			versions = append(versions, e.Manager+"@"+e.APIVersion)
		}
		return versions
	}
	var converted []client.Object // the objects of the kinds that move to v1: all but the DeployObject
	for _, obj := range objects {
		if _, ok := obj.(*appv1.DeployObject); !ok {
			converted = append(converted, obj)
		}
	}
	for _, obj := range converted {
		ExpectWithOffset(1, versionsOf(Default, obj)).To(ContainElement(HaveSuffix("/v1alpha1")), "%T %s, as the previous release wrote it", obj, obj.GetName())
	}

	for _, crd := range convertedCRDs {
		setServed(ctx, crd, "v1alpha1", false)
	}
	DeferCleanup(func(ctx SpecContext) {
		for _, crd := range convertedCRDs {
			setServed(ctx, crd, "v1alpha1", true)
		}
	})
	for _, obj := range converted {
		EventuallyWithOffset(1, func(g Gomega) []string { return versionsOf(g, obj) }).WithContext(ctx).WithTimeout(time.Minute).
			ShouldNot(ContainElement(HaveSuffix("/v1alpha1")), "%T %s: its v1alpha1 managedFields entries, dropped by the leader", obj, obj.GetName())
	}

	memcached := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cache.seedlabs.dev/v1", "kind": "Memcached",
		"metadata": map[string]any{"name": "memcached", "namespace": namespace, "labels": map[string]any{"e2e.seedlabs.dev/applied": "next-release"}},
	}}
	ExpectWithOffset(1, k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(memcached), client.FieldOwner("kubectl"))).To(Succeed(), "a server-side apply at v1")

	welcome := &authv1.Welcome{}
	ExpectWithOffset(1, k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "welcome"}, welcome)).To(Succeed())
	var deployments []appsv1.Deployment
	var services []corev1.Service
	EventuallyWithOffset(1, func(g Gomega) {
		deployments, services = ownedBy(ctx, g, welcome)
		g.Expect(deployments).To(HaveLen(1))
		g.Expect(services).To(HaveLen(1))
	}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
	// kube-controller-manager's garbage collector rediscovers the API every 30 s. Once it has, a
	// child owned at a version no longer served is collected at once, its owner taken for gone
	// (a 404 at that version), or never, its owner not mapped (isDangling; docs/upgrade.md): so
	// the children must outlive a rediscovery, and then go with their owner.
	children := []client.Object{&deployments[0], &services[0]}
	ConsistentlyWithOffset(1, func(g Gomega) {
		for _, child := range children {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(child), child)).To(Succeed(), "%T %s", child, child.GetName())
		}
	}).WithContext(ctx).WithTimeout(40*time.Second).WithPolling(2*time.Second).Should(Succeed(), "the Welcome's children, kept while it exists, v1alpha1 not served")
	ExpectWithOffset(1, k8s.Delete(ctx, welcome, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
	// Three minutes: kube-controller-manager's garbage collector follows the CRD changes above in
	// its own time (it rediscovers the API every 30 s) and retries what failed meanwhile with a
	// growing back-off; a CI run once saw the Deployment still there a minute after (not explained).
	for _, child := range children {
		EventuallyWithOffset(1, func() error { return k8s.Get(ctx, client.ObjectKeyFromObject(child), child) }).WithContext(ctx).WithTimeout(3*time.Minute).
			Should(Satisfy(apierrors.IsNotFound), "%T %s (owner references %v), collected once its owner is deleted", child, child.GetName(), child.GetOwnerReferences())
	}

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	ExpectWithOffset(1, k8s.Delete(ctx, ns)).To(Succeed())
	EventuallyWithOffset(1, func() error { return k8s.Get(ctx, client.ObjectKeyFromObject(ns), ns) }).WithContext(ctx).WithTimeout(2*time.Minute).
		Should(Satisfy(apierrors.IsNotFound), "namespace %s, deleted with its objects", namespace)
}

// setServed serves, or stops serving, version of the CRD named name.
func setServed(ctx context.Context, name, version string, served bool) {
	EventuallyWithOffset(1, func(g Gomega) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, crd)).To(Succeed())
		for i := range crd.Spec.Versions {
			if crd.Spec.Versions[i].Name == version {
				crd.Spec.Versions[i].Served = served
			}
		}
		g.Expect(k8s.Update(ctx, crd)).To(Succeed())
	}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed(), "%s %s served: %t", name, version, served)
}

var _ = Describe("Upgrades", func() {
	describeUpgrade("from the previous version (make deploy of an earlier commit, then of this tree)",
		"e2e-upgrade", func() string { return cfg.previous.image },
		func(ctx SpecContext) {
			start := time.Now()
			out, err := makePrevious(ctx, "deploy")
			Expect(err).NotTo(HaveOccurred(), "make deploy of %s:\n%s", cfg.previous.commit, out)
			AddReportEntry("make deploy of the previous version", time.Since(start).Round(time.Millisecond).String())
			DeferCleanup(func(ctx SpecContext) {
				out, err := makeTarget(ctx, "undeploy", "ignore-not-found=true")
				Expect(err).NotTo(HaveOccurred(), "make undeploy:\n%s", out)
			}, NodeTimeout(5*time.Minute))
		},
		func(ctx SpecContext) (string, error) { return makeTarget(ctx, "deploy") }, nil)

	describeUpgrade("with Helm from the previous chart (helm install of an earlier commit's chart, then helm upgrade to this tree's)",
		"e2e-helm-upgrade", func() string { return cfg.previous.chartImage },
		func(ctx SpecContext) {
			repository, tag := splitImage(cfg.previous.chartImage)
			helmInstall(ctx, filepath.Join(cfg.previous.chartTree, "dist", "chart"), "image.repository="+repository, "image.tag="+tag)
		},
		func(ctx SpecContext) (string, error) {
			return helm(ctx, append([]string{"upgrade", release, thisChart(), "--namespace", fixtures.Namespace, "--wait", "--timeout", "4m"},
				chartValues()...)...)
		},
		func(ctx SpecContext) (string, error) {
			// A client-side rollback, as docs/upgrade.md says: Helm 4's server-side apply leaves of
			// each webhook entry v0.1.0 lacks the caBundle cert-manager's CA injector owns, and the
			// API server refuses the configuration.
			return helm(ctx, "rollback", release, "--namespace", fixtures.Namespace, "--server-side=false", "--wait", "--timeout", "4m")
		})

	// The other certificate mode, where the managers inject the CA themselves, with make deploy:
	// its new v1 Welcome entries must have their caBundle before the CRDs serve v1.
	describeUpgrade("from the previous version in self-signed mode (make deploy DEPLOY_CONFIG=self-signed of an earlier commit, then of this tree)",
		"e2e-upgrade-self-signed", func() string { return cfg.previous.image },
		func(ctx SpecContext) {
			out, err := makePrevious(ctx, "deploy", "DEPLOY_CONFIG=self-signed")
			Expect(err).NotTo(HaveOccurred(), "make deploy DEPLOY_CONFIG=self-signed of %s:\n%s", cfg.previous.commit, out)
			DeferCleanup(func(ctx SpecContext) {
				out, err := makeTarget(ctx, "undeploy", "DEPLOY_CONFIG=self-signed", "ignore-not-found=true")
				Expect(err).NotTo(HaveOccurred(), "make undeploy DEPLOY_CONFIG=self-signed:\n%s", out)
			}, NodeTimeout(5*time.Minute))
		},
		func(ctx SpecContext) (string, error) { return makeTarget(ctx, "deploy", "DEPLOY_CONFIG=self-signed") }, nil)
})

// expectStoredAtV1: the previous release stored the objects at v1alpha1; once upgraded, the leader
// stores them again at v1 and trims each CRD's storedVersions to v1 (docs/upgrade.md), the
// controllers own each child at v1, and a Welcome's password, which v1 keeps in an annotation,
// reads back at v1alpha1 as it was written.
func expectStoredAtV1(ctx context.Context, objects []client.Object) {
	for _, crd := range []string{"welcomes.auth.seedlabs.dev", "memcacheds.cache.seedlabs.dev", "admissionpolicies.policy.seedlabs.dev"} {
		EventuallyWithOffset(1, func(g Gomega) []string {
			c := &apiextensionsv1.CustomResourceDefinition{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Name: crd}, c)).To(Succeed())
			return c.Status.StoredVersions
		}).WithContext(ctx).WithTimeout(2*time.Minute).Should(Equal([]string{"v1"}), "%s: the stored versions, once migrated", crd)
	}
	for _, obj := range objects {
		if obj.GetNamespace() == "" {
			continue
		}
		gvk, err := apiutil.GVKForObject(obj, k8s.Scheme())
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
		EventuallyWithOffset(1, func(g Gomega) {
			deployments, services := ownedBy(ctx, g, obj)
			g.Expect(deployments).To(HaveLen(1))
			g.Expect(services).To(HaveLen(1))
			for _, child := range []metav1.Object{&deployments[0], &services[0]} {
				g.Expect(metav1.GetControllerOf(child).APIVersion).To(Equal(gvk.Group+"/v1"), "%s's controller", child.GetName())
			}
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed(), "%T %s", obj, obj.GetName())
	}
	welcome := &authv1alpha1.Welcome{}
	ExpectWithOffset(1, k8s.Get(ctx, client.ObjectKeyFromObject(objects[1]), welcome)).To(Succeed())
	ExpectWithOffset(1, welcome.Spec.Password).To(Equal("hunter2"))
	hub := &authv1.Welcome{}
	ExpectWithOffset(1, k8s.Get(ctx, client.ObjectKeyFromObject(objects[1]), hub)).To(Succeed())
	ExpectWithOffset(1, hub.Annotations).To(HaveKeyWithValue(authv1.ConversionDataAnnotation, `{"spec":{"password":"hunter2"}}`))
}
