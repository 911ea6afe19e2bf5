package webhooks

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// RuleID names a rule admission enforces. IDs are stable: they appear in every refusal and
// warning, and a cluster admin refers to them to choose what each rule does.
type RuleID string

// Rule is one rule of admission.
type Rule struct {
	ID RuleID
	// Kind is the kind the rule holds.
	Kind string
	// Field is the field the rule reads.
	Field string
	// Summary says what the rule requires.
	Summary string
	// Warning rules admit, with a warning; the others refuse.
	Warning bool
	// Contract rules protect what the operator builds: an object that breaks one would be
	// admitted and then fail when its Deployment or Service is applied. They cannot be relaxed.
	Contract bool
}

// The rules' IDs, kind by kind.
const (
	WelcomeObjectName        RuleID = "welcome.metadata-name.dns-label"
	WelcomeName              RuleID = "welcome.name.required"
	WelcomeNameLength        RuleID = "welcome.name.length"
	WelcomeUserID            RuleID = "welcome.user-id.range"
	WelcomeGroups            RuleID = "welcome.groups.valid"
	WelcomeGroupsSize        RuleID = "welcome.groups.size"
	WelcomeEmail             RuleID = "welcome.email.format"
	WelcomeReplicas          RuleID = "welcome.replicas.non-negative"
	WelcomeReplicasZero      RuleID = "welcome.replicas.zero"
	WelcomeReplicasMax       RuleID = "welcome.replicas.max"
	WelcomePort              RuleID = "welcome.port.range"
	WelcomeServiceType       RuleID = "welcome.service-type.supported"
	WelcomePassword          RuleID = "welcome.password.plaintext"
	WelcomePasswordLength    RuleID = "welcome.password.length"
	WelcomeImageReference    RuleID = "welcome.image.reference"
	WelcomeImagePinned       RuleID = "welcome.image.pinned"
	WelcomeImageRegistry     RuleID = "welcome.image.registry"
	WelcomeImageLatestDigest RuleID = "welcome.image.latest-with-digest"

	MemcachedObjectName    RuleID = "memcached.metadata-name.dns-label"
	MemcachedSize          RuleID = "memcached.size.range"
	MemcachedSizeScaleDown RuleID = "memcached.size.scale-down"
	MemcachedContainerPort RuleID = "memcached.container-port.range"

	DeployObjectObjectName        RuleID = "deployobject.metadata-name.dns-label"
	DeployObjectImageReference    RuleID = "deployobject.image.reference"
	DeployObjectImagePinned       RuleID = "deployobject.image.pinned"
	DeployObjectImageRegistry     RuleID = "deployobject.image.registry"
	DeployObjectImageLatestDigest RuleID = "deployobject.image.latest-with-digest"
	DeployObjectReplicas          RuleID = "deployobject.replicas.non-negative"
	DeployObjectReplicasMax       RuleID = "deployobject.replicas.max"
	DeployObjectPorts             RuleID = "deployobject.ports.valid"
	DeployObjectAppProtocol       RuleID = "deployobject.ports.app-protocol"
	DeployObjectEnv               RuleID = "deployobject.env.valid"
	DeployObjectEnvSecrets        RuleID = "deployobject.env.no-secrets"
	DeployObjectEnvDuplicate      RuleID = "deployobject.env.duplicate"
	DeployObjectEnvSize           RuleID = "deployobject.env.size"
	DeployObjectResources         RuleID = "deployobject.resources.valid"
)

