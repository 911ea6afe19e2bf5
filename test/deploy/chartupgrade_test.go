package deploy

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/seedlabs/webhook-operator/test/fixtures"
)

// TestChartUpgradeGivesNewWebhooksTheInstalledCABundle: a helm upgrade that adds a webhook entry
// (an API version's new webhook, as v0.2.0 adds vwelcome-v1 and mwelcome-v1) gives it the caBundle
// the installed configuration's entries have, which the CA injector or the manager filled in:
// without it, every call to the new entry fails (x509: certificate signed by unknown authority)
// until the injector fills it in too, as the Helm upgrade e2e saw. Against kube-apiserver, with
// Helm 4 and Helm 3: the chart looks the installed configurations up.
func TestChartUpgradeGivesNewWebhooksTheInstalledCABundle(t *testing.T) {
	kubeconfigPath, c := startAPIServer(t)
	chart := filepath.Join(moduleRoot(t), "dist", "chart")
	caBundle := []byte("-----BEGIN CERTIFICATE-----\nthe installed CA\n-----END CERTIFICATE-----\n")

	for _, helm := range []string{"HELM", "HELM3"} {
		t.Run(helm, func(t *testing.T) {
			release := "webhook-operator"
			run := func(verb string) {
				t.Helper()
				if _, err := runHelmOf(t, helm, verb, release, chart, "--kubeconfig", kubeconfigPath, "--namespace", fixtures.Namespace,
					"--create-namespace", "--set", "certificates.mode=self-signed"); err != nil {
					t.Fatal(err)
				}
			}
			run("install")
			// Deferred, not a cleanup: the helm command runs under the test's context, canceled
			// before the cleanups.
			defer func() {
				if _, err := runHelmOf(t, helm, "uninstall", release, "--kubeconfig", kubeconfigPath, "--namespace", fixtures.Namespace); err != nil {
					t.Error(err)
				}
			}()

			// As the previous release and the injector left them: without the v1 entries, each
			// other entry with the CA.
			var removed []string
			edit(t, c, chartConfigurations, func(name string, cc *admissionregistrationv1.WebhookClientConfig) bool {
				if strings.Contains(name, "-v1.") {
					removed = append(removed, name)
					return false
				}
				cc.CABundle = caBundle
				return true
			})
			if len(removed) == 0 {
				t.Fatal("the chart has no v1 webhook entry to leave out")
			}

			run("upgrade")
			got := caBundles(t, c)
			for name, bundle := range got {
				if string(bundle) != string(caBundle) {
					t.Errorf("%s after the upgrade: caBundle %q, want the installed entries' %q", name, bundle, caBundle)
				}
			}
			for _, name := range removed {
				if _, ok := got[name]; !ok {
					t.Errorf("the upgrade did not add %s back", name)
				}
			}
		})
	}
}

// startAPIServer starts envtest's kube-apiserver and etcd until the test ends, and returns a
// kubeconfig of a cluster admin's for the commands the test runs, and a client.
func startAPIServer(t *testing.T) (kubeconfigPath string, c client.Client) {
	t.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run this test through `make test-deploy`")
	}
	env := &envtest.Environment{}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	admin, err := env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := admin.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	kubeconfigPath = filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	if c, err = client.New(cfg, client.Options{}); err != nil {
		t.Fatal(err)
	}
	return kubeconfigPath, c
}

// configurationNames name a mutating and a validating webhook configuration.
type configurationNames struct{ mutating, validating string }

// chartConfigurations are the chart's two webhook configurations.
var chartConfigurations = configurationNames{
	mutating: "webhook-operator-mutating-webhook-configuration", validating: "webhook-operator-validating-webhook-configuration",
}

// caBundles are the caBundles of the entries of the chart's two webhook configurations, by name.
func caBundles(t *testing.T, c client.Client) map[string][]byte {
	t.Helper()
	bundles := map[string][]byte{}
	entries(t, c, chartConfigurations, false, func(name string, cc *admissionregistrationv1.WebhookClientConfig) bool {
		bundles[name] = cc.CABundle
		return true
	})
	return bundles
}

// edit keeps the entries of the two webhook configurations names names that keep returns true
// for, after it has looked at or changed their client configuration, and writes them back.
func edit(t *testing.T, c client.Client, names configurationNames, keep func(name string, cc *admissionregistrationv1.WebhookClientConfig) bool) {
	t.Helper()
	entries(t, c, names, true, keep)
}

// entries reads the two webhook configurations names names, keeps the entries keep returns true
// for, and, when write is set, writes the configurations back.
func entries(t *testing.T, c client.Client, names configurationNames, write bool, keep func(name string, cc *admissionregistrationv1.WebhookClientConfig) bool) {
	t.Helper()
	ctx := context.Background()
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := c.Get(ctx, client.ObjectKey{Name: names.validating}, validating); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: names.mutating}, mutating); err != nil {
		t.Fatal(err)
	}
	var vs []admissionregistrationv1.ValidatingWebhook
	for i := range validating.Webhooks { // by index: keep changes the entry itself
		if w := &validating.Webhooks[i]; keep(w.Name, &w.ClientConfig) {
			vs = append(vs, *w)
		}
	}
	var ms []admissionregistrationv1.MutatingWebhook
	for i := range mutating.Webhooks {
		if w := &mutating.Webhooks[i]; keep(w.Name, &w.ClientConfig) {
			ms = append(ms, *w)
		}
	}
	validating.Webhooks, mutating.Webhooks = vs, ms
	if !write {
		return
	}
	for _, obj := range []client.Object{validating, mutating} {
		if err := c.Update(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
}
