//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	cachev1 "github.com/seedlabs/webhook-operator/api/cache/v1"
	"github.com/seedlabs/webhook-operator/internal/scheme"
)

// loadKind is how the load makes, changes and reads back one of the operator's kinds. Each
// object's spec carries a version, so the test knows which write the API server stored last.
//
// Pods started on the node are what the load costs the machine: a rollout starts a sandbox and a
// container and tears down others, and at 2.5 rollouts a second kubelet started pods 1–2 minutes
// late, SIGKILLed managers included. So only a Memcached's version is in its pods (its port),
// and a Memcached is updated on one visit in memcachedUpdateEvery; a Welcome's version is in what
// the operator reads and does not copy into its children (spec.userID), and a DeployObject's is
// its Service's port, which the operator applies to the Service, the container port staying the
// targetPort.
type loadKind struct {
	// short names the kind in object names: names are unique across kinds, as the Deployments
	// and Services each object gets are named after it.
	short     string
	newObject func(namespace, name string, version int) client.Object
	// patch is a JSON merge patch that moves the spec to version; every one changes .spec. The
	// validating webhooks are called for every create and patch of a Welcome (it has an image,
	// which only the webhook can judge) and of a DeployObject, whose creates also call the
	// mutating webhook (a port without a targetPort); a Memcached's are kept from the webhooks by
	// their matchConditions, as a valid object's are.
	patch   func(version int) string
	version func(obj client.Object) (int, error)
	// updateEvery, when more than 1, makes the load update an object of the kind on one visit in
	// updateEvery only, and go on to the next object on the others.
	updateEvery int
}

// memcachedUpdateEvery spaces a Memcached's updates, each a rollout of a pod on the node. Its
// writes never reach the webhooks (the matchConditions keep a valid Memcached from them), so the
// admission load is the same.
const memcachedUpdateEvery = 4

var loadKinds = map[string]loadKind{
	"Welcome": {
		short: "w",
		newObject: func(namespace, name string, version int) client.Object {
			return &authv1.Welcome{
				ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
				// The image is set, so that every create and update calls both webhooks.
				Spec: authv1.WelcomeSpec{Name: "Load", UserID: ptr.To(int32(version)), Replicas: ptr.To[int32](1),
					ServiceType: corev1.ServiceTypeClusterIP, Image: cfg.welcome},
			}
		},
		patch: func(version int) string { return fmt.Sprintf(`{"spec":{"userID":%d}}`, version) },
		version: func(obj client.Object) (int, error) {
			return int(ptr.Deref(obj.(*authv1.Welcome).Spec.UserID, 0)), nil
		},
	},
	"Memcached": {
		short: "m",
		newObject: func(namespace, name string, version int) client.Object {
			return &cachev1.Memcached{
				ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
				Spec:       cachev1.MemcachedSpec{Size: ptr.To[int32](1), ContainerPort: ptr.To(memcachedPort(version))},
			}
		},
		patch: func(version int) string { return fmt.Sprintf(`{"spec":{"containerPort":%d}}`, memcachedPort(version)) },
		version: func(obj client.Object) (int, error) {
			return int(ptr.Deref(obj.(*cachev1.Memcached).Spec.ContainerPort, 0) - memcachedPort(0)), nil
		},
		updateEvery: memcachedUpdateEvery,
	},
	"DeployObject": {
		short: "d",
		newObject: func(namespace, name string, version int) client.Object {
			return &appv1.DeployObject{
				ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
				Spec: appv1.DeployObjectSpec{
					Image:    cfg.echo + ":v1",
					Replicas: ptr.To[int32](1),
					// No targetPort: the mutating webhook sets it to the port, e2e-echo's.
					Ports: []corev1.ServicePort{{Name: "http", Port: loadServicePort(version)}},
					Env:   []corev1.EnvVar{{Name: "LISTEN", Value: strconv.Itoa(int(loadServicePort(1)))}},
				},
			}
		},
		patch: func(version int) string {
			return fmt.Sprintf(`{"spec":{"ports":[{"name":"http","port":%d,"targetPort":%d}]}}`, loadServicePort(version), loadServicePort(1))
		},
		version: func(obj client.Object) (int, error) {
			ports := obj.(*appv1.DeployObject).Spec.Ports
			if len(ports) != 1 {
				return 0, fmt.Errorf("spec.ports %v, want one", ports)
			}
			return int(ports[0].Port - loadServicePort(0)), nil
		},
	},
}

