package operator

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	"github.com/seedlabs/webhook-operator/internal/reconcile/apply"
	"github.com/seedlabs/webhook-operator/internal/resources"
)

var (
	deploymentType = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}
	serviceType    = metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}
)

// read is what a reconcile reads, through keptReader, of what the cache keeps.
func read(kept any) any {
	switch k := kept.(type) {
	case *keptDeployment:
		return k.deployment()
	case *keptService:
		return k.service()
	}
	return kept
}

func TestTheCacheKeepsOfChildrenWhatIsReadAndHeldAndOfAnythingElseWhatIdentifiesIt(t *testing.T) {
	controller := func(apiVersion, kind, name string) []metav1.OwnerReference {
		return []metav1.OwnerReference{
			{APIVersion: "v1", Kind: "ConfigMap", Name: "other", UID: "u0"},
			{APIVersion: apiVersion, Kind: kind, Name: name, UID: "u1", Controller: ptr.To(true)},
		}
	}
	status := appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 2, ReadyReplicas: 1,
		Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse, Reason: "MinimumReplicasUnavailable"}}}
	deployment := func(owners []metav1.OwnerReference) *appsv1.Deployment {
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{
				Name: "shop", Namespace: "ns", UID: "d1", ResourceVersion: "7", Generation: 3,
				Labels:          map[string]string{resources.LabelManagedBy: resources.ManagedBy, resources.LabelName: "welcome", "padding": "x"},
				Annotations:     map[string]string{"padding": strings.Repeat("x", 1<<20)},
				ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
				OwnerReferences: owners,
			},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "web", Image: "registry.local/web:1", Env: []corev1.EnvVar{{Name: "PADDING", Value: "x"}}}},
			}}},
			Status: status,
		}
	}
	meta := func(owners []metav1.OwnerReference) metav1.ObjectMeta {
		m := metav1.ObjectMeta{Name: "shop", Namespace: "ns", UID: "d1", ResourceVersion: "7", Generation: 3}
		if ref := metav1.GetControllerOf(&metav1.ObjectMeta{OwnerReferences: owners}); ref != nil {
			m.OwnerReferences = []metav1.OwnerReference{*ref}
		}
		return m
	}
	skeletonOf := func(owners []metav1.OwnerReference) *appsv1.Deployment {
		return &appsv1.Deployment{TypeMeta: deploymentType, ObjectMeta: meta(owners)}
	}
	kept := func(owners []metav1.OwnerReference) *appsv1.Deployment {
		held, err := apply.Held(deployment(owners))
		if err != nil {
			t.Fatal(err)
		}
		m := meta(owners)
		m.Annotations = map[string]string{apply.AnnotationHeld: held}
		return &appsv1.Deployment{TypeMeta: deploymentType, ObjectMeta: m, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)}, Status: status}
	}
	tests := []struct {
		name string
		in   any
		want any
	}{
		{"a Welcome's", deployment(controller("auth.seedlabs.dev/v1", "Welcome", "shop")), kept(controller("auth.seedlabs.dev/v1", "Welcome", "shop"))},
		{"a Memcached's", deployment(controller("cache.seedlabs.dev/v1", "Memcached", "shop")), kept(controller("cache.seedlabs.dev/v1", "Memcached", "shop"))},
		{"a Welcome's, owned at v1alpha1 as the previous release applied it", deployment(controller("auth.seedlabs.dev/v1alpha1", "Welcome", "shop")), kept(controller("auth.seedlabs.dev/v1alpha1", "Welcome", "shop"))},
		{"a DeployObject's, of another version", deployment(controller("app.seedlabs.dev/v2", "DeployObject", "shop")), kept(controller("app.seedlabs.dev/v2", "DeployObject", "shop"))},
		{"without a controller", deployment(nil), skeletonOf(nil)},
		{"controlled by a Welcome of another name", deployment(controller("auth.seedlabs.dev/v1", "Welcome", "cart")), skeletonOf(controller("auth.seedlabs.dev/v1", "Welcome", "cart"))},
		{"controlled by a kind of that name in another group", deployment(controller("example.com/v1", "Welcome", "shop")), skeletonOf(controller("example.com/v1", "Welcome", "shop"))},
		{"controlled by a ReplicaSet", deployment(controller("apps/v1", "ReplicaSet", "shop")), skeletonOf(controller("apps/v1", "ReplicaSet", "shop"))},
		{"not a Deployment or Service", "tombstone", "tombstone"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := keepChildren(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, read(got)); diff != "" {
				t.Errorf("keepChildren() (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("a Service of no custom resource", func(t *testing.T) {
		got, err := keepChildren(&corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "shop", Annotations: map[string]string{"padding": "x"}},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(&corev1.Service{TypeMeta: serviceType, ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, read(got)); diff != "" {
			t.Errorf("keepChildren() (-want +got):\n%s", diff)
		}
	})

	service := func(ports int) *corev1.Service {
		s := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "ns", Annotations: map[string]string{"padding": "x"},
				ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
				OwnerReferences: controller("auth.seedlabs.dev/v1", "Welcome", "shop")},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ClusterIP: "10.0.0.7", Selector: map[string]string{"app": "shop"},
				SessionAffinity: corev1.ServiceAffinityNone},
		}
		for i := range ports {
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Port: int32(8000 + i), NodePort: int32(30000 + i)})
		}
		return s
	}
	t.Run("a Welcome's Service", func(t *testing.T) {
		got, err := keepChildren(service(1))
		if err != nil {
			t.Fatal(err)
		}
		held, err := apply.Held(service(1))
		if err != nil {
			t.Fatal(err)
		}
		want := &corev1.Service{
			TypeMeta: serviceType,
			ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "ns", Annotations: map[string]string{apply.AnnotationHeld: held},
				OwnerReferences: controller("auth.seedlabs.dev/v1", "Welcome", "shop")[1:]},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ClusterIP: "10.0.0.7", Ports: []corev1.ServicePort{{Port: 8000, NodePort: 30000}}},
		}
		if diff := cmp.Diff(want, read(got)); diff != "" {
			t.Errorf("keepChildren() (-want +got):\n%s", diff)
		}
	})
	t.Run("a Service with more ports than any custom resource's", func(t *testing.T) {
		got, err := keepChildren(service(maxKeptPorts + 1))
		if err != nil {
			t.Fatal(err)
		}
		s := read(got).(*corev1.Service)
		if len(s.Spec.Ports) != 0 || s.Annotations[apply.AnnotationMorePorts] == "" {
			t.Errorf("kept %d ports and the annotations %v; want none, and %s", len(s.Spec.Ports), s.Annotations, apply.AnnotationMorePorts)
		}
	})
}

