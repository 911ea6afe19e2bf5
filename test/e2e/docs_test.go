//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/seedlabs/webhook-operator/test/fixtures"
	"github.com/seedlabs/webhook-operator/test/testenv"
	"github.com/seedlabs/webhook-operator/test/testregistry"
)

// docPages are the pages whose shell blocks the docs spec runs, in the order of the page, each as
// one script (runnable): every ```sh block of the sections named, or of the page when none is.
var docPages = []struct {
	page     string
	sections []string
}{
	{page: "README.md", sections: []string{"Quick start"}},
	{page: "docs/install.md"},
}

// runLocalKubeconfig is where make run-local writes its kubeconfig once everything answers, and
// removes it on exit.
const runLocalKubeconfig = "bin/local/kubeconfig"

// runnable is script as the docs spec runs it, as a reader would use it:
//   - a command commented "# refused..." must be refused by admission: it fails the script if it
//     succeeds, or fails for another reason (a typo in a file name, say);
//   - a command commented "# terminal 1..." keeps running while the reader goes on in another
//     terminal: it runs in the background, its output in a file, and the script goes on once make
//     run-local has written its kubeconfig, as the reader waits for it to say ready.
func runnable(script string) string {
	var out strings.Builder
	for _, line := range strings.Split(strings.TrimRight(script, "\n"), "\n") {
		command, comment, _ := strings.Cut(line, " # ")
		command, comment = strings.TrimSpace(command), strings.TrimSpace(comment)
		switch {
		case strings.HasPrefix(comment, "refused"):
			quoted := strings.ReplaceAll(command, "'", "")
			fmt.Fprintf(&out, "if refusal=$(%s 2>&1); then echo 'admitted, though the docs say refused: %s' >&2; exit 1; fi\n", command, quoted)
			fmt.Fprintf(&out, "echo \"$refusal\"; grep -qE 'denied the request|is invalid' <<<\"$refusal\" || { echo 'failed, but admission did not refuse it: %s' >&2; exit 1; }\n", quoted)
		case strings.HasPrefix(comment, "terminal 1"):
			fmt.Fprintf(&out, "%s > terminal-1.log 2>&1 &\n", command)
			fmt.Fprintf(&out, "timeout 300 bash -c 'until [ -f %s ]; do sleep 1; done' || { cat terminal-1.log >&2; exit 1; }\n", runLocalKubeconfig)
		default:
			out.WriteString(line + "\n")
		}
	}
	return out.String()
}

// shellBlock is a ```sh block of a page.
type shellBlock struct {
	page    string
	line    int // of the opening fence
	section string
	script  string
}

// shellBlocks reads the ```sh blocks of page, under the repository root.
func shellBlocks(root, page string) ([]shellBlock, error) {
	data, err := os.ReadFile(filepath.Join(root, page))
	if err != nil {
		return nil, err
	}
	var (
		blocks  []shellBlock
		current *shellBlock
		section string
	)
	scanner := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; scanner.Scan(); line++ {
		text := scanner.Text()
		switch {
		case current != nil && strings.HasPrefix(text, "```"):
			blocks = append(blocks, *current)
			current = nil
		case current != nil:
			current.script += text + "\n"
		case text == "```sh":
			current = &shellBlock{page: page, line: line, section: section}
		case strings.HasPrefix(text, "## "):
			section = strings.TrimPrefix(text, "## ")
		}
	}
	if current != nil {
		return nil, fmt.Errorf("%s: the block of line %d is not closed", page, current.line)
	}
	return blocks, scanner.Err()
}

// docsRelease is the version the docs spec publishes to the registry's public repositories, and
// substitutes for <tag> and <X.Y.Z>.
const docsRelease = "v0.1.0"

