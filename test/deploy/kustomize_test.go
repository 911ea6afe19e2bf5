// Package deploy checks what kustomize builds from config/: the manifests `make deploy` applies
// and `make build-installer` writes to dist/install.yaml. It holds them to the manager's own
// flags and to what controller-gen generates, and needs $KUSTOMIZE but no cluster.
package deploy

import (
	stdcmp "cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/conversion"

	"github.com/seedlabs/webhook-operator/internal/operator"
	"github.com/seedlabs/webhook-operator/internal/scheme"
	"github.com/seedlabs/webhook-operator/test/fixtures"
	"github.com/seedlabs/webhook-operator/test/testenv"
	"github.com/seedlabs/webhook-operator/webhooks"
)

// What config/default names things.
const (
	namePrefix = fixtures.NamePrefix

	deploymentName     = fixtures.ManagerDeployment
	managerContainer   = fixtures.ManagerContainer
	webhookService     = fixtures.WebhookService
	metricsService     = fixtures.MetricsService
	servingCertificate = fixtures.ServingCertificate
	metricsCertificate = fixtures.MetricsCertificate
	caCertificate      = fixtures.CACertificate
	selfSignedIssuer   = fixtures.SelfSignedIssuer
	caIssuer           = fixtures.CAIssuer
	managerRole        = namePrefix + "manager-role"
	metricsAuthRole    = namePrefix + "metrics-auth-role"
	leaderElectionRole = namePrefix + "leader-election-role"
	webhookTrustRole   = namePrefix + "webhook-trust-role"
)

// The scope of every kind the builds may hold; a kind in neither map fails the test until it is
// added to one.
var (
	clusterScoped = map[string]bool{
		"Namespace": true, "CustomResourceDefinition": true, "ClusterRole": true, "ClusterRoleBinding": true,
		"MutatingWebhookConfiguration": true, "ValidatingWebhookConfiguration": true,
	}
	namespaced = map[string]bool{
		"ServiceAccount": true, "Role": true, "RoleBinding": true, "Service": true, "Deployment": true,
		"Certificate": true, "Issuer": true, "Secret": true, "ServiceMonitor": true, "PrometheusRule": true, "NetworkPolicy": true, "PodDisruptionBudget": true,
	}
)

// defaultInventory is every object config/default builds, sorted.
var defaultInventory = []string{
	"Certificate webhook-operator-system/webhook-operator-ca",
	"Certificate webhook-operator-system/webhook-operator-metrics-certs",
	"Certificate webhook-operator-system/webhook-operator-serving-cert",
	"ClusterRole webhook-operator-app-deployobject-editor-role",
	"ClusterRole webhook-operator-app-deployobject-viewer-role",
	"ClusterRole webhook-operator-auth-welcome-editor-role",
	"ClusterRole webhook-operator-auth-welcome-viewer-role",
	"ClusterRole webhook-operator-cache-memcached-editor-role",
	"ClusterRole webhook-operator-cache-memcached-viewer-role",
	"ClusterRole webhook-operator-manager-role",
	"ClusterRole webhook-operator-metrics-auth-role",
	"ClusterRole webhook-operator-metrics-reader",
	"ClusterRole webhook-operator-policy-admissionpolicy-viewer-role",
	"ClusterRole webhook-operator-webhook-trust-role",
	"ClusterRoleBinding webhook-operator-manager-rolebinding",
	"ClusterRoleBinding webhook-operator-metrics-auth-rolebinding",
	"ClusterRoleBinding webhook-operator-webhook-trust-rolebinding",
	"CustomResourceDefinition admissionpolicies.policy.seedlabs.dev",
	"CustomResourceDefinition deployobjects.app.seedlabs.dev",
	"CustomResourceDefinition memcacheds.cache.seedlabs.dev",
	"CustomResourceDefinition welcomes.auth.seedlabs.dev",
	"Deployment webhook-operator-system/webhook-operator-controller-manager",
	"Issuer webhook-operator-system/webhook-operator-ca-issuer",
	"Issuer webhook-operator-system/webhook-operator-selfsigned-issuer",
	"MutatingWebhookConfiguration webhook-operator-mutating-webhook-configuration",
	"Namespace webhook-operator-system",
	"PodDisruptionBudget webhook-operator-system/webhook-operator-controller-manager",
	"Role webhook-operator-system/webhook-operator-leader-election-role",
	"RoleBinding webhook-operator-system/webhook-operator-leader-election-rolebinding",
	"Service webhook-operator-system/webhook-operator-controller-manager-metrics-service",
	"Service webhook-operator-system/webhook-operator-webhook-service",
	"ServiceAccount webhook-operator-system/webhook-operator-controller-manager",
	"ValidatingWebhookConfiguration webhook-operator-validating-webhook-configuration",
}

