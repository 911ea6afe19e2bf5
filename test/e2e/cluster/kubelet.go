//go:build linux

package cluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Container says how to run a pod's container as a local process.
type Container struct {
	// Name is the container's name in the pod.
	Name string
	// Binary stands for the image's entrypoint, the first element of the container's command.
	Binary string
	// Args, when set, rewrites the container's arguments for the pod it runs in.
	Args func(pod *corev1.Pod, args []string) []string
}

// PodProcess is one container of a pod run for real as a local process, the way kubelet would run
// it: kwok gives the pod its IP from PodCIDR and its Running phase (see Options.KubeletNamespaces),
// while this mounts the pod's volumes, runs the program, reports the container's readiness from
// its readiness probe, restarts it when it exits on its own, stops it when the pod is deleted and
// then removes the pod. The process listens on the pod's IP, so the pod's Service and
// EndpointSlice lead to it.
//
// Each run of the container is a sandbox (see RunSandboxIfAsked) with a mount and a UTS namespace
// of its own: its volumes at the container's own paths, its pod name as host name. The network
// namespace is the test's, shared by every pod: Container.Args is where a test gives each
// replica its own listen addresses.
type PodProcess struct {
	// Pod is the pod as it was when the container first started.
	Pod *corev1.Pod
	// Name is the pod's name; it names the container's log and the harness's log of the pod.
	Name string
	// LogPath is the container's output, across restarts.
	LogPath string
	// Started is when the container first started.
	Started time.Time

	cluster   *Cluster
	container *corev1.Container
	volumes   []mountedVolume
	podDir    string
	written   map[string]map[string][]byte
	// kubeletLog records what the harness did for the pod, and what failed.
	kubeletLog *os.File

	mu sync.Mutex
	// run is the container's current (or last) run.
	run *Process
	// probeReady is the readiness probe's verdict on run.
	probeReady bool
	// reportedReady is the readiness last written to the pod's status.
	reportedReady bool
	// restarts counts the runs started after the container exited on its own.
	restarts int
	// exits are how the container exited on its own, and exitedAt when.
	exits    []error
	exitedAt []time.Time
	// crashed is set by Crash: the container is not restarted.
	crashed bool
	// restartAt is when the exited container is started again.
	restartAt time.Time
	// exitSeen is the run whose exit has been handled.
	exitSeen *Process

	stopOnce      sync.Once
	stopErr       error
	stoppedAt     time.Time
	stopped       chan struct{}
	stopSupervise context.CancelFunc
	superviseDone chan struct{}
}

// mountedVolume is a volume mount, the pod's own directory holding its files, and the function
// that reads them from the API.
type mountedVolume struct {
	// path is where the container sees the volume.
	path string
	// source is the pod's tmpfs for the volume, bind-mounted at path in the container's sandbox.
	source   string
	readOnly bool
	mode     os.FileMode
	files    func(context.Context) (map[string][]byte, error)
}

const (
	// mountPoll is how often a volume that cannot be mounted yet is tried again.
	mountPoll = 250 * time.Millisecond
	// superviseTick is how often a pod's state, its container and its readiness are checked.
	superviseTick = 100 * time.Millisecond
	// volumeRefresh is how often mounted Secret and projected volumes are brought up to date.
	// kubelet takes up to a minute or more; a few seconds keep the test short while leaving the
	// window a real cluster has, in which a Secret, a caBundle injected from it and the files a
	// running process reads disagree.
	volumeRefresh = 5 * time.Second
	// restartBackOff and maxRestartBackOff are kubelet's CrashLoopBackOff: the first restart is
	// immediate, the next ones wait 10 s, 20 s, ... up to five minutes.
	restartBackOff    = 10 * time.Second
	maxRestartBackOff = 5 * time.Minute
	// kubeletPodsDir holds each pod's volumes, one tmpfs per volume as kubelet gives them.
	kubeletPodsDir = "/run/e2e-kubelet/pods"
)

