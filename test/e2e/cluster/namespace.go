//go:build linux

// Package cluster runs a Kubernetes cluster with one real node for the end-to-end test of the
// deployed operator: etcd, kube-apiserver, kube-controller-manager and kube-scheduler; a node of
// kubelet, containerd, runc, a CNI bridge and kube-proxy, on which every pod runs as a container
// of an image imported from an OCI layout; and cert-manager's controllers, as pods of that node.
// Everything runs inside namespaces of the test's own, where every address belongs to the test
// and nothing outlives it.
package cluster

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
)

// Addresses inside the network namespace. The API server's and the node's are on its loopback
// device; none is in 127.0.0.0/8, which EndpointSlices refuse. The pods are on a bridge of the
// CNI plugins, whose address is their gateway; nothing routes out of the namespace.
const (
	// APIServerIP is the address kube-apiserver binds and advertises.
	APIServerIP = "10.250.0.1"
	// APIServerPort is kube-apiserver's secure port.
	APIServerPort = 6443
	// NodeIP is the node's address: kubelet's, and the one NodePorts answer on.
	NodeIP = "10.250.0.2"
	// RegistryIP is the address the suite's OCI registry serves at (RegistryPort): not a loopback
	// one, for which containerd would skip verifying its certificate.
	RegistryIP = "10.250.0.3"
	// RegistryPort is the registry's port.
	RegistryPort = 5000
	// NodeName is the first node, which Start starts.
	NodeName = "e2e-node"
	// PodCIDR is the first node's pod range, handed out by the CNI bridge's host-local IPAM. The
	// node AddNode adds as the i-th of NodeNames (counting from 0) has 10.244.i.0/24.
	PodCIDR = "10.244.0.0/24"
	// ClusterCIDR is the cluster's pod range, as kube-proxy knows it.
	ClusterCIDR = "10.244.0.0/16"
	// ServiceCIDR is the Services' cluster IP range, which kube-proxy's rules answer.
	ServiceCIDR = "10.96.0.0/16"
)

// NodeNames are the nodes a cluster can have: NodeName, then those AddNode can add, in order.
var NodeNames = []string{NodeName, "e2e-node-2", "e2e-node-3"}

// CgroupRootPrefix begins the name of the cgroup, in every cgroup v1 hierarchy, under which
// kubelet puts the pods of one run (kubelet's cgroupRoot): nothing else on the machine is touched,
// and the init of the namespaces removes it, whatever way the run ends.
const CgroupRootPrefix = "webhook-operator-e2e-"

const (
	// initFlag, as the first argument of the test binary, makes it the init of the namespaces.
	initFlag = "--e2e-init"
	// namespacesEnv marks the copy of the test that runs inside the namespaces, and holds the
	// cgroup root of the run.
	namespacesEnv = "WEBHOOK_OPERATOR_E2E_CGROUP_ROOT"
)

// InNamespaces reports whether this process is the test the init of the namespaces started.
func InNamespaces() bool {
	return os.Getenv(namespacesEnv) != ""
}

// CgroupRoot is the cgroup under which kubelet puts this run's pods, inside the namespaces.
func CgroupRoot() string {
	return os.Getenv(namespacesEnv)
}