// optionalInventory is what enabling config/prometheus and config/network-policy adds.
var optionalInventory = []string{
	"ClusterRoleBinding webhook-operator-metrics-scraper-rolebinding",
	"NetworkPolicy webhook-operator-system/webhook-operator-allow-metrics-traffic",
	"NetworkPolicy webhook-operator-system/webhook-operator-allow-webhook-traffic",
	"PrometheusRule webhook-operator-system/webhook-operator-controller-manager-alerts",
	"Secret webhook-operator-system/webhook-operator-metrics-scraper-token",
	"ServiceAccount webhook-operator-system/webhook-operator-metrics-scraper",
	"ServiceMonitor webhook-operator-system/webhook-operator-controller-manager-metrics-monitor",
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// managerDeployment is the manager's Deployment, its container, and the configuration the
// manager runs with given the container's args.
type managerDeployment struct {
	*appsv1.Deployment
	pod     *corev1.PodSpec
	manager *corev1.Container
	opts    operator.Options
}

func getManager(t *testing.T, m manifests) managerDeployment {
	t.Helper()
	d := get[appsv1.Deployment](t, m, "Deployment", deploymentName)
	pod := &d.Spec.Template.Spec
	c := container(t, pod, managerContainer)
	return managerDeployment{Deployment: d, pod: pod, manager: c, opts: managerOptions(t, c.Args)}
}

func TestConfigDefault(t *testing.T) {
	root := moduleRoot(t)
	checkInstall(t, root, kustomizeBuild(t, filepath.Join(root, "config", "default")), fixtures.Namespace)
}

// TestOverlayIntoAnotherNamespace installs into a namespace of the user's choosing with an
// overlay of config/default, written in a copy of config/ as docs/install.md says: the namespace,
// and config/wiring among the transformers, so that the certificates, the CA injection and the
// webhooks' namespaceSelector follow it.
func TestOverlayIntoAnotherNamespace(t *testing.T) {
	const namespace = "team-ops"
	checkInstall(t, moduleRoot(t), buildIntoNamespace(t, namespace), namespace)
}

// buildIntoNamespace builds config/default into namespace, through an overlay written as
// docs/install.md says.
func buildIntoNamespace(t *testing.T, namespace string) manifests {
	t.Helper()
	return buildConfig(t, namespace, false)
}

// checkInstall holds what config/default installs, into namespace, to what the operator needs.
func checkInstall(t *testing.T, root string, m manifests, namespace string) {
	t.Helper()
	t.Run("holds exactly the operator's objects", func(t *testing.T) {
		checkInventory(t, m, inNamespace(defaultInventory, namespace))
	})

	t.Run("prefixes every name and puts every namespaced object in the operator's namespace", func(t *testing.T) {
		checkNamesAndNamespaces(t, m, namespace)
	})

	t.Run("runs the manager under the restricted Pod Security Standard", func(t *testing.T) {
		ns := m.get(t, "Namespace", namespace)
		if got := ns.GetLabels()["pod-security.kubernetes.io/enforce"]; got != "restricted" {
			t.Errorf("Namespace %s: pod-security.kubernetes.io/enforce=%q, want restricted", namespace, got)
		}
		checkRestricted(t, getManager(t, m).pod)
	})

	t.Run("configures the manager with flags it accepts", func(t *testing.T) {
		checkManagerConfiguration(t, m)
	})

	t.Run("runs the webhooks highly available", func(t *testing.T) {
		checkHighAvailability(t, m)
	})

	t.Run("serves the webhooks through the webhook Service with the serving certificate", func(t *testing.T) {
		mgr := getManager(t, m)

		svc := get[corev1.Service](t, m, "Service", webhookService)
		if !selects(svc.Spec.Selector, mgr.Spec.Template.Labels) {
			t.Errorf("Service %s selects %v, not the manager's pods %v", webhookService, svc.Spec.Selector, mgr.Spec.Template.Labels)
		}
		if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 443 {
			t.Fatalf("Service %s ports %+v; want 443 alone", webhookService, svc.Spec.Ports)
		}
		if got := containerPort(mgr.manager, svc.Spec.Ports[0].TargetPort); got != int32(mgr.opts.WebhookPort) {
			t.Errorf("Service %s targets container port %d; the webhook server listens on %d (--webhook-port)",
				webhookService, got, mgr.opts.WebhookPort)
		}

		secret := secretMountedAt(t, mgr.pod, mgr.manager, mgr.opts.WebhookCertDir)
		checkCertificate(t, m, servingCertificate, secret, serviceDNSNames(webhookService, namespace))
	})

	t.Run("serves metrics through the metrics Service with the metrics certificate", func(t *testing.T) {
		mgr := getManager(t, m)
		if !mgr.opts.SecureMetrics {
			t.Error("the manager serves metrics without TLS and authorization; want --metrics-secure")
		}

		svc := get[corev1.Service](t, m, "Service", metricsService)
		if !selects(svc.Spec.Selector, mgr.Spec.Template.Labels) {
			t.Errorf("Service %s selects %v, not the manager's pods %v", metricsService, svc.Spec.Selector, mgr.Spec.Template.Labels)
		}
		want := addressPort(t, "metrics-bind-address", mgr.opts.MetricsAddr)
		if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != "https" ||
			containerPort(mgr.manager, svc.Spec.Ports[0].TargetPort) != want {
			t.Errorf("Service %s ports %+v; want one named https targeting %d (--metrics-bind-address)",
				metricsService, svc.Spec.Ports, want)
		}

		secret := secretMountedAt(t, mgr.pod, mgr.manager, mgr.opts.MetricsCertDir)
		checkCertificate(t, m, metricsCertificate, secret, serviceDNSNames(metricsService, namespace))
	})

	t.Run("registers every generated webhook, kept away from kube-system and the operator's namespace", func(t *testing.T) {
		generated := readManifests(t, filepath.Join(root, "config", "webhook", "manifests.yaml"))
		checkWebhooks(t, m, generated, namespace, "MutatingWebhookConfiguration", "mutating-webhook-configuration")
		checkWebhooks(t, m, generated, namespace, "ValidatingWebhookConfiguration", "validating-webhook-configuration")
	})

	t.Run("grants the manager its generated role, leader election and metrics authorization, and nothing else", func(t *testing.T) {
		checkRBAC(t, m, readManifests(t, filepath.Join(root, "config", "rbac", "role.yaml")), namespace)
	})

	t.Run("lets the built-in edit and admin roles use every kind, and view read them and the AdmissionPolicy", func(t *testing.T) {
		checkUserRoles(t, m)
	})

	t.Run("installs the four CRDs; a kind the manager converts calls /convert on the webhook Service, trusted as the admission webhooks are", func(t *testing.T) {
		converted := checkConversionWebhooks(t, m, namespace)
		for _, name := range converted {
			o := m.get(t, "CustomResourceDefinition", name)
			if got, want := o.GetAnnotations()["cert-manager.io/inject-ca-from"], namespace+"/"+servingCertificate; got != want {
				t.Errorf("%s: cert-manager.io/inject-ca-from=%q, want %q", o.key(), got, want)
			}
		}
	})
}

// checkConversionWebhooks holds the CRDs of m to the scheme: the four are installed, the CRD of a
// kind the manager converts (a hub and its spokes, controller-runtime's test) has a conversion
// webhook on the webhook Service's /convert, and only those; a CRD without one has no CA
// injection; and the manager waits for each caBundle it names in --cert-conversion-crds, which
// are those. It returns their names.
func checkConversionWebhooks(t *testing.T, m manifests, namespace string) []string {
	t.Helper()
	s := scheme.New()
	svc := get[corev1.Service](t, m, "Service", webhookService)
	var names, converted []string
	for _, o := range m.ofKind("CustomResourceDefinition") {
		names = append(names, o.GetName())
		crd := decode[apiextensionsv1.CustomResourceDefinition](t, o)
		obj, err := s.New(schema.GroupVersionKind{Group: crd.Spec.Group, Version: crd.Spec.Versions[0].Name, Kind: crd.Spec.Names.Kind})
		if err != nil {
			t.Fatalf("%s: %v", o.key(), err)
		}
		convertible, err := conversion.IsConvertible(s, obj)
		if err != nil {
			t.Fatalf("%s: %v", o.key(), err)
		}
		conv := crd.Spec.Conversion
		hasWebhook := conv != nil && conv.Strategy == apiextensionsv1.WebhookConverter
		switch {
		case convertible && !hasWebhook:
			t.Errorf("%s: the manager converts %s between its versions, but the CRD has no conversion webhook", o.key(), crd.Spec.Names.Kind)
			continue
		case !convertible && hasWebhook:
			t.Errorf("%s has a conversion webhook, but the manager does not convert %s", o.key(), crd.Spec.Names.Kind)
			continue
		case !convertible:
			if a, ok := o.GetAnnotations()["cert-manager.io/inject-ca-from"]; ok {
				t.Errorf("%s has cert-manager.io/inject-ca-from=%q but no conversion webhook", o.key(), a)
			}
			continue
		}
		converted = append(converted, crd.Name)
		cc := conv.Webhook.ClientConfig
		if cc == nil || cc.URL != nil || cc.Service == nil || cc.Service.Name != svc.Name || cc.Service.Namespace != namespace {
			t.Errorf("%s: the conversion webhook calls %+v, want Service %s/%s", o.key(), cc, namespace, svc.Name)
			continue
		}
		if got := ptr.Deref(cc.Service.Path, ""); got != webhooks.ConvertPath {
			t.Errorf("%s: the conversion webhook calls path %q, want %s", o.key(), got, webhooks.ConvertPath)
		}
		port := ptr.Deref(cc.Service.Port, 443)
		if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Port == port }) {
			t.Errorf("%s: the conversion webhook calls port %d, which Service %s does not expose", o.key(), port, svc.Name)
		}
		// controller-runtime's /convert reads and answers apiextensions.k8s.io/v1 ConversionReviews.
		if !slices.Equal(conv.Webhook.ConversionReviewVersions, []string{"v1"}) {
			t.Errorf("%s: conversionReviewVersions %v, want [v1]", o.key(), conv.Webhook.ConversionReviewVersions)
		}
	}
	slices.Sort(names)
	want := []string{"admissionpolicies.policy.seedlabs.dev", "deployobjects.app.seedlabs.dev", "memcacheds.cache.seedlabs.dev", "welcomes.auth.seedlabs.dev"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("CRDs (-want +got):\n%s", diff)
	}
	slices.Sort(converted)
	if diff := cmp.Diff(converted, slices.Sorted(slices.Values(getManager(t, m).opts.Certs.ConversionCRDs)), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("--cert-conversion-crds (-CRDs with a conversion webhook +flag):\n%s", diff)
	}
	return converted
}

