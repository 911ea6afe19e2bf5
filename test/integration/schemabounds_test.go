package integration

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	cachev1 "github.com/seedlabs/webhook-operator/api/cache/v1"
	"github.com/seedlabs/webhook-operator/api/conditions"
	policyv1 "github.com/seedlabs/webhook-operator/api/policy/v1"
)

// boundCase is one structural bound of a CRD's schema: set writes into an object the value at the
// bound, or one past it.
type boundCase struct {
	kind string
	// status bounds are written through the status subresource of a stored object; the others
	// are created.
	status bool
	// name says what is bounded.
	name string
	set  func(obj map[string]any, past bool)
	// field is the field kube-apiserver's cause names; bound the limit its message states.
	field, bound string
}

// The kinds' objects as JSON, complete and valid, so that neither a lacks-a-default nor a
// may-be-refused matchCondition calls a webhook for them; each at the version stored, and a
// Welcome at v1alpha1 too, for its spec.password, which v1 has not.
var boundKinds = map[string]struct {
	kind, apiVersion, validatePath string
	spec                           func() map[string]any
}{
	"Welcome": {"Welcome", "auth.seedlabs.dev/v1", "/validate-auth-seedlabs-dev-v1-welcome", func() map[string]any {
		return map[string]any{"name": "Ada", "replicas": int64(1), "port": int64(8088), "serviceType": "NodePort"}
	}},
	"Welcome v1alpha1": {"Welcome", "auth.seedlabs.dev/v1alpha1", "/validate-auth-seedlabs-dev-v1alpha1-welcome", func() map[string]any {
		return map[string]any{"name": "Ada", "replicas": int64(1), "port": int64(8088), "serviceType": "NodePort"}
	}},
	"Memcached": {"Memcached", "cache.seedlabs.dev/v1", "/validate-cache-seedlabs-dev-v1-memcached", func() map[string]any {
		return map[string]any{"size": int64(1), "containerPort": int64(11211)}
	}},
	"DeployObject": {"DeployObject", "app.seedlabs.dev/v1", "/validate-app-seedlabs-dev-v1-deployobject", func() map[string]any {
		return map[string]any{"image": "docker.io/library/nginx:1.27", "replicas": int64(1), "ports": []any{port(80)}}
	}},
	"AdmissionPolicy": {"AdmissionPolicy", "policy.seedlabs.dev/v1", "/validate-policy-seedlabs-dev-v1-admissionpolicy", func() map[string]any {
		return map[string]any{}
	}},
}

// port is a complete Service port of a DeployObject.
func port(n int) map[string]any {
	return map[string]any{"name": fmt.Sprintf("p%d", n), "port": int64(n), "targetPort": int64(n), "protocol": "TCP"}
}

// text is n characters.
func text(n int) string { return strings.Repeat("a", n) }

// quantity is a quantity of n characters.
func quantity(n int) string { return "1" + strings.Repeat("0", n-1) }

// upTo is bound, or bound+1 past it.
func upTo(bound int, past bool) int {
	if past {
		return bound + 1
	}
	return bound
}

// items are n values made by item from their index.
func items(n int, item func(int) any) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = item(i)
	}
	return out
}

// at is the map at path below obj, made where missing.
func at(obj map[string]any, path ...string) map[string]any {
	for _, p := range path {
		next, ok := obj[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			obj[p] = next
		}
		obj = next
	}
	return obj
}

// put writes value at the dotted path, of maps, in obj.
func put(obj map[string]any, path string, value any) {
	parts := strings.Split(path, ".")
	at(obj, parts[:len(parts)-1]...)[parts[len(parts)-1]] = value
}

// lengthCase bounds the string at path (under spec or status) to bound characters.
func lengthCase(kind, path string, bound int) boundCase {
	return boundCase{kind: kind, status: strings.HasPrefix(path, "status."), name: path + " maxLength", field: path, bound: strconv.Itoa(bound),
		set: func(obj map[string]any, past bool) { put(obj, path, text(upTo(bound, past))) }}
}