// RunInNamespaces runs this executable again, with the same arguments, as the init of new mount,
// PID, network, UTS and IPC namespaces (see RunInitIfAsked), and returns the test's exit code.
// It must run as root: kubelet and runc manage the machine's cgroup hierarchies, which a user
// namespace cannot grant.
func RunInNamespaces() (int, error) {
	if os.Geteuid() != 0 {
		return 0, errors.New("the end-to-end test runs a real node (kubelet, containerd and runc, which manage cgroups), so it must run as root")
	}
	cmd := exec.Command("/proc/self/exe", append([]string{initFlag}, os.Args[1:]...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// The init and the test find the run's cgroup root here; this process's PID makes it unique.
	cmd.Env = []string{namespacesEnv + "=/" + CgroupRootPrefix + strconv.Itoa(os.Getpid())}
	// Nothing in the network namespace can reach a proxy, and every address in it is local.
	for _, e := range os.Environ() {
		name, _, _ := strings.Cut(e, "=")
		switch strings.ToUpper(name) {
		case "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY":
		default:
			cmd.Env = append(cmd.Env, e)
		}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWNET | syscall.CLONE_NEWUTS | syscall.CLONE_NEWIPC,
		Pdeathsig:  syscall.SIGKILL,
		// A process group of its own: Ctrl-C at a terminal signals the foreground group, and the
		// test, in it too, would get the interrupt straight from the terminal and again from each
		// process that forwards it, where Ginkgo takes a second interrupt to mean "skip the
		// cleanup". Here it gets it once, from its init.
		Setpgid: true,
	}
	// The host's PIDs are visible here and not in the namespaces: here an earlier run's cgroups
	// can be told from those of a run still going.
	if err := removeStaleCgroups(); err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("starting the test in new namespaces: %w", err)
	}
	return waitForwardingSignals(cmd)
}

// RunInitIfAsked returns at once unless this process was started as the init of the namespaces.
// Then it is PID 1 there, and never returns: it sets the namespaces up (see setUpNamespaces),
// runs the test as its child, reaps every process that ends up its child (containerd's shims
// among them), and once the test exits, kills whatever is left, removes the run's cgroups and
// exits with the test's code. The test binary calls it first thing in TestMain.
func RunInitIfAsked() {
	if len(os.Args) < 2 || os.Args[1] != initFlag {
		return
	}
	code, err := runInit(os.Args[2:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e init:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

func runInit(args []string) (int, error) {
	cgroupRoot := CgroupRoot()
	if !strings.HasPrefix(cgroupRoot, "/"+CgroupRootPrefix) {
		return 1, fmt.Errorf("%s=%q: the init must be started by RunInNamespaces", namespacesEnv, cgroupRoot)
	}
	if err := setUpNamespaces(); err != nil {
		return 1, fmt.Errorf("setting up the namespaces: %w", err)
	}
	test := exec.Command("/proc/self/exe", args...)
	test.Stdin, test.Stdout, test.Stderr = os.Stdin, os.Stdout, os.Stderr
	test.Env = os.Environ()
	if err := test.Start(); err != nil {
		return 1, err
	}

	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	go func() {
		for s := range signals {
			_ = test.Process.Signal(s)
		}
	}()
	// Reap every child; the test's own exit status ends the loop.
	code := 0
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return 1, fmt.Errorf("waiting for the test: %w", err)
		}
		if pid == test.Process.Pid {
			code = status.ExitStatus()
			if status.Signaled() {
				code = 128 + int(status.Signal())
			}
			break
		}
	}
	signal.Stop(signals)

	// Whatever the test left running (pods, shims, the control plane) goes now, and then the
	// cgroups kubelet made for it.
	_ = syscall.Kill(-1, syscall.SIGKILL)
	for {
		if _, err := syscall.Wait4(-1, nil, 0, nil); errors.Is(err, syscall.ECHILD) {
			break
		}
	}
	return code, removeCgroups(cgroupRoot)
}

// waitForwardingSignals waits for cmd, passing an interrupt on so it can stop its cluster and
// write its report, and returns its exit code.
func waitForwardingSignals(cmd *exec.Cmd) (int, error) {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(signals)
	go func() {
		for s := range signals {
			_ = cmd.Process.Signal(s)
		}
	}()
	err := cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), nil
	}
	return 0, err
}

// kubeletSysctls are the kernel parameters kubelet sets at start to the values it wants, unless
// they have them already; they are global to the machine, not to a namespace.
var kubeletSysctls = map[string]string{
	"vm/overcommit_memory":      "1",
	"vm/panic_on_oom":           "0",
	"kernel/panic":              "10",
	"kernel/panic_on_oops":      "1",
	"kernel/keys/root_maxkeys":  "1000000",
	"kernel/keys/root_maxbytes": "25000000",
}