// TestTheCacheTransformsAreIdempotent: client-go may transform an object it has already
// transformed, as a new leader's informers do while they fill the cache; what the transform keeps
// must come out the same, the hash of what the operator holds above all, or every reconcile of a
// new leader would apply again.
func TestTheCacheTransformsAreIdempotent(t *testing.T) {
	owners := []metav1.OwnerReference{{APIVersion: "auth.seedlabs.dev/v1", Kind: "Welcome", Name: "shop", UID: "u1", Controller: ptr.To(true)}}
	managed := []metav1.ManagedFieldsEntry{{Manager: apply.FieldManager, Operation: metav1.ManagedFieldsOperationApply, APIVersion: "apps/v1",
		FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:replicas":{}}}`)}}
	deployment := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "ns", UID: "d1", ResourceVersion: "7", OwnerReferences: owners,
			Labels: map[string]string{resources.LabelManagedBy: resources.ManagedBy}, ManagedFields: managed},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)},
	}
	service := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "ns", OwnerReferences: owners, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
	}
	for i := range maxKeptPorts + 1 {
		service.Spec.Ports = append(service.Spec.Ports, corev1.ServicePort{Port: int32(8000 + i)})
	}
	for _, tc := range []struct {
		name      string
		in        any
		transform func(any) (any, error)
	}{
		{"a child Deployment", deployment, keepChildren},
		{"a child Service", service, keepChildren},
		{"a Welcome", &authv1.Welcome{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{"a": "b"}, ManagedFields: managed}}, withoutWhatIsNotRead},
		{"a Namespace", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", Labels: map[string]string{"a": "b"}, ManagedFields: managed}}, keepNamespaceLabels},
	} {
		t.Run(tc.name, func(t *testing.T) {
			once, err := tc.transform(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if d, ok := once.(*keptDeployment); ok && d.held == "" {
				t.Fatal("no hash of what the operator holds")
			}
			twice, err := tc.transform(once.(runtime.Object).DeepCopyObject())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(once, twice, cmp.AllowUnexported(keptDeployment{}, keptService{}, keptMeta{})); diff != "" {
				t.Errorf("transformed again (-once +twice):\n%s", diff)
			}
		})
	}
}