// RunPod runs a container of pod as a local process. Like kubelet, it waits until every volume
// can be mounted (a Secret that cert-manager has yet to write keeps the container from starting),
// then starts the program with the container's arguments and environment. The volumes must be
// Secrets, or the projected service account token volume.
//
// Until the pod is deleted, and beyond ctx, RunPod keeps the mounted Secrets current, reports the
// container's readiness in the pod's status and restarts the container when it exits; when the
// pod is deleted it stops the process within the pod's grace period and removes the pod, as
// kubelet does. Stop ends that.
func (c *Cluster) RunPod(ctx context.Context, pod *corev1.Pod, container Container) (*PodProcess, error) {
	p := &PodProcess{
		Pod: pod, Name: pod.Name, LogPath: filepath.Join(c.LogDir, pod.Name+".log"), cluster: c,
		podDir:  filepath.Join(kubeletPodsDir, string(pod.UID)),
		written: map[string]map[string][]byte{}, stopped: make(chan struct{}), superviseDone: make(chan struct{}),
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == container.Name {
			p.container = &pod.Spec.Containers[i]
		}
	}
	if p.container == nil {
		return nil, fmt.Errorf("pod %s has no container %s", pod.Name, container.Name)
	}
	if len(p.container.Command) == 0 {
		return nil, fmt.Errorf("container %s sets no command: the image's entrypoint is unknown here", container.Name)
	}
	if probe := p.container.ReadinessProbe; probe != nil && probe.HTTPGet == nil && probe.TCPSocket == nil {
		return nil, fmt.Errorf("container %s: only HTTP and TCP readiness probes are supported", container.Name)
	}
	env, err := p.environment()
	if err != nil {
		return nil, err
	}
	if err := p.resolveVolumes(); err != nil {
		return nil, err
	}
	if p.kubeletLog, err = os.OpenFile(filepath.Join(c.LogDir, pod.Name+".kubelet.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
		return nil, err
	}
	// Like kubelet, give each Secret and projected volume a tmpfs of its own.
	for _, v := range p.volumes {
		if err := os.MkdirAll(v.source, 0o755); err != nil {
			return nil, errors.Join(err, p.unmountVolumes())
		}
		if err := mountTmpfs(v.source, 0o755); err != nil {
			return nil, errors.Join(err, p.unmountVolumes())
		}
	}

	// Mount every volume once it can be, as kubelet does before it starts a container.
	var last error
	if err := wait.PollUntilContextCancel(ctx, mountPoll, true, func(ctx context.Context) (bool, error) {
		last = p.syncVolumes(ctx)
		return last == nil, nil
	}); err != nil {
		return nil, errors.Join(fmt.Errorf("mounting the volumes of pod %s: %w (last: %w)", pod.Name, err, last), p.unmountVolumes())
	}

	args := append(append([]string{}, p.container.Command[1:]...), p.container.Args...)
	if container.Args != nil {
		args = container.Args(pod, args)
	}
	var mounts []string
	for _, v := range p.volumes {
		mode := "rw"
		if v.readOnly {
			mode = "ro"
		}
		mounts = append(mounts, v.source+":"+v.path+":"+mode)
	}
	run, err := start(&Process{
		Name: pod.Name, LogPath: p.LogPath,
		binary: "/proc/self/exe", args: sandboxArgs(pod.Name, mounts, container.Binary, args), env: env, attr: sandboxAttr,
	})
	if err != nil {
		return nil, errors.Join(err, p.unmountVolumes())
	}
	p.logf("started %s %q", container.Binary, args)
	p.run, p.Started = run, run.Started
	go p.probe(run)
	superviseCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p.stopSupervise = cancel
	go p.supervise(superviseCtx)
	return p, nil
}

// Stopped is closed once the process has been stopped because its pod was deleted, or by Stop.
func (p *PodProcess) Stopped() <-chan struct{} { return p.stopped }

// StopErr is how the process ended when it was stopped; only meaningful once Stopped is closed.
func (p *PodProcess) StopErr() error { return p.stopErr }

// StoppedAt is when the container had stopped, for its pod's deletion or by Stop; only
// meaningful once Stopped is closed.
func (p *PodProcess) StoppedAt() time.Time { return p.stoppedAt }

// Ready is the container's readiness as last written to the pod's status.
func (p *PodProcess) Ready() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reportedReady
}

