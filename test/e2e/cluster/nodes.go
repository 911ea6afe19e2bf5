//go:build linux

package cluster

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// AddNode starts the next of NodeNames as another real node of the cluster and waits until it is
// Ready with its Services programmed, and returns its name. It runs in a network namespace of its
// own, reached from the test's over a veth pair, the test's namespace routing between nodes as a
// top-of-rack switch would (see addNodeNetwork); its containerd, kubelet and kube-proxy have their
// own state under /run/<name>, their own cgroup root and their logs under <logs>/<name>.
func (c *Cluster) AddNode(ctx context.Context) (string, error) {
	index := len(c.nodes)
	if index >= len(NodeNames) {
		return "", fmt.Errorf("the cluster has its %d nodes already", len(NodeNames))
	}
	if err := c.startAddedNode(ctx, index); err != nil {
		return "", err
	}
	return NodeNames[index], nil
}

// startAddedNode starts the index-th of NodeNames (index ≥ 1) as AddNode describes.
func (c *Cluster) startAddedNode(ctx context.Context, index int) (err error) {
	name := NodeNames[index]
	n := &node{
		name: name, ip: nodeAddress(index), podCIDR: fmt.Sprintf("10.244.%d.0/24", index),
		stateDir: filepath.Join("/run", name), configDir: filepath.Join(c.dir, name), logDir: filepath.Join(c.LogDir, name),
		cgroupRoot: CgroupRoot() + "/" + name,
	}
	if n.netns, err = addNodeNetwork(name, index, n.podCIDR); err != nil {
		return fmt.Errorf("creating the network of %s: %w", name, err)
	}
	if err := c.startNode(ctx, n); err != nil {
		return errors.Join(err, c.stopNode(n))
	}
	return nil
}

// RemoveNode stops a node AddNode added as a machine that is shut down and decommissioned: its
// pod sandboxes stopped and removed, then kube-proxy, kubelet and containerd, its network and
// cgroups; then its Node and the pods still bound to it are deleted from the API server.
func (c *Cluster) RemoveNode(ctx context.Context, name string) error {
	n, err := c.added(name)
	if err != nil {
		return err
	}
	err = c.stopNode(n)
	pods := &corev1.PodList{}
	if listErr := c.Client.List(ctx, pods, client.MatchingFields{"spec.nodeName": name}); listErr != nil {
		return errors.Join(err, listErr)
	}
	for _, pod := range pods.Items {
		err = errors.Join(err, client.IgnoreNotFound(c.Client.Delete(ctx, &pod, client.GracePeriodSeconds(0))))
	}
	return errors.Join(err, client.IgnoreNotFound(c.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})))
}

// stopNode stops an added node's processes, kube-proxy and kubelet first and containerd once the
// pod sandboxes are removed, deletes its network namespace and cgroups, and forgets it.
func (c *Cluster) stopNode(n *node) error {
	n.stopWatchingContainerExits()
	errs := stopInReverse(n.processes, n)
	n.processes = nil
	if n.netns != "" {
		// A network namespace outlives its name while a socket of it lingers (one a killed
		// process left retransmitting over a cut link, say), and its end of the veth pair with
		// it: deleting the test's end deletes both, so that the node can be started again.
		if link, err := netlink.LinkByName(nodeLink(slices.Index(NodeNames, n.name))); err == nil {
			errs = append(errs, netlink.LinkDel(link))
		}
		errs = append(errs, netns.DeleteNamed(filepath.Base(n.netns)))
	}
	errs = append(errs, removeCgroups(n.cgroupRoot), unmountUnder(n.stateDir), os.RemoveAll(n.stateDir))
	c.nodes = slices.DeleteFunc(c.nodes, func(other *node) bool { return other == n })
	return errors.Join(errs...)
}

// nodeAddress is the address of the index-th of NodeNames (index ≥ 1) on its link to the test's
// namespace; the test's end of the link has nodeGateway.
func nodeAddress(index int) string {
	return fmt.Sprintf("10.251.%d.2", index)
}

// nodeGateway is the test's end of the index-th node's link, the node's default route.
func nodeGateway(index int) string {
	return fmt.Sprintf("10.251.%d.1", index)
}

// nodeLink is the name of the test's end of the index-th node's link.
func nodeLink(index int) string {
	return "e2e-node" + strconv.Itoa(index)
}

