package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	authv1alpha1 "github.com/seedlabs/webhook-operator/api/auth/v1alpha1"
	cachev1alpha1 "github.com/seedlabs/webhook-operator/api/cache/v1alpha1"
)

// migrationTimeout bounds how long the leader takes to migrate a handful of objects once their
// CRD's storage version changed: it starts at the change, and each object is one patch.
const migrationTimeout = 30 * time.Second

// The manager's storage migration (internal/operator/storagemigration.go), by the API server:
// these specs store objects at v1alpha1, as the previous release did, then move the CRD's storage
// version to v1 and back, as an upgrade to this release and a rollback would, and
// the manager's leader must store every object at the new version and trim the CRD's stored
// versions to it, through the conversion webhook for Welcome and strategy None for Memcached.
var _ = Describe("The storage migration", Ordered, Label("conversion"), func() {
	for _, tc := range []struct {
		crd    string
		create func(ctx context.Context, ns string, i int) client.Object
		// check holds what a migrated object must still say.
		check func(g Gomega, ctx context.Context, obj client.Object)
	}{{
		crd: "memcacheds.cache.seedlabs.dev",
		create: func(ctx context.Context, ns string, i int) client.Object {
			m := &cachev1alpha1.Memcached{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "migrated-" + string(rune('a'+i))},
				Spec: cachev1alpha1.MemcachedSpec{Size: ptr.To(int32(1 + i%3))}}
			Expect(k8s.Create(ctx, m)).To(Succeed())
			return m
		},
		check: func(g Gomega, ctx context.Context, obj client.Object) {
			m := &cachev1alpha1.Memcached{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(obj), m)).To(Succeed())
			g.Expect(m.Spec).To(Equal(obj.(*cachev1alpha1.Memcached).Spec))
		},
	}, {
		crd: welcomeCRD,
		create: func(ctx context.Context, ns string, i int) client.Object {
			w := &authv1alpha1.Welcome{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "migrated-" + string(rune('a'+i))},
				Spec: authv1alpha1.WelcomeSpec{Name: "Ada", Password: "hunter2"}}
			Expect(k8s.Create(ctx, w)).To(Succeed())
			return w
		},
		check: func(g Gomega, ctx context.Context, obj client.Object) {
			w := &authv1alpha1.Welcome{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(obj), w)).To(Succeed())
			g.Expect(w.Spec.Password).To(Equal("hunter2"), "the password, kept at v1 in the conversion-data annotation")
			hub := &authv1.Welcome{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(obj), hub)).To(Succeed())
			g.Expect(hub.Annotations).To(HaveKeyWithValue(authv1.ConversionDataAnnotation, `{"spec":{"password":"hunter2"}}`))
		},
	}} {
		It("stores every object of "+tc.crd+" at v1 when v1 becomes the storage version, trims the stored versions to v1, and back", func(ctx SpecContext) {
			// As the previous release left them: stored at v1alpha1.
			setStorageVersion(ctx, tc.crd, "v1alpha1")
			DeferCleanup(func(ctx SpecContext) {
				setStorageVersion(ctx, tc.crd, "v1")
				Eventually(func() []string { return crdObject(ctx, tc.crd).Status.StoredVersions }).WithContext(ctx).WithTimeout(migrationTimeout).
					Should(Equal([]string{"v1"}))
			})
			Eventually(func() []string { return crdObject(ctx, tc.crd).Status.StoredVersions }).WithContext(ctx).WithTimeout(migrationTimeout).
				Should(Equal([]string{"v1alpha1"}))
			ns := newNamespace(ctx)
			objects := make([]client.Object, 3)
			for i := range objects {
				objects[i] = tc.create(ctx, ns, i)
			}
			group := crdObject(ctx, tc.crd).Spec.Group
			etcd, err := clientv3.New(clientv3.Config{Endpoints: []string{env.EtcdURL()}, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(etcd.Close)
			for _, obj := range objects {
				Expect(storedAPIVersion(ctx, etcd, tc.crd, obj)).To(Equal(group+"/v1alpha1"), "%s as etcd holds it", obj.GetName())
			}

			// The upgrade to this release, and a rollback.
			for _, version := range []string{"v1", "v1alpha1"} {
				versions := map[string]string{}
				for _, obj := range objects {
					Expect(k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
					versions[obj.GetName()] = obj.GetResourceVersion()
				}
				// Every object is patched: rewritten, or found current or in conflict when the
				// controller wrote it, at the new version, in the meantime; none fails.
				count := func(results ...string) (n float64) {
					for _, r := range results {
						n += counterValue("webhook_operator_storage_migration_objects_total", map[string]string{"crd": tc.crd, "result": r})
					}
					return n
				}
				stored, failed := count("rewritten", "current", "conflict"), count("failed")

				setStorageVersion(ctx, tc.crd, version)
				Eventually(func() []string { return crdObject(ctx, tc.crd).Status.StoredVersions }).WithContext(ctx).WithTimeout(migrationTimeout).
					Should(Equal([]string{version}), "the leader migrates the objects and trims the stored versions")

				// Each object is stored at the new version, as etcd holds it, and means the same.
				for _, obj := range objects {
					Expect(storedAPIVersion(ctx, etcd, tc.crd, obj)).To(Equal(group+"/"+version), "%s as etcd holds it", obj.GetName())
					Expect(k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
					Expect(obj.GetResourceVersion()).NotTo(Equal(versions[obj.GetName()]), "%s was not stored again at %s", obj.GetName(), version)
					tc.check(Default, ctx, obj)
				}
				Expect(count("rewritten", "current", "conflict")).To(BeNumerically(">=", stored+float64(len(objects))))
				Expect(count("failed")).To(Equal(failed))
			}
		}, SpecTimeout(3*migrationTimeout))
	}
})

// crdObject is the CRD named name as the API server holds it.
func crdObject(ctx context.Context, name string) *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	ExpectWithOffset(1, k8s.Get(ctx, client.ObjectKey{Name: name}, crd)).To(Succeed())
	return crd
}

// setStorageVersion makes version of the CRD named name served and its storage version.
func setStorageVersion(ctx context.Context, name, version string) {
	GinkgoHelper()
	updateVersions(ctx, name, func(v *apiextensionsv1.CustomResourceDefinitionVersion) {
		v.Storage = v.Name == version
		v.Served = v.Served || v.Name == version
	})
}

// updateVersions changes every version of the CRD named name with change.
func updateVersions(ctx context.Context, name string, change func(*apiextensionsv1.CustomResourceDefinitionVersion)) {
	GinkgoHelper()
	updateCRD(ctx, name, func(g Gomega, crd *apiextensionsv1.CustomResourceDefinition) {
		g.Expect(slices.ContainsFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == "v1" })).To(BeTrue())
		for i := range crd.Spec.Versions {
			change(&crd.Spec.Versions[i])
		}
	})
}

