package webhooks

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
)

// The webhooks of a DeployObject: DefaultDeployObject and ValidateDeployObject. Their matchConditions
// (config/webhook/match-conditions/match_conditions.yaml) call them only for the requests they
// could answer otherwise than with a plain allow.
// +kubebuilder:webhook:path=/mutate-app-seedlabs-dev-v1-deployobject,mutating=true,failurePolicy=fail,sideEffects=None,groups=app.seedlabs.dev,resources=deployobjects,verbs=create;update,versions=v1,name=mdeployobject.app.seedlabs.dev,admissionReviewVersions=v1,timeoutSeconds=1,matchPolicy=Equivalent,reinvocationPolicy=Never
// +kubebuilder:webhook:path=/validate-app-seedlabs-dev-v1-deployobject,mutating=false,failurePolicy=fail,sideEffects=NoneOnDryRun,groups=app.seedlabs.dev,resources=deployobjects,verbs=create;update,versions=v1,name=vdeployobject.app.seedlabs.dev,admissionReviewVersions=v1,timeoutSeconds=1,matchPolicy=Equivalent

// DeployObject is the admission of a DeployObject: the rules its webhooks (the markers above)
// serve on its MutatePath and ValidatePath.
var DeployObject = Kind[appv1.DeployObject, *appv1.DeployObject]{
	GVK:     appv1.GroupVersion.WithKind("DeployObject"),
	Default: DefaultDeployObject, Validate: ValidateDeployObject, bounds: deployObjectBounds,
}

var serviceProtocols = []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP}

