package integration

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/seedlabs/webhook-operator/test/testenv"
)

// refusedSamples maps every file in config/samples/invalid to the fields its refusal must name.
var refusedSamples = map[string][]string{
	"welcome-empty-name.yaml":   {"spec.name"},
	"welcome-userid.yaml":       {"spec.userID"},
	"welcome-port.yaml":         {"spec.port"},
	"welcome-replicas.yaml":     {"spec.replicas"},
	"welcome-email.yaml":        {"spec.email"},
	"welcome-groups.yaml":       {"spec.groups[1]", "spec.groups[2]"},
	"welcome-service-type.yaml": {"spec.serviceType"},
	"welcome-everything.yaml": {
		"spec.name", "spec.userID", "spec.email", "spec.groups[1]", "spec.replicas", "spec.port", "spec.serviceType",
	},
	"memcached-size-zero.yaml":          {"spec.size"},
	"memcached-size-four.yaml":          {"spec.size"},
	"memcached-size-negative.yaml":      {".spec.size"}, // the API server's own scale subresource check
	"memcached-container-port.yaml":     {"spec.containerPort"},
	"memcached-everything.yaml":         {"spec.size", "spec.containerPort"},
	"deployobject-image-latest.yaml":    {"spec.image"},
	"deployobject-image-untagged.yaml":  {"spec.image"},
	"deployobject-image-uppercase.yaml": {"spec.image"},
	"deployobject-no-ports.yaml":        {"spec.ports"},
	"deployobject-ports.yaml":           {"spec.ports[0].name", "spec.ports[1].name", "spec.ports[1]", "spec.ports[2].protocol"},
	"deployobject-resources.yaml":       {"spec.resources.requests[cpu]"},
	"deployobject-everything.yaml": {
		"spec.image", "spec.replicas", "spec.ports[0].port", "spec.ports[0].targetPort", "spec.env[0].name",
		"spec.resources.requests[memory]",
	},
}

func readSample(path string) *unstructured.Unstructured {
	data, err := os.ReadFile(path)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	u := &unstructured.Unstructured{}
	ExpectWithOffset(1, yaml.Unmarshal(data, &u.Object)).To(Succeed(), "parsing %s", path)
	return u
}

func sampleFiles(dir string) []string {
	root, err := testenv.ModuleRoot()
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	files, err := filepath.Glob(filepath.Join(root, "config", "samples", dir, "*.yaml"))
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	ExpectWithOffset(1, files).NotTo(BeEmpty())
	return files
}

// applyAsKubectl applies an object the way `kubectl apply --server-side` does.
func applyAsKubectl(ctx SpecContext, u *unstructured.Unstructured) error {
	return k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("kubectl"))
}

var _ = Describe("Samples in config/samples", func() {
	It("are accepted when valid", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		for _, path := range sampleFiles("") {
			u := readSample(path)
			u.SetNamespace(ns)
			Expect(applyAsKubectl(ctx, u)).To(Succeed(), "applying %s", filepath.Base(path))
		}
	})

	// Every valid Welcome and Memcached sample is one the matchConditions can tell is admitted as
	// it is: kube-apiserver calls none of their webhooks. A DeployObject always has an image,
	// which only the validating webhook can judge against the image policy.
	It("reach no webhook when they are valid Welcomes and Memcacheds", Serial, func(ctx SpecContext) {
		ns := newNamespace(ctx)
		paths := []string{
			"/mutate-auth-seedlabs-dev-v1alpha1-welcome", "/validate-auth-seedlabs-dev-v1alpha1-welcome",
			"/mutate-cache-seedlabs-dev-v1alpha1-memcached", "/validate-cache-seedlabs-dev-v1alpha1-memcached",
		}
		calls := func() []float64 {
			out := make([]float64, len(paths))
			for i, p := range paths {
				out[i] = webhookCalls(p)
			}
			return out
		}
		applied := 0
		for _, path := range sampleFiles("") {
			u := readSample(path)
			if u.GetKind() != "Welcome" && u.GetKind() != "Memcached" {
				continue
			}
			u.SetNamespace(ns)
			before := calls()
			Expect(applyAsKubectl(ctx, u)).To(Succeed(), "applying %s", filepath.Base(path))
			Expect(calls()).To(Equal(before), "applying %s called a webhook (%v)", filepath.Base(path), paths)
			applied++
		}
		Expect(applied).To(BeNumerically(">=", 4))
	})

	It("are refused when invalid, naming exactly the fields they break, and nothing is stored", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		files := sampleFiles("invalid")
		names := make([]string, 0, len(files))
		for _, path := range files {
			name := filepath.Base(path)
			names = append(names, name)
			want, known := refusedSamples[name]
			Expect(known).To(BeTrue(), "%s has no expected refusal in refusedSamples", name)

			u := readSample(path)
			u.SetNamespace(ns)
			err := applyAsKubectl(ctx, u)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: want 422 Invalid, got %v", name, err)
			Expect(causes(err)).To(ConsistOf(want), "%s", name)

			stored := &unstructured.Unstructured{}
			stored.SetGroupVersionKind(u.GroupVersionKind())
			Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(u), stored))).To(BeTrue(), "%s was stored", name)
		}
		Expect(names).To(ConsistOf(keys(refusedSamples)), "refusedSamples names a file that does not exist")
	})
})

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