// addNodeNetwork creates the network namespace of an added node, bound at /run/netns/<name>, and
// links it to the test's namespace: a veth pair with nodeGateway on the test's end and
// nodeAddress as the node's eth0, the node's default route through the test's namespace, and there
// a route to the node's pod range through the node. The test's namespace forwards (setUpNamespaces
// turned it on), so every node reaches kube-apiserver, the registry and every other node's pods;
// the node forwards to its pods' bridge. It returns the namespace's path.
func addNodeNetwork(name string, index int, podCIDR string) (_ string, err error) {
	ns, err := inOtherNetns(func() (netns.NsHandle, error) { return netns.NewNamed(name) })
	if err != nil {
		return "", fmt.Errorf("creating the network namespace: %w", err)
	}
	defer func() {
		_ = ns.Close()
		if err != nil {
			// Its veth pair goes with it.
			err = errors.Join(err, netns.DeleteNamed(name))
		}
	}()
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: nodeLink(index)}, PeerName: "eth0", PeerNamespace: netlink.NsFd(int(ns))}
	if err := netlink.LinkAdd(veth); err != nil {
		return "", fmt.Errorf("adding the veth pair: %w", err)
	}
	if err := upWithAddress(veth, nodeGateway(index)+"/24"); err != nil {
		return "", err
	}
	_, pods, err := net.ParseCIDR(podCIDR)
	if err != nil {
		return "", err
	}
	if err := netlink.RouteAdd(&netlink.Route{Dst: pods, Gw: net.ParseIP(nodeAddress(index))}); err != nil {
		return "", fmt.Errorf("routing %s through the node: %w", podCIDR, err)
	}
	_, err = inOtherNetns(func() (struct{}, error) {
		if err := netns.Set(ns); err != nil {
			return struct{}{}, err
		}
		lo, err := netlink.LinkByName("lo")
		if err != nil {
			return struct{}{}, err
		}
		if err := netlink.LinkSetUp(lo); err != nil {
			return struct{}{}, err
		}
		eth0, err := netlink.LinkByName("eth0")
		if err != nil {
			return struct{}{}, err
		}
		if err := upWithAddress(eth0, nodeAddress(index)+"/24"); err != nil {
			return struct{}{}, err
		}
		if err := netlink.RouteAdd(&netlink.Route{Gw: net.ParseIP(nodeGateway(index))}); err != nil {
			return struct{}{}, fmt.Errorf("adding the node's default route: %w", err)
		}
		return struct{}{}, enableForwarding()
	})
	if err != nil {
		return "", fmt.Errorf("in the node's namespace: %w", err)
	}
	return filepath.Join("/run/netns", name), nil
}

// upWithAddress gives a link an address and brings it up.
func upWithAddress(link netlink.Link, cidr string) error {
	addr, err := netlink.ParseAddr(cidr)
	if err != nil {
		return err
	}
	if err := netlink.AddrAdd(link, addr); err != nil {
		return fmt.Errorf("adding %s to %s: %w", cidr, link.Attrs().Name, err)
	}
	if err := netlink.LinkSetUp(link); err != nil {
		return fmt.Errorf("bringing %s up: %w", link.Attrs().Name, err)
	}
	return nil
}

// inOtherNetns runs f on an OS thread locked to it, which f may move into another network
// namespace: the thread is moved back to the test's namespace and unlocked afterwards. Only if
// that fails is the thread left locked, to end with the goroutine; a process started from a
// thread that ends gets its Pdeathsig (SIGKILL), so a thread must not end on a whim.
func inOtherNetns[T any](f func() (T, error)) (T, error) {
	type result struct {
		value T
		err   error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			done <- result{err: err}
			return
		}
		defer func() { _ = orig.Close() }()
		v, err := f()
		if restoreErr := netns.Set(orig); restoreErr != nil {
			done <- result{v, errors.Join(err, fmt.Errorf("moving the thread back to the test's network namespace: %w", restoreErr))}
			return // the thread stays locked and ends with the goroutine
		}
		runtime.UnlockOSThread()
		done <- result{v, err}
	}()
	r := <-done
	return r.value, r.err
}