var _ = Describe("The quick start and the install commands of the docs, run as written (README.md, docs/install.md)", Ordered, func() {
	root, err := testenv.ModuleRoot()
	if err != nil {
		panic(err)
	}
	var blocks []shellBlock
	for _, p := range docPages {
		found, err := shellBlocks(root, p.page)
		if err != nil {
			panic(err)
		}
		for _, b := range found {
			if len(p.sections) == 0 || slices.Contains(p.sections, b.section) {
				blocks = append(blocks, b)
			}
		}
	}

	var (
		// tree is a copy of the repository's files, as a reader's clone would be, with the tools
		// of bin/ but not its images, which other specs read.
		tree string
		// env is the reader's environment: kubectl and helm on PATH, the cluster's kubeconfig,
		// docker's credentials for the registry (as after docker login), and its CA trusted.
		env         []string
		substitutes *strings.Replacer
	)

	BeforeAll(func(ctx SpecContext) {
		reg := kube.Registry
		dir := filepath.Join(cfg.artifacts, "docs")
		Expect(os.RemoveAll(dir)).To(Succeed())
		tree = filepath.Join(dir, "tree")
		Expect(copyTrackedFiles(ctx, cfg.root, tree)).To(Succeed())
		Expect(linkTools(filepath.Join(cfg.root, "bin"), filepath.Join(tree, "bin"))).To(Succeed())
		path := filepath.Join(dir, "path")
		Expect(os.MkdirAll(path, 0o755)).To(Succeed())
		for name, target := range map[string]string{"kubectl": filepath.Join(cfg.assets, "kubectl"), "helm": cfg.helm} {
			Expect(os.Symlink(target, filepath.Join(path, name))).To(Succeed())
		}
		// The machine's roots and the registry's CA, as a reader who trusts it has them.
		roots, err := os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
		if err != nil && !os.IsNotExist(err) {
			Expect(err).NotTo(HaveOccurred())
		}
		bundle := filepath.Join(dir, "ca-bundle.pem")
		Expect(os.WriteFile(bundle, append(roots, reg.CAPEM...), 0o644)).To(Succeed())
		helmHome := filepath.Join(dir, "helm")
		env = []string{
			"PATH=" + path + string(os.PathListSeparator) + os.Getenv("PATH"),
			"KUBECONFIG=" + kube.Kubeconfig,
			"DOCKER_CONFIG=" + reg.ClientConfig,
			"SSL_CERT_FILE=" + bundle,
			"HELM_CONFIG_HOME=" + filepath.Join(helmHome, "config"),
			"HELM_CACHE_HOME=" + filepath.Join(helmHome, "cache"),
			"HELM_DATA_HOME=" + filepath.Join(helmHome, "data"),
		}
		registry := reg.Host + "/" + strings.TrimSuffix(testregistry.PublicPrefix, "/")
		substitutes = strings.NewReplacer(
			"<registry host>", reg.Host, "<registry>", registry, "<user>", testregistry.User, "<token>", testregistry.Password,
			"<tag>", docsRelease, "<X.Y.Z>", strings.TrimPrefix(docsRelease, "v"), "<ca.pem>", reg.CAFile())

		By("the release the Helm chart is installed from: make release and make publish to " + registry)
		release := filepath.Join(dir, "release")
		out, err := runMake(ctx, tree, reg.ClientEnv(), "release", "VERSION="+docsRelease, "REGISTRY="+registry, "RELEASE_DIR="+release, "PLUGIN_PLATFORMS=linux/amd64")
		Expect(err).NotTo(HaveOccurred(), "make release:\n%s", out)
		out, err = runMake(ctx, tree, reg.ClientEnv(), "publish", "VERSION="+docsRelease, "REGISTRY="+registry, "RELEASE_DIR="+release)
		Expect(err).NotTo(HaveOccurred(), "make publish:\n%s", out)
	}, NodeTimeout(5*time.Minute))

	for _, block := range blocks {
		It(fmt.Sprintf("runs %s line %d (%s)", block.page, block.line, block.section), func(ctx SpecContext) {
			DeferCleanup(resetAfterDocs, NodeTimeout(5*time.Minute))
			script := runnable(substitutes.Replace(block.script))
			AddReportEntry(fmt.Sprintf("%s line %d", block.page, block.line), script)
			start := time.Now()
			cmd := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", script)
			cmd.Dir = tree
			cmd.Env = append(withoutMakeVariables(os.Environ()), env...)
			// What a reader types at a password prompt: helm registry login --password-stdin.
			cmd.Stdin = strings.NewReader(testregistry.Password + "\n")
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
			cmd.WaitDelay = 10 * time.Second
			out, err := cmd.CombinedOutput()
			// What runs on in the background (make run-local) stops as at Ctrl-C.
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
			Eventually(func() error { _, err := os.Stat(filepath.Join(tree, runLocalKubeconfig)); return err }).
				WithContext(ctx).WithTimeout(time.Minute).Should(Satisfy(os.IsNotExist), "make run-local did not stop")
			Expect(err).NotTo(HaveOccurred(), "%s line %d, as run:\n%s\n\nits output:\n%s", block.page, block.line, script, out)
			AddReportEntry(fmt.Sprintf("%s line %d: took", block.page, block.line), time.Since(start).Round(time.Millisecond).String())
		}, SpecTimeout(8*time.Minute))
	}
})

