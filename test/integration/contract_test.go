package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	cachev1 "github.com/seedlabs/webhook-operator/api/cache/v1"
	policyv1 "github.com/seedlabs/webhook-operator/api/policy/v1"
	"github.com/seedlabs/webhook-operator/internal/reconcile/apply"
	"github.com/seedlabs/webhook-operator/internal/resources"
	"github.com/seedlabs/webhook-operator/test/fixtures"
	"github.com/seedlabs/webhook-operator/test/testenv"
	"github.com/seedlabs/webhook-operator/webhooks"
)

// contractCase is a custom resource and what its controller would apply for it.
type contractCase struct {
	kind   string
	source string
	obj    client.Object
	// exact cases are ones the API server must judge as the rules do. The others come from the
	// fuzz corpus, which also holds objects the API server refuses for its own reasons, such as
	// metadata it does not accept.
	exact bool
	// admit defaults the object and returns what validation says of it, as the webhooks do.
	admit func() field.ErrorList
	// children are the Deployment and Service the controller builds for obj, defaulted.
	children func(obj client.Object) []runtime.ApplyConfiguration
}

func deployObjectCase(source string, d *appv1.DeployObject, policy webhooks.ImagePolicy) contractCase {
	return contractCase{kind: "DeployObject", source: source, obj: d, exact: true,
		admit: func() field.ErrorList {
			errs, _, _ := webhooks.DeployObject.Admit(d, webhooks.DefaultPolicy(policy))
			return errs
		},
		children: func(obj client.Object) []runtime.ApplyConfiguration {
			d := obj.(*appv1.DeployObject)
			owner := resources.ControllerReference(appv1.GroupVersion.String(), "DeployObject", d.Name, contractOwner)
			return []runtime.ApplyConfiguration{
				resources.DeployObjectDeployment(d).WithOwnerReferences(owner),
				resources.DeployObjectService(d).WithOwnerReferences(owner),
			}
		},
	}
}

func welcomeCase(source string, w *authv1.Welcome, policy webhooks.ImagePolicy) contractCase {
	return contractCase{kind: "Welcome", source: source, obj: w, exact: true,
		admit: func() field.ErrorList {
			errs, _, ok := webhooks.WelcomeV1.Admit(w, webhooks.DefaultPolicy(policy))
			Expect(ok).To(BeTrue(), "a %T is a Welcome of Kinds()", w)
			return errs
		},
		children: func(obj client.Object) []runtime.ApplyConfiguration {
			w := obj.(*authv1.Welcome)
			owner := resources.ControllerReference(authv1.GroupVersion.String(), "Welcome", w.Name, contractOwner)
			return []runtime.ApplyConfiguration{
				resources.WelcomeDeployment(w, testenv.WelcomeImage).WithOwnerReferences(owner),
				resources.WelcomeService(w).WithOwnerReferences(owner),
			}
		},
	}
}

