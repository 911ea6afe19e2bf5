// Package ownership keeps the controllers off objects they did not create. The children of a
// custom resource are named after it, so a user's own Deployment or Service may already hold the
// name; a forced server-side apply would then rewrite it and make it the resource's, and deleting
// the resource would garbage-collect it.
package ownership

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/seedlabs/webhook-operator/api/conditions"
	"github.com/seedlabs/webhook-operator/internal/message"
	"github.com/seedlabs/webhook-operator/internal/reconcile/apply"
)

// RecheckAfter is how soon a resource blocked by a foreign object is looked at again. The foreign
// object carries none of the operator's labels, so the manager's cache does not see it go.
const RecheckAfter = 10 * time.Second

// Get reads the object at key into obj and reports whether it exists. It asks the cache first;
// the cache holds only the objects carrying the operator's label, so when it has none there, it
// asks the API server, where an object of someone else's may stand under the name.
func Get(ctx context.Context, cached, live client.Reader, key client.ObjectKey, obj client.Object) (bool, error) {
	err := cached.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) {
		err = live.Get(ctx, key, obj)
	}
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	default:
		return false, fmt.Errorf("reading the %T %s: %w", obj, key, err)
	}
}

// Conflict describes why the existing object obj, of the given kind, may not be applied for the
// custom resource owner, or returns "" when owner is its controller.
func Conflict(kind string, obj client.Object, ownerKind string, owner types.UID) string {
	ref := metav1.GetControllerOf(obj)
	if ref != nil && ref.UID == owner {
		return ""
	}
	held := "it has no controller"
	if ref != nil {
		held = fmt.Sprintf("it is controlled by %s %s (uid %s)", ref.Kind, ref.Name, ref.UID)
	}
	return fmt.Sprintf("%s %s already exists and is not this %s's: %s. Nothing is applied until it is deleted or renamed, "+
		"or this %s is created under another name", kind, obj.GetName(), ownerKind, held, ownerKind)
}

// Observe reads the object of the given kind at key into obj, as Get does, and reports whether
// it exists under owner's control (ours), or, when it exists and is someone else's, why it may
// not be applied (conflict).
func Observe(ctx context.Context, cached, live client.Reader, key client.ObjectKey, obj client.Object,
	kind, ownerKind string, owner types.UID,
) (ours bool, conflict string, err error) {
	found, err := Get(ctx, cached, live, key, obj)
	if err != nil || !found {
		return false, "", err
	}
	if conflict := Conflict(kind, obj, ownerKind, owner); conflict != "" {
		return false, conflict, nil
	}
	return true, "", nil
}

// Children is what exists of a custom resource's Deployment and Service, both named after it.
type Children struct {
	// Deployment is the resource's own Deployment, nil when it controls none.
	Deployment *appsv1.Deployment
	// Service is the resource's own Service, nil when it controls none.
	Service *corev1.Service
	// Conflicts describe the objects under the resource's name that it does not control.
	Conflicts []string

	// live reads past the cache what the cache does not keep.
	live client.Reader
}

// DeploymentStatus is the status of the resource's own Deployment, or the zero status when it
// controls none: what runs before anything is applied.
func (c Children) DeploymentStatus() appsv1.DeploymentStatus {
	if c.Deployment == nil {
		return appsv1.DeploymentStatus{}
	}
	return c.Deployment.Status
}

// Conflict joins the conflicts into one message, "" when there are none.
func (c Children) Conflict() string { return strings.Join(c.Conflicts, "; ") }

