//go:build e2e

// Package e2e tests the operator as users install it: `make images` and `make deploy` onto a
// cluster whose control plane, node and cert-manager all run for real, every pod a container of
// an image built from source. See test/e2e/cluster for how the cluster runs, and `make test-e2e`
// for how it is built.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/seedlabs/webhook-operator/internal/scheme"
	"github.com/seedlabs/webhook-operator/test/docrun"
	"github.com/seedlabs/webhook-operator/test/e2e/cluster"
	"github.com/seedlabs/webhook-operator/test/fixtures"
	"github.com/seedlabs/webhook-operator/test/testenv"
)

// TestMain runs the suite inside namespaces of its own, under an init that sets them up and
// cleans up after it: see cluster.RunInNamespaces and cluster.RunInitIfAsked.
func TestMain(m *testing.M) {
	cluster.RunInitIfAsked()
	if !cluster.InNamespaces() {
		code, err := cluster.RunInNamespaces()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(code)
	}
	os.Exit(m.Run())
}

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	// Gomega polls every 10 ms unless told otherwise: on 2 cores, a few specs' polls of the API
	// server would take the CPU kubelet and kube-apiserver need. Nothing here is timed closer
	// than this; a spec that needs finer timing says so.
	SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	SetDefaultConsistentlyPollingInterval(200 * time.Millisecond)
	RunSpecs(t, "Deployed operator end to end")
}

// settings are what `make test-e2e` hands the suite.
type settings struct {
	root      string // the repository, where `make deploy` runs
	assets    string // etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kube-proxy and kubectl
	kustomize string
	helm      string
	cosign    string // signs the release the registry spec publishes, and verifies it
	plugin    string // the kubectl plugin kubectl-webhook_operator
	image     string // the manager's image, which `make images` built and `make deploy IMG=` sets
	welcome   string // the welcome-web image `make images` built
	memcached string // the memcached image the suite built from Debian's package
	echo      string // the e2e-echo image, without its tag (v1 or v2)
	caller    string // the e2e-caller image, which calls the webhook port from a pod
	images    []string
	version   string // what make stamped into the binaries
	commit    string
	artifacts string // logs and cluster state, kept after the run
	previous  previousVersion
	binaries  cluster.Binaries
	cluster   cluster.Options
}

// previousVersion is the version the upgrade spec starts from: a tree of an earlier commit, with
// its Makefile and config/, and the image of its manager.
type previousVersion struct {
	tree, image, commit string
	controllerGen       string // the pinned controller-gen, which that tree's make deploy runs too
	// The first earlier commit with a chart, and its manager's image, for the helm upgrade spec.
	chartTree, chartImage, chartCommit string
}

func readSettings() settings {
	get := func(name string) string {
		v := os.Getenv(name)
		ExpectWithOffset(2, v).NotTo(BeEmpty(), "%s is not set: run the suite with 'make test-e2e', which builds what it needs", name)
		return v
	}
	root, err := testenv.ModuleRoot()
	Expect(err).NotTo(HaveOccurred())
	s := settings{
		root:      root,
		assets:    get("KUBEBUILDER_ASSETS"),
		kustomize: get("KUSTOMIZE"),
		helm:      get("E2E_HELM"),
		cosign:    get("E2E_COSIGN"),
		plugin:    get("E2E_KUBECTL_PLUGIN"),
		image:     get("E2E_IMG"),
		welcome:   get("E2E_WELCOME_IMG"),
		memcached: get("E2E_MEMCACHED_IMG"),
		echo:      get("E2E_ECHO_IMG"),
		caller:    get("E2E_CALLER_IMG"),
		images:    strings.Fields(get("E2E_IMAGES")),
		version:   get("E2E_VERSION"),
		commit:    get("E2E_COMMIT"),
		artifacts: get("E2E_ARTIFACTS"),
	}
	s.previous = previousVersion{
		tree:          get("E2E_PREVIOUS_TREE"),
		image:         get("E2E_PREVIOUS_IMG"),
		commit:        get("E2E_PREVIOUS_COMMIT"),
		controllerGen: get("E2E_CONTROLLER_GEN"),
		chartTree:     get("E2E_PREVIOUS_CHART_TREE"),
		chartImage:    get("E2E_PREVIOUS_CHART_IMG"),
		chartCommit:   get("E2E_PREVIOUS_CHART_COMMIT"),
	}
	nodeBin := get("E2E_NODE_BIN")
	s.binaries = cluster.Binaries{
		Etcd:                  filepath.Join(s.assets, "etcd"),
		KubeAPIServer:         filepath.Join(s.assets, "kube-apiserver"),
		KubeControllerManager: filepath.Join(s.assets, "kube-controller-manager"),
		KubeScheduler:         filepath.Join(s.assets, "kube-scheduler"),
		Kubelet:               filepath.Join(s.assets, "kubelet"),
		KubeProxy:             filepath.Join(s.assets, "kube-proxy"),
		NodeTools:             nodeBin,
		Runc:                  get("E2E_RUNC"),
		CertManagerCRDs:       get("E2E_CERT_MANAGER_CRDS"),
	}
	s.cluster = cluster.Options{Images: s.images, CertManagerImage: get("E2E_CERT_MANAGER_IMG")}
	return s
}