func memcachedCase(source string, m *cachev1.Memcached) contractCase {
	return contractCase{kind: "Memcached", source: source, obj: m, exact: true,
		admit: func() field.ErrorList {
			errs, _, ok := webhooks.MemcachedV1.Admit(m, nil)
			Expect(ok).To(BeTrue(), "a %T is a Memcached of Kinds()", m)
			return errs
		},
		children: func(obj client.Object) []runtime.ApplyConfiguration {
			m := obj.(*cachev1.Memcached)
			owner := resources.ControllerReference(cachev1.GroupVersion.String(), "Memcached", m.Name, contractOwner)
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

// breaksContract reports whether errs break a contract rule, which no policy can relax.
func breaksContract(errs field.ErrorList) bool {
	for _, e := range errs {
		if !relaxable[webhooks.RuleID(e.Origin)] {
			return true
		}
	}
	return false
}

// relaxable are the rules that refuse and that a policy may set to Audit.
var relaxable = func() map[webhooks.RuleID]bool {
	ids := map[webhooks.RuleID]bool{}
	for _, r := range webhooks.Rules() {
		if slices.Contains(r.Actions, policyv1.Audit) && r.Default == policyv1.Enforce {
			ids[r.ID] = true
		}
	}
	return ids
}()

// relaxedPolicy Audits every rule a policy may relax, in the namespaces labelled contract=relaxed,
// and leaves the rest of the cluster to the defaults.
func relaxedPolicy() policyv1.AdmissionPolicySpec {
	spec := policyv1.AdmissionPolicySpec{AllowedRegistries: fixtures.AllowedRegistries}
	for _, r := range webhooks.Rules() {
		if relaxable[r.ID] {
			spec.Rules = append(spec.Rules, rulePolicy(r.ID, policyv1.Enforce, policyv1.NamespaceAction{
				Selector: metav1.LabelSelector{MatchLabels: map[string]string{"contract": "relaxed"}},
				Action:   policyv1.Audit,
			}))
		}
	}
	return spec
}

// The contract of the webhooks: every object they admit produces a Deployment and a Service that
// the API server accepts, so nothing admitted fails later in the controller, under any policy.
// Each case is sent through the webhooks, which must judge it as the rules do under the default
// policy; one that breaks only rules a policy may relax is sent again to a namespace where the
// policy Audits them all. Whatever the API server admits, in either namespace, has its Deployment
// and Service built from the object as the API server would store it, and server-side dry-run
// applied. Each kind is a spec of its own, for the suite's processes to share them.
var _ = Describe("The admission contract", admission, func() {
	DescribeTable("holds for the samples, the fixture tables, a generated corpus and the fuzz corpus, under the default and a relaxed policy", func(ctx SpecContext, kind string) {
		strict, relaxed := newNamespace(ctx), newNamespace(ctx)
		namespace := &corev1.Namespace{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: relaxed}, namespace)).To(Succeed())
		namespace.Labels = map[string]string{"contract": "relaxed"}
		Expect(k8s.Update(ctx, namespace)).To(Succeed())
		DeferCleanup(deletePolicy)
		setPolicy(ctx, relaxedPolicy())
		Eventually(func(g Gomega) {
			probe := newMemcached(relaxed, "probe", ptr.To[int32](5))
			g.Expect(k8s.Create(ctx, probe, client.DryRunAll)).To(Succeed())
		}).WithContext(ctx).WithTimeout(30*time.Second).Should(Succeed(), "the relaxed policy never took effect")

		policy, err := webhooks.NewImagePolicy(fixtures.AllowedRegistries)
		Expect(err).NotTo(HaveOccurred())
		var cases []contractCase
		for _, path := range sampleFiles("") {
			cases = append(cases, sampleCase(path, policy))
		}
		for _, ref := range fixtures.ImageReferences {
			d := fixtures.EdgeDeployObject("", "image-table")
			d.Spec.Image = ref.Image
			cases = append(cases, deployObjectCase("image table "+ref.Image, d, policy))
			w := &authv1.Welcome{}
			w.Name = "image-table"
			w.Spec.Name, w.Spec.Image = "Ada", ref.Image
			cases = append(cases, welcomeCase("image table "+ref.Image, w, policy))
		}
		for _, edge := range fixtures.DeployObjectEdges {
			d := fixtures.EdgeDeployObject("", "edge")
			edge.Edit(d)
			cases = append(cases, deployObjectCase("edge table: "+edge.Name, d, policy))
		}
		corpus := fixtures.NewSpecCorpus(1)
		for i := range contractCorpusSize {
			cases = append(cases,
				deployObjectCase(fmt.Sprintf("corpus DeployObject %d", i), corpus.DeployObject(""), policy),
				welcomeCase(fmt.Sprintf("corpus Welcome %d", i), corpus.Welcome(""), policy),
				memcachedCase(fmt.Sprintf("corpus Memcached %d", i), corpus.Memcached("")))
		}
		cases = append(cases, fuzzCorpusCases(policy)...)
		cases = slices.DeleteFunc(cases, func(c contractCase) bool { return c.kind != kind })

		counts := map[string]int{}
		for _, c := range cases {
			sent := c.obj.DeepCopyObject().(client.Object)
			sent.SetNamespace(strict)
			errs := c.admit()
			err := k8s.Create(ctx, sent, client.DryRunAll)
			switch {
			case len(errs) > 0:
				Expect(apierrors.IsInvalid(err)).To(BeTrue(),
					"%s: the rules refuse it (%v) but the API server answered %v:\n%s", c.source, errs, err, dump(c.obj))
			case c.exact:
				Expect(err).NotTo(HaveOccurred(), "%s: the rules admit it but the API server refused it:\n%s", c.source, dump(c.obj))
			case err != nil:
				// A fuzzed object the API server refuses for reasons of its own; none may be a rule's.
				Expect(err.Error()).NotTo(Or(ContainSubstring("(rule "), ContainSubstring("failed calling webhook")),
					"%s: the rules admit it but the webhooks refused it:\n%s", c.source, dump(c.obj))
				counts["refused by the API server"]++
				continue
			}
			if err == nil {
				counts["admitted"]++
			} else {
				if breaksContract(errs) {
					counts["refused"]++
					continue
				}
				sent = c.obj.DeepCopyObject().(client.Object)
				sent.SetNamespace(relaxed)
				if err := k8s.Create(ctx, sent, client.DryRunAll); err != nil {
					// Refused by the API server's own checks, such as the scale subresource's.
					Expect(err.Error()).NotTo(Or(ContainSubstring("(rule "), ContainSubstring("failed calling webhook")),
						"%s: it breaks only rules the relaxed policy Audits (%v):\n%s", c.source, errs, dump(c.obj))
					counts["refused by the API server"]++
					continue
				}
				counts["admitted only under the relaxed policy"]++
			}
			for _, child := range c.children(sent) {
				Expect(k8s.Apply(ctx, child, client.DryRunAll, client.FieldOwner(apply.FieldManager), client.ForceOwnership)).
					To(Succeed(), "%s: admitted, but what the controller applies for it is refused:\n%s", c.source, dump(sent))
			}
		}
		AddReportEntry("webhook handling time", webhookLatency())
		AddReportEntry("cases", counts)
		fmt.Fprintf(GinkgoWriter, "contract of %s: %v\n", kind, counts)
		// Each kind must reach every side of the rules, or the test proves little.
		Expect(counts["admitted"]).To(BeNumerically(">=", 100), "too few %s admitted", kind)
		Expect(counts["refused"]).To(BeNumerically(">=", 100), "too few %s refused", kind)
		Expect(counts["admitted only under the relaxed policy"]).To(BeNumerically(">=", 10),
			"too few %s admitted only under the relaxed policy", kind)
	},
		Entry("of DeployObjects", "DeployObject"),
		Entry("of Welcomes", "Welcome"),
		Entry("of Memcacheds", "Memcached"),
	)
})

// fuzzCorpusCases are the inputs of the webhooks' fuzz targets that webhooks/testdata/fuzz keeps,
// each made into the object its target sends: the DeployObjects of FuzzDeployObjectSpec, whose
// fuzzer chooses the value of every field a rule of the Pod or Service API reads, and the JSON
// objects of the kinds' own targets that decode as their kind.
func fuzzCorpusCases(policy webhooks.ImagePolicy) []contractCase {
	var cases []contractCase
	for _, file := range fuzzCorpus("FuzzDeployObjectSpec") {
		values := readFuzzInput(file)
		Expect(values).To(HaveLen(len(fixtures.FuzzedSpec{})), "%s is not an input of FuzzDeployObjectSpec", file)
		var spec fixtures.FuzzedSpec
		copy(spec[:], values)
		c := deployObjectCase("fuzz corpus "+filepath.Base(file), spec.DeployObject(""), policy)
		c.exact = false // the fuzzer also chooses names, which the API server may refuse before the webhooks
		cases = append(cases, c)
	}
	for _, target := range []struct {
		name string
		make func(source string, data []byte) (contractCase, bool)
	}{
		{"FuzzDeployObjectAdmission", func(source string, data []byte) (contractCase, bool) {
			d := &appv1.DeployObject{}
			ok := decodeFuzzed(data, "DeployObject", d)
			return deployObjectCase(source, d, policy), ok
		}},
		{"FuzzWelcomeAdmission", func(source string, data []byte) (contractCase, bool) {
			w := &authv1.Welcome{}
			ok := decodeFuzzed(data, "Welcome", w)
			return welcomeCase(source, w, policy), ok
		}},
		{"FuzzMemcachedAdmission", func(source string, data []byte) (contractCase, bool) {
			m := &cachev1.Memcached{}
			ok := decodeFuzzed(data, "Memcached", m)
			return memcachedCase(source, m), ok
		}},
	} {
		for _, file := range fuzzCorpus(target.name) {
			values := readFuzzInput(file)
			Expect(values).To(HaveLen(1), "%s is not an input of %s", file, target.name)
			if c, ok := target.make("fuzz corpus "+filepath.Base(file), []byte(values[0])); ok {
				c.exact = false
				cases = append(cases, c)
			}
		}
	}
	return cases
}

// fuzzCorpus are the files of the corpus webhooks/testdata/fuzz keeps for a fuzz target.
func fuzzCorpus(target string) []string {
	files, err := filepath.Glob(filepath.Join("..", "..", "webhooks", "testdata", "fuzz", target, "*"))
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	ExpectWithOffset(1, files).NotTo(BeEmpty(), "no fuzz corpus of %s", target)
	return files
}

// readFuzzInput reads the values of a file of a Go fuzz corpus whose inputs are strings or []byte.
func readFuzzInput(file string) []string {
	data, err := os.ReadFile(file)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	ExpectWithOffset(1, lines[0]).To(Equal("go test fuzz v1"), "%s", file)
	var values []string
	for _, line := range lines[1:] {
		literal, found := "", false
		for _, kind := range []string{"[]byte(", "string("} {
			if rest, ok := strings.CutPrefix(line, kind); ok {
				literal, found = strings.TrimSuffix(rest, ")"), true
			}
		}
		ExpectWithOffset(1, found).To(BeTrue(), "%s: %q is neither a string nor a []byte", file, line)
		value, err := strconv.Unquote(literal)
		ExpectWithOffset(1, err).NotTo(HaveOccurred(), "%s", file)
		values = append(values, value)
	}
	return values
}

// decodeFuzzed decodes data into obj when it is a JSON object of kind, as the webhook's decoder
// reads it, and readies it for a create: no resourceVersion, no generated name, in no namespace yet.
func decodeFuzzed(data []byte, kind string, obj client.Object) bool {
	var meta metav1.TypeMeta
	if json.Unmarshal(data, &meta) != nil || meta.Kind != kind || json.Unmarshal(data, obj) != nil {
		return false
	}
	obj.SetResourceVersion("")
	obj.SetGenerateName("")
	if obj.GetName() == "" {
		obj.SetName("fuzzed")
	}
	return true
}

// sampleCase reads a valid sample of any of the three kinds.
func sampleCase(path string, policy webhooks.ImagePolicy) contractCase {
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
		w := &authv1.Welcome{}
		ExpectWithOffset(1, yaml.UnmarshalStrict(data, w)).To(Succeed())
		c = welcomeCase("sample "+path, w, policy)
	case "Memcached":
		m := &cachev1.Memcached{}
		ExpectWithOffset(1, yaml.UnmarshalStrict(data, m)).To(Succeed())
		c = memcachedCase("sample "+path, m)
	default:
		Fail("unknown kind in " + path)
	}
	return c
}

func dump(obj client.Object) string {
	data, err := yaml.Marshal(obj)
	if err != nil {
		return err.Error()
	}
	return string(data)
}
