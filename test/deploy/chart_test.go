package deploy

import (
	"bytes"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/seedlabs/webhook-operator/internal/operator"
	"github.com/seedlabs/webhook-operator/test/fixtures"
)

// The labels the chart gives every object, beside config/'s own, and the annotation that keeps
// the CRDs at helm uninstall: the only differences to a kustomize build the chart may show.
var chartLabels = []string{"app.kubernetes.io/name", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance",
	"app.kubernetes.io/version", "helm.sh/chart"}

const keepAnnotation = "helm.sh/resource-policy"

// helmTemplate renders dist/chart as the release webhook-operator into namespace, with values
// set; its default image is a kustomize build's, what a release publishes.
func helmTemplate(t *testing.T, namespace string, set ...string) manifests {
	t.Helper()
	out, err := runHelmTemplate(t, namespace, set...)
	if err != nil {
		t.Fatal(err)
	}
	return parseManifests(t, "helm template", out)
}

// runHelmTemplate runs $HELM template, leaving out the helm test hooks (helmTestHooks); the error
// holds what helm printed.
func runHelmTemplate(t *testing.T, namespace string, set ...string) ([]byte, error) {
	t.Helper()
	args := []string{"template", "webhook-operator", filepath.Join(moduleRoot(t), "dist", "chart"), "--namespace", namespace, "--skip-tests"}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	return runHelm(t, args...)
}

func runHelm(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	return runHelmOf(t, "HELM", args...)
}

// runHelmOf runs the helm the environment variable names: HELM (Helm 4) or HELM3.
func runHelmOf(t *testing.T, variable string, args ...string) ([]byte, error) {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(t.Context(), toolPath(t, variable), args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, &helmError{args: args, err: err, stderr: stderr.String()}
	}
	return out, nil
}

type helmError struct {
	args   []string
	err    error
	stderr string
}

func (e *helmError) Error() string {
	return "helm " + strings.Join(e.args, " ") + ": " + e.err.Error() + "\n" + e.stderr
}

// TestChartRendersWhatKustomizeBuilds holds the chart, with its default values, to what kustomize
// builds from config/ for each install the chart offers. The chart adds its labels and the CRDs'
// keep annotation, and leaves the Namespace to helm install --create-namespace; nothing else may
// differ.
func TestChartRendersWhatKustomizeBuilds(t *testing.T) {
	root := moduleRoot(t)
	for _, tc := range []struct {
		name      string
		kustomize func(t *testing.T) manifests
		namespace string
		set       []string
	}{{
		name:      "cert-manager mode",
		kustomize: func(t *testing.T) manifests { return kustomizeBuild(t, filepath.Join(root, "config", "default")) },
		namespace: fixtures.Namespace,
	}, {
		name:      "self-signed mode",
		kustomize: func(t *testing.T) manifests { return kustomizeBuild(t, filepath.Join(root, "config", "self-signed")) },
		namespace: fixtures.Namespace,
		set:       []string{"certificates.mode=self-signed"},
	}, {
		name:      "another namespace",
		kustomize: func(t *testing.T) manifests { return buildIntoNamespace(t, "team-ops") },
		namespace: "team-ops",
	}, {
		name:      "the ServiceMonitor, the alerts and the NetworkPolicies",
		kustomize: buildWithOptionalOverlays,
		namespace: fixtures.Namespace,
		set:       []string{"serviceMonitor.enabled=true", "prometheusRule.enabled=true", "networkPolicy.enabled=true"},
	}, {
		name:      "the webhook's client CA",
		kustomize: func(t *testing.T) manifests { return buildWithComponent(t, "default", "webhook-client-ca") },
		namespace: fixtures.Namespace,
		set:       []string{"webhook.clientCA.configMap=webhook-client-ca"},
	}, {
		name:      "the webhook's client CA, self-signed mode",
		kustomize: func(t *testing.T) manifests { return buildWithComponent(t, "self-signed", "webhook-client-ca") },
		namespace: fixtures.Namespace,
		set:       []string{"webhook.clientCA.configMap=webhook-client-ca", "certificates.mode=self-signed"},
	}, {
		name:      "another namespace, with the ServiceMonitor, the alerts and the NetworkPolicies",
		kustomize: func(t *testing.T) manifests { return buildConfig(t, "team-ops", true) },
		namespace: "team-ops",
		set:       []string{"serviceMonitor.enabled=true", "prometheusRule.enabled=true", "networkPolicy.enabled=true"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			built := tc.kustomize(t)
			rendered := helmTemplate(t, tc.namespace, tc.set...)
			checkSameObjects(t, withoutKind(built, "Namespace"), rendered)
			checkChartLabels(t, rendered)
		})
	}

	t.Run("the Grafana dashboard", func(t *testing.T) {
		dashboard := kustomizeBuild(t, filepath.Join(root, "config", "grafana"))
		rendered := helmTemplate(t, fixtures.Namespace, "grafanaDashboard.enabled=true").ofKind("ConfigMap")
		checkSameObjects(t, dashboard, rendered)
	})
}

// TestChartIsLintClean runs helm lint --strict with the default values and with every optional
// object enabled in self-signed mode.
func TestChartIsLintClean(t *testing.T) {
	chart := filepath.Join(moduleRoot(t), "dist", "chart")
	for _, set := range [][]string{nil, {"--set", "serviceMonitor.enabled=true,prometheusRule.enabled=true,grafanaDashboard.enabled=true,networkPolicy.enabled=true"},
		{"--set", "certificates.mode=self-signed,prometheusRule.enabled=true,grafanaDashboard.enabled=true,networkPolicy.enabled=true"}} {
		out, err := runHelm(t, append([]string{"lint", "--strict", chart}, set...)...)
		if err != nil {
			t.Errorf("%v\n%s", err, out)
		}
	}
}

// TestChartNotes: helm install prints where the operator went, how to wait for it and where its
// rules are, in either certificate mode.
func TestChartNotes(t *testing.T) {
	chart := filepath.Join(moduleRoot(t), "dist", "chart")
	version := makeVariable(t, "VERSION")
	for mode, says := range map[string]string{"cert-manager": "kept by cert-manager", "self-signed": "kept by the manager itself"} {
		out, err := runHelm(t, "install", "webhook-operator", chart, "--namespace", "team-ops", "--dry-run=client", "--set", "certificates.mode="+mode)
		if err != nil {
			t.Fatal(err)
		}
		_, notes, ok := strings.Cut(string(out), "\nNOTES:\n")
		if !ok {
			t.Fatalf("%s: helm install printed no NOTES", mode)
		}
		for _, want := range []string{says, "in the namespace team-ops", "kubectl -n team-ops rollout status deployment/webhook-operator-controller-manager",
			"/blob/" + version + "/docs/rules.md"} {
			if !strings.Contains(notes, want) {
				t.Errorf("%s: the NOTES lack %q:\n%s", mode, want, notes)
			}
		}
	}
}