// countCase bounds the list at path to bound items made by item.
func countCase(kind, path string, bound int, item func(int) any) boundCase {
	return boundCase{kind: kind, status: strings.HasPrefix(path, "status."), name: path + " maxItems", field: path, bound: strconv.Itoa(bound),
		set: func(obj map[string]any, past bool) { put(obj, path, items(upTo(bound, past), item)) }}
}

// ruleCase is a bound a CEL rule of field holds: set writes n where the rule bounds it.
func ruleCase(kind, name, field string, bound int, set func(obj map[string]any, n int)) boundCase {
	return boundCase{kind: kind, status: strings.HasPrefix(field, "status."), name: name, field: field, bound: strconv.Itoa(bound),
		set: func(obj map[string]any, past bool) { set(obj, upTo(bound, past)) }}
}

// int32Cases bound a number to [low, int32's maximum]: set writes it where it is bounded, and
// field is the field the refusal names.
func int32Cases(kind, name, field string, low int64, set func(obj map[string]any, v int64)) []boundCase {
	value := func(v, beyond int64) func(map[string]any, bool) {
		return func(obj map[string]any, past bool) {
			if past {
				v = beyond
			}
			set(obj, v)
		}
	}
	status := strings.HasPrefix(field, "status.")
	return []boundCase{
		{kind: kind, status: status, name: name + " maximum", field: field, bound: strconv.Itoa(math.MaxInt32), set: value(math.MaxInt32, math.MaxInt32+1)},
		{kind: kind, status: status, name: name + " minimum", field: field, bound: strconv.FormatInt(low, 10), set: value(low, low-1)},
	}
}

// numberAt sets the number at path.
func numberAt(path string) func(map[string]any, int64) {
	return func(obj map[string]any, v int64) { put(obj, path, v) }
}

// portNumber sets key of a DeployObject's one port.
func portNumber(key string) func(map[string]any, int64) {
	return func(obj map[string]any, v int64) {
		p := port(80)
		p[key] = v
		put(obj, "spec.ports", []any{p})
	}
}

// conditionJSON is a valid metav1.Condition of type conditionType, as JSON.
func conditionJSON(conditionType string) map[string]any {
	return map[string]any{"type": conditionType, "status": "True", "reason": "Set", "message": "", "lastTransitionTime": "2026-01-02T03:04:05Z"}
}

