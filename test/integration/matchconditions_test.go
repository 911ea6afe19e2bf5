package integration

import (
	"fmt"
	"maps"
	"math"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	cachev1 "github.com/seedlabs/webhook-operator/api/cache/v1"
	policyv1 "github.com/seedlabs/webhook-operator/api/policy/v1"
	"github.com/seedlabs/webhook-operator/test/fixtures"
	"github.com/seedlabs/webhook-operator/webhooks"
)

// webhookCalls is how many requests the in-process webhook server has answered on path, by
// controller-runtime's own counter.
func webhookCalls(path string) float64 {
	GinkgoHelper()
	var total float64
	for _, m := range webhookCounters() {
		if labelValue(m, "webhook") == path {
			total += m.GetCounter().GetValue()
		}
	}
	return total
}

// allWebhookCalls is how many admission requests the in-process webhook server has answered, on
// every path.
func allWebhookCalls() float64 {
	GinkgoHelper()
	var total float64
	for _, calls := range webhookCallsByPath() {
		total += calls
	}
	return total
}

// webhookCallsByPath is how many admission requests the in-process webhook server has answered on
// each path, for a failure to say which webhooks were called. The conversion webhook's calls are
// not admission: kube-apiserver converts whenever it reads or writes an object at another version
// than the one it is stored or asked at, which no matchCondition governs.
func webhookCallsByPath() map[string]float64 {
	GinkgoHelper()
	calls := map[string]float64{}
	for _, m := range webhookCounters() {
		if path := labelValue(m, "webhook"); path != webhooks.ConvertPath {
			calls[path] += m.GetCounter().GetValue()
		}
	}
	return calls
}

// webhookCounters is controller-runtime's request counter of every webhook path, read once no
// request is in flight. A request is counted when its handler returns, which may be after the API
// server had its answer or had given up waiting for it: a call that timed out is still handled,
// and without the wait it would be counted in whatever a spec measures next.
func webhookCounters() []*dto.Metric {
	GinkgoHelper()
	var counters []*dto.Metric
	Eventually(func(g Gomega) {
		families, err := metrics.Registry.Gather()
		g.Expect(err).NotTo(HaveOccurred())
		counters = nil
		var inFlight float64
		for _, f := range families {
			switch f.GetName() {
			case "controller_runtime_webhook_requests_total":
				counters = f.GetMetric()
			case "controller_runtime_webhook_requests_in_flight":
				for _, m := range f.GetMetric() {
					inFlight += m.GetGauge().GetValue()
				}
			}
		}
		g.Expect(inFlight).To(BeZero(), "webhook requests still being handled")
	}).Should(Succeed())
	return counters
}

// webhookLatency is the count and mean of the in-process webhook server's handling time per path,
// by controller-runtime's own histogram, in milliseconds.
func webhookLatency() map[string]string {
	families, err := metrics.Registry.Gather()
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	out := map[string]string{}
	for _, f := range families {
		if f.GetName() != "controller_runtime_webhook_latency_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			h := m.GetHistogram()
			if h.GetSampleCount() == 0 {
				continue
			}
			out[labelValue(m, "webhook")] = fmt.Sprintf("%d requests, mean %.2f ms",
				h.GetSampleCount(), 1000*h.GetSampleSum()/float64(h.GetSampleCount()))
		}
	}
	return out
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

