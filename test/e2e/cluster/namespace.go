//go:build linux

// Package cluster runs a Kubernetes cluster without containers for the end-to-end test of the
// deployed operator: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok for nodes
// and pods, and cert-manager's controllers, all as local processes inside namespaces of the test's
// own, where every address belongs to the test and nothing outlives it.
package cluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/vishvananda/netlink"
)

// Addresses inside the network namespace. All of them are on its loopback device, so a process
// listening on 0.0.0.0 there answers on each; none is in 127.0.0.0/8, which EndpointSlices refuse.
const (
	// APIServerIP is the address kube-apiserver binds and advertises.
	APIServerIP = "10.250.0.1"
	// APIServerPort is kube-apiserver's secure port.
	APIServerPort = 6443
	// NodeIP is the address of the kwok node.
	NodeIP = "10.250.0.2"
	// PodCIDR is where kwok hands out pod IPs; the whole range is local.
	PodCIDR = "10.244.0.0/20"
	// ServiceCIDR is the Services' cluster IP range. Nothing routes it (there is no kube-proxy):
	// the API server reaches webhooks through their endpoints, as --enable-aggregator-routing asks.
	ServiceCIDR = "10.96.0.0/16"
)

// namespacesEnv marks the copy of the test that runs inside the namespaces.
const namespacesEnv = "WEBHOOK_OPERATOR_E2E_IN_NAMESPACES"

// InNamespaces reports whether this process is the copy RunInNamespaces started.
func InNamespaces() bool {
	return os.Getenv(namespacesEnv) == "1"
}

// RunInNamespaces runs this executable again, with the same arguments, in new user, mount, PID and
// network namespaces, and returns its exit code.
//
//   - The user namespace maps the caller to root, which grants the rest without privileges.
//   - The network namespace holds only a loopback device, so the cluster's ports cannot clash
//     with anything on the machine, and nothing on it can reach the cluster.
//   - The mount namespace lets the copy mount a pod's volumes at their own paths, as kubelet
//     does, without touching the machine's /tmp or /run.
//   - The copy is PID 1 of the PID namespace: when it exits, however it exits, the kernel kills
//     every process it started.
func RunInNamespaces() (int, error) {
	cmd := exec.Command("/proc/self/exe", os.Args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// Nothing in the network namespace can reach a proxy, and every address in it is local.
	cmd.Env = []string{namespacesEnv + "=1"}
	for _, e := range os.Environ() {
		name, _, _ := strings.Cut(e, "=")
		switch strings.ToUpper(name) {
		case "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY":
		default:
			cmd.Env = append(cmd.Env, e)
		}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWNET,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		Pdeathsig:   syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("starting the test in new namespaces (are unprivileged user namespaces allowed?): %w", err)
	}

	// Pass an interrupt on, so the copy can stop its cluster and write its report.
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
	if err != nil {
		return 0, err
	}
	return 0, nil
}

// SetUpNamespaces prepares the namespaces from inside: loopback up with the cluster's addresses
// on it, a private tmpfs over /run, and a private /tmp (see privateTmp).
func SetUpNamespaces() error {
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("finding the loopback device: %w", err)
	}
	if err := netlink.LinkSetUp(lo); err != nil {
		return fmt.Errorf("bringing the loopback device up: %w", err)
	}
	for _, cidr := range []string{APIServerIP + "/32", NodeIP + "/32", PodCIDR} {
		addr, err := netlink.ParseAddr(cidr)
		if err != nil {
			return err
		}
		if err := netlink.AddrAdd(lo, addr); err != nil {
			return fmt.Errorf("adding %s to the loopback device: %w", cidr, err)
		}
	}

	// Mounts made here must not propagate back to the machine's mount namespace.
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making the mounts private: %w", err)
	}
	if err := mountTmpfs("/run", 0o755); err != nil {
		return err
	}
	return privateTmp()
}

// hostTmp is where the machine's /tmp stays reachable once privateTmp has covered it.
const hostTmp = "/run/host-tmp"

// privateTmp puts a tmpfs over /tmp and binds every entry of the machine's /tmp back into it, so
// that whatever the test was given under /tmp (its working copy, perhaps, and Go's build
// directories) stays where it was, while whatever the test creates directly in /tmp, such as the
// mount points of a pod's volumes, is its own.
func privateTmp() error {
	if err := os.Mkdir(hostTmp, 0o700); err != nil {
		return err
	}
	if err := syscall.Mount("/tmp", hostTmp, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
		return fmt.Errorf("keeping the machine's /tmp reachable: %w", err)
	}
	if err := mountTmpfs("/tmp", 0o1777); err != nil {
		return err
	}
	entries, err := os.ReadDir(hostTmp)
	if err != nil {
		return err
	}
	for _, e := range entries {
		src, dst := filepath.Join(hostTmp, e.Name()), filepath.Join("/tmp", e.Name())
		switch {
		case e.Type()&os.ModeSymlink != 0:
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
			return fmt.Errorf("binding %s back into the private /tmp: %w", dst, err)
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