// Restarts counts the times the container was started again after it exited on its own.
func (p *PodProcess) Restarts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.restarts
}

// Exits are how the container exited on its own, without being stopped or crashed by the test.
func (p *PodProcess) Exits() []error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]error(nil), p.exits...)
}

// ExitedAt are when the container exited on its own, one for each of Exits.
func (p *PodProcess) ExitedAt() []time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]time.Time(nil), p.exitedAt...)
}

// Crashed returns an error when the container has exited on its own, whether or not it has been
// restarted since.
func (p *PodProcess) Crashed() error {
	return errors.Join(p.Exits()...)
}

// Running reports whether the container runs now.
func (p *PodProcess) Running() bool {
	p.mu.Lock()
	run := p.run
	p.mu.Unlock()
	return run.Running() == nil
}

// Crash kills the container with SIGKILL and waits until it is gone. The pod stays, reported not
// ready, and the container is not started again: it is gone as on a node that stopped running
// it, until the pod is deleted.
func (p *PodProcess) Crash() {
	p.mu.Lock()
	p.crashed = true
	run := p.run
	p.mu.Unlock()
	p.logf("crashing the container with SIGKILL")
	run.Kill()
}

// environment is the container's environment as kubelet gives it, and nothing of the test's own:
// a PATH, the container's env values (with the downward API's pod fields and resource values),
// the API server's address and the pod's host name. The API server is given by its own address,
// not the kubernetes Service's cluster IP, as nothing here routes cluster IPs.
func (p *PodProcess) environment() ([]string, error) {
	env := []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"KUBERNETES_SERVICE_HOST=" + APIServerIP,
		"KUBERNETES_SERVICE_PORT=" + strconv.Itoa(APIServerPort),
		"HOSTNAME=" + p.Pod.Name,
	}
	if len(p.container.EnvFrom) > 0 {
		return nil, errors.New("envFrom is not supported")
	}
	for _, e := range p.container.Env {
		value := e.Value
		if src := e.ValueFrom; src != nil {
			var err error
			switch {
			case src.FieldRef != nil:
				value, err = p.podField(src.FieldRef.FieldPath)
			case src.ResourceFieldRef != nil:
				value, err = p.resourceValue(src.ResourceFieldRef)
			default:
				err = errors.New("only fieldRef and resourceFieldRef are supported")
			}
			if err != nil {
				return nil, fmt.Errorf("env %s: %w", e.Name, err)
			}
		}
		env = append(env, e.Name+"="+value)
	}
	return env, nil
}

// podField is a pod field as the downward API gives it.
func (p *PodProcess) podField(path string) (string, error) {
	switch path {
	case "metadata.name":
		return p.Pod.Name, nil
	case "metadata.namespace":
		return p.Pod.Namespace, nil
	case "metadata.uid":
		return string(p.Pod.UID), nil
	case "spec.nodeName":
		return p.Pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return p.Pod.Spec.ServiceAccountName, nil
	case "status.podIP":
		return p.Pod.Status.PodIP, nil
	case "status.hostIP":
		return p.Pod.Status.HostIP, nil
	}
	return "", fmt.Errorf("field %s is not supported", path)
}