// TestChartArtifactHubCRDs holds the CRDs Chart.yaml lists for Artifact Hub to those the chart
// installs: their kinds, names and storage versions.
func TestChartArtifactHubCRDs(t *testing.T) {
	root := moduleRoot(t)
	data, err := os.ReadFile(filepath.Join(root, "dist", "chart", "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var chart struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.Unmarshal(data, &chart); err != nil {
		t.Fatal(err)
	}
	type listed struct {
		Kind        string `json:"kind"`
		Version     string `json:"version"`
		Name        string `json:"name"`
		DisplayName string `json:"displayName"`
		Description string `json:"description"`
	}
	var got []listed
	if err := yaml.UnmarshalStrict([]byte(chart.Annotations["artifacthub.io/crds"]), &got); err != nil {
		t.Fatalf("artifacthub.io/crds: %v", err)
	}
	var want []listed
	for _, crd := range helmTemplate(t, fixtures.Namespace).ofKind("CustomResourceDefinition") {
		c := decode[apiextensionsv1.CustomResourceDefinition](t, crd)
		for _, v := range c.Spec.Versions {
			if v.Storage {
				want = append(want, listed{Kind: c.Spec.Names.Kind, Version: v.Name, Name: c.Name})
			}
		}
	}
	for i := range got {
		if got[i].DisplayName == "" || got[i].Description == "" {
			t.Errorf("artifacthub.io/crds: %s has no displayName or description", got[i].Kind)
		}
		got[i].DisplayName, got[i].Description = "", ""
	}
	byKind := func(a, b listed) int { return strings.Compare(a.Kind, b.Kind) }
	slices.SortFunc(got, byKind)
	slices.SortFunc(want, byKind)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("artifacthub.io/crds against the chart's CRDs (-installed +listed):\n%s", diff)
	}
}

