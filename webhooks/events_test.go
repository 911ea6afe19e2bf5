package webhooks

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
)

// TestRefusalEvents sends reviews to the Welcome's validating webhook, and requires a Warning
// Event for each refusal that is not a dry run, regarding the refused object, naming its rules.
func TestRefusalEvents(t *testing.T) {
	recorder := events.NewFakeRecorder(10)
	recorder.Verbose = true
	h := admissionWebhooks(testScheme, Options{Recorder: recorder, Namespaces: everyNamespace})[welcomeKind.validate]
	h.WithRecoverPanic(false)
	const meta = `"apiVersion":"auth.seedlabs.dev/v1alpha1","kind":"Welcome","metadata":{"name":"greeting","namespace":"shop"}`
	bad := `{` + meta + `,"spec":{"name":"x","port":0}}`

	dryRun := welcomeRequest(admissionv1.Create, bad, "")
	dryRun.Namespace, dryRun.DryRun = "shop", ptr.To(true)
	admit(t, h, dryRun)
	allowed := welcomeRequest(admissionv1.Create, `{`+meta+`,"spec":{"name":"x"}}`, "")
	allowed.Namespace = "shop"
	admit(t, h, allowed)
	refused := welcomeRequest(admissionv1.Create, bad, "")
	refused.Namespace = "shop"
	admit(t, h, refused)

	close(recorder.Events)
	var got []string
	for e := range recorder.Events {
		got = append(got, e)
	}
	if len(got) != 1 {
		t.Fatalf("%d Events, want 1 (one refusal): %q", len(got), got)
	}
	for _, e := range got {
		for _, want := range []string{
			"Warning AdmissionRefused Create create refused: spec.port: Invalid value: 0: must be between 1 and 65535 (rule welcome.port.range)",
			" {kind=Welcome,apiVersion=auth.seedlabs.dev/v1alpha1}",
		} {
			if !strings.Contains(e, want) {
				t.Errorf("the Event %q does not say %q", e, want)
			}
		}
	}
}

// TestRefusalEventsAreBounded records refusals under new names, as generateName makes them, and
// requires each namespace to record no more than its burst at once and one more per period, and
// all namespaces together no more than theirs.
func TestRefusalEventsAreBounded(t *testing.T) {
	recorder := events.NewFakeRecorder(1000)
	r := newRefusalEvents(recorder, everyNamespace)
	now := time.Unix(0, 0)
	r.now = func() time.Time { return now }
	refused := field.ErrorList{field.Invalid(field.NewPath("spec", "port"), 0, "must be between 1 and 65535")}
	refuse := func(namespace string, n int) {
		for i := range n {
			r.record(context.Background(), denial{gvk: welcomeGVK, namespace: namespace, name: fmt.Sprintf("probe-%d", i), operation: "CREATE"}, refused)
		}
	}
	recorded := func() int {
		n := len(recorder.Events)
		for range n {
			<-recorder.Events
		}
		return n
	}
	suppressed := func() float64 { return testutil.ToFloat64(refusalEventsSuppressed) }

	before := suppressed()
	refuse("shop", 300)
	if got := recorded(); got != refusalEventBurst {
		t.Errorf("300 refusals at once in one namespace recorded %d Events, want %d", got, refusalEventBurst)
	}
	if got := suppressed() - before; got != 300-refusalEventBurst {
		t.Errorf("%v refusals counted as suppressed, want %d", got, 300-refusalEventBurst)
	}
	refuse("cart", 1)
	if got := recorded(); got != 1 {
		t.Errorf("another namespace recorded %d Events, want 1: one namespace's flood takes nothing from it", got)
	}
	now = now.Add(refusalEventEvery)
	refuse("shop", 300)
	if got := recorded(); got != 1 {
		t.Errorf("%v later, 300 more refusals recorded %d Events, want 1", refusalEventEvery, got)
	}

	now = now.Add(time.Hour)
	for i := range 2 * refusalEventsBurst {
		refuse(fmt.Sprintf("ns-%d", i), 1)
	}
	if got := recorded(); got != refusalEventsBurst {
		t.Errorf("refusals in %d namespaces at once recorded %d Events, want %d", 2*refusalEventsBurst, got, refusalEventsBurst)
	}
	now = now.Add(time.Second)
	for i := range 2 * refusalEventsBurst {
		refuse(fmt.Sprintf("other-%d", i), 1)
	}
	if got := recorded(); got != refusalEventsPerSecond {
		t.Errorf("a second later, refusals in %d new namespaces recorded %d Events, want %d", 2*refusalEventsBurst, got, refusalEventsPerSecond)
	}
}

// everyNamespace knows every namespace, with no labels.
var everyNamespace = namespaceLabelsFunc(func(string) map[string]string { return nil })

// knownNamespaces knows the namespaces it holds, with no labels.
type knownNamespaces map[string]bool

func (k knownNamespaces) NamespaceLabels(_ context.Context, name string) (map[string]string, error) {
	if !k[name] {
		return nil, fmt.Errorf("namespace %s is not known", name)
	}
	return nil, nil
}

func (k knownNamespaces) HasNamespace(_ context.Context, name string) bool { return k[name] }

// TestRefusalEventsOnlyWhereTheyCanBe sends refusals as anyone who can reach the webhook can send
// them, and requires an Event only for an object the API server could have sent: in a namespace the
// manager knows, under a name the API server accepts; the others are counted as suppressed.
func TestRefusalEventsOnlyWhereTheyCanBe(t *testing.T) {
	recorder := events.NewFakeRecorder(10)
	r := newRefusalEvents(recorder, knownNamespaces{"shop": true})
	refused := field.ErrorList{field.Invalid(field.NewPath("spec", "port"), 0, "must be between 1 and 65535")}
	before := testutil.ToFloat64(refusalEventsSuppressed)
	for _, d := range []denial{
		{gvk: welcomeGVK, namespace: "kube-system", name: "probe", operation: "CREATE"},
		{gvk: welcomeGVK, namespace: "invented-12345", name: "probe", operation: "CREATE"},
		{gvk: welcomeGVK, namespace: "shop", name: strings.Repeat("x", 254), operation: "CREATE"},
		{gvk: welcomeGVK, namespace: "shop", name: "Not A Name", operation: "CREATE"},
		{gvk: welcomeGVK, namespace: "shop", name: "probe", operation: "CREATE"},
	} {
		r.record(context.Background(), d, refused)
	}
	if got := len(recorder.Events); got != 1 {
		t.Errorf("%d Events, want 1: only the refusal of probe in the known namespace shop", got)
	}
	if got := testutil.ToFloat64(refusalEventsSuppressed) - before; got != 4 {
		t.Errorf("%v refusals counted as suppressed, want 4", got)
	}
	if newRefusalEvents(recorder, nil) != nil {
		t.Error("a manager that knows no namespaces records Events")
	}
}
