package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	utiljson "k8s.io/apimachinery/pkg/util/json"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/admission"
	celplugin "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	authv1alpha1 "github.com/seedlabs/webhook-operator/api/auth/v1alpha1"
	cachev1alpha1 "github.com/seedlabs/webhook-operator/api/cache/v1alpha1"
	"github.com/seedlabs/webhook-operator/test/fixtures"
)

// The validating webhooks of Welcome and Memcached are called only when their may-be-refused
// matchCondition holds. These tests evaluate the matchConditions of config/webhook/manifests.yaml
// with kube-apiserver's own compiler and matcher (k8s.io/apiserver), and hold them to the rules:
// whenever Validate<Kind> returns an error or a warning, under the strictest image policy and
// with no image policy at all, the webhook must be called. The envtest suite checks the same
// through the API server for the rules' tables.

// webhookMatcher evaluates one webhook's matchConditions as kube-apiserver does.
type webhookMatcher struct {
	accessor webhook.WebhookAccessor
	compiler celplugin.ConditionCompiler
	gvr      schema.GroupVersionResource
	gvk      schema.GroupVersionKind
}

// validatingMatcher is the matcher of the validating webhook name in config/webhook/manifests.yaml.
func validatingMatcher(tb testing.TB, name string, gvk schema.GroupVersionKind, resource string) *webhookMatcher {
	tb.Helper()
	data, err := os.ReadFile("../config/webhook/manifests.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var config admissionregistrationv1.ValidatingWebhookConfiguration
		if err := yaml.Unmarshal([]byte(doc), &config); err != nil {
			tb.Fatal(err)
		}
		if config.Kind != "ValidatingWebhookConfiguration" {
			continue
		}
		for i := range config.Webhooks {
			if config.Webhooks[i].Name != name {
				continue
			}
			return &webhookMatcher{
				accessor: webhook.NewValidatingWebhookAccessor(name, config.Name, &config.Webhooks[i]),
				compiler: celplugin.NewConditionCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())),
				gvr:      gvk.GroupVersion().WithResource(resource),
				gvk:      gvk,
			}
		}
	}
	tb.Fatalf("no validating webhook %s in config/webhook/manifests.yaml", name)
	return nil
}

// mutatingMatcher is the matcher of the mutating webhook name in config/webhook/manifests.yaml.
func mutatingMatcher(tb testing.TB, name string, gvk schema.GroupVersionKind, resource string) *webhookMatcher {
	tb.Helper()
	data, err := os.ReadFile("../config/webhook/manifests.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var config admissionregistrationv1.MutatingWebhookConfiguration
		if err := yaml.Unmarshal([]byte(doc), &config); err != nil {
			tb.Fatal(err)
		}
		if config.Kind != "MutatingWebhookConfiguration" {
			continue
		}
		for i := range config.Webhooks {
			if config.Webhooks[i].Name != name {
				continue
			}
			return &webhookMatcher{
				accessor: webhook.NewMutatingWebhookAccessor(name, config.Name, &config.Webhooks[i]),
				compiler: celplugin.NewConditionCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())),
				gvr:      gvk.GroupVersion().WithResource(resource),
				gvk:      gvk,
			}
		}
	}
	tb.Fatalf("no mutating webhook %s in config/webhook/manifests.yaml", name)
	return nil
}

// calls reports whether kube-apiserver would call the webhook for op on obj (and old, on an
// update), failing the test when a matchCondition does not evaluate: with failurePolicy Fail that
// refuses the request with an error that is not a field error.
func (m *webhookMatcher) calls(tb testing.TB, op admission.Operation, subresource string, obj, old runtime.Object) bool {
	tb.Helper()
	var versioned [2]*unstructured.Unstructured
	for i, o := range []runtime.Object{obj, old} {
		if o == nil || reflect.ValueOf(o).IsNil() {
			continue
		}
		// kube-apiserver calls a webhook of v1 with a v1alpha1 Welcome converted as the
		// conversion webhook converts it.
		if w, ok := o.(*authv1alpha1.Welcome); ok && m.gvk.Version == authv1.GroupVersion.Version {
			o = welcomeV1(w)
		}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			tb.Fatal(err)
		}
		versioned[i] = &unstructured.Unstructured{Object: u}
	}
	return m.match(tb, op, subresource, versioned[0], versioned[1])
}