// rules are every rule, in the order kubectl webhook-operator rules lists them and docs/rules.md
// shows them.
var rules = []Rule{
	{ID: WelcomeObjectName, Kind: "Welcome", Field: "metadata.name", Summary: "a DNS-1035 label: it names the Service and is a label value of the pods", Contract: true},
	{ID: WelcomeName, Kind: "Welcome", Field: "spec.name", Summary: "not empty or blank"},
	{ID: WelcomeNameLength, Kind: "Welcome", Field: "spec.name", Summary: "at most 256 bytes"},
	{ID: WelcomeUserID, Kind: "Welcome", Field: "spec.userID", Summary: "1-65535 when set"},
	{ID: WelcomeGroups, Kind: "Welcome", Field: "spec.groups", Summary: "no empty names, no duplicates"},
	{ID: WelcomeGroupsSize, Kind: "Welcome", Field: "spec.groups", Summary: "at most 32 groups, each at most 256 bytes"},
	{ID: WelcomeEmail, Kind: "Welcome", Field: "spec.email", Summary: "a bare address such as user@example.com, at most 254 bytes (RFC 5321), when set"},
	{ID: WelcomeReplicas, Kind: "Welcome", Field: "spec.replicas", Summary: "0 or more", Contract: true},
	{ID: WelcomeReplicasZero, Kind: "Welcome", Field: "spec.replicas", Summary: "0 runs no web server", Warning: true},
	{ID: WelcomeReplicasMax, Kind: "Welcome", Field: "spec.replicas", Summary: "at most 100, or the AdmissionPolicy's maxReplicas; Warning or Auditing the rule lifts the cap"},
	{ID: WelcomePort, Kind: "Welcome", Field: "spec.port", Summary: "1-65535", Contract: true},
	{ID: WelcomeServiceType, Kind: "Welcome", Field: "spec.serviceType", Summary: "NodePort, ClusterIP or LoadBalancer", Contract: true},
	{ID: WelcomePassword, Kind: "Welcome", Field: "spec.password", Summary: "stored unencrypted in etcd", Warning: true},
	{ID: WelcomePasswordLength, Kind: "Welcome", Field: "spec.password", Summary: "at most 256 bytes"},
	{ID: WelcomeImageReference, Kind: "Welcome", Field: "spec.image", Summary: "a reference the container runtime can parse", Contract: true},
	{ID: WelcomeImagePinned, Kind: "Welcome", Field: "spec.image", Summary: "a tag other than latest, or a digest"},
	{ID: WelcomeImageRegistry, Kind: "Welcome", Field: "spec.image", Summary: "from an allowed registry, when the allow-list is set"},
	{ID: WelcomeImageLatestDigest, Kind: "Welcome", Field: "spec.image", Summary: "the tag latest beside a digest is ignored", Warning: true},

	{ID: MemcachedObjectName, Kind: "Memcached", Field: "metadata.name", Summary: "a DNS-1035 label, as for a Welcome", Contract: true},
	{ID: MemcachedSize, Kind: "Memcached", Field: "spec.size", Summary: "1-3; keeping or lowering a stored size is always allowed"},
	{ID: MemcachedSizeScaleDown, Kind: "Memcached", Field: "spec.size", Summary: "a size lowered but still above 3 is not rolled out", Warning: true},
	{ID: MemcachedContainerPort, Kind: "Memcached", Field: "spec.containerPort", Summary: "1-65535", Contract: true},

	{ID: DeployObjectObjectName, Kind: "DeployObject", Field: "metadata.name", Summary: "a DNS-1035 label, as for a Welcome", Contract: true},
	{ID: DeployObjectImageReference, Kind: "DeployObject", Field: "spec.image", Summary: "required; a reference the container runtime can parse", Contract: true},
	{ID: DeployObjectImagePinned, Kind: "DeployObject", Field: "spec.image", Summary: "a tag other than latest, or a digest"},
	{ID: DeployObjectImageRegistry, Kind: "DeployObject", Field: "spec.image", Summary: "from an allowed registry, when the allow-list is set"},
	{ID: DeployObjectImageLatestDigest, Kind: "DeployObject", Field: "spec.image", Summary: "the tag latest beside a digest is ignored", Warning: true},
	{ID: DeployObjectReplicas, Kind: "DeployObject", Field: "spec.replicas", Summary: "0 or more", Contract: true},
	{ID: DeployObjectReplicasMax, Kind: "DeployObject", Field: "spec.replicas", Summary: "at most 100, or the AdmissionPolicy's maxReplicas; Warning or Auditing the rule lifts the cap"},
	{ID: DeployObjectPorts, Kind: "DeployObject", Field: "spec.ports", Summary: "the Service API's rules for ports", Contract: true},
	{ID: DeployObjectAppProtocol, Kind: "DeployObject", Field: "spec.ports[].appProtocol", Summary: "a qualified name", Contract: true},
	{ID: DeployObjectEnv, Kind: "DeployObject", Field: "spec.env", Summary: "the Pod API's rules for environment variables", Contract: true},
	{ID: DeployObjectEnvSecrets, Kind: "DeployObject", Field: "spec.env[].valueFrom.secretKeyRef", Summary: "no Secrets: an editor could read any Secret of the namespace"},
	{ID: DeployObjectEnvDuplicate, Kind: "DeployObject", Field: "spec.env[].name", Summary: "a repeated name: Kubernetes keeps the last", Warning: true},
	{ID: DeployObjectEnvSize, Kind: "DeployObject", Field: "spec.env", Summary: "at most 100 variables, each value at most 32 KiB, names and values at most 256 KiB in all"},
	{ID: DeployObjectResources, Kind: "DeployObject", Field: "spec.resources", Summary: "the Pod API's rules for resources", Contract: true},
}

// rulesByID finds each of rules by its ID.
var rulesByID = func() map[RuleID]Rule {
	byID := make(map[RuleID]Rule, len(rules))
	for _, r := range rules {
		byID[r.ID] = r
	}
	return byID
}()

// ruleByID is the registered rule of id, if there is one.
func ruleByID(id RuleID) (Rule, bool) {
	r, ok := rulesByID[id]
	return r, ok
}

// Rules returns every rule admission enforces.
func Rules() []Rule {
	return append([]Rule(nil), rules...)
}

// tagged sets id as the origin of the errors in errs that have none yet, and returns errs.
func tagged(errs field.ErrorList, id RuleID) field.ErrorList {
	for _, e := range errs {
		if e.Origin == "" {
			e.Origin = string(id)
		}
	}
	return errs
}

// withRuleIDs returns copies of errs that end their detail with the rule each breaks, as the
// client sees them: "must be between 1 and 3 (rule memcached.size.range)".
func withRuleIDs(errs field.ErrorList) field.ErrorList {
	if len(errs) == 0 {
		return errs
	}
	out := make(field.ErrorList, len(errs))
	for i, e := range errs {
		c := *e
		if c.Origin != "" && !strings.HasSuffix(c.Detail, ruleSuffix(RuleID(c.Origin))) {
			c.Detail = strings.TrimSpace(c.Detail + " " + ruleSuffix(RuleID(c.Origin)))
		}
		out[i] = &c
	}
	return out
}

// warning is a warning of rule id.
func warning(id RuleID, format string, args ...any) string {
	return fmt.Sprintf(format, args...) + " " + ruleSuffix(id)
}

func ruleSuffix(id RuleID) string { return "(rule " + string(id) + ")" }