func TestTheCacheKeepsOfCustomResourcesAndNamespacesWhatIsRead(t *testing.T) {
	meta := metav1.ObjectMeta{
		Name: "shop", Namespace: "ns", UID: "w1", ResourceVersion: "7", Generation: 3,
		Labels:        map[string]string{"team": "web"},
		Annotations:   map[string]string{"kubectl.kubernetes.io/last-applied-configuration": strings.Repeat("x", 1<<10)},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
	}
	w := &authv1.Welcome{ObjectMeta: *meta.DeepCopy(), Spec: authv1.WelcomeSpec{Name: "Ada"}}
	got, err := withoutWhatIsNotRead(w)
	if err != nil {
		t.Fatal(err)
	}
	want := &authv1.Welcome{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "ns", UID: "w1", ResourceVersion: "7", Generation: 3},
		Spec: authv1.WelcomeSpec{Name: "Ada"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("withoutWhatIsNotRead() (-want +got):\n%s", diff)
	}

	// Of a Welcome's annotations, the conversion data, where v1 keeps the password the guard judges.
	const password = `{"spec":{"password":"hunter2"}}`
	w = &authv1.Welcome{ObjectMeta: *meta.DeepCopy(), Spec: authv1.WelcomeSpec{Name: "Ada"}}
	w.Annotations[authv1.ConversionDataAnnotation] = password
	got, err = withoutWhatIsNotRead(w)
	if err != nil {
		t.Fatal(err)
	}
	want.Annotations = map[string]string{authv1.ConversionDataAnnotation: password}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("withoutWhatIsNotRead() of a Welcome with a password (-want +got):\n%s", diff)
	}

	secret := &corev1.Secret{ObjectMeta: *meta.DeepCopy()}
	got, err = withoutWhatIsNotRead(secret)
	if err != nil {
		t.Fatal(err)
	}
	if s := got.(*corev1.Secret); s.ManagedFields != nil || s.Labels["team"] != "web" || len(s.Annotations) != 1 {
		t.Errorf("of another kind, withoutWhatIsNotRead() keeps %+v; want its labels and annotations, without managedFields", s.ObjectMeta)
	}

	ns := &corev1.Namespace{ObjectMeta: *meta.DeepCopy(), Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"kubernetes"}},
		Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
	got, err = keepNamespaceLabels(ns)
	if err != nil {
		t.Fatal(err)
	}
	wantNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", UID: "w1", ResourceVersion: "7", Labels: map[string]string{"team": "web"}}}
	if diff := cmp.Diff(wantNS, got); diff != "" {
		t.Errorf("keepNamespaceLabels() (-want +got):\n%s", diff)
	}
}