// resourceValue is a container's resource limit or request as the downward API gives it: in
// units of the divisor, rounded up; a limit that is not set is the node's allocatable amount.
func (p *PodProcess) resourceValue(ref *corev1.ResourceFieldSelector) (string, error) {
	if ref.ContainerName != "" && ref.ContainerName != p.container.Name {
		return "", fmt.Errorf("resources of container %s are not supported", ref.ContainerName)
	}
	kind, name, _ := strings.Cut(ref.Resource, ".")
	var list corev1.ResourceList
	switch kind {
	case "limits":
		list = p.container.Resources.Limits
	case "requests":
		list = p.container.Resources.Requests
	default:
		return "", fmt.Errorf("resource %s is not supported", ref.Resource)
	}
	quantity, ok := list[corev1.ResourceName(name)]
	if !ok {
		if kind == "requests" {
			return "0", nil
		}
		quantity = nodeCapacity[corev1.ResourceName(name)]
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	switch corev1.ResourceName(name) {
	case corev1.ResourceCPU:
		return strconv.FormatInt(int64(math.Ceil(float64(quantity.MilliValue())/float64(divisor.MilliValue()))), 10), nil
	case corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
		return strconv.FormatInt(int64(math.Ceil(float64(quantity.Value())/float64(divisor.Value()))), 10), nil
	}
	return "", fmt.Errorf("resource %s is not supported", ref.Resource)
}

// resolveVolumes maps each of the container's volume mounts to the API objects behind it.
func (p *PodProcess) resolveVolumes() error {
	volumes := map[string]*corev1.Volume{}
	for i := range p.Pod.Spec.Volumes {
		volumes[p.Pod.Spec.Volumes[i].Name] = &p.Pod.Spec.Volumes[i]
	}
	for _, m := range p.container.VolumeMounts {
		v := volumes[m.Name]
		path := filepath.Clean(m.MountPath)
		mounted := mountedVolume{path: path, source: filepath.Join(p.podDir, "volumes", m.Name), readOnly: m.ReadOnly}
		switch {
		case v == nil:
			return fmt.Errorf("volume mount %s names no volume", m.Name)
		case m.SubPath != "":
			return fmt.Errorf("volume mount %s: subPath is not supported", m.Name)
		case !strings.HasPrefix(path, "/tmp/") && !strings.HasPrefix(path, "/var/run/"):
			return fmt.Errorf("volume mount %s at %s: only paths under /tmp and /var/run are the test's own", m.Name, m.MountPath)
		case v.Secret != nil:
			mounted.mode, mounted.files = fileMode(v.Secret.DefaultMode), p.secretFiles(v.Secret)
		case v.Projected != nil:
			files, err := p.projectedFiles(v.Projected)
			if err != nil {
				return fmt.Errorf("volume %s: %w", m.Name, err)
			}
			mounted.mode, mounted.files = fileMode(v.Projected.DefaultMode), files
		default:
			return fmt.Errorf("volume %s: only Secret and projected service account volumes are supported", m.Name)
		}
		p.volumes = append(p.volumes, mounted)
	}
	return nil
}

func fileMode(mode *int32) os.FileMode {
	if mode == nil {
		return 0o644
	}
	return os.FileMode(*mode)
}

func (p *PodProcess) secretFiles(src *corev1.SecretVolumeSource) func(context.Context) (map[string][]byte, error) {
	return func(ctx context.Context) (map[string][]byte, error) {
		secret := &corev1.Secret{}
		err := p.cluster.Client.Get(ctx, client.ObjectKey{Namespace: p.Pod.Namespace, Name: src.SecretName}, secret)
		if apierrors.IsNotFound(err) && ptr.Deref(src.Optional, false) {
			// An optional Secret that does not exist is an empty volume.
			return map[string][]byte{}, nil
		}
		if err != nil {
			return nil, fmt.Errorf("secret %s: %w", src.SecretName, err)
		}
		if len(src.Items) == 0 {
			return secret.Data, nil
		}
		files := map[string][]byte{}
		for _, item := range src.Items {
			data, ok := secret.Data[item.Key]
			if !ok {
				return nil, fmt.Errorf("secret %s has no key %s", src.SecretName, item.Key)
			}
			files[item.Path] = data
		}
		return files, nil
	}
}

// projectedFiles supports the volume the ServiceAccount admission plugin adds to every pod:
// a bound token, the cluster's CA from kube-root-ca.crt and the pod's namespace.
func (p *PodProcess) projectedFiles(src *corev1.ProjectedVolumeSource) (func(context.Context) (map[string][]byte, error), error) {
	var parts []func(context.Context, map[string][]byte) error
	for _, s := range src.Sources {
		switch {
		case s.ServiceAccountToken != nil:
			parts = append(parts, p.tokenFile(s.ServiceAccountToken))
		case s.ConfigMap != nil:
			parts = append(parts, p.configMapFiles(s.ConfigMap))
		case s.DownwardAPI != nil:
			for _, item := range s.DownwardAPI.Items {
				if item.FieldRef == nil || item.FieldRef.FieldPath != "metadata.namespace" {
					return nil, fmt.Errorf("downward API item %s: only metadata.namespace is supported", item.Path)
				}
				path := item.Path
				parts = append(parts, func(_ context.Context, files map[string][]byte) error {
					files[path] = []byte(p.Pod.Namespace)
					return nil
				})
			}
		default:
			return nil, errors.New("only service account token, ConfigMap and downward API sources are supported")
		}
	}
	return func(ctx context.Context) (map[string][]byte, error) {
		files := map[string][]byte{}
		for _, part := range parts {
			if err := part(ctx, files); err != nil {
				return nil, err
			}
		}
		return files, nil
	}, nil
}

// tokenFile requests a token for the pod's ServiceAccount, bound to the pod as kubelet binds
// it, once: it outlives the test, and a new one at every refresh would only churn the files.
func (p *PodProcess) tokenFile(src *corev1.ServiceAccountTokenProjection) func(context.Context, map[string][]byte) error {
	var token []byte
	return func(ctx context.Context, files map[string][]byte) error {
		if token == nil {
			request := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
				ExpirationSeconds: src.ExpirationSeconds,
				BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: p.Pod.Name, UID: p.Pod.UID},
			}}
			if src.Audience != "" {
				request.Spec.Audiences = []string{src.Audience}
			}
			sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: p.Pod.Namespace, Name: p.Pod.Spec.ServiceAccountName}}
			if err := p.cluster.Client.SubResource("token").Create(ctx, sa, request); err != nil {
				return fmt.Errorf("requesting a token for ServiceAccount %s: %w", sa.Name, err)
			}
			token = []byte(request.Status.Token)
		}
		files[src.Path] = token
		return nil
	}
}