// loadKindNames is the order the load goes through the kinds.
var loadKindNames = []string{"Welcome", "Memcached", "DeployObject"}

func memcachedPort(version int) int32 { return 11210 + int32(version) }

// loadServicePort is the port of a load DeployObject's Service at a version; at version 1 it is
// also e2e-echo's, which every version's targetPort keeps.
func loadServicePort(version int) int32 { return 8079 + int32(version) }

// loadObject is one custom resource of a crLoad, as the API server acknowledged it.
type loadObject struct {
	kind, name string
	// version is the spec version of the last write the API server acknowledged; 0 until the
	// create is acknowledged.
	version int
	// deleted is set once the delete is acknowledged.
	deleted bool
	// unknown is the write the load was stopped in the middle of, which the API server may or
	// may not have made: the version of a create or an update, or deleteUnknown.
	unknown int
	// visits counts the rounds that came to the object once it was created.
	visits int
}

// deleteUnknown marks a delete the load was stopped in the middle of.
const deleteUnknown = -1

// loadFailure is a request of the load that failed.
type loadFailure struct {
	at        time.Time
	request   string
	err       error
	admission bool
}

func (f loadFailure) String() string {
	return fmt.Sprintf("%s %s: %v", f.at.Format("15:04:05.000"), f.request, f.err)
}

// failureLines are the failures as the report prints them.
func failureLines(failures []loadFailure) []string {
	lines := make([]string, 0, len(failures))
	for _, f := range failures {
		lines = append(lines, f.String())
	}
	return lines
}

// loadOptions bound a crLoad.
type loadOptions struct {
	namespace string
	// perKind is how many objects of each kind the load creates.
	perKind int
	// interval paces the requests: one per tick.
	interval time.Duration
	// maxRequests bounds the requests the load makes, creates, updates and deletes together.
	maxRequests int
	// retryUnavailable sends again a request that failed because the API server itself could not
	// be reached or could not reach etcd (a control plane restart), for at most a minute, instead
	// of counting it as failed. A webhook's failure is never retried.
	retryUnavailable bool
}

// loadStats are the requests of a crLoad and how they ended.
type loadStats struct {
	creates, updates, deletes int
	// retried counts the requests sent again because the API server was unavailable.
	retried int
	// admissionFailures are the requests refused because a webhook could not be called or
	// refused them; otherFailures are the rest.
	admissionFailures, otherFailures []loadFailure
}

func (s loadStats) String() string {
	return fmt.Sprintf("creates=%d updates=%d deletes=%d retried(API unavailable)=%d failedAdmissions=%d otherFailures=%d",
		s.creates, s.updates, s.deletes, s.retried, len(s.admissionFailures), len(s.otherFailures))
}

// crLoad creates, updates and deletes custom resources of all three kinds in one namespace at a
// steady pace, as users and their pipelines would while the faults happen, and records how every
// request ended. It first creates perKind objects of each kind, interleaved, then goes round
// them: each update moves an object's spec to its next version; every sixth object is deleted
// after its first update, so that some owners go away under the faults too.
type crLoad struct {
	opts   loadOptions
	client client.Client

	mu      sync.Mutex
	objects []*loadObject
	stats   loadStats
	// createsDone counts the creates sent, acknowledged or not.
	createsDone int
	// requests counts the requests made so far, acknowledged or not.
	requests int

	stopOnce sync.Once
	cancel   context.CancelFunc
	done     chan struct{}
}

