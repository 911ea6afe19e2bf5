//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	cachev1 "github.com/seedlabs/webhook-operator/api/cache/v1"
	"github.com/seedlabs/webhook-operator/api/conditions"
	"github.com/seedlabs/webhook-operator/internal/image"
	"github.com/seedlabs/webhook-operator/test/fixtures"
	"github.com/seedlabs/webhook-operator/test/testregistry"
)

// pullSecret is the kubernetes.io/dockerconfigjson Secret, in each namespace that pulls from the
// suite's registry, holding its user's password.
const pullSecret = "registry-credentials"

// createPullSecret creates pullSecret in namespace.
func createPullSecret(ctx context.Context, namespace string) {
	ExpectWithOffset(1, k8s.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: pullSecret},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: kube.Registry.DockerConfigJSON()},
	})).To(Succeed())
}

// cosignPassword is the password of the spec's signing keys, which cosign reads from
// COSIGN_PASSWORD.
const cosignPassword = "a-release-key-password"

// cosign runs the cosign make test-e2e built in dir (the test's own when ""), as a user of a
// release would: with the registry's credentials and CA. It returns stdout and stderr.
func cosign(ctx context.Context, dir string, args ...string) (string, string, error) {
	cmd := exec.CommandContext(ctx, cfg.cosign, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), kube.Registry.ClientEnv()...), "COSIGN_PASSWORD="+cosignPassword)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// inTotoStatement is an in-toto statement as cosign verify-attestation prints it, in the payload
// of a DSSE envelope per line.
type inTotoStatement struct {
	PredicateType string `json:"predicateType"`
	Subject       []struct {
		Name   string            `json:"name"`
		Digest map[string]string `json:"digest"`
	} `json:"subject"`
	Predicate map[string]any `json:"predicate"`
}

// inTotoStatements decodes the envelopes cosign verify-attestation printed.
func inTotoStatements(out string) []inTotoStatement {
	var statements []inTotoStatement
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var envelope struct {
			Payload []byte `json:"payload"`
		}
		ExpectWithOffset(1, json.Unmarshal([]byte(line), &envelope)).To(Succeed(), line)
		var s inTotoStatement
		ExpectWithOffset(1, json.Unmarshal(envelope.Payload, &s)).To(Succeed(), string(envelope.Payload))
		statements = append(statements, s)
	}
	return statements
}

// createNamespace creates a namespace that enforces the restricted pod security standard, which
// the spec's end deletes.
func createNamespace(ctx context.Context, name string) string {
	ns := restrictedNamespace(name)
	ExpectWithOffset(1, k8s.Create(ctx, ns)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(k8s.Delete(ctx, ns))).To(Succeed()) })
	return name
}

// pushCopy pushes a copy of the suite's image ref to the suite's registry as to: each platform's
// image with the label dev.seedlabs.e2e.copy=to in its configuration, so of another image ID than
// the image the node imported. (Pulled, an image of the same ID would carry the registry's digest
// for the pods of the imported name too.)
func pushCopy(ctx context.Context, ref, to string) {
	idx, _, err := image.ReadLayout(layoutOf(ref))
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	manifest, err := idx.IndexManifest()
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	var copied v1.ImageIndex = empty.Index
	copied = mutate.IndexMediaType(copied, manifest.MediaType)
	for _, desc := range manifest.Manifests {
		img, err := idx.Image(desc.Digest)
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
		config, err := img.ConfigFile()
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
		config = config.DeepCopy()
		if config.Config.Labels == nil {
			config.Config.Labels = map[string]string{}
		}
		config.Config.Labels["dev.seedlabs.e2e.copy"] = to
		img, err = mutate.ConfigFile(img, config)
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
		copied = mutate.AppendManifests(copied, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: desc.Platform}})
	}
	_, err = image.Push(ctx, copied, to, false, kube.Registry.RemoteOptions(ctx)...)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
}