// setUpNamespaces prepares the namespaces from inside:
//   - mounts are private, so nothing mounted here (pods' volumes, containers' root file systems)
//     is seen outside, and all of it goes with the namespace;
//   - a /proc of the new PID namespace, a tmpfs over /run, and /var/lib and /var/log made private
//     (see privateDir), where kubelet, containerd and the CNI plugins write whatever their
//     settings do not move elsewhere;
//   - each kernel parameter kubelet would change machine-wide reads, in this mount namespace
//     only, as the value kubelet wants, so it leaves the machine's alone;
//   - loopback up with the API server's and the node's addresses, a route for the Services' range,
//     and IP forwarding on, for the pods behind the bridge.
func setUpNamespaces() error {
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making the mounts private: %w", err)
	}
	if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mounting /proc: %w", err)
	}
	if err := mountTmpfs("/run", 0o755); err != nil {
		return err
	}
	for _, dir := range []string{"/var/lib", "/var/log"} {
		if err := privateDir(dir, nodeHostDirs); err != nil {
			return err
		}
	}
	if err := maskSysctls(kubeletSysctls); err != nil {
		return err
	}
	if err := syscall.Sethostname([]byte(NodeName)); err != nil {
		return err
	}

	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("finding the loopback device: %w", err)
	}
	if err := netlink.LinkSetUp(lo); err != nil {
		return fmt.Errorf("bringing the loopback device up: %w", err)
	}
	for _, ip := range []string{APIServerIP, NodeIP, RegistryIP} {
		addr, err := netlink.ParseAddr(ip + "/32")
		if err != nil {
			return err
		}
		if err := netlink.AddrAdd(lo, addr); err != nil {
			return fmt.Errorf("adding %s to the loopback device: %w", ip, err)
		}
	}
	// A connection to a Service's cluster IP needs a route before kube-proxy's rules translate its
	// address to a pod's, as a node's default route gives it: the namespace has none, so the
	// Service range gets one of its own.
	_, services, err := net.ParseCIDR(ServiceCIDR)
	if err != nil {
		return err
	}
	// From the node's address: a loopback source would be dropped on its way to a pod.
	route := &netlink.Route{LinkIndex: lo.Attrs().Index, Dst: services, Scope: netlink.SCOPE_LINK, Src: net.ParseIP(NodeIP)}
	if err := netlink.RouteAdd(route); err != nil {
		return fmt.Errorf("routing the Service range %s: %w", ServiceCIDR, err)
	}
	return enableForwarding()
}

// enableForwarding turns on IP forwarding in the network namespace of the calling thread, for the
// pods behind its bridge and, in the test's namespace, between nodes.
func enableForwarding() error {
	for key, value := range map[string]string{
		"net/ipv4/ip_forward": "1",
		// Replies of a pod reached through a Service on the same bridge go through conntrack.
		"net/bridge/bridge-nf-call-iptables": "1",
	} {
		if err := os.WriteFile(filepath.Join("/proc/sys", key), []byte(value), 0o644); err != nil {
			return fmt.Errorf("setting %s in the network namespace: %w", key, err)
		}
	}
	return nil
}

// maskSysctls bind-mounts, over each kernel parameter whose value differs, a file holding the
// value wanted.
func maskSysctls(wanted map[string]string) error {
	dir := "/run/e2e-sysctls"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for key, value := range wanted {
		target := filepath.Join("/proc/sys", key)
		current, err := os.ReadFile(target)
		if err != nil {
			return err
		}
		if strings.TrimSpace(string(current)) == value {
			continue
		}
		source := filepath.Join(dir, strings.ReplaceAll(key, "/", "."))
		if err := os.WriteFile(source, []byte(value+"\n"), 0o644); err != nil {
			return err
		}
		if err := syscall.Mount(source, target, "", syscall.MS_BIND, ""); err != nil {
			return fmt.Errorf("keeping kubelet from changing %s machine-wide: %w", key, err)
		}
	}
	return nil
}