// RecordCreated records one Normal Event regarding obj, reason Created, naming what the reconcile
// created: the Deployment, described by deployment, when c has none, and the Service, described
// by service, when c has none. One Event for both, since the events.k8s.io recorder folds Events
// of the same reason and action into one series and would keep only the first note.
func (c Children) RecordCreated(events recorder.EventRecorder, obj runtime.Object, deployment, service string) {
	var created []string
	if c.Deployment == nil {
		created = append(created, "Deployment "+deployment)
	}
	if c.Service == nil {
		created = append(created, "Service "+service)
	}
	if len(created) > 0 {
		events.Eventf(obj, nil, corev1.EventTypeNormal, conditions.EventReasonCreated, "Create", "%s",
			message.Truncate("created "+strings.Join(created, " and "), message.EventNoteLimit))
	}
}

// Apply server-side applies the desired Deployment and then the desired Service over c's, as
// ApplyDeployment and ApplyService do. The error names what failed.
func (c Children) Apply(ctx context.Context, cl client.Client, deployment *appsv1ac.DeploymentApplyConfiguration, service *corev1ac.ServiceApplyConfiguration) error {
	if err := c.ApplyDeployment(ctx, cl, deployment); err != nil {
		return err
	}
	return c.ApplyService(ctx, cl, service)
}

// ApplyDeployment server-side applies the desired Deployment over c's: it is created when c has
// none, and only then (a user's object that took the name meanwhile is refused, not taken over).
// The configuration afterwards holds the object as stored.
func (c Children) ApplyDeployment(ctx context.Context, cl client.Client, deployment *appsv1ac.DeploymentApplyConfiguration) error {
	if err := apply.Apply(ctx, cl, c.Deployment, deployment, apply.Options()...); err != nil {
		return fmt.Errorf("applying the Deployment: %w", err)
	}
	return nil
}

// ApplyService server-side applies the desired Service over c's, as ApplyDeployment does, after
// replacing the ports it no longer has (changed by hand, or by the custom resource's spec), so
// that the apply leaves no port behind.
func (c Children) ApplyService(ctx context.Context, cl client.Client, service *corev1ac.ServiceApplyConfiguration) error {
	if _, err := apply.ReplaceForeignServicePorts(ctx, cl, c.live, c.Service, service); err != nil {
		return fmt.Errorf("applying the Service: %w", err)
	}
	if err := apply.Apply(ctx, cl, c.Service, service, apply.Options()...); err != nil {
		return fmt.Errorf("applying the Service: %w", err)
	}
	return nil
}

// TryService asks the API server, in a dry run, whether it takes the desired Service, as
// ApplyService would give it: the replacement of the ports it no longer has when there are some
// (the apply alone would keep an old port beside a new one of the same name, which the API server
// refuses, and the replacement is what changes), else the apply itself. The apply fills trial
// with its reply: it must be a configuration of its own.
func (c Children) TryService(ctx context.Context, cl client.Client, trial *corev1ac.ServiceApplyConfiguration) error {
	replaced, err := apply.ReplaceForeignServicePorts(ctx, cl, c.live, c.Service, trial, client.DryRunAll)
	if err != nil || replaced {
		return err
	}
	return cl.Apply(ctx, trial, apply.Options(client.DryRunAll)...)
}

// ObserveChildren reads the Deployment and Service at key, as Observe does, for the custom
// resource of kind ownerKind and uid owner.
func ObserveChildren(ctx context.Context, cached, live client.Reader, key client.ObjectKey, ownerKind string, owner types.UID) (Children, error) {
	c := Children{live: live}
	dep := &appsv1.Deployment{}
	ours, conflict, err := Observe(ctx, cached, live, key, dep, "Deployment", ownerKind, owner)
	if err != nil {
		return c, err
	}
	if ours {
		c.Deployment = dep
	}
	if conflict != "" {
		c.Conflicts = append(c.Conflicts, conflict)
	}
	svc := &corev1.Service{}
	ours, conflict, err = Observe(ctx, cached, live, key, svc, "Service", ownerKind, owner)
	if err != nil {
		return c, err
	}
	if ours {
		c.Service = svc
	}
	if conflict != "" {
		c.Conflicts = append(c.Conflicts, conflict)
	}
	return c, nil
}
