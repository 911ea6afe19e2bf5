package webhooks

import (
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
)

// TestRefusalEvents sends reviews to the Welcome's validating webhook, and requires a Warning
// Event for each refusal that is not a dry run, regarding the refused object, naming its rules.
func TestRefusalEvents(t *testing.T) {
	recorder := events.NewFakeRecorder(10)
	recorder.Verbose = true
	h := admissionWebhooks(testScheme, Options{Recorder: recorder})[welcomeKind.validate]
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