func TestOptionalOverlaysBuildAlone(t *testing.T) {
	root := moduleRoot(t)
	for dir, want := range map[string][]string{
		"network-policy": {"NetworkPolicy system/allow-metrics-traffic", "NetworkPolicy system/allow-webhook-traffic"},
		"prometheus": {"ClusterRoleBinding metrics-scraper-rolebinding", "PrometheusRule system/controller-manager-alerts",
			"Secret system/metrics-scraper-token", "ServiceAccount system/metrics-scraper", "ServiceMonitor system/controller-manager-metrics-monitor"},
		"grafana": {"ConfigMap webhook-operator-system/webhook-operator-grafana-dashboard"},
	} {
		t.Run(dir, func(t *testing.T) {
			checkInventory(t, kustomizeBuild(t, filepath.Join(root, "config", dir)), want)
		})
	}
}

// TestConfigDefaultWithOptionalOverlays enables config/prometheus and config/network-policy
// in a copy of config/, as a user would by uncommenting them in config/default.
func TestConfigDefaultWithOptionalOverlays(t *testing.T) {
	m := buildWithOptionalOverlays(t)
	checkInventory(t, m, slices.Sorted(slices.Values(slices.Concat(defaultInventory, optionalInventory))))
	checkNamesAndNamespaces(t, m, fixtures.Namespace)
	mgr := getManager(t, m)
	metricsPort := addressPort(t, "metrics-bind-address", mgr.opts.MetricsAddr)

	t.Run("the ServiceMonitor scrapes the metrics Service and verifies its certificate", func(t *testing.T) {
		monitor := m.get(t, "ServiceMonitor", namePrefix+"controller-manager-metrics-monitor")
		endpoints, _, err := unstructuredSlice(monitor, "spec", "endpoints")
		if err != nil || len(endpoints) != 1 {
			t.Fatalf("%s: want one endpoint, got %v (%v)", monitor.key(), endpoints, err)
		}
		endpoint := object{Unstructured: toUnstructured(endpoints[0])}
		for field, want := range map[string]string{
			"port":   "https",
			"scheme": "https",
			"path":   "/metrics",
			// The manager authenticates the scraper's token and authorizes it for /metrics
			// (TestTheServiceMonitorPresentsATokenOfItsOwn).
			"authorization.credentials.name": namePrefix + "metrics-scraper-token",
			"tlsConfig.serverName":           serviceDNSNames(metricsService, fixtures.Namespace)[0],
			"tlsConfig.ca.secret.name":       nestedString(t, m.get(t, "Certificate", metricsCertificate), "spec", "secretName"),
			"tlsConfig.ca.secret.key":        "ca.crt",
		} {
			if got, _, _ := unstructuredString(endpoint, strings.Split(field, ".")...); got != want {
				t.Errorf("%s: endpoint %s=%q, want %q", monitor.key(), field, got, want)
			}
		}
		if skip, found, _ := unstructuredBool(endpoint, "tlsConfig", "insecureSkipVerify"); !found || skip {
			t.Errorf("%s: tlsConfig.insecureSkipVerify must be false", monitor.key())
		}

		selector, _, _ := unstructuredStringMap(monitor, "spec", "selector", "matchLabels")
		var selected []string
		for _, o := range m.ofKind("Service") {
			if o.GetNamespace() == monitor.GetNamespace() && selects(selector, o.GetLabels()) {
				selected = append(selected, o.GetName())
			}
		}
		if diff := cmp.Diff([]string{metricsService}, selected); diff != "" {
			t.Errorf("%s selects Services (-want +got):\n%s", monitor.key(), diff)
		}
	})

	t.Run("the NetworkPolicies admit webhook calls from anywhere and metrics scrapes from labelled namespaces", func(t *testing.T) {
		tcp := corev1.ProtocolTCP
		port := func(n int32) []networkingv1.NetworkPolicyPort {
			p := intstr.FromInt32(n)
			return []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &p}}
		}
		for name, want := range map[string][]networkingv1.NetworkPolicyIngressRule{
			namePrefix + "allow-webhook-traffic": {{Ports: port(int32(mgr.opts.WebhookPort))}},
			namePrefix + "allow-metrics-traffic": {{
				From:  []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"metrics": "enabled"}}}},
				Ports: port(metricsPort),
			}},
		} {
			np := get[networkingv1.NetworkPolicy](t, m, "NetworkPolicy", name)
			if !selects(np.Spec.PodSelector.MatchLabels, mgr.Spec.Template.Labels) || len(np.Spec.PodSelector.MatchExpressions) != 0 {
				t.Errorf("NetworkPolicy %s selects %v, not the manager's pods %v", name, np.Spec.PodSelector, mgr.Spec.Template.Labels)
			}
			if diff := cmp.Diff([]networkingv1.PolicyType{networkingv1.PolicyTypeIngress}, np.Spec.PolicyTypes); diff != "" {
				t.Errorf("NetworkPolicy %s policyTypes (-want +got):\n%s", name, diff)
			}
			if diff := cmp.Diff(want, np.Spec.Ingress); diff != "" {
				t.Errorf("NetworkPolicy %s ingress (-want +got):\n%s", name, diff)
			}
		}
	})
}