// NodeCost is what one node's own processes hold of the machine (its containerd, kubelet and
// kube-proxy; not its pods, nor the containerd shim each pod has), as /proc shows them.
type NodeCost struct {
	Name string
	// RSS is the processes' resident memory, in bytes.
	RSS int64
	// Threads is how many threads they run.
	Threads int
	// InotifyWatches is how many inotify watches they hold, of the machine's
	// fs.inotify.max_user_watches for root.
	InotifyWatches int
}

// NodeCosts are the costs of the running nodes, the first one first.
func (c *Cluster) NodeCosts() ([]NodeCost, error) {
	var costs []NodeCost
	for i, n := range c.nodes {
		processes := n.processes
		if i == 0 {
			processes = slices.DeleteFunc(slices.Clone(c.processes), func(p *Process) bool {
				return !slices.Contains([]string{"containerd", "kubelet", "kube-proxy"}, p.Name)
			})
		}
		cost := NodeCost{Name: n.name}
		for _, p := range processes {
			if err := p.addCost(&cost); err != nil {
				return nil, err
			}
		}
		costs = append(costs, cost)
	}
	return costs, nil
}

// TmpfsUsed is how many bytes the tmpfs /run holds, where every node keeps its state (images,
// snapshots, pod volumes and logs).
func TmpfsUsed() (int64, error) {
	var fs syscall.Statfs_t
	if err := syscall.Statfs("/run", &fs); err != nil {
		return 0, err
	}
	return int64(fs.Blocks-fs.Bfree) * fs.Bsize, nil
}

// CutNode cuts an added node off the network as a failed link or switch port would: every packet
// to or from it is dropped where its link meets the test's namespace, so nothing it held open is
// reset and a call to it times out. RestoreNode undoes it.
func (c *Cluster) CutNode(ctx context.Context, name string) error {
	link, err := c.linkOf(name)
	if err != nil {
		return err
	}
	return nft(ctx, "", fmt.Sprintf(`table inet %[1]s {
	chain input { type filter hook input priority -310; iifname %[2]q drop; }
	chain forward { type filter hook forward priority -310; iifname %[2]q drop; oifname %[2]q drop; }
	chain output { type filter hook output priority -310; oifname %[2]q drop; }
}
`, cutTable(name), link))
}

// RestoreNode restores the link CutNode cut.
func (c *Cluster) RestoreNode(ctx context.Context, name string) error {
	if _, err := c.linkOf(name); err != nil {
		return err
	}
	return nft(ctx, "", "delete table inet "+cutTable(name)+"\n")
}

// PowerOff is what PowerOffNode killed besides the node's containerd, kubelet and kube-proxy.
type PowerOff struct {
	// Shims are the other processes of the node's network namespace: containerd's shims.
	Shims int
	// InPods are the processes of its pods' cgroups.
	InPods int
}