// TestChartValues renders the chart with each value set and checks that it changes what it says,
// and only on the objects it names.
func TestChartValues(t *testing.T) {
	t.Run("image by tag and by digest, pull secrets and pull policy", func(t *testing.T) {
		digest := "sha256:" + strings.Repeat("ab", 32)
		mgr := getManager(t, helmTemplate(t, fixtures.Namespace, "image.repository=registry.example/wo", "image.tag=v9.9.9"))
		if mgr.manager.Image != "registry.example/wo:v9.9.9" {
			t.Errorf("image %q, want registry.example/wo:v9.9.9", mgr.manager.Image)
		}
		mgr = getManager(t, helmTemplate(t, fixtures.Namespace, "image.repository=registry.example/wo", "image.tag=v9.9.9",
			"image.digest="+digest, "image.pullPolicy=Always", "imagePullSecrets[0].name=regcred"))
		if want := "registry.example/wo@" + digest; mgr.manager.Image != want {
			t.Errorf("image %q, want %q: a digest wins over the tag", mgr.manager.Image, want)
		}
		if mgr.manager.ImagePullPolicy != corev1.PullAlways {
			t.Errorf("imagePullPolicy %q, want Always", mgr.manager.ImagePullPolicy)
		}
		if diff := cmp.Diff([]corev1.LocalObjectReference{{Name: "regcred"}}, mgr.pod.ImagePullSecrets); diff != "" {
			t.Errorf("imagePullSecrets (-want +got):\n%s", diff)
		}
	})

	t.Run("the webhook's callers: the client CA and the sources the NetworkPolicy admits", func(t *testing.T) {
		m := helmTemplate(t, fixtures.Namespace, "webhook.clientCA.configMap=kube-apiserver-ca", "webhook.clientCA.key=front.crt",
			"networkPolicy.enabled=true", "networkPolicy.webhookFrom[0].ipBlock.cidr=10.0.0.0/28")
		mgr := getManager(t, m)
		if !slices.Contains(mgr.manager.Args, "--webhook-client-ca=/etc/webhook-operator/client-ca/front.crt") {
			t.Errorf("the manager's args %q lack --webhook-client-ca", mgr.manager.Args)
		}
		if !slices.ContainsFunc(mgr.pod.Volumes, func(v corev1.Volume) bool {
			return v.ConfigMap != nil && v.ConfigMap.Name == "kube-apiserver-ca"
		}) {
			t.Errorf("no volume of ConfigMap kube-apiserver-ca: %+v", mgr.pod.Volumes)
		}
		policy := get[networkingv1.NetworkPolicy](t, m, "NetworkPolicy", "webhook-operator-allow-webhook-traffic")
		want := []networkingv1.NetworkPolicyPeer{
			{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/28"}},
			{PodSelector: &metav1.LabelSelector{MatchLabels: mgr.Spec.Selector.MatchLabels}},
		}
		if diff := cmp.Diff(want, policy.Spec.Ingress[0].From); diff != "" {
			t.Errorf("the webhook port admits (-want +got), the control plane and the replicas themselves:\n%s", diff)
		}
	})

	t.Run("the webhook port", func(t *testing.T) {
		m := helmTemplate(t, fixtures.Namespace, "webhook.port=10250", "networkPolicy.enabled=true")
		mgr := getManager(t, m)
		if mgr.opts.WebhookPort != 10250 {
			t.Errorf("the manager serves the webhooks on %d, want 10250", mgr.opts.WebhookPort)
		}
		if !slices.ContainsFunc(mgr.manager.Ports, func(p corev1.ContainerPort) bool { return p.Name == "webhook-server" && p.ContainerPort == 10250 }) {
			t.Errorf("no container port webhook-server 10250: %+v", mgr.manager.Ports)
		}
		svc := get[corev1.Service](t, m, "Service", "webhook-operator-webhook-service")
		if got := svc.Spec.Ports[0].TargetPort.String(); got != "webhook-server" {
			t.Errorf("the webhook Service targets %s, want the named port webhook-server", got)
		}
		policy := get[networkingv1.NetworkPolicy](t, m, "NetworkPolicy", "webhook-operator-allow-webhook-traffic")
		if got := policy.Spec.Ingress[0].Ports[0].Port.String(); got != "10250" {
			t.Errorf("the NetworkPolicy admits port %s, want 10250", got)
		}
		if mgr := getManager(t, helmTemplate(t, fixtures.Namespace)); slices.ContainsFunc(mgr.manager.Args, func(a string) bool { return strings.HasPrefix(a, "--webhook-port") }) {
			t.Errorf("the default port is passed as a flag, unlike kustomize's build: %q", mgr.manager.Args)
		}
	})

	t.Run("host networking", func(t *testing.T) {
		mgr := getManager(t, helmTemplate(t, fixtures.Namespace, "hostNetwork=true"))
		if !mgr.pod.HostNetwork || mgr.pod.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
			t.Errorf("hostNetwork %t, dnsPolicy %q; want true and ClusterFirstWithHostNet", mgr.pod.HostNetwork, mgr.pod.DNSPolicy)
		}
	})

	t.Run("the ServiceAccount", func(t *testing.T) {
		m := helmTemplate(t, fixtures.Namespace, "serviceAccount.annotations.iam\\.example\\.com/role=operator")
		sa := get[corev1.ServiceAccount](t, m, "ServiceAccount", "webhook-operator-controller-manager")
		if sa.Annotations["iam.example.com/role"] != "operator" {
			t.Errorf("the ServiceAccount's annotations: %v", sa.Annotations)
		}
		m = helmTemplate(t, fixtures.Namespace, "serviceAccount.create=false", "serviceAccount.name=platform-operator")
		if got := m.ofKind("ServiceAccount"); len(got) != 0 {
			t.Errorf("serviceAccount.create=false rendered %d ServiceAccounts", len(got))
		}
		if got := getManager(t, m).pod.ServiceAccountName; got != "platform-operator" {
			t.Errorf("the manager runs as %q, want platform-operator", got)
		}
		bindings := 0
		for _, kind := range []string{"ClusterRoleBinding", "RoleBinding"} {
			for _, o := range m.ofKind(kind) {
				b := decode[rbacv1.RoleBinding](t, o)
				for _, s := range b.Subjects {
					bindings++
					if s.Kind != "ServiceAccount" || s.Name != "platform-operator" || s.Namespace != fixtures.Namespace {
						t.Errorf("%s %s binds %+v", kind, b.Name, s)
					}
				}
			}
		}
		if bindings == 0 {
			t.Error("no binding names the ServiceAccount")
		}
		if _, err := runHelmTemplate(t, fixtures.Namespace, "serviceAccount.create=false"); err == nil || !strings.Contains(err.Error(), "serviceAccount.create=false needs serviceAccount.name") {
			t.Errorf("serviceAccount.create=false without a name: %v", err)
		}
	})

	t.Run("security contexts", func(t *testing.T) {
		mgr := getManager(t, helmTemplate(t, fixtures.Namespace, "podSecurityContext.runAsUser=65532", "securityContext.runAsGroup=65532"))
		if sc := mgr.pod.SecurityContext; ptr.Deref(sc.RunAsUser, 0) != 65532 || !ptr.Deref(sc.RunAsNonRoot, false) || sc.SeccompProfile == nil {
			t.Errorf("the pod's security context %+v: want runAsUser 65532 beside the restricted defaults", sc)
		}
		if sc := mgr.manager.SecurityContext; ptr.Deref(sc.RunAsGroup, 0) != 65532 || ptr.Deref(sc.AllowPrivilegeEscalation, true) ||
			!ptr.Deref(sc.ReadOnlyRootFilesystem, false) || sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 {
			t.Errorf("the container's security context %+v: want runAsGroup 65532 beside the restricted defaults", sc)
		}
	})

	t.Run("revision history and node selector", func(t *testing.T) {
		mgr := getManager(t, helmTemplate(t, fixtures.Namespace))
		if got := ptr.Deref(mgr.Spec.RevisionHistoryLimit, -1); got != 10 {
			t.Errorf("revisionHistoryLimit %d by default, want 10", got)
		}
		if diff := cmp.Diff(map[string]string{"kubernetes.io/os": "linux"}, mgr.pod.NodeSelector); diff != "" {
			t.Errorf("the default nodeSelector (-want +got), the images' one OS:\n%s", diff)
		}
		mgr = getManager(t, helmTemplate(t, fixtures.Namespace, "revisionHistoryLimit=2", "nodeSelector.pool=system"))
		if got := ptr.Deref(mgr.Spec.RevisionHistoryLimit, -1); got != 2 {
			t.Errorf("revisionHistoryLimit %d with revisionHistoryLimit=2", got)
		}
		if diff := cmp.Diff(map[string]string{"kubernetes.io/os": "linux", "pool": "system"}, mgr.pod.NodeSelector); diff != "" {
			t.Errorf("nodeSelector.pool=system (-want +got):\n%s", diff)
		}
	})

	t.Run("the operands' images", func(t *testing.T) {
		mgr := getManager(t, helmTemplate(t, fixtures.Namespace, "operands.welcomeImage=registry.example/welcome:v2",
			"operands.memcachedImage=registry.example/memcached:1"))
		want := map[string]string{operator.EnvWelcomeImage: "registry.example/welcome:v2", operator.EnvMemcachedImage: "registry.example/memcached:1"}
		for _, env := range mgr.manager.Env {
			if w, ok := want[env.Name]; ok && env.Value == w {
				delete(want, env.Name)
			}
		}
		if len(want) != 0 {
			t.Errorf("the manager's environment %+v lacks %v", mgr.manager.Env, want)
		}
	})

	t.Run("replicas, resources, priority class and scheduling", func(t *testing.T) {
		m := helmTemplate(t, fixtures.Namespace, "replicaCount=3", "resources.limits.memory=1Gi", "priorityClassName=system-cluster-critical",
			"nodeSelector.kubernetes\\.io/os=linux", "tolerations[0].operator=Exists",
			"topologySpreadConstraints[0].maxSkew=1", "topologySpreadConstraints[0].topologyKey=topology.kubernetes.io/zone",
			"topologySpreadConstraints[0].whenUnsatisfiable=DoNotSchedule", "podLabels.team=ops", "podAnnotations.note=x")
		mgr := getManager(t, m)
		if *mgr.Spec.Replicas != 3 {
			t.Errorf("replicas %d, want 3", *mgr.Spec.Replicas)
		}
		if got := mgr.manager.Resources.Limits[corev1.ResourceMemory]; !got.Equal(resource.MustParse("1Gi")) {
			t.Errorf("memory limit %s, want 1Gi", got.String())
		}
		if mgr.pod.PriorityClassName != "system-cluster-critical" {
			t.Errorf("priorityClassName %q", mgr.pod.PriorityClassName)
		}
		if mgr.pod.NodeSelector["kubernetes.io/os"] != "linux" || len(mgr.pod.Tolerations) != 1 {
			t.Errorf("nodeSelector %v, tolerations %v", mgr.pod.NodeSelector, mgr.pod.Tolerations)
		}
		spread := mgr.pod.TopologySpreadConstraints
		if len(spread) != 1 || spread[0].TopologyKey != "topology.kubernetes.io/zone" || spread[0].WhenUnsatisfiable != "DoNotSchedule" ||
			spread[0].LabelSelector == nil || !selects(spread[0].LabelSelector.MatchLabels, mgr.Spec.Template.Labels) {
			t.Errorf("topologySpreadConstraints %+v; want the zone constraint, selecting the manager's pods", spread)
		}
		if mgr.Spec.Template.Labels["team"] != "ops" || mgr.Spec.Template.Annotations["note"] != "x" {
			t.Errorf("pod labels %v, annotations %v", mgr.Spec.Template.Labels, mgr.Spec.Template.Annotations)
		}
		if !selects(mgr.Spec.Selector.MatchLabels, mgr.Spec.Template.Labels) || mgr.Spec.Selector.MatchLabels["team"] != "" {
			t.Errorf("selector %v must select the pods by the chart's labels alone", mgr.Spec.Selector.MatchLabels)
		}
	})

	t.Run("the PodDisruptionBudget", func(t *testing.T) {
		if pdbs := helmTemplate(t, fixtures.Namespace, "podDisruptionBudget.enabled=false").ofKind("PodDisruptionBudget"); len(pdbs) != 0 {
			t.Errorf("podDisruptionBudget.enabled=false renders %d PodDisruptionBudgets", len(pdbs))
		}
		m := helmTemplate(t, fixtures.Namespace, "podDisruptionBudget.minAvailable=50%")
		if got := nestedString(t, m.get(t, "PodDisruptionBudget", deploymentName), "spec", "minAvailable"); got != "50%" {
			t.Errorf("minAvailable %q, want 50%%", got)
		}
	})

	t.Run("allowed registries and extra flags reach the manager as flags it accepts", func(t *testing.T) {
		mgr := getManager(t, helmTemplate(t, fixtures.Namespace, "allowedRegistries={ghcr.io,registry.corp.example}",
			"extraArgs={--max-concurrent-reconciles=7}"))
		if diff := cmp.Diff([]string{"ghcr.io", "registry.corp.example"}, mgr.opts.AllowedRegistries); diff != "" {
			t.Errorf("--allowed-registries (-want +got):\n%s", diff)
		}
		if mgr.opts.MaxConcurrentReconciles != 7 {
			t.Errorf("--max-concurrent-reconciles %d, want 7", mgr.opts.MaxConcurrentReconciles)
		}
	})

	t.Run("every webhook's timeout and failure policy", func(t *testing.T) {
		m := helmTemplate(t, fixtures.Namespace, "webhook.timeoutSeconds=5", "webhook.failurePolicy=Ignore")
		check := func(key, name string, timeout *int32, policy *admissionregistrationv1.FailurePolicyType) {
			if *timeout != 5 || *policy != admissionregistrationv1.Ignore {
				t.Errorf("%s: webhook %s timeoutSeconds %d, failurePolicy %s", key, name, *timeout, *policy)
			}
		}
		mutating := get[admissionregistrationv1.MutatingWebhookConfiguration](t, m, "MutatingWebhookConfiguration", namePrefix+"mutating-webhook-configuration")
		for _, w := range mutating.Webhooks {
			check(mutating.Name, w.Name, w.TimeoutSeconds, w.FailurePolicy)
		}
		validating := get[admissionregistrationv1.ValidatingWebhookConfiguration](t, m, "ValidatingWebhookConfiguration", namePrefix+"validating-webhook-configuration")
		for _, w := range validating.Webhooks {
			check(validating.Name, w.Name, w.TimeoutSeconds, w.FailurePolicy)
		}
		if len(mutating.Webhooks) == 0 || len(validating.Webhooks) == 0 {
			t.Error("no webhooks rendered")
		}

		// The latency alert warns at 80% of the timeout.
		rule := string(helmTemplate(t, fixtures.Namespace, "webhook.timeoutSeconds=5", "prometheusRule.enabled=true").ofKind("PrometheusRule")[0].raw)
		if !strings.Contains(rule, "[5m])))\n          > 4\n") || strings.Contains(rule, " > 0.8") {
			t.Errorf("the latency alert does not warn at 4 s, 80%% of timeoutSeconds 5:\n%s", rule)
		}
	})

	t.Run("every image from the registry mirror of global.imageRegistry", func(t *testing.T) {
		const mirror = "mirror.example.com:5000/hub"
		// The chart's appVersion, the tag of its images by default.
		_, tag, _ := strings.Cut(getManager(t, helmTemplate(t, fixtures.Namespace)).manager.Image, ":")
		for _, tc := range []struct {
			set                         []string
			manager, welcome, memcached string
		}{
			{
				set:       []string{"global.imageRegistry=" + mirror + "/"},
				manager:   mirror + "/seedlabs/webhook-operator:" + tag,
				welcome:   mirror + "/seedlabs/welcome-web:" + tag,
				memcached: mirror + "/library/memcached:1.6.38-alpine@sha256:8b7ce4bb3cb4aa340d690007fd89c1a0a403120a13b48d483de4e5f4e5a33d96",
			},
			{
				set: []string{"global.imageRegistry=" + mirror, "image.repository=localhost:5000/ops/operator", "image.digest=sha256:" + strings.Repeat("a", 64),
					"operands.welcomeImage=team/welcome:v2", "operands.memcachedImage=docker.io/library/memcached:1.6"},
				manager:   mirror + "/ops/operator@sha256:" + strings.Repeat("a", 64),
				welcome:   mirror + "/team/welcome:v2",
				memcached: mirror + "/library/memcached:1.6",
			},
		} {
			mgr := getManager(t, helmTemplate(t, fixtures.Namespace, tc.set...))
			env := map[string]string{}
			for _, e := range mgr.manager.Env {
				env[e.Name] = e.Value
			}
			if mgr.manager.Image != tc.manager || env["WELCOME_IMAGE"] != tc.welcome || env["MEMCACHED_IMAGE"] != tc.memcached {
				t.Errorf("with %q: the images are %s, %s and %s; want %s, %s and %s", tc.set, mgr.manager.Image, env["WELCOME_IMAGE"],
					env["MEMCACHED_IMAGE"], tc.manager, tc.welcome, tc.memcached)
			}
		}
	})

	t.Run("the webhooks' annotations and the namespaces they judge", func(t *testing.T) {
		m := helmTemplate(t, fixtures.Namespace,
			"webhook.annotations.example\\.com/owner=platform",
			"webhook.annotations.cert-manager\\.io/inject-ca-from=elsewhere/cert",
			"webhook.namespaceSelector.matchLabels.admission=on",
			"webhook.namespaceSelector.matchExpressions[0].key=tier",
			"webhook.namespaceSelector.matchExpressions[0].operator=NotIn",
			"webhook.namespaceSelector.matchExpressions[0].values[0]=legacy")
		want := &metav1.LabelSelector{
			MatchLabels: map[string]string{"admission": "on"},
			MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-system", fixtures.Namespace}},
				{Key: "tier", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"legacy"}},
			},
		}
		mutating := get[admissionregistrationv1.MutatingWebhookConfiguration](t, m, "MutatingWebhookConfiguration", namePrefix+"mutating-webhook-configuration")
		validating := get[admissionregistrationv1.ValidatingWebhookConfiguration](t, m, "ValidatingWebhookConfiguration", namePrefix+"validating-webhook-configuration")
		selectors := map[string]*metav1.LabelSelector{}
		for _, w := range mutating.Webhooks {
			selectors[w.Name] = w.NamespaceSelector
		}
		for _, w := range validating.Webhooks {
			selectors[w.Name] = w.NamespaceSelector
		}
		for name, got := range selectors {
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("webhook %s: the namespaceSelector (-want +got):\n%s", name, diff)
			}
		}
		for _, annotations := range []map[string]string{mutating.Annotations, validating.Annotations} {
			if annotations["example.com/owner"] != "platform" {
				t.Errorf("the annotations %v lack example.com/owner", annotations)
			}
			if got, want := annotations["cert-manager.io/inject-ca-from"], fixtures.Namespace+"/"+namePrefix+"serving-cert"; got != want {
				t.Errorf("cert-manager.io/inject-ca-from is %q, want the chart's own %q", got, want)
			}
		}
		if len(selectors) == 0 {
			t.Error("no webhooks rendered")
		}
		if _, err := runHelmTemplate(t, fixtures.Namespace, "webhook.namespaceSelector.matchExpressions[0].key=tier",
			"webhook.namespaceSelector.matchExpressions[0].operator=Within"); err == nil || !strings.Contains(err.Error(), "operator") {
			t.Errorf("an unknown operator: %v", err)
		}
	})

	t.Run("labels and annotations given twice are rendered once, the chart's and the object's own first", func(t *testing.T) {
		// parseManifests refuses a document with a key twice.
		m := helmTemplate(t, fixtures.Namespace, "commonLabels.grafana_dashboard=no", "commonLabels.team=common", "podLabels.team=pod",
			"podAnnotations.kubectl\\.kubernetes\\.io/default-container=other", "grafanaDashboard.enabled=true", "serviceMonitor.enabled=true",
			"serviceMonitor.labels.team=monitor")
		if got := m.get(t, "ConfigMap", "webhook-operator-grafana-dashboard").GetLabels()["grafana_dashboard"]; got != "1" {
			t.Errorf("the dashboard's label grafana_dashboard=%q, want its own 1", got)
		}
		if got := m.get(t, "ServiceMonitor", namePrefix+"controller-manager-metrics-monitor").GetLabels()["team"]; got != "monitor" {
			t.Errorf("the ServiceMonitor's label team=%q, want its own", got)
		}
		mgr := getManager(t, m)
		if mgr.Spec.Template.Labels["team"] != "pod" || mgr.Spec.Template.Annotations["kubectl.kubernetes.io/default-container"] != "manager" {
			t.Errorf("pod labels %v, annotations %v", mgr.Spec.Template.Labels, mgr.Spec.Template.Annotations)
		}
	})

	t.Run("a topology spread constraint's own label selector is kept", func(t *testing.T) {
		mgr := getManager(t, helmTemplate(t, fixtures.Namespace, "topologySpreadConstraints[0].maxSkew=2",
			"topologySpreadConstraints[0].topologyKey=zone", "topologySpreadConstraints[0].whenUnsatisfiable=ScheduleAnyway",
			"topologySpreadConstraints[0].labelSelector.matchLabels.tier=webhooks"))
		spread := mgr.pod.TopologySpreadConstraints
		if len(spread) != 1 || spread[0].LabelSelector == nil || !maps.Equal(spread[0].LabelSelector.MatchLabels, map[string]string{"tier": "webhooks"}) {
			t.Errorf("topologySpreadConstraints %+v; want the given label selector alone", spread)
		}
	})

	t.Run("resources: null leaves the manager without requests and limits", func(t *testing.T) {
		if got := getManager(t, helmTemplate(t, fixtures.Namespace, "resources=null")).manager.Resources; len(got.Limits)+len(got.Requests) != 0 {
			t.Errorf("resources %+v", got)
		}
	})

	t.Run("common labels and annotations on every object", func(t *testing.T) {
		m := helmTemplate(t, fixtures.Namespace, "commonLabels.team=ops", "commonAnnotations.owner=platform",
			"serviceMonitor.enabled=true", "prometheusRule.enabled=true", "grafanaDashboard.enabled=true", "networkPolicy.enabled=true")
		for _, o := range m {
			if o.GetLabels()["team"] != "ops" || o.GetAnnotations()["owner"] != "platform" {
				t.Errorf("%s: labels %v, annotations %v", o.key(), o.GetLabels(), o.GetAnnotations())
			}
		}
	})

	t.Run("a namespace other than the release's", func(t *testing.T) {
		checkSameObjects(t, withoutKind(buildIntoNamespace(t, "team-ops"), "Namespace"),
			helmTemplate(t, fixtures.Namespace, "namespaceOverride=team-ops"))

		// The alerts select the manager's series by namespace.
		rule := helmTemplate(t, fixtures.Namespace, "namespaceOverride=team-ops", "prometheusRule.enabled=true").ofKind("PrometheusRule")
		if len(rule) != 1 {
			t.Fatalf("%d PrometheusRules rendered", len(rule))
		}
		if text := string(rule[0].raw); strings.Contains(text, fixtures.Namespace) || !strings.Contains(text, `namespace="team-ops"`) {
			t.Errorf("the alerts do not select the manager's namespace team-ops:\n%s", text)
		}
	})

	t.Run("the CRDs: kept at uninstall by default, or not, or not installed", func(t *testing.T) {
		for _, tc := range []struct {
			set        string
			crds, keep bool
		}{{"crds.keep=true", true, true}, {"crds.keep=false", true, false}, {"crds.install=false", false, false}} {
			m := helmTemplate(t, fixtures.Namespace, tc.set)
			crds := m.ofKind("CustomResourceDefinition")
			if got := len(crds) == 4; got != tc.crds {
				t.Errorf("%s: %d CRDs rendered", tc.set, len(crds))
			}
			// CRDs the chart does not install may have no conversion webhook to wait for.
			if names := getManager(t, m).opts.Certs.ConversionCRDs; (len(names) > 0) != tc.crds {
				t.Errorf("%s: --cert-conversion-crds=%v", tc.set, names)
			}
			for _, crd := range crds {
				if got := crd.GetAnnotations()[keepAnnotation] == "keep"; got != tc.keep {
					t.Errorf("%s: %s has annotations %v", tc.set, crd.key(), crd.GetAnnotations())
				}
			}
		}
	})

	t.Run("the CRDs' own annotations, for Argo CD and Flux", func(t *testing.T) {
		m := helmTemplate(t, fixtures.Namespace, "crds.annotations.argocd\\.argoproj\\.io/sync-options=Prune=false",
			"crds.annotations.kustomize\\.toolkit\\.fluxcd\\.io/prune=disabled")
		want := map[string]string{keepAnnotation: "keep", "argocd.argoproj.io/sync-options": "Prune=false", "kustomize.toolkit.fluxcd.io/prune": "disabled"}
		for _, crd := range m.ofKind("CustomResourceDefinition") {
			got := crd.GetAnnotations()
			delete(got, "controller-gen.kubebuilder.io/version")
			delete(got, "cert-manager.io/inject-ca-from") // a converted kind's; checkConversionWebhooks holds it
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s's annotations (-want +got):\n%s", crd.key(), diff)
			}
		}
		for _, o := range m {
			if o.GetKind() != "CustomResourceDefinition" && o.GetAnnotations()["argocd.argoproj.io/sync-options"] != "" {
				t.Errorf("%s carries the CRDs' annotations", o.key())
			}
		}
	})
}

