// Package controller holds what the controller of every custom resource is given; the controllers
// are its subpackages, one per kind, each reading observe → guard → refuse or apply → report with
// the helpers of internal/reconcile.
package controller

import (
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/seedlabs/webhook-operator/internal/reconcile/guard"
)

// Deps are what the controller of a custom resource reads, writes and is told through: the
// manager's client, and the admission policy's guard and changes.
type Deps struct {
	client.Client
	// APIReader reads from the API server, past the cache, which holds only the operator's own
	// Deployments and Services: it finds a user's object standing under a custom resource's name.
	APIReader client.Reader
	Recorder  recorder.EventRecorder
	// Guard holds a stored spec to the admission rules under the policy in force.
	Guard guard.Guard
	// PolicyChanges, when set, fires when the policy changes, and every object is looked at again.
	PolicyChanges <-chan event.GenericEvent
}
