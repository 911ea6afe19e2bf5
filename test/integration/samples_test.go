package integration

import (
	"bytes"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/seedlabs/webhook-operator/internal/lint"
	"github.com/seedlabs/webhook-operator/test/fixtures"
	"github.com/seedlabs/webhook-operator/test/testenv"
	"github.com/seedlabs/webhook-operator/webhooks"
)

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

var _ = Describe("Samples in config/samples", admission, func() {
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
	It("reach no webhook when they are valid Welcomes and Memcacheds", func(ctx SpecContext) {
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

	// kubectl webhook-operator lint runs the same rules offline: for every sample it must come to
	// the API server's verdict, in the API server's words.
	It("get the API server's verdict from kubectl webhook-operator lint", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		policy, err := webhooks.NewImagePolicy(fixtures.AllowedRegistries)
		Expect(err).NotTo(HaveOccurred())
		linter := lint.Linter{Policy: webhooks.DefaultPolicy(policy)}
		for _, path := range append(sampleFiles(""), sampleFiles("invalid")...) {
			name := filepath.Base(path)
			data, err := os.ReadFile(path)
			Expect(err).NotTo(HaveOccurred())
			results, err := linter.Lint(name, bytes.NewReader(data))
			Expect(err).NotTo(HaveOccurred())
			Expect(results).To(HaveLen(1), "%s", name)
			linted := results[0]

			u := readSample(path)
			u.SetNamespace(ns)
			applied := k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("kubectl"), client.DryRunAll)
			if applied == nil {
				Expect(linted.Verdict).To(Equal(lint.Valid), "%s: the API server admits it, lint says %s", name, linted.Message)
				continue
			}
			Expect(linted.Verdict).To(Equal(lint.Invalid), "%s: the API server refuses it (%v), lint does not", name, applied)
			Expect(applied.Error()).To(HaveSuffix(linted.Message), "%s: lint's message is not the API server's", name)
			fields := make([]string, 0, len(linted.Violations))
			for _, v := range linted.Violations {
				fields = append(fields, v.Field)
			}
			Expect(fields).To(Equal(causes(applied)), "%s: lint names other fields than the API server", name)
		}
	})

	It("are refused when invalid, naming exactly the fields they break, and nothing is stored", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		files := sampleFiles("invalid")
		names := make([]string, 0, len(files))
		for _, path := range files {
			name := filepath.Base(path)
			names = append(names, name)
			want, known := fixtures.RefusedSamples[name]
			Expect(known).To(BeTrue(), "%s has no expected refusal in fixtures.RefusedSamples", name)

			u := readSample(path)
			u.SetNamespace(ns)
			err := applyAsKubectl(ctx, u)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: want 422 Invalid, got %v", name, err)
			Expect(causes(err)).To(ConsistOf(want), "%s", name)

			stored := &unstructured.Unstructured{}
			stored.SetGroupVersionKind(u.GroupVersionKind())
			Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(u), stored))).To(BeTrue(), "%s was stored", name)
		}
		Expect(names).To(ConsistOf(keys(fixtures.RefusedSamples)), "fixtures.RefusedSamples names a file that does not exist")
	})
})

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
