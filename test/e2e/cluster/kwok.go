//go:build linux

package cluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// kwokPodStages are kwok's pod stages that must leave the pods of the Kubelet's namespaces alone:
// pod-ready would report them ready before their process listens, and pod-delete would remove
// them while their process still serves.
var kwokPodStages = []string{"pod-ready", "pod-complete", "pod-delete"}

// kubeletPodStage gives a pod of a Kubelet namespace its IP and the Running phase, with every
// container not ready yet: from there its Kubelet reports the readiness the container's probe
// finds, as kubelet does. It is kwok's pod-ready stage with readiness left out.
const kubeletPodStage = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-run-by-harness
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values:
      - 'Pending'
    - key: '.metadata.namespace'
      operator: 'In'
      values: %s
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Initialized
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        reason: ContainersNotReady
        type: Ready
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        reason: ContainersNotReady
        type: ContainersReady
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        restartCount: 0
        state:
          waiting:
            reason: ContainerCreating
      {{ end }}
      {{ $hostIPs := NodeIPsWith .spec.nodeName }}
      {{ with $hostIPs }}
      hostIP: {{ index . 0 | Quote }}
      hostIPs:
      {{ range . }}
      - ip: {{ . | Quote }}
      {{ end }}
      {{ end }}
      {{ $podIPs := PodIPsWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) }}
      {{ with $podIPs }}
      podIP: {{ index . 0 | Quote }}
      podIPs:
      {{ range . }}
      - ip: {{ . | Quote }}
      {{ end }}
      {{ end }}
      phase: Running
      startTime: {{ $now | Quote }}
`

// writeKwokStages writes kwok's stages from the file src to dst, with the pods of namespaces left
// to the Kubelet.
func writeKwokStages(dst, src string, namespaces []string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if len(namespaces) == 0 {
		return os.WriteFile(dst, data, 0o644)
	}
	values, err := json.Marshal(namespaces)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	excluded := map[string]bool{}
	for _, doc := range strings.Split(string(data), "\n---") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var stage map[string]any
		if err := yaml.Unmarshal([]byte(doc), &stage); err != nil {
			return fmt.Errorf("%s: %w", src, err)
		}
		name, _, _ := unstructured.NestedString(stage, "metadata", "name")
		for _, excludedName := range kwokPodStages {
			if name != excludedName {
				continue
			}
			spec, _ := stage["spec"].(map[string]any)
			selector, _ := spec["selector"].(map[string]any)
			if selector == nil {
				return fmt.Errorf("%s: stage %s has no selector", src, name)
			}
			expressions, _ := selector["matchExpressions"].([]any)
			selector["matchExpressions"] = append(expressions, map[string]any{
				"key": ".metadata.namespace", "operator": "NotIn", "values": namespaces,
			})
			excluded[name] = true
		}
		stageYAML, err := yaml.Marshal(stage)
		if err != nil {
			return err
		}
		out.WriteString("---\n")
		out.Write(stageYAML)
	}
	for _, name := range kwokPodStages {
		if !excluded[name] {
			return fmt.Errorf("%s has no stage %s", src, name)
		}
	}
	out.WriteString("---\n")
	fmt.Fprintf(&out, kubeletPodStage, values)
	return os.WriteFile(dst, out.Bytes(), 0o644)
}
