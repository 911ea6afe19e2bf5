package webhooks

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
)

func TestRefusalListsAtMostMaxListed(t *testing.T) {
	errsOf := func(n int) field.ErrorList {
		var errs field.ErrorList
		for i := range n {
			errs = append(errs, field.Duplicate(field.NewPath("spec", "groups").Index(i), "a"))
		}
		return errs
	}
	tests := []struct {
		name       string
		violations int
		want       []metav1.StatusCause
	}{
		{name: "one", violations: 1, want: []metav1.StatusCause{{Type: "FieldValueDuplicate", Message: `Duplicate value: "a"`, Field: "spec.groups[0]"}}},
		{name: "as many as are listed", violations: MaxListed},
		{name: "one more than are listed", violations: MaxListed + 1, want: []metav1.StatusCause{{Type: "FieldValueTooMany",
			Message: "Too many: 1: more violations from here on are not listed: a refusal lists the first 100; fix those and send it again to see the rest",
			Field:   "spec.groups[100]"}}},
		{name: "forty thousand", violations: 40000, want: []metav1.StatusCause{{Type: "FieldValueTooMany",
			Message: "Too many: 39900: more violations from here on are not listed: a refusal lists the first 100; fix those and send it again to see the rest",
			Field:   "spec.groups[100]"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs := errsOf(tc.violations)
			status := Refusal(schema.GroupKind{Group: "auth.seedlabs.dev", Kind: "Welcome"}, "w", errs).Status()
			causes := status.Details.Causes
			if want := min(tc.violations, MaxListed+1); len(causes) != want {
				t.Fatalf("%d causes for %d violations, want %d", len(causes), tc.violations, want)
			}
			if len(tc.want) > 0 {
				if diff := cmp.Diff(tc.want, causes[len(causes)-len(tc.want):]); diff != "" {
					t.Errorf("the last causes (-want +got):\n%s", diff)
				}
			}
			if tc.violations > MaxListed && !strings.HasSuffix(status.Message, "fix those and send it again to see the rest]") {
				t.Errorf("the message does not end in the count of the rest: ...%s", status.Message[max(0, len(status.Message)-200):])
			}
			if len(errs) != tc.violations {
				t.Errorf("Refusal changed the list it was given: %d violations left of %d", len(errs), tc.violations)
			}
		})
	}
}

func TestListedWarnings(t *testing.T) {
	warningsOf := func(n int) []Warning {
		var w []Warning
		for i := range n {
			w = append(w, Warning{Rule: WelcomeReplicasZero, Message: fmt.Sprintf("warning %d", i)})
		}
		return w
	}
	if got := ListedWarnings(warningsOf(MaxListed)); len(got) != MaxListed {
		t.Errorf("%d warnings of %d", len(got), MaxListed)
	}
	got := ListedWarnings(warningsOf(250))
	if len(got) != MaxListed+1 || got[MaxListed-1] != "warning 99 (rule welcome.replicas.zero)" || got[MaxListed] != "and 150 more warnings, not listed: an answer carries the first 100" {
		t.Errorf("250 warnings listed as %d, ending %q", len(got), got[len(got)-2:])
	}
}

// TestAnswersAreBounded holds the answers of the webhooks to MaxListed violations and warnings,
// however many an object breaks.
func TestAnswersAreBounded(t *testing.T) {
	handlers := fuzzHandlers(t)
	welcome := `{"apiVersion":"auth.seedlabs.dev/v1alpha1","kind":"Welcome","metadata":{"name":"w"},` +
		`"spec":{"name":"n","replicas":1,"port":8088,"serviceType":"NodePort","groups":[` + repeated(`"a"`, 1000) + `]}}`
	reply := review(t, handlers[welcomeKind.validate], welcomeKind, fuzzStrict, admissionv1.Create, []byte(welcome), nil)
	if reply.Allowed || reply.Result.Details == nil {
		t.Fatalf("1,000 duplicate groups are not refused with causes: %v", reply.Result)
	}
	if got := len(reply.Result.Details.Causes); got != MaxListed+1 {
		t.Errorf("the refusal of 999 duplicates and a size violation carries %d causes, want %d", got, MaxListed+1)
	}
	if last := reply.Result.Details.Causes[MaxListed]; last.Type != "FieldValueTooMany" || !strings.HasPrefix(last.Message, "Too many: 900: ") {
		t.Errorf("the last cause is %+v, want the count of the 900 left out", last)
	}
}

// TestNoWorkAfterTheRequestEnds serves a refusal whose request has ended, as when kube-apiserver
// gave up waiting: it records no Event and counts no decision.
func TestNoWorkAfterTheRequestEnds(t *testing.T) {
	recorder := events.NewFakeRecorder(10)
	h := admissionWebhooks(testScheme, Options{Recorder: recorder, Namespaces: everyNamespace})[welcomeKind.validate]
	h.WithRecoverPanic(false)
	req := welcomeRequest(admissionv1.Create, invalidWelcome, "")
	req.Namespace = "shop"
	decided := func() float64 {
		return testutil.ToFloat64(decisions.WithLabelValues("Welcome", "CREATE", "denied"))
	}
	before := decided()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if resp := h.Handle(ctx, req); resp.Allowed {
		t.Fatal("an invalid Welcome is allowed")
	}
	if got := len(recorder.Events); got != 0 {
		t.Errorf("%d Events recorded for a request that had ended", got)
	}
	if got := decided() - before; got != 0 {
		t.Errorf("%v decisions counted for a request that had ended", got)
	}
	h.Handle(context.Background(), req)
	if got := len(recorder.Events); got != 1 || decided()-before != 1 {
		t.Errorf("the same request, not ended, recorded %d Events and counted %v decisions, want 1 and 1", got, decided()-before)
	}
}

// TestRefusalQuotesLongValuesInPart: a bad value longer than maxQuotedValue is quoted in part,
// with the count of the rest, and the caller's list is left as it was.
func TestRefusalQuotesLongValuesInPart(t *testing.T) {
	long := strings.Repeat("g", 5000)
	errs := field.ErrorList{field.Duplicate(field.NewPath("spec", "groups").Index(1), long)}
	status := Refusal(schema.GroupKind{Group: "auth.seedlabs.dev", Kind: "Welcome"}, "w", errs).Status()
	cause := status.Details.Causes[0].Message
	if len(cause) > maxQuotedValue+64 || !strings.HasSuffix(cause, `more bytes"`) {
		t.Errorf("the cause of a 5,000-byte value is %d bytes: %q", len(cause), cause[max(0, len(cause)-60):])
	}
	if errs[0].BadValue != long {
		t.Error("Refusal changed the violation it was given")
	}
}
