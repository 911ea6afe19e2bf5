package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	authv1alpha1 "github.com/seedlabs/webhook-operator/api/auth/v1alpha1"
	"github.com/seedlabs/webhook-operator/internal/controller/welcome"
	"github.com/seedlabs/webhook-operator/internal/convert"
	"github.com/seedlabs/webhook-operator/test/testenv"
	"github.com/seedlabs/webhook-operator/webhooks"
)

// welcomeCRD is the Welcome CRD's name.
const welcomeCRD = "welcomes.auth.seedlabs.dev"

// Welcome converts through the Manager's /convert, by the API server: config/crd serves both
// versions and stores v1, so every write and read at v1alpha1 is converted.
var _ = Describe("Welcome's conversion webhook", Ordered, Label("conversion"), func() {
	BeforeAll(func(ctx SpecContext) {
		crd := welcomeCRDObject(ctx)
		strategy, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "strategy")
		Expect(strategy).To(Equal("Webhook"), "envtest points a CRD whose versions convert at the Manager's /convert")
		Expect(versionFlags(crd)).To(Equal(map[string]string{"v1alpha1": "served", "v1": "served, storage"}), "config/crd's Welcome versions")
	})

	It("keeps a v1alpha1 password at v1 in the conversion-data annotation, shows neither at the other version, and loses nothing through a v1 update", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		calls := webhookCalls(webhooks.ConvertPath)
		old := &authv1alpha1.Welcome{ObjectMeta: metav1.ObjectMeta{Name: "converted", Namespace: ns},
			Spec: authv1alpha1.WelcomeSpec{Name: "Ada", Password: "hunter2", Groups: []string{"admins"}}}
		Expect(k8s.Create(ctx, old)).To(Succeed())

		read := &authv1.Welcome{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(old), read)).To(Succeed())
		Expect(read.Annotations).To(HaveKeyWithValue(authv1.ConversionDataAnnotation, `{"spec":{"password":"hunter2"}}`))
		Expect(read.Spec).To(Equal(authv1.WelcomeSpec{Name: "Ada", Groups: []string{"admins"}, Replicas: ptr.To[int32](1), Port: ptr.To[int32](8088), ServiceType: "NodePort"}))
		raw := &unstructured.Unstructured{}
		raw.SetGroupVersionKind(authv1.GroupVersion.WithKind("Welcome"))
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(old), raw)).To(Succeed())
		Expect(raw.Object["spec"]).NotTo(HaveKey("password"), "v1 has no spec.password")

		Expect(update(ctx, read, func() { read.Spec.Replicas = ptr.To[int32](2) })).To(Succeed(), "an update at v1, with the annotation it read")

		back := &authv1alpha1.Welcome{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(old), back)).To(Succeed())
		Expect(back.Spec.Password).To(Equal("hunter2"))
		Expect(back.Spec.Replicas).To(HaveValue(BeEquivalentTo(2)))
		Expect(back.Annotations).NotTo(HaveKey(authv1.ConversionDataAnnotation), "the v1alpha1 view does not show the annotation")
		Expect(webhookCalls(webhooks.ConvertPath)).To(BeNumerically(">", calls), "the API server called /convert")
	})

	It("stores a v1 Welcome, admitted by the v1 webhooks, and reads it at either version", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		created := &authv1.Welcome{ObjectMeta: metav1.ObjectMeta{Name: "from-v1", Namespace: ns}, Spec: authv1.WelcomeSpec{Name: "Grace"}}
		Expect(k8s.Create(ctx, created)).To(Succeed())
		Expect(created.Spec.Port).To(HaveValue(BeEquivalentTo(8088)), "v1's schema defaults")

		old := &authv1alpha1.Welcome{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(created), old)).To(Succeed())
		Expect(old.Spec).To(Equal(authv1alpha1.WelcomeSpec{Name: "Grace", Replicas: ptr.To[int32](1), Port: ptr.To[int32](8088), ServiceType: "NodePort"}))
		Expect(old.Annotations).To(BeEmpty())

		refused := &authv1.Welcome{ObjectMeta: metav1.ObjectMeta{Name: "refused", Namespace: ns}, Spec: authv1.WelcomeSpec{Name: "Grace", Port: ptr.To[int32](70000)}}
		err := k8s.Create(ctx, refused)
		Expect(err).To(MatchError(ContainSubstring("spec.port")), "the validating webhook judges a v1 Welcome as it judges a v1alpha1 one")
	})

	It("serves a LIST page at v1alpha1 larger than a ConversionReview the webhook reads: kube-apiserver does not send the page in one review", func(ctx SpecContext) {
		// Its Welcomes, their children and their deletion are a hundred reconciles and more: the
		// spec ends once the Welcome controller is done with them (registered before the namespace,
		// so run after its deletion), lest the next spec's Welcome wait behind them (on a loaded
		// machine, CI saw one get no status in 20 s).
		DeferCleanup(awaitControllerIdle, welcome.ControllerName)
		ns := newNamespace(ctx)
		const welcomes, padBytes = 40, 200 << 10 // 8 MB in all, past MaxConversionReviewBytes
		pad := strings.Repeat("x", padBytes)
		for i := range welcomes {
			w := newWelcome(ns, fmt.Sprintf("large-%d", i), authv1.WelcomeSpec{Name: "Ada"}) // at v1, stored without a conversion
			w.Annotations = map[string]string{"example.com/pad": pad}
			Expect(k8s.Create(ctx, w)).To(Succeed())
		}
		Expect(welcomes * padBytes).To(BeNumerically(">", webhooks.MaxConversionReviewBytes))
		calls := webhookCalls(webhooks.ConvertPath)
		list := &authv1alpha1.WelcomeList{}
		Expect(k8s.List(ctx, list, client.InNamespace(ns), client.Limit(500))).To(Succeed())
		Expect(list.Items).To(HaveLen(welcomes))
		for _, w := range list.Items {
			Expect(w.Annotations).To(HaveKeyWithValue("example.com/pad", pad))
		}
		AddReportEntry("ConversionReviews of the LIST (kube-apiserver may reuse conversions it made before)", webhookCalls(webhooks.ConvertPath)-calls)
	})

	It("would take a page of 500 Welcomes as kubectl applies and the controller reports them in one ConversionReview, within the size the webhook reads", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		root, err := testenv.ModuleRoot()
		Expect(err).NotTo(HaveOccurred())
		sample := readSample(filepath.Join(root, "config", "samples", "auth_v1_welcome.yaml"))
		sample.SetNamespace(ns)
		sample.SetAnnotations(map[string]string{"kubectl.kubernetes.io/last-applied-configuration": mustJSON(sample.Object)})
		Expect(k8s.Create(ctx, sample, client.FieldOwner("kubectl-client-side-apply"))).To(Succeed(), "as kubectl apply creates it")
		// As the API server sends it: stored, with its managed fields and the controller's status.
		stored := &unstructured.Unstructured{}
		stored.SetGroupVersionKind(sample.GroupVersionKind())
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(sample), stored)).To(Succeed())
			conditions, _, _ := unstructured.NestedSlice(stored.Object, "status", "conditions")
			g.Expect(conditions).To(HaveLen(4), "Ready, Reconciling, Stalled and Compliant")
		}).WithContext(ctx).Should(Succeed())
		page := make([]string, 500) // client-go's and kubectl's page size
		for i := range page {
			page[i] = mustJSON(stored.Object)
		}
		review := conversionReviewBytes("auth.seedlabs.dev/v1", page)
		AddReportEntry("a Welcome as stored", fmt.Sprintf("%d bytes", len(page[0])))
		AddReportEntry("a ConversionReview of 500 of them", fmt.Sprintf("%d bytes, %.0f%% of the %d the webhook reads",
			review, 100*float64(review)/webhooks.MaxConversionReviewBytes, webhooks.MaxConversionReviewBytes))
		Expect(review).To(BeNumerically("<", webhooks.MaxConversionReviewBytes/2), "a page of typical Welcomes fits twice over")
	})

	It("is recorded by kube-apiserver in the series WebhookOperatorConversionFailing reads", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		w := newWelcomeV1alpha1(ns, "counted", authv1alpha1.WelcomeSpec{Name: "Ada"})
		Expect(k8s.Create(ctx, w)).To(Succeed())
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(w), &authv1.Welcome{})).To(Succeed())
		clientset, err := kubernetes.NewForConfig(env.Config)
		Expect(err).NotTo(HaveOccurred())
		data, err := clientset.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.Split(string(data), "\n")).To(ContainElement(MatchRegexp(
			`^apiserver_crd_conversion_webhook_duration_seconds_count\{crd_name="welcomes\.auth\.seedlabs\.dev",from_version="v1alpha1",succeeded="true",to_version="v1"\} [1-9]`)))
	})

	It("refuses a malformed conversion-data annotation at admission, and, stored past the webhook, ignores and counts it, failing no write and no list", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		before := counterValue("webhook_operator_conversion_data_malformed_total", nil)
		bad := &authv1.Welcome{ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: ns,
			Annotations: map[string]string{authv1.ConversionDataAnnotation: "{not json", "kept": "yes"}}, Spec: authv1.WelcomeSpec{Name: "Lin"}}
		err := k8s.Create(ctx, bad.DeepCopy())
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		Expect(causes(err)).To(ConsistOf("metadata.annotations[auth.seedlabs.dev/conversion-data]"))
		Expect(err.Error()).To(ContainSubstring("(rule welcome.conversion-data.valid)"))
		Expect(err.Error()).NotTo(ContainSubstring("{not json"), "the annotation's value is not echoed")

		restore := bypassValidation(ctx, ns)
		Eventually(func() error { return k8s.Create(ctx, bad) }).WithContext(ctx).Should(Succeed())
		restore()
		Expect(k8s.Create(ctx, &authv1.Welcome{ObjectMeta: metav1.ObjectMeta{Name: "good", Namespace: ns}, Spec: authv1.WelcomeSpec{Name: "Lin"}})).To(Succeed())

		for _, list := range []client.ObjectList{&authv1alpha1.WelcomeList{}, &authv1.WelcomeList{}} {
			Expect(k8s.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			Expect(metaNames(list)).To(ConsistOf("bad", "good"))
		}
		old := &authv1alpha1.Welcome{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "bad"}, old)).To(Succeed())
		Expect(old.Spec.Password).To(BeEmpty())
		Expect(old.Annotations).To(Equal(map[string]string{"kept": "yes"}))
		Expect(counterValue("webhook_operator_conversion_data_malformed_total", nil)).To(BeNumerically(">", before))
	})

	It("takes from kubectl webhook-operator convert a manifest that makes at v1 the Welcome the original makes at v1alpha1", func(ctx SpecContext) {
		original := []byte(`apiVersion: auth.seedlabs.dev/v1alpha1
kind: Welcome
metadata: {name: converted-manifest, annotations: {team: web}}
spec: {name: Ada, password: hunter2, groups: [admins], email: ada@example.com, replicas: 2, serviceType: ClusterIP}
`)
		var converted bytes.Buffer
		n, err := convert.Manifest(bytes.NewReader(original), &converted)
		Expect(err).NotTo(HaveOccurred())
		Expect(n).To(Equal(1))
		asWritten, asConverted := newNamespace(ctx), newNamespace(ctx)
		for ns, manifest := range map[string][]byte{asWritten: original, asConverted: converted.Bytes()} {
			obj := &unstructured.Unstructured{}
			Expect(yaml.Unmarshal(manifest, &obj.Object)).To(Succeed())
			obj.SetNamespace(ns)
			Expect(k8s.Create(ctx, obj)).To(Succeed())
		}
		Expect(converted.String()).To(HavePrefix("apiVersion: auth.seedlabs.dev/v1\n"))
		for _, version := range []string{"v1alpha1", "v1"} {
			read := func(ns string) *unstructured.Unstructured {
				obj := &unstructured.Unstructured{}
				obj.SetGroupVersionKind(authv1.GroupVersion.WithKind("Welcome"))
				obj.SetAPIVersion("auth.seedlabs.dev/" + version)
				Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "converted-manifest"}, obj)).To(Succeed())
				return obj
			}
			a, b := read(asWritten), read(asConverted)
			Expect(b.Object["spec"]).To(Equal(a.Object["spec"]), "spec at %s", version)
			Expect(b.GetAnnotations()).To(Equal(a.GetAnnotations()), "annotations at %s", version)
		}
	})
})