var _ = Describe("The webhook configurations' matchConditions", admission, func() {
	mutate, validate := webhooks.WelcomeV1.MutatePath(), webhooks.WelcomeV1.ValidatePath()

	It("keep requests that cannot change the answer away from the webhooks, and send the others", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		calls := func() [2]float64 { return [2]float64{webhookCalls(mutate), webhookCalls(validate)} }
		w := newWelcome(ns, "quiet", authv1.WelcomeSpec{Name: "Ada"})
		before := calls()
		Expect(k8s.Create(ctx, w)).To(Succeed())
		Expect(calls()).To(Equal(before),
			"a create of a valid object, which the CRD's schema defaults, called a webhook")
		Expect(w.Spec).To(Equal(authv1.WelcomeSpec{Name: "Ada", Replicas: ptr.To(authv1.DefaultReplicas),
			Port: ptr.To(authv1.DefaultPort), ServiceType: authv1.DefaultServiceType}), "the schema's defaults")

		By("editing labels, annotations and finalizers")
		patch := client.MergeFrom(w.DeepCopy())
		w.Labels = map[string]string{"team": "web"}
		w.Annotations = map[string]string{"note": "hello"}
		w.Finalizers = []string{"example.com/hold"}
		Expect(k8s.Patch(ctx, w, patch)).To(Succeed())
		Expect(calls()).To(Equal(before), "a metadata edit called a webhook")

		By("editing the spec to values that can only be admitted")
		patch = client.MergeFrom(w.DeepCopy())
		w.Spec.Name, w.Spec.Port = "Grace", ptr.To[int32](9000)
		w.Finalizers = nil
		Expect(k8s.Patch(ctx, w, patch)).To(Succeed())
		Expect(calls()).To(Equal(before), "a spec edit that may-be-refused passes called a webhook")

		By("editing the spec to values the validating webhook may refuse or warn about")
		// A password, which v1 keeps in the conversion-data annotation, is admitted with a warning;
		// an image is for the image policy to judge.
		for _, edit := range []string{`{"metadata":{"annotations":{"auth.seedlabs.dev/conversion-data":"{\"spec\":{\"password\":\"hunter2\"}}"}}}`,
			`{"spec":{"image":"nginx:1.27"}}`} {
			before = calls()
			Expect(k8s.Patch(ctx, w, client.RawPatch(types.MergePatchType, []byte(edit)))).To(Succeed())
			// At least once, not exactly: when the controller's status write lands between the
			// API server's read and write of this patch, the API server retries the update and
			// admits it again, calling the webhook a second time.
			Expect(webhookCalls(validate)).To(BeNumerically(">=", before[1]+1), "%s must call the validating webhook", edit)
			Expect(webhookCalls(mutate)).To(Equal(before[0]), "%s, which lacks no default, called the mutating webhook", edit)
		}

		By("editing the spec, dropping a default the schema fills again")
		before = calls()
		Expect(k8s.Patch(ctx, w, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"port":null}}`)))).To(Succeed())
		Expect(webhookCalls(mutate)).To(Equal(before[0]), "a default the schema fills called the mutating webhook")
		Expect(w.Spec.Port).To(HaveValue(Equal(authv1.DefaultPort)), "the dropped port is defaulted again")

		By("editing the spec, emptying a default the schema cannot fill")
		before = calls()
		Expect(k8s.Patch(ctx, w, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"serviceType":""}}`)))).To(Succeed())
		Expect(webhookCalls(mutate)).To(BeNumerically(">=", before[0]+1), "an empty serviceType must call the mutating webhook")
		Expect(w.Spec.ServiceType).To(Equal(authv1.DefaultServiceType), "the emptied serviceType is defaulted again")
	})

	// Each case creates an object and says whether it lacks a field its kind's defaulting fills:
	// the mutating webhook must be called for it exactly then, and what the API server stores is
	// the object as Default<Kind> leaves it, either way.
	type defaultsCase struct {
		name   string
		object client.Object
		lacks  bool
		kind   webhooks.AnyKind
	}
	// A Welcome or Memcached the Go types can write lacks no default once the CRD's schema has
	// defaulted it: only JSON reaches the mutating webhook (below).
	welcomeDefaults := func(name string, spec authv1.WelcomeSpec) defaultsCase {
		return defaultsCase{name: "Welcome " + name,
			object: &authv1.Welcome{ObjectMeta: metav1.ObjectMeta{Name: "w-" + name}, Spec: spec},
			kind:   webhooks.WelcomeV1}
	}
	memcachedDefaults := func(name string, spec cachev1.MemcachedSpec) defaultsCase {
		return defaultsCase{name: "Memcached " + name,
			object: &cachev1.Memcached{ObjectMeta: metav1.ObjectMeta{Name: "m-" + name}, Spec: spec},
			kind:   webhooks.MemcachedV1}
	}
	deployObjectDefaults := func(name string, lacks bool, replicas *int32, ports ...corev1.ServicePort) defaultsCase {
		return defaultsCase{name: "DeployObject " + name, lacks: lacks,
			object: &appv1.DeployObject{ObjectMeta: metav1.ObjectMeta{Name: "d-" + name},
				Spec: appv1.DeployObjectSpec{Image: "nginx:1.27", Replicas: replicas, Ports: ports}},
			kind: webhooks.DeployObject}
	}
	complete := func(name string, port int32, target intstr.IntOrString, protocol corev1.Protocol) corev1.ServicePort {
		return corev1.ServicePort{Name: name, Port: port, TargetPort: target, Protocol: protocol}
	}
	web := complete("http", 80, intstr.FromInt32(8080), corev1.ProtocolTCP)
	mutatingPath := map[string]string{
		"Welcome":      mutate,
		"Memcached":    webhooks.MemcachedV1.MutatePath(),
		"DeployObject": webhooks.DeployObject.MutatePath(),
	}

	It("keep every kind's metadata edits away from every webhook, even for objects whose spec edits call them", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		DeferCleanup(deletePolicy)
		// Each object is one whose spec edits call its validating webhook, so that only
		// spec-changed keeps its metadata edits away.
		restore := bypassValidation(ctx, ns)
		outOfRange := newMemcached(ns, "stored-past-admission", ptr.To[int32](5))
		Eventually(func() error { return k8s.Create(ctx, outOfRange) }).Should(Succeed())
		restore()
		objects := []client.Object{
			newWelcome(ns, "with-image", authv1.WelcomeSpec{Name: "Ada", Image: "ghcr.io/seedlabs/welcome-web:v0.2.0"}),
			newDeployObject(ns, "app", "docker.io/library/nginx:1.27", httpPort(8080)),
			&policyv1.AdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: policyv1.PolicyName},
				Spec: policyv1.AdmissionPolicySpec{AllowedRegistries: fixtures.AllowedRegistries}},
		}
		for _, obj := range objects {
			Expect(k8s.Create(ctx, obj)).To(Succeed())
		}
		objects = append(objects, outOfRange)
		for _, obj := range objects {
			before := webhookCallsByPath()
			patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
			obj.SetLabels(map[string]string{"team": "web"})
			obj.SetAnnotations(map[string]string{"note": "hello"})
			obj.SetFinalizers([]string{"example.com/hold"})
			Expect(k8s.Patch(ctx, obj, patch)).To(Succeed())
			patch = client.MergeFrom(obj.DeepCopyObject().(client.Object))
			obj.SetFinalizers(nil)
			Expect(k8s.Patch(ctx, obj, patch)).To(Succeed())
			Expect(webhookCallsByPath()).To(Equal(before), "a metadata edit of %s %s called a webhook", kindOf(obj), obj.GetName())
		}

		By("calling the validating webhooks for a spec edit of the same objects")
		before := allWebhookCalls()
		Expect(k8s.Patch(ctx, objects[1], client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":2}}`)))).To(Succeed())
		Expect(allWebhookCalls()).To(BeNumerically(">", before), "a spec edit of a DeployObject called no webhook")
	})

	It("keep objects that lack no default away from the mutating webhooks, and send the others", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		cases := []defaultsCase{
			welcomeDefaults("complete", authv1.WelcomeSpec{Name: "Ada", Replicas: ptr.To[int32](0), Port: ptr.To[int32](9000),
				ServiceType: corev1.ServiceTypeClusterIP}),
			// The CRD's schema defaults replicas, port and serviceType before admission, as
			// DefaultWelcome would: an object that leaves them out no longer lacks them when admitted.
			welcomeDefaults("no-replicas", authv1.WelcomeSpec{Name: "Ada", Port: ptr.To[int32](9000), ServiceType: corev1.ServiceTypeClusterIP}),
			welcomeDefaults("no-port", authv1.WelcomeSpec{Name: "Ada", Replicas: ptr.To[int32](2), ServiceType: corev1.ServiceTypeClusterIP}),
			welcomeDefaults("no-service-type", authv1.WelcomeSpec{Name: "Ada", Replicas: ptr.To[int32](2), Port: ptr.To[int32](9000)}),
			welcomeDefaults("only-a-name", authv1.WelcomeSpec{Name: "Ada"}),
			memcachedDefaults("complete", cachev1.MemcachedSpec{Size: ptr.To[int32](2), ContainerPort: ptr.To[int32](11311)}),
			memcachedDefaults("no-size", cachev1.MemcachedSpec{ContainerPort: ptr.To[int32](11311)}),
			memcachedDefaults("no-container-port", cachev1.MemcachedSpec{Size: ptr.To[int32](2)}),
			memcachedDefaults("empty", cachev1.MemcachedSpec{}),
			deployObjectDefaults("complete", false, ptr.To[int32](0), web,
				complete("dns", 53, intstr.FromString("dns"), corev1.ProtocolUDP)),
			deployObjectDefaults("no-replicas", false, nil, web),
			// The CRD's schema defaults an absent protocol to TCP (k8s.io/api's default for a
			// ServicePort), before admission: the object no longer lacks it when admitted.
			deployObjectDefaults("port-without-protocol", false, ptr.To[int32](1), web,
				complete("metrics", 9090, intstr.FromInt32(9090), "")),
			// A Go client sends an unset targetPort as 0, kubectl leaves it out: both are unset.
			deployObjectDefaults("port-with-target-port-0", true, ptr.To[int32](1), web,
				complete("metrics", 9090, intstr.FromInt32(0), corev1.ProtocolTCP)),
			deployObjectDefaults("port-with-empty-target-port", true, ptr.To[int32](1), web,
				complete("metrics", 9090, intstr.FromString(""), corev1.ProtocolTCP)),
		}
		for _, c := range cases {
			By(c.name)
			c.object.SetNamespace(ns)
			want := c.object.DeepCopyObject().(client.Object)
			Expect(c.kind.DefaultObject(want)).To(BeTrue(), "a %T is a %s", want, c.kind.Kind())
			path := mutatingPath[kindOf(c.object)]
			before := webhookCalls(path)
			Expect(k8s.Create(ctx, c.object)).To(Succeed())
			if c.lacks {
				Expect(webhookCalls(path)).To(Equal(before+1), "%s lacks a default: the mutating webhook must be called once", c.name)
			} else {
				Expect(webhookCalls(path)).To(Equal(before), "%s lacks no default: the mutating webhook was called", c.name)
			}
			stored := c.object.DeepCopyObject().(client.Object)
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(c.object), stored)).To(Succeed())
			Expect(specOf(stored)).To(Equal(specOf(want)), "%s is not stored as defaulting leaves it", c.name)
		}

		// The Go types leave an empty protocol out, and the CRD's schema defaults an absent one:
		// only an object written as JSON reaches admission with protocol "".
		By("DeployObject port-with-empty-protocol")
		path := mutatingPath["DeployObject"]
		before := webhookCalls(path)
		Expect(k8s.Create(ctx, deployObjectJSON(ns, "d-port-with-empty-protocol",
			map[string]any{"name": "http", "port": int64(80), "targetPort": int64(8080), "protocol": ""}))).To(Succeed())
		Expect(webhookCalls(path)).To(Equal(before+1), "a port with an empty protocol lacks a default: the mutating webhook must be called once")
		stored := &appv1.DeployObject{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "d-port-with-empty-protocol"}, stored)).To(Succeed())
		Expect(stored.Spec.Ports).To(ConsistOf(web))

		By("Welcome with an empty serviceType, which the schema does not default")
		path = mutatingPath["Welcome"]
		before = webhookCalls(path)
		Expect(k8s.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "auth.seedlabs.dev/v1", "kind": "Welcome",
			"metadata": map[string]any{"name": "w-empty-service-type", "namespace": ns},
			"spec":     map[string]any{"name": "Ada", "serviceType": ""},
		}})).To(Succeed())
		Expect(webhookCalls(path)).To(Equal(before+1), "an empty serviceType lacks a default: the mutating webhook must be called once")
		storedWelcome := &authv1.Welcome{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "w-empty-service-type"}, storedWelcome)).To(Succeed())
		Expect(storedWelcome.Spec.ServiceType).To(Equal(authv1.DefaultServiceType))

		By("Memcached without a spec, which the schema does not default")
		path = mutatingPath["Memcached"]
		before = webhookCalls(path)
		Expect(k8s.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "cache.seedlabs.dev/v1", "kind": "Memcached",
			"metadata": map[string]any{"name": "m-no-spec", "namespace": ns},
		}})).To(Succeed())
		Expect(webhookCalls(path)).To(Equal(before+1), "a Memcached without a spec lacks defaults: the mutating webhook must be called once")
		storedMemcached := &cachev1.Memcached{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "m-no-spec"}, storedMemcached)).To(Succeed())
		want := &cachev1.Memcached{}
		webhooks.MemcachedV1.Default(want)
		Expect(storedMemcached.Spec).To(Equal(want.Spec))

		By("DeployObject with a null port, which the matchConditions send on and validation refuses")
		path = mutatingPath["DeployObject"]
		before = webhookCalls(path)
		err := k8s.Create(ctx, deployObjectJSON(ns, "d-null-port", nil))
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		Expect(causes(err)).To(ConsistOf("spec.ports[0].port", "spec.ports[0].targetPort"))
		Expect(webhookCalls(path)).To(Equal(before+1), "a null port lacks a default: the mutating webhook must be called once")
	})

	// A kube-apiserver before 1.36 does not enforce a schema's int32 format, and a number beyond
	// int32 is no violation to a may-be-refused condition on any version: only the int32 range
	// that the schema states as its own minimum and maximum (test/deploy) keeps such an object
	// from being stored past a skipped validating webhook, where the controller could not decode it.
	// From 1.36 the API server refuses the format as well, in a second cause.
	It("refuse by the schema, before any webhook, a number beyond int32 in every field a may-be-refused condition reads", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		for _, c := range []struct {
			apiVersion, kind string
			// spec is complete and valid, so that neither lacks-a-default nor may-be-refused calls a webhook.
			spec map[string]any
			// scaleReplicas is the field the scale subresource reads, which the API server holds
			// to a non-negative int32 on every version, in a cause of its own.
			scaleReplicas string
		}{
			{"auth.seedlabs.dev/v1", "Welcome",
				map[string]any{"name": "Ada", "replicas": int64(2), "port": int64(8088), "userID": int64(1000), "serviceType": "NodePort"}, ""},
			{"cache.seedlabs.dev/v1", "Memcached", map[string]any{"size": int64(1), "containerPort": int64(11211)}, "size"},
		} {
			for _, field := range slices.Sorted(maps.Keys(c.spec)) {
				if _, number := c.spec[field].(int64); !number {
					continue
				}
				for _, n := range []int64{math.MinInt32 - 1, math.MaxInt32 + 1} {
					spec := maps.Clone(c.spec)
					spec[field] = n
					obj := &unstructured.Unstructured{Object: map[string]any{
						"apiVersion": c.apiVersion, "kind": c.kind,
						"metadata": map[string]any{"name": "beyond-int32", "namespace": ns},
						"spec":     spec,
					}}
					what := fmt.Sprintf("%s spec.%s %d", c.kind, field, n)
					before := allWebhookCalls()
					err := k8s.Create(ctx, obj)
					Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: want 422 Invalid, got %v", what, err)
					bound := fmt.Sprintf("spec.%s: Invalid value: %d: spec.%s in body should be less than or equal to %d", field, n, field, math.MaxInt32)
					if n < 0 {
						bound = fmt.Sprintf("spec.%s: Invalid value: %d: spec.%s in body should be greater than or equal to %d", field, n, field, math.MinInt32)
					}
					Expect(err.Error()).To(ContainSubstring(bound), "%s", what)
					want := []string{"spec." + field}
					if field == c.scaleReplicas {
						want = append(want, ".spec."+field)
					}
					if env.ServerVersion.AtLeast(int32FormatEnforced) {
						want = append(want, "<nil>") // the format's own cause names no field
						Expect(err.Error()).To(ContainSubstring("Checked value must be of type integer with format int32 in spec."+field), "%s", what)
					}
					Expect(causes(err)).To(ConsistOf(want), "%s: %v", what, err)
					Expect(allWebhookCalls()).To(Equal(before), "%s reached a webhook", what)
					Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopy()))).To(BeTrue(), "%s was stored", what)
				}
			}
		}
	})
})

// int32FormatEnforced is the first kube-apiserver version that refuses a number beyond a CRD
// schema's int32 format.
var int32FormatEnforced = version.MajorMinor(1, 36)

// deployObjectJSON is a DeployObject of image nginx:1.27 and one replica with the one port given,
// as JSON the Go types could not write.
func deployObjectJSON(ns, name string, port map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "app.seedlabs.dev/v1", "kind": "DeployObject",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"image": "nginx:1.27", "replicas": int64(1), "ports": []any{port}},
	}}
}

// kindOf is the kind of a typed object of the scheme.
func kindOf(obj client.Object) string {
	gvk, err := apiutil.GVKForObject(obj, k8s.Scheme())
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return gvk.Kind
}

// specOf is the spec of one of the three kinds.
func specOf(obj client.Object) any {
	switch o := obj.(type) {
	case *authv1.Welcome:
		return o.Spec
	case *cachev1.Memcached:
		return o.Spec
	case *appv1.DeployObject:
		return o.Spec
	}
	Fail(fmt.Sprintf("no spec for %T", obj))
	return nil
}