var (
	cfg settings
	// kube is the running cluster.
	kube *cluster.Cluster
	// k8s is a cluster-admin client that knows the operator's types.
	k8s client.Client
)

var _ = BeforeSuite(func(ctx SpecContext) {
	cfg = readSettings()
	Expect(os.RemoveAll(cfg.artifacts)).To(Succeed())
	Expect(os.MkdirAll(cfg.artifacts, 0o755)).To(Succeed())

	start := time.Now()
	var err error
	kube, err = cluster.Start(ctx, cfg.binaries, cfg.artifacts, cfg.cluster)
	Expect(err).NotTo(HaveOccurred())
	AddReportEntry("cluster start", time.Since(start).Round(time.Millisecond).String())
	DeferCleanup(func() { Expect(kube.Stop()).To(Succeed()) })

	// The suite's clients log through Ginkgo, with the spec they belong to.
	logf.SetLogger(GinkgoLogr)
	s := scheme.New()
	Expect(apiextensionsv1.AddToScheme(s)).To(Succeed())
	// Each warning once: the upgrade specs write at a deprecated version for minutes.
	config := rest.CopyConfig(kube.Config)
	config.WarningHandlerWithContext = logf.NewKubeAPIWarningLogger(logf.KubeAPIWarningLoggerOptions{Deduplicate: true})
	k8s, err = client.New(config, client.Options{Scheme: s})
	Expect(err).NotTo(HaveOccurred())
}, NodeTimeout(3*time.Minute))

// ReportAfterEach points at the logs of every process when a spec fails.
var _ = ReportAfterEach(func(report SpecReport) {
	if report.Failed() && kube != nil {
		AddReportEntry("logs", kube.LogDir)
		if events := operatorWarnings(report.StartTime); events != "" {
			AddReportEntry("warnings in "+fixtures.Namespace+" during the spec", events)
		}
		if lines := managerMilestones(kube.LogDir, report.StartTime); lines != "" {
			AddReportEntry("the managers' errors, elections and stops during the spec", lines)
		}
	}
})

// managerMilestones are what the managers' logs the suite recorded (recordManagers) since start
// say a replica went through: errors, leader elections, stops; the last 20, one short line each.
func managerMilestones(logDir string, start time.Time) string {
	files, _ := filepath.Glob(filepath.Join(logDir, "managers-*", "*.log"))
	type line struct {
		at   time.Time
		text string
	}
	var lines []line
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		pod := strings.TrimSuffix(filepath.Base(file), ".log")
		pod = pod[strings.LastIndex(pod, "-")+1:]
		for _, text := range strings.Split(string(data), "\n") {
			var entry struct {
				Level  string    `json:"level"`
				TS     time.Time `json:"ts"`
				Logger string    `json:"logger"`
				Msg    string    `json:"msg"`
				Error  string    `json:"error"`
			}
			if json.Unmarshal([]byte(text), &entry) != nil || entry.TS.Before(start.Truncate(time.Second)) {
				continue
			}
			if entry.Level == "error" || entry.Logger == "leaderelection" || entry.Logger == "admission-policy" ||
				strings.HasPrefix(entry.Msg, "Stopping and waiting for non leader") {
				lines = append(lines, line{entry.TS, strings.TrimSuffix(fmt.Sprintf("%s %s %s: %s %.120s", entry.TS.Format("15:04:05"), pod, entry.Level, entry.Msg, entry.Error), " ")})
			}
		}
	}
	slices.SortStableFunc(lines, func(a, b line) int { return a.at.Compare(b.at) })
	var out []string
	for _, l := range lines[max(0, len(lines)-20):] {
		out = append(out, l.text)
	}
	return strings.Join(out, "\n")
}

