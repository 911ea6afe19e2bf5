package operator

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unique"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	"github.com/seedlabs/webhook-operator/internal/message"
	"github.com/seedlabs/webhook-operator/internal/reconcile/apply"
	"github.com/seedlabs/webhook-operator/internal/reconcile/status"
	"github.com/seedlabs/webhook-operator/internal/resources"
	"github.com/seedlabs/webhook-operator/webhooks"
)

// cacheOptions bound what the manager's cache holds to what the controllers read, so that its
// memory grows with the number of custom resources by a few KiB each, whatever their objects
// carry (docs/performance.md).
//
// It holds only the Deployments, Services and Pods carrying the operator's managed-by label,
// instead of every one in the cluster. Anyone who may create a Deployment can set that label, so
// the label alone bounds nothing: of a child of one of the custom resources (controlled by it,
// under its name, as the controllers make them) it keeps what a reconcile reads, and the hash of
// what the operator's field manager holds of it (apply.AnnotationHeld), which tells whether an
// apply could change anything; of any other object, the little ownership reads of it, its name and
// controller. It keeps them as keptDeployment and keptService, which the manager's client reads
// (newClient). A Pod is kept as the controllers read it: its name, labels, phase and controller,
// and of a container that cannot start, only that one's name and why (keepPod). Of
// the custom resources and namespaces it drops what no one reads: labels and annotations (but a
// namespace's labels, which the policy's overrides select), and managedFields of everything; a
// DeployObject it keeps as a keptDeployObject, its resource lists in a slice instead of two maps.
func cacheOptions() cache.Options {
	ours := labels.SelectorFromSet(labels.Set{resources.LabelManagedBy: resources.ManagedBy})
	return cache.Options{
		ByObject: map[client.Object]cache.ByObject{
			&appsv1.Deployment{}: {Label: ours, Transform: keepChildren},
			&corev1.Service{}:    {Label: ours, Transform: keepChildren},
			&corev1.Pod{}:        {Label: ours, Transform: keepPod},
			&corev1.Namespace{}:  {Transform: keepNamespaceLabels},
		},
		// Not ByObject for the custom resources: the cache resolves every ByObject type when it is
		// made, and a missing CRD would keep the manager from starting.
		DefaultTransform: withoutWhatIsNotRead,
	}
}

// newClient is the manager's client: controller-runtime's, whose cache reader is keptReader.
func newClient(config *rest.Config, options client.Options) (client.Client, error) {
	if options.Cache != nil {
		c, ok := options.Cache.Reader.(cache.Cache)
		if !ok {
			return nil, fmt.Errorf("the manager's client reads from a %T, not a cache", options.Cache.Reader)
		}
		options.Cache.Reader = keptReader{Cache: c}
	}
	return client.New(config, options)
}

// parents are the custom resources whose children the controllers apply, at the version they
// apply them from: the kinds admission defaults and validates.
var parents = func() []schema.GroupVersionKind {
	var gvks []schema.GroupVersionKind
	for _, k := range webhooks.Kinds() {
		gvks = append(gvks, k.Kind())
	}
	return gvks
}()

// parentKinds are parents, at any version.
var parentKinds = func() map[schema.GroupKind]bool {
	kinds := make(map[schema.GroupKind]bool, len(parents))
	for _, gvk := range parents {
		kinds[gvk.GroupKind()] = true
	}
	return kinds
}()

// isChild reports whether obj is a custom resource's Deployment or Service: controlled by one of
// parentKinds under obj's own name. Each custom resource has at most one of each, so however many
// objects carry the label, the cache keeps whole no more of them than there are custom resources.
func isChild(obj metav1.Object) bool {
	ref := metav1.GetControllerOf(obj)
	if ref == nil || ref.Name != obj.GetName() {
		return false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && parentKinds[schema.GroupKind{Group: gv.Group, Kind: ref.Kind}]
}

// keepChildren is the cache transform of Deployments and Services: a keptDeployment or keptService,
// which holds of a child of a custom resource what a reconcile reads and the hash of what its field
// manager holds, and of anything else its identity. client-go may hand it an object it has already
// transformed, as a new leader's informers do while they fill the cache: that one stays as it is.
func keepChildren(obj any) (any, error) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		kept := &keptDeployment{keptMeta: keptIdentity(o)}
		if isChild(o) {
			kept.held, kept.replicas, kept.status = held(o), o.Spec.Replicas, o.Status
			for i := range kept.status.Conditions {
				c := &kept.status.Conditions[i]
				c.Type = appsv1.DeploymentConditionType(canonical(string(c.Type)))
				c.Status = corev1.ConditionStatus(canonical(string(c.Status)))
				c.Reason, c.Message = canonical(c.Reason), canonical(c.Message)
			}
		}
		return kept, nil
	case *corev1.Service:
		kept := &keptService{keptMeta: keptIdentity(o)}
		if isChild(o) {
			kept.held, kept.serviceType, kept.clusterIP = held(o), o.Spec.Type, o.Spec.ClusterIP
			if len(o.Spec.Ports) <= maxKeptPorts {
				kept.ports = o.Spec.Ports
			} else {
				kept.morePorts = true
			}
		}
		return kept, nil
	}
	return obj, nil
}

