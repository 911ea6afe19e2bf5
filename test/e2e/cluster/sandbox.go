//go:build linux

package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// sandboxFlag, as the first argument of the test binary, makes it a pod's sandbox instead of the
// test: see RunSandboxIfAsked.
const sandboxFlag = "--e2e-pod-sandbox"

// RunSandboxIfAsked returns at once unless this process was started as a pod's sandbox. Then,
// already in a mount and a UTS namespace of its own, it sets the pod's host name, bind-mounts
// the pod's volumes at the container's paths, and replaces itself with the container's program;
// it never returns.
//
// This is what gives each replica of a Deployment what its container would have: two replicas
// mount the same paths (/var/run/secrets/kubernetes.io/serviceaccount, the certificate
// directories) with different files, the bound token of each pod above all, and each sees its
// own pod name as its host name, which is what controller-runtime puts in the leader election
// Lease. The test binary calls it first thing in TestMain.
func RunSandboxIfAsked() {
	if len(os.Args) < 2 || os.Args[1] != sandboxFlag {
		return
	}
	err := runSandbox(os.Args[2:])
	fmt.Fprintln(os.Stderr, "pod sandbox:", err)
	os.Exit(127)
}

// sandboxArgs are the arguments of a sandbox that runs binary with args, in a pod of the given
// host name, with each mount: "<source>:<target>:<ro|rw>".
func sandboxArgs(hostname string, mounts []string, binary string, args []string) []string {
	out := []string{sandboxFlag, "--hostname=" + hostname}
	for _, m := range mounts {
		out = append(out, "--mount="+m)
	}
	return append(append(out, "--", binary), args...)
}

// sandboxAttr is what the sandbox's process is started with: new mount and UTS namespaces.
var sandboxAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWUTS}

func runSandbox(args []string) error {
	var hostname string
	var mounts []string
	for len(args) > 0 && args[0] != "--" {
		switch name, value, _ := strings.Cut(args[0], "="); name {
		case "--hostname":
			hostname = value
		case "--mount":
			mounts = append(mounts, value)
		default:
			return fmt.Errorf("unknown argument %q", args[0])
		}
		args = args[1:]
	}
	if len(args) < 2 {
		return errors.New("no program to run after --")
	}
	if err := syscall.Sethostname([]byte(hostname)); err != nil {
		return fmt.Errorf("setting the host name %s: %w", hostname, err)
	}
	for _, m := range mounts {
		parts := strings.Split(m, ":")
		if len(parts) != 3 {
			return fmt.Errorf("mount %q: want <source>:<target>:<ro|rw>", m)
		}
		source, target := parts[0], filepath.Clean(parts[1])
		if err := os.MkdirAll(target, 0o755); err != nil {
			return err
		}
		if err := syscall.Mount(source, target, "", syscall.MS_BIND, ""); err != nil {
			return fmt.Errorf("mounting %s at %s: %w", source, target, err)
		}
		if parts[2] == "ro" {
			flags := uintptr(syscall.MS_BIND | syscall.MS_REMOUNT | syscall.MS_RDONLY | syscall.MS_NOSUID | syscall.MS_NODEV)
			if err := syscall.Mount("", target, "", flags, ""); err != nil {
				return fmt.Errorf("making %s read-only: %w", target, err)
			}
		}
	}
	binary := args[1]
	return syscall.Exec(binary, append([]string{binary}, args[2:]...), os.Environ())
}