// buildWithOptionalOverlays builds config/default with config/prometheus and
// config/network-policy uncommented, as its comments say to enable them.
func buildWithOptionalOverlays(t *testing.T) manifests {
	t.Helper()
	return buildConfig(t, fixtures.Namespace, true)
}

// buildWithComponent builds an overlay of config/<base> with the component config/<component>, as
// its kustomization documents.
func buildWithComponent(t *testing.T, base, component string) manifests {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(filepath.Join(dir, "config"), os.DirFS(filepath.Join(moduleRoot(t), "config"))); err != nil {
		t.Fatal(err)
	}
	overlay := fmt.Sprintf("resources:\n- ../config/%s\ncomponents:\n- ../config/%s\n", base, component)
	if err := os.MkdirAll(filepath.Join(dir, "overlay"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "overlay", "kustomization.yaml"), []byte(overlay), 0o600); err != nil {
		t.Fatal(err)
	}
	return kustomizeBuild(t, filepath.Join(dir, "overlay"))
}

// buildConfig builds a copy of config/default, with config/prometheus and config/network-policy
// uncommented when optional, into namespace: through an overlay written as docs/install.md says
// unless namespace is config/default's own.
func buildConfig(t *testing.T, namespace string, optional bool) manifests {
	t.Helper()
	config := filepath.Join(t.TempDir(), "config")
	if err := os.CopyFS(config, os.DirFS(filepath.Join(moduleRoot(t), "config"))); err != nil {
		t.Fatal(err)
	}
	if optional {
		kustomization := filepath.Join(config, "default", "kustomization.yaml")
		data, err := os.ReadFile(kustomization)
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		for _, overlay := range []string{"../prometheus", "../network-policy"} {
			disabled := "\n#- " + overlay + "\n"
			if !strings.Contains(text, disabled) {
				t.Fatalf("config/default/kustomization.yaml has no %q line to uncomment", strings.TrimSpace(disabled))
			}
			text = strings.Replace(text, disabled, "\n- "+overlay+"\n", 1)
		}
		if err := os.WriteFile(kustomization, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if namespace == fixtures.Namespace {
		return kustomizeBuild(t, filepath.Join(config, "default"))
	}
	overlay := filepath.Join(config, namespace)
	if err := os.Mkdir(overlay, 0o700); err != nil {
		t.Fatal(err)
	}
	kustomization := "namespace: " + namespace + "\nresources:\n- ../default\ntransformers:\n- ../wiring\n"
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(kustomization), 0o600); err != nil {
		t.Fatal(err)
	}
	return kustomizeBuild(t, overlay)
}

// inNamespace is an inventory of config/default with the operator's namespace renamed.
func inNamespace(inventory []string, namespace string) []string {
	out := make([]string, len(inventory))
	for i, item := range inventory {
		out[i] = strings.ReplaceAll(item, fixtures.Namespace, namespace)
	}
	slices.Sort(out)
	return out
}

func checkInventory(t *testing.T, m manifests, want []string) {
	t.Helper()
	var got []string
	for _, o := range m {
		got = append(got, o.key())
	}
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("objects built (-want +got):\n%s", diff)
	}
}

func checkNamesAndNamespaces(t *testing.T, m manifests, namespace string) {
	t.Helper()
	for _, o := range m {
		kind := o.GetKind()
		switch {
		case namespaced[kind]:
			if o.GetNamespace() != namespace {
				t.Errorf("%s: namespace %q, want %q", o.key(), o.GetNamespace(), namespace)
			}
		case clusterScoped[kind]:
			if o.GetNamespace() != "" {
				t.Errorf("%s is cluster-scoped but has namespace %q", o.key(), o.GetNamespace())
			}
		default:
			t.Errorf("%s: unknown kind; add it to clusterScoped or namespaced", o.key())
		}
		// A CRD's name is <plural>.<group>; the prefix would break it. The Namespace is named by
		// whoever installs into another one.
		named := kind == "Namespace" && namespace != fixtures.Namespace
		if kind != "CustomResourceDefinition" && !named && !strings.HasPrefix(o.GetName(), namePrefix) {
			t.Errorf("%s: name lacks the prefix %q", o.key(), namePrefix)
		}
	}
	m.get(t, "Namespace", namespace)
}