// TestChartRefusesBadValues: a value of the wrong type or out of range fails helm install before
// anything is applied, and the error names every one; so do combinations that cannot work.
func TestChartRefusesBadValues(t *testing.T) {
	for _, tc := range []struct {
		set  []string
		want string
	}{
		{[]string{"replicaCount=1"}, "podDisruptionBudget.minAvailable (1) must be below replicaCount (1)"},
		{[]string{"replicaCount=3", "podDisruptionBudget.minAvailable=3"}, "podDisruptionBudget.minAvailable (3) must be below replicaCount (3)"},
		{[]string{"certificates.mode=self-signed", "serviceMonitor.enabled=true"}, "serviceMonitor.enabled needs certificates.mode=cert-manager"},
		{[]string{"commonLabels.control-plane=x", "commonLabels.team=ops", "podLabels.app\\.kubernetes\\.io/name=x"},
			"commonLabels.control-plane, podLabels.app.kubernetes.io/name: the chart sets these labels itself"},
	} {
		if _, err := runHelmTemplate(t, fixtures.Namespace, tc.set...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v; want %q", tc.set, err, tc.want)
		}
	}
	if _, err := runHelmTemplate(t, fixtures.Namespace, "replicaCount=1", "podDisruptionBudget.enabled=false"); err != nil {
		t.Errorf("one replica without a PodDisruptionBudget: %v", err)
	}

	_, err := runHelmTemplate(t, fixtures.Namespace, "certificates.mode=vault", "webhook.failurePolicy=Never", "webhook.timeoutSeconds=31",
		"replicaCount=0", "image.digest=latest", "allowedRegistries={a,b c}", "extraArgs={leader-elect}", "bogus=1")
	if err == nil {
		t.Fatal("helm template accepted every bad value")
	}
	for _, want := range []string{"/certificates/mode", "/webhook/failurePolicy", "/webhook/timeoutSeconds", "/replicaCount",
		"/image/digest", "/allowedRegistries/1", "/extraArgs/0", "'bogus' not allowed"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not name %s:\n%v", want, err)
		}
	}
}