// updateCRD updates the CRD named name as change makes it, read again and changed again while the
// update conflicts with another writer's.
func updateCRD(ctx context.Context, name string, change func(Gomega, *apiextensionsv1.CustomResourceDefinition)) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		crd := crdObject(ctx, name)
		change(g, crd)
		g.Expect(k8s.Update(ctx, crd)).To(Succeed())
	}).WithContext(ctx).WithTimeout(migrationTimeout).Should(Succeed())
}

// storedAPIVersion is the apiVersion obj, of the CRD named crd, is stored at: kube-apiserver keeps
// a custom resource in etcd as JSON, under /registry/<group>/<plural>/<namespace>/<name>.
func storedAPIVersion(ctx context.Context, etcd *clientv3.Client, crd string, obj client.Object) string {
	plural, group, _ := strings.Cut(crd, ".")
	got, err := etcd.Get(ctx, fmt.Sprintf("/registry/%s/%s/%s/%s", group, plural, obj.GetNamespace(), obj.GetName()))
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	ExpectWithOffset(1, got.Kvs).To(HaveLen(1), "%s/%s in etcd", obj.GetNamespace(), obj.GetName())
	var stored struct {
		APIVersion string `json:"apiVersion"`
	}
	ExpectWithOffset(1, json.Unmarshal(got.Kvs[0].Value, &stored)).To(Succeed())
	return stored.APIVersion
}

