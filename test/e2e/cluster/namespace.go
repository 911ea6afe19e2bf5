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
	// PodCIDR is where kwok hands out pod IPs; the whole /24 is local.
	PodCIDR = "10.244.0.0/24"
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
//   - The mount namespace lets the copy put private tmpfs over /tmp and /run, where kubelet
//     would mount a pod's Secrets and its service account token.
//   - The copy is PID 1 of the PID namespace: when it exits, however it exits, the kernel kills
//     every process it started.
func RunInNamespaces() (int, error) {
	cmd := exec.Command("/proc/self/exe", os.Args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), namespacesEnv+"=1")
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
// on it, and private tmpfs over /tmp and /run.
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
	for _, dir := range []string{"/tmp", "/run"} {
		if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "mode=1777"); err != nil {
			return fmt.Errorf("mounting a tmpfs on %s: %w", dir, err)
		}
	}
	return nil
}
