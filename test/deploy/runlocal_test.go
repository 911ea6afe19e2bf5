package deploy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	"github.com/seedlabs/webhook-operator/internal/scheme"
)

// TestRunLocal builds run-local, runs it as `make run-local` does, uses the cluster through the
// kubeconfig it writes, interrupts it and checks that it cleaned up after itself.
func TestRunLocal(t *testing.T) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run this test through `make test-deploy`, which builds the control plane " +
			"(kube-controller-manager among it) into bin/k8s and points KUBEBUILDER_ASSETS at it")
	}
	g := NewWithT(t)
	root := moduleRoot(t)
	tmp := t.TempDir()

	binary := buildRunLocal(t, root, filepath.Join(tmp, "run-local"))

	kubeconfig := filepath.Join(tmp, "local", "kubeconfig")
	stdoutPath, stderrPath := filepath.Join(tmp, "stdout"), filepath.Join(tmp, "stderr")
	stdout, err := os.Create(stdoutPath)
	g.Expect(err).NotTo(HaveOccurred())
	stderr, err := os.Create(stderrPath)
	g.Expect(err).NotTo(HaveOccurred())
	cmd := exec.Command(binary, "--assets", assets, "--kubeconfig-out", kubeconfig)
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = stdout, stderr
	g.Expect(cmd.Start()).To(Succeed())
	begin := time.Now()
	exited := make(chan struct{})
	var waitErr error
	go func() {
		defer close(exited)
		waitErr = cmd.Wait()
	}()

	var children []process
	t.Cleanup(func() {
		// Stop whatever a failed test left running, then show what run-local said.
		select {
		case <-exited:
		default:
			_ = cmd.Process.Signal(os.Interrupt)
			select {
			case <-exited:
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
			}
		}
		for _, p := range children {
			if p.alive() {
				_ = syscall.Kill(p.pid, syscall.SIGKILL)
			}
		}
		if t.Failed() {
			for _, path := range []string{stdoutPath, stderrPath} {
				if out, err := os.ReadFile(path); err == nil {
					t.Logf("run-local %s:\n%s", filepath.Base(path), tail(string(out), 150))
				}
			}
		}
	})

	logStep := func(step string) { t.Logf("%6.1fs %s", time.Since(begin).Seconds(), step) }

	logStep("waiting for the kubeconfig")
	g.Eventually(func() error {
		select {
		case <-exited:
			return StopTrying(fmt.Sprintf("run-local exited before it was ready: %v", waitErr))
		default:
		}
		_, err := os.Stat(kubeconfig)
		return err
	}).WithTimeout(60 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	info, err := os.Stat(kubeconfig)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o600)), "the kubeconfig holds an admin key")
	g.Expect(os.ReadFile(stdoutPath)).To(ContainSubstring("export KUBECONFIG="+kubeconfig), "the usage block")

	children, err = childrenOf(cmd.Process.Pid)
	g.Expect(err).NotTo(HaveOccurred())
	names := make([]string, 0, len(children))
	for _, p := range children {
		names = append(names, p.name)
	}
	g.Expect(names).To(ConsistOf("etcd", "kube-apiserver", "kube-controller-manager"))

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	restCfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	g.Expect(err).NotTo(HaveOccurred())
	c, err := client.New(restCfg, client.Options{Scheme: scheme.New()})
	g.Expect(err).NotTo(HaveOccurred())

	logStep("creating a Welcome through the API server")
	welcome := &authv1.Welcome{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: metav1.NamespaceDefault},
		Spec:       authv1.WelcomeSpec{Name: "Ada"},
	}
	g.Expect(c.Create(ctx, welcome)).To(Succeed())
	stored := &authv1.Welcome{}
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(welcome), stored)).To(Succeed())
	g.Expect(stored.Spec.Port).To(HaveValue(Equal(int32(8088))), "spec.port defaulted by the mutating webhook")

	logStep("waiting for the controller's Deployment and the ReplicaSet kube-controller-manager makes of it")
	deployment := &appsv1.Deployment{}
	g.Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(welcome), deployment)).To(Succeed())
		g.Expect(metav1.IsControlledBy(deployment, stored)).To(BeTrue(), "owned by the Welcome")
	}).WithTimeout(20 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) {
		replicaSets := &appsv1.ReplicaSetList{}
		g.Expect(c.List(ctx, replicaSets, client.InNamespace(welcome.Namespace))).To(Succeed())
		g.Expect(replicaSets.Items).To(ContainElement(Satisfy(func(rs appsv1.ReplicaSet) bool {
			return metav1.IsControlledBy(&rs, deployment)
		})))
	}).WithTimeout(20 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())

	logStep("deleting the Welcome and waiting for the garbage collector to delete its Deployment")
	g.Expect(c.Delete(ctx, stored, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(deployment), &appsv1.Deployment{}))
	}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(BeTrue())

	logStep("interrupting run-local")
	g.Expect(cmd.Process.Signal(os.Interrupt)).To(Succeed())
	g.Eventually(exited).WithTimeout(30*time.Second).Should(BeClosed(), "run-local exits after SIGINT")
	g.Expect(waitErr).NotTo(HaveOccurred(), "run-local exits 0 after SIGINT")
	logStep("run-local exited")
	g.Expect(kubeconfig).NotTo(BeAnExistingFile(), "the kubeconfig is removed")
	for _, p := range children {
		g.Eventually(p.alive).WithTimeout(5*time.Second).WithPolling(100*time.Millisecond).
			Should(BeFalse(), "%s (pid %d) is still running", p.name, p.pid)
	}
}

// buildRunLocal builds the command into out from the module root, with the race detector when this
// test has it, so the build reuses the packages compiled for the test.
func buildRunLocal(t *testing.T, root, out string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	args := []string{"build", "-o", out}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.CommandContext(ctx, "go", append(args, "./cmd/run-local")...)
	build.Dir = root
	begin := time.Now()
	if output, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, output)
	}
	t.Logf("built run-local in %s", time.Since(begin).Round(100*time.Millisecond))
	return out
}

// process identifies a process across PID reuse by its start time.
type process struct {
	pid       int
	name      string
	startTime string
}

// childrenOf lists the processes whose parent is ppid, from /proc.
func childrenOf(ppid int) ([]process, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var children []process
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		state, parent, startTime, err := readStat(pid)
		if err != nil || parent != ppid || state == "Z" {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		argv0, _, _ := strings.Cut(string(cmdline), "\x00")
		children = append(children, process{pid: pid, name: filepath.Base(argv0), startTime: startTime})
	}
	return children, nil
}

// alive reports whether the process still runs: it exists, is the same process, and is not a
// zombie waiting to be reaped.
func (p process) alive() bool {
	state, _, startTime, err := readStat(p.pid)
	return err == nil && startTime == p.startTime && state != "Z"
}

// readStat returns the state, parent PID and start time of pid from /proc/<pid>/stat.
func readStat(pid int) (state string, ppid int, startTime string, err error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, "", err
	}
	// The command name in parentheses may hold spaces; the fields after it are fixed.
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return "", 0, "", errors.New("malformed /proc stat")
	}
	fields := strings.Fields(string(stat[i+1:]))
	if len(fields) < 20 {
		return "", 0, "", errors.New("short /proc stat")
	}
	ppid, err = strconv.Atoi(fields[1])
	// Fields 3 (state), 4 (ppid) and 22 (starttime) of proc(5).
	return fields[0], ppid, fields[19], err
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