// With the conversion webhook down, by the API server: kube-apiserver calls the webhook to read an
// object stored at a version other than the one asked for, so before the migration a LIST at v1
// fails, and after it only one at v1alpha1 does. The Welcome CRD's webhook is pointed at a port
// nothing listens on, as when no replica of the manager is ready, and put back.
var _ = Describe("The conversion webhook down", Ordered, Label("conversion"), func() {
	// recoveryTimeout bounds how long the manager takes to reconcile a new Welcome once the webhook
	// answers again: its Welcome informer lists again after client-go's back-off, which grows to
	// between 30 s and 60 s at its longest (after about 50 s of failures; the outages here are
	// shorter).
	const recoveryTimeout = 90 * time.Second

	It("fails a LIST at v1 of Welcomes stored at v1alpha1, not once the leader has stored them at v1; only v1alpha1 reads fail then; and the controller reconciles again once it is back", func(ctx SpecContext) {
		setStorageVersion(ctx, welcomeCRD, "v1alpha1")
		DeferCleanup(func(ctx SpecContext) {
			setStorageVersion(ctx, welcomeCRD, "v1")
			Eventually(func() []string { return crdObject(ctx, welcomeCRD).Status.StoredVersions }).WithContext(ctx).WithTimeout(migrationTimeout).
				Should(Equal([]string{"v1"}))
		})
		Eventually(func() []string { return crdObject(ctx, welcomeCRD).Status.StoredVersions }).WithContext(ctx).WithTimeout(migrationTimeout).
			Should(Equal([]string{"v1alpha1"}))
		ns := newNamespace(ctx)
		for _, name := range []string{"stored-old-a", "stored-old-b"} {
			Expect(k8s.Create(ctx, &authv1alpha1.Welcome{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: authv1alpha1.WelcomeSpec{Name: "Ada"}})).To(Succeed())
		}
		list := func(list client.ObjectList) func() error {
			return func() error { return k8s.List(ctx, list, client.InNamespace(ns)) }
		}
		down := func() {
			GinkgoHelper()
			restore := pointConversionAt(ctx, "127.0.0.1:1") // refused at once
			DeferCleanup(restore)
		}

		By("before the migration")
		down()
		Eventually(list(&authv1.WelcomeList{})).WithContext(ctx).WithTimeout(migrationTimeout).
			Should(MatchError(ContainSubstring("conversion webhook for auth.seedlabs.dev/v1alpha1, Kind=Welcome failed")), "a LIST at v1")
		Expect(list(&authv1alpha1.WelcomeList{})()).To(Succeed(), "a LIST at the version they are stored at")

		By("the webhook back, the leader stores them at v1")
		pointConversionBack(ctx)
		setStorageVersion(ctx, welcomeCRD, "v1")
		Eventually(func() []string { return crdObject(ctx, welcomeCRD).Status.StoredVersions }).WithContext(ctx).WithTimeout(migrationTimeout).
			Should(Equal([]string{"v1"}))

		By("after the migration")
		down()
		Eventually(list(&authv1alpha1.WelcomeList{})).WithContext(ctx).WithTimeout(migrationTimeout).
			Should(MatchError(ContainSubstring("conversion webhook for auth.seedlabs.dev/v1, Kind=Welcome failed")), "a LIST at v1alpha1")
		welcomes := &authv1.WelcomeList{}
		Expect(list(welcomes)()).To(Succeed(), "a LIST at v1, the version they are stored at")
		Expect(welcomes.Items).To(HaveLen(2))

		By("the webhook back")
		back := time.Now()
		pointConversionBack(ctx)
		Eventually(list(&authv1alpha1.WelcomeList{})).WithContext(ctx).WithTimeout(migrationTimeout).Should(Succeed())
		w := newWelcome(ns, "after-the-outage", authv1.WelcomeSpec{Name: "Grace"})
		Expect(k8s.Create(ctx, w)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(w), w)).To(Succeed())
			g.Expect(w.Status.ObservedGeneration).To(Equal(w.Generation))
		}).WithContext(ctx).WithTimeout(recoveryTimeout).Should(Succeed(), "the Welcome controller reconciles again")
		AddReportEntry("from the webhook back to a new Welcome reconciled", time.Since(back).Round(time.Millisecond).String())
	}, SpecTimeout(5*migrationTimeout))
})

// conversionURL is the Welcome CRD's conversion webhook URL as envtest installed it.
var conversionURL string

// pointConversionAt points the Welcome CRD's conversion webhook at host, and returns what puts it
// back.
func pointConversionAt(ctx context.Context, host string) (restore func(SpecContext)) {
	GinkgoHelper()
	updateCRD(ctx, welcomeCRD, func(g Gomega, crd *apiextensionsv1.CustomResourceDefinition) {
		config := crd.Spec.Conversion.Webhook.ClientConfig
		g.Expect(config.URL).NotTo(BeNil(), "envtest calls the Manager by URL")
		if conversionURL == "" {
			conversionURL = *config.URL
		}
		u, err := url.Parse(*config.URL)
		g.Expect(err).NotTo(HaveOccurred())
		u.Host = host
		config.URL = ptr.To(u.String())
	})
	return pointConversionBack
}

// pointConversionBack points the Welcome CRD's conversion webhook at the Manager again.
func pointConversionBack(ctx SpecContext) {
	GinkgoHelper()
	updateCRD(ctx, welcomeCRD, func(_ Gomega, crd *apiextensionsv1.CustomResourceDefinition) {
		crd.Spec.Conversion.Webhook.ClientConfig.URL = ptr.To(conversionURL)
	})
}
