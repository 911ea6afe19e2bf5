package webhooks

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	policyv1 "github.com/seedlabs/webhook-operator/api/policy/v1"
)

// The CRDs' schemas bound every list (api/, their maxItems and maxProperties), and kube-apiserver
// holds an object to them before it calls a validating webhook, but after the mutating ones. The
// handlers hold an object to the bounds of the lists they walk before anything else, so that a
// request past them costs what reading it costs and no more, whoever sends it: a mutating
// webhook's call, anyone who reaches the webhook's port, or a controller judging an object stored
// before the bounds existed. The defaulting webhooks refuse such an object, as the schema would
// next; the rules report only the bounds it breaks. The mutating webhooks' within-bounds
// matchConditions keep kube-apiserver from calling them for one, so that the schema's refusal is
// what the client reads.

// maxItems is a TooMany error when a list at path holds n items, more than limit.
func maxItems(path *field.Path, n, limit int) field.ErrorList {
	if n <= limit {
		return nil
	}
	return field.ErrorList{field.TooMany(path, n, limit)}
}

// welcomeBounds are the bounds of a Welcome's lists its rules walk.
func welcomeBounds(w *authv1.Welcome) field.ErrorList {
	return maxItems(field.NewPath("spec", "groups"), len(w.Spec.Groups), authv1.MaxGroupsItems)
}

// deployObjectBounds are the bounds of a DeployObject's lists its rules and its defaulting walk.
func deployObjectBounds(d *appv1.DeployObject) field.ErrorList {
	spec := field.NewPath("spec")
	resources := spec.Child("resources")
	errs := maxItems(spec.Child("env"), len(d.Spec.Env), appv1.MaxEnvItems)
	errs = append(errs, maxItems(spec.Child("ports"), len(d.Spec.Ports), appv1.MaxPortsItems)...)
	errs = append(errs, maxItems(resources.Child("limits"), len(d.Spec.Resources.Limits), appv1.MaxResourcesProperties)...)
	errs = append(errs, maxItems(resources.Child("requests"), len(d.Spec.Resources.Requests), appv1.MaxResourcesProperties)...)
	errs = append(errs, maxItems(resources.Child("claims"), len(d.Spec.Resources.Claims), appv1.MaxClaimsItems)...)
	errs = append(errs, maxItems(spec.Child("command"), len(d.Spec.Command), appv1.MaxCommandItems)...)
	errs = append(errs, maxItems(spec.Child("args"), len(d.Spec.Args), appv1.MaxCommandItems)...)
	errs = append(errs, maxItems(spec.Child("imagePullSecrets"), len(d.Spec.ImagePullSecrets), appv1.MaxImagePullSecretsItems)...)
	for _, p := range probesOf(&d.Spec) {
		if p.probe == nil {
			continue
		}
		if p.probe.Exec != nil {
			errs = append(errs, maxItems(spec.Child(p.field, "exec", "command"), len(p.probe.Exec.Command), appv1.MaxCommandItems)...)
		}
		if p.probe.HTTPGet != nil {
			errs = append(errs, maxItems(spec.Child(p.field, "httpGet", "httpHeaders"), len(p.probe.HTTPGet.HTTPHeaders), appv1.MaxProbeHeadersItems)...)
		}
	}
	return errs
}

// maxSelectorTerms is the most labels and values the namespace selectors of one AdmissionPolicy
// hold in all. The schema bounds their numbers per selector, but not what every selector of every
// rule holds together (a CEL rule over them would cost more than kube-apiserver allows a CRD), and
// validating each costs a few microseconds: a policy of 3 MiB could hold 750,000 of them. No
// cluster has namespaces to tell apart by that many; a policy past it is refused, and a stored one
// loses the rules whose selectors lie past it.
const maxSelectorTerms = 4096

// selectorBounds are the bounds of one namespace override's selector, which takes its labels and
// values from terms, what is left of the policy's maxSelectorTerms.
func selectorBounds(o policyv1.NamespaceAction, path *field.Path, terms *int) field.ErrorList {
	errs := maxItems(path.Child("matchLabels"), len(o.Selector.MatchLabels), policyv1.MaxMatchLabelsProperties)
	errs = append(errs, maxItems(path.Child("matchExpressions"), len(o.Selector.MatchExpressions), policyv1.MaxMatchExpressionsItems)...)
	if len(errs) > 0 {
		return errs
	}
	n := len(o.Selector.MatchLabels)
	for _, e := range o.Selector.MatchExpressions {
		n += 1 + len(e.Values)
	}
	if *terms -= n; *terms < 0 {
		tooMany := field.TooMany(path, maxSelectorTerms-*terms, maxSelectorTerms)
		tooMany.Detail = fmt.Sprintf("the policy's namespace selectors may hold at most %d labels and values in all, and hold more by this one", maxSelectorTerms)
		return field.ErrorList{tooMany}
	}
	return nil
}