func TestTheCacheKeepsOfAPodItsNameLabelsPhaseAndControllerAndOfAContainerThatCannotStartWhy(t *testing.T) {
	deleted := metav1.Now()
	replicaSet := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "cache-7c9", UID: "rs1", Controller: ptr.To(true)}
	meta := metav1.ObjectMeta{
		Name: "cache-7c9-aa", Namespace: "ns", UID: "p1", ResourceVersion: "9",
		Labels:          map[string]string{resources.LabelName: "memcached", resources.LabelInstance: "cache", "pod-template-hash": "7c9"},
		Annotations:     map[string]string{"padding": "x"},
		OwnerReferences: []metav1.OwnerReference{replicaSet, {APIVersion: "v1", Kind: "ConfigMap", Name: "other", UID: "c1"}},
	}
	keptMeta := metav1.ObjectMeta{
		Name: "cache-7c9-aa", Namespace: "ns", UID: "p1", ResourceVersion: "9",
		Labels:          map[string]string{resources.LabelName: "memcached", resources.LabelInstance: "cache"},
		OwnerReferences: []metav1.OwnerReference{replicaSet},
	}
	running := corev1.ContainerStatus{Name: "exporter", Ready: true, Image: "exporter:1", ImageID: "sha256:abc",
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: deleted}}}
	waiting := func(name, reason, message string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, Image: "registry.example.test/memcached:1",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}}
	}
	const backOff = `Back-off pulling image "registry.example.test/memcached:1": ErrImagePull: no basic auth credentials`
	long := strings.Repeat("x", 5000)
	tests := []struct {
		name   string
		meta   func(*metav1.ObjectMeta)
		status corev1.PodStatus
		want   corev1.PodStatus
	}{
		{
			name: "running: no container status",
			status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1",
				Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
				ContainerStatuses: []corev1.ContainerStatus{running}},
			want: corev1.PodStatus{Phase: corev1.PodRunning},
		},
		{
			name: "starting: waiting to be created is no failure",
			status: corev1.PodStatus{Phase: corev1.PodPending,
				ContainerStatuses: []corev1.ContainerStatus{waiting("memcached", "ContainerCreating", "")}},
			want: corev1.PodStatus{Phase: corev1.PodPending},
		},
		{
			name: "crash looping: the Deployment's deadline says it",
			status: corev1.PodStatus{Phase: corev1.PodRunning,
				ContainerStatuses: []corev1.ContainerStatus{waiting("memcached", "CrashLoopBackOff", "back-off 5m0s restarting failed container")}},
			want: corev1.PodStatus{Phase: corev1.PodRunning},
		},
		{
			name: "an image that cannot be pulled: that container's name and why, and nothing of the others",
			status: corev1.PodStatus{Phase: corev1.PodPending, Message: "padding",
				ContainerStatuses: []corev1.ContainerStatus{running, waiting("memcached", "ImagePullBackOff", backOff)}},
			want: corev1.PodStatus{Phase: corev1.PodPending,
				ContainerStatuses: []corev1.ContainerStatus{{Name: "memcached", State: corev1.ContainerState{
					Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: backOff}}}}},
		},
		{
			name: "an init container first, its message cut",
			status: corev1.PodStatus{Phase: corev1.PodPending,
				InitContainerStatuses: []corev1.ContainerStatus{waiting("setup", "CreateContainerConfigError", long)},
				ContainerStatuses:     []corev1.ContainerStatus{waiting("memcached", "ErrImagePull", backOff)}},
			want: corev1.PodStatus{Phase: corev1.PodPending,
				ContainerStatuses: []corev1.ContainerStatus{{Name: "setup", State: corev1.ContainerState{
					Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError", Message: strings.Repeat("x", 995) + "… and 4005 more bytes"}}}}},
		},
		{
			name: "terminating: its containers no longer start",
			meta: func(m *metav1.ObjectMeta) { m.DeletionTimestamp = &deleted },
			status: corev1.PodStatus{Phase: corev1.PodPending,
				ContainerStatuses: []corev1.ContainerStatus{waiting("memcached", "ImagePullBackOff", backOff)}},
			want: corev1.PodStatus{Phase: corev1.PodPending},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, want := &corev1.Pod{ObjectMeta: *meta.DeepCopy(), Status: tt.status,
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "memcached"}}}}, &corev1.Pod{ObjectMeta: *keptMeta.DeepCopy(), Status: tt.want}
			if tt.meta != nil {
				tt.meta(&in.ObjectMeta)
				tt.meta(&want.ObjectMeta)
			}
			got, err := keepPod(in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("keepPod() (-want +got):\n%s", diff)
			}
			twice, err := keepPod(got.(*corev1.Pod).DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(got, twice); diff != "" {
				t.Errorf("transformed again (-once +twice):\n%s", diff)
			}
		})
	}
}

// TestAKeptChildIsCopiedWhole: what the cache keeps of a child is copied before anyone reads it,
// so that a reconcile changing its copy, of the Deployment's conditions or the Service's ports
// say, changes nothing in the cache.
func TestAKeptChildIsCopiedWhole(t *testing.T) {
	owner := []metav1.OwnerReference{{APIVersion: "auth.seedlabs.dev/v1", Kind: "Welcome", Name: "shop", UID: "u1", Controller: ptr.To(true)}}
	d := &keptDeployment{keptMeta: keptIdentity(&metav1.ObjectMeta{Name: "shop", OwnerReferences: owner}), held: "h", replicas: ptr.To[int32](2),
		status: appsv1.DeploymentStatus{Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable}}}}
	s := &keptService{keptMeta: keptIdentity(&metav1.ObjectMeta{Name: "shop", OwnerReferences: owner}), held: "h", ports: []corev1.ServicePort{{Port: 80}}}
	before := []any{d.DeepCopyObject(), s.DeepCopyObject()}

	for _, copied := range []*appsv1.Deployment{d.deployment(), d.DeepCopyObject().(*keptDeployment).deployment()} {
		*copied.Spec.Replicas = 3
		copied.Status.Conditions[0].Type = appsv1.DeploymentProgressing
		copied.OwnerReferences[0].Name = "cart"
	}
	for _, copied := range []*corev1.Service{s.service(), s.DeepCopyObject().(*keptService).service()} {
		copied.Spec.Ports[0].Port = 81
		copied.OwnerReferences[0].Name = "cart"
	}
	if diff := cmp.Diff(before, []any{d, s}, cmp.AllowUnexported(keptDeployment{}, keptService{}, keptMeta{})); diff != "" {
		t.Errorf("the kept children changed with their copies (-before +after):\n%s", diff)
	}
}

