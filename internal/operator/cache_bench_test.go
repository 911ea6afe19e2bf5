package operator

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	cachev1 "github.com/seedlabs/webhook-operator/api/cache/v1"
	"github.com/seedlabs/webhook-operator/internal/reconcile/apply"
	"github.com/seedlabs/webhook-operator/internal/scheme"
	"github.com/seedlabs/webhook-operator/test/reconciled"
	"github.com/seedlabs/webhook-operator/test/reconciletest"
	"github.com/seedlabs/webhook-operator/webhooks"
)

var cachedHeapProfile = flag.String("cached-heap-profile", "",
	"BenchmarkCachedBytes writes a heap profile of what its stores hold to this path, suffixed with the variant's name "+
		"(with -memprofilerate=256, say; go test's -memprofile is written once they are gone)")

// BenchmarkCachedBytes measures the live heap the manager's cache holds per custom resource with
// its Deployment and Service: each object is decoded as the informers decode it (the custom
// resources from JSON, the children from protobuf, as the API server stored them under the
// operator's field manager) and kept in a client-go indexer with the namespace index, as
// controller-runtime's informers keep it. "transformed" goes through cacheOptions' transforms;
// "whole", the baseline, keeps what was decoded. Run it with -benchtime=1x: each round measures
// 2,000 custom resources of each kind.
func BenchmarkCachedBytes(b *testing.B) {
	wire := storedObjects(b)
	for _, variant := range []struct {
		name      string
		transform func(any) (any, error)
	}{
		{"whole", func(obj any) (any, error) { return obj, nil }},
		{"transformed", transformOf},
	} {
		b.Run(variant.name, func(b *testing.B) {
			const perKind = 2000
			// What is made once, whatever the number of objects (encoding/json's caches of the
			// types' fields, say), is made before the measure.
			for _, w := range wire {
				obj, _, err := w.decoder.Decode(w.data, nil, nil)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := variant.transform(obj); err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				stores := map[string]toolscache.Indexer{}
				for _, w := range wire {
					stores[w.store] = toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc,
						toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
				}
				before := liveHeap()
				for i := range perKind {
					for _, w := range wire {
						obj, _, err := w.decoder.Decode(w.data, nil, nil)
						if err != nil {
							b.Fatal(err)
						}
						rename(obj.(client.Object), i)
						kept, err := variant.transform(obj)
						if err != nil {
							b.Fatal(err)
						}
						if err := stores[w.store].Add(kept); err != nil {
							b.Fatal(err)
						}
					}
				}
				after := liveHeap()
				if *cachedHeapProfile != "" {
					writeHeapProfile(b, *cachedHeapProfile+"."+strings.ReplaceAll(b.Name(), "/", "-"))
				}
				b.ReportMetric(float64(after-before)/float64(3*perKind), "B/customresource")
				runtime.KeepAlive(stores)
			}
		})
	}
}

// transformOf is the transform cacheOptions gives obj's type.
func transformOf(obj any) (any, error) {
	options := cacheOptions()
	for typed, by := range options.ByObject {
		if fmt.Sprintf("%T", typed) == fmt.Sprintf("%T", obj) {
			return by.Transform(obj)
		}
	}
	return options.DefaultTransform(obj)
}

func writeHeapProfile(b *testing.B, path string) {
	out, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer out.Close()
	if err := pprof.WriteHeapProfile(out); err != nil {
		b.Fatal(err)
	}
}

// liveHeap is the heap in use after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// rename gives a decoded object, and its controller reference, the i-th name and a uid of its own.
func rename(obj client.Object, i int) {
	name := fmt.Sprintf("%s-%d", obj.GetName(), i)
	obj.SetName(name)
	obj.SetUID(types.UID(fmt.Sprintf("%08d-0000-4000-8000-%012d", i, i)))
	refs := obj.GetOwnerReferences()
	for j := range refs {
		refs[j].Name = name
	}
}