// TestChartInstallsAsADependency renders the chart as a dependency of an umbrella chart, as
// platform teams install it: Helm passes every subchart the umbrella's global values and, with a
// condition, its enabled key, which the chart's strict schema must accept (helm#10392); with
// enabled false, nothing of it is rendered.
func TestChartInstallsAsADependency(t *testing.T) {
	var chart struct{ Version string }
	data, err := os.ReadFile(filepath.Join(moduleRoot(t), "dist", "chart", "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &chart); err != nil {
		t.Fatal(err)
	}
	umbrella := t.TempDir()
	files := map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: platform\nversion: 1.0.0\ndependencies:\n" +
			"- name: webhook-operator\n  version: " + chart.Version + "\n" +
			"  repository: file://" + filepath.Join(moduleRoot(t), "dist", "chart") + "\n" +
			"  condition: webhook-operator.enabled\n",
		"values.yaml": "global:\n  imageRegistry: registry.example.com\n" +
			"webhook-operator:\n  enabled: true\n  image:\n    repository: controller\n    tag: latest\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(umbrella, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, helm := range []string{"HELM", "HELM3"} {
		if _, err := runHelmOf(t, helm, "dependency", "update", umbrella); err != nil {
			t.Fatal(err)
		}
		out, err := runHelmOf(t, helm, "template", "platform", umbrella, "--namespace", fixtures.Namespace)
		if err != nil {
			t.Fatal(err)
		}
		rendered := parseManifests(t, "helm template", out)
		if len(rendered.ofKind("Deployment")) != 1 || len(rendered.ofKind("ValidatingWebhookConfiguration")) != 1 {
			t.Errorf("%s: the umbrella chart renders %d Deployments and %d validating webhook configurations, want 1 each", helm,
				len(rendered.ofKind("Deployment")), len(rendered.ofKind("ValidatingWebhookConfiguration")))
		}
		out, err = runHelmOf(t, helm, "template", "platform", umbrella, "--namespace", fixtures.Namespace, "--set", "webhook-operator.enabled=false")
		if err != nil {
			t.Fatal(err)
		}
		if len(bytes.TrimSpace(out)) != 0 {
			t.Errorf("%s: with webhook-operator.enabled=false the umbrella chart still renders:\n%s", helm, out)
		}
	}
}