func (p *PodProcess) configMapFiles(src *corev1.ConfigMapProjection) func(context.Context, map[string][]byte) error {
	return func(ctx context.Context, files map[string][]byte) error {
		cm := &corev1.ConfigMap{}
		if err := p.cluster.Client.Get(ctx, client.ObjectKey{Namespace: p.Pod.Namespace, Name: src.Name}, cm); err != nil {
			return fmt.Errorf("configmap %s: %w", src.Name, err)
		}
		for _, item := range src.Items {
			data, ok := cm.Data[item.Key]
			if !ok {
				return fmt.Errorf("configmap %s has no key %s", src.Name, item.Key)
			}
			files[item.Path] = []byte(data)
		}
		return nil
	}
}

// syncVolumes writes every volume whose content changed since it was last written.
func (p *PodProcess) syncVolumes(ctx context.Context) error {
	for _, v := range p.volumes {
		files, err := v.files(ctx)
		if err != nil {
			return err
		}
		if maps.EqualFunc(files, p.written[v.path], bytes.Equal) {
			continue
		}
		if err := writeVolume(v.source, files, v.mode); err != nil {
			return fmt.Errorf("writing %s: %w", v.path, err)
		}
		p.written[v.path] = files
		p.logf("wrote volume %s", v.path)
	}
	return nil
}

