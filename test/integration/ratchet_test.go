package integration

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
)

// readSecret reads the key token of Secret secret into the variable name.
func readSecret(name, secret string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: "token",
	}}}
}

var _ = Describe("DeployObject ratchet", func() {
	var ns string
	BeforeEach(func(ctx SpecContext) { ns = newNamespace(ctx) })

	It("forgives a stored violation only while its field keeps its value", func(ctx SpecContext) {
		By("storing a DeployObject that reads a Secret and has a variable without a name, as if admitted before the rules")
		restore := bypassValidation(ctx, ns)
		d := newDeployObject(ns, "grandfathered", "nginx:1.27", httpPort(80))
		d.Spec.Env = []corev1.EnvVar{readSecret("TOKEN", "app-token"), {Name: "", Value: "blue"}}
		Eventually(func() error { return k8s.Create(ctx, d) }).Should(Succeed())
		restore()

		By("waiting until the API server calls the validating webhook in the namespace again")
		Eventually(func(g Gomega) {
			probe := newDeployObject(ns, "probe", "nginx:1.27", httpPort(80))
			probe.Spec.Env = []corev1.EnvVar{readSecret("TOKEN", "app-token")}
			err := k8s.Create(ctx, probe, client.DryRunAll)
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		}).WithContext(ctx).Should(Succeed())

		// patch sends the change of d that edit makes as a merge patch, which the controller's
		// status writes cannot make conflict.
		patch := func(edit func(*appv1.DeployObject)) error {
			changed := d.DeepCopy()
			edit(changed)
			return k8s.Patch(ctx, changed, client.MergeFrom(d))
		}

		By("changing replicas and labels only")
		Expect(patch(func(d *appv1.DeployObject) {
			d.Spec.Replicas = ptr.To[int32](2)
			d.Labels = map[string]string{"team": "shop"}
		})).To(Succeed())
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
		Expect(d.Spec.Replicas).To(HaveValue(BeEquivalentTo(2)))

		By("repointing the secretKeyRef to another Secret")
		err := patch(func(d *appv1.DeployObject) { d.Spec.Env[0].ValueFrom.SecretKeyRef.Name = "db-password" })
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		Expect(causes(err)).To(ConsistOf("spec.env[0].valueFrom.secretKeyRef"))
		Expect(err.Error()).To(ContainSubstring("a DeployObject may not read Secrets"))

		By("replacing the empty variable name with a blank one")
		err = patch(func(d *appv1.DeployObject) { d.Spec.Env[1].Name = " " })
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		Expect(causes(err)).To(ConsistOf("spec.env[1].name"))
		Expect(err.Error()).To(ContainSubstring("every environment variable needs a name"))

		By("finding the stored object as it was before the refusals")
		stored := &appv1.DeployObject{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(d), stored)).To(Succeed())
		Expect(stored.Spec.Env).To(Equal(d.Spec.Env))
	})
})