func checkRestricted(t *testing.T, pod *corev1.PodSpec) {
	t.Helper()
	if pod.HostNetwork || pod.HostPID || pod.HostIPC {
		t.Error("the pod shares a host namespace")
	}
	sc := pod.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Error("pod securityContext.runAsNonRoot must be true")
	}
	if sc == nil || sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Error("pod securityContext.seccompProfile.type must be RuntimeDefault")
	}
	for _, v := range pod.Volumes {
		if v.HostPath != nil {
			t.Errorf("volume %s is a hostPath", v.Name)
		}
	}
	for _, c := range slices.Concat(pod.InitContainers, pod.Containers) {
		csc := c.SecurityContext
		if csc == nil {
			t.Errorf("container %s has no securityContext", c.Name)
			continue
		}
		if csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation {
			t.Errorf("container %s: allowPrivilegeEscalation must be false", c.Name)
		}
		if csc.Privileged != nil && *csc.Privileged {
			t.Errorf("container %s is privileged", c.Name)
		}
		if csc.Capabilities == nil || !slices.Equal(csc.Capabilities.Drop, []corev1.Capability{"ALL"}) ||
			len(csc.Capabilities.Add) != 0 {
			t.Errorf("container %s: capabilities %+v, want drop [ALL] and nothing added", c.Name, csc.Capabilities)
		}
		if csc.RunAsNonRoot != nil && !*csc.RunAsNonRoot || csc.RunAsUser != nil && *csc.RunAsUser == 0 {
			t.Errorf("container %s may run as root", c.Name)
		}
		if csc.SeccompProfile != nil && csc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("container %s: seccompProfile %s, want RuntimeDefault", c.Name, csc.SeccompProfile.Type)
		}
		if csc.ReadOnlyRootFilesystem == nil || !*csc.ReadOnlyRootFilesystem {
			t.Errorf("container %s: readOnlyRootFilesystem must be true", c.Name)
		}
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				t.Errorf("container %s: hostPort %d", c.Name, p.HostPort)
			}
		}
	}
}

func checkManagerConfiguration(t *testing.T, m manifests) {
	t.Helper()
	mgr := getManager(t, m)

	// `kustomize edit set image controller=IMG` on a copy of config/ sets the image; the tree
	// names what a release publishes at the Makefile's version, make's default IMG.
	if want := makeVariable(t, "IMG"); mgr.manager.Image != want {
		t.Errorf("manager image %q, want make's default IMG, %s", mgr.manager.Image, want)
	}
	if !mgr.opts.LeaderElection {
		t.Error("the manager runs without --leader-elect")
	}
	if mgr.opts.LeaderElectionNamespace != "" {
		t.Errorf("--leader-election-namespace=%s; the leader-election Role is in the manager's own namespace",
			mgr.opts.LeaderElectionNamespace)
	}

	env := map[string]string{}
	for _, e := range mgr.manager.Env {
		env[e.Name] = e.Value
		if e.ValueFrom != nil && e.ValueFrom.ResourceFieldRef != nil {
			env[e.Name] = "resource " + e.ValueFrom.ResourceFieldRef.Resource
		}
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			env[e.Name] = "field " + e.ValueFrom.FieldRef.FieldPath
		}
	}
	wantEnv := map[string]string{
		operator.EnvWelcomeImage:   operator.DefaultWelcomeImage,
		operator.EnvMemcachedImage: operator.DefaultMemcachedImage,
		operator.EnvMemoryLimit:    "resource limits.memory",
		operator.EnvPodName:        "field metadata.name",
		operator.EnvPodNamespace:   "field metadata.namespace",
		operator.EnvPodUID:         "field metadata.uid",
	}
	if diff := cmp.Diff(wantEnv, env); diff != "" {
		t.Errorf("manager env (-want +got):\n%s", diff)
	}

	probePort := addressPort(t, "health-probe-bind-address", mgr.opts.ProbeAddr)
	for name, probe := range map[string]*corev1.Probe{
		"/healthz": mgr.manager.LivenessProbe,
		"/readyz":  mgr.manager.ReadinessProbe,
	} {
		if probe == nil || probe.HTTPGet == nil {
			t.Errorf("no HTTP probe for %s", name)
			continue
		}
		if probe.HTTPGet.Path != name || containerPort(mgr.manager, probe.HTTPGet.Port) != probePort {
			t.Errorf("probe %s:%s, want %s on %d (--health-probe-bind-address)",
				probe.HTTPGet.Path, probe.HTTPGet.Port.String(), name, probePort)
		}
	}
	if mgr.manager.ReadinessProbe == nil || mgr.manager.ReadinessProbe.HTTPGet == nil ||
		mgr.manager.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Error("the readiness probe must be /readyz, the webhook server's TLS check")
	}

	for _, list := range []corev1.ResourceList{mgr.manager.Resources.Requests, mgr.manager.Resources.Limits} {
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := list[name]; !ok || q.Cmp(resource.Quantity{}) <= 0 {
				t.Errorf("manager resources %+v: want requests and limits of cpu and memory", mgr.manager.Resources)
			}
		}
	}

	sa := mgr.pod.ServiceAccountName
	if sa != namePrefix+"controller-manager" {
		t.Errorf("serviceAccountName %q, want %s", sa, namePrefix+"controller-manager")
	}
	m.get(t, "ServiceAccount", sa)
}

