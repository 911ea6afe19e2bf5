package operator

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/yaml"
)

// BenchmarkCRDCacheBytes measures the live heap that a cache of every CustomResourceDefinition
// of the cluster holds per CRD, as cert-controller's own cache keeps them in self-signed mode
// (unstructured, whole, decoded from JSON), for each of the operator's CRDs as config/crd
// generates them; the bytes of its JSON are the baseline. Run it with -benchtime=1x: each round
// keeps 500 copies of each.
func BenchmarkCRDCacheBytes(b *testing.B) {
	files, err := filepath.Glob("../../config/crd/bases/*.yaml")
	if err != nil || len(files) == 0 {
		b.Fatal("no CRDs in config/crd/bases", err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			b.Fatal(err)
		}
		wire, err := yaml.YAMLToJSON(data)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(filepath.Base(file), func(b *testing.B) {
			const copies = 500
			for b.Loop() {
				store := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{})
				before := liveHeap()
				for i := range copies {
					obj := &unstructured.Unstructured{}
					if err := obj.UnmarshalJSON(wire); err != nil {
						b.Fatal(err)
					}
					obj.SetName(fmt.Sprintf("%s-%d", obj.GetName(), i))
					if err := store.Add(obj); err != nil {
						b.Fatal(err)
					}
				}
				held := float64(liveHeap()-before) / copies
				b.ReportMetric(held/1024, "KiB/CRD")
				b.ReportMetric(float64(len(wire))/1024, "JSON-KiB/CRD")
				b.ReportMetric(held/float64(len(wire)), "x-JSON")
				if len(store.ListKeys()) != copies {
					b.Fatal("lost CRDs")
				}
			}
		})
	}
}
