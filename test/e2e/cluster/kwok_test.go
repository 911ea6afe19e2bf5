//go:build linux

package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const testStages = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: node-initialize
spec:
  selector:
    matchExpressions:
    - key: .status.conditions.[] | select( .type == "Ready" ) | .status
      operator: NotIn
      values:
      - "True"
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-ready
spec:
  selector:
    matchExpressions:
    - key: .metadata.deletionTimestamp
      operator: DoesNotExist
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-complete
spec:
  selector:
    matchExpressions: []
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-delete
spec:
  selector:
    matchExpressions:
    - key: .metadata.deletionTimestamp
      operator: Exists
`

func TestWriteKwokStagesLeavesTheKubeletsNamespacesToIt(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "in.yaml"), filepath.Join(dir, "out.yaml")
	if err := os.WriteFile(src, []byte(testStages), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeKwokStages(dst, src, []string{"ours"}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	type expression struct {
		Key      string   `json:"key"`
		Operator string   `json:"operator"`
		Values   []string `json:"values"`
	}
	type stage struct {
		Metadata struct{ Name string } `json:"metadata"`
		Spec     struct {
			Selector struct {
				MatchExpressions []expression `json:"matchExpressions"`
			} `json:"selector"`
		} `json:"spec"`
	}
	var stages []stage
	for _, doc := range strings.Split(string(data), "\n---") {
		if strings.TrimSpace(strings.TrimPrefix(doc, "---")) == "" {
			continue
		}
		var s stage
		if err := yaml.Unmarshal([]byte(doc), &s); err != nil {
			t.Fatalf("%v in\n%s", err, doc)
		}
		stages = append(stages, s)
	}
	want := map[string]expression{
		"node-initialize":    {},
		"pod-ready":          {Key: ".metadata.namespace", Operator: "NotIn", Values: []string{"ours"}},
		"pod-complete":       {Key: ".metadata.namespace", Operator: "NotIn", Values: []string{"ours"}},
		"pod-delete":         {Key: ".metadata.namespace", Operator: "NotIn", Values: []string{"ours"}},
		"pod-run-by-harness": {Key: ".metadata.namespace", Operator: "In", Values: []string{"ours"}},
	}
	if len(stages) != len(want) {
		t.Fatalf("got %d stages, want %d:\n%s", len(stages), len(want), data)
	}
	for _, s := range stages {
		w, ok := want[s.Metadata.Name]
		if !ok {
			t.Errorf("unexpected stage %s", s.Metadata.Name)
			continue
		}
		exprs := s.Spec.Selector.MatchExpressions
		hasNamespace := false
		for _, e := range exprs {
			if e.Key == ".metadata.namespace" {
				hasNamespace = true
				if e.Operator != w.Operator || strings.Join(e.Values, ",") != strings.Join(w.Values, ",") {
					t.Errorf("stage %s: namespace expression %+v, want %+v", s.Metadata.Name, e, w)
				}
			}
		}
		if hasNamespace != (w.Key != "") {
			t.Errorf("stage %s: namespace expression present %t, want %t", s.Metadata.Name, hasNamespace, w.Key != "")
		}
	}
}