// TestChartSelfSignedReadsNoOtherSecret: in self-signed mode the manager reads and writes only
// its own Secret, so the chart installs into any namespace, kube-system and default too, with the
// Role in the namespace it names.
func TestChartSelfSignedReadsNoOtherSecret(t *testing.T) {
	for _, tc := range []struct {
		releaseNamespace string
		set              []string
		namespace        string
	}{
		{fixtures.Namespace, nil, fixtures.Namespace},
		{"kube-system", nil, "kube-system"},
		{"default", nil, "default"},
		{"default", []string{"namespaceOverride=team-ops"}, "team-ops"},
	} {
		m := helmTemplate(t, tc.releaseNamespace, append([]string{"certificates.mode=self-signed"}, tc.set...)...)
		role := get[rbacv1.Role](t, m, "Role", "webhook-operator-cert-rotation-role")
		if role.Namespace != tc.namespace {
			t.Errorf("-n %s %v: the Role that reads the Secret is in %q, want %s", tc.releaseNamespace, tc.set, role.Namespace, tc.namespace)
		}
		// Every role bound to the manager's ServiceAccount, in its namespace or the cluster's.
		var rules []rbacv1.PolicyRule
		for _, ref := range roleRefs(t, m, tc.namespace, getManager(t, m).Spec.Template.Spec.ServiceAccountName) {
			kind, name, _ := strings.Cut(ref, " ")
			if kind == "Role" {
				rules = append(rules, get[rbacv1.Role](t, m, kind, name).Rules...)
			} else {
				rules = append(rules, get[rbacv1.ClusterRole](t, m, kind, name).Rules...)
			}
		}
		for _, verb := range []string{"get", "list", "watch"} {
			if !allows(rules, "", "secrets", "webhook-operator-webhook-server-cert", verb) {
				t.Errorf("-n %s %v: the manager cannot %s its own Secret", tc.releaseNamespace, tc.set, verb)
			}
			if allows(rules, "", "secrets", "", verb) || allows(rules, "", "secrets", "sh.helm.release.v1.other.v1", verb) {
				t.Errorf("-n %s %v: the manager may %s other Secrets of %s", tc.releaseNamespace, tc.set, verb, tc.namespace)
			}
		}
	}
}

