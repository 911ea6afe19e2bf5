package integration

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	"github.com/seedlabs/webhook-operator/internal/operator"
)

var _ = Describe("The admission check of the chart's helm test", func() {
	// ghcr.io is among fixtures.AllowedRegistries, the suite manager's --allowed-registries.
	const image = "ghcr.io/seedlabs/welcome-web:v0.1.0"

	It("passes where the webhooks judge, storing nothing, and fails where their namespaceSelector leaves them out", func(ctx SpecContext) {
		installNamespaceSelector(ctx, "webhook-operator-system")
		ns := newNamespace(ctx)
		saw, err := operator.CheckAdmission(ctx, k8s, ns, image)
		Expect(err).NotTo(HaveOccurred())
		Expect(saw).To(And(ContainSubstring("targetPort to 8080"), ContainSubstring("(rule deployobject.image-pull-secrets.valid)")))
		Expect(deployObjectsIn(ctx, ns)).To(BeEmpty(), "the check stored a DeployObject")

		_, err = operator.CheckAdmission(ctx, k8s, excludedNamespace, image)
		Expect(err).To(MatchError(ContainSubstring("the mutating webhook did not default it")))
		Expect(deployObjectsIn(ctx, excludedNamespace)).To(BeEmpty(), "the check stored a DeployObject")
	})
})

// deployObjectsIn lists the DeployObjects stored in namespace, from the API server.
func deployObjectsIn(ctx context.Context, namespace string) []appv1.DeployObject {
	GinkgoHelper()
	list := &appv1.DeployObjectList{}
	Expect(k8s.List(ctx, list, client.InNamespace(namespace))).To(Succeed())
	return list.Items
}