// callsJSON is calls for an object as kube-apiserver decodes it from the JSON a client sent,
// with integers as int64, whatever their size, rather than as a typed object.
func (m *webhookMatcher) callsJSON(tb testing.TB, op admission.Operation, obj string) bool {
	tb.Helper()
	u := &unstructured.Unstructured{}
	if err := utiljson.Unmarshal([]byte(obj), &u.Object); err != nil {
		tb.Fatal(err)
	}
	return m.match(tb, op, "", u, nil)
}

func (m *webhookMatcher) match(tb testing.TB, op admission.Operation, subresource string, obj, old *unstructured.Unstructured) bool {
	tb.Helper()
	var versioned [2]runtime.Object
	if obj != nil {
		versioned[0] = obj
	}
	if old != nil {
		versioned[1] = old
	}
	name := ""
	if obj != nil {
		name = obj.GetName()
	}
	attrs := admission.NewAttributesRecord(versioned[0], versioned[1], m.gvk, "default", name, m.gvr, subresource, op,
		nil, false, &user.DefaultInfo{Name: "kubernetes-admin"})
	result := m.accessor.GetCompiledMatcher(m.compiler).Match(context.Background(), &admission.VersionedAttributes{
		Attributes:         attrs,
		VersionedKind:      m.gvk,
		VersionedObject:    admission.NewLazyObject(versioned[0]),
		VersionedOldObject: admission.NewLazyObject(versioned[1]),
	}, nil, nil)
	if result.Error != nil {
		tb.Fatalf("the matchCondition %q of %s does not evaluate: %v", result.FailedConditionName, m.accessor.GetName(), result.Error)
	}
	return result.Matches
}

