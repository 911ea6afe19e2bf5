// Package conditiontest builds and compares status conditions for the controllers' unit tests.
package conditiontest

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"
)

// LongAgo is a transition time no condition set during a test can carry.
var LongAgo = metav1.NewTime(time.Date(2020, time.January, 2, 3, 4, 5, 0, time.UTC))

// Condition returns a condition with LongAgo as its transition time.
func Condition(conditionType string, status metav1.ConditionStatus, reason, message string, generation int64) metav1.Condition {
	return metav1.Condition{
		Type:               conditionType,
		Status:             status,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: generation,
		LastTransitionTime: LongAgo,
	}
}

// Comparable returns a copy of conditions sorted by type, without transition times.
func Comparable(conditions []metav1.Condition) []metav1.Condition {
	out := make([]metav1.Condition, len(conditions))
	for i, c := range conditions {
		c.LastTransitionTime = metav1.Time{}
		out[i] = c
	}
	slices.SortFunc(out, func(a, b metav1.Condition) int { return strings.Compare(a.Type, b.Type) })
	return out
}

// Assert fails t unless got equals want, ignoring order and transition times, and every
// condition in got has a transition time.
func Assert(t *testing.T, got, want []metav1.Condition) {
	t.Helper()
	if g, w := Comparable(got), Comparable(want); !reflect.DeepEqual(g, w) {
		t.Errorf("conditions mismatch, ignoring lastTransitionTime (-want +got):\n%s", diff.Diff(w, g))
	}
	for _, c := range got {
		if c.LastTransitionTime.IsZero() {
			t.Errorf("condition %s has no lastTransitionTime", c.Type)
		}
	}
}
