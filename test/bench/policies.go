package main

import (
	"context"
	"fmt"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// welcomePolicies are the Welcome rules and defaults as admission policies, for the Welcome CRD's
// copies in policyGroup and mutatingPolicyGroup. The CEL restates webhooks.ValidateWelcome closely
// enough to cost the same kind of work, size limits included: the name and the image are matched
// by regular expressions where the webhook parses them.
const welcomePolicies = `
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: welcome-rules.bench.seedlabs.dev
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: [POLICY_GROUP, MUTATING_POLICY_GROUP]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [welcomes]
  matchConditions:
  - name: spec-changed
    expression: "request.operation != 'UPDATE' || !has(object.spec) || !has(oldObject.spec) || object.spec != oldObject.spec"
  validations:
  - expression: "object.metadata.name.size() <= 63 && object.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')"
    message: "metadata.name must be a DNS-1035 label"
    reason: Invalid
  - expression: "object.spec.name.trim() != ''"
    message: "spec.name: the name to greet must not be empty"
    reason: Invalid
  - expression: "bytes(object.spec.name).size() <= 256"
    message: "spec.name must be at most 256 bytes"
    reason: Invalid
  - expression: "!has(object.spec.userID) || (object.spec.userID >= 1 && object.spec.userID <= 65535)"
    message: "spec.userID must be between 1 and 65535 when set"
    reason: Invalid
  - expression: "!has(object.spec.groups) || object.spec.groups.all(g, g.trim() != '' && object.spec.groups.filter(h, h == g).size() == 1)"
    message: "spec.groups must be non-empty and unique"
    reason: Invalid
  - expression: "!has(object.spec.groups) || (object.spec.groups.size() <= 32 && object.spec.groups.all(g, bytes(g).size() <= 256))"
    message: "spec.groups must be at most 32 groups of at most 256 bytes"
    reason: Invalid
  - expression: "!has(object.spec.password) || bytes(object.spec.password).size() <= 256"
    message: "spec.password must be at most 256 bytes"
    reason: Invalid
  - expression: "!has(object.spec.email) || object.spec.email == '' || bytes(object.spec.email).size() <= 254 && object.spec.email.matches('^[^@\\\\s<>()]+@[^@\\\\s<>()]+\\\\.[^@\\\\s<>()]+$')"
    message: "spec.email must be a bare email address"
    reason: Invalid
  - expression: "!has(object.spec.replicas) || (object.spec.replicas >= 0 && object.spec.replicas <= 100)"
    message: "spec.replicas must be between 0 and 100"
    reason: Invalid
  - expression: "!has(object.spec.port) || (object.spec.port >= 1 && object.spec.port <= 65535)"
    message: "spec.port must be between 1 and 65535"
    reason: Invalid
  - expression: "!has(object.spec.serviceType) || object.spec.serviceType in ['NodePort', 'ClusterIP', 'LoadBalancer']"
    message: "spec.serviceType must be NodePort, ClusterIP or LoadBalancer"
    reason: Invalid
  - expression: >-
      !has(object.spec.image) || object.spec.image == '' ||
      (object.spec.image.matches('^([a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?/)?[a-z0-9]+([._-][a-z0-9]+)*(/[a-z0-9]+([._-][a-z0-9]+)*)*(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[a-f0-9]{64})?$')
      && (object.spec.image.contains('@') || object.spec.image.matches(':[^/]+$'))
      && !object.spec.image.endsWith(':latest'))
    message: "spec.image must be a reference with an explicit tag other than latest, or a digest"
    reason: Invalid
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: welcome-rules.bench.seedlabs.dev
spec:
  policyName: welcome-rules.bench.seedlabs.dev
  validationActions: [Deny]
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata:
  name: welcome-defaults.bench.seedlabs.dev
spec:
  failurePolicy: Fail
  reinvocationPolicy: Never
  matchConstraints:
    resourceRules:
    - apiGroups: [MUTATING_POLICY_GROUP]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [welcomes]
  matchConditions:
  - name: spec-changed
    expression: "request.operation != 'UPDATE' || !has(object.spec) || !has(oldObject.spec) || object.spec != oldObject.spec"
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: >-
        Object{spec: Object.spec{
          replicas: has(object.spec.replicas) ? object.spec.replicas : 1,
          port: has(object.spec.port) ? object.spec.port : 8088,
          serviceType: has(object.spec.serviceType) ? object.spec.serviceType : 'NodePort'}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata:
  name: welcome-defaults.bench.seedlabs.dev
spec:
  policyName: welcome-defaults.bench.seedlabs.dev
`

func (c *cluster) installPolicies(ctx context.Context) error {
	text := strings.NewReplacer("MUTATING_POLICY_GROUP", mutatingPolicyGroup, "POLICY_GROUP", policyGroup).Replace(welcomePolicies)
	for _, doc := range strings.Split(text, "\n---\n") {
		var kind struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal([]byte(doc), &kind); err != nil {
			return err
		}
		var obj client.Object
		switch kind.Kind {
		case "ValidatingAdmissionPolicy":
			obj = &admissionregistrationv1.ValidatingAdmissionPolicy{}
		case "ValidatingAdmissionPolicyBinding":
			obj = &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
		case "MutatingAdmissionPolicy":
			obj = &admissionregistrationv1.MutatingAdmissionPolicy{}
		case "MutatingAdmissionPolicyBinding":
			obj = &admissionregistrationv1.MutatingAdmissionPolicyBinding{}
		default:
			return fmt.Errorf("unexpected kind %q", kind.Kind)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			return fmt.Errorf("%s: %w", kind.Kind, err)
		}
		if err := c.client.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %s %s: %w", kind.Kind, obj.GetName(), err)
		}
	}
	return nil
}
