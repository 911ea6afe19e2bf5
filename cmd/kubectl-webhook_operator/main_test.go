package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "github.com/seedlabs/webhook-operator/api/policy/v1"
	"github.com/seedlabs/webhook-operator/internal/lint"
	"github.com/seedlabs/webhook-operator/test/fixtures"
	"github.com/seedlabs/webhook-operator/webhooks"
)

// lintRun runs the plugin with args and stdin and returns its exit status and output.
func lintRun(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestLintValidSamples(t *testing.T) {
	code, stdout, stderr := lintRun(t, "", "lint", "-f", "../../config/samples")
	if code != exitValid {
		t.Fatalf("exit %d for the valid samples; stderr:\n%s", code, stderr)
	}
	files, err := filepath.Glob("../../config/samples/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(stdout, " valid\n"); got != len(files) {
		t.Errorf("%d objects valid, want one per sample (%d):\n%s", got, len(files), stdout)
	}
	if !strings.Contains(stdout, "welcome.auth.seedlabs.dev/welcome-sample valid\n") {
		t.Errorf("the Welcome sample is not named as kubectl names it:\n%s", stdout)
	}
	if stderr != "" {
		t.Errorf("valid samples wrote to stderr:\n%s", stderr)
	}
}

// TestLintInvalidSamples lints each invalid sample alone: each is refused, naming exactly the
// fields fixtures.RefusedSamples says the API server names.
func TestLintInvalidSamples(t *testing.T) {
	files, err := filepath.Glob("../../config/samples/invalid/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(fixtures.RefusedSamples) {
		t.Fatalf("%d invalid samples, %d in fixtures.RefusedSamples", len(files), len(fixtures.RefusedSamples))
	}
	for _, file := range files {
		code, stdout, stderr := lintRun(t, "", "lint", "-o", "json", "-f", file)
		if code != exitInvalid {
			t.Errorf("%s: exit %d, want %d; stderr: %s", file, code, exitInvalid, stderr)
		}
		var report struct {
			Summary lint.Summary  `json:"summary"`
			Results []lint.Result `json:"results"`
		}
		if err := json.Unmarshal([]byte(stdout), &report); err != nil {
			t.Fatalf("%s: the JSON output does not decode: %v\n%s", file, err, stdout)
		}
		if report.Summary != (lint.Summary{Invalid: 1}) || len(report.Results) != 1 {
			t.Fatalf("%s: %+v, want one invalid object", file, report)
		}
		var fields []string
		for _, v := range report.Results[0].Violations {
			fields = append(fields, v.Field)
		}
		if diff := cmp.Diff(fixtures.RefusedSamples[filepath.Base(file)], fields, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
			t.Errorf("%s: the fields named (-want +got):\n%s", file, diff)
		}
	}
}

func TestLintText(t *testing.T) {
	manifest := `# two Welcomes, one at the deprecated v1alpha1, and something else
apiVersion: auth.seedlabs.dev/v1alpha1
kind: Welcome
metadata: {name: ok}
spec: {name: Ada, password: hunter2}
---
apiVersion: auth.seedlabs.dev/v1
kind: Welcome
metadata: {name: bad}
spec: {name: Ada, port: 0, userID: 0}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
`
	code, stdout, stderr := lintRun(t, manifest, "lint", "-f", "-")
	if code != exitInvalid {
		t.Errorf("exit %d, want %d", code, exitInvalid)
	}
	wantOut := "welcome.auth.seedlabs.dev/ok valid\nconfigmap/settings skipped: not a kind webhook-operator admits\n"
	if stdout != wantOut {
		t.Errorf("stdout (-want +got):\n%s", cmp.Diff(wantOut, stdout))
	}
	wantErr := "Warning: auth.seedlabs.dev/v1alpha1 Welcome is deprecated; use auth.seedlabs.dev/v1 (kubectl webhook-operator convert)\n" +
		"Warning: spec.password is stored unencrypted in etcd and shown to anyone who can read this Welcome; " +
		"keep secrets in a Secret instead (rule welcome.password.plaintext)\n" +
		"-: The Welcome \"bad\" is invalid: \n" +
		"* spec.userID: Invalid value: 0: must be between 1 and 65535 when set (rule welcome.user-id.range)\n" +
		"* spec.port: Invalid value: 0: must be between 1 and 65535 (rule welcome.port.range)\n"
	if stderr != wantErr {
		t.Errorf("stderr (-want +got):\n%s", cmp.Diff(wantErr, stderr))
	}
}

func TestLintRefusesWhatTheAPIServerCannotDecode(t *testing.T) {
	for _, c := range []struct {
		name, manifest, want string
	}{
		{"an unknown field", "apiVersion: cache.seedlabs.dev/v1\nkind: Memcached\nmetadata: {name: m}\nspec: {size: 1, sise: 2}\n",
			`strict decoding error: unknown field "spec.sise"`},
		{"a duplicate field", "apiVersion: cache.seedlabs.dev/v1\nkind: Memcached\nmetadata: {name: m}\nspec: {size: 1}\nspec: {size: 2}\n",
			`key "spec" already set in map`},
		{"a string for a number", "apiVersion: cache.seedlabs.dev/v1\nkind: Memcached\nmetadata: {name: m}\nspec: {size: two}\n",
			`cannot unmarshal string`},
	} {
		code, _, stderr := lintRun(t, c.manifest, "lint")
		if code == exitValid || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d, stderr %q, want a refusal containing %q", c.name, code, stderr, c.want)
		}
	}
}

