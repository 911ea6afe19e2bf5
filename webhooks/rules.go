package webhooks

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	policyv1 "github.com/seedlabs/webhook-operator/api/policy/v1"
)

// RuleID names a rule admission enforces. IDs are stable: they appear in every refusal and
// warning, and a cluster admin refers to them to choose what each rule does.
type RuleID string

// Rule is one rule of admission, and what it means: what a policy may make of it, and whether it
// holds a stored spec back. The policy's compile, its judgement, the guard, lint and the plugin's
// list read these fields; none restates them.
type Rule struct {
	ID RuleID
	// Kind is the kind the rule holds.
	Kind string
	// Field is the field the rule reads.
	Field string
	// Summary says what the rule requires.
	Summary string
	// Default is what admission does about the rule when no policy changes it.
	Default policyv1.Action
	// Actions are what a policy may make of it: a contract rule protects what the operator
	// builds (an object that breaks one would be admitted and then fail when its Deployment or
	// Service is applied), so it is always Enforced; a warning names nothing to refuse, so it is
	// Warned or Audited.
	Actions []policyv1.Action
	// AdmissionOnly rules judge what is admitted, not what is stored: a stored spec that breaks
	// one is rolled out all the same. The registry allow-list is admission policy, so an image
	// admitted before the list changed keeps running.
	AdmissionOnly bool
}

// Contract reports whether the rule is always Enforced.
func (r Rule) Contract() bool {
	return slices.Equal(r.Actions, contract)
}

// What a policy may make of each sort of rule.
var (
	anyAction = []policyv1.Action{policyv1.Enforce, policyv1.Warn, policyv1.Audit}
	contract  = []policyv1.Action{policyv1.Enforce}
	warnOnly  = []policyv1.Action{policyv1.Warn, policyv1.Audit}
)

// The default actions, as the table below writes them.
const (
	enforce = policyv1.Enforce
	warn    = policyv1.Warn
)

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
	WelcomeConversionData    RuleID = "welcome.conversion-data.valid"
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
	DeployObjectPullSecrets       RuleID = "deployobject.image-pull-secrets.valid"
	DeployObjectProbes            RuleID = "deployobject.probes.valid"
)

