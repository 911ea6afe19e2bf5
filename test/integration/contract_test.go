package integration

import (
	"fmt"
	"os"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	authv1alpha1 "github.com/seedlabs/webhook-operator/api/auth/v1alpha1"
	cachev1alpha1 "github.com/seedlabs/webhook-operator/api/cache/v1alpha1"
	"github.com/seedlabs/webhook-operator/internal/resources"
	"github.com/seedlabs/webhook-operator/test/fixtures"
	"github.com/seedlabs/webhook-operator/test/testenv"
	"github.com/seedlabs/webhook-operator/webhooks"
)

// contractCase is a custom resource and what its controller would apply for it.
type contractCase struct {
	source string
	obj    client.Object
	// admit defaults the object and returns what validation says of it, as the webhooks do.
	admit func() field.ErrorList
	// children are the Deployment and Service the controller builds for the defaulted object.
	children func() []runtime.ApplyConfiguration
}

func deployObjectCase(source string, d *appv1.DeployObject, policy webhooks.ImagePolicy) contractCase {
	return contractCase{source: source, obj: d,
		admit: func() field.ErrorList {
			webhooks.DefaultDeployObject(d)
			errs, _ := webhooks.ValidateDeployObject(nil, d, policy)
			return errs
		},
		children: func() []runtime.ApplyConfiguration {
			owner := resources.ControllerReference(appv1.GroupVersion.String(), "DeployObject", d.Name, contractOwner)
			return []runtime.ApplyConfiguration{
				resources.DeployObjectDeployment(d).WithOwnerReferences(owner),
				resources.DeployObjectService(d).WithOwnerReferences(owner),
			}
		},
	}
}

func welcomeCase(source string, w *authv1alpha1.Welcome, policy webhooks.ImagePolicy) contractCase {
	return contractCase{source: source, obj: w,
		admit: func() field.ErrorList {
			webhooks.DefaultWelcome(w)
			errs, _ := webhooks.ValidateWelcome(nil, w, policy)
			return errs
		},
		children: func() []runtime.ApplyConfiguration {
			owner := resources.ControllerReference(authv1alpha1.GroupVersion.String(), "Welcome", w.Name, contractOwner)
			return []runtime.ApplyConfiguration{
				resources.WelcomeDeployment(w, testenv.WelcomeImage).WithOwnerReferences(owner),
				resources.WelcomeService(w).WithOwnerReferences(owner),
			}
		},
	}
}

func memcachedCase(source string, m *cachev1alpha1.Memcached) contractCase {
	return contractCase{source: source, obj: m,
		admit: func() field.ErrorList {
			webhooks.DefaultMemcached(m)
			errs, _ := webhooks.ValidateMemcached(nil, m)
			return errs
		},
		children: func() []runtime.ApplyConfiguration {
			owner := resources.ControllerReference(cachev1alpha1.GroupVersion.String(), "Memcached", m.Name, contractOwner)
			return []runtime.ApplyConfiguration{
				resources.MemcachedDeployment(m, testenv.MemcachedImage).WithOwnerReferences(owner),
				resources.MemcachedService(m).WithOwnerReferences(owner),
			}
		},
	}
}

// contractOwner is the uid the children's owner reference names; the API server does not look it up.
const contractOwner = types.UID("7c1f1d4e-2b1a-4f43-9b8e-0d2c3a4b5c6d")

// contractCorpusSize is how many objects of each kind the generated corpus holds.
const contractCorpusSize = 1500

