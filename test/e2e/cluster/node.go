//go:build linux

package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/distribution/reference"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/seedlabs/webhook-operator/internal/image"
	"github.com/seedlabs/webhook-operator/test/testregistry"
)

// PauseImage is the pod sandbox image, containerd 2.4's default, which the node's containerd
// pins: an OCI layout of test/e2e/images/pause stands for it, as nothing can be pulled.
const PauseImage = "registry.k8s.io/pause:3.10.2"

// nodeStateDir holds the first node's runtime state, on the tmpfs /run of the test's mount
// namespace: containerd's content and snapshots, kubelet's pod directories, the CNI plugins' IPAM.
// A node AddNode adds keeps its own in /run/<its name>.
const nodeStateDir = "/run/e2e-node"

// node is one of the cluster's real nodes: containerd running containers with runc on a CNI
// bridge, kubelet, and kube-proxy programming nftables. The first node runs in the test's
// namespaces; a node AddNode adds runs in a network namespace of its own (see addNodeNetwork),
// with its own state directory, cgroup root and processes.
type node struct {
	name, ip, podCIDR string
	// stateDir holds the node's runtime state, under /run.
	stateDir string
	// podLogs is where kubelet writes the containers' logs, and removes a pod's with the pod. It
	// is not under the artifacts, in the repository: a directory removed while make walks the
	// repository's packages (make deploy runs controller-gen on ./...) fails the walk.
	podLogs string
	// configDir holds the node's configuration files, and logDir its processes' logs.
	configDir, logDir string
	// netns is the path of the node's network namespace, or empty for the first node, which runs
	// in the test's own.
	netns string
	// cgroupRoot is kubelet's cgroup root.
	cgroupRoot string

	tools  string
	socket string
	// crictlConfig points crictl at containerd.
	crictlConfig string
	// events is crictl events, following containerd's container events.
	events *exec.Cmd
	// processes are the node's containerd, kubelet and kube-proxy, of a node AddNode added; the
	// first node's are the cluster's.
	processes []*Process
}

// firstNode is the node Start starts, in the test's namespaces.
func (c *Cluster) firstNode() *node {
	return &node{
		name: NodeName, ip: NodeIP, podCIDR: PodCIDR, stateDir: nodeStateDir,
		configDir: filepath.Join(c.dir, "node"), logDir: c.LogDir, cgroupRoot: CgroupRoot(),
	}
}