// resetAfterDocs puts the cluster back as the docs spec found it, whatever a block left: the
// release uninstalled, the webhook configurations (which would judge the next specs' objects) and
// the namespaces the blocks create deleted, and the operator's CRDs with them.
func resetAfterDocs(ctx SpecContext) {
	out, err := helm(ctx, "uninstall", release, "--namespace", fixtures.Namespace, "--ignore-not-found", "--wait", "--timeout", "2m")
	Expect(err).NotTo(HaveOccurred(), "helm uninstall:\n%s", out)
	for _, configuration := range []client.Object{
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: fixtures.MutatingWebhookConfiguration}},
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: fixtures.ValidatingWebhookConfiguration}},
	} {
		Expect(client.IgnoreNotFound(k8s.Delete(ctx, configuration))).To(Succeed())
	}
	deleteKeptCRDs(ctx)
	for _, name := range []string{fixtures.Namespace, "team-a"} {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		Expect(client.IgnoreNotFound(k8s.Delete(ctx, ns))).To(Succeed())
		Eventually(func() error { return k8s.Get(ctx, client.ObjectKeyFromObject(ns), ns) }).
			WithContext(ctx).WithTimeout(2 * time.Minute).Should(Satisfy(apierrors.IsNotFound))
	}
}

// copyTrackedFiles copies the files git tracks in root, as they are in the working tree, to dir.
func copyTrackedFiles(ctx context.Context, root, dir string) error {
	out, err := exec.CommandContext(ctx, "git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		return fmt.Errorf("git ls-files: %w", err)
	}
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		from, to := filepath.Join(root, name), filepath.Join(dir, name)
		info, err := os.Lstat(from)
		if os.IsNotExist(err) {
			continue // deleted in the working tree
		}
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(from)
			if err != nil {
				return err
			}
			if err := os.Symlink(target, to); err != nil {
				return err
			}
			continue
		}
		data, err := os.ReadFile(from)
		if err != nil {
			return err
		}
		if err := os.WriteFile(to, data, info.Mode().Perm()); err != nil {
			return err
		}
	}
	// make reads the commit the tree is at (COMMIT), as in a clone.
	return os.Symlink(filepath.Join(root, ".git"), filepath.Join(dir, ".git"))
}

// linkTools links each entry of the tools directory bin into dir but the images make images
// writes, which other specs read, so that make builds none of the tools again.
func linkTools(bin, dir string) error {
	entries, err := os.ReadDir(bin)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name() == "images" || e.Name() == "local" {
			continue
		}
		if err := os.Symlink(filepath.Join(bin, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}
