//go:build linux

package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PodProcess is one container of a kwok pod run for real as a local process, the way kubelet
// would run it: kwok owns the pod's status, while this runs the program, mounts its volumes and
// stops it when the pod goes away. The process listens on the pod's IP, which kwok assigned from
// PodCIDR, so the pod's Service and EndpointSlice lead to it.
type PodProcess struct {
	// Process is the running container.
	*Process
	// Pod is the pod as it was when the process started.
	Pod *corev1.Pod

	cluster   *Cluster
	container *corev1.Container
	volumes   []mountedVolume
	written   map[string]map[string][]byte
	// kubeletLog records what the harness did for the pod, and what failed.
	kubeletLog *os.File

	stopOnce      sync.Once
	stopErr       error
	stopped       chan struct{}
	stopSupervise context.CancelFunc
}

// mountedVolume is a volume mount with the function that reads its files from the API.
type mountedVolume struct {
	path  string
	mode  os.FileMode
	files func(context.Context) (map[string][]byte, error)
}

const (
	// mountPoll is how often a volume that cannot be mounted yet is tried again.
	mountPoll = 250 * time.Millisecond
	// volumeRefresh is how often mounted Secret and projected volumes are brought up to date.
	// kubelet takes up to a minute or more; a few seconds keep the test short while leaving the
	// window a real cluster has, in which a Secret, a caBundle injected from it and the files a
	// running process reads disagree.
	volumeRefresh = 5 * time.Second
)

// RunPod runs container of pod with binary standing in for the image's entrypoint (the first
// element of the container's command). Like kubelet, it waits until every volume can be
// mounted (a Secret that cert-manager has yet to write keeps the container from starting), then
// starts the process with the container's arguments and environment. The volumes must be
// Secrets, or the projected service account token volume; each is a tmpfs mounted at the
// container's own mount path, in the namespaces SetUpNamespaces prepared.
//
// Until the pod is deleted, and beyond ctx, RunPod keeps the mounted Secrets current and stops the
// process when the pod is deleted, as kubelet does, within its termination grace period; Stop
// ends that.
func (c *Cluster) RunPod(ctx context.Context, pod *corev1.Pod, containerName, binary string) (*PodProcess, error) {
	p := &PodProcess{Pod: pod, cluster: c, written: map[string]map[string][]byte{}, stopped: make(chan struct{})}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == containerName {
			p.container = &pod.Spec.Containers[i]
		}
	}
	if p.container == nil {
		return nil, fmt.Errorf("pod %s has no container %s", pod.Name, containerName)
	}
	if len(p.container.Command) == 0 {
		return nil, fmt.Errorf("container %s sets no command: the image's entrypoint is unknown here", containerName)
	}
	env, err := p.environment()
	if err != nil {
		return nil, err
	}
	if err := p.resolveVolumes(); err != nil {
		return nil, err
	}
	// Like kubelet, give each Secret and projected volume a tmpfs of its own.
	for _, v := range p.volumes {
		if err := os.MkdirAll(v.path, 0o755); err != nil {
			return nil, err
		}
		if err := mountTmpfs(v.path, 0o755); err != nil {
			return nil, err
		}
	}
	if p.kubeletLog, err = os.Create(filepath.Join(c.LogDir, pod.Name+".kubelet.log")); err != nil {
		return nil, err
	}

	// Mount every volume once it can be, as kubelet does before it starts a container.
	var last error
	if err := wait.PollUntilContextCancel(ctx, mountPoll, true, func(ctx context.Context) (bool, error) {
		last = p.syncVolumes(ctx)
		return last == nil, nil
	}); err != nil {
		return nil, fmt.Errorf("mounting the volumes of pod %s: %w (last: %w)", pod.Name, err, last)
	}

	args := append(append([]string{}, p.container.Command[1:]...), p.container.Args...)
	if p.Process, err = startProcess(pod.Name, c.LogDir, binary, args, env); err != nil {
		return nil, err
	}
	p.logf("started %s %q", binary, args)
	superviseCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p.stopSupervise = cancel
	go p.supervise(superviseCtx)
	return p, nil
}

