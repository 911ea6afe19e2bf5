package operator

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	"github.com/seedlabs/webhook-operator/internal/reconcile/apply"
)

// keptDeployment is what the manager's cache keeps of a Deployment carrying the operator's label:
// its identity (name, uid, resourceVersion, generation, deletion, controller), and of a custom
// resource's own Deployment what a reconcile reads, its replicas and status, and the hash of what
// the operator's field manager holds of it. Not a Deployment: the Go struct of one is 1,232 bytes
// however little it holds, about a third of what a custom resource costs the cache otherwise.
// keptReader gives a reconcile a Deployment of it; the controllers' watches see it as it is.
type keptDeployment struct {
	keptMeta
	held     string
	replicas *int32
	status   appsv1.DeploymentStatus
}

// keptService is what the manager's cache keeps of a Service carrying the operator's label, as
// keptDeployment is of a Deployment: of a custom resource's own Service, its type, address and
// ports (the node ports the API server allocated), or that it has more ports than it keeps.
type keptService struct {
	keptMeta
	held        string
	serviceType corev1.ServiceType
	clusterIP   string
	ports       []corev1.ServicePort
	morePorts   bool
}

var (
	_ client.Object = &keptDeployment{}
	_ client.Object = &keptService{}
)

func (*keptDeployment) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
func (*keptService) GetObjectKind() schema.ObjectKind    { return schema.EmptyObjectKind }

func (k *keptDeployment) DeepCopyObject() runtime.Object {
	return &keptDeployment{keptMeta: k.deepCopy(), held: k.held, replicas: copyPtr(k.replicas), status: *k.status.DeepCopy()}
}

func (k *keptService) DeepCopyObject() runtime.Object {
	c := &keptService{keptMeta: k.deepCopy(), held: k.held, serviceType: k.serviceType, clusterIP: k.clusterIP, morePorts: k.morePorts}
	if k.ports != nil {
		c.ports = make([]corev1.ServicePort, len(k.ports))
		for i := range k.ports {
			k.ports[i].DeepCopyInto(&c.ports[i])
		}
	}
	return c
}

func copyPtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	return ptr.To(*p)
}

// annotations are the annotations the reconcilers read of a kept child: apply.AnnotationHeld, and
// apply.AnnotationMorePorts of a Service.
func annotations(held string, morePorts bool) map[string]string {
	a := map[string]string{}
	if held != "" {
		a[apply.AnnotationHeld] = held
	}
	if morePorts {
		a[apply.AnnotationMorePorts] = "true"
	}
	if len(a) == 0 {
		return nil
	}
	return a
}

// deployment is the Deployment k keeps, as a reconcile reads it.
func (k *keptDeployment) deployment() *appsv1.Deployment {
	d := &appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{APIVersion: appsv1.SchemeGroupVersion.String(), Kind: "Deployment"},
		Spec:     appsv1.DeploymentSpec{Replicas: copyPtr(k.replicas)},
		Status:   *k.status.DeepCopy(),
	}
	d.ObjectMeta = k.objectMeta()
	d.Annotations = annotations(k.held, false)
	return d
}

// service is the Service k keeps, as a reconcile reads it.
func (k *keptService) service() *corev1.Service {
	c := k.DeepCopyObject().(*keptService)
	s := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: corev1.SchemeGroupVersion.String(), Kind: "Service"},
		ObjectMeta: c.objectMeta(),
		Spec:       corev1.ServiceSpec{Type: c.serviceType, ClusterIP: c.clusterIP, Ports: c.ports},
	}
	s.Annotations = annotations(c.held, c.morePorts)
	return s
}

// keptDeployObject is what the manager's cache keeps of a DeployObject: the object, its resource
// lists (limits and requests, when they hold anything) kept apart as one slice, which equal lists
// share (sharedResources). A Go map costs its smallest table however few entries it holds: a
// resource list of one to eight entries about 640 bytes, most of a cached DeployObject.
//
// Its DeepCopyObject, with which the cache copies an object out for every Get and List, gives the
// DeployObject back whole: a reader of the cache reads a DeployObject, as from any cache, and
// only the controllers' watches see a keptDeployObject.
type keptDeployObject struct {
	appv1.DeployObject
	resources []keptResource
}

