//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/seedlabs/webhook-operator/test/docrun"
	"github.com/seedlabs/webhook-operator/test/fixtures"
	"github.com/seedlabs/webhook-operator/test/testenv"
	"github.com/seedlabs/webhook-operator/test/testregistry"
)

// installPage is the page whose every ```sh block the docs spec runs, in the order of the page.
const installPage = "docs/install.md"

// docsRelease is the version the docs spec publishes to the registry's public repositories, and
// substitutes for <tag> and <X.Y.Z>. It is the VERSION of the blocks' make too, so that the images
// they build are their own: an image of the same ID as one the suite imported (make images of the
// same VERSION and commit) would, once pulled, carry the registry's digest for every pod of it.
const docsRelease = "v0.1.0-docs"

var _ = Describe("The install commands of the docs, run as written (docs/install.md)", Ordered, func() {
	root, err := testenv.ModuleRoot()
	if err != nil {
		panic(err)
	}
	// README.md's quick start runs against make run-local, in test/deploy.
	blocks, err := docrun.Blocks(root, installPage)
	if err != nil {
		panic(err)
	}

	var (
		// tree is a copy of the repository's files, as a reader's clone would be, with the tools
		// of bin/ but not its images, which other specs read.
		tree string
		// env is the reader's environment: kubectl and helm on PATH, the cluster's kubeconfig,
		// docker's credentials for the registry (as after docker login), and its CA trusted; and
		// make's VERSION, docsRelease.
		env         []string
		substitutes *strings.Replacer
	)

	BeforeAll(func(ctx SpecContext) {
		reg := kube.Registry
		dir := filepath.Join(cfg.artifacts, "docs")
		Expect(os.RemoveAll(dir)).To(Succeed())
		tree = filepath.Join(dir, "tree")
		Expect(docrun.CopyTrackedFiles(ctx, cfg.root, tree)).To(Succeed())
		Expect(docrun.LinkTools(filepath.Join(cfg.root, "bin"), filepath.Join(tree, "bin"))).To(Succeed())
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
			"VERSION=" + docsRelease,
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
		It(fmt.Sprintf("runs %s line %d (%s)", block.Page, block.Line, block.Section), func(ctx SpecContext) {
			// The blocks create the operator's namespace and team-a.
			DeferCleanup(removeRelease, []string{fixtures.Namespace, "team-a"}, NodeTimeout(5*time.Minute))
			script := docrun.Runnable(substitutes.Replace(block.Script))
			AddReportEntry(fmt.Sprintf("%s line %d", block.Page, block.Line), script)
			start := time.Now()
			// The reader types the registry's password at helm registry login --password-stdin.
			out, err := docrun.Run(ctx, tree, env, testregistry.Password+"\n", script)
			Expect(err).NotTo(HaveOccurred(), "%s line %d, as run:\n%s\n\nits output:\n%s", block.Page, block.Line, script, out)
			AddReportEntry(fmt.Sprintf("%s line %d: took", block.Page, block.Line), time.Since(start).Round(time.Millisecond).String())
		}, SpecTimeout(8*time.Minute))
	}
})