// unmountVolumes removes the pod's tmpfs volumes, as kubelet does once the pod is gone.
func (p *PodProcess) unmountVolumes() error {
	var errs []error
	for _, v := range p.volumes {
		if err := syscall.Unmount(v.source, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", v.source, err))
		}
	}
	if len(errs) == 0 {
		errs = append(errs, os.RemoveAll(p.podDir))
	}
	return errors.Join(errs...)
}

// supervise keeps the volumes current, the pod's readiness reported and the container running,
// until the pod is deleted; then it stops the container and removes the pod.
func (p *PodProcess) supervise(ctx context.Context) {
	defer close(p.superviseDone)
	ticker := time.NewTicker(superviseTick)
	defer ticker.Stop()
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	deleted := make(chan struct{}, 1)
	go p.watchDeletion(watchCtx, deleted)
	lastSync := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-deleted:
		}
		pod := &corev1.Pod{}
		err := p.cluster.Client.Get(ctx, client.ObjectKeyFromObject(p.Pod), pod)
		switch {
		case apierrors.IsNotFound(err) || (err == nil && pod.UID != p.Pod.UID):
			p.logf("the pod is gone: stopping the container")
			p.terminate(p.gracePeriod(nil))
			return
		case err == nil && pod.DeletionTimestamp != nil:
			p.logf("the pod is being deleted: stopping the container")
			p.terminate(p.gracePeriod(pod))
			p.removePod(ctx)
			return
		}

		ready := p.tend()
		if err == nil {
			// A failed update is tried again at the next tick, as kubelet's status manager retries.
			if err := p.reportStatus(ctx, pod, ready); err != nil && !apierrors.IsConflict(err) {
				p.logf("updating the pod's status: %v", err)
			}
		}
		if time.Since(lastSync) >= volumeRefresh {
			// A failed refresh is retried at the next one, as kubelet retries.
			if err := p.syncVolumes(ctx); err != nil {
				p.logf("refreshing the volumes: %v", err)
			}
			lastSync = time.Now()
		}
	}
}

// watchDeletion watches the pod and signals deleted as soon as it is being deleted or gone: like
// kubelet, which watches its pods, the harness must send SIGTERM within milliseconds of the
// deletion, not at its next poll, or it would hide how long the Service goes on sending requests
// to a terminating pod. A broken watch (a restarting API server) is opened again.
func (p *PodProcess) watchDeletion(ctx context.Context, deleted chan<- struct{}) {
	retry := time.NewTicker(mountPoll)
	defer retry.Stop()
	for ctx.Err() == nil {
		w, err := p.cluster.watchClient.Watch(ctx, &corev1.PodList{}, client.InNamespace(p.Pod.Namespace),
			client.MatchingFields{"metadata.name": p.Pod.Name})
		if err == nil {
			for event := range w.ResultChan() {
				pod, isPod := event.Object.(*corev1.Pod)
				if event.Type == watch.Deleted || (isPod && (pod.DeletionTimestamp != nil || pod.UID != p.Pod.UID)) {
					select {
					case deleted <- struct{}{}:
					default:
					}
				}
			}
			w.Stop()
		}
		select {
		case <-ctx.Done():
		case <-retry.C:
		}
	}
}

// tend restarts a container that exited on its own once its back-off has passed, and returns
// whether the container is ready.
func (p *PodProcess) tend() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	run := p.run
	if run.Running() == nil {
		return p.probeReady
	}
	if p.crashed {
		return false
	}
	if p.exitSeen != run {
		p.exitSeen = run
		exit := fmt.Errorf("container %s of pod %s exited on its own at %s: %w", p.container.Name, p.Name, time.Now().Format(time.RFC3339Nano), run.Running())
		p.exits = append(p.exits, exit)
		p.exitedAt = append(p.exitedAt, run.Exited())
		backOff := time.Duration(0)
		if p.restarts > 0 {
			backOff = min(restartBackOff<<(p.restarts-1), maxRestartBackOff)
		}
		p.restartAt = time.Now().Add(backOff)
		p.logf("%v; restarting it in %s", exit, backOff)
	}
	if time.Now().Before(p.restartAt) {
		return false
	}
	next, err := run.again()
	if err != nil {
		p.logf("restarting the container: %v", err)
		return false
	}
	p.run, p.probeReady = next, false
	p.restarts++
	p.logf("restarted the container (restart %d)", p.restarts)
	go p.probe(next)
	return false
}

