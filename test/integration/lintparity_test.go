package integration

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	policyv1 "github.com/seedlabs/webhook-operator/api/policy/v1"
	"github.com/seedlabs/webhook-operator/internal/lint"
	"github.com/seedlabs/webhook-operator/test/fixtures"
	"github.com/seedlabs/webhook-operator/webhooks"
)

// lintParityCase is a manifest that kubectl webhook-operator lint must judge as the API server
// does. In the manifest, $NS is the spec's own namespace, where objects that name none go,
// $OTHER another namespace, and $OPERATOR the namespace the operator is taken to run in.
type lintParityCase struct {
	manifest string
	// policy is the AdmissionPolicy in force, given $NS; nil is none.
	policy func(ns string) *policyv1.AdmissionPolicySpec
	// want are lint's verdicts on the objects, in order; the API server must agree with each.
	want []lint.Verdict
}

// objectsAsKubectl reads the objects of a manifest as kubectl does: each YAML document, and each
// item of a list, with the list's apiVersion and kind for an item that has neither; an object
// that names no namespace goes to namespace.
func objectsAsKubectl(manifest, namespace string) []*unstructured.Unstructured {
	GinkgoHelper()
	var objects []*unstructured.Unstructured
	reader := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(manifest)))
	for {
		document, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		Expect(err).NotTo(HaveOccurred())
		data, err := yaml.YAMLToJSON(document)
		Expect(err).NotTo(HaveOccurred())
		decoded, _, err := unstructured.UnstructuredJSONScheme.Decode(data, nil, nil)
		Expect(err).NotTo(HaveOccurred())
		switch o := decoded.(type) {
		case *unstructured.UnstructuredList:
			for i := range o.Items {
				objects = append(objects, &o.Items[i])
			}
		case *unstructured.Unstructured:
			objects = append(objects, o)
		}
	}
	for _, o := range objects {
		if o.GetNamespace() == "" {
			o.SetNamespace(namespace)
		}
	}
	return objects
}

// serverCauses are the causes of a 422 Invalid, as lint reports them, with the name the API
// server generated replaced by lint's.
func serverCauses(err error, generated, linted string) []lint.Violation {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return nil
	}
	var violations []lint.Violation
	for _, c := range status.Status().Details.Causes {
		violations = append(violations, lint.Violation{Field: c.Field, Type: string(c.Type), Message: strings.ReplaceAll(c.Message, generated, linted)})
	}
	return violations
}

