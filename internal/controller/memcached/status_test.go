package memcached

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/utils/ptr"

	cachev1 "github.com/seedlabs/webhook-operator/api/cache/v1"
	"github.com/seedlabs/webhook-operator/internal/resources"
)

func pod(name string, phase corev1.PodPhase, terminating bool) corev1.Pod {
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "demo"},
		Status:     corev1.PodStatus{Phase: phase},
	}
	if terminating {
		p.DeletionTimestamp = ptr.To(metav1.Now())
	}
	return p
}

func TestNodesOf(t *testing.T) {
	tests := []struct {
		name string
		pods []corev1.Pod
		want []string
	}{
		{name: "no pods", pods: nil, want: nil},
		{
			name: "sorted by name, whatever the list order",
			pods: []corev1.Pod{
				pod("cache-7f9-zq2", corev1.PodRunning, false),
				pod("cache-7f9-a1b", corev1.PodRunning, false),
				pod("cache-7f9-m0x", corev1.PodRunning, false),
			},
			want: []string{"cache-7f9-a1b", "cache-7f9-m0x", "cache-7f9-zq2"},
		},
		{
			name: "pending and unknown pods are members",
			pods: []corev1.Pod{
				pod("cache-b", corev1.PodPending, false),
				pod("cache-a", corev1.PodUnknown, false),
				pod("cache-c", "", false),
			},
			want: []string{"cache-a", "cache-b", "cache-c"},
		},
		{
			name: "terminating, failed and succeeded pods are not",
			pods: []corev1.Pod{
				pod("cache-running", corev1.PodRunning, false),
				pod("cache-terminating", corev1.PodRunning, true),
				pod("cache-failed", corev1.PodFailed, false),
				pod("cache-succeeded", corev1.PodSucceeded, false),
			},
			want: []string{"cache-running"},
		},
		{
			name: "none left is nil, so the field is omitted",
			pods: []corev1.Pod{pod("cache-failed", corev1.PodFailed, false), pod("cache-gone", corev1.PodPending, true)},
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := nodesOf(tt.pods); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("nodesOf() = %#v, want %#v", got, tt.want)
			}
		})
	}
}

// TestNodesOfFitTheSchema holds status.nodes of a pool larger than the CRD's schema allows to its
// first names, sorted, so that the status write is not refused.
func TestNodesOfFitTheSchema(t *testing.T) {
	const n = cachev1.MaxNodesItems + 2
	var pods []corev1.Pod
	for i := n - 1; i >= 0; i-- {
		pods = append(pods, pod(fmt.Sprintf("cache-%05d", i), corev1.PodRunning, false))
	}
	got := nodesOf(pods)
	if len(got) != cachev1.MaxNodesItems {
		t.Fatalf("nodesOf() of %d pods lists %d names, want the schema's %d", n, len(got), cachev1.MaxNodesItems)
	}
	if got[0] != "cache-00000" || got[len(got)-1] != fmt.Sprintf("cache-%05d", cachev1.MaxNodesItems-1) {
		t.Errorf("nodesOf() lists %s to %s, want the first names in order", got[0], got[len(got)-1])
	}
}

// TestSelectorOfFitsTheSchema holds status.selector of the longest name a Memcached may have to
// the CRD's schema.
func TestSelectorOfFitsTheSchema(t *testing.T) {
	if got := selectorOf(strings.Repeat("m", 253)); len(got) > cachev1.MaxSelectorLength {
		t.Errorf("selectorOf() of a 253-character name has %d characters, more than the schema's %d", len(got), cachev1.MaxSelectorLength)
	}
}

func TestSelectorOf(t *testing.T) {
	const want = "app.kubernetes.io/instance=cache,app.kubernetes.io/name=memcached"
	if got := selectorOf("cache"); got != want {
		t.Fatalf("selectorOf() = %q, want %q", got, want)
	}
	// What the scale subresource hands to an autoscaler must select the pods the Deployment runs.
	sel, err := labels.Parse(selectorOf("cache"))
	if err != nil {
		t.Fatalf("parsing %q: %v", selectorOf("cache"), err)
	}
	podLabels := labels.Set{
		resources.LabelName: resources.MemcachedApp, resources.LabelInstance: "cache", resources.LabelManagedBy: resources.ManagedBy,
	}
	if !sel.Matches(podLabels) {
		t.Errorf("%q does not match the pod labels %v", sel, podLabels)
	}
	if sel.Matches(labels.Set{resources.LabelName: resources.MemcachedApp, resources.LabelInstance: "cache-2"}) {
		t.Errorf("%q matches the pods of Memcached cache-2", sel)
	}
}

func TestSetPoolStatusWithoutDeployment(t *testing.T) {
	m := &cachev1.Memcached{ObjectMeta: metav1.ObjectMeta{Name: "cache", Namespace: "demo", Generation: 2}, Status: cachev1.MemcachedStatus{ObservedGeneration: 1}}
	m.Status.Replicas = 3
	m.Status.Nodes = []string{"cache-gone"}
	setPoolStatus(m, 0, nil)
	want := cachev1.MemcachedStatus{
		ObservedGeneration: 1,
		Selector:           "app.kubernetes.io/instance=cache,app.kubernetes.io/name=memcached",
	}
	if !reflect.DeepEqual(m.Status, want) {
		t.Errorf("status mismatch (-want +got):\n%s", diff.Diff(want, m.Status))
	}
}