// keptResource is an entry of a kept DeployObject's limits or requests.
type keptResource struct {
	limit    bool
	name     corev1.ResourceName
	quantity resource.Quantity
}

var _ client.Object = &keptDeployObject{}

// keepDeployObject is d as the cache keeps it.
func keepDeployObject(d *appv1.DeployObject) *keptDeployObject {
	r := &d.Spec.Resources
	if len(r.Limits) == 0 && len(r.Requests) == 0 {
		return &keptDeployObject{DeployObject: *d}
	}
	kept := &keptDeployObject{resources: sharedResources.share(r.Limits, r.Requests)}
	// An empty list stays as it was decoded, nil or not, which costs no table.
	if len(r.Limits) != 0 {
		r.Limits = nil
	}
	if len(r.Requests) != 0 {
		r.Requests = nil
	}
	kept.DeployObject = *d
	return kept
}

// DeepCopyObject is the DeployObject k keeps, a copy that shares nothing with it.
func (k *keptDeployObject) DeepCopyObject() runtime.Object {
	d := k.DeepCopy() // the DeployObject's, without the resources kept apart
	for _, r := range k.resources {
		list := &d.Spec.Resources.Requests
		if r.limit {
			list = &d.Spec.Resources.Limits
		}
		if *list == nil {
			*list = corev1.ResourceList{}
		}
		(*list)[r.name] = r.quantity.DeepCopy()
	}
	return d
}

// keptReader is the cache reader of the manager's client: it reads a Deployment or Service as
// keptDeployment and keptService keep it, and anything else from the cache as it is.
type keptReader struct {
	cache.Cache
}

// Get reads the object at key into obj.
func (r keptReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	switch out := obj.(type) {
	case *appsv1.Deployment:
		kept, err := keptAt[*keptDeployment](ctx, r.Cache, key, out, schema.GroupResource{Group: appsv1.GroupName, Resource: "deployments"})
		if err != nil {
			return err
		}
		*out = *kept.deployment()
		return nil
	case *corev1.Service:
		kept, err := keptAt[*keptService](ctx, r.Cache, key, out, schema.GroupResource{Resource: "services"})
		if err != nil {
			return err
		}
		*out = *kept.service()
		return nil
	}
	return r.Cache.Get(ctx, key, obj, opts...)
}

// List lists from the cache; no controller lists Deployments or Services, which it keeps
// otherwise.
func (r keptReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	switch list.(type) {
	case *appsv1.DeploymentList, *corev1.ServiceList:
		return fmt.Errorf("the manager's cache lists no %T: it keeps Deployments and Services as a reconcile reads each by name", list)
	}
	return r.Cache.List(ctx, list, opts...)
}

// keptAt is what the cache keeps at key of objects of obj's type, resource.
func keptAt[K client.Object](ctx context.Context, c cache.Cache, key client.ObjectKey, obj client.Object, resource schema.GroupResource) (K, error) {
	var none K
	informer, err := c.GetInformer(ctx, obj)
	if err != nil {
		return none, err
	}
	indexed, ok := informer.(interface{ GetIndexer() toolscache.Indexer })
	if !ok {
		return none, fmt.Errorf("the cache's informer of %s, a %T, has no indexer", resource, informer)
	}
	item, exists, err := indexed.GetIndexer().GetByKey(key.String())
	if err != nil {
		return none, err
	}
	if !exists {
		return none, apierrors.NewNotFound(resource, key.Name)
	}
	kept, ok := item.(K)
	if !ok {
		return none, fmt.Errorf("the cache holds a %T for %s %s, not a %T", item, resource, key, none)
	}
	return kept, nil
}