var _ = Describe("kubectl webhook-operator lint and the API server", admission, func() {
	DescribeTable("come to the same verdict on each object",
		func(ctx SpecContext, tc lintParityCase) {
			ns, other, operatorNamespace := newNamespace(ctx), newNamespace(ctx), newNamespace(ctx)
			manifest := strings.NewReplacer("$NS", ns, "$OTHER", other, "$OPERATOR", operatorNamespace).Replace(tc.manifest)
			installNamespaceSelector(ctx, operatorNamespace)
			images, err := webhooks.NewImagePolicy(fixtures.AllowedRegistries)
			Expect(err).NotTo(HaveOccurred())
			policy := webhooks.DefaultPolicy(images)
			if tc.policy != nil {
				spec := tc.policy(ns)
				DeferCleanup(deletePolicy)
				setPolicy(ctx, *spec)
				compiled, errs := webhooks.NewPolicy(&policyv1.AdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: policyv1.PolicyName}, Spec: *spec}, images)
				Expect(errs).To(BeEmpty())
				policy = compiled
			}

			By("linting the manifest offline")
			linter := lint.Linter{Policy: policy, Namespace: ns, OperatorNamespace: operatorNamespace}
			results, err := linter.Lint("manifest.yaml", strings.NewReader(manifest))
			Expect(err).NotTo(HaveOccurred())
			verdicts := make([]lint.Verdict, 0, len(results))
			for _, r := range results {
				verdicts = append(verdicts, r.Verdict)
			}
			Expect(verdicts).To(Equal(tc.want), "lint's verdicts: %+v", results)

			By("creating each object as kubectl create does, and holding lint to what the API server does")
			c, warnings, err := env.NewClientWithWarnings()
			Expect(err).NotTo(HaveOccurred())
			objects := objectsAsKubectl(manifest, ns)
			Expect(objects).To(HaveLen(len(results)))
			// kube-apiserver reads the webhook configurations and the manager its policy from
			// caches: until both have seen the spec's, the API server may still disagree.
			Eventually(func(g Gomega) {
				for i, o := range objects {
					linted := results[i]
					created := o.DeepCopy()
					warnings.Take()
					err := c.Create(ctx, created, client.DryRunAll, client.FieldValidation(metav1.FieldValidationStrict))
					what := linted.Kind + " " + linted.Namespace + "/" + linted.Name
					g.Expect(linted.Namespace).To(Equal(o.GetNamespace()), "%s: lint's namespace", what)
					switch linted.Verdict {
					case lint.Valid:
						g.Expect(err).NotTo(HaveOccurred(), "%s: lint admits it, the API server refuses it", what)
						g.Expect(warnings.Take()).To(ConsistOf(linted.Warnings), "%s: the warnings", what)
					case lint.Unchecked:
						g.Expect(err).NotTo(HaveOccurred(), "%s: the webhooks are not called for it, yet the API server refuses it", what)
						// The API server's deprecation warning alone, which lint says too.
						g.Expect(warnings.Take()).To(ConsistOf(linted.Warnings), "%s: the warnings", what)
						g.Expect(linted.Warnings).NotTo(ContainElement(Not(HaveSuffix("(kubectl webhook-operator convert)"))), "%s: a webhook warned", what)
					case lint.Invalid:
						g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: lint refuses it, the API server says %v", what, err)
					default:
						Fail("no parity for verdict " + string(linted.Verdict))
					}
					generated := created.GetName()
					if status := (apierrors.APIStatus)(nil); errors.As(err, &status) && status.Status().Details != nil {
						generated = status.Status().Details.Name
					}
					if linted.GenerateName == "" {
						g.Expect(generated).To(Equal(linted.Name), "%s: the name", what)
					} else {
						g.Expect(generated).To(HavePrefix(linted.Name[:len(linted.Name)-len(lint.GeneratedNameSuffix)]), "%s: the name generated", what)
						g.Expect(generated).To(HaveLen(len(linted.Name)), "%s: the name generated", what)
					}
					if err != nil {
						g.Expect(serverCauses(err, generated, linted.Name)).To(Equal(linted.Violations), "%s: the causes", what)
						g.Expect(strings.ReplaceAll(err.Error(), generated, linted.Name)).To(HaveSuffix(linted.Message), "%s: the message", what)
					}
				}
			}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		},
		Entry("a WelcomeList with one good and one bad item", lintParityCase{
			manifest: `apiVersion: auth.seedlabs.dev/v1alpha1
kind: WelcomeList
items:
- metadata: {name: good}
  spec: {name: Ada, password: hunter2}
- apiVersion: auth.seedlabs.dev/v1alpha1
  kind: Welcome
  metadata: {name: bad}
  spec: {name: Ada, port: 0, userID: 0}
`,
			want: []lint.Verdict{lint.Valid, lint.Invalid},
		}),
		Entry("v1 Welcomes with a password where v1 keeps it, a password past its limit, and conversion data no conversion writes", lintParityCase{
			manifest: `apiVersion: auth.seedlabs.dev/v1
kind: Welcome
metadata: {name: with-password, annotations: {auth.seedlabs.dev/conversion-data: '{"spec":{"password":"hunter2"}}'}}
spec: {name: Ada}
---
apiVersion: auth.seedlabs.dev/v1
kind: Welcome
metadata: {name: long-password, annotations: {auth.seedlabs.dev/conversion-data: '{"spec":{"password":"` + strings.Repeat("p", 257) + `"}}'}}
spec: {name: Ada}
---
apiVersion: auth.seedlabs.dev/v1
kind: Welcome
metadata: {name: malformed, annotations: {auth.seedlabs.dev/conversion-data: 'hunter2'}}
spec: {name: Ada}
`,
			want: []lint.Verdict{lint.Valid, lint.Invalid, lint.Invalid},
		}),
		Entry("generateName-only objects, whose generated names are valid, or break a webhook's rule, or the API server's", lintParityCase{
			manifest: `apiVersion: auth.seedlabs.dev/v1alpha1
kind: Welcome
metadata: {generateName: hello-}
spec: {name: Ada}
---
apiVersion: app.seedlabs.dev/v1
kind: DeployObject
metadata: {generateName: web-}
spec: {image: 'docker.io/library/nginx:1.27', ports: [{port: 80}]}
---
apiVersion: app.seedlabs.dev/v1
kind: DeployObject
metadata: {generateName: a-generate-name-longer-than-the-fifty-eight-characters-kept-}
spec: {image: 'docker.io/library/nginx:1.27', ports: [{port: 80}]}
---
apiVersion: app.seedlabs.dev/v1
kind: DeployObject
metadata: {generateName: v1.web-}
spec: {image: 'docker.io/library/nginx:1.27', ports: [{port: 80}]}
---
apiVersion: cache.seedlabs.dev/v1alpha1
kind: Memcached
metadata: {generateName: Cache_}
spec: {size: 1}
`,
			want: []lint.Verdict{lint.Valid, lint.Valid, lint.Valid, lint.Invalid, lint.Invalid},
		}),
		Entry("an AdmissionPolicy override keyed on kubernetes.io/metadata.name, which every namespace has", lintParityCase{
			manifest: `apiVersion: v1
kind: List
items:
- apiVersion: auth.seedlabs.dev/v1alpha1
  kind: Welcome
  metadata: {name: enforced}
  spec: {name: Ada, email: ada-at-example.com}
- apiVersion: auth.seedlabs.dev/v1alpha1
  kind: Welcome
  metadata: {name: audited, namespace: $OTHER}
  spec: {name: Ada, email: ada-at-example.com}
`,
			policy: func(ns string) *policyv1.AdmissionPolicySpec {
				return &policyv1.AdmissionPolicySpec{Rules: []policyv1.RulePolicy{
					rulePolicy(webhooks.WelcomeEmail, policyv1.Audit, policyv1.NamespaceAction{
						Selector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
							Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: []string{ns},
						}}},
						Action: policyv1.Enforce,
					}),
				}}
			},
			want: []lint.Verdict{lint.Invalid, lint.Valid},
		}),
		Entry("objects in kube-system and the operator's namespace, which the webhooks are not called for", lintParityCase{
			manifest: `apiVersion: auth.seedlabs.dev/v1alpha1
kind: Welcome
metadata: {name: bad, namespace: kube-system}
spec: {name: Ada, port: 0}
---
apiVersion: cache.seedlabs.dev/v1alpha1
kind: Memcached
metadata: {name: too-big, namespace: $OPERATOR}
spec: {size: 9}
---
apiVersion: app.seedlabs.dev/v1
kind: DeployObject
metadata: {generateName: Web_, namespace: kube-system}
spec: {image: 'docker.io/library/nginx:1.27', ports: [{port: 80}]}
---
apiVersion: auth.seedlabs.dev/v1alpha1
kind: Welcome
metadata: {name: bad}
spec: {name: Ada, port: 0}
`,
			want: []lint.Verdict{lint.Unchecked, lint.Unchecked, lint.Invalid, lint.Invalid},
		}),
	)
})