// nodeHostDirs are the directories of /var/lib and /var/log that kubelet and the CNI plugins
// write whatever their settings say (kubelet's device plugins socket directory and its
// /var/log/containers links, the plugins' IPAM state): where the machine has them, they are
// not bound back, so the node writes into fresh ones of its own, never into the machine's.
var nodeHostDirs = map[string]bool{
	"/var/lib/kubelet":    true,
	"/var/lib/cni":        true,
	"/var/log/containers": true,
	"/var/log/pods":       true,
}

// privateDir puts a tmpfs over dir and binds every entry of the machine's dir back into it but
// those named in fresh, so that whatever the test finds there stays as it was, while whatever it
// creates directly in dir, or in a fresh directory, is its own and goes with the mount namespace.
func privateDir(dir string, fresh map[string]bool) error {
	host := filepath.Join("/run/e2e-host", dir)
	if err := os.MkdirAll(host, 0o700); err != nil {
		return err
	}
	if err := syscall.Mount(dir, host, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
		return fmt.Errorf("keeping the machine's %s reachable: %w", dir, err)
	}
	if err := mountTmpfs(dir, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(host)
	if err != nil {
		return err
	}
	for _, e := range entries {
		src, dst := filepath.Join(host, e.Name()), filepath.Join(dir, e.Name())
		if fresh[dst] {
			continue
		}
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(src)
			if err != nil {
				return err
			}
			if err := os.Symlink(target, dst); err != nil {
				return err
			}
			continue
		case e.IsDir():
			err = os.Mkdir(dst, 0o755)
		case e.Type().IsRegular():
			err = os.WriteFile(dst, nil, 0o600)
		default:
			continue // Sockets and devices of other programs are no business of the test.
		}
		if err != nil {
			return err
		}
		if err := syscall.Mount(src, dst, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
			return fmt.Errorf("binding %s back into the private %s: %w", dst, dir, err)
		}
	}
	return nil
}

// mountTmpfs mounts a new tmpfs at dir, which must exist, with its root in the given mode.
func mountTmpfs(dir string, mode uint32) error {
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, fmt.Sprintf("mode=%o", mode)); err != nil {
		return fmt.Errorf("mounting a tmpfs on %s: %w", dir, err)
	}
	return nil
}

// cgroupHierarchies are the mount points of the machine's cgroup hierarchies.
func cgroupHierarchies() ([]string, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		sep := -1
		for i, f := range fields {
			if f == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || sep+1 >= len(fields) || len(fields) < 5 {
			continue
		}
		if fsType := fields[sep+1]; fsType == "cgroup" || fsType == "cgroup2" {
			dirs = append(dirs, fields[4])
		}
	}
	return dirs, nil
}

// removeCgroups removes the cgroup root from every hierarchy, deepest first. A cgroup whose last
// process has just been reaped may take a moment to become removable.
func removeCgroups(root string) error {
	hierarchies, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	var last error
	for range 50 {
		last = nil
		for _, h := range hierarchies {
			if err := removeCgroupTree(filepath.Join(h, root)); err != nil {
				last = err
			}
		}
		if last == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("removing the run's cgroups: %w", last)
}

// removeCgroupTree removes dir and the cgroups under it, deepest first.
func removeCgroupTree(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			if err := removeCgroupTree(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	if err := syscall.Rmdir(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing cgroup %s: %w", dir, err)
	}
	return nil
}

// removeStaleCgroups removes the cgroups of earlier runs whose init was killed before it could.
// A run's cgroup root ends in the PID of the process that started its init (RunInNamespaces):
// while that process lives, the run is going and its cgroups stay, even one that holds no
// process at the moment; so do those that hold one.
func removeStaleCgroups() error {
	hierarchies, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	for _, h := range hierarchies {
		stale, err := filepath.Glob(filepath.Join(h, CgroupRootPrefix+"*"))
		if err != nil {
			return err
		}
		for _, dir := range stale {
			pid, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(dir), CgroupRootPrefix))
			if err == nil && syscall.Kill(pid, 0) == nil {
				continue
			}
			if err := removeCgroupTree(dir); err != nil && !errors.Is(err, syscall.EBUSY) {
				return fmt.Errorf("a cgroup of an earlier run: %w", err)
			}
		}
	}
	return nil
}