func startCRLoad(ctx context.Context, opts loadOptions) *crLoad {
	// A client of its own, so that the load is not held back by the suite's client rate limits.
	config := rest.CopyConfig(kube.Config)
	config.QPS, config.Burst, config.Timeout = 100, 200, 30*time.Second
	loadClient, err := client.New(config, client.Options{Scheme: scheme.New()})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	l := &crLoad{opts: opts, client: loadClient, done: make(chan struct{})}
	for i := range opts.perKind {
		for _, kind := range loadKindNames {
			l.objects = append(l.objects, &loadObject{kind: kind, name: fmt.Sprintf("%s-%s-%d", opts.namespace, loadKinds[kind].short, i)})
		}
	}
	ctx, l.cancel = context.WithCancel(context.WithoutCancel(ctx))
	go l.run(ctx)
	// A spec that fails half way must not leave its load running into the next.
	DeferCleanup(func() { l.stop() })
	return l
}

func (l *crLoad) run(ctx context.Context) {
	defer GinkgoRecover()
	defer close(l.done)
	ticker := time.NewTicker(l.opts.interval)
	defer ticker.Stop()
	next := 0
	for range l.opts.maxRequests {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		l.mu.Lock()
		l.requests++
		l.mu.Unlock()
		if next < len(l.objects) {
			l.create(ctx, l.objects[next])
			next++
			continue
		}
		// Round the objects that are still there, passing over those whose turn it is not.
		var o *loadObject
		for range len(l.objects) * memcachedUpdateEvery {
			candidate := l.objects[next%len(l.objects)]
			next++
			if l.due(candidate) {
				o = candidate
				break
			}
		}
		if o == nil {
			return
		}
		l.mu.Lock()
		version, index := o.version, l.index(o)
		l.mu.Unlock()
		if version == 2 && index%6 == 5 {
			l.delete(ctx, o)
		} else {
			l.update(ctx, o, version+1)
		}
	}
}

// due reports whether o is live and its kind's turn to be written has come (updateEvery), and
// counts the visit.
func (l *crLoad) due(o *loadObject) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !o.live() {
		return false
	}
	o.visits++
	every := loadKinds[o.kind].updateEvery
	return every <= 1 || o.visits%every == 0
}

// live reports whether o was created and not deleted; the caller holds the load's lock.
func (o *loadObject) live() bool { return o.version > 0 && !o.deleted }

func (l *crLoad) index(o *loadObject) int {
	for i := range l.objects {
		if l.objects[i] == o {
			return i
		}
	}
	return -1
}

func (l *crLoad) create(ctx context.Context, o *loadObject) {
	kind := loadKinds[o.kind]
	attempt := 0
	err := l.send(ctx, "create "+o.kind+" "+o.name, func() error {
		attempt++
		err := l.client.Create(ctx, kind.newObject(l.opts.namespace, o.name, 1))
		if apierrors.IsAlreadyExists(err) && attempt > 1 {
			// An earlier attempt was stored before the API server went away.
			return nil
		}
		return err
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	l.createsDone++
	switch {
	case err == nil:
		o.version = 1
		l.stats.creates++
	case ctx.Err() != nil:
		o.unknown = 1
	}
}

func (l *crLoad) update(ctx context.Context, o *loadObject, version int) {
	kind := loadKinds[o.kind]
	obj := kind.newObject(l.opts.namespace, o.name, 0)
	err := l.send(ctx, fmt.Sprintf("update %s %s to version %d", o.kind, o.name, version), func() error {
		return l.client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(kind.patch(version))))
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err == nil:
		o.version = version
		l.stats.updates++
	case ctx.Err() != nil:
		o.unknown = version
	}
}

func (l *crLoad) delete(ctx context.Context, o *loadObject) {
	obj := loadKinds[o.kind].newObject(l.opts.namespace, o.name, 0)
	attempt := 0
	err := l.send(ctx, "delete "+o.kind+" "+o.name, func() error {
		attempt++
		err := l.client.Delete(ctx, obj)
		if apierrors.IsNotFound(err) && attempt > 1 {
			return nil
		}
		return err
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err == nil:
		o.deleted = true
		l.stats.deletes++
	case ctx.Err() != nil:
		o.unknown = deleteUnknown
	}
}

// send makes a request, sending it again while the API server is unavailable if the load
// retries, and records how it failed.
func (l *crLoad) send(ctx context.Context, request string, do func() error) error {
	deadline := time.Now().Add(time.Minute)
	retry := time.NewTicker(250 * time.Millisecond)
	defer retry.Stop()
	for {
		err := do()
		if err == nil || ctx.Err() != nil {
			return err
		}
		admission := isAdmissionFailure(err)
		if !admission && l.opts.retryUnavailable && isAPIUnavailable(err) && time.Now().Before(deadline) {
			l.mu.Lock()
			l.stats.retried++
			l.mu.Unlock()
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-retry.C:
			}
			continue
		}
		failure := loadFailure{at: time.Now(), request: request, err: err, admission: admission}
		_, _ = fmt.Fprintf(GinkgoWriter, "load request failed: %s\n", failure)
		l.mu.Lock()
		if admission {
			l.stats.admissionFailures = append(l.stats.admissionFailures, failure)
		} else {
			l.stats.otherFailures = append(l.stats.otherFailures, failure)
		}
		l.mu.Unlock()
		return err
	}
}

// isAdmissionFailure reports whether kube-apiserver refused a request because an admission
// webhook could not be called, timed out or refused it.
func isAdmissionFailure(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "failed calling webhook") || strings.Contains(msg, "admission webhook")
}