// DefaultDeployObject fills the fields of a DeployObject the user left unset: replicas, and each
// port's protocol (TCP) and targetPort (its port).
func DefaultDeployObject(d *appv1.DeployObject) {
	if d.Spec.Replicas == nil {
		d.Spec.Replicas = ptr.To(appv1.DefaultReplicas)
	}
	for i := range d.Spec.Ports {
		p := &d.Spec.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if p.TargetPort == (intstr.IntOrString{}) || p.TargetPort == intstr.FromString("") {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
}

// ValidateDeployObject returns every rule the DeployObject breaks under the policy, and
// warnings for what is allowed but unwise; for a DeployObject past its schema's bounds, only those
// (bounds.go). old is nil on create; on update, violations old
// already had are not held against the update, so an image admitted under an earlier policy
// stays admitted while it is left untouched.
func ValidateDeployObject(old, d *appv1.DeployObject, policy *Policy) (field.ErrorList, []Warning) {
	if errs := deployObjectBounds(d); len(errs) > 0 {
		return errs, nil
	}
	errs, warnings := validateDeployObject(d, policy)
	if old != nil && len(errs) > 0 && len(deployObjectBounds(old)) == 0 {
		oldErrs, _ := validateDeployObject(old, policy)
		errs = ratchet(errs, oldErrs, old, d)
	}
	return errs, warnings
}

// deployObjectImageRules are the image rules as a DeployObject's.
var deployObjectImageRules = imageRules{
	reference: DeployObjectImageReference, pinned: DeployObjectImagePinned, registry: DeployObjectImageRegistry,
	latestWithDigest: DeployObjectImageLatestDigest,
}

func validateDeployObject(d *appv1.DeployObject, policy *Policy) (field.ErrorList, []Warning) {
	errs, warnings := validateDeployObjectSpec(&d.Spec, policy, field.NewPath("spec"))
	return append(tagged(validateObjectName(d.Name), DeployObjectObjectName), errs...), warnings
}

func validateDeployObjectSpec(spec *appv1.DeployObjectSpec, policy *Policy, path *field.Path) (field.ErrorList, []Warning) {
	errs, warnings := validateImage(spec.Image, policy.Images(), path.Child("image"), deployObjectImageRules)
	if spec.Replicas != nil && *spec.Replicas < 0 {
		errs = append(errs, field.Invalid(path.Child("replicas"), *spec.Replicas, "must be 0 or more").WithOrigin(string(DeployObjectReplicas)))
	}
	errs = append(errs, validateReplicasCap(spec.Replicas, policy.MaxReplicas(), path.Child("replicas"), DeployObjectReplicasMax)...)
	errs = append(errs, tagged(validateServicePorts(spec.Ports, path.Child("ports")), DeployObjectPorts)...)
	envErrs, envWarnings := validateEnv(spec.Env, path.Child("env"))
	errs = append(errs, tagged(envErrs, DeployObjectEnv)...)
	errs = append(errs, tagged(validateEnvSize(spec.Env, path.Child("env")), DeployObjectEnvSize)...)
	warnings = append(warnings, envWarnings...)
	errs = append(errs, tagged(validateResources(spec.Resources, path.Child("resources")), DeployObjectResources)...)
	errs = append(errs, tagged(validateImagePullSecrets(spec.ImagePullSecrets, path.Child("imagePullSecrets")), DeployObjectPullSecrets)...)
	errs = append(errs, tagged(validateProbes(spec, path), DeployObjectProbes)...)
	return errs, warnings
}

// validateServicePorts applies the Service API's own rules to the ports, so that a bad port is
// refused at admission instead of failing when the controller applies the Service.
func validateServicePorts(ports []corev1.ServicePort, path *field.Path) field.ErrorList {
	if len(ports) == 0 {
		return field.ErrorList{field.Required(path, "at least one port is required: the Service exposes spec.ports")}
	}
	var errs field.ErrorList
	names := make(map[string]bool, len(ports))
	portProtocols := make(map[string]bool, len(ports))
	// namedTargets maps a named targetPort to the first port that targets it.
	namedTargets := make(map[string]int, len(ports))
	for i, p := range ports {
		pp := path.Index(i)
		switch {
		case p.Name == "" && len(ports) > 1:
			errs = append(errs, field.Required(pp.Child("name"), "a name is required when there is more than one port"))
		case p.Name != "":
			for _, msg := range validation.IsDNS1123Label(p.Name) {
				errs = append(errs, field.Invalid(pp.Child("name"), p.Name, msg))
			}
			if names[p.Name] {
				errs = append(errs, field.Duplicate(pp.Child("name"), p.Name))
			}
			names[p.Name] = true
		}
		errs = append(errs, validatePort(p.Port, pp.Child("port"))...)
		errs = append(errs, validatePortNumOrName(p.TargetPort, pp.Child("targetPort"))...)
		if p.TargetPort.Type == intstr.String {
			// A named target is one container port, and a container port has one protocol.
			if first, seen := namedTargets[p.TargetPort.StrVal]; !seen {
				namedTargets[p.TargetPort.StrVal] = i
			} else if ports[first].Protocol != p.Protocol {
				errs = append(errs, field.Invalid(pp.Child("targetPort"), p.TargetPort.StrVal, fmt.Sprintf(
					"must name a container port of its own: %s already targets it over %s, and a container port has one protocol",
					path.Index(first), ports[first].Protocol)))
			}
		}
		errs = append(errs, tagged(validateAppProtocol(p.AppProtocol, pp.Child("appProtocol")), DeployObjectAppProtocol)...)
		if !slices.Contains(serviceProtocols, p.Protocol) {
			errs = append(errs, field.NotSupported(pp.Child("protocol"), p.Protocol, serviceProtocols))
		}
		if p.NodePort != 0 {
			errs = append(errs, field.Invalid(pp.Child("nodePort"), p.NodePort,
				"the Service is of type ClusterIP, which has no node ports; remove nodePort"))
		}
		key := fmt.Sprintf("%d/%s", p.Port, p.Protocol)
		if portProtocols[key] {
			errs = append(errs, field.Duplicate(pp, key))
		}
		portProtocols[key] = true
	}
	return errs
}

// The size limits of a DeployObject's environment (limits.go): how many variables, and in bytes.
const (
	maxEnvVars       = 100
	maxEnvValueBytes = 32 << 10
	maxEnvBytes      = 256 << 10
)

// validateEnvSize holds the environment to at most maxEnvVars variables, each value to at most
// maxEnvValueBytes, and the names and values together to at most maxEnvBytes: a name is as free a
// string as a value.
func validateEnvSize(env []corev1.EnvVar, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(env) > maxEnvVars {
		tooMany := field.TooMany(path, len(env), maxEnvVars)
		tooMany.Detail = fmt.Sprintf("must have at most %d variables; drop the ones the app does not read", maxEnvVars)
		errs = append(errs, tooMany)
	}
	total := 0
	for i, e := range env {
		total += len(e.Name) + len(e.Value)
		if len(e.Value) > maxEnvValueBytes {
			errs = append(errs, tooLong(path.Index(i).Child("value"), len(e.Value), maxEnvValueBytes,
				"read a long value from a ConfigMap with valueFrom.configMapKeyRef"))
		}
	}
	if total > maxEnvBytes {
		overall := field.TooLong(path, nil, maxEnvBytes)
		overall.Detail = fmt.Sprintf("the names and values add up to %d bytes, more than the %d allowed; "+
			"read long values from a ConfigMap with valueFrom.configMapKeyRef", total, maxEnvBytes)
		errs = append(errs, overall)
	}
	return errs
}

// validateEnv holds every variable to the Pod API's rules (validateEnvVar); a repeated name is
// allowed with a warning, as Kubernetes keeps the last value.
func validateEnv(env []corev1.EnvVar, path *field.Path) (field.ErrorList, []Warning) {
	var errs field.ErrorList
	var warnings []Warning
	first := make(map[string]int, len(env))
	for i, e := range env {
		errs = append(errs, validateEnvVar(e, path.Index(i))...)
		if j, seen := first[e.Name]; seen && strings.TrimSpace(e.Name) != "" {
			warnings = append(warnings, warning(DeployObjectEnvDuplicate, "%s: %s is also set by %s; Kubernetes keeps the last value",
				path.Index(i).Child("name"), e.Name, path.Index(j)))
			continue
		}
		first[e.Name] = i
	}
	return errs, warnings
}