// welcomeCRDObject is the Welcome CRD as the API server holds it.
func welcomeCRDObject(ctx context.Context) *unstructured.Unstructured {
	crd := &unstructured.Unstructured{}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	ExpectWithOffset(1, k8s.Get(ctx, client.ObjectKey{Name: welcomeCRD}, crd)).To(Succeed())
	return crd
}

// versionFlags is each version of crd, "served" or "not served", and ", storage".
func versionFlags(crd *unstructured.Unstructured) map[string]string {
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	flags := map[string]string{}
	for _, v := range versions {
		v := v.(map[string]any)
		f := "not served"
		if v["served"] == true {
			f = "served"
		}
		if v["storage"] == true {
			f += ", storage"
		}
		flags[v["name"].(string)] = f
	}
	return flags
}

// metaNames are the names of list's items.
func metaNames(list client.ObjectList) []string {
	items, err := meta.ExtractList(list)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	names := make([]string, 0, len(items))
	for _, item := range items {
		names = append(names, item.(client.Object).GetName())
	}
	return names
}

// mustJSON is v as JSON.
func mustJSON(v any) string {
	data, err := json.Marshal(v)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return string(data)
}

// conversionReviewBytes is the size of the ConversionReview kube-apiserver sends to convert
// objects to desired.
func conversionReviewBytes(desired string, objects []string) int {
	review := apiextensionsv1.ConversionReview{Request: &apiextensionsv1.ConversionRequest{UID: "u", DesiredAPIVersion: desired}}
	review.APIVersion, review.Kind = "apiextensions.k8s.io/v1", "ConversionReview"
	for _, o := range objects {
		review.Request.Objects = append(review.Request.Objects, runtime.RawExtension{Raw: []byte(o)})
	}
	data, err := json.Marshal(review)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return len(data)
}