// commonWarnings are the reasons of warnings every pod of the suite's cluster gets: no DNS server,
// cgroup v1.
var commonWarnings = []string{"MissingClusterDNS", "CgroupV1"}

// operatorWarnings are the Warning Events of the operator's namespace since start (a failed
// readiness probe, a container restarted, an eviction refused), the last 15, a line each: what a
// failed spec's output must carry, as CI keeps no logs.
func operatorWarnings(start time.Time) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list := &corev1.EventList{}
	if err := k8s.List(ctx, list, client.InNamespace(fixtures.Namespace), client.MatchingFields{"type": corev1.EventTypeWarning}); err != nil {
		return "listing them: " + err.Error()
	}
	last := func(e corev1.Event) time.Time {
		return slices.MaxFunc([]time.Time{e.EventTime.Time, e.FirstTimestamp.Time, e.LastTimestamp.Time, ptr.Deref(e.Series, corev1.EventSeries{}).LastObservedTime.Time}, time.Time.Compare)
	}
	var lines []string
	for _, e := range list.Items {
		if at := last(e); !at.Before(start) && !slices.Contains(commonWarnings, e.Reason) {
			lines = append(lines, fmt.Sprintf("%s %s/%s %s (x%d): %.160s", at.Format("15:04:05"), e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, max(e.Count, 1), e.Message))
		}
	}
	slices.Sort(lines)
	return strings.Join(lines[max(0, len(lines)-15):], "\n")
}

// kubectl runs the kubectl built with the cluster as the admin, returning stdout and stderr.
func kubectl(ctx context.Context, args ...string) (string, string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(cfg.assets, "kubectl"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kube.Kubeconfig)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// kubectlPlugin runs kubectl as kubectl, with the operator's plugin on PATH, as a user who
// installed it would.
func kubectlPlugin(ctx context.Context, args ...string) (string, string, error) {
	dir, err := os.MkdirTemp("", "kubectl-plugins-")
	if err != nil {
		return "", "", err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if err := os.Symlink(cfg.plugin, filepath.Join(dir, filepath.Base(cfg.plugin))); err != nil {
		return "", "", err
	}
	cmd := exec.CommandContext(ctx, filepath.Join(cfg.assets, "kubectl"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kube.Kubeconfig, "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	return stdout.String(), stderr.String(), err
}

// makeTarget runs `make <target> [variables]` in the repository as a user would, with the
// cluster's kubeconfig and the pinned kustomize and the built kubectl.
func makeTarget(ctx context.Context, target string, variables ...string) (string, error) {
	return makeIn(ctx, cfg.root, target, append([]string{"IMG=" + cfg.image}, variables...)...)
}

// makeIn runs `make <target> [variables]` in the tree dir as a user would: with the cluster's
// kubeconfig, the pinned kustomize, the built kubectl and the operand images the suite built.
func makeIn(ctx context.Context, dir, target string, variables ...string) (string, error) {
	return runMake(ctx, dir, nil, append([]string{target, "WELCOME_IMG=" + cfg.welcome, "MEMCACHED_IMG=" + cfg.memcached,
		"KUSTOMIZE=" + cfg.kustomize, "KUBECTL=" + filepath.Join(cfg.assets, "kubectl")}, variables...)...)
}

// runMake runs make with args in the tree dir as a user would: with the cluster's kubeconfig and
// env.
func runMake(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "make", append([]string{"--no-print-directory", "-C", dir}, args...)...)
	cmd.Env = append(append(docrun.WithoutMakeVariables(os.Environ()), "KUBECONFIG="+kube.Kubeconfig), env...)
	// On timeout, stop make and the kubectl and kustomize it runs, not make alone.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	return string(out), err
}