// withoutKind drops the objects of one kind.
func withoutKind(m manifests, kind string) manifests {
	return slices.DeleteFunc(slices.Clone(m), func(o object) bool { return o.GetKind() == kind })
}

// checkSameObjects holds two renderings to the same objects, once the chart's labels and keep
// annotation are set aside and lists of named items are put in name order (kustomize's patches
// may reorder a Pod's volumes).
func checkSameObjects(t *testing.T, want, got manifests) {
	t.Helper()
	index := func(m manifests) map[string]map[string]any {
		out := map[string]map[string]any{}
		for _, o := range m {
			u := o.DeepCopy()
			for _, l := range chartLabels {
				unstructured.RemoveNestedField(u.Object, "metadata", "labels", l)
			}
			unstructured.RemoveNestedField(u.Object, "metadata", "annotations", keepAnnotation)
			for _, field := range []string{"labels", "annotations"} {
				if m, _, _ := unstructured.NestedMap(u.Object, "metadata", field); len(m) == 0 {
					unstructured.RemoveNestedField(u.Object, "metadata", field)
				}
			}
			out[o.key()] = sortNamedLists(u.Object).(map[string]any)
		}
		return out
	}
	w, g := index(want), index(got)
	if diff := cmp.Diff(slices.Sorted(maps.Keys(w)), slices.Sorted(maps.Keys(g))); diff != "" {
		t.Errorf("objects (-kustomize +helm):\n%s", diff)
	}
	for key, o := range w {
		if g[key] == nil {
			continue
		}
		if diff := cmp.Diff(o, g[key]); diff != "" {
			t.Errorf("%s (-kustomize +helm):\n%s", key, diff)
		}
	}
}

// sortNamedLists orders every list whose items are all maps with a string name by that name.
func sortNamedLists(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = sortNamedLists(e)
		}
	case []any:
		named := len(v) > 0
		for i, e := range v {
			v[i] = sortNamedLists(e)
			if m, ok := e.(map[string]any); !ok || m["name"] == nil {
				named = false
			} else if _, ok := m["name"].(string); !ok {
				named = false
			}
		}
		if named {
			slices.SortStableFunc(v, func(a, b any) int {
				return strings.Compare(a.(map[string]any)["name"].(string), b.(map[string]any)["name"].(string))
			})
		}
	}
	return v
}

// checkChartLabels: every object the chart renders carries its labels, and the CRDs are kept at
// helm uninstall.
func checkChartLabels(t *testing.T, m manifests) {
	t.Helper()
	for _, o := range m {
		for _, l := range chartLabels {
			if o.GetLabels()[l] == "" {
				t.Errorf("%s lacks the label %s", o.key(), l)
			}
		}
		if o.GetKind() == "CustomResourceDefinition" && o.GetAnnotations()[keepAnnotation] != "keep" {
			t.Errorf("%s is not kept at helm uninstall (%s)", o.key(), keepAnnotation)
		}
	}
}

// TestChartRendersTheSameUnderHelm3 renders the chart with Helm 3 (HELM3), with which Argo CD and
// Flux render charts, and with Helm 4 (HELM), with the default values and with values that take
// the templates' other branches: both render the same objects, both lint it clean, and both
// refuse a value the schema refuses.
func TestChartRendersTheSameUnderHelm3(t *testing.T) {
	chart := filepath.Join(moduleRoot(t), "dist", "chart")
	for _, set := range [][]string{
		nil,
		{"certificates.mode=self-signed", "replicaCount=3", "hostNetwork=true", "crds.keep=false", "networkPolicy.enabled=true"},
		{
			"serviceMonitor.enabled=true", "prometheusRule.enabled=true", "grafanaDashboard.enabled=true",
			"networkPolicy.enabled=true", "networkPolicy.webhookFrom[0].ipBlock.cidr=10.0.0.0/28",
			"global.imageRegistry=mirror.example.com", "image.digest=sha256:" + strings.Repeat("b", 64),
			"webhook.annotations.example\\.com/owner=platform", "webhook.namespaceSelector.matchLabels.admission=on",
			"webhook.clientCA.configMap=kube-apiserver-ca", "serviceAccount.annotations.iam\\.example\\.com/role=operator",
			"commonLabels.team=platform", "podAnnotations.example\\.com/scrape=no", "extraArgs[0]=--max-concurrent-reconciles=7",
		},
	} {
		args := []string{"template", "webhook-operator", chart, "--namespace", fixtures.Namespace}
		for _, v := range set {
			args = append(args, "--set", v)
		}
		rendered := map[string]manifests{}
		for _, helm := range []string{"HELM", "HELM3"} {
			out, err := runHelmOf(t, helm, args...)
			if err != nil {
				t.Fatal(err)
			}
			rendered[helm] = parseManifests(t, helm+" template", out)
		}
		four, three := objectsByKey(t, rendered["HELM"]), objectsByKey(t, rendered["HELM3"])
		if diff := cmp.Diff(four, three); diff != "" {
			t.Errorf("with %q, Helm 4 and Helm 3 render different objects (-Helm 4 +Helm 3):\n%s", set, diff)
		}
		if len(four) < 10 {
			t.Errorf("with %q, only %d objects rendered", set, len(four))
		}
	}
	for _, helm := range []string{"HELM", "HELM3"} {
		if out, err := runHelmOf(t, helm, "lint", "--strict", chart); err != nil {
			t.Errorf("%s lint: %v\n%s", helm, err, out)
		}
		_, err := runHelmOf(t, helm, "template", "webhook-operator", chart, "--set", "replicaCount=-1")
		if err == nil || !strings.Contains(err.Error(), "replicaCount") {
			t.Errorf("%s renders replicaCount=-1, or refuses it without naming it: %v", helm, err)
		}
	}
}

// objectsByKey maps each rendered object's kind, namespace and name to the object.
func objectsByKey(t *testing.T, m manifests) map[string]map[string]any {
	t.Helper()
	objects := make(map[string]map[string]any, len(m))
	for _, o := range m {
		if _, dup := objects[o.key()]; dup {
			t.Errorf("%s is rendered twice", o.key())
		}
		objects[o.key()] = o.Object
	}
	return objects
}