func TestLintList(t *testing.T) {
	list := `{"apiVersion": "v1", "kind": "List", "items": [
		{"apiVersion": "cache.seedlabs.dev/v1", "kind": "Memcached", "metadata": {"name": "a"}, "spec": {"size": 2}},
		{"apiVersion": "v1", "kind": "List", "items": [
			{"apiVersion": "cache.seedlabs.dev/v1", "kind": "Memcached", "metadata": {"name": "b"}, "spec": {"size": 4}}]}]}`
	code, stdout, stderr := lintRun(t, list, "lint", "-o", "json")
	if code != exitInvalid {
		t.Errorf("exit %d, want %d; stderr %s", code, exitInvalid, stderr)
	}
	var report struct {
		Summary lint.Summary  `json:"summary"`
		Results []lint.Result `json:"results"`
	}
	if err := json.Unmarshal([]byte(stdout), &report); err != nil {
		t.Fatal(err)
	}
	if report.Summary != (lint.Summary{Valid: 1, Invalid: 1}) {
		t.Errorf("summary %+v, want one valid and one invalid", report.Summary)
	}
	if len(report.Results) == 2 && (report.Results[1].Name != "b" || report.Results[1].Document != 1 || report.Results[1].Item != "items[1].items[0]") {
		t.Errorf("the item of the list in the list is reported as %+v", report.Results[1])
	}
}

func TestLintAllowedRegistries(t *testing.T) {
	manifest := "apiVersion: app.seedlabs.dev/v1\nkind: DeployObject\nmetadata: {name: d}\nspec: {image: 'quay.io/team/app:1.0', ports: [{port: 80}]}\n"
	if code, _, stderr := lintRun(t, manifest, "lint"); code != exitValid {
		t.Errorf("with no allow-list: exit %d: %s", code, stderr)
	}
	code, _, stderr := lintRun(t, manifest, "lint", "--allowed-registries=docker.io,ghcr.io")
	if code != exitInvalid || !strings.Contains(stderr, "spec.image") {
		t.Errorf("with an allow-list without quay.io: exit %d: %s", code, stderr)
	}
}

func TestLintUsage(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"apply"},
		{"lint", "-o", "yaml"},
		{"lint", "-f", "does-not-exist.yaml"},
		{"lint", "stray-argument"},
		{"lint", "--allowed-registries=UPPER CASE"},
	} {
		if code, _, _ := lintRun(t, "", args...); code != exitUsage {
			t.Errorf("%q: exit %d, want %d", args, code, exitUsage)
		}
	}
	for _, manifest := range []string{"not: [a, kubernetes object", "just: a map\n", "[1, 2]\n"} {
		if code, _, stderr := lintRun(t, manifest, "lint"); code != exitInvalid || !strings.Contains(stderr, "error parsing document 1") {
			t.Errorf("%q: exit %d, stderr %q; want a refusal of the document", manifest, code, stderr)
		}
	}
	empty := filepath.Join(t.TempDir(), "empty.yaml")
	if err := os.WriteFile(empty, []byte("# nothing\n---\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, stdout, _ := lintRun(t, "", "lint", "-f", empty, "-o", "json"); code != exitValid || !strings.Contains(stdout, `"results": []`) {
		t.Errorf("a file of comments: exit %d, %s", code, stdout)
	}
}