// keptAsDecoded decodes raw into obj, each string its own copy, as the cache's informer does, and
// returns what withoutWhatIsNotRead keeps of it, a K, failing the test if a reader of the cache
// would read another value than decoded: a reader reads a copy (DeepCopyObject).
func keptAsDecoded[K runtime.Object](t *testing.T, raw []byte, obj runtime.Object) K {
	t.Helper()
	if err := json.Unmarshal(raw, obj); err != nil {
		t.Fatal(err)
	}
	want := obj.DeepCopyObject()
	got, err := withoutWhatIsNotRead(obj)
	if err != nil {
		t.Fatal(err)
	}
	kept, ok := got.(K)
	if !ok {
		t.Fatalf("withoutWhatIsNotRead() kept a %T, want a %T", got, kept)
	}
	if diff := cmp.Diff(want, kept.DeepCopyObject()); diff != "" {
		t.Fatalf("withoutWhatIsNotRead() changed a value (-want +got):\n%s", diff)
	}
	return kept
}

// TestCustomResourcesShareTheirCommonStrings decodes two Welcomes as the cache's informer does,
// each string its own copy, and requires that once transformed they share one copy of their
// namespace, apiVersion, kind and conditions, and keep every value.
func TestCustomResourcesShareTheirCommonStrings(t *testing.T) {
	const object = `{"apiVersion":"auth.seedlabs.dev/v1","kind":"Welcome","metadata":{"name":"%s","namespace":"team-a"},` +
		`"spec":{"name":"Ada"},"status":{"conditions":[{"type":"Ready","status":"True","reason":"RolledOut",` +
		`"message":"1 of 1 replica available","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`
	var kept []*authv1.Welcome
	for _, name := range []string{"a", "b"} {
		kept = append(kept, keptAsDecoded[*authv1.Welcome](t, fmt.Appendf(nil, object, name), &authv1.Welcome{}))
	}
	a, b := kept[0], kept[1]
	for what, pair := range map[string][2]string{
		"namespace":         {a.Namespace, b.Namespace},
		"apiVersion":        {a.APIVersion, b.APIVersion},
		"kind":              {a.Kind, b.Kind},
		"condition type":    {a.Status.Conditions[0].Type, b.Status.Conditions[0].Type},
		"condition status":  {string(a.Status.Conditions[0].Status), string(b.Status.Conditions[0].Status)},
		"condition reason":  {a.Status.Conditions[0].Reason, b.Status.Conditions[0].Reason},
		"condition message": {a.Status.Conditions[0].Message, b.Status.Conditions[0].Message},
	} {
		if unsafe.StringData(pair[0]) != unsafe.StringData(pair[1]) {
			t.Errorf("the two Welcomes hold two copies of their %s %q", what, pair[0])
		}
	}
}