// reportStatus writes the container's readiness into the pod's status when it differs, as
// kubelet's status manager does; the EndpointSlice controller reads the Ready condition.
func (p *PodProcess) reportStatus(ctx context.Context, pod *corev1.Pod, ready bool) error {
	p.mu.Lock()
	restarts, running := p.restarts, p.run.Running() == nil
	p.mu.Unlock()

	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	changed := false
	for _, t := range []corev1.PodConditionType{corev1.PodReady, corev1.ContainersReady} {
		i := podCondition(pod, t)
		if i < 0 {
			pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: t})
			i = len(pod.Status.Conditions) - 1
		}
		if c := &pod.Status.Conditions[i]; c.Status != status {
			c.Status, c.LastTransitionTime, c.Reason = status, metav1.Now(), ""
			if !ready {
				c.Reason = "ContainersNotReady"
			}
			changed = true
		}
	}
	for i := range pod.Status.ContainerStatuses {
		s := &pod.Status.ContainerStatuses[i]
		if s.Name != p.container.Name {
			continue
		}
		if s.Ready != ready || s.RestartCount != int32(restarts) || (s.State.Running != nil) != running {
			s.Ready, s.RestartCount, s.Started = ready, int32(restarts), &running
			if running {
				s.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(p.currentStart())}}
			} else {
				s.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
			}
			changed = true
		}
	}
	if !changed {
		p.mu.Lock()
		p.reportedReady = ready
		p.mu.Unlock()
		return nil
	}
	if err := p.cluster.Client.Status().Update(ctx, pod); err != nil {
		return err
	}
	p.mu.Lock()
	p.reportedReady = ready
	p.mu.Unlock()
	p.logf("reported ready=%t restarts=%d", ready, restarts)
	return nil
}

func (p *PodProcess) currentStart() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.run.Started
}

func podCondition(pod *corev1.Pod, t corev1.PodConditionType) int {
	for i, c := range pod.Status.Conditions {
		if c.Type == t {
			return i
		}
	}
	return -1
}

// probe runs the container's readiness probe against run, as kubelet's prober does: first after
// initialDelaySeconds, then every periodSeconds, ready after successThreshold successes in a row
// and not ready after failureThreshold failures. A container without a readiness probe is ready
// once it runs.
func (p *PodProcess) probe(run *Process) {
	spec := p.container.ReadinessProbe
	if spec == nil {
		p.setProbeReady(run, true)
		return
	}
	period := time.Duration(max(spec.PeriodSeconds, 1)) * time.Second
	if spec.PeriodSeconds == 0 {
		period = 10 * time.Second
	}
	timeout := time.Duration(max(spec.TimeoutSeconds, 1)) * time.Second
	successThreshold, failureThreshold := max(spec.SuccessThreshold, 1), spec.FailureThreshold
	if failureThreshold == 0 {
		failureThreshold = 3
	}
	timer := time.NewTimer(time.Duration(spec.InitialDelaySeconds) * time.Second)
	defer timer.Stop()
	var successes, failures int32
	for {
		select {
		case <-run.Done():
			return
		case <-timer.C:
		}
		if err := p.probeOnce(spec, timeout); err != nil {
			successes, failures = 0, failures+1
			if failures >= failureThreshold {
				p.setProbeReady(run, false)
			}
		} else {
			successes, failures = successes+1, 0
			if successes >= successThreshold {
				p.setProbeReady(run, true)
			}
		}
		timer.Reset(period)
	}
}

func (p *PodProcess) setProbeReady(run *Process, ready bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.run == run {
		p.probeReady = ready
	}
}