// isAPIUnavailable reports whether a request failed because kube-apiserver itself was down,
// starting or without etcd: nothing a webhook or the operator did.
func isAPIUnavailable(err error) bool {
	if apierrors.IsServiceUnavailable(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) {
		return true
	}
	if utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) ||
		utilnet.IsHTTP2ConnectionLost(err) || utilnet.IsTimeout(err) {
		return true
	}
	msg := err.Error()
	for _, s := range []string{
		"etcdserver", "context deadline exceeded", "the server could not find the requested resource",
		"no matches for kind", "connection refused", "i/o timeout", "TLS handshake timeout",
	} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// stop ends the load and waits for its last request.
func (l *crLoad) stop() loadStats {
	l.stopOnce.Do(func() {
		l.cancel()
		<-l.done
	})
	return l.snapshot()
}

func (l *crLoad) snapshot() loadStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.stats
	s.admissionFailures = append([]loadFailure(nil), s.admissionFailures...)
	s.otherFailures = append([]loadFailure(nil), s.otherFailures...)
	return s
}

// made counts the requests the load has made so far, acknowledged or not.
func (l *crLoad) made() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.requests
}

// acknowledged counts the requests the API server has acknowledged so far.
func (l *crLoad) acknowledged() int {
	s := l.snapshot()
	return s.creates + s.updates + s.deletes
}

// createsSent reports whether the load has sent the create of every object, whether or not
// the API server acknowledged it.
func (l *crLoad) createsSent() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.createsDone == len(l.objects)
}

// liveObjects counts the objects created and not deleted.
func (l *crLoad) liveObjects() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, o := range l.objects {
		if o.live() {
			n++
		}
	}
	return n
}