// TestTheCacheKeepsADeployObjectsResourcesApart decodes DeployObjects as the cache's informer does
// and requires that, once transformed, they hold their resource lists apart, as one slice, which
// those whose lists marshal alike share and the others do not; and that a reader of the cache
// reads every value as decoded, an empty list as empty and a missing one as missing.
func TestTheCacheKeepsADeployObjectsResourcesApart(t *testing.T) {
	const object = `{"apiVersion":"app.seedlabs.dev/v1","kind":"DeployObject","metadata":{"name":"%s","namespace":"team-a"},` +
		`"spec":{"image":"registry.example/app:v1","resources":{"requests":{"cpu":%q,"memory":%q},"limits":{"memory":"64Mi"}}}}`
	decode := func(name, cpu, memory string) *keptDeployObject {
		t.Helper()
		return keptAsDecoded[*keptDeployObject](t, fmt.Appendf(nil, object, name, cpu, memory), &appv1.DeployObject{})
	}
	same := func(a, b *keptDeployObject) bool {
		return len(a.resources) > 0 && &a.resources[0] == &b.resources[0]
	}

	a, b := decode("a", "50m", "32Mi"), decode("b", "50m", "32Mi")
	if a.Spec.Resources.Limits != nil || a.Spec.Resources.Requests != nil || len(a.resources) != 3 {
		t.Errorf("the kept DeployObject holds limits %v, requests %v and apart %d resources; want no map and 3 apart",
			a.Spec.Resources.Limits, a.Spec.Resources.Requests, len(a.resources))
	}
	if !same(a, b) {
		t.Error("two DeployObjects with equal resources hold their own")
	}
	again, err := withoutWhatIsNotRead(a)
	if err != nil || again != any(a) {
		t.Errorf("transforming a kept DeployObject again gives %v, %v; want it as it was", again, err)
	}
	// Equal is as the quantities marshal: "0.05" decodes to the 50m that "50m" does, and marshals
	// as "50m"; 32Mi and 33554432 are one amount, which marshal as they are spelled.
	if d := decode("d", "0.05", "32Mi"); !same(a, d) {
		t.Error("resources that marshal alike are not shared")
	}
	for _, c := range []*keptDeployObject{decode("c", "100m", "32Mi"), decode("bytes", "50m", "33554432")} {
		if same(a, c) {
			t.Errorf("requests %v share the resources of other requests", c.DeepCopyObject().(*appv1.DeployObject).Spec.Resources.Requests)
		}
	}

	for _, resources := range []string{`{"limits":{}}`, `{"requests":{"cpu":"1"},"limits":{}}`, `{}`} {
		raw := `{"apiVersion":"app.seedlabs.dev/v1","kind":"DeployObject","metadata":{"name":"e"},"spec":{"image":"a:v1","resources":` + resources + `}}`
		keptAsDecoded[*keptDeployObject](t, []byte(raw), &appv1.DeployObject{})
	}
}

// TestTheSharedResourcesAreBounded fills the table past its bounds: past maxSharedResources, and
// with lists longer than maxSharedKey, each is kept its own and nothing more is shared; and a list
// whose one name spells another list's names and values is not taken for it, nor limits for
// requests.
func TestTheSharedResourcesAreBounded(t *testing.T) {
	table := resourceTable{kept: map[string][]keptResource{}}
	list := func(i int) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(int64(i+1), resource.DecimalSI)}
	}
	same := func(a, b []keptResource) bool { return &a[0] == &b[0] }
	for i := range maxSharedResources + 10 {
		table.share(list(i), nil)
	}
	if len(table.kept) != maxSharedResources {
		t.Errorf("the table holds %d, want its bound %d", len(table.kept), maxSharedResources)
	}
	if !same(table.share(list(1), nil), table.share(list(1), nil)) {
		t.Error("resources within the bound are not shared")
	}
	if same(table.share(list(maxSharedResources+5), nil), table.share(list(maxSharedResources+5), nil)) {
		t.Error("resources past the bound are shared")
	}
	// A name no webhook refused (in a namespace they leave out) that holds another list's
	// names and values.
	crafted := corev1.ResourceList{corev1.ResourceName(`cpu="100m",memory`): resource.MustParse("128Mi")}
	real := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}
	fresh := resourceTable{kept: map[string][]keptResource{}}
	fresh.share(crafted, nil)
	fresh.share(real, nil)
	if len(fresh.kept) != 2 {
		t.Errorf("the lists %v and %v are kept as %d", crafted, real, len(fresh.kept))
	}
	fresh.share(nil, real)
	if len(fresh.kept) != 3 {
		t.Error("requests are taken for equal limits")
	}
	long := corev1.ResourceList{corev1.ResourceName("example.com/" + strings.Repeat("x", maxSharedKey)): resource.MustParse("1")}
	small := resourceTable{kept: map[string][]keptResource{}}
	if kept := small.share(long, nil); len(small.kept) != 0 || len(kept) != 1 {
		t.Errorf("a list longer than maxSharedKey is kept as %v, and %d in the table", kept, len(small.kept))
	}
}