// rules are every rule, in the order kubectl webhook-operator rules lists them and docs/rules.md
// shows them.
var rules = []Rule{
	{ID: WelcomeObjectName, Kind: "Welcome", Field: "metadata.name", Summary: "a DNS-1035 label: it names the Service and is a label value of the pods", Default: enforce, Actions: contract},
	{ID: WelcomeName, Kind: "Welcome", Field: "spec.name", Summary: "not empty or blank", Default: enforce, Actions: anyAction},
	{ID: WelcomeNameLength, Kind: "Welcome", Field: "spec.name", Summary: "at most 256 bytes", Default: enforce, Actions: anyAction},
	{ID: WelcomeUserID, Kind: "Welcome", Field: "spec.userID", Summary: "1-65535 when set", Default: enforce, Actions: anyAction},
	{ID: WelcomeGroups, Kind: "Welcome", Field: "spec.groups", Summary: "no empty names, no duplicates", Default: enforce, Actions: anyAction},
	{ID: WelcomeGroupsSize, Kind: "Welcome", Field: "spec.groups", Summary: "at most 32 groups, each at most 256 bytes", Default: enforce, Actions: anyAction},
	{ID: WelcomeEmail, Kind: "Welcome", Field: "spec.email", Summary: "a bare address such as user@example.com, at most 254 bytes (RFC 5321), when set", Default: enforce, Actions: anyAction},
	{ID: WelcomeReplicas, Kind: "Welcome", Field: "spec.replicas", Summary: "0 or more", Default: enforce, Actions: contract},
	{ID: WelcomeReplicasZero, Kind: "Welcome", Field: "spec.replicas", Summary: "0 runs no web server", Default: warn, Actions: warnOnly},
	{ID: WelcomeReplicasMax, Kind: "Welcome", Field: "spec.replicas", Summary: "at most 100, or the AdmissionPolicy's maxReplicas; Warning or Auditing the rule lifts the cap", Default: enforce, Actions: anyAction},
	{ID: WelcomePort, Kind: "Welcome", Field: "spec.port", Summary: "1-65535", Default: enforce, Actions: contract},
	{ID: WelcomeServiceType, Kind: "Welcome", Field: "spec.serviceType", Summary: "NodePort, ClusterIP or LoadBalancer", Default: enforce, Actions: contract},
	{ID: WelcomePassword, Kind: "Welcome", Field: "spec.password", Summary: "stored unencrypted in etcd", Default: warn, Actions: warnOnly},
	{ID: WelcomePasswordLength, Kind: "Welcome", Field: "spec.password", Summary: "at most 256 bytes", Default: enforce, Actions: anyAction},
	{ID: WelcomeConversionData, Kind: "Welcome", Field: "metadata.annotations[auth.seedlabs.dev/conversion-data]", Summary: "at v1, what a conversion writes, or absent: v1alpha1 reads spec.password from it", Default: enforce, Actions: anyAction, AdmissionOnly: true},
	{ID: WelcomeImageReference, Kind: "Welcome", Field: "spec.image", Summary: "a reference the container runtime can parse", Default: enforce, Actions: contract},
	{ID: WelcomeImagePinned, Kind: "Welcome", Field: "spec.image", Summary: "a tag other than latest, or a digest", Default: enforce, Actions: anyAction},
	{ID: WelcomeImageRegistry, Kind: "Welcome", Field: "spec.image", Summary: "from an allowed registry, when the allow-list is set", Default: enforce, Actions: anyAction, AdmissionOnly: true},
	{ID: WelcomeImageLatestDigest, Kind: "Welcome", Field: "spec.image", Summary: "the tag latest beside a digest is ignored", Default: warn, Actions: warnOnly},

	{ID: MemcachedObjectName, Kind: "Memcached", Field: "metadata.name", Summary: "a DNS-1035 label, as for a Welcome", Default: enforce, Actions: contract},
	{ID: MemcachedSize, Kind: "Memcached", Field: "spec.size", Summary: "1-3; keeping or lowering a stored size is always allowed", Default: enforce, Actions: anyAction},
	{ID: MemcachedSizeScaleDown, Kind: "Memcached", Field: "spec.size", Summary: "a size lowered but still above 3 is not rolled out", Default: warn, Actions: warnOnly},
	{ID: MemcachedContainerPort, Kind: "Memcached", Field: "spec.containerPort", Summary: "1-65535", Default: enforce, Actions: contract},

	{ID: DeployObjectObjectName, Kind: "DeployObject", Field: "metadata.name", Summary: "a DNS-1035 label, as for a Welcome", Default: enforce, Actions: contract},
	{ID: DeployObjectImageReference, Kind: "DeployObject", Field: "spec.image", Summary: "required; a reference the container runtime can parse", Default: enforce, Actions: contract},
	{ID: DeployObjectImagePinned, Kind: "DeployObject", Field: "spec.image", Summary: "a tag other than latest, or a digest", Default: enforce, Actions: anyAction},
	{ID: DeployObjectImageRegistry, Kind: "DeployObject", Field: "spec.image", Summary: "from an allowed registry, when the allow-list is set", Default: enforce, Actions: anyAction, AdmissionOnly: true},
	{ID: DeployObjectImageLatestDigest, Kind: "DeployObject", Field: "spec.image", Summary: "the tag latest beside a digest is ignored", Default: warn, Actions: warnOnly},
	{ID: DeployObjectReplicas, Kind: "DeployObject", Field: "spec.replicas", Summary: "0 or more", Default: enforce, Actions: contract},
	{ID: DeployObjectReplicasMax, Kind: "DeployObject", Field: "spec.replicas", Summary: "at most 100, or the AdmissionPolicy's maxReplicas; Warning or Auditing the rule lifts the cap", Default: enforce, Actions: anyAction},
	{ID: DeployObjectPorts, Kind: "DeployObject", Field: "spec.ports", Summary: "the Service API's rules for ports", Default: enforce, Actions: contract},
	{ID: DeployObjectAppProtocol, Kind: "DeployObject", Field: "spec.ports[].appProtocol", Summary: "a qualified name", Default: enforce, Actions: contract},
	{ID: DeployObjectEnv, Kind: "DeployObject", Field: "spec.env", Summary: "the Pod API's rules for environment variables", Default: enforce, Actions: contract},
	{ID: DeployObjectEnvSecrets, Kind: "DeployObject", Field: "spec.env[].valueFrom.secretKeyRef", Summary: "no Secrets: an editor could read any Secret of the namespace", Default: enforce, Actions: anyAction},
	{ID: DeployObjectEnvDuplicate, Kind: "DeployObject", Field: "spec.env[].name", Summary: "a repeated name: Kubernetes keeps the last", Default: warn, Actions: warnOnly},
	{ID: DeployObjectEnvSize, Kind: "DeployObject", Field: "spec.env", Summary: "at most 100 variables, each value at most 32 KiB, names and values at most 256 KiB in all", Default: enforce, Actions: anyAction},
	{ID: DeployObjectResources, Kind: "DeployObject", Field: "spec.resources", Summary: "the Pod API's rules for resources", Default: enforce, Actions: contract},
	{ID: DeployObjectPullSecrets, Kind: "DeployObject", Field: "spec.imagePullSecrets", Summary: "each names a Secret (a DNS-1123 subdomain), once", Default: enforce, Actions: contract},
	{ID: DeployObjectProbes, Kind: "DeployObject", Field: "spec.readinessProbe, spec.livenessProbe, spec.startupProbe", Summary: "the Pod API's rules for probes; no host (Pod Security refuses one); no httpGet.protocol or grpc.mode, which older Kubernetes lacks", Default: enforce, Actions: contract},
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
	out := slices.Clone(rules)
	for i := range out {
		out[i].Actions = slices.Clone(out[i].Actions)
	}
	return out
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

// Warning is what a rule found allowed but unwise: the rule, as data, and what it found, in the
// client's words and naming the field. It names its rule in text only where it leaves the process
// (String).
type Warning struct {
	Rule    RuleID
	Message string
}

// String is the warning as the client reads it: "spec.replicas is 0: ... (rule welcome.replicas.zero)".
func (w Warning) String() string { return w.Message + " " + ruleSuffix(w.Rule) }

// warning is a warning of rule id.
func warning(id RuleID, format string, args ...any) Warning {
	return Warning{Rule: id, Message: fmt.Sprintf(format, args...)}
}

// RenderedWarnings are warnings as the client reads them, each naming its rule (Warning.String).
func RenderedWarnings(warnings []Warning) []string {
	out := make([]string, len(warnings))
	for i, w := range warnings {
		out[i] = w.String()
	}
	return out
}

// Rendered returns copies of errs that end their detail with the rule each breaks, as a message
// that leaves the process (a refusal, a condition, an Event) shows them:
// "must be between 1 and 3 (rule memcached.size.range)". The rule stays in each error's Origin.
func Rendered(errs field.ErrorList) field.ErrorList {
	if len(errs) == 0 {
		return errs
	}
	out := make(field.ErrorList, len(errs))
	for i, e := range errs {
		out[i] = rendered(e)
	}
	return out
}

// rendered is a copy of e that ends its detail with its rule.
func rendered(e *field.Error) *field.Error {
	c := *e
	if c.Origin != "" {
		c.Detail = strings.TrimSpace(c.Detail + " " + ruleSuffix(RuleID(c.Origin)))
	}
	return &c
}

func ruleSuffix(id RuleID) string { return "(rule " + string(id) + ")" }