// Stopped is closed once the process has been stopped because its pod was deleted.
func (p *PodProcess) Stopped() <-chan struct{} { return p.stopped }

// StopErr is how the process ended when it was stopped; only meaningful once Stopped is closed.
func (p *PodProcess) StopErr() error { return p.stopErr }

// environment is the container's environment as kubelet gives it, and nothing of the test's own:
// a PATH, the container's env values, the API server's address and the pod's host name. The API
// server is given by its own address, not the kubernetes Service's cluster IP, as nothing here
// routes cluster IPs.
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
		if e.ValueFrom != nil {
			return nil, fmt.Errorf("env %s: valueFrom is not supported", e.Name)
		}
		env = append(env, e.Name+"="+e.Value)
	}
	return env, nil
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
		switch {
		case v == nil:
			return fmt.Errorf("volume mount %s names no volume", m.Name)
		case m.SubPath != "":
			return fmt.Errorf("volume mount %s: subPath is not supported", m.Name)
		case !strings.HasPrefix(path, "/tmp/") && !strings.HasPrefix(path, "/var/run/"):
			return fmt.Errorf("volume mount %s at %s: only paths under /tmp and /var/run are the test's own", m.Name, m.MountPath)
		case v.Secret != nil:
			p.volumes = append(p.volumes, mountedVolume{path: path, mode: fileMode(v.Secret.DefaultMode), files: p.secretFiles(v.Secret)})
		case v.Projected != nil:
			files, err := p.projectedFiles(v.Projected)
			if err != nil {
				return fmt.Errorf("volume %s: %w", m.Name, err)
			}
			p.volumes = append(p.volumes, mountedVolume{path: path, mode: fileMode(v.Projected.DefaultMode), files: files})
		default:
			return fmt.Errorf("volume %s: only Secret and projected service account volumes are supported", m.Name)
		}
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
		if err := p.cluster.Client.Get(ctx, client.ObjectKey{Namespace: p.Pod.Namespace, Name: src.SecretName}, secret); err != nil {
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
		if err := writeVolume(v.path, files, v.mode); err != nil {
			return fmt.Errorf("writing %s: %w", v.path, err)
		}
		p.written[v.path] = files
		p.logf("wrote volume %s", v.path)
	}
	return nil
}

// supervise keeps the volumes current and stops the process once its pod is deleted.
func (p *PodProcess) supervise(ctx context.Context) {
	ticker := time.NewTicker(mountPoll)
	defer ticker.Stop()
	lastSync := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.Done():
			p.logf("the container exited on its own: %v", p.Err())
			return
		case <-ticker.C:
		}
		pod := &corev1.Pod{}
		err := p.cluster.Client.Get(ctx, client.ObjectKeyFromObject(p.Pod), pod)
		if apierrors.IsNotFound(err) || (err == nil && (pod.UID != p.Pod.UID || pod.DeletionTimestamp != nil)) {
			p.logf("the pod was deleted: stopping the container")
			p.stop()
			return
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

// logf appends a line to the pod's kubelet log.
func (p *PodProcess) logf(format string, args ...any) {
	_, _ = fmt.Fprintf(p.kubeletLog, time.Now().Format(time.RFC3339Nano)+" "+format+"\n", args...)
}

// stop sends SIGTERM and waits for the pod's termination grace period.
func (p *PodProcess) stop() {
	p.stopOnce.Do(func() {
		grace := 30 * time.Second
		if s := p.Pod.Spec.TerminationGracePeriodSeconds; s != nil {
			grace = time.Duration(*s) * time.Second
		}
		p.stopErr = p.Process.Stop(grace)
		close(p.stopped)
	})
}

// Crashed returns an error when the process has exited without being stopped.
func (p *PodProcess) Crashed() error {
	select {
	case <-p.stopped:
		return nil
	default:
		return p.Running()
	}
}

// Stop stops the process now, whatever its pod's state; for the end of a test.
func (p *PodProcess) Stop() error {
	p.stopSupervise()
	p.stop()
	_ = p.kubeletLog.Close()
	return p.stopErr
}
