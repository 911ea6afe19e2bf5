package welcome

import (
	"math"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/ptr"

	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	"github.com/seedlabs/webhook-operator/api/conditions"
	"github.com/seedlabs/webhook-operator/internal/reconcile/status"
	"github.com/seedlabs/webhook-operator/internal/resources"
	"github.com/seedlabs/webhook-operator/test/conditiontest"
)

var cond = conditiontest.Condition

// TestServiceURLFitsTheSchema holds status.serviceURL of the longest name, namespace and port
// numbers to the CRD's schema, so that the status write is never refused.
func TestServiceURLFitsTheSchema(t *testing.T) {
	url := resources.WelcomeServiceURL(strings.Repeat("w", 253), strings.Repeat("n", 63), math.MinInt32, math.MinInt32)
	if len(url) > authv1.MaxServiceURLLength {
		t.Errorf("the longest serviceURL has %d characters, more than the schema's %d: %s", len(url), authv1.MaxServiceURLLength, url)
	}
}

func TestNodePortOf(t *testing.T) {
	tests := []struct {
		name string
		svc  *corev1ac.ServiceApplyConfiguration
		want int32
	}{
		{name: "no spec", svc: corev1ac.Service("hello", "demo"), want: 0},
		{name: "no ports", svc: corev1ac.Service("hello", "demo").WithSpec(corev1ac.ServiceSpec().WithType(corev1.ServiceTypeNodePort)), want: 0},
		{
			name: "ClusterIP port without node port",
			svc: corev1ac.Service("hello", "demo").WithSpec(corev1ac.ServiceSpec().
				WithType(corev1.ServiceTypeClusterIP).
				WithPorts(corev1ac.ServicePort().WithName("http").WithPort(8088))),
			want: 0,
		},
		{
			name: "allocated node port",
			svc: corev1ac.Service("hello", "demo").WithSpec(corev1ac.ServiceSpec().
				WithType(corev1.ServiceTypeNodePort).
				WithPorts(corev1ac.ServicePort().WithName("http").WithPort(8088).WithNodePort(30080))),
			want: 30080,
		},
		{
			name: "only the first port counts",
			svc: corev1ac.Service("hello", "demo").WithSpec(corev1ac.ServiceSpec().
				WithType(corev1.ServiceTypeNodePort).
				WithPorts(
					corev1ac.ServicePort().WithName("http").WithPort(8088).WithNodePort(31000),
					corev1ac.ServicePort().WithName("metrics").WithPort(9090).WithNodePort(32000),
				)),
			want: 31000,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := nodePortOf(tt.svc); got != tt.want {
				t.Errorf("nodePortOf() = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestSetRolloutStatus(t *testing.T) {
	const gen = 4
	runningDeployment := func(ready int32) *appsv1ac.DeploymentApplyConfiguration {
		return appsv1ac.Deployment("hello", "demo").
			WithGeneration(2).
			WithSpec(appsv1ac.DeploymentSpec().WithReplicas(2)).
			WithStatus(appsv1ac.DeploymentStatus().
				WithObservedGeneration(2).
				WithReplicas(2).
				WithUpdatedReplicas(2).
				WithReadyReplicas(ready).
				WithAvailableReplicas(ready))
	}
	service := func(serviceType corev1.ServiceType, port, nodePort int32) *corev1ac.ServiceApplyConfiguration {
		p := corev1ac.ServicePort().WithName("http").WithPort(port)
		if nodePort != 0 {
			p = p.WithNodePort(nodePort)
		}
		return corev1ac.Service("hello", "demo").WithSpec(corev1ac.ServiceSpec().WithType(serviceType).WithPorts(p))
	}
	rolledOut := []metav1.Condition{
		cond(conditions.Ready, metav1.ConditionTrue, conditions.ReasonRolledOut, "2 of 2 replicas available", gen),
		cond(conditions.Reconciling, metav1.ConditionFalse, conditions.ReasonRolledOut, "the Deployment runs the current spec with 2 replicas", gen),
		cond(conditions.Stalled, metav1.ConditionFalse, conditions.ReasonAsExpected, "", gen),
	}

	tests := []struct {
		name        string
		specPort    *int32
		desiredPort int32
		dep         *appsv1ac.DeploymentApplyConfiguration
		svc         *corev1ac.ServiceApplyConfiguration
		wantReady   int32
		wantURL     string
		wantConds   []metav1.Condition
	}{
		{
			name:        "NodePort: the URL names the node port; the port comes from the defaulted copy",
			specPort:    nil,
			desiredPort: 8088,
			dep:         runningDeployment(2),
			svc:         service(corev1.ServiceTypeNodePort, 8088, 30080),
			wantReady:   2,
			wantURL:     "http://hello.demo.svc:8088/hello/ (node port 30080)",
			wantConds:   rolledOut,
		},
		{
			name:        "ClusterIP on port 9000",
			specPort:    ptr.To[int32](9000),
			desiredPort: 9000,
			dep:         runningDeployment(2),
			svc:         service(corev1.ServiceTypeClusterIP, 9000, 0),
			wantReady:   2,
			wantURL:     "http://hello.demo.svc:9000/hello/",
			wantConds:   rolledOut,
		},
		{
			name:        "ready replicas drop to 0",
			specPort:    ptr.To[int32](9000),
			desiredPort: 9000,
			dep:         runningDeployment(0),
			svc:         service(corev1.ServiceTypeLoadBalancer, 9000, 31555),
			wantReady:   0,
			wantURL:     "http://hello.demo.svc:9000/hello/ (node port 31555)",
			wantConds: []metav1.Condition{
				cond(conditions.Ready, metav1.ConditionFalse, conditions.ReasonReplicasUnavailable, "0 of 2 replicas available", gen),
				cond(conditions.Reconciling, metav1.ConditionTrue, conditions.ReasonReconciling, "rolling out 2 replicas: 2 running, 2 updated, 0 available", gen),
				cond(conditions.Stalled, metav1.ConditionFalse, conditions.ReasonAsExpected, "", gen),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &authv1.Welcome{
				ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "demo", Generation: gen},
				Spec:       authv1.WelcomeSpec{Name: "Ada", Port: tt.specPort},
				Status: authv1.WelcomeStatus{
					ObservedGeneration: 3,
					ReadyReplicas:      1,
					ServiceURL:         "http://stale.demo.svc:1/hello/",
				},
			}
			desired := w.DeepCopy()
			desired.Spec.Port = ptr.To(tt.desiredPort)
			desired.Spec.Replicas = ptr.To[int32](2)
			desired.Spec.ServiceType = corev1.ServiceTypeNodePort

			setRolloutStatus(w, desired, status.RolloutOf(tt.dep), tt.svc)

			if w.Status.ObservedGeneration != gen {
				t.Errorf("status.observedGeneration = %d, want %d", w.Status.ObservedGeneration, gen)
			}
			if w.Status.ReadyReplicas != tt.wantReady {
				t.Errorf("status.readyReplicas = %d, want %d", w.Status.ReadyReplicas, tt.wantReady)
			}
			if w.Status.ServiceURL != tt.wantURL {
				t.Errorf("status.serviceURL = %q, want %q", w.Status.ServiceURL, tt.wantURL)
			}
			conditiontest.Assert(t, w.Status.Conditions, tt.wantConds)
			if !reflect.DeepEqual(w.Spec.Port, tt.specPort) {
				t.Errorf("spec.port = %v, want %v: setRolloutStatus must not default the stored spec", w.Spec.Port, tt.specPort)
			}
		})
	}
}