// oldestSupportedKube is the oldest Kubernetes minor the operator supports
// (docs/kubernetes-versions.md): the one whose kube-apiserver test/tools/kube-oldest builds, for
// make test-oldest-kube to run the envtest suite's admission specs against.
func oldestSupportedKube(tb testing.TB) *version.Version {
	tb.Helper()
	data, err := os.ReadFile("../test/tools/kube-oldest/go.mod")
	if err != nil {
		tb.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*(?:require\s+)?k8s\.io/kubernetes\s+(\S+)`).FindSubmatch(data)
	if m == nil {
		tb.Fatal("test/tools/kube-oldest/go.mod requires no k8s.io/kubernetes")
	}
	v, err := version.ParseGeneric(string(m[1]))
	if err != nil {
		tb.Fatal(err)
	}
	return version.MajorMinor(v.Major(), v.Minor())
}

// matchConditions are the matchConditions of every webhook in config/webhook/manifests.yaml, by
// webhook name.
func matchConditions(tb testing.TB) map[string][]admissionregistrationv1.MatchCondition {
	tb.Helper()
	data, err := os.ReadFile("../config/webhook/manifests.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string][]admissionregistrationv1.MatchCondition{}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var config struct {
			Webhooks []struct {
				Name            string                                   `json:"name"`
				MatchConditions []admissionregistrationv1.MatchCondition `json:"matchConditions"`
			} `json:"webhooks"`
		}
		if err := yaml.Unmarshal([]byte(doc), &config); err != nil {
			tb.Fatal(err)
		}
		for _, w := range config.Webhooks {
			out[w.Name] = w.MatchConditions
		}
	}
	return out
}

// compileAsNewCondition compiles expression as a kube-apiserver of version server validates the
// matchCondition of a webhook configuration it is sent: in the CEL environment of its
// compatibility version (the minor before it) for new expressions.
func compileAsNewCondition(expression string, server *version.Version) error {
	compiler := celplugin.NewCompiler(environment.MustBaseEnvSet(server.SubtractMinor(1)))
	result := compiler.CompileCELExpression(&matchconditions.MatchCondition{Expression: expression},
		celplugin.OptionalVariableDeclarations{HasAuthorizer: true}, environment.NewExpressions)
	if result.Error != nil {
		return result.Error
	}
	return nil
}

// TestMatchConditionsCompileOnTheOldestSupportedKube fails when a matchCondition uses a CEL
// function that the oldest supported kube-apiserver does not offer: it would refuse the webhook
// configuration, and so the install. The tests above evaluate the conditions with this module's
// k8s.io/apiserver, of a newer minor; the envtest suite's admission specs evaluate them with that
// kube-apiserver itself.
func TestMatchConditionsCompileOnTheOldestSupportedKube(t *testing.T) {
	oldest := oldestSupportedKube(t)
	// The test can fail: list.includes came with the lists library of 1.37, so the first
	// kube-apiserver to accept it in a new expression is 1.38, whose compatibility version is 1.37.
	if err := compileAsNewCondition("[1, 2].includes(1)", oldest); err == nil {
		t.Fatalf("a function newer than %s compiles in its environment; the test checks nothing", oldest)
	}
	if err := compileAsNewCondition("[1, 2].includes(1)", version.MajorMinor(1, 38)); err != nil {
		t.Fatalf("list.includes does not compile for 1.38: %v", err)
	}
	checked := 0
	for name, conditions := range matchConditions(t) {
		for _, c := range conditions {
			checked++
			if err := compileAsNewCondition(c.Expression, oldest); err != nil {
				t.Errorf("the matchCondition %q of %s does not compile on Kubernetes %s: %v", c.Name, name, oldest, err)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no matchCondition in config/webhook/manifests.yaml")
	}
	t.Logf("%d matchConditions compile on Kubernetes %s", checked, oldest)
}

var (
	welcomeGVK   = authv1alpha1.GroupVersion.WithKind("Welcome")
	memcachedGVK = cachev1alpha1.GroupVersion.WithKind("Memcached")
	scaleGVK     = schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}
)

// imagePolicies are the policies the may-be-refused conditions must hold under: none, and the
// envtest suite's allow-list.
func imagePolicies(tb testing.TB) []ImagePolicy {
	tb.Helper()
	strict, err := NewImagePolicy(fixtures.AllowedRegistries)
	if err != nil {
		tb.Fatal(err)
	}
	return []ImagePolicy{{}, strict}
}

// requireWelcomeCall fails unless the validating webhook is called for w whenever ValidateWelcome
// finds anything in it, as a create and as an update of old.
func requireWelcomeCall(tb testing.TB, m *webhookMatcher, policies []ImagePolicy, w, old *authv1alpha1.Welcome) {
	tb.Helper()
	if m.calls(tb, admission.Create, "", w, nil) {
		return
	}
	for _, policy := range policies {
		errs, warnings := Welcome.Validate(nil, w, DefaultPolicy(policy))
		if len(errs) > 0 || len(warnings) > 0 {
			tb.Fatalf("the validating webhook is not called for %+v, which it refuses or warns about: %v %v", w, errs, warnings)
		}
		if old != nil {
			if errs, warnings := Welcome.Validate(old, w, DefaultPolicy(policy)); len(errs) > 0 || len(warnings) > 0 {
				tb.Fatalf("the validating webhook is not called for an update to %+v, which it refuses or warns about: %v %v", w, errs, warnings)
			}
		}
	}
}

// requireMemcachedCall is requireWelcomeCall for a Memcached.
func requireMemcachedCall(tb testing.TB, m *webhookMatcher, mc, old *cachev1alpha1.Memcached) {
	tb.Helper()
	if m.calls(tb, admission.Create, "", mc, nil) {
		return
	}
	for _, o := range []*cachev1alpha1.Memcached{nil, old} {
		if errs, warnings := Memcached.Validate(o, mc, nil); len(errs) > 0 || len(warnings) > 0 {
			tb.Fatalf("the validating webhook is not called for %+v (old %+v), which it refuses or warns about: %v %v", mc, o, errs, warnings)
		}
	}
}

// welcomeValidatingMatchers are the matchers of a Welcome's validating webhooks, one for each
// version served; calls sends a v1 webhook a v1alpha1 Welcome converted to v1.
func welcomeValidatingMatchers(tb testing.TB) []*webhookMatcher {
	return []*webhookMatcher{
		validatingMatcher(tb, "vwelcome.auth.seedlabs.dev", welcomeGVK, "welcomes"),
		validatingMatcher(tb, "vwelcome-v1.auth.seedlabs.dev", authv1.GroupVersion.WithKind("Welcome"), "welcomes"),
	}
}

func TestWelcomeMayBeRefused(t *testing.T) {
	for _, m := range welcomeValidatingMatchers(t) {
		t.Run(m.gvk.Version, func(t *testing.T) { testWelcomeMayBeRefused(t, m) })
	}
}

func testWelcomeMayBeRefused(t *testing.T, m *webhookMatcher) {
	policies := imagePolicies(t)
	// valid is a Welcome the webhook admits with no warning, changed by changes.
	valid := func(changes ...func(*authv1alpha1.WelcomeSpec)) *authv1alpha1.Welcome {
		return welcome(append([]func(*authv1alpha1.WelcomeSpec){func(s *authv1alpha1.WelcomeSpec) {
			s.Replicas, s.Port, s.ServiceType = ptr.To[int32](2), ptr.To[int32](8088), corev1.ServiceTypeNodePort
		}}, changes...)...)
	}
	skipped := []struct {
		name string
		w    *authv1alpha1.Welcome
	}{
		{"the defaults", valid()},
		{"every field a valid object may have", valid(func(s *authv1alpha1.WelcomeSpec) {
			s.UserID, s.Groups, s.Email = ptr.To[int32](1815), []string{"engineering", "analysts"}, "ada.lovelace+web@example.co.uk"
			s.Port, s.ServiceType = ptr.To[int32](65535), "LoadBalancer"
		})},
		{"the lowest values", valid(func(s *authv1alpha1.WelcomeSpec) {
			s.UserID, s.Replicas, s.Port, s.ServiceType = ptr.To[int32](1), ptr.To[int32](1), ptr.To[int32](1), "ClusterIP"
		})},
		{"every size limit reached, in bytes of one character each", valid(func(s *authv1alpha1.WelcomeSpec) {
			s.Name, s.Email, s.Groups, s.Replicas = strings.Repeat("n", 256), emailOfBytes(254), fixtures.GroupsOf(32, 256), ptr.To[int32](100)
		})},
		{"names of 256 bytes in 86 characters", valid(func(s *authv1alpha1.WelcomeSpec) {
			s.Name, s.Groups = strings.Repeat("€", 85)+"a", []string{strings.Repeat("€", 85) + "g"}
		})},
	}
	for _, c := range skipped {
		if m.calls(t, admission.Create, "", c.w, nil) {
			t.Errorf("%s: the validating webhook is called for a Welcome it can only admit", c.name)
		}
		requireWelcomeCall(t, m, policies, c.w, nil)
	}

	called := []struct {
		name   string
		change func(*authv1alpha1.Welcome)
	}{
		{"a name that is no DNS-1035 label", func(w *authv1alpha1.Welcome) { w.Name = "hello.world" }},
		{"a name of 64 characters", func(w *authv1alpha1.Welcome) { w.Name = strings.Repeat("a", 64) }},
		{"a blank spec.name", func(w *authv1alpha1.Welcome) { w.Spec.Name = " \t" }},
		{"a spec.name of only punctuation", func(w *authv1alpha1.Welcome) { w.Spec.Name = "¡!" }},
		{"a spec.name of 257 bytes", func(w *authv1alpha1.Welcome) { w.Spec.Name = strings.Repeat("n", 257) }},
		// Of 87 characters, which size() counts as within the limit, and a letter, which passes the
		// check for an empty name.
		{"a spec.name of 259 bytes in 87 characters", func(w *authv1alpha1.Welcome) { w.Spec.Name = strings.Repeat("€", 86) + "a" }},
		{"userID 0", func(w *authv1alpha1.Welcome) { w.Spec.UserID = ptr.To[int32](0) }},
		{"userID 65536", func(w *authv1alpha1.Welcome) { w.Spec.UserID = ptr.To[int32](65536) }},
		{"an empty group", func(w *authv1alpha1.Welcome) { w.Spec.Groups = []string{"a", " "} }},
		{"a duplicate group", func(w *authv1alpha1.Welcome) { w.Spec.Groups = []string{"a", "b", "a"} }},
		{"33 groups", func(w *authv1alpha1.Welcome) { w.Spec.Groups = fixtures.GroupsOf(33, 8) }},
		{"a group of 257 bytes", func(w *authv1alpha1.Welcome) { w.Spec.Groups = []string{"a", strings.Repeat("g", 257)} }},
		{"a group of 259 bytes in 87 characters", func(w *authv1alpha1.Welcome) { w.Spec.Groups = []string{strings.Repeat("€", 86) + "g"} }},
		{"an email of 255 bytes", func(w *authv1alpha1.Welcome) { w.Spec.Email = emailOfBytes(255) }},
		{"an email with a display name", func(w *authv1alpha1.Welcome) { w.Spec.Email = "Ada <ada@example.com>" }},
		{"an email without a domain dot", func(w *authv1alpha1.Welcome) { w.Spec.Email = "ada@localhost" }},
		{"a password, which warns", func(w *authv1alpha1.Welcome) { w.Spec.Password = "hunter2" }},
		{"0 replicas, which warns", func(w *authv1alpha1.Welcome) { w.Spec.Replicas = ptr.To[int32](0) }},
		{"negative replicas", func(w *authv1alpha1.Welcome) { w.Spec.Replicas = ptr.To[int32](-1) }},
		{"101 replicas", func(w *authv1alpha1.Welcome) { w.Spec.Replicas = ptr.To[int32](101) }},
		{"port 0", func(w *authv1alpha1.Welcome) { w.Spec.Port = ptr.To[int32](0) }},
		{"port 65536", func(w *authv1alpha1.Welcome) { w.Spec.Port = ptr.To[int32](65536) }},
		{"an image, which the image policy decides", func(w *authv1alpha1.Welcome) { w.Spec.Image = "ghcr.io/seedlabs/welcome-web:v1" }},
		{"an unsupported serviceType", func(w *authv1alpha1.Welcome) { w.Spec.ServiceType = "ExternalName" }},
	}
	for _, c := range called {
		w := valid()
		c.change(w)
		if !m.calls(t, admission.Create, "", w, nil) {
			t.Errorf("%s: the validating webhook is not called", c.name)
		}
	}
	// A Welcome of groups too many to check within the matchCondition's cost is sent on.
	many := valid(func(s *authv1alpha1.WelcomeSpec) {
		for i := range 33 {
			s.Groups = append(s.Groups, "group-"+string(rune('a'+i%26))+strings.Repeat("x", i))
		}
	})
	if !m.calls(t, admission.Create, "", many, nil) {
		t.Error("a Welcome of 33 groups is not sent to the validating webhook")
	}
}

// TestMayBeRefusedReadsEveryField fails when a field is added to a spec that the may-be-refused
// expression does not read: a rule on it would go unchecked for every object the condition skips.
func TestMayBeRefusedReadsEveryField(t *testing.T) {
	for _, c := range []struct {
		webhook string
		spec    any
	}{
		{"vwelcome.auth.seedlabs.dev", authv1alpha1.WelcomeSpec{}},
		{"vwelcome-v1.auth.seedlabs.dev", authv1.WelcomeSpec{}},
		{"vmemcached.cache.seedlabs.dev", cachev1alpha1.MemcachedSpec{}},
	} {
		m := validatingMatcher(t, c.webhook, welcomeGVK, "welcomes")
		var expression string
		for _, mc := range m.accessor.GetMatchConditions() {
			if mc.Name == "may-be-refused" {
				expression = mc.Expression
			}
		}
		if expression == "" {
			t.Fatalf("%s has no may-be-refused matchCondition", c.webhook)
		}
		typ := reflect.TypeOf(c.spec)
		for i := range typ.NumField() {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			if !strings.Contains(expression, "object.spec."+name) {
				t.Errorf("the may-be-refused condition of %s does not read spec.%s", c.webhook, name)
			}
		}
	}
}

func TestMemcachedMayBeRefused(t *testing.T) {
	m := validatingMatcher(t, "vmemcached.cache.seedlabs.dev", memcachedGVK, "memcacheds")
	for _, size := range []int32{-1, 0, 1, 2, 3, 4, 100} {
		for _, port := range []int32{-1, 0, 1, 11211, 65535, 65536} {
			for _, name := range []string{"cache", "my.cache", strings.Repeat("c", 64)} {
				mc := memcached(ptr.To(size), ptr.To(port))
				mc.Name = name
				for _, old := range []int32{1, 3, 5, size} {
					requireMemcachedCall(t, m, mc, memcached(ptr.To(old), ptr.To(port)))
				}
				wantSkip := size >= 1 && size <= 3 && port >= 1 && port <= 65535 && name == "cache"
				if got := !m.calls(t, admission.Create, "", mc, nil); got != wantSkip {
					t.Errorf("size %d, port %d, name %q: skipped %v, want %v", size, port, name, got, wantSkip)
				}
			}
		}
	}
	if m.calls(t, admission.Create, "", &cachev1alpha1.Memcached{ObjectMeta: memcached(nil, nil).ObjectMeta}, nil) {
		t.Error("a Memcached without a spec, which can only be admitted, is sent to the validating webhook")
	}
}

func TestMemcachedScaleMayBeRefused(t *testing.T) {
	m := validatingMatcher(t, "vmemcachedscale.cache.seedlabs.dev", scaleGVK, "memcacheds")
	for _, replicas := range []int32{-1, 0, 1, 2, 3, 4} {
		for _, old := range []int32{0, 1, 3, 5} {
			scale, oldScale := scaleObject(replicas), scaleObject(old)
			errs, warnings := validateSizeChange(ptr.To(old), ptr.To(replicas), nil)
			calls := m.calls(t, admission.Update, "scale", scale, oldScale)
			if !calls && (len(errs) > 0 || len(warnings) > 0) {
				t.Errorf("a scale from %d to %d is refused or warned about, and the webhook is not called", old, replicas)
			}
			// An unchanged scale is no spec change (spec-changed), which is never refused.
			if calls != (replicas != old && (replicas < 1 || replicas > 3)) {
				t.Errorf("a scale from %d to %d: called %v", old, replicas, calls)
			}
		}
	}
}

// TestMayBeRefusedOnRawJSONNumbers evaluates the conditions on objects as kube-apiserver decodes
// them from a client's JSON, not as typed objects: at and beyond int32's bounds every number
// evaluates without error, and within them (all the schema admits, as
// test/deploy's TestCRDSchemasBoundEveryField holds) the condition decides as
// it does for the typed object, calling the webhook whenever it refuses or warns.
func TestMayBeRefusedOnRawJSONNumbers(t *testing.T) {
	numbers := []int64{math.MinInt32 - 1, math.MinInt32, -1, 0, 1, 3, 4, 100, 101, 8088, 11211, 65535, 65536, math.MaxInt32, math.MaxInt32 + 1, 1<<53 + 1}
	welcomes := validatingMatcher(t, "vwelcome.auth.seedlabs.dev", welcomeGVK, "welcomes")
	memcacheds := validatingMatcher(t, "vmemcached.cache.seedlabs.dev", memcachedGVK, "memcacheds")
	policies := imagePolicies(t)
	checked := 0
	for _, c := range []struct {
		m      *webhookMatcher
		fields []string
		object string
	}{
		{welcomes, []string{"replicas", "port", "userID"},
			`{"apiVersion":"auth.seedlabs.dev/v1alpha1","kind":"Welcome","metadata":{"name":"hello","namespace":"default"},` +
				`"spec":{"name":"Ada","serviceType":"NodePort",%s}}`},
		{memcacheds, []string{"size", "containerPort"},
			`{"apiVersion":"cache.seedlabs.dev/v1alpha1","kind":"Memcached","metadata":{"name":"cache","namespace":"default"},` +
				`"spec":{%s}}`},
	} {
		// Each field takes every number while the others keep a valid value, each written once.
		valid := map[string]int64{"replicas": 2, "port": 8088, "userID": 1000, "size": 1, "containerPort": 11211}
		for _, field := range c.fields {
			for _, n := range numbers {
				var fields []string
				for _, f := range c.fields {
					v := valid[f]
					if f == field {
						v = n
					}
					fields = append(fields, fmt.Sprintf("%q:%d", f, v))
				}
				raw := fmt.Sprintf(c.object, strings.Join(fields, ","))
				calls := c.m.callsJSON(t, admission.Create, raw)
				if n < math.MinInt32 || n > math.MaxInt32 {
					continue // evaluated without error; the schema refuses it
				}
				checked++
				var typed runtime.Object
				if c.m == welcomes {
					w := &authv1alpha1.Welcome{}
					if err := json.Unmarshal([]byte(raw), w); err != nil {
						t.Fatal(err)
					}
					requireWelcomeCall(t, c.m, policies, w, nil)
					typed = w
				} else {
					mc := &cachev1alpha1.Memcached{}
					if err := json.Unmarshal([]byte(raw), mc); err != nil {
						t.Fatal(err)
					}
					requireMemcachedCall(t, c.m, mc, nil)
					typed = mc
				}
				if want := c.m.calls(t, admission.Create, "", typed, nil); calls != want {
					t.Errorf("%s: called %v from the JSON, %v from the typed object", raw, calls, want)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no number within int32 was checked")
	}
}

// FuzzWelcomeMayBeRefused requires of any Welcome that the validating webhook is called whenever
// ValidateWelcome refuses it or warns about it.
func FuzzWelcomeMayBeRefused(f *testing.F) {
	f.Add("welcome-sample", "Ada", "ada@example.com", "engineering", "analysts", "", "", "", int64(1815), int64(1), int64(8088), uint8(0xff))
	f.Add("hello.world", " ", "Ada <ada@example.com>", "a", "a", "hunter2", "nginx:latest", "ExternalName", int64(0), int64(0), int64(0), uint8(0xff))
	f.Add("w", "x", "a.b@c.d", "", "", "", "", "ClusterIP", int64(65535), int64(-1), int64(65536), uint8(0))
	f.Add("limits", strings.Repeat("€", 85)+"a", emailOfBytes(254), strings.Repeat("g", 256), strings.Repeat("€", 85)+"g", "", "", "", int64(1), int64(100), int64(80), uint8(0xff))
	f.Add("past-limits", strings.Repeat("n", 257), emailOfBytes(255), strings.Repeat("g", 257), "", strings.Repeat("p", 257), "", "", int64(1), int64(101), int64(80), uint8(0xff))
	matchers := welcomeValidatingMatchers(f)
	policies := imagePolicies(f)
	f.Fuzz(func(t *testing.T, name, specName, email, group1, group2, password, image, serviceType string, userID, replicas, port int64, set uint8) {
		w := welcome()
		w.Name = name
		w.Spec = authv1alpha1.WelcomeSpec{Name: specName, Email: email, Password: password, Image: image,
			ServiceType: corev1.ServiceType(serviceType)}
		if set&1 != 0 {
			w.Spec.UserID = ptr.To(int32(userID))
		}
		if set&2 != 0 {
			w.Spec.Replicas = ptr.To(int32(replicas))
		}
		if set&4 != 0 {
			w.Spec.Port = ptr.To(int32(port))
		}
		if set&8 != 0 {
			w.Spec.Groups = append(w.Spec.Groups, group1)
		}
		if set&16 != 0 {
			w.Spec.Groups = append(w.Spec.Groups, group2)
		}
		for _, m := range matchers {
			requireWelcomeCall(t, m, policies, w, welcome())
		}
	})
}

// FuzzMemcachedMayBeRefused is FuzzWelcomeMayBeRefused for a Memcached, as a create and as an
// update of a Memcached of size old.
func FuzzMemcachedMayBeRefused(f *testing.F) {
	f.Add("memcached-sample", int64(3), int64(11211), int64(5), uint8(0xff))
	f.Add("cache.local", int64(0), int64(0), int64(0), uint8(0x3))
	m := validatingMatcher(f, "vmemcached.cache.seedlabs.dev", memcachedGVK, "memcacheds")
	f.Fuzz(func(t *testing.T, name string, size, port, old int64, set uint8) {
		mc := memcached(nil, nil)
		mc.Name = name
		if set&1 != 0 {
			mc.Spec.Size = ptr.To(int32(size))
		}
		if set&2 != 0 {
			mc.Spec.ContainerPort = ptr.To(int32(port))
		}
		requireMemcachedCall(t, m, mc, memcached(ptr.To(int32(old)), mc.Spec.ContainerPort))
	})
}

// scaleObject is the Scale of a Memcached of size replicas, as kube-apiserver makes it.
func scaleObject(replicas int32) *autoscalingv1.Scale {
	return &autoscalingv1.Scale{
		TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"},
		ObjectMeta: metav1.ObjectMeta{Name: "cache", Namespace: "default"},
		Spec:       autoscalingv1.ScaleSpec{Replicas: replicas},
	}
}

// TestWelcomeV1PasswordChangeIsJudged: a v1 Welcome keeps v1alpha1's password in its
// conversion-data annotation, so an update that changes only the password leaves the spec as it was;
// its validating webhook is called for it all the same, and not for an update that changes
// nothing it judges.
func TestWelcomeV1PasswordChangeIsJudged(t *testing.T) {
	m := welcomeValidatingMatchers(t)[1]
	old := welcome(func(s *authv1alpha1.WelcomeSpec) { s.Password = "hunter2" })
	tooLong := old.DeepCopy()
	tooLong.Spec.Password = strings.Repeat("p", maxPasswordBytes+1)
	if errs, _ := Welcome.Validate(old, tooLong, DefaultPolicy(ImagePolicy{})); len(errs) == 0 {
		t.Fatal("ValidateWelcome admits a password past its limit; the test needs one it refuses")
	}
	if !m.calls(t, admission.Update, "", tooLong, old) {
		t.Error("an update of a v1 Welcome's password alone is not sent to its validating webhook")
	}
	// An empty annotation added to a Welcome without one, which no conversion writes.
	bare := welcomeV1(welcome())
	empty := bare.DeepCopy()
	empty.Annotations = map[string]string{authv1.ConversionDataAnnotation: ""}
	if errs, _ := WelcomeV1.Validate(bare, empty, DefaultPolicy(ImagePolicy{})); len(errs) == 0 {
		t.Fatal("WelcomeV1 admits an empty conversion-data annotation; the test needs one it refuses")
	}
	if !m.calls(t, admission.Update, "", empty, bare) {
		t.Error("an update adding an empty conversion-data annotation alone is not sent to the validating webhook")
	}
	relabelled := old.DeepCopy()
	relabelled.Labels = map[string]string{"team": "web"}
	if m.calls(t, admission.Update, "", relabelled, old) {
		t.Error("an update of a v1 Welcome's labels is sent to its validating webhook")
	}
}