func checkCertificate(t *testing.T, m manifests, name, mountedSecret string, dnsNames []string) {
	t.Helper()
	cert := m.get(t, "Certificate", name)
	if diff := cmp.Diff(dnsNames, nestedStrings(t, cert, "spec", "dnsNames")); diff != "" {
		t.Errorf("Certificate %s dnsNames (-want +got):\n%s", name, diff)
	}
	if got := nestedString(t, cert, "spec", "secretName"); got != mountedSecret {
		t.Errorf("Certificate %s writes Secret %s; the manager mounts %s", name, got, mountedSecret)
	}
	checkPrivateKey(t, cert, "Always")
	checkIssuerRef(t, cert, caIssuer)

	// The CA Issuer signs with the operator's own CA, which the self-signed Issuer signs and
	// which keeps its key on renewal, so leaves it signed earlier stay valid.
	issuer := m.get(t, "Issuer", caIssuer)
	ca := m.get(t, "Certificate", caCertificate)
	if got, want := nestedString(t, issuer, "spec", "ca", "secretName"), nestedString(t, ca, "spec", "secretName"); got != want {
		t.Errorf("Issuer %s signs with Secret %q; the CA Certificate %s writes %q", caIssuer, got, caCertificate, want)
	}
	if isCA, found, err := unstructured.NestedBool(ca.Object, "spec", "isCA"); err != nil || !found || !isCA {
		t.Errorf("Certificate %s: isCA %v (found %v, %v); want true", caCertificate, isCA, found, err)
	}
	checkPrivateKey(t, ca, "Never")
	checkIssuerRef(t, ca, selfSignedIssuer)
	selfSigned := m.get(t, "Issuer", selfSignedIssuer)
	if self, found, err := unstructuredMap(selfSigned, "spec", "selfSigned"); err != nil || !found || len(self) != 0 {
		t.Errorf("Issuer %s: spec %v, want selfSigned: {}", selfSignedIssuer, selfSigned.Object["spec"])
	}
}

// checkPrivateKey holds a Certificate to an ECDSA P-256 key with the given rotation policy.
func checkPrivateKey(t *testing.T, cert object, rotationPolicy string) {
	t.Helper()
	algorithm := nestedString(t, cert, "spec", "privateKey", "algorithm")
	size := nestedInt(t, cert, "spec", "privateKey", "size")
	rotation := nestedString(t, cert, "spec", "privateKey", "rotationPolicy")
	if algorithm != "ECDSA" || size != 256 || rotation != rotationPolicy {
		t.Errorf("Certificate %s privateKey %s %d rotationPolicy %s; want ECDSA 256 (P-256), %s",
			cert.GetName(), algorithm, size, rotation, rotationPolicy)
	}
}

// checkIssuerRef holds a Certificate to the namespaced Issuer of the given name.
func checkIssuerRef(t *testing.T, cert object, issuer string) {
	t.Helper()
	kind := nestedString(t, cert, "spec", "issuerRef", "kind")
	name := nestedString(t, cert, "spec", "issuerRef", "name")
	if kind != "Issuer" || name != issuer {
		t.Errorf("Certificate %s issuerRef %s %s, want Issuer %s", cert.GetName(), kind, name, issuer)
	}
}

// checkWebhooks holds a webhook configuration to the one controller-gen generated from the
// same markers the manager registers its handlers from: every webhook, path and rule as
// generated, only the Service reference and the namespaceSelector added by kustomize.
func checkWebhooks(t *testing.T, m manifests, generated manifests, namespace, kind, name string) {
	t.Helper()
	built := m.get(t, kind, namePrefix+name)

	want := generated.get(t, kind, name).DeepCopy()
	webhooks, _, err := unstructuredSlice(object{Unstructured: want}, "webhooks")
	if err != nil || len(webhooks) == 0 {
		t.Fatalf("config/webhook/manifests.yaml: %s %s has no webhooks (%v)", kind, name, err)
	}
	for _, w := range webhooks {
		hook := w.(map[string]any)
		service := hook["clientConfig"].(map[string]any)["service"].(map[string]any)
		service["name"], service["namespace"] = webhookService, namespace
		hook["namespaceSelector"] = map[string]any{"matchExpressions": []any{map[string]any{
			"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": []any{"kube-system", namespace},
		}}}
	}
	got, _, _ := unstructuredSlice(built, "webhooks")
	if diff := cmp.Diff(webhooks, got); diff != "" {
		t.Errorf("%s webhooks (-generated with Service and namespaceSelector +built):\n%s", built.key(), diff)
	}

	const injectCAFrom = "cert-manager.io/inject-ca-from"
	if got, want := built.GetAnnotations()[injectCAFrom], namespace+"/"+servingCertificate; got != want {
		t.Errorf("%s: %s=%q, want %q", built.key(), injectCAFrom, got, want)
	}

	// The same, typed: what the API server would store.
	svc := get[corev1.Service](t, m, "Service", webhookService)
	check := func(hook string, cc admissionregistrationv1.WebhookClientConfig, sel *metav1.LabelSelector, timeout *int32,
		conditions []admissionregistrationv1.MatchCondition,
	) {
		wantSelector := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-system", namespace},
		}}}
		if diff := cmp.Diff(wantSelector, sel); diff != "" {
			t.Errorf("webhook %s namespaceSelector (-want +got):\n%s", hook, diff)
		}
		// An answer takes milliseconds (docs/performance.md); the API server allows no less than 1 s.
		if timeout == nil || *timeout != 1 {
			t.Errorf("webhook %s has timeoutSeconds %v, want 1", hook, timeout)
		}
		// Updates that leave the spec as it is (labels, annotations, finalizers, the controllers'
		// own metadata writes) must never wait on the operator.
		// A v1 Welcome keeps v1alpha1's password in an annotation, which its validating webhook
		// judges: an update that changes it is sent on too.
		specOrConversionData := hook == "vwelcome-v1.auth.seedlabs.dev" && len(conditions) > 0 &&
			conditions[0].Name == "spec-or-conversion-data-changed" && strings.HasPrefix(conditions[0].Expression, specChanged.Expression+" ||\n")
		if !specOrConversionData && (len(conditions) == 0 || conditions[0] != specChanged) {
			t.Errorf("webhook %s: first matchCondition %v, want %v", hook, conditions, specChanged)
		}
		if cc.URL != nil || cc.Service == nil || cc.Service.Name != svc.Name || cc.Service.Namespace != svc.Namespace {
			t.Fatalf("webhook %s calls %+v, want Service %s/%s", hook, cc, svc.Namespace, svc.Name)
		}
		port := int32(443)
		if cc.Service.Port != nil {
			port = *cc.Service.Port
		}
		if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Port == port }) {
			t.Errorf("webhook %s calls port %d, which Service %s does not expose", hook, port, svc.Name)
		}
		if cc.Service.Path == nil || !strings.HasPrefix(*cc.Service.Path, "/") {
			t.Errorf("webhook %s has no path", hook)
		}
	}
	switch kind {
	case "MutatingWebhookConfiguration":
		for _, w := range decode[admissionregistrationv1.MutatingWebhookConfiguration](t, built).Webhooks {
			check(w.Name, w.ClientConfig, w.NamespaceSelector, w.TimeoutSeconds, w.MatchConditions)
		}
	case "ValidatingWebhookConfiguration":
		for _, w := range decode[admissionregistrationv1.ValidatingWebhookConfiguration](t, built).Webhooks {
			check(w.Name, w.ClientConfig, w.NamespaceSelector, w.TimeoutSeconds, w.MatchConditions)
		}
	default:
		t.Fatalf("not a webhook configuration kind: %s", kind)
	}
}