// rolledOut is the status kube-controller-manager gives d once every replica is available.
func rolledOut(d *appsv1.Deployment) appsv1.DeploymentStatus {
	at := metav1.NewTime(time.Date(2026, 11, 27, 12, 0, 30, 0, time.UTC))
	return appsv1.DeploymentStatus{
		ObservedGeneration: 1, Replicas: *d.Spec.Replicas, UpdatedReplicas: *d.Spec.Replicas, ReadyReplicas: *d.Spec.Replicas,
		AvailableReplicas: *d.Spec.Replicas,
		Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, LastUpdateTime: at, LastTransitionTime: at,
				Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability."},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, LastUpdateTime: at, LastTransitionTime: at,
				Reason: "NewReplicaSetAvailable", Message: fmt.Sprintf("ReplicaSet %q has successfully progressed.", d.Name+"-5d4f8b7c9d")},
		},
	}
}

// wireObject is an object as the API server sends it, and the decoder of its informer.
type wireObject struct {
	store   string
	data    []byte
	decoder kruntime.Decoder
}

// storedObjects are the config/samples custom resources, defaulted and with the status the
// operator writes, and their children as the operator applies them (reconciled.OperatorWrites),
// in their wire encodings.
func storedObjects(b *testing.B) []wireObject {
	ctx := context.Background()
	s := scheme.New()
	codecs := serializer.NewCodecFactory(s)
	jsonInfo, _ := kruntime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), kruntime.ContentTypeJSON)
	pb := protobuf.NewSerializer(s, s)
	c := reconciletest.NewClient(&testing.T{}, nil)

	var out []wireObject
	add := func(store string, obj kruntime.Object, encoder kruntime.Encoder, decoder kruntime.Decoder) {
		gvks, _, err := s.ObjectKinds(obj)
		if err != nil {
			b.Fatal(err)
		}
		obj.GetObjectKind().SetGroupVersionKind(gvks[0])
		data, err := kruntime.Encode(encoder, obj)
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, wireObject{store: store, data: data, decoder: decoder})
	}
	for file, obj := range map[string]client.Object{
		"auth_v1_welcome.yaml":     &authv1.Welcome{},
		"cache_v1_memcached.yaml":  &cachev1.Memcached{},
		"app_v1_deployobject.yaml": &appv1.DeployObject{},
	} {
		data, err := os.ReadFile(filepath.Join("..", "..", "config", "samples", file))
		if err != nil {
			b.Fatal(err)
		}
		if err := yaml.Unmarshal(data, obj); err != nil {
			b.Fatal(err)
		}
		obj.SetNamespace("tenant-a")
		obj.SetUID("00000000-0000-4000-8000-000000000000")
		obj.SetResourceVersion("123456")
		obj.SetGeneration(1)
		obj.SetCreationTimestamp(metav1.NewTime(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)))
		obj.SetAnnotations(map[string]string{"kubectl.kubernetes.io/last-applied-configuration": string(data)})
		// The webhooks' defaults, then what the operator writes for the object.
		webhooks.DefaultObject(obj)
		deployment, service, stored := reconciled.OperatorWrites(obj, "ghcr.io/seedlabs/welcome-web:v0.1.0", "docker.io/library/memcached:1.6")
		owner := fmt.Sprintf("%T", obj)
		add(owner, stored, jsonInfo.Serializer, codecs.UniversalDeserializer())

		if err := apply.Apply(ctx, c, nil, deployment, apply.Options()...); err != nil {
			b.Fatal(err)
		}
		if err := apply.Apply(ctx, c, nil, service, apply.Options()...); err != nil {
			b.Fatal(err)
		}
		for _, child := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}} {
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), child); err != nil {
				b.Fatal(err)
			}
			child.SetUID("00000000-0000-4000-8000-000000000001")
			child.SetCreationTimestamp(obj.GetCreationTimestamp())
			switch o := child.(type) {
			case *appsv1.Deployment:
				o.Status = rolledOut(o)
			case *corev1.Service:
				o.Spec.ClusterIP, o.Spec.ClusterIPs = "10.96.12.34", []string{"10.96.12.34"}
			}
			if len(child.GetManagedFields()) == 0 {
				b.Fatalf("the %T of the %s has no managedFields", child, owner)
			}
			add(fmt.Sprintf("%T", child), child, pb, pb)
		}
	}
	return out
}
