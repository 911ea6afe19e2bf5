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

	t.Run("grants the manager its Secret, its two webhook configurations and its conversion webhooks, each by name, and no other read or write of their kinds", func(t *testing.T) {
		// Every role the manager has, the generated one too: it reads the CRDs by name.
		var namespaced, cluster []rbacv1.PolicyRule
		for _, ref := range roleRefs(t, m, ns, mgr.pod.ServiceAccountName) {
			kind, name, _ := strings.Cut(ref, " ")
			if kind == "Role" {
				namespaced = append(namespaced, get[rbacv1.Role](t, m, kind, name).Rules...)
			} else {
				cluster = append(cluster, get[rbacv1.ClusterRole](t, m, kind, name).Rules...)
			}
		}
		if len(certs.ConversionCRDs) != 1 {
			t.Fatalf("--cert-conversion-crds names %q; self-signed mode injects the CA into one CRD", certs.ConversionCRDs)
		}
		// cert-controller's informers list and watch each kind narrowed to the object it keeps (a
		// field selector on its name, which RBAC grants by resourceNames); it reads and writes by name.
		for _, kept := range []struct {
			rules           []rbacv1.PolicyRule
			group, resource string
			name            string
		}{
			{namespaced, "", "secrets", strings.TrimPrefix(certs.Secret, ns+"/")},
			{cluster, "admissionregistration.k8s.io", "mutatingwebhookconfigurations", certs.MutatingWebhookConfiguration},
			{cluster, "admissionregistration.k8s.io", "validatingwebhookconfigurations", certs.ValidatingWebhookConfiguration},
			{cluster, "apiextensions.k8s.io", "customresourcedefinitions", certs.ConversionCRDs[0]},
		} {
			for _, verb := range []string{"get", "list", "watch", "update"} {
				if !allows(kept.rules, kept.group, kept.resource, kept.name, verb) {
					t.Errorf("the manager cannot %s %s %s", verb, kept.resource, kept.name)
				}
			}
			for _, verb := range []string{"list", "watch"} {
				if allows(kept.rules, kept.group, kept.resource, "", verb) {
					t.Errorf("the manager may %s every one of %s; want only %s", verb, kept.resource, kept.name)
				}
			}
			for _, verb := range []string{"get", "list", "watch", "create", "update", "patch", "delete"} {
				if allows(kept.rules, kept.group, kept.resource, "someone-elses", verb) {
					t.Errorf("the manager may %s someone else's %s; want only its own, %s", verb, kept.resource, kept.name)
				}
			}
		}
	})
}
