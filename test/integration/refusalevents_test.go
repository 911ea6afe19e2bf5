package integration

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	"github.com/seedlabs/webhook-operator/api/conditions"
)

var _ = Describe("Refusal Events", func() {
	It("are bounded per namespace when every refused create has a new name", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		const refusals = 80
		suppressed := counterValue("webhook_operator_refusal_events_suppressed_total", nil)
		for range refusals {
			w := &authv1.Welcome{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "flood-"},
				Spec:       authv1.WelcomeSpec{Name: "Ada", Port: new(int32)},
			}
			err := k8s.Create(ctx, w)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		}
		Expect(counterValue("webhook_operator_refusal_events_suppressed_total", nil) - suppressed).To(BeNumerically(">=", refusals-50))
		refusalEvents := func(g Gomega) int {
			events := &eventsv1.EventList{}
			g.Expect(k8s.List(ctx, events, client.InNamespace(ns))).To(Succeed())
			n := 0
			for _, e := range events.Items {
				if e.Reason == conditions.EventReasonAdmissionRefused {
					n++
				}
			}
			return n
		}
		Eventually(refusalEvents).WithContext(ctx).Should(BeNumerically(">", 0))
		Consistently(refusalEvents).WithContext(ctx).WithTimeout(2*time.Second).Should(BeNumerically("<=", 50),
			"a namespace records at most 50 refusal Events at once")
	})
})