// probeOnce probes the container once, at the pod's IP unless the probe names a host.
func (p *PodProcess) probeOnce(spec *corev1.Probe, timeout time.Duration) error {
	if spec.TCPSocket != nil {
		port, err := p.containerPort(spec.TCPSocket.Port.String(), spec.TCPSocket.Port.IntValue())
		if err != nil {
			return err
		}
		conn, err := net.DialTimeout("tcp", net.JoinHostPort(cmpOr(spec.TCPSocket.Host, p.Pod.Status.PodIP), strconv.Itoa(port)), timeout)
		if err != nil {
			return err
		}
		return conn.Close()
	}
	get := spec.HTTPGet
	port, err := p.containerPort(get.Port.String(), get.Port.IntValue())
	if err != nil {
		return err
	}
	scheme := strings.ToLower(string(get.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	url := scheme + "://" + net.JoinHostPort(cmpOr(get.Host, p.Pod.Status.PodIP), strconv.Itoa(port)) + get.Path
	httpClient := &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // kubelet's HTTPS probes do not verify either.
			DisableKeepAlives: true,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	resp, err := httpClient.Get(url) //nolint:noctx // Bounded by the client's timeout.
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode < http.StatusOK || resp.StatusCode >= http.StatusBadRequest {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}

// containerPort resolves a probe's port, a number or the name of one of the container's ports.
func (p *PodProcess) containerPort(name string, number int) (int, error) {
	if number > 0 {
		return number, nil
	}
	for _, port := range p.container.Ports {
		if port.Name == name {
			return int(port.ContainerPort), nil
		}
	}
	return 0, fmt.Errorf("container %s has no port %s", p.container.Name, name)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// gracePeriod is how long the container gets between SIGTERM and SIGKILL: the deletion's grace
// period, or the pod's terminationGracePeriodSeconds.
func (p *PodProcess) gracePeriod(deleting *corev1.Pod) time.Duration {
	if deleting != nil && deleting.DeletionGracePeriodSeconds != nil {
		return time.Duration(*deleting.DeletionGracePeriodSeconds) * time.Second
	}
	if s := p.Pod.Spec.TerminationGracePeriodSeconds; s != nil {
		return time.Duration(*s) * time.Second
	}
	return 30 * time.Second
}

// removePod deletes the pod for good once its container has stopped, as kubelet does for a pod
// it has finished terminating.
func (p *PodProcess) removePod(ctx context.Context) {
	err := wait.PollUntilContextTimeout(ctx, mountPoll, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := p.cluster.Client.Delete(ctx, p.Pod, client.GracePeriodSeconds(0), client.Preconditions{UID: &p.Pod.UID})
		return err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err), nil
	})
	if err != nil {
		p.logf("removing the pod: %v", err)
	}
}

// logf appends a line to the pod's kubelet log.
func (p *PodProcess) logf(format string, args ...any) {
	_, _ = fmt.Fprintf(p.kubeletLog, time.Now().Format(time.RFC3339Nano)+" "+format+"\n", args...)
}

// terminate stops the container as kubelet does: SIGTERM, then SIGKILL after grace. A container
// that has already exited, or was crashed, is not running and has nothing to stop.
func (p *PodProcess) terminate(grace time.Duration) {
	p.stopOnce.Do(func() {
		p.mu.Lock()
		run := p.run
		// No restart from here on.
		p.crashed = true
		p.mu.Unlock()
		if run.Running() == nil {
			p.stopErr = run.Stop(grace)
		}
		p.stoppedAt = time.Now()
		p.logf("the container stopped: %v", p.stopErr)
		if err := p.unmountVolumes(); err != nil {
			p.logf("%v", err)
		}
		close(p.stopped)
	})
}

// Stop stops the container now, whatever its pod's state, within the pod's grace period; for
// the end of a test.
func (p *PodProcess) Stop() error {
	p.stopSupervise()
	<-p.superviseDone
	p.terminate(p.gracePeriod(nil))
	_ = p.kubeletLog.Close()
	return p.stopErr
}
