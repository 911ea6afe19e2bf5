package webhooks

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The size limits hold what a tenant's custom resource may make the manager keep: every Welcome
// and DeployObject is cached whole, with the Deployment built from it. They are rules that are not
// part of the contract, so a cluster admin lifts them, for the cluster or for some namespaces, by
// setting their rules to Warn or Audit in the AdmissionPolicy; its maxReplicas raises the
// replica cap for the cluster.

// defaultMaxReplicas is the most pods a Welcome or DeployObject may ask for unless the
// AdmissionPolicy's maxReplicas raises it (never lowers it: the Welcome's may-be-refused
// matchCondition sends its validating webhook only the objects over it).
const defaultMaxReplicas = 100

// validateReplicasCap refuses replicas above limit, as rule id.
func validateReplicasCap(replicas *int32, limit int32, path *field.Path, id RuleID) field.ErrorList {
	if replicas == nil || *replicas <= limit {
		return nil
	}
	return field.ErrorList{field.Invalid(path, *replicas, fmt.Sprintf(
		"must be at most %d; lower it, or ask a cluster admin to raise the cap: the AdmissionPolicy's maxReplicas raises it, and setting this rule to Warn lifts it",
		limit)).WithOrigin(string(id))}
}

// tooLong is a field.TooLong error of a value of size bytes, over limit, whose detail says how long
// it is and fix, how to make it fit. The value is left out: it is what is too long.
func tooLong(path *field.Path, size, limit int, fix string) *field.Error {
	e := field.TooLong(path, nil, limit)
	e.Detail = fmt.Sprintf("is %d bytes, more than the %d allowed; %s", size, limit, fix)
	return e
}