// PowerOffNode stops an added node as a power loss stops a machine: without a word on the network,
// and with nothing of it running on. Its link is cut first (CutNode), so that nothing its dying
// sockets send, a FIN or a reset, gets out; the cgroups of its pods are frozen, so that no
// container runs on while the rest is killed: containerd, kubelet and kube-proxy, the containerd
// shims (the other processes in the node's network namespace) and every process in its pods'
// cgroups. The cgroups are then thawed for the kills to land, and whatever still runs in the
// namespace or the cgroups (a process forked meanwhile) is killed until nothing does.
// PowerOnNode boots the node again.
func (c *Cluster) PowerOffNode(ctx context.Context, name string) (killed PowerOff, err error) {
	n, err := c.added(name)
	if err != nil {
		return killed, err
	}
	if err := c.CutNode(ctx, name); err != nil {
		return killed, err
	}
	freezer, err := freezerCgroup(n.cgroupRoot)
	if err != nil {
		return killed, err
	}
	// Thawed whatever happens: a task frozen in cgroup v1 does not die of SIGKILL, and nothing
	// else would ever thaw it.
	defer func() { err = errors.Join(err, thaw(freezer)) }()
	if err := setFreezerState(ctx, filepath.Join(freezer, "freezer.state"), "FROZEN"); err != nil {
		return killed, err
	}
	n.stopWatchingContainerExits()
	for _, p := range n.processes {
		p.Kill()
	}
	if killed.Shims, err = killInNetns(n.netns); err != nil {
		return killed, err
	}
	if killed.InPods, err = killInCgroups(freezer); err != nil {
		return killed, err
	}
	if err := thaw(freezer); err != nil {
		return killed, err
	}
	for {
		shims, err := killInNetns(n.netns)
		if err != nil {
			return killed, err
		}
		inPods, err := killInCgroups(freezer)
		if err != nil {
			return killed, err
		}
		if shims+inPods == 0 {
			return killed, nil
		}
		select {
		case <-ctx.Done():
			return killed, fmt.Errorf("%d processes of %s still run: %w", shims+inPods, name, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// PowerOnNode boots a node PowerOffNode stopped, as a machine whose disks were wiped meanwhile
// boots: its pods' logs are kept in its log directory, as removeAllPods keeps them; then all of its
// state goes (containerd's, kubelet's, the pods' network namespaces and the CNI plugin's
// addresses, all under /run/<name>), with its cgroups, mounts and network namespace; its link is
// back; and it starts as AddNode started it. The API server still binds to it the pods it ran,
// which kubelet finds gone and ends. Each step is tried whatever came of the one before.
func (c *Cluster) PowerOnNode(ctx context.Context, name string) error {
	n, err := c.added(name)
	if err != nil {
		return err
	}
	var errs []error
	if err := n.keepPodLogs(); err != nil {
		errs = append(errs, fmt.Errorf("keeping the pods' logs of %s: %w", name, err))
	}
	if err := c.stopNode(n); err != nil {
		errs = append(errs, fmt.Errorf("clearing what %s held before it boots: %w", name, err))
	}
	// Created if missing, so that the deletion cannot fail for a cut that never happened.
	if err := nft(ctx, "", fmt.Sprintf("table inet %[1]s {}\ndelete table inet %[1]s\n", cutTable(name))); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(append(errs, c.startAddedNode(ctx, slices.Index(NodeNames, name)))...)
}

// freezerCgroup is the directory of the cgroup v1 freezer's cgroup root, the parent of every
// pod's cgroup of kubelet's at root.
func freezerCgroup(root string) (string, error) {
	hierarchies, err := cgroupHierarchies()
	if err != nil {
		return "", err
	}
	for _, h := range hierarchies {
		// The hierarchy's root cgroup has no freezer.state; kubelet's cgroup root has.
		if _, err := os.Stat(filepath.Join(h, root, "freezer.state")); err == nil {
			return filepath.Join(h, root), nil
		}
	}
	return "", errors.New("no cgroup v1 freezer hierarchy")
}

// thaw thaws the freezer cgroup dir and every cgroup under it: one that froze itself (runc freezes
// a container's cgroup while it updates it) stays frozen when only its parent is thawed.
func thaw(dir string) error {
	var errs []error
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "freezer.state" {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		errs = append(errs, setFreezerState(ctx, path, "THAWED"))
		return nil
	})
	return errors.Join(append(errs, err)...)
}

// setFreezerState writes state to a freezer.state file and waits, at most 10 s, until it reads so.
func setFreezerState(ctx context.Context, file, state string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := os.WriteFile(file, []byte(state), 0o644); err != nil {
		return fmt.Errorf("setting %s to %s: %w", file, state, err)
	}
	for {
		now, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		if strings.TrimSpace(string(now)) == state {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s is %s, not %s: %w", file, strings.TrimSpace(string(now)), state, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// killInNetns sends SIGKILL to every process in the network namespace bound at path, and returns
// how many it killed.
func killInNetns(path string) (int, error) {
	var ns syscall.Stat_t
	if err := syscall.Stat(path, &ns); err != nil {
		return 0, err
	}
	want := fmt.Sprintf("net:[%d]", ns.Ino)
	links, err := filepath.Glob("/proc/[0-9]*/ns/net")
	if err != nil {
		return 0, err
	}
	killed := 0
	var errs []error
	for _, link := range links {
		if target, err := os.Readlink(link); err != nil || target != want {
			continue // a process that ended meanwhile, or of another namespace
		}
		pid, err := strconv.Atoi(strings.Split(link, "/")[2])
		if err != nil {
			return killed, err
		}
		switch err := syscall.Kill(pid, syscall.SIGKILL); {
		case errors.Is(err, syscall.ESRCH):
		case err != nil:
			errs = append(errs, fmt.Errorf("killing %d: %w", pid, err))
		default:
			killed++
		}
	}
	return killed, errors.Join(errs...)
}

// killInCgroups sends SIGKILL to every process in the cgroup v1 dir and those under it, and
// returns how many it killed; a frozen one dies once thawed.
func killInCgroups(dir string) (int, error) {
	killed := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, field := range strings.Fields(string(data)) {
			pid, err := strconv.Atoi(field)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			switch err := syscall.Kill(pid, syscall.SIGKILL); {
			case errors.Is(err, syscall.ESRCH):
			case err != nil:
				return fmt.Errorf("killing %d of %s: %w", pid, path, err)
			default:
				killed++
			}
		}
		return nil
	})
	return killed, err
}

// CutFromAPIServer drops, in an added node's network namespace, every packet between its pod at
// address and kube-apiserver's serving port, both ways, as a firewall rule or a broken route
// between a node's pods and the control plane would: the pod can no longer reach the API server,
// nor hear from it on the watches it holds open (dropping only what it sends would still let
// kube-apiserver push watch events to it), while kube-apiserver's calls to the pod, and the node's
// own traffic (kubelet's among it), go on. ReconnectToAPIServer undoes it.
func (c *Cluster) CutFromAPIServer(ctx context.Context, name, address string) error {
	n, err := c.added(name)
	if err != nil {
		return err
	}
	return nft(ctx, n.netns, fmt.Sprintf(`table ip %[1]s {
	chain forward {
		type filter hook forward priority -310;
		ip saddr %[2]s ip daddr %[3]s tcp dport %[4]d drop;
		ip saddr %[3]s tcp sport %[4]d ip daddr %[2]s drop;
	}
}
`, apiServerCutTable(address), address, APIServerIP, APIServerPort))
}

// ReconnectToAPIServer restores what CutFromAPIServer cut.
func (c *Cluster) ReconnectToAPIServer(ctx context.Context, name, address string) error {
	n, err := c.added(name)
	if err != nil {
		return err
	}
	return nft(ctx, n.netns, "delete table ip "+apiServerCutTable(address)+"\n")
}

// apiServerCutTable is the nftables table that cuts the pod at address off kube-apiserver.
func apiServerCutTable(address string) string {
	return "e2e-api-cut-" + strings.ReplaceAll(address, ".", "_")
}

// added is the node AddNode added by that name.
func (c *Cluster) added(name string) (*node, error) {
	i := slices.IndexFunc(c.nodes, func(n *node) bool { return n.name == name })
	if i < 1 {
		return nil, fmt.Errorf("%s is not a node AddNode added", name)
	}
	return c.nodes[i], nil
}

// linkOf is the test's end of an added node's link.
func (c *Cluster) linkOf(name string) (string, error) {
	if _, err := c.added(name); err != nil {
		return "", err
	}
	return nodeLink(slices.Index(NodeNames, name)), nil
}

// cutTable is the nftables table that cuts a node off.
func cutTable(name string) string {
	return "e2e-cut-" + strings.ReplaceAll(name, "-", "_")
}

// nft applies an nftables ruleset in the network namespace at netns, or the test's when empty.
func nft(ctx context.Context, netns, ruleset string) error {
	cmd := exec.CommandContext(ctx, "nft", "-f", "-")
	if netns != "" {
		cmd = exec.CommandContext(ctx, "nsenter", "--net="+netns, "--", "nft", "-f", "-")
	}
	cmd.Stdin = strings.NewReader(ruleset)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("nft: %w: %s", err, out)
	}
	return nil
}

// unmountUnder detaches whatever is still mounted under dir (a pod volume or a container's root
// file system a stopped node left), deepest first, so that dir can be removed.
func unmountUnder(dir string) error {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	var mounts []string
	for _, line := range strings.Split(string(data), "\n") {
		if fields := strings.Fields(line); len(fields) > 4 && strings.HasPrefix(fields[4], dir+"/") {
			mounts = append(mounts, fields[4])
		}
	}
	slices.SortFunc(mounts, func(a, b string) int { return len(b) - len(a) })
	var errs []error
	for _, m := range mounts {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", m, err))
		}
	}
	return errors.Join(errs...)
}