// The contract of the webhooks: every object they admit produces a Deployment and a Service that
// the API server accepts, so nothing admitted fails later in the controller. Each case is also
// sent through the webhooks, which must admit exactly what the rules admit.
var _ = Describe("The admission contract", func() {
	It("holds for the samples, the image table and a generated corpus", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		policy, err := webhooks.NewImagePolicy(fixtures.AllowedRegistries)
		Expect(err).NotTo(HaveOccurred())

		var cases []contractCase
		for _, path := range sampleFiles("") {
			cases = append(cases, sampleCase(path, ns, policy))
		}
		for _, ref := range fixtures.ImageReferences {
			d := &appv1.DeployObject{}
			d.Name, d.Namespace = "image-table", ns
			d.Spec.Image = ref.Image
			d.Spec.Ports = []corev1.ServicePort{{Port: 80}}
			cases = append(cases, deployObjectCase("image table "+ref.Image, d, policy))
			w := &authv1alpha1.Welcome{}
			w.Name, w.Namespace = "image-table", ns
			w.Spec.Name, w.Spec.Image = "Ada", ref.Image
			cases = append(cases, welcomeCase("image table "+ref.Image, w, policy))
		}
		corpus := fixtures.NewSpecCorpus(1)
		for i := range contractCorpusSize {
			cases = append(cases,
				deployObjectCase(fmt.Sprintf("corpus DeployObject %d", i), corpus.DeployObject(ns), policy),
				welcomeCase(fmt.Sprintf("corpus Welcome %d", i), corpus.Welcome(ns), policy),
				memcachedCase(fmt.Sprintf("corpus Memcached %d", i), corpus.Memcached(ns)))
		}

		admitted, refused := map[string]int{}, map[string]int{}
		for _, c := range cases {
			kind := fmt.Sprintf("%T", c.obj)
			sent := c.obj.DeepCopyObject().(client.Object)
			errs := c.admit()
			err := k8s.Create(ctx, sent, client.DryRunAll)
			if len(errs) > 0 {
				refused[kind]++
				Expect(apierrors.IsInvalid(err)).To(BeTrue(),
					"%s: the rules refuse it (%v) but the API server answered %v:\n%s", c.source, errs, err, dump(c.obj))
				continue
			}
			admitted[kind]++
			Expect(err).NotTo(HaveOccurred(), "%s: the rules admit it but the API server refused it:\n%s", c.source, dump(c.obj))
			for _, child := range c.children() {
				Expect(k8s.Apply(ctx, child, client.DryRunAll, client.FieldOwner(resources.FieldManager), client.ForceOwnership)).
					To(Succeed(), "%s: admitted, but what the controller applies for it is refused:\n%s", c.source, dump(c.obj))
			}
		}
		AddReportEntry("webhook handling time", webhookLatency())
		AddReportEntry("admitted", admitted)
		AddReportEntry("refused", refused)
		fmt.Fprintf(GinkgoWriter, "contract: admitted %v, refused %v\n", admitted, refused)
		// The corpus must reach both sides of the rules, or the test proves little.
		for _, kind := range []string{"*v1.DeployObject", "*v1alpha1.Welcome", "*v1alpha1.Memcached"} {
			Expect(admitted[kind]).To(BeNumerically(">=", 100), "too few %s admitted", kind)
			Expect(refused[kind]).To(BeNumerically(">=", 100), "too few %s refused", kind)
		}
	})
})

// sampleCase reads a valid sample of any of the three kinds.
func sampleCase(path, ns string, policy webhooks.ImagePolicy) contractCase {
	data, err := os.ReadFile(path)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	u := readSample(path)
	var c contractCase
	switch u.GetKind() {
	case "DeployObject":
		d := &appv1.DeployObject{}
		ExpectWithOffset(1, yaml.UnmarshalStrict(data, d)).To(Succeed())
		c = deployObjectCase("sample "+path, d, policy)
	case "Welcome":
		w := &authv1alpha1.Welcome{}
		ExpectWithOffset(1, yaml.UnmarshalStrict(data, w)).To(Succeed())
		c = welcomeCase("sample "+path, w, policy)
	case "Memcached":
		m := &cachev1alpha1.Memcached{}
		ExpectWithOffset(1, yaml.UnmarshalStrict(data, m)).To(Succeed())
		c = memcachedCase("sample "+path, m)
	default:
		Fail("unknown kind in " + path)
	}
	c.obj.SetNamespace(ns)
	return c
}

func dump(obj client.Object) string {
	data, err := yaml.Marshal(obj)
	if err != nil {
		return err.Error()
	}
	return string(data)
}