// TestLintUnderAPolicy lints config/samples/invalid under config/samples/policy's AdmissionPolicy
// and policies of its own: a Warned rule admits with a warning, an Audited one lists the rule,
// a namespace override applies with the namespace's labels, and a contract rule always refuses.
func TestLintUnderAPolicy(t *testing.T) {
	const latest = "apiVersion: app.seedlabs.dev/v1\nkind: DeployObject\nmetadata: {name: moving}\nspec: {image: 'nginx:latest', ports: [{port: 80}]}\n"
	sample := "../../config/samples/policy/admissionpolicy.yaml"

	code, stdout, stderr := lintRun(t, latest, "lint", "--policy", sample)
	if code != exitValid || !strings.Contains(stderr, "Warning: spec.image: Invalid value: \"nginx:latest\"") ||
		!strings.HasSuffix(strings.TrimSpace(stderr), "(rule deployobject.image.pinned)") || !strings.Contains(stdout, "deployobject.app.seedlabs.dev/moving valid") {
		t.Errorf("a Warned rule: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if code, _, stderr := lintRun(t, latest, "lint", "--policy", sample, "--namespace-labels", "env=prod"); code != exitInvalid ||
		!strings.Contains(stderr, "(rule deployobject.image.pinned)") {
		t.Errorf("the rule Enforced in env=prod: exit %d, stderr %q", code, stderr)
	}

	audit := filepath.Join(t.TempDir(), "audit.yaml")
	if err := os.WriteFile(audit, []byte("apiVersion: policy.seedlabs.dev/v1alpha1\nkind: AdmissionPolicy\nmetadata: {name: cluster}\n"+
		"spec: {rules: [{id: welcome.user-id.range, action: Audit}]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, _ = lintRun(t, "", "lint", "--policy", audit, "-o", "json", "-f", "../../config/samples/invalid/welcome-userid.yaml")
	if code != exitValid || !strings.Contains(stdout, `"audited": [`) || !strings.Contains(stdout, `"welcome.user-id.range"`) {
		t.Errorf("an Audited rule: exit %d, %s", code, stdout)
	}
	if code, _, stderr := lintRun(t, "", "lint", "--policy", audit, "-f", "../../config/samples/invalid/welcome-port.yaml"); code != exitInvalid ||
		!strings.Contains(stderr, "(rule welcome.port.range)") {
		t.Errorf("a contract rule the policy does not list: exit %d, stderr %q", code, stderr)
	}

	relaxed := filepath.Join(t.TempDir(), "relaxed.yaml")
	if err := os.WriteFile(relaxed, []byte("apiVersion: policy.seedlabs.dev/v1alpha1\nkind: AdmissionPolicy\nmetadata: {name: cluster}\n"+
		"spec: {rules: [{id: welcome.port.range, action: Warn}]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := lintRun(t, "", "lint", "--policy", relaxed); code != exitUsage || !strings.Contains(stderr, "is a contract rule") {
		t.Errorf("a policy that relaxes a contract rule: exit %d, stderr %q", code, stderr)
	}

	// A policy that names no registries takes --allowed-registries, as the manager takes its flag;
	// one whose allowedRegistries is [] allows any.
	const nginx = "apiVersion: app.seedlabs.dev/v1\nkind: DeployObject\nmetadata: {name: web, namespace: default}\n" +
		"spec: {image: 'nginx:1.27', ports: [{name: http, port: 80}]}\n"
	for _, tc := range []struct {
		spec string
		want int
	}{
		{"spec: {rules: [{id: welcome.email.format, action: Audit}]}", exitInvalid},
		{"spec: {allowedRegistries: [], rules: [{id: welcome.email.format, action: Audit}]}", exitValid},
		{"spec: {allowedRegistries: [docker.io]}", exitValid},
	} {
		policy := filepath.Join(t.TempDir(), "policy.yaml")
		if err := os.WriteFile(policy, []byte("apiVersion: policy.seedlabs.dev/v1alpha1\nkind: AdmissionPolicy\nmetadata: {name: cluster}\n"+
			tc.spec+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := lintRun(t, nginx, "lint", "--policy", policy, "--allowed-registries", "ghcr.io")
		if code != tc.want || (tc.want == exitInvalid && !strings.Contains(stderr, "allowed registries: ghcr.io")) {
			t.Errorf("%s with --allowed-registries ghcr.io: exit %d, want %d; stderr %q", tc.spec, code, tc.want, stderr)
		}
	}
}

// TestRules lists the rules as JSON and holds each rule's allowed actions to what the
// AdmissionPolicy's webhook accepts.
func TestRules(t *testing.T) {
	code, stdout, stderr := lintRun(t, "", "rules", "-o", "json")
	if code != exitValid {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rules []struct {
		ID      string   `json:"id"`
		Allowed []string `json:"allowedActions"`
	}
	if err := json.Unmarshal([]byte(stdout), &rules); err != nil {
		t.Fatal(err)
	}
	if len(rules) != len(webhooks.Rules()) {
		t.Fatalf("%d rules listed, %d registered", len(rules), len(webhooks.Rules()))
	}
	for _, r := range rules {
		for _, action := range []policyv1.Action{policyv1.Enforce, policyv1.Warn, policyv1.Audit} {
			p := &policyv1.AdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: policyv1.PolicyName},
				Spec: policyv1.AdmissionPolicySpec{Rules: []policyv1.RulePolicy{{ID: r.ID, Action: action}}}}
			accepted := len(webhooks.ValidateAdmissionPolicy(p)) == 0
			if listed := slices.Contains(r.Allowed, string(action)); listed != accepted {
				t.Errorf("%s: %s is listed %v, accepted by the policy's webhook %v", r.ID, action, listed, accepted)
			}
		}
	}
	if code, stdout, _ := lintRun(t, "", "rules"); code != exitValid || !strings.Contains(stdout, "welcome.port.range") {
		t.Errorf("rules as text: exit %d, %s", code, stdout)
	}
}

// TestVersion: kubectl webhook-operator version prints what the build stamped (go test stamps
// nothing: dev, unknown); make release checks the stamped release binaries.
func TestVersion(t *testing.T) {
	for _, arg := range []string{"version", "--version"} {
		code, stdout, _ := lintRun(t, "", arg)
		if want := "kubectl-webhook_operator dev (commit unknown)\n"; code != exitValid || stdout != want {
			t.Errorf("%s: exit %d, %q; want %q", arg, code, stdout, want)
		}
	}
	if code, _, _ := lintRun(t, "", "version", "extra"); code != exitUsage {
		t.Errorf("version extra: exit %d, want %d", code, exitUsage)
	}
}

// TestLintNamespaces: objects go to -n's namespace unless they name one (which, with -n given,
// must be -n's), those in kube-system and --operator-namespace are unchecked, and
// kubernetes.io/metadata.name is the namespace's name, never a --namespace-labels label.
func TestLintNamespaces(t *testing.T) {
	const bad = "apiVersion: auth.seedlabs.dev/v1\nkind: Welcome\nmetadata: {name: bad, namespace: kube-system}\nspec: {name: Ada, port: 0}\n" +
		"---\napiVersion: auth.seedlabs.dev/v1\nkind: Welcome\nmetadata: {name: bad}\nspec: {name: Ada, port: 0}\n"
	code, _, stderr := lintRun(t, bad, "lint", "--operator-namespace", "ops", "-n", "ops")
	if want := "-: error: the namespace from the provided object \"kube-system\" does not match the namespace \"ops\". " +
		"You must pass '--namespace=kube-system' to perform this operation.\n"; code != exitInvalid || stderr != want {
		t.Errorf("-n ops with an object in kube-system: exit %d, stderr (-want +got):\n%s", code, cmp.Diff(want, stderr))
	}
	code, stdout, stderr := lintRun(t, bad, "lint", "--operator-namespace", "ops")
	if code != exitInvalid {
		t.Errorf("exit %d, want %d", code, exitInvalid)
	}
	if want := "welcome.auth.seedlabs.dev/bad unchecked: the API server does not call webhook-operator's webhooks for objects in namespace kube-system\n"; stdout != want {
		t.Errorf("stdout (-want +got):\n%s", cmp.Diff(want, stdout))
	}
	if want := "-: The Welcome \"bad\" is invalid: spec.port: Invalid value: 0: must be between 1 and 65535 (rule welcome.port.range)\n"; stderr != want {
		t.Errorf("stderr (-want +got):\n%s", cmp.Diff(want, stderr))
	}
	code, stdout, _ = lintRun(t, bad, "lint", "--operator-namespace", "ops", "--namespace", "ops", "-o", "json")
	if code != exitInvalid || !strings.Contains(stdout, `"invalid": 1,`) || !strings.Contains(stdout, `"unchecked": 1`) {
		t.Errorf("--namespace ops, the operator's: exit %d, %s", code, stdout)
	}
	code, stdout, _ = lintRun(t, bad, "lint", "--operator-namespace", "ops", "-n", "kube-system", "-o", "json")
	if code != exitValid || !strings.Contains(stdout, `"unchecked": 2`) {
		t.Errorf("-n kube-system: exit %d, %s", code, stdout)
	}

	for _, args := range [][]string{
		{"--namespace-labels", "kubernetes.io/metadata.name=prod"},
		{"-n", "Not_A_Namespace"},
		{"--operator-namespace", ""},
	} {
		if code, _, stderr := lintRun(t, bad, append([]string{"lint"}, args...)...); code != exitUsage || !strings.Contains(stderr, "error: --") {
			t.Errorf("%q: exit %d, stderr %q; want %d", args, code, stderr, exitUsage)
		}
	}

	// The sample policy enforces deployobject.image.pinned in namespaces labelled env=prod; one
	// keyed on the name of the namespace needs no label from the user.
	policy := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(policy, []byte("apiVersion: policy.seedlabs.dev/v1alpha1\nkind: AdmissionPolicy\nmetadata: {name: cluster}\n"+
		"spec: {rules: [{id: deployobject.image.pinned, action: Warn, namespaces: "+
		"[{selector: {matchLabels: {kubernetes.io/metadata.name: prod}}, action: Enforce}]}]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const latest = "apiVersion: app.seedlabs.dev/v1\nkind: DeployObject\nmetadata: {generateName: moving-}\nspec: {image: 'nginx:latest', ports: [{port: 80}]}\n"
	if code, stdout, stderr := lintRun(t, latest, "lint", "--policy", policy, "-n", "dev"); code != exitValid ||
		stdout != "deployobject.app.seedlabs.dev/moving-xxxxx valid\n" || !strings.Contains(stderr, "Warning: ") {
		t.Errorf("in dev: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if code, _, stderr := lintRun(t, latest, "lint", "--policy", policy, "-n", "prod"); code != exitInvalid ||
		!strings.Contains(stderr, `-: The DeployObject "moving-xxxxx" is invalid: spec.image:`) {
		t.Errorf("in prod: exit %d, stderr %q", code, stderr)
	}
}

// TestConvert converts the samples: each of the operator's kinds at v1alpha1 is written at v1, the
// DeployObjects as they were, one document per file; what cannot be converted exits 2 and writes
// nothing.
func TestConvert(t *testing.T) {
	code, stdout, stderr := lintRun(t, "", "convert", "-f", "../../config/samples")
	if code != exitValid || stderr != "" {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	files, err := filepath.Glob("../../config/samples/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(stdout, "\n---\n") + 1; got != len(files) {
		t.Errorf("%d documents written for %d samples:\n%s", got, len(files), stdout)
	}
	for _, want := range []string{"apiVersion: auth.seedlabs.dev/v1\nkind: Welcome\n", "apiVersion: cache.seedlabs.dev/v1\nkind: Memcached\n", "apiVersion: app.seedlabs.dev/v1\nkind: DeployObject\n"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("no %q in:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "v1alpha1") {
		t.Errorf("a v1alpha1 object is left:\n%s", stdout)
	}

	for name, tc := range map[string]struct {
		stdin string
		args  []string
		want  string
	}{
		"an unknown field": {"apiVersion: auth.seedlabs.dev/v1alpha1\nkind: Welcome\nmetadata: {name: w}\nspec: {nme: Ada}\n", []string{"convert"},
			`error: -: document 1: Welcome w: strict decoding error: unknown field "spec.nme"`},
		"an argument that is not a flag": {"", []string{"convert", "welcome.yaml"}, `error: unexpected arguments ["welcome.yaml"]; name files with -f`},
		"a file that is not there":       {"", []string{"convert", "-f", "no-such-file.yaml"}, "error: stat no-such-file.yaml: no such file or directory"},
	} {
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := lintRun(t, tc.stdin, tc.args...)
			if code != exitUsage || stdout != "" || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2, nothing written, and %q", code, stdout, stderr, tc.want)
			}
		})
	}
}