// schemaBoundCases are the structural bounds of the four CRDs, spec and status, except the int32
// range of the fields a may-be-refused condition reads, which a spec of their own covers.
func schemaBoundCases() []boundCase {
	env := func(obj map[string]any, v map[string]any) {
		v["name"] = "V"
		at(obj, "spec")["env"] = []any{v}
	}
	envRef := func(source, key string, bound int, base map[string]any) boundCase {
		return ruleCase("DeployObject", "spec.env[*].valueFrom."+source+"."+key+" length", "spec.env", bound, func(obj map[string]any, n int) {
			ref := maps.Clone(base)
			ref[key] = text(n)
			if key == "divisor" {
				ref[key] = quantity(n)
			}
			env(obj, map[string]any{"valueFrom": map[string]any{source: ref}})
		})
	}
	keyRef := map[string]any{"name": "settings", "key": "level"}
	fieldRef := map[string]any{"fieldPath": "metadata.name"}
	resourceFieldRef := map[string]any{"resource": "limits.cpu"}
	fileKeyRef := map[string]any{"volumeName": "config", "path": "app.env", "key": "LEVEL"}
	resourceMap := func(list string) []boundCase {
		return []boundCase{
			ruleCase("DeployObject", "spec.resources."+list+" entries", "spec.resources", appv1.MaxResourcesProperties, func(obj map[string]any, n int) {
				m := map[string]any{}
				for i := range n {
					m[fmt.Sprintf("example.com/r%d", i)] = "1"
				}
				at(obj, "spec", "resources")[list] = m
			}),
			ruleCase("DeployObject", "spec.resources."+list+" name length", "spec.resources", 317, func(obj map[string]any, n int) {
				at(obj, "spec", "resources")[list] = map[string]any{"example.com/" + text(n-len("example.com/")): "1"}
			}),
			ruleCase("DeployObject", "spec.resources."+list+" quantity length", "spec.resources", appv1.MaxQuantityLength, func(obj map[string]any, n int) {
				at(obj, "spec", "resources")[list] = map[string]any{"cpu": quantity(n)}
			}),
		}
	}
	portRule := func(key string, bound int, value func(int) any) boundCase {
		return ruleCase("DeployObject", "spec.ports[*]."+key+" length", "spec.ports", bound, func(obj map[string]any, n int) {
			p := port(80)
			p[key] = value(n)
			at(obj, "spec")["ports"] = []any{p}
		})
	}
	deploymentCondition := func(key string, bound int) boundCase {
		return ruleCase("DeployObject", "status.deploymentConditions[*]."+key+" length", "status.deploymentConditions", bound, func(obj map[string]any, n int) {
			c := map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "message": "available"}
			c[key] = text(n)
			at(obj, "status")["deploymentConditions"] = []any{c}
		})
	}
	rule := func(i int) any { return map[string]any{"id": fmt.Sprintf("example.rule-%d", i), "action": "Warn"} }
	override := func(int) any { return map[string]any{"selector": map[string]any{}, "action": "Audit"} }
	selector := func(name string, bound int, set func(map[string]any, int)) boundCase {
		return ruleCase("AdmissionPolicy", "spec.rules[*].namespaces[*].selector."+name, "spec.rules[0].namespaces[0].selector", bound, func(obj map[string]any, n int) {
			s := map[string]any{}
			set(s, n)
			at(obj, "spec")["rules"] = []any{map[string]any{"id": "welcome.email.format", "action": "Warn",
				"namespaces": []any{map[string]any{"selector": s, "action": "Audit"}}}}
		})
	}

	cases := []boundCase{
		lengthCase("Welcome", "spec.name", authv1.MaxStringLength),
		countCase("Welcome", "spec.groups", authv1.MaxGroupsItems, func(i int) any { return fmt.Sprintf("g%d", i) }),
		{kind: "Welcome", name: "spec.groups[*] maxLength", field: "spec.groups[0]", bound: strconv.Itoa(authv1.MaxStringLength),
			set: func(obj map[string]any, past bool) {
				at(obj, "spec")["groups"] = []any{text(upTo(authv1.MaxStringLength, past))}
			}},
		lengthCase("Welcome", "spec.email", authv1.MaxStringLength),
		lengthCase("Welcome v1alpha1", "spec.password", authv1.MaxStringLength),
		lengthCase("Welcome", "spec.image", authv1.MaxStringLength),
		lengthCase("Welcome", "spec.serviceType", 64),
		lengthCase("Welcome", "status.serviceURL", authv1.MaxServiceURLLength),
		countCase("Welcome", "status.conditions", conditions.MaxItems, func(i int) any { return conditionJSON(fmt.Sprintf("C%d", i)) }),

		lengthCase("Memcached", "status.selector", cachev1.MaxSelectorLength),
		countCase("Memcached", "status.nodes", cachev1.MaxNodesItems, func(i int) any { return fmt.Sprintf("cache-%d", i) }),
		{kind: "Memcached", status: true, name: "status.nodes[*] maxLength", field: "status.nodes[0]", bound: "253",
			set: func(obj map[string]any, past bool) { at(obj, "status")["nodes"] = []any{text(upTo(253, past))} }},
		countCase("Memcached", "status.conditions", conditions.MaxItems, func(i int) any { return conditionJSON(fmt.Sprintf("C%d", i)) }),

		lengthCase("DeployObject", "spec.image", appv1.MaxImageLength),
		countCase("DeployObject", "spec.env", appv1.MaxEnvItems, func(i int) any { return map[string]any{"name": fmt.Sprintf("V%d", i), "value": "x"} }),
		ruleCase("DeployObject", "spec.env[*].name length", "spec.env", appv1.MaxEnvNameLength, func(obj map[string]any, n int) {
			at(obj, "spec")["env"] = []any{map[string]any{"name": text(n)}}
		}),
		ruleCase("DeployObject", "spec.env[*].value length", "spec.env", appv1.MaxEnvValueLength, func(obj map[string]any, n int) {
			env(obj, map[string]any{"value": text(n)})
		}),
		envRef("configMapKeyRef", "name", 253, keyRef),
		envRef("configMapKeyRef", "key", 253, keyRef),
		envRef("secretKeyRef", "name", 253, keyRef),
		envRef("secretKeyRef", "key", 253, keyRef),
		envRef("fieldRef", "apiVersion", 317, fieldRef),
		envRef("fieldRef", "fieldPath", 1024, fieldRef),
		envRef("resourceFieldRef", "containerName", 63, resourceFieldRef),
		envRef("resourceFieldRef", "resource", 1024, resourceFieldRef),
		envRef("resourceFieldRef", "divisor", appv1.MaxQuantityLength, resourceFieldRef),
		envRef("fileKeyRef", "volumeName", 63, fileKeyRef),
		envRef("fileKeyRef", "path", 4096, fileKeyRef),
		envRef("fileKeyRef", "key", 4096, fileKeyRef),
		countCase("DeployObject", "spec.ports", appv1.MaxPortsItems, func(i int) any { return port(1000 + i) }),
		portRule("targetPort", 63, func(n int) any { return text(n) }),
		portRule("name", 63, func(n int) any { return text(n) }),
		portRule("protocol", 64, func(n int) any { return text(n) }),
		portRule("appProtocol", 317, func(n int) any { return text(n) }),
		ruleCase("DeployObject", "spec.resources.claims items", "spec.resources", appv1.MaxClaimsItems, func(obj map[string]any, n int) {
			at(obj, "spec", "resources")["claims"] = items(n, func(i int) any { return map[string]any{"name": fmt.Sprintf("c%d", i)} })
		}),
		ruleCase("DeployObject", "spec.resources.claims[*].name length", "spec.resources", 63, func(obj map[string]any, n int) {
			at(obj, "spec", "resources")["claims"] = []any{map[string]any{"name": text(n)}}
		}),
		ruleCase("DeployObject", "spec.resources.claims[*].request length", "spec.resources", 63, func(obj map[string]any, n int) {
			at(obj, "spec", "resources")["claims"] = []any{map[string]any{"name": "gpu", "request": text(n)}}
		}),
		countCase("DeployObject", "status.deploymentConditions", appv1.MaxDeploymentConditionsItems, func(i int) any {
			return map[string]any{"type": fmt.Sprintf("C%d", i), "status": "True"}
		}),
		deploymentCondition("type", appv1.MaxConditionTypeLength),
		deploymentCondition("status", appv1.MaxConditionStatusLength),
		deploymentCondition("reason", appv1.MaxConditionReasonLength),
		deploymentCondition("message", appv1.MaxConditionMessageLength),
		countCase("DeployObject", "status.conditions", conditions.MaxItems, func(i int) any { return conditionJSON(fmt.Sprintf("C%d", i)) }),

		countCase("AdmissionPolicy", "spec.allowedRegistries", policyv1.MaxAllowedRegistriesItems, func(i int) any { return fmt.Sprintf("r%d.example.com", i) }),
		{kind: "AdmissionPolicy", name: "spec.allowedRegistries[*] maxLength", field: "spec.allowedRegistries[0]", bound: strconv.Itoa(policyv1.MaxRegistryLength),
			set: func(obj map[string]any, past bool) {
				at(obj, "spec")["allowedRegistries"] = []any{text(upTo(policyv1.MaxRegistryLength, past))}
			}},
		countCase("AdmissionPolicy", "spec.rules", policyv1.MaxRulesItems, rule),
		{kind: "AdmissionPolicy", name: "spec.rules[*].id maxLength", field: "spec.rules[0].id", bound: strconv.Itoa(policyv1.MaxRuleIDLength),
			set: func(obj map[string]any, past bool) {
				at(obj, "spec")["rules"] = []any{map[string]any{"id": text(upTo(policyv1.MaxRuleIDLength, past)), "action": "Warn"}}
			}},
		{kind: "AdmissionPolicy", name: "spec.rules[*].action maxLength", field: "spec.rules[0].action", bound: strconv.Itoa(policyv1.MaxActionLength),
			set: func(obj map[string]any, past bool) {
				at(obj, "spec")["rules"] = []any{map[string]any{"id": "welcome.email.format", "action": text(upTo(policyv1.MaxActionLength, past))}}
			}},
		{kind: "AdmissionPolicy", name: "spec.rules[*].namespaces maxItems", field: "spec.rules[0].namespaces", bound: strconv.Itoa(policyv1.MaxNamespacesItems),
			set: func(obj map[string]any, past bool) {
				at(obj, "spec")["rules"] = []any{map[string]any{"id": "welcome.email.format", "action": "Warn",
					"namespaces": items(upTo(policyv1.MaxNamespacesItems, past), override)}}
			}},
		{kind: "AdmissionPolicy", name: "spec.rules[*].namespaces[*].action maxLength", field: "spec.rules[0].namespaces[0].action", bound: strconv.Itoa(policyv1.MaxActionLength),
			set: func(obj map[string]any, past bool) {
				at(obj, "spec")["rules"] = []any{map[string]any{"id": "welcome.email.format", "action": "Warn",
					"namespaces": []any{map[string]any{"selector": map[string]any{}, "action": text(upTo(policyv1.MaxActionLength, past))}}}}
			}},
		selector("matchLabels entries", policyv1.MaxMatchLabelsProperties, func(s map[string]any, n int) {
			labels := map[string]any{}
			for i := range n {
				labels[fmt.Sprintf("l%d", i)] = "v"
			}
			s["matchLabels"] = labels
		}),
		selector("matchExpressions items", policyv1.MaxMatchExpressionsItems, func(s map[string]any, n int) {
			s["matchExpressions"] = items(n, func(i int) any { return map[string]any{"key": fmt.Sprintf("l%d", i), "operator": "Exists"} })
		}),
		countCase("AdmissionPolicy", "status.conditions", conditions.MaxItems, func(i int) any { return conditionJSON(fmt.Sprintf("C%d", i)) }),
	}
	cases = append(cases, resourceMap("limits")...)
	cases = append(cases, resourceMap("requests")...)
	for _, key := range []string{"port", "nodePort", "targetPort"} {
		cases = append(cases, int32Cases("DeployObject", "spec.ports[*]."+key, "spec.ports", math.MinInt32, portNumber(key))...)
	}
	cases = append(cases, int32Cases("AdmissionPolicy", "spec.maxReplicas", "spec.maxReplicas", 100, numberAt("spec.maxReplicas"))...)
	cases = append(cases, int32Cases("Welcome", "status.readyReplicas", "status.readyReplicas", 0, numberAt("status.readyReplicas"))...)
	cases = append(cases, int32Cases("Memcached", "status.replicas", "status.replicas", 0, numberAt("status.replicas"))...)
	for _, field := range []string{"replicas", "updatedReplicas", "readyReplicas", "availableReplicas", "unavailableReplicas"} {
		cases = append(cases, int32Cases("DeployObject", "status."+field, "status."+field, 0, numberAt("status."+field))...)
	}
	return cases
}