// specChanged is the matchCondition that sends an update to a webhook only when it changes spec.
var specChanged = admissionregistrationv1.MatchCondition{
	Name:       "spec-changed",
	Expression: "request.operation != 'UPDATE' || !has(object.spec) || !has(oldObject.spec) || object.spec != oldObject.spec",
}

func checkRBAC(t *testing.T, m manifests, generatedRole manifests, namespace string) {
	t.Helper()
	mgr := getManager(t, m)
	sa := mgr.pod.ServiceAccountName

	wantRefs := []string{"ClusterRole " + managerRole, "ClusterRole " + metricsAuthRole, "ClusterRole " + webhookTrustRole, "Role " + leaderElectionRole}
	if diff := cmp.Diff(wantRefs, roleRefs(t, m, namespace, sa)); diff != "" {
		t.Errorf("roles bound to ServiceAccount %s/%s (-want +got):\n%s", namespace, sa, diff)
	}

	generated := decode[rbacv1.ClusterRole](t, generatedRole.get(t, "ClusterRole", "manager-role"))
	built := get[rbacv1.ClusterRole](t, m, "ClusterRole", managerRole)
	if diff := cmp.Diff(generated.Rules, built.Rules); diff != "" {
		t.Errorf("ClusterRole %s differs from the generated config/rbac/role.yaml (-generated +built):\n%s", managerRole, diff)
	}

	metricsAuth := get[rbacv1.ClusterRole](t, m, "ClusterRole", metricsAuthRole).Rules
	if !allows(metricsAuth, "authentication.k8s.io", "tokenreviews", "", "create") ||
		!allows(metricsAuth, "authorization.k8s.io", "subjectaccessreviews", "", "create") {
		t.Errorf("ClusterRole %s cannot create TokenReviews and SubjectAccessReviews, which --metrics-secure needs", metricsAuthRole)
	}

	leaderElection := get[rbacv1.Role](t, m, "Role", leaderElectionRole)
	if leaderElection.Namespace != mgr.Namespace {
		t.Errorf("Role %s is in %s; the manager elects its leader in its own namespace %s",
			leaderElectionRole, leaderElection.Namespace, mgr.Namespace)
	}
	lease := operator.LeaderElectionID
	for verb, name := range map[string]string{"create": "", "get": lease, "update": lease} {
		if !allows(leaderElection.Rules, "coordination.k8s.io", "leases", name, verb) {
			t.Errorf("Role %s does not allow %s on Lease %q", leaderElectionRole, verb, name)
		}
	}
	for _, verb := range []string{"get", "update", "delete"} {
		if allows(leaderElection.Rules, "coordination.k8s.io", "leases", "someone-elses-lease", verb) {
			t.Errorf("Role %s allows %s on every Lease; want only %s", leaderElectionRole, verb, lease)
		}
	}
	// The leader election's event recorder still writes core/v1 Events.
	if !allows(leaderElection.Rules, "", "events", "", "create") || !allows(leaderElection.Rules, "", "events", "", "patch") {
		t.Errorf("Role %s does not allow creating and patching Events", leaderElectionRole)
	}

	// The manager turns ready once the two webhook configurations its flags name, the ones the
	// install holds, trust its certificate: it may get them, and nothing else.
	trust := get[rbacv1.ClusterRole](t, m, "ClusterRole", webhookTrustRole).Rules
	for resource, c := range map[string]struct{ kind, name string }{
		"mutatingwebhookconfigurations":   {"MutatingWebhookConfiguration", mgr.opts.Certs.MutatingWebhookConfiguration},
		"validatingwebhookconfigurations": {"ValidatingWebhookConfiguration", mgr.opts.Certs.ValidatingWebhookConfiguration},
	} {
		m.get(t, c.kind, c.name)
		if !allows(trust, "admissionregistration.k8s.io", resource, c.name, "get") {
			t.Errorf("ClusterRole %s does not allow getting %s %s, which the manager's flag names", webhookTrustRole, c.kind, c.name)
		}
		for _, verb := range []string{"list", "watch", "update", "patch"} {
			if allows(trust, "admissionregistration.k8s.io", resource, c.name, verb) {
				t.Errorf("ClusterRole %s allows %s on %s; want get alone", webhookTrustRole, verb, resource)
			}
		}
		if allows(trust, "admissionregistration.k8s.io", resource, "another-configuration", "get") {
			t.Errorf("ClusterRole %s allows getting every %s; want only %s", webhookTrustRole, c.kind, c.name)
		}
	}
}