// startNode runs the node's containerd, imports the images, and runs kubelet and kube-proxy,
// waiting until the node is Ready and kube-proxy has programmed the Services.
func (c *Cluster) startNode(ctx context.Context, n *node) error {
	bin := c.bin
	n.tools = bin.NodeTools
	n.socket = filepath.Join(n.stateDir, "containerd", "containerd.sock")
	n.crictlConfig = filepath.Join(n.configDir, "crictl.yaml")
	n.podLogs = filepath.Join(n.stateDir, "pod-logs")
	c.nodes = append(c.nodes, n)
	for _, d := range []string{n.configDir, n.logDir, n.podLogs, filepath.Join(n.stateDir, "cni", "net.d"), filepath.Join(n.stateDir, "kubelet", "manifests")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := createCgroupRoot(n.cgroupRoot); err != nil {
		return err
	}
	// containerd finds its shim, and the shim runc, on PATH.
	env := []string{"PATH=" + strings.Join([]string{bin.NodeTools, filepath.Dir(bin.Runc), "/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}, ":")}

	preloaded, err := repositoriesOf(c.images)
	if err != nil {
		return err
	}
	files := map[string]string{
		"containerd.toml": fmt.Sprintf(containerdConfig, n.stateDir, n.socket, bin.Runc, bin.NodeTools, filepath.Join(n.configDir, "certs.d")),
		"crictl.yaml":     fmt.Sprintf("runtime-endpoint: unix://%s\nimage-endpoint: unix://%[1]s\ntimeout: 30\n", n.socket),
		"kubelet.yaml": fmt.Sprintf(kubeletConfig, n.cgroupRoot, n.socket, n.ip, c.certs.caCert, filepath.Join(n.configDir, "resolv.conf"), n.podCIDR,
			filepath.Join(n.stateDir, "kubelet", "manifests"), n.podLogs, strings.Join(preloaded, ", "), int(NodeLeaseDuration.Seconds())),
		"kube-proxy.yaml": fmt.Sprintf(kubeProxyConfig, filepath.Join(n.configDir, "kube-proxy.kubeconfig"), n.name, ClusterCIDR, n.ip),
		"resolv.conf":     "", // Pods get no DNS server: nothing resolves outside the namespaces.
		"cni.conflist":    fmt.Sprintf(cniConfig, n.podCIDR, podGateway(n.podCIDR), filepath.Join(n.stateDir, "cni", "ipam")),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(n.configDir, name), []byte(data), 0o644); err != nil {
			return err
		}
	}
	if err := writeRegistryHosts(filepath.Join(n.configDir, "certs.d"), c.Registry); err != nil {
		return err
	}
	// containerd reads its CNI configuration from a directory of its own.
	if err := os.Symlink(filepath.Join(n.configDir, "cni.conflist"), filepath.Join(n.stateDir, "cni", "net.d", "10-e2e.conflist")); err != nil {
		return err
	}
	for name, user := range map[string]string{"kubelet.kubeconfig": kubeletUser(n.name), "kube-proxy.kubeconfig": kubeProxyUser} {
		if err := writeKubeconfig(filepath.Join(n.configDir, name), c.certs.caPEM, c.tokens.users[user]); err != nil {
			return err
		}
	}

	containerd, err := c.startNodeProcess(n, "containerd", filepath.Join(bin.NodeTools, "containerd"), []string{"--config=" + filepath.Join(n.configDir, "containerd.toml")}, env)
	if err != nil {
		return err
	}
	if err := c.waitFor(ctx, "containerd of "+n.name+" to serve CRI", containerd, func(ctx context.Context) error {
		_, err := n.crictl(ctx, "version")
		return err
	}); err != nil {
		return err
	}
	if err := c.watchContainerExits(n); err != nil {
		return err
	}
	for _, layout := range c.images {
		if err := n.importImage(ctx, layout); err != nil {
			return err
		}
	}

	kubelet, err := c.startNodeProcess(n, "kubelet", bin.Kubelet, []string{
		"--config=" + filepath.Join(n.configDir, "kubelet.yaml"),
		"--kubeconfig=" + filepath.Join(n.configDir, "kubelet.kubeconfig"),
		"--root-dir=" + filepath.Join(n.stateDir, "kubelet"),
		"--cert-dir=" + filepath.Join(n.stateDir, "kubelet", "pki"),
		"--hostname-override=" + n.name,
		"--node-ip=" + n.ip,
	}, env)
	if err != nil {
		return err
	}
	if err := c.waitFor(ctx, n.name+" to be Ready", kubelet, func(ctx context.Context) error {
		node := &corev1.Node{}
		if err := c.Client.Get(ctx, client.ObjectKey{Name: n.name}, node); err != nil {
			return err
		}
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return errors.New("not Ready")
	}); err != nil {
		return err
	}

	kubeProxy, err := c.startNodeProcess(n, "kube-proxy", bin.KubeProxy, []string{"--config=" + filepath.Join(n.configDir, "kube-proxy.yaml")}, env)
	if err != nil {
		return err
	}
	return c.waitFor(ctx, "kube-proxy of "+n.name+" to program the Services", kubeProxy, healthz("http://"+net.JoinHostPort(n.ip, "10256")+"/healthz"))
}

// startNodeProcess starts one of the node's processes with env added to the test's environment:
// the first node's as the cluster's, an added node's in its network namespace, through nsenter
// (which execs the program, so signals reach it), logged in the node's log directory.
func (c *Cluster) startNodeProcess(n *node, name, binary string, args, env []string) (*Process, error) {
	if n.netns == "" {
		return c.startProcessWithEnv(name, binary, args, env)
	}
	p, err := StartProcess(name, n.logDir, "nsenter", append([]string{"--net=" + n.netns, "--", binary}, args...), env)
	if err != nil {
		return nil, err
	}
	n.processes = append(n.processes, p)
	return p, nil
}

// podGateway is the bridge's address, the first of a node's pod range.
func podGateway(podCIDR string) string {
	return strings.TrimSuffix(podCIDR, "0/24") + "1"
}

// containerdConfig is containerd's configuration: its state, root, socket, runc's state and the
// pods' network namespaces under the node's state directory, NRI (whose socket would be the machine's) off, runc with the cgroupfs driver, the CNI plugins, and the registries' hosts
// configuration in one directory of the suite's own (writeRegistryHosts), not the host's /etc. restrict_oom_score_adj keeps
// containerd from lowering a sandbox's oom_score_adj, which needs CAP_SYS_RESOURCE, which this
// kind of machine withholds even from root.
const containerdConfig = `version = 3
root = "%[1]s/containerd/root"
state = "%[1]s/containerd/state"
[grpc]
  address = "%[2]s"
[plugins.'io.containerd.cri.v1.runtime']
  enable_selinux = false
  disable_apparmor = true
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = "%[3]s"
        Root = "%[1]s/runc"
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["%[4]s"]
    conf_dir = "%[1]s/cni/net.d"
[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "` + PauseImage + `"
  [plugins.'io.containerd.cri.v1.images'.registry]
    config_path = "%[5]s"
[plugins.'io.containerd.nri.v1.nri']
  disable = true
`

// kubeletConfig is kubelet's configuration. cgroup v1 is deprecated in kubelet, which refuses it
// unless failCgroupV1 is false; eviction and image garbage collection are kept out of the way of
// a test machine's small disk; pods get no DNS server.
const kubeletConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: %[1]s
containerRuntimeEndpoint: unix://%[2]s
imageServiceEndpoint: unix://%[2]s
failSwapOn: false
address: %[3]s
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: %[4]s
authorization:
  mode: Webhook
clusterDomain: cluster.local
resolvConf: %[5]s
podCIDR: %[6]s
maxPods: 250
staticPodPath: %[7]s
podLogsDir: %[8]s
serializeImagePulls: false
# The images imported into containerd are the node's own: kubelet never asks a pod for credentials
# to run them, even once a pod pulled an image of the same ID with a pull secret (which makes that
# image ID one kubelet pulled: KubeletEnsureSecretPulledImages keys its records by image ID). For
# any other image it does, so a pod without the pull secret of a private image cannot run it,
# though the image is on the node.
imagePullCredentialsVerificationPolicy: NeverVerifyAllowlistedImages
preloadedImagesVerificationAllowlist: [%[9]s]
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%%
  nodefs.inodesFree: 1%%
  imagefs.available: 1%%
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
# Secrets mounted in pods are brought up to date on each pod sync: every 10 s here, rather than
# every minute, keeps the certificate rotation specs short.
syncFrequency: 10s
nodeLeaseDurationSeconds: %[10]d
`

// kubeProxyConfig is kube-proxy's configuration: the nftables mode, NodePorts, health and metrics
// on the node's address, and the machine-wide conntrack settings left alone.
const kubeProxyConfig = `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: nftables
clientConnection:
  kubeconfig: %[1]s
hostnameOverride: %[2]s
clusterCIDR: %[3]s
healthzBindAddress: %[4]s:10256
metricsBindAddress: %[4]s:10249
nodePortAddresses: ["primary"]
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`

// cniConfig is the pod network: a bridge whose address is the pods' gateway, pod addresses from
// the node's pod range, and no masquerading, since nothing routes out of the namespace anyway.
const cniConfig = `{
  "cniVersion": "1.0.0",
  "name": "e2e",
  "plugins": [{
    "type": "bridge",
    "bridge": "cni0",
    "isGateway": true,
    "ipMasq": false,
    "hairpinMode": true,
    "ipam": {
      "type": "host-local",
      "ranges": [[{"subnet": "%s", "gateway": "%s"}]],
      "routes": [{"dst": "0.0.0.0/0"}],
      "dataDir": "%s"
    }
  }]
}
`

// createCgroupRoot creates kubelet's cgroup root in every cgroup v1 hierarchy, where kubelet
// requires it to exist, with the CPUs and memory nodes of the machine for cpuset's.
func createCgroupRoot(root string) error {
	hierarchies, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	for _, h := range hierarchies {
		dir := filepath.Join(h, root)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("creating kubelet's cgroup root: %w", err)
		}
		for _, file := range []string{"cpuset.cpus", "cpuset.mems"} {
			value, err := os.ReadFile(filepath.Join(h, file))
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dir, file), value, 0o644); err != nil {
				return fmt.Errorf("giving kubelet's cgroup root the machine's %s: %w", file, err)
			}
		}
	}
	return nil
}

// crictl runs crictl against the node's containerd and returns its output.
func (n *node) crictl(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(n.tools, "crictl"), append([]string{"--config=" + n.crictlConfig}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("crictl %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// repositoriesOf are the repositories of the images in the OCI layouts, quoted: those of the
// names they are imported under, without tag or digest.
func repositoriesOf(layouts []string) ([]string, error) {
	var repositories []string
	for _, layout := range layouts {
		_, ref, err := image.ReadLayout(layout)
		if err != nil {
			return nil, err
		}
		named, err := reference.ParseNormalizedNamed(ref)
		if err != nil {
			return nil, fmt.Errorf("the image of %s is named %q: %w", layout, ref, err)
		}
		repositories = append(repositories, strconv.Quote(named.Name()))
	}
	slices.Sort(repositories)
	return slices.Compact(repositories), nil
}

// writeRegistryHosts writes containerd's hosts configuration of reg into dir: its address and the
// CA that signed its certificate. Nothing gives containerd reg's credentials: a pod pulls with
// its pull secrets or not at all, as on any node of a cluster that shares no credentials.
//
// dir is one directory, as containerd 2.4's transfer service reads config_path whole, never as a
// list (containerd#12808).
func writeRegistryHosts(dir string, reg *testregistry.Registry) error {
	host := filepath.Join(dir, strings.ReplaceAll(reg.Host, ":", "_")+"_")
	if err := os.MkdirAll(host, 0o755); err != nil {
		return err
	}
	hosts := fmt.Sprintf("server = %q\nca = \"ca.pem\"\n", "https://"+reg.Host)
	return errors.Join(
		os.WriteFile(filepath.Join(host, "ca.pem"), reg.CAPEM, 0o644),
		os.WriteFile(filepath.Join(host, "hosts.toml"), []byte(hosts), 0o644))
}

// importImage imports an OCI image layout into containerd's CRI namespace, under the name the
// layout gives it.
func (n *node) importImage(ctx context.Context, layout string) error {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(image.Archive(pw, layout)) }()
	cmd := exec.CommandContext(ctx, filepath.Join(n.tools, "ctr"), "--address="+n.socket, "--namespace=k8s.io", "images", "import", "-")
	cmd.Stdin = pr
	out, err := cmd.CombinedOutput()
	_ = pr.Close()
	if err != nil {
		return fmt.Errorf("importing the image of %s: %w: %s", layout, err, out)
	}
	return nil
}

// stopWatchingContainerExits stops following containerd's events.
func (n *node) stopWatchingContainerExits() {
	if n.events != nil {
		_ = n.events.Process.Kill()
		_ = n.events.Wait()
		n.events = nil
	}
}

// removeAllPods keeps the logs of the pods still on the node in its log directory, then stops and
// removes every pod sandbox, as kubelet would for pods that are gone, which also tears down their
// network.
func (n *node) removeAllPods() error {
	keep := n.keepPodLogs()
	ctx, cancel := context.WithTimeout(context.Background(), stopGrace)
	defer cancel()
	_, err := n.crictl(ctx, "rmp", "--all", "--force")
	return errors.Join(keep, err)
}

// keepPodLogs copies the logs of the pods on the node into its log directory.
func (n *node) keepPodLogs() error {
	return os.CopyFS(filepath.Join(n.logDir, "pods"), os.DirFS(n.podLogs))
}

// Crictl runs crictl against the first node's containerd, for a spec that inspects the node as an
// administrator would, and returns its output.
func (c *Cluster) Crictl(ctx context.Context, args ...string) (string, error) {
	return c.nodes[0].crictl(ctx, args...)
}

// KillContainer sends SIGKILL to the process of a running container, as the kernel's OOM killer
// or a crash would end it; kubelet then finds the container dead and restarts it. containerID is
// a pod's status.containerStatuses[].containerID, on whichever node.
func (c *Cluster) KillContainer(ctx context.Context, containerID string) error {
	id := containerID
	if _, after, found := strings.Cut(containerID, "://"); found {
		id = after
	}
	var errs []error
	for _, n := range c.nodes {
		out, err := n.crictl(ctx, "inspect", "--output=go-template", "--template={{.info.pid}}", id)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(out))
		if err != nil || pid <= 0 {
			return fmt.Errorf("container %s has no process (crictl inspect on %s printed %q)", id, n.name, out)
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			return fmt.Errorf("killing the process %d of container %s: %w", pid, id, err)
		}
		return nil
	}
	return fmt.Errorf("no node runs container %s: %w", id, errors.Join(errs...))
}

// PodSandboxes lists the IDs of the pod sandboxes on every node for pods of namespace, whatever
// their state: what kubelet has not yet removed.
func (c *Cluster) PodSandboxes(ctx context.Context, namespace string) ([]string, error) {
	var ids []string
	for _, n := range c.nodes {
		out, err := n.crictl(ctx, "pods", "--namespace="+namespace, "--quiet")
		if err != nil {
			return nil, err
		}
		ids = append(ids, strings.Fields(out)...)
	}
	return ids, nil
}

// ContainerExit is a container of a node that stopped, as containerd reported it.
type ContainerExit struct {
	Namespace, Pod, Container string
	// ContainerID is the runtime's ID, without the "containerd://" of a pod's status.
	ContainerID string
	ExitCode    int32
	Reason      string
	FinishedAt  time.Time
}

// criContainerEvent is what crictl events prints of one CRI container event, in the protobuf
// JSON names of the CRI API.
type criContainerEvent struct {
	ContainerID        string `json:"containerId"`
	ContainerEventType string `json:"containerEventType"`
	PodSandboxStatus   struct {
		Metadata struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	} `json:"podSandboxStatus"`
	ContainersStatuses []struct {
		ID       string `json:"id"`
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		ExitCode   int32  `json:"exitCode"`
		Reason     string `json:"reason"`
		FinishedAt int64  `json:"finishedAt,string"`
	} `json:"containersStatuses"`
}

// watchContainerExits records every container of the node that stops, as containerd's CRI event
// stream reports it (what kubelet's evented PLEG would read), for ContainerExits, and copies the
// stream to the node's log crictl-events.log. It runs until the node stops.
func (c *Cluster) watchContainerExits(n *node) error {
	log, err := os.OpenFile(filepath.Join(n.logDir, "crictl-events.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(n.tools, "crictl"), "--config="+n.crictlConfig, "events", "--output=json")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return errors.Join(err, log.Close())
	}
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		return errors.Join(fmt.Errorf("crictl events: %w", err), log.Close())
	}
	n.events = cmd
	go func() {
		defer func() { _ = log.Close() }()
		decoder := json.NewDecoder(io.TeeReader(stdout, log))
		for {
			var event criContainerEvent
			if err := decoder.Decode(&event); err != nil {
				return // crictl stopped with the cluster
			}
			if event.ContainerEventType != "CONTAINER_STOPPED_EVENT" {
				continue
			}
			for _, s := range event.ContainersStatuses {
				if s.ID != event.ContainerID {
					continue
				}
				c.mu.Lock()
				c.exits = append(c.exits, ContainerExit{
					Namespace: event.PodSandboxStatus.Metadata.Namespace, Pod: event.PodSandboxStatus.Metadata.Name,
					Container: s.Metadata.Name, ContainerID: s.ID, ExitCode: s.ExitCode, Reason: s.Reason,
					FinishedAt: time.Unix(0, s.FinishedAt),
				})
				c.mu.Unlock()
			}
		}
	}()
	return nil
}

// ContainerExits are the containers of every node that stopped so far, in the order the nodes'
// containerd reported them. Unlike a pod's status, they do not depend on the API server: a container that
// stops as its pod is deleted is there even if kubelet never wrote that to the pod before removing
// it.
func (c *Cluster) ContainerExits() []ContainerExit {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.exits)
}