var _ = Describe("The operator published to a registry with TLS and basic auth, and installed from it with Helm in self-signed mode (make release, make publish, helm install oci://, uninstall)", Ordered, func() {
	// releaseVersion is the version the spec releases and publishes.
	const releaseVersion = "v0.1.0-e2e"
	var (
		rec *podRecorder
		reg *testregistry.Registry
		// registryPath is where the release's images and chart go, as REGISTRY names it.
		registryPath string
		// reads are the registry's manifest reads by repository before the install.
		reads map[string]int
		// releaseDir is what make release wrote; keys holds the key pair it was signed with,
		// cosign.key and cosign.pub.
		releaseDir, keys string
	)
	repositories := []string{"seedlabs/webhook-operator", "seedlabs/welcome-web", "seedlabs/memcached", "private/echo"}
	read := func(repository string) int { return reg.ManifestReads(repository) - reads[repository] }

	BeforeAll(func(ctx SpecContext) {
		reg = kube.Registry
		registryPath = reg.Host + "/seedlabs"
		releaseDir = filepath.Join(cfg.artifacts, "release")
		keys = filepath.Join(cfg.artifacts, "signing")
		Expect(os.MkdirAll(keys, 0o700)).To(Succeed())
		out, _, err := cosign(ctx, keys, "generate-key-pair")
		Expect(err).NotTo(HaveOccurred(), "cosign generate-key-pair:\n%s", out)

		By("make release and make publish, signed, with the registry's credentials and CA as docker and Helm keep them")
		start := time.Now()
		signing := []string{"SIGNING_KEY=" + filepath.Join(keys, "cosign.key"), "COSIGN=" + cfg.cosign}
		env := append(reg.ClientEnv(), "COSIGN_PASSWORD="+cosignPassword)
		out, err = runMake(ctx, cfg.root, env, append([]string{"release", "VERSION=" + releaseVersion, "REGISTRY=" + registryPath, "RELEASE_DIR=" + releaseDir,
			"PLUGIN_PLATFORMS=linux/amd64", "KUSTOMIZE=" + cfg.kustomize, "HELM=" + cfg.helm}, signing...)...)
		Expect(err).NotTo(HaveOccurred(), "make release:\n%s", out)
		out, err = runMake(ctx, cfg.root, env, append([]string{"publish", "VERSION=" + releaseVersion, "REGISTRY=" + registryPath, "RELEASE_DIR=" + releaseDir,
			"HELM=" + cfg.helm}, signing...)...)
		Expect(err).NotTo(HaveOccurred(), "make publish:\n%s", out)
		AddReportEntry("make release, make publish, signed", time.Since(start).Round(time.Millisecond).String())
		// The operator's default memcached is a public image, which nothing here can pull; a
		// private image of the suite's own stands for a tenant's.
		pushCopy(ctx, cfg.memcached, registryPath+"/memcached:debian")
		pushCopy(ctx, cfg.echo+":v1", reg.Host+"/private/echo:v1")
		reads = map[string]int{}
		for _, r := range repositories {
			reads[r] = reg.ManifestReads(r)
		}

		By("helm registry login, then helm install oci:// with the pull secret")
		out, err = helm(ctx, "registry", "login", reg.Host, "--username", testregistry.User, "--password", testregistry.Password, "--ca-file", reg.CAFile())
		Expect(err).NotTo(HaveOccurred(), "helm registry login:\n%s", out)
		rec = recordManagers("managers-helm-registry")
		createReleaseNamespace(ctx)
		createPullSecret(ctx, fixtures.Namespace)
		helmInstallArgs(ctx, "helm install oci:// (self-signed, every image from the registry)",
			"oci://"+registryPath+"/charts/webhook-operator", "--version", strings.TrimPrefix(releaseVersion, "v"), "--ca-file", reg.CAFile(),
			"--set", "certificates.mode=self-signed", "--set", "imagePullSecrets[0].name="+pullSecret,
			"--set", "operands.memcachedImage="+registryPath+"/memcached:debian")
	}, NodeTimeout(8*time.Minute))

	AfterEach(func() {
		Expect(rec.exits()).To(BeEmpty(), "manager containers exited on their own")
	})

	It("installs: every replica pulled from the registry and ready, serving the manager's own certificate, its CA injected, admission served", func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			s := &corev1.Secret{}
			g.Expect(k8s.Get(ctx, selfSignedSecret, s)).To(Succeed())
			g.Expect(s.Data).To(HaveKey("ca.crt"))
			bundles, err := caBundles(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(bundles).To(HaveEach(Equal(s.Data["ca.crt"])))
			for _, pod := range expectManagerReady(ctx, g) {
				served, err := servedCertificate(pod.Status.PodIP, s.Data["ca.crt"])
				g.Expect(err).NotTo(HaveOccurred(), "pod %s", pod.Name)
				g.Expect(served.Raw).To(Equal(parseCertificate(s.Data["tls.crt"]).Raw), "pod %s", pod.Name)
			}
			expectAdmissionServed(ctx, g, "default")
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		for _, pod := range managerPods(ctx, Default) {
			Expect(pod.Spec.Containers[0].Image).To(HavePrefix(registryPath+"/webhook-operator@sha256:"), "pod %s", pod.Name)
			Expect(pod.Spec.ImagePullSecrets).To(ConsistOf(corev1.LocalObjectReference{Name: pullSecret}), "pod %s", pod.Name)
		}
		Expect(read("seedlabs/webhook-operator")).To(BeNumerically(">", 0), "containerd read no manifest of the manager's image from the registry")

		By("helm test: the chart's check, its pod pulling the manager's image with the pull secret")
		out, err := helm(ctx, "test", release, "--namespace", fixtures.Namespace, "--timeout", "2m")
		Expect(err).NotTo(HaveOccurred(), "helm test:\n%s", out)
		Expect(out).To(MatchRegexp(`Phase:\s+Succeeded`), "helm test:\n%s", out)
	}, SpecTimeout(5*time.Minute))

	It("is signed: cosign verifies from the registry each image's signature and its SBOM and provenance attestations, and the chart's; a wrong key and a tampered image or file fail", func(ctx SpecContext) {
		verify := []string{"--key", filepath.Join(keys, "cosign.pub"), "--insecure-ignore-tlog=true"}
		for _, program := range []struct{ image, main string }{
			{"webhook-operator", "github.com/seedlabs/webhook-operator/cmd/manager"},
			{"welcome-web", "github.com/seedlabs/webhook-operator/cmd/welcome-web"},
		} {
			idx, _, err := image.ReadLayout(filepath.Join(releaseDir, "images", program.image))
			Expect(err).NotTo(HaveOccurred())
			digest, err := idx.Digest()
			Expect(err).NotTo(HaveOccurred())
			ref := registryPath + "/" + program.image + "@" + digest.String()

			By("cosign verify " + ref)
			out, stderr, err := cosign(ctx, "", append(append([]string{"verify"}, verify...), ref)...)
			Expect(err).NotTo(HaveOccurred(), "cosign verify %s:\n%s", ref, stderr)
			var signatures []map[string]any
			Expect(json.Unmarshal([]byte(out), &signatures)).To(Succeed())
			Expect(signatures).To(ContainElement(HaveKeyWithValue("critical", HaveKeyWithValue("type", "https://sigstore.dev/cosign/sign/v1"))),
				"no signature among what verified (an attestation verifies too):\n%s", out)

			for _, attestation := range []struct{ typ, predicateType string }{
				{"cyclonedx", "https://cyclonedx.org/bom"}, {"slsaprovenance1", "https://slsa.dev/provenance/v1"},
			} {
				By("cosign verify-attestation --type " + attestation.typ + " " + ref)
				out, stderr, err := cosign(ctx, "", append(append([]string{"verify-attestation"}, verify...), "--type", attestation.typ, ref)...)
				Expect(err).NotTo(HaveOccurred(), "cosign verify-attestation:\n%s", stderr)
				statements := inTotoStatements(out)
				Expect(statements).To(HaveLen(1))
				statement := statements[0]
				Expect(statement.PredicateType).To(Equal(attestation.predicateType))
				Expect(statement.Subject).To(ConsistOf(HaveField("Digest", HaveKeyWithValue("sha256", digest.Hex))))
				switch attestation.typ {
				case "cyclonedx":
					Expect(statement.Predicate).To(HaveKeyWithValue("metadata", HaveKeyWithValue("component", And(
						HaveKeyWithValue("name", program.main), HaveKeyWithValue("version", releaseVersion)))), "the SBOM of %s", ref)
				case "slsaprovenance1":
					Expect(statement.Predicate).To(HaveKeyWithValue("buildDefinition", HaveKeyWithValue("resolvedDependencies",
						ContainElement(HaveKeyWithValue("digest", HaveKeyWithValue("gitCommit", cfg.commit))))), "the provenance of %s", ref)
				}
			}
		}

		chart := filepath.Join(releaseDir, "webhook-operator-"+strings.TrimPrefix(releaseVersion, "v")+".tgz")
		checksums := filepath.Join(releaseDir, "checksums.txt")
		for _, file := range []string{chart, checksums} {
			By("cosign verify-blob " + filepath.Base(file))
			_, stderr, err := cosign(ctx, "", append(append([]string{"verify-blob"}, verify...), "--bundle", file+".sigstore.json", file)...)
			Expect(err).NotTo(HaveOccurred(), "cosign verify-blob %s:\n%s", file, stderr)
		}
		chartRef := registryPath + "/charts/webhook-operator:" + strings.TrimPrefix(releaseVersion, "v")
		_, stderr, err := cosign(ctx, "", append(append([]string{"verify"}, verify...), chartRef)...)
		Expect(err).NotTo(HaveOccurred(), "cosign verify %s:\n%s", chartRef, stderr)

		By("a key that did not sign the release")
		other := GinkgoT().TempDir()
		out, _, err := cosign(ctx, other, "generate-key-pair")
		Expect(err).NotTo(HaveOccurred(), "cosign generate-key-pair:\n%s", out)
		wrong := []string{"--key", filepath.Join(other, "cosign.pub"), "--insecure-ignore-tlog=true"}
		manager := registryPath + "/webhook-operator:" + releaseVersion
		for _, args := range [][]string{
			append(append([]string{"verify"}, wrong...), manager),
			append(append([]string{"verify-attestation"}, wrong...), "--type", "cyclonedx", manager),
			append(append([]string{"verify-blob"}, wrong...), "--bundle", checksums+".sigstore.json", checksums),
		} {
			_, stderr, err := cosign(ctx, "", args...)
			Expect(err).To(HaveOccurred(), "cosign %s verified with another key", strings.Join(args, " "))
			Expect(stderr).To(MatchRegexp(`do not match threshold|invalid signature|no matching`), "cosign %s", args[0])
		}

		By("a tampered image: the manager's tag moved to another image; a tampered checksums.txt")
		pushCopy(ctx, cfg.welcome, manager)
		_, stderr, err = cosign(ctx, "", append(append([]string{"verify"}, verify...), manager)...)
		Expect(err).To(HaveOccurred(), "cosign verified the image the manager's tag was moved to")
		Expect(stderr).To(ContainSubstring("no signatures found"))
		data, err := os.ReadFile(checksums)
		Expect(err).NotTo(HaveOccurred())
		tampered := filepath.Join(other, "checksums.txt")
		Expect(os.WriteFile(tampered, append(data, []byte("0000  evil.tgz\n")...), 0o644)).To(Succeed())
		_, stderr, err = cosign(ctx, "", append(append([]string{"verify-blob"}, verify...), "--bundle", checksums+".sigstore.json", tampered)...)
		Expect(err).To(HaveOccurred(), "cosign verified a tampered checksums.txt")
		Expect(stderr).To(ContainSubstring("invalid signature"))
	}, SpecTimeout(3*time.Minute))

	It("runs a Welcome and a Memcached on images pulled from the registry with their namespace's pull secret", func(ctx SpecContext) {
		namespace := createNamespace(ctx, "e2e-registry")
		createPullSecret(ctx, namespace)
		// Their pods run as the namespace's default ServiceAccount, which kube-controller-manager
		// creates; given the pull secret, it pulls for every pod that names none.
		Eventually(func(g Gomega) {
			sa := &corev1.ServiceAccount{}
			g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: namespace, Name: "default"}, sa)).To(Succeed())
			sa.ImagePullSecrets = []corev1.LocalObjectReference{{Name: pullSecret}}
			g.Expect(k8s.Update(ctx, sa)).To(Succeed())
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())

		welcome := &authv1.Welcome{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "registry-welcome"}, Spec: authv1.WelcomeSpec{Name: "Registry"}}
		memcached := &cachev1.Memcached{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "registry-memcached"}, Spec: cachev1.MemcachedSpec{Size: ptr.To[int32](1)}}
		Expect(k8s.Create(ctx, welcome)).To(Succeed())
		Expect(k8s.Create(ctx, memcached)).To(Succeed())
		waitAvailable(ctx, "Welcome", welcome)
		waitAvailable(ctx, "Memcached", memcached)
		for _, owner := range []struct {
			obj   client.Object
			image string
		}{{welcome, registryPath + "/welcome-web@sha256:"}, {memcached, registryPath + "/memcached:debian"}} {
			for _, pod := range servingPodsOf(ctx, owner.obj, 1) {
				Expect(pod.Spec.Containers[0].Image).To(HavePrefix(owner.image), "pod %s", pod.Name)
			}
		}
		Expect(read("seedlabs/welcome-web")).To(BeNumerically(">", 0), "containerd read no manifest of welcome-web from the registry")
		Expect(read("seedlabs/memcached")).To(BeNumerically(">", 0), "containerd read no manifest of memcached from the registry")
	}, SpecTimeout(4*time.Minute))

	It("runs a DeployObject's private image only with its imagePullSecrets: without them it is Stalled with the registry's refusal", func(ctx SpecContext) {
		namespace := createNamespace(ctx, "e2e-registry-private")
		createPullSecret(ctx, namespace)
		d := &appv1.DeployObject{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "private"},
			Spec: appv1.DeployObjectSpec{
				Image: reg.Host + "/private/echo:v1",
				Ports: []corev1.ServicePort{{Name: "http", Port: 8080}},
				Env:   []corev1.EnvVar{{Name: "LISTEN", Value: "8080"}},
			},
		}
		Expect(k8s.Create(ctx, d)).To(Succeed())

		By("without imagePullSecrets: the pull is refused, and the DeployObject says why")
		refused := regexp.MustCompile(`401 Unauthorized|no basic auth credentials|authorization failed`)
		start := time.Now()
		Eventually(func(g Gomega) {
			pods := &corev1.PodList{}
			g.Expect(k8s.List(ctx, pods, client.InNamespace(namespace))).To(Succeed())
			g.Expect(pods.Items).To(HaveLen(1))
			g.Expect(pods.Items[0].Status.ContainerStatuses).To(ConsistOf(HaveField("State.Waiting", And(
				HaveField("Reason", BeElementOf("ErrImagePull", "ImagePullBackOff")), HaveField("Message", MatchRegexp(refused.String()))))))
			current := get(ctx, g, client.ObjectKeyFromObject(d), &appv1.DeployObject{}).(*appv1.DeployObject)
			stalled := meta.FindStatusCondition(current.Status.Conditions, conditions.Stalled)
			g.Expect(stalled).NotTo(BeNil())
			g.Expect(stalled.Status).To(Equal(metav1.ConditionTrue), "Stalled: %s", stalled.Message)
			g.Expect(stalled.Message).To(MatchRegexp(refused.String()))
			ready := meta.FindStatusCondition(current.Status.Conditions, conditions.Ready)
			g.Expect(ready).To(HaveField("Status", metav1.ConditionFalse))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		AddReportEntry("DeployObject without imagePullSecrets: until Stalled", time.Since(start).Round(time.Millisecond).String())
		Expect(read("private/echo")).To(BeZero(), "the registry served the private image without credentials")

		By("with imagePullSecrets: the same image runs")
		patch := fmt.Sprintf(`{"spec":{"imagePullSecrets":[{"name":%q}]}}`, pullSecret)
		Expect(k8s.Patch(ctx, d, client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
		waitAvailable(ctx, "DeployObject", d)
		servingPodsOf(ctx, d, 1)
		current := get(ctx, Default, client.ObjectKeyFromObject(d), &appv1.DeployObject{}).(*appv1.DeployObject)
		Expect(meta.IsStatusConditionFalse(current.Status.Conditions, conditions.Stalled)).To(BeTrue(), "Stalled after the pull: %v", current.Status.Conditions)
		Expect(read("private/echo")).To(BeNumerically(">", 0), "containerd read no manifest of the private image from the registry")
	}, SpecTimeout(5*time.Minute))

	It("uninstalls: nothing of the release is left but the CRDs and the user's pull secret", func(ctx SpecContext) {
		objects := releaseObjects(ctx)
		Expect(objects).NotTo(ContainElement(HaveField("Object", HaveKeyWithValue("kind", "Certificate"))))
		out, err := helm(ctx, "uninstall", release, "--namespace", fixtures.Namespace, "--wait", "--timeout", "2m")
		Expect(err).NotTo(HaveOccurred(), "helm uninstall:\n%s", out)
		expectOnlyLeftovers(ctx, objects, nil, "Secret "+pullSecret)
	}, SpecTimeout(3*time.Minute))
})