// maxKeptPorts is the most ports of a child Service kept: a custom resource's Service has no
// more (DeployObject's spec.ports maxItems), so a Service with more holds ports added by hand,
// which the next reconcile replaces (apply.ReplaceForeignServicePorts reads them past the cache).
const maxKeptPorts = 100

// vocabulary are strings that most kept objects carry: the custom resources' apiVersions and kinds
// in their children's controller references, a pod's in its ReplicaSet's, and what
// kube-controller-manager writes in a Deployment's conditions, but for the messages that name a
// ReplicaSet.
var vocabulary = func() map[string]string {
	words := []string{
		string(appsv1.DeploymentAvailable), string(appsv1.DeploymentProgressing), string(appsv1.DeploymentReplicaFailure),
		string(corev1.ConditionTrue), string(corev1.ConditionFalse), string(corev1.ConditionUnknown),
		"MinimumReplicasAvailable", "MinimumReplicasUnavailable", "NewReplicaSetAvailable", "ReplicaSetUpdated",
		"NewReplicaSetCreated", "FoundNewReplicaSet", "ProgressDeadlineExceeded", "DeploymentPaused", "DeploymentResumed",
		"FailedCreate", "Deployment has minimum availability.", "Deployment does not have minimum availability.",
		appsv1.SchemeGroupVersion.String(), "ReplicaSet",
	}
	for _, gvk := range parents {
		words = append(words, gvk.GroupVersion().String(), gvk.Kind)
	}
	v := make(map[string]string, len(words))
	for _, w := range words {
		v[w] = w
	}
	return v
}()

// canonical is s as vocabulary holds it, so that every kept object carrying it shares one copy,
// or s.
func canonical(s string) string {
	if c, ok := vocabulary[s]; ok {
		return c
	}
	return s
}

// held is apply.Held of a child as the API server sends it, or "" when its managedFields do not
// extract (none of the operator's, say): it is then applied on its next reconcile.
func held(obj any) string {
	h, err := apply.Held(obj)
	if err != nil {
		return ""
	}
	return h
}

// readAnnotations are the annotations of a custom resource the controllers read.
func readAnnotations(annotations map[string]string) map[string]string {
	if data, ok := annotations[authv1.ConversionDataAnnotation]; ok {
		return map[string]string{authv1.ConversionDataAnnotation: data}
	}
	return nil
}

// withoutWhatIsNotRead is the cache transform of every object but those above: no managedFields,
// and of the custom resources no labels, and no annotations but a Welcome's conversion-data, where
// v1 keeps v1alpha1's password, which the guard judges (its rules bound it at admission). The
// controllers read nothing else of them (kubectl apply's last-applied-configuration among them, as
// large as the object), and a tenant can make both as large as the API allows.
//
// Of a custom resource it also shares the strings many carry (intern): its namespace, its
// apiVersion and kind, and its conditions' types, statuses, reasons and messages, which the
// controllers write from a few templates ("1 of 1 replica available") and kstatus reads. A
// DeployObject it keeps as a keptDeployObject, its resource lists in a slice.
func withoutWhatIsNotRead(obj any) (any, error) {
	o, ok := obj.(metav1.Object)
	if !ok {
		return obj, nil
	}
	o.SetManagedFields(nil)
	if r, ok := obj.(runtime.Object); ok && slices.ContainsFunc(webhooks.Kinds(), func(k webhooks.AnyKind) bool { return k.Matches(r) }) {
		o.SetLabels(nil)
		o.SetAnnotations(readAnnotations(o.GetAnnotations()))
		o.SetNamespace(intern(o.GetNamespace()))
		if t, ok := r.GetObjectKind().(*metav1.TypeMeta); ok {
			t.APIVersion, t.Kind = canonical(t.APIVersion), canonical(t.Kind)
		}
		if c, ok := obj.(interface{ GetConditions() []metav1.Condition }); ok {
			for i, conditions := 0, c.GetConditions(); i < len(conditions); i++ {
				cond := &conditions[i]
				cond.Type, cond.Status = intern(cond.Type), metav1.ConditionStatus(intern(string(cond.Status)))
				cond.Reason, cond.Message = intern(cond.Reason), intern(cond.Message)
			}
		}
		if d, ok := obj.(*appv1.DeployObject); ok {
			return keepDeployObject(d), nil
		}
	}
	return obj, nil
}

// sharedResources are the resource lists the kept DeployObjects share.
var sharedResources = resourceTable{kept: map[string][]keptResource{}}

// resourceTable keeps one copy of each of the first maxSharedResources pairs of resource lists it
// is given (of up to maxSharedKey bytes as JSON), as keptResources, for every equal pair after
// them to share: most clusters' resources come from a few sizes. Sharing is safe as the cache's
// objects are read-only: a reader gets a copy. Pairs past the bounds are kept each their own; the
// bounds hold the table under about a MiB whatever tenants write.
type resourceTable struct {
	mu   sync.Mutex
	kept map[string][]keptResource
}

