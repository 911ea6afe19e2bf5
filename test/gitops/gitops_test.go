package gitops

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// welcome is a Welcome at generation 3 with the status given, nil for none.
func welcome(st map[string]any) *unstructured.Unstructured {
	obj := map[string]any{
		"apiVersion": "auth.seedlabs.dev/v1alpha1",
		"kind":       "Welcome",
		"metadata":   map[string]any{"name": "hello", "namespace": "demo", "generation": int64(3)},
		"spec":       map[string]any{"name": "Ada"},
	}
	if st != nil {
		obj["status"] = st
	}
	return &unstructured.Unstructured{Object: obj}
}

func observed(generation int64, conditions ...map[string]any) map[string]any {
	list := make([]any, len(conditions))
	for i, c := range conditions {
		list[i] = c
	}
	return map[string]any{"observedGeneration": generation, "conditions": list}
}

func condition(conditionType, status, reason, message string) map[string]any {
	return map[string]any{"type": conditionType, "status": status, "reason": reason, "message": message, "observedGeneration": int64(3)}
}

// TestVerdicts holds the health check to kstatus on the states the operator reports, and shows
// the one where they differ: an object with no status at all, which the CRDs' default status
// (observedGeneration 0) keeps the API server from ever serving.
func TestVerdicts(t *testing.T) {
	ready := condition("Ready", "True", "RolledOut", "2 of 2 replicas available")
	notReconciling := condition("Reconciling", "False", "RolledOut", "the Deployment runs the current spec with 2 replicas")
	notStalled := condition("Stalled", "False", "AsExpected", "")
	tests := []struct {
		name        string
		obj         *unstructured.Unstructured
		kstatus     status.Status
		argoCD      string
		argoMessage string
	}{
		{
			name: "stored, not reported on yet: the default status", obj: welcome(map[string]any{"observedGeneration": int64(0)}),
			kstatus: status.InProgressStatus, argoCD: Progressing, argoMessage: "Waiting for the operator to report on generation 3",
		},
		{
			name: "a spec edit not reported on yet", obj: welcome(observed(2, ready, notReconciling, notStalled)),
			kstatus: status.InProgressStatus, argoCD: Progressing, argoMessage: "Waiting for the operator to report on generation 3",
		},
		{
			name: "rolling out",
			obj: welcome(observed(3,
				condition("Ready", "False", "ReplicasUnavailable", "0 of 2 replicas available"),
				condition("Reconciling", "True", "Reconciling", "rolling out 2 replicas: 2 running, 2 updated, 0 available"),
				notStalled)),
			kstatus: status.InProgressStatus, argoCD: Progressing, argoMessage: "Reconciling: rolling out 2 replicas: 2 running, 2 updated, 0 available",
		},
		{
			name: "stalled",
			obj: welcome(observed(3,
				condition("Ready", "False", "InvalidSpec", "the spec is not rolled out until it is fixed"),
				condition("Reconciling", "False", "InvalidSpec", "the spec is not rolled out until it is fixed"),
				condition("Stalled", "True", "InvalidSpec", "spec.port: Invalid value: 70000: must be between 1 and 65535"))),
			kstatus: status.FailedStatus, argoCD: Degraded, argoMessage: "InvalidSpec: spec.port: Invalid value: 70000: must be between 1 and 65535",
		},
		{
			name: "ready", obj: welcome(observed(3, ready, notReconciling, notStalled, condition("Compliant", "False", "RulesBroken", "breaks welcome.email.format (Warn)"))),
			kstatus: status.CurrentStatus, argoCD: Healthy, argoMessage: "RolledOut: 2 of 2 replicas available",
		},
		{
			name:    "not ready, nothing in progress nor stalled",
			obj:     welcome(observed(3, condition("Ready", "False", "ReplicasUnavailable", "1 of 2 replicas available"), notStalled)),
			kstatus: status.InProgressStatus, argoCD: Progressing, argoMessage: "ReplicasUnavailable: 1 of 2 replicas available",
		},
		{
			name: "no status at all: kstatus takes it for Current, the health check does not",
			obj:  welcome(nil), kstatus: status.CurrentStatus, argoCD: Progressing, argoMessage: "Waiting for the operator to report on generation 3",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Judge(tt.obj)
			if err != nil {
				t.Fatal(err)
			}
			if v.KStatus != tt.kstatus || v.ArgoCD != tt.argoCD || v.ArgoCDMessage != tt.argoMessage {
				t.Errorf("verdict %s, want kstatus %s, Argo CD %s (%s)", v, tt.kstatus, tt.argoCD, tt.argoMessage)
			}
			if tt.obj.Object["status"] != nil && !v.Agree() {
				t.Errorf("kstatus and Argo CD disagree: %s", v)
			}
		})
	}
}

// TestRunHealthScriptAsArgoCD checks that scripts run with what Argo CD gives a health check and
// nothing more: a script that reaches for the string library, which Argo CD does not open for
// health checks, fails here too.
func TestRunHealthScriptAsArgoCD(t *testing.T) {
	obj := welcome(nil)
	if _, _, err := RunHealthScript(`return { status = string.format("%s", "Healthy") }`, obj); err == nil || !strings.Contains(err.Error(), "string") {
		t.Errorf("a script calling string.format: %v, want it to fail", err)
	}
	if _, _, err := RunHealthScript(`return { status = "Fine" }`, obj); err == nil {
		t.Error("a script returning status Fine: no error, want one: Argo CD knows no such status")
	}
	if health, _, err := RunHealthScript(`local t = {} table.insert(t, obj.metadata.name) return { status = "Healthy", message = t[1] }`, obj); err != nil || health != Healthy {
		t.Errorf("a script using the table library: %s, %v; want Healthy", health, err)
	}
}