// expectConverged checks that the cluster holds exactly what the load's acknowledged writes
// made: every object created and not deleted is there, with the spec of its last acknowledged
// update, its status describing that generation with the kind's ready state; each one controls
// exactly one Deployment and one Service; and no Deployment or Service in the namespace is
// controlled by an object that no longer exists.
func (l *crLoad) expectConverged(ctx context.Context, g Gomega) {
	l.mu.Lock()
	objects := make([]loadObject, 0, len(l.objects))
	for _, o := range l.objects {
		objects = append(objects, *o)
	}
	l.mu.Unlock()

	stored := map[string]map[string]client.Object{}
	for _, kind := range loadKindNames {
		stored[kind] = listKind(ctx, g, kind, l.opts.namespace)
	}
	live := map[types.UID]string{}
	expected := map[string]int{}
	for _, o := range objects {
		obj, found := stored[o.kind][o.name]
		// A write the load was stopped in the middle of may or may not have been made.
		if o.unknown == deleteUnknown && !found {
			continue
		}
		if o.version == 0 && o.unknown == 1 && found {
			o.version = 1
		}
		if o.version == 0 || o.deleted {
			g.Expect(found).To(BeFalse(), "%s %s exists, but its create failed or its delete was acknowledged", o.kind, o.name)
			continue
		}
		g.Expect(found).To(BeTrue(), "%s %s was created, and is gone", o.kind, o.name)
		expected[o.kind]++
		version, err := loadKinds[o.kind].version(obj)
		g.Expect(err).NotTo(HaveOccurred(), "%s %s", o.kind, o.name)
		if o.unknown > 1 && version == o.unknown {
			version = o.version // the update in flight when the load stopped was made
		}
		g.Expect(version).To(Equal(o.version), "%s %s: the spec of the last acknowledged update", o.kind, o.name)
		g.Expect(kinds[o.kind].available(obj)).To(Succeed(), "%s %s", o.kind, o.name)
		live[obj.GetUID()] = o.kind + " " + o.name
	}
	for _, kind := range loadKindNames {
		g.Expect(stored[kind]).To(HaveLen(expected[kind]), "%s objects in %s", kind, l.opts.namespace)
	}

	deployments := &appsv1.DeploymentList{}
	g.Expect(k8s.List(ctx, deployments, client.InNamespace(l.opts.namespace))).To(Succeed())
	services := &corev1.ServiceList{}
	g.Expect(k8s.List(ctx, services, client.InNamespace(l.opts.namespace))).To(Succeed())
	// owned counts, for each live custom resource, the Deployments and Services it controls.
	owned := map[types.UID][2]int{}
	children := make([]client.Object, 0, len(deployments.Items)+len(services.Items))
	for i := range deployments.Items {
		children = append(children, &deployments.Items[i])
	}
	for i := range services.Items {
		children = append(children, &services.Items[i])
	}
	for _, child := range children {
		kind, slot := "Deployment", 0
		if _, isService := child.(*corev1.Service); isService {
			kind, slot = "Service", 1
		}
		ref := metav1.GetControllerOf(child)
		g.Expect(ref).NotTo(BeNil(), "%s %s has no controller", kind, child.GetName())
		g.Expect(live).To(HaveKey(ref.UID), "%s %s is controlled by %s %s (%s), which no longer exists",
			kind, child.GetName(), ref.Kind, ref.Name, ref.UID)
		count := owned[ref.UID]
		count[slot]++
		owned[ref.UID] = count
	}
	for uid, name := range live {
		g.Expect(owned[uid]).To(Equal([2]int{1, 1}), "%s controls [Deployments, Services]", name)
	}
}

// waitConverged waits for expectConverged and returns how long that took.
func (l *crLoad) waitConverged(ctx context.Context, timeout time.Duration) time.Duration {
	start := time.Now()
	EventuallyWithOffset(1, func(g Gomega) { l.expectConverged(ctx, g) }).
		WithContext(ctx).WithTimeout(timeout).WithPolling(time.Second).Should(Succeed())
	return time.Since(start)
}

// listKind lists the objects of one of the operator's kinds in namespace, by name.
func listKind(ctx context.Context, g Gomega, kind, namespace string) map[string]client.Object {
	objects := map[string]client.Object{}
	switch kind {
	case "Welcome":
		list := &authv1.WelcomeList{}
		g.ExpectWithOffset(1, k8s.List(ctx, list, client.InNamespace(namespace))).To(Succeed())
		for i := range list.Items {
			objects[list.Items[i].Name] = &list.Items[i]
		}
	case "Memcached":
		list := &cachev1.MemcachedList{}
		g.ExpectWithOffset(1, k8s.List(ctx, list, client.InNamespace(namespace))).To(Succeed())
		for i := range list.Items {
			objects[list.Items[i].Name] = &list.Items[i]
		}
	case "DeployObject":
		list := &appv1.DeployObjectList{}
		g.ExpectWithOffset(1, k8s.List(ctx, list, client.InNamespace(namespace))).To(Succeed())
		for i := range list.Items {
			objects[list.Items[i].Name] = &list.Items[i]
		}
	default:
		Fail("unknown kind " + kind)
	}
	return objects
}