const (
	maxSharedResources = 1024
	maxSharedKey       = 256
)

// share is limits and requests as keptResources: the table's copy, or their own. Equal is equal as
// the operator applies them: by name, and each quantity as it marshals ("32Mi" and "33554432" are
// two; "0.5" and "500m", which decode alike, one).
func (t *resourceTable) share(limits, requests corev1.ResourceList) []keptResource {
	kept := make([]keptResource, 0, len(limits)+len(requests))
	var key strings.Builder
	shareable := true
	for _, l := range []struct {
		limit bool
		list  corev1.ResourceList
	}{{true, limits}, {false, requests}} {
		key.WriteString(strconv.FormatBool(l.limit))
		for _, name := range slices.Sorted(maps.Keys(l.list)) {
			q := l.list[name]
			kept = append(kept, keptResource{limit: l.limit, name: name, quantity: q})
			if !shareable {
				continue
			}
			value, err := q.MarshalJSON()
			if err != nil {
				shareable = false
				continue
			}
			// Quoted, so that no name can read as another list's names and values: the schema
			// leaves resource names free, and the cache holds objects no webhook judged.
			key.WriteString(strconv.Quote(string(name)))
			key.WriteByte('=')
			key.Write(value)
			key.WriteByte(',')
			shareable = key.Len() <= maxSharedKey
		}
	}
	if !shareable {
		return kept
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if shared, ok := t.kept[key.String()]; ok {
		return shared
	}
	if len(t.kept) < maxSharedResources {
		t.kept[key.String()] = kept
	}
	return kept
}

// intern is s as unique holds it, a copy that every string intern makes equal to s shares until
// the next garbage collection: unique drops its copy once no Handle holds it, and the cache keeps
// strings, not Handles. So the objects a list decodes keep a copy per collection during the list,
// not one each.
func intern(s string) string {
	return unique.Make(s).Value()
}

// keepNamespaceLabels is the cache transform of Namespaces: their name and labels, which the
// policy's namespace overrides select, and nothing else.
func keepNamespaceLabels(obj any) (any, error) {
	if ns, ok := obj.(*corev1.Namespace); ok {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
			Name: ns.Name, UID: ns.UID, ResourceVersion: ns.ResourceVersion, Labels: ns.Labels, DeletionTimestamp: ns.DeletionTimestamp,
		}}, nil
	}
	return obj, nil
}

// keepPod is the cache transform of Pods: what tells whether a pod is a member of a
// Memcached's pool (its labels, its deletion and its phase), its controller (the ReplicaSet, which
// tells the pods of the Deployment's current template), and nothing of its spec. Of its
// containers' statuses it keeps only that of a container that cannot start (status.CannotStart),
// as one entry of containerStatuses (an init container's too): its name, and the reason and message
// the kubelet waits with, the message cut to maxKeptWaitingMessage. A pod whose containers can all
// start keeps none.
func keepPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	kept := &corev1.Pod{ObjectMeta: skeleton(pod), Status: corev1.PodStatus{Phase: pod.Status.Phase}}
	if c := status.CannotStart(pod); c != nil {
		kept.Status.ContainerStatuses = []corev1.ContainerStatus{{
			Name: c.Name,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
				Reason:  c.State.Waiting.Reason,
				Message: message.Truncate(c.State.Waiting.Message, maxKeptWaitingMessage),
			}},
		}}
	}
	return kept, nil
}

// maxKeptWaitingMessage is the most bytes of a kubelet's message about a container that cannot
// start that the cache keeps: a pull error quoting the image and the registry's answer fits in
// it, and a status written by another hand costs no more.
const maxKeptWaitingMessage = 1024

// keptLabels are the labels by which the controllers map their pods.
var keptLabels = []string{resources.LabelName, resources.LabelInstance, resources.LabelManagedBy}

// skeleton is obj's identity and the labels of keptLabels it carries.
func skeleton(obj metav1.Object) metav1.ObjectMeta {
	m := identity(obj)
	for _, key := range keptLabels {
		if v, ok := obj.GetLabels()[key]; ok {
			if m.Labels == nil {
				m.Labels = make(map[string]string, len(keptLabels))
			}
			m.Labels[key] = v
		}
	}
	return m
}

// identity is what identifies obj, and no more: a bounded size whatever obj carries. The
// controllers find a child by its name and tell whose it is by its controller reference; what
// labels it carries, the cache's label selector has already read.
func identity(obj metav1.Object) metav1.ObjectMeta {
	m := metav1.ObjectMeta{
		Name:              obj.GetName(),
		Namespace:         intern(obj.GetNamespace()),
		UID:               obj.GetUID(),
		ResourceVersion:   obj.GetResourceVersion(),
		Generation:        obj.GetGeneration(),
		DeletionTimestamp: obj.GetDeletionTimestamp(),
	}
	if ref := metav1.GetControllerOf(obj); ref != nil {
		ref.APIVersion, ref.Kind = canonical(ref.APIVersion), canonical(ref.Kind)
		if ref.Name == m.Name {
			ref.Name = m.Name
		}
		m.OwnerReferences = []metav1.OwnerReference{*ref}
	}
	return m
}