// checkUserRoles holds the roles for users to the CRDs: the ClusterRoles aggregated into the
// built-in edit role (and so admin) may do everything with each namespaced kind, those aggregated
// into view may only read every kind, and nothing aggregated may change the cluster's
// AdmissionPolicy, which is the cluster admin's.
func checkUserRoles(t *testing.T, m manifests) {
	t.Helper()
	var edit, view []rbacv1.PolicyRule
	for _, o := range m.ofKind("ClusterRole") {
		role := decode[rbacv1.ClusterRole](t, o)
		l := role.Labels
		if l["rbac.authorization.k8s.io/aggregate-to-edit"] == "true" {
			if l["rbac.authorization.k8s.io/aggregate-to-admin"] != "true" {
				t.Errorf("ClusterRole %s aggregates into edit but not admin", role.Name)
			}
			edit = append(edit, role.Rules...)
		}
		if l["rbac.authorization.k8s.io/aggregate-to-view"] == "true" {
			view = append(view, role.Rules...)
		}
	}
	read := []string{"get", "list", "watch"}
	write := []string{"create", "update", "patch", "delete"}
	for _, o := range m.ofKind("CustomResourceDefinition") {
		crd := decode[apiextensionsv1.CustomResourceDefinition](t, o)
		group, plural := crd.Spec.Group, crd.Spec.Names.Plural
		for _, verb := range read {
			if !allows(view, group, plural, "", verb) {
				t.Errorf("view cannot %s %s.%s", verb, plural, group)
			}
		}
		for _, verb := range write {
			if allows(view, group, plural, "", verb) {
				t.Errorf("view may %s %s.%s; it only reads", verb, plural, group)
			}
		}
		if crd.Spec.Scope == apiextensionsv1.ClusterScoped {
			for _, verb := range write {
				if allows(edit, group, plural, "", verb) {
					t.Errorf("edit may %s the cluster-scoped %s.%s, which is the cluster admin's", verb, plural, group)
				}
			}
			continue
		}
		for _, verb := range slices.Concat(read, write) {
			if !allows(edit, group, plural, "", verb) {
				t.Errorf("edit cannot %s %s.%s", verb, plural, group)
			}
		}
		if crd.Spec.Versions[0].Subresources != nil && crd.Spec.Versions[0].Subresources.Scale != nil &&
			!allows(edit, group, plural+"/scale", "", "update") {
			t.Errorf("edit cannot scale %s.%s", plural, group)
		}
	}
}

// checkHighAvailability holds the install to what keeps the webhooks served while a manager pod
// restarts, is evicted or loses the leader election: several replicas spread over nodes, a
// disruption budget that keeps one, a termination grace period above the manager's shutdown
// delay and drain, and no optional certificate the pod waits for.
func checkHighAvailability(t *testing.T, m manifests) {
	t.Helper()
	mgr := getManager(t, m)
	replicas := ptr.Deref(mgr.Spec.Replicas, 1)
	if replicas < 2 {
		t.Errorf("the manager runs %d replica(s), want at least 2", replicas)
	}

	pdb := get[policyv1.PodDisruptionBudget](t, m, "PodDisruptionBudget", deploymentName)
	selector, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil || !selector.Matches(labels.Set(mgr.Spec.Template.Labels)) {
		t.Errorf("the PodDisruptionBudget's selector %v does not select the manager's pods (%v)", pdb.Spec.Selector, err)
	}
	if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() < 1 || int32(pdb.Spec.MinAvailable.IntValue()) >= replicas {
		t.Errorf("the PodDisruptionBudget keeps %v of %d replicas, want at least 1 and fewer than all, so a node can still drain",
			pdb.Spec.MinAvailable, replicas)
	}
	if policy := ptr.Deref(pdb.Spec.UnhealthyPodEvictionPolicy, ""); policy != policyv1.AlwaysAllow {
		t.Errorf("the PodDisruptionBudget's unhealthyPodEvictionPolicy is %q, want %s: a replica that is not ready must not block a drain",
			policy, policyv1.AlwaysAllow)
	}

	spread := mgr.pod.TopologySpreadConstraints
	if len(spread) != 1 || spread[0].TopologyKey != corev1.LabelHostname ||
		spread[0].LabelSelector == nil || !labels.SelectorFromSet(spread[0].LabelSelector.MatchLabels).Matches(labels.Set(mgr.Spec.Template.Labels)) {
		t.Errorf("topologySpreadConstraints %+v, want the manager's pods spread over %s", spread, corev1.LabelHostname)
	}

	grace := time.Duration(ptr.Deref(mgr.pod.TerminationGracePeriodSeconds, 30)) * time.Second
	if need := mgr.opts.ShutdownDelay + 15*time.Second; grace <= need {
		t.Errorf("terminationGracePeriodSeconds %v, want above the shutdown delay and drain, %v", grace, need)
	}
	// A replica that stops without being deleted (a lost leader election) leaves the Service only
	// when the kubelet sees its readiness fail: that must happen within the shutdown delay.
	if probe := mgr.manager.ReadinessProbe; probe == nil ||
		time.Duration(probe.PeriodSeconds*stdcmp.Or(probe.FailureThreshold, 3))*time.Second >= mgr.opts.ShutdownDelay {
		t.Errorf("the readiness probe %+v takes the replica out no sooner than the shutdown delay %v", probe, mgr.opts.ShutdownDelay)
	}

	serving := secretMountedAt(t, mgr.pod, mgr.manager, mgr.opts.WebhookCertDir)
	for _, v := range mgr.pod.Volumes {
		if v.Secret == nil {
			continue
		}
		essential := v.Secret.SecretName == serving
		if optional := ptr.Deref(v.Secret.Optional, false); optional == essential {
			t.Errorf("volume %s of Secret %s: optional=%t; only the webhook's serving certificate is needed to start",
				v.Name, v.Secret.SecretName, optional)
		}
	}
}

// TestMakeDeployPullsTheManagerWithIMGPullSecret: make deploy IMG_PULL_SECRET=… has the manager's
// pods pull its image with that Secret, and changes nothing else; without it they name none.
func TestMakeDeployPullsTheManagerWithIMGPullSecret(t *testing.T) {
	toolPath(t, "KUSTOMIZE")
	build := func(variables ...string) managerDeployment {
		out, err := runMake(t, append([]string{"-s", "installer"}, variables...)...)
		if err != nil {
			t.Fatalf("make installer %s: %v\n%s", strings.Join(variables, " "), err, out)
		}
		return getManager(t, parseManifests(t, "make installer", []byte(out)))
	}
	without, with := build(), build("IMG_PULL_SECRET=registry-credentials")
	if without.pod.ImagePullSecrets != nil {
		t.Errorf("without IMG_PULL_SECRET the manager pulls with %v", without.pod.ImagePullSecrets)
	}
	if want := []corev1.LocalObjectReference{{Name: "registry-credentials"}}; !slices.Equal(with.pod.ImagePullSecrets, want) {
		t.Errorf("with IMG_PULL_SECRET=registry-credentials the manager pulls with %v, want %v", with.pod.ImagePullSecrets, want)
	}
	with.pod.ImagePullSecrets = nil
	if diff := cmp.Diff(without.Deployment, with.Deployment); diff != "" {
		t.Errorf("IMG_PULL_SECRET changed more than the pull secrets (-without +with):\n%s", diff)
	}
}