// TestPinnedVersionsAgree holds the versions the Makefile names to the modules that build them,
// and the chart's versions to the operator's.
func TestPinnedVersionsAgree(t *testing.T) {
	root := moduleRoot(t)
	for variable, module := range map[string]struct{ dir, path string }{
		"HELM_VERSION":        {"test/tools/helm", "helm.sh/helm/v4"},
		"HELM3_VERSION":       {"test/tools/helm3", "helm.sh/helm/v3"},
		"KUBE_VERSION":        {"test/tools/kube", "k8s.io/kubernetes"},
		"PROMETHEUS_VERSION":  {"test/tools/prometheus", "github.com/prometheus/prometheus"},
		"COSIGN_VERSION":      {"test/tools/cosign", "github.com/sigstore/cosign/v3"},
		"KUBE_OLDEST_VERSION": {"test/tools/kube-oldest", "k8s.io/kubernetes"},
		"GINKGO_VERSION":      {".", "github.com/onsi/ginkgo/v2"},
	} {
		data, err := os.ReadFile(filepath.Join(root, module.dir, "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		required := regexp.MustCompile(`(?m)^\s*(?:require\s+)?` + regexp.QuoteMeta(module.path) + `\s+(\S+)`).FindSubmatch(data)
		if required == nil {
			t.Fatalf("%s/go.mod does not require %s", module.dir, module.path)
		}
		if got := makeVariable(t, variable); got != string(required[1]) {
			t.Errorf("make's %s is %s; %s/go.mod requires %s %s", variable, got, module.dir, module.path, required[1])
		}
	}

	var chart struct {
		Version    string `json:"version"`
		AppVersion string `json:"appVersion"`
	}
	data, err := os.ReadFile(filepath.Join(root, "dist", "chart", "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &chart); err != nil {
		t.Fatal(err)
	}
	version := makeVariable(t, "VERSION")
	if chart.AppVersion != version || "v"+chart.Version != version {
		t.Errorf("dist/chart/Chart.yaml has version %s and appVersion %s; make's VERSION is %s", chart.Version, chart.AppVersion, version)
	}
}

// helmTestHooks renders the chart's helm test hooks alone.
func helmTestHooks(t *testing.T, set ...string) manifests {
	t.Helper()
	args := []string{"template", "webhook-operator", filepath.Join(moduleRoot(t), "dist", "chart"), "--namespace", fixtures.Namespace,
		"--show-only", "templates/tests/admission-check.yaml"}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	out, err := runHelm(t, args...)
	if err != nil {
		if strings.Contains(err.Error(), "could not find template") {
			return nil // rendered empty
		}
		t.Fatal(err)
	}
	return parseManifests(t, "helm template --show-only", out)
}

// TestChartHelmTestChecksAdmission holds the chart's helm test to what it promises: a restricted
// pod of the manager's image that runs the admission check (--check-admission-in, tested against
// kube-apiserver in test/integration) in tests.namespace, with the welcome image the manager
// gets, as a ServiceAccount of its own that may create DeployObjects there and nothing else; every
// object a test hook, and none with tests.enabled=false.
func TestChartHelmTestChecksAdmission(t *testing.T) {
	for _, tc := range []struct {
		set       []string
		namespace string
	}{{nil, "default"}, {[]string{"tests.namespace=team-a", "global.imageRegistry=mirror.example.com"}, "team-a"}} {
		hooks := helmTestHooks(t, tc.set...)
		mgr := getManager(t, helmTemplate(t, fixtures.Namespace, tc.set...))
		for _, o := range hooks {
			if hook := o.GetAnnotations()["helm.sh/hook"]; hook != "test" {
				t.Errorf("%s: helm.sh/hook %q, want test", o.key(), hook)
			}
		}
		pod := get[corev1.Pod](t, hooks, "Pod", namePrefix+"admission-check")
		checkRestricted(t, &pod.Spec)
		for _, svc := range helmTemplate(t, fixtures.Namespace).ofKind("Service") {
			if selects(decode[corev1.Service](t, svc).Spec.Selector, pod.Labels) {
				t.Errorf("%s selects the test pod", svc.key())
			}
		}
		if pod.Namespace != fixtures.Namespace || pod.Spec.RestartPolicy != corev1.RestartPolicyNever || len(pod.Spec.Containers) != 1 {
			t.Fatalf("the test pod: namespace %q, restartPolicy %q, %d containers", pod.Namespace, pod.Spec.RestartPolicy, len(pod.Spec.Containers))
		}
		c := pod.Spec.Containers[0]
		wantEnv := slices.DeleteFunc(slices.Clone(mgr.manager.Env), func(e corev1.EnvVar) bool { return e.Name != "WELCOME_IMAGE" })
		if c.Image != mgr.manager.Image || !slices.Equal(c.Command, []string{"/manager"}) ||
			!slices.Equal(c.Args, []string{"--check-admission-in=" + tc.namespace}) || !equality.Semantic.DeepEqual(c.Env, wantEnv) {
			t.Errorf("%v: the test runs %s %v %v with %v; want the manager's image %s, --check-admission-in=%s and its %v",
				tc.set, c.Image, c.Command, c.Args, c.Env, mgr.manager.Image, tc.namespace, wantEnv)
		}
		account := get[corev1.ServiceAccount](t, hooks, "ServiceAccount", pod.Spec.ServiceAccountName)
		binding := get[rbacv1.RoleBinding](t, hooks, "RoleBinding", namePrefix+"admission-check")
		role := get[rbacv1.Role](t, hooks, "Role", binding.RoleRef.Name)
		wantRules := []rbacv1.PolicyRule{{APIGroups: []string{"app.seedlabs.dev"}, Resources: []string{"deployobjects"}, Verbs: []string{"create"}}}
		if binding.Namespace != tc.namespace || role.Namespace != tc.namespace || binding.RoleRef.Kind != "Role" ||
			!slices.Equal(binding.Subjects, []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: account.Name, Namespace: account.Namespace}}) ||
			!equality.Semantic.DeepEqual(role.Rules, wantRules) {
			t.Errorf("%v: the test pod's account %s/%s is bound by %+v to %+v; want create of deployobjects in %s alone",
				tc.set, account.Namespace, account.Name, binding, role, tc.namespace)
		}
		if len(hooks) != 4 {
			t.Errorf("%v: %d test hooks, want the pod, its ServiceAccount, Role and RoleBinding", tc.set, len(hooks))
		}
	}
	if hooks := helmTestHooks(t, "tests.enabled=false"); len(hooks) != 0 {
		t.Errorf("tests.enabled=false renders %d test hooks", len(hooks))
	}
}
