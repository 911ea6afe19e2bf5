package deploy

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/seedlabs/webhook-operator/test/fixtures"
)

// TestConfigSelfSigned holds config/self-signed, the install without cert-manager, to what
// config/default is held to, less cert-manager, plus what the manager needs to keep its own
// certificate: the Secret it mounts named in --cert-secret, the webhook Service's DNS names, the
// two configurations to inject the CA into, and no more RBAC than that takes.
func TestConfigSelfSigned(t *testing.T) {
	root := moduleRoot(t)
	m := kustomizeBuild(t, filepath.Join(root, "config", "self-signed"))
	const ns = fixtures.Namespace

	t.Run("holds config/default's objects, without cert-manager's and with the Secret and its RBAC", func(t *testing.T) {
		var want []string
		for _, item := range defaultInventory {
			if !strings.HasPrefix(item, "Certificate ") && !strings.HasPrefix(item, "Issuer ") {
				want = append(want, item)
			}
		}
		want = append(want,
			"ClusterRole "+namePrefix+"cert-rotation-role",
			"ClusterRoleBinding "+namePrefix+"cert-rotation-rolebinding",
			"Role "+ns+"/"+namePrefix+"cert-rotation-role",
			"RoleBinding "+ns+"/"+namePrefix+"cert-rotation-rolebinding",
			"Secret "+ns+"/"+namePrefix+"webhook-server-cert",
		)
		slices.Sort(want)
		checkInventory(t, m, want)
		checkNamesAndNamespaces(t, m, ns)
		checkRestricted(t, getManager(t, m).pod)
		checkHighAvailability(t, m)
		checkManagerConfiguration(t, m)
	})

	mgr := getManager(t, m)
	certs := mgr.opts.Certs
	t.Run("has the manager keep the certificate in the Secret it mounts, for the webhook Service's names", func(t *testing.T) {
		secret := secretMountedAt(t, mgr.pod, mgr.manager, mgr.opts.WebhookCertDir)
		if want := ns + "/" + secret; certs.Secret != want {
			t.Errorf("--cert-secret=%q; the webhook certificate directory mounts Secret %s", certs.Secret, want)
		}
		if diff := cmp.Diff(serviceDNSNames(webhookService, ns), certs.DNSNames); diff != "" {
			t.Errorf("--cert-dns-names (-webhook Service's +flag):\n%s", diff)
		}
		for flag, kind := range map[string]string{
			certs.MutatingWebhookConfiguration:   "MutatingWebhookConfiguration",
			certs.ValidatingWebhookConfiguration: "ValidatingWebhookConfiguration",
		} {
			configuration := m.get(t, kind, flag)
			if a, ok := configuration.GetAnnotations()["cert-manager.io/inject-ca-from"]; ok {
				t.Errorf("%s still asks cert-manager to inject its CA (%s)", configuration.key(), a)
			}
		}
		// The manager injects its CA into the conversion webhooks --cert-conversion-crds names,
		// which checkConversionWebhooks holds to the CRDs that have one.
		for _, name := range checkConversionWebhooks(t, m, ns) {
			crd := m.get(t, "CustomResourceDefinition", name)
			if a, ok := crd.GetAnnotations()["cert-manager.io/inject-ca-from"]; ok {
				t.Errorf("%s still asks cert-manager to inject its CA (%s)", crd.key(), a)
			}
		}
	})

	t.Run("grants the manager its Secret and the caBundles of its two webhook configurations and its conversion webhooks, and no other write", func(t *testing.T) {
		var namespaced, cluster []rbacv1.PolicyRule
		for _, ref := range roleRefs(t, m, ns, mgr.pod.ServiceAccountName) {
			kind, name, _ := strings.Cut(ref, " ")
			if !strings.Contains(name, "cert-rotation") {
				continue
			}
			if kind == "Role" {
				namespaced = append(namespaced, get[rbacv1.Role](t, m, kind, name).Rules...)
			} else {
				cluster = append(cluster, get[rbacv1.ClusterRole](t, m, kind, name).Rules...)
			}
		}
		secret := strings.TrimPrefix(certs.Secret, ns+"/")
		// cert-controller's informers list and watch without a name; it reads and writes by name.
		for _, verb := range []string{"list", "watch"} {
			if !allows(namespaced, "", "secrets", "", verb) {
				t.Errorf("the manager cannot %s the Secrets of its namespace, which cert-controller's informer does", verb)
			}
		}
		for _, verb := range []string{"get", "update"} {
			if !allows(namespaced, "", "secrets", secret, verb) {
				t.Errorf("the manager cannot %s its Secret %s", verb, secret)
			}
		}
		for _, verb := range []string{"create", "update", "patch", "delete"} {
			if allows(namespaced, "", "secrets", "another-secret", verb) {
				t.Errorf("the manager may %s any Secret of its namespace; want only an update of its own", verb)
			}
		}
		for resource, name := range map[string]string{
			"mutatingwebhookconfigurations":   certs.MutatingWebhookConfiguration,
			"validatingwebhookconfigurations": certs.ValidatingWebhookConfiguration,
		} {
			for _, verb := range []string{"list", "watch"} {
				if !allows(cluster, "admissionregistration.k8s.io", resource, "", verb) {
					t.Errorf("the manager cannot %s %s, which cert-controller's informer does", verb, resource)
				}
			}
			for _, verb := range []string{"get", "update"} {
				if !allows(cluster, "admissionregistration.k8s.io", resource, name, verb) {
					t.Errorf("the manager cannot %s %s %s", verb, resource, name)
				}
			}
			for _, verb := range []string{"create", "update", "patch", "delete"} {
				if allows(cluster, "admissionregistration.k8s.io", resource, "someone-elses-webhooks", verb) {
					t.Errorf("the manager may %s every one of the cluster's %s; want only an update of its own", verb, resource)
				}
			}
		}
		if len(certs.ConversionCRDs) == 0 {
			t.Error("--cert-conversion-crds names no CRD")
		}
		for _, verb := range []string{"list", "watch"} {
			if !allows(cluster, "apiextensions.k8s.io", "customresourcedefinitions", "", verb) {
				t.Errorf("the manager cannot %s CustomResourceDefinitions, which cert-controller's informer does", verb)
			}
		}
		for _, name := range certs.ConversionCRDs {
			if !allows(cluster, "apiextensions.k8s.io", "customresourcedefinitions", name, "update") {
				t.Errorf("the manager cannot update CustomResourceDefinition %s, to inject its CA", name)
			}
		}
		for _, verb := range []string{"create", "update", "patch", "delete"} {
			if allows(cluster, "apiextensions.k8s.io", "customresourcedefinitions", "someone-elses.example.com", verb) {
				t.Errorf("the manager may %s every CustomResourceDefinition; want only an update of its own", verb)
			}
		}
	})
}