var _ = Describe("The CRDs' structural bounds", admission, func() {
	It("refuse one past each bound by the schema, with a 422 naming the field, before any webhook; and let one at the bound through", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		deletePolicy(ctx) // the spec cases create the one AdmissionPolicy the webhook admits, cluster, in a dry run
		DeferCleanup(deletePolicy)
		// The stored object of each kind, whose status the status cases write in a dry run.
		stored := map[string]*unstructured.Unstructured{}
		store := func(kind string) *unstructured.Unstructured {
			if stored[kind] == nil {
				k := boundKinds[kind]
				obj := &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": k.apiVersion, "kind": k.kind,
					"metadata": map[string]any{"name": "bounds-" + strings.ToLower(strings.ReplaceAll(kind, " ", "-")), "namespace": ns}, "spec": k.spec(),
				}}
				if kind == "AdmissionPolicy" {
					obj.SetName(policyv1.PolicyName)
					obj.SetNamespace("")
				}
				Expect(k8s.Create(ctx, obj)).To(Succeed(), "storing a %s", kind)
				stored[kind] = obj
			}
			return stored[kind].DeepCopy()
		}

		cases := schemaBoundCases()
		slices.SortStableFunc(cases, func(a, b boundCase) int { return cmp.Compare(fmt.Sprint(a.status), fmt.Sprint(b.status)) })
		var failures []string
		resent := 0
		DeferCleanup(func() { AddReportEntry("requests sent again after a webhook call failed", resent) })
		for i, c := range cases {
			k := boundKinds[c.kind]
			for _, past := range []bool{false, true} {
				what := fmt.Sprintf("%s %s at the bound, %s", c.kind, c.name, c.bound)
				if past {
					what = fmt.Sprintf("%s %s one past the bound, %s", c.kind, c.name, c.bound)
				}
				validating, all := webhookCalls(k.validatePath), allWebhookCalls()
				var err error
				request := func() {
					if c.status {
						obj := map[string]any{}
						c.set(obj, past)
						patch, jsonErr := json.Marshal(obj)
						Expect(jsonErr).NotTo(HaveOccurred())
						err = k8s.Status().Patch(ctx, store(c.kind), client.RawPatch(types.MergePatchType, patch), client.DryRunAll)
					} else {
						obj := map[string]any{
							"apiVersion": k.apiVersion, "kind": k.kind,
							"metadata": map[string]any{"name": fmt.Sprintf("bound-%d", i)}, "spec": k.spec(),
						}
						if c.kind == "AdmissionPolicy" {
							at(obj, "metadata")["name"] = policyv1.PolicyName
						} else {
							at(obj, "metadata")["namespace"] = ns
						}
						c.set(obj, past)
						err = k8s.Create(ctx, &unstructured.Unstructured{Object: obj}, client.DryRunAll)
					}
				}
				request()
				// A call to a webhook proves the schema let the object through, but the case asks for
				// the webhook's answer: a call that timed out (a 1 MiB object on a loaded machine, beside
				// the suite's other control planes) is sent again, at most twice.
				for attempt := 1; !past && attempt < 3 && err != nil && strings.Contains(err.Error(), "failed calling webhook"); attempt++ {
					resent++
					request()
				}
				// Every case is checked, so that a failure lists every bound that does not hold.
				failures = append(failures, InterceptGomegaFailures(func() {
					if !past {
						// Admitted, or refused by the validating webhook the schema let it reach.
						Expect(err == nil || webhookCalls(k.validatePath) > validating).To(BeTrue(), "%s was refused before the webhook: %v", what, err)
						return
					}
					Expect(allWebhookCalls()).To(Equal(all), "%s reached a webhook: %v", what, err)
					if !apierrors.IsInvalid(err) {
						Expect(err).To(MatchError(apierrors.IsInvalid, "422 Invalid"), "%s", what)
						return
					}
					Expect(causes(err)).To(ContainElement(c.field), "%s: %v", what, err)
					Expect(err.Error()).To(ContainSubstring(c.bound), "%s: the refusal does not state the bound", what)
				})...)
			}
		}
		if len(failures) > 0 {
			Fail(fmt.Sprintf("%d of the bounds do not hold:\n\n%s", len(failures), strings.Join(failures, "\n\n")))
		}
	})
})
