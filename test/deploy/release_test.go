package deploy

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"debug/macho"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/distribution/reference"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	provenance "github.com/in-toto/attestation/go/predicates/provenance/v1"
	"google.golang.org/protobuf/encoding/protojson"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/seedlabs/webhook-operator/internal/operator"
)

// releaseVersion is what the test releases as: a pre-release no real release will use.
const releaseVersion = "v0.0.0-test.1"

// pluginPlatforms are the platforms make release builds the kubectl plugin for.
var pluginPlatforms = []string{"darwin/amd64", "darwin/arm64", "linux/amd64", "linux/arm64"}

// runMake runs make in the repository with args, as a user's shell would (no outer make's flags).
func runMake(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return runMakeWith(t, nil, args...)
}

// runMakeWith runs make as runMake does, with env added to the environment.
func runMakeWith(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "make", append([]string{"--no-print-directory", "-C", moduleRoot(t)}, args...)...)
	cmd.Env = append(append(os.Environ(), "MAKEFLAGS=", "MAKELEVEL=", "KUSTOMIZE="+os.Getenv("KUSTOMIZE"), "HELM="+os.Getenv("HELM")), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestRelease runs make release and checks what it wrote: every image by the digest of the image
// it built, the chart, the plugin for each platform stamped with the version, the krew manifest
// and the checksums.
//
// The release names a registry of the test's own, an OCI registry served in the test process over
// TLS with basic auth (test/testregistry), and make publish pushes it there.
func TestRelease(t *testing.T) {
	toolPath(t, "KUSTOMIZE")
	toolPath(t, "HELM")
	reg := newTestRegistry(t)
	registryPath := reg.Host + "/seedlabs"
	dir := filepath.Join(t.TempDir(), "release")
	if out, err := runMake(t, "release", "VERSION="+releaseVersion, "RELEASE_DIR="+dir, "REGISTRY="+registryPath); err != nil {
		t.Fatalf("make release: %v\n%s", err, out)
	}

	imageRepo, welcomeRepo := makeVariable(t, "IMG_REPO", "REGISTRY="+registryPath), makeVariable(t, "WELCOME_IMG_REPO", "REGISTRY="+registryPath)
	if want := registryPath + "/webhook-operator"; imageRepo != want {
		t.Fatalf("make release REGISTRY=%s names the manager's image %s, want %s", registryPath, imageRepo, want)
	}
	managerImage := imageRepo + "@" + layoutDigest(t, filepath.Join(dir, "images", "webhook-operator"))
	welcomeImage := welcomeRepo + "@" + layoutDigest(t, filepath.Join(dir, "images", "welcome-web"))

	t.Run("install.yaml and install-self-signed.yaml run the built images by digest", func(t *testing.T) {
		for _, file := range []string{"install.yaml", "install-self-signed.yaml"} {
			checkReleasedImages(t, file, readManifests(t, filepath.Join(dir, file)), managerImage, welcomeImage)
		}
		if got := readManifests(t, filepath.Join(dir, "install-self-signed.yaml")).ofKind("Certificate"); len(got) != 0 {
			t.Errorf("install-self-signed.yaml holds %d cert-manager Certificates", len(got))
		}
	})

	t.Run("the chart is versioned and runs the built images by digest", func(t *testing.T) {
		chart := filepath.Join(dir, "webhook-operator-"+strings.TrimPrefix(releaseVersion, "v")+".tgz")
		out, err := runHelm(t, "template", "webhook-operator", chart, "--namespace", "webhook-operator-system")
		if err != nil {
			t.Fatal(err)
		}
		m := parseManifests(t, chart, out)
		checkReleasedImages(t, chart, m, managerImage, welcomeImage)
		if got := m.get(t, "Deployment", deploymentName).GetLabels()["app.kubernetes.io/version"]; got != releaseVersion {
			t.Errorf("the chart's appVersion is %q, want %s", got, releaseVersion)
		}
	})

	t.Run("every image of every install is pinned by digest", func(t *testing.T) {
		for _, file := range []string{"install.yaml", "install-self-signed.yaml"} {
			checkPinnedImages(t, file, readManifests(t, filepath.Join(dir, file)))
		}
		chart := filepath.Join(dir, "webhook-operator-"+strings.TrimPrefix(releaseVersion, "v")+".tgz")
		for _, mode := range []string{"cert-manager", "self-signed"} {
			out, err := runHelm(t, "template", "webhook-operator", chart, "--namespace", "webhook-operator-system", "--set", "certificates.mode="+mode)
			if err != nil {
				t.Fatal(err)
			}
			source := chart + " (" + mode + ")"
			checkPinnedImages(t, source, parseManifests(t, source, out))
		}
	})

	archives := map[string]string{}
	t.Run("the kubectl plugin for each platform, stamped with the version", func(t *testing.T) {
		for _, platform := range pluginPlatforms {
			goos, goarch, _ := strings.Cut(platform, "/")
			name := fmt.Sprintf("kubectl-webhook_operator_%s_%s.tar.gz", goos, goarch)
			archives[platform] = name
			files := readTarGz(t, filepath.Join(dir, name))
			if got := slices.Sorted(maps.Keys(files)); !slices.Equal(got, []string{"LICENSE", "kubectl-webhook_operator"}) {
				t.Errorf("%s holds %v", name, got)
				continue
			}
			checkBinaryPlatform(t, name, files["kubectl-webhook_operator"], goos, goarch)
			if goos != "linux" || goarch != runtime.GOARCH {
				continue
			}
			bin := filepath.Join(t.TempDir(), "kubectl-webhook_operator")
			if err := os.WriteFile(bin, files["kubectl-webhook_operator"], 0o700); err != nil {
				t.Fatal(err)
			}
			out, err := exec.CommandContext(t.Context(), bin, "version").Output()
			if want := "kubectl-webhook_operator " + releaseVersion + " (commit "; err != nil || !strings.HasPrefix(string(out), want) {
				t.Errorf("%s version: %q (%v); want %s...", name, out, err, want)
			}
		}
	})

	t.Run("the krew manifest names every archive and its sha256", func(t *testing.T) {
		var plugin struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Spec struct {
				Version   string `json:"version"`
				Platforms []struct {
					Selector struct {
						MatchLabels map[string]string `json:"matchLabels"`
					} `json:"selector"`
					URI    string `json:"uri"`
					SHA256 string `json:"sha256"`
					Bin    string `json:"bin"`
				} `json:"platforms"`
			} `json:"spec"`
		}
		data, err := os.ReadFile(filepath.Join(dir, "webhook-operator.krew.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(data, &plugin); err != nil {
			t.Fatal(err)
		}
		if plugin.Kind != "Plugin" || plugin.Metadata.Name != "webhook-operator" || plugin.Spec.Version != releaseVersion {
			t.Errorf("krew manifest: kind %q, name %q, version %q", plugin.Kind, plugin.Metadata.Name, plugin.Spec.Version)
		}
		var platforms []string
		for _, p := range plugin.Spec.Platforms {
			platform := p.Selector.MatchLabels["os"] + "/" + p.Selector.MatchLabels["arch"]
			platforms = append(platforms, platform)
			archive := archives[platform]
			if !strings.HasSuffix(p.URI, "/"+releaseVersion+"/"+archive) || p.Bin != "kubectl-webhook_operator" {
				t.Errorf("%s: uri %q, bin %q", platform, p.URI, p.Bin)
			}
			if want := fileSHA256(t, filepath.Join(dir, archive)); p.SHA256 != want {
				t.Errorf("%s: sha256 %s, the archive's is %s", platform, p.SHA256, want)
			}
		}
		if diff := cmp.Diff(pluginPlatforms, slices.Sorted(slices.Values(platforms))); diff != "" {
			t.Errorf("krew platforms (-want +got):\n%s", diff)
		}
	})

	t.Run("each image's SBOM lists its program's modules, and the provenance names the commit and the parameters", func(t *testing.T) {
		for file, program := range map[string]string{
			"webhook-operator.cdx.json": "github.com/seedlabs/webhook-operator/cmd/manager",
			"welcome-web.cdx.json":      "github.com/seedlabs/webhook-operator/cmd/welcome-web",
		} {
			data, err := os.ReadFile(filepath.Join(dir, file))
			if err != nil {
				t.Fatal(err)
			}
			var bom cdx.BOM
			if err := cdx.NewBOMDecoder(bytes.NewReader(data), cdx.BOMFileFormatJSON).Decode(&bom); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if c := bom.Metadata.Component; c.Name != program || c.Version != releaseVersion {
				t.Errorf("%s describes %s %s, want %s %s", file, c.Name, c.Version, program, releaseVersion)
			}
			// welcome-web links only the standard library.
			var modules []string
			for _, c := range ptr.Deref(bom.Components, nil) {
				modules = append(modules, c.Name)
			}
			if !slices.Contains(modules, "sigs.k8s.io/controller-runtime") && program == "github.com/seedlabs/webhook-operator/cmd/manager" {
				t.Errorf("%s does not list controller-runtime among %d modules", file, len(modules))
			}
		}
		data, err := os.ReadFile(filepath.Join(dir, "provenance.json"))
		if err != nil {
			t.Fatal(err)
		}
		var p provenance.Provenance
		if err := protojson.Unmarshal(data, &p); err != nil {
			t.Fatalf("provenance.json is not SLSA v1 provenance: %v", err)
		}
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
		commit := makeVariable(t, "COMMIT")
		if got := p.GetBuildDefinition().GetResolvedDependencies()[0].GetDigest()["gitCommit"]; got != commit {
			t.Errorf("provenance.json names commit %s, want %s", got, commit)
		}
		if got := p.GetBuildDefinition().GetExternalParameters().AsMap(); got["VERSION"] != releaseVersion || got["REGISTRY"] != registryPath {
			t.Errorf("provenance.json's parameters are %v, want VERSION %s and REGISTRY %s", got, releaseVersion, registryPath)
		}
	})

	t.Run("the same commit releases the same bytes", func(t *testing.T) {
		again := filepath.Join(t.TempDir(), "release")
		if out, err := runMake(t, "release", "VERSION="+releaseVersion, "RELEASE_DIR="+again, "REGISTRY="+registryPath); err != nil {
			t.Fatalf("make release, again: %v\n%s", err, out)
		}
		for _, file := range []string{"checksums.txt", "images/webhook-operator/index.json", "images/welcome-web/index.json"} {
			first, err1 := os.ReadFile(filepath.Join(dir, file))
			second, err2 := os.ReadFile(filepath.Join(again, file))
			if err1 != nil || err2 != nil || !bytes.Equal(first, second) {
				t.Errorf("%s differs between two releases of one commit (%v, %v):\n%s\n%s", file, err1, err2, first, second)
			}
		}
	})

	t.Run("make publish without the registry's credentials is refused, and pushes nothing", func(t *testing.T) {
		env := []string{"DOCKER_CONFIG=" + t.TempDir(), "HELM_REGISTRY_CONFIG=" + filepath.Join(t.TempDir(), "config.json"),
			"SSL_CERT_FILE=" + reg.CAFile()}
		out, err := runMakeWith(t, env, "publish", "VERSION="+releaseVersion, "RELEASE_DIR="+dir, "REGISTRY="+registryPath)
		if err == nil || !strings.Contains(out, "401 Unauthorized") {
			t.Errorf("make publish without credentials: %v, want the registry's 401 Unauthorized\n%s", err, out)
		}
		r, err := name.ParseReference(managerImage)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := remote.Index(r, reg.RemoteOptions(t.Context())...); err == nil {
			t.Errorf("%s is in the registry after a refused publish", managerImage)
		}
	})

	t.Run("make publish pushes the images by the digests the release names, and the chart", func(t *testing.T) {
		chart := filepath.Join(dir, "webhook-operator-"+strings.TrimPrefix(releaseVersion, "v")+".tgz")
		if out, err := runMakeWith(t, reg.ClientEnv(), "publish", "VERSION="+releaseVersion, "RELEASE_DIR="+dir, "REGISTRY="+registryPath); err != nil {
			t.Fatalf("make publish: %v\n%s", err, out)
		}
		for _, pinned := range []string{managerImage, welcomeImage} {
			repository, digest, _ := strings.Cut(pinned, "@")
			for _, ref := range []string{pinned, repository + ":" + releaseVersion} {
				r, err := name.ParseReference(ref)
				if err != nil {
					t.Fatal(err)
				}
				idx, err := remote.Index(r, reg.RemoteOptions(t.Context())...)
				if err != nil {
					t.Errorf("pulling %s: %v", ref, err)
					continue
				}
				if got, err := idx.Digest(); err != nil || got.String() != digest {
					t.Errorf("%s is %s (%v), want %s", ref, got, err, digest)
				}
			}
		}
		pulled := t.TempDir()
		for _, kv := range reg.ClientEnv() {
			k, v, _ := strings.Cut(kv, "=")
			t.Setenv(k, v)
		}
		if _, err := runHelm(t, "pull", "oci://"+registryPath+"/charts/webhook-operator", "--version", strings.TrimPrefix(releaseVersion, "v"),
			"--destination", pulled); err != nil {
			t.Fatal(err)
		}
		if got, want := fileSHA256(t, filepath.Join(pulled, filepath.Base(chart))), fileSHA256(t, chart); got != want {
			t.Errorf("the chart pulled from the registry has sha256 %s, the release's %s", got, want)
		}
	})

	t.Run("make publish refuses a release made for another registry", func(t *testing.T) {
		out, err := runMake(t, "publish", "VERSION="+releaseVersion, "RELEASE_DIR="+dir, "REGISTRY=registry.example.test/other", "PLAIN_HTTP=true")
		if err == nil || !strings.Contains(out, "names images outside registry.example.test/other") {
			t.Errorf("make publish to another registry: %v\n%s", err, out)
		}
	})

	t.Run("checksums.txt holds the sha256 of every file", func(t *testing.T) {
		f, err := os.Open(filepath.Join(dir, "checksums.txt"))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = f.Close() }()
		var listed []string
		scanner := bufio.NewScanner(f)
		for scanner.Scan() {
			sum, name, ok := strings.Cut(scanner.Text(), "  ")
			if !ok {
				t.Fatalf("checksums.txt: line %q", scanner.Text())
			}
			listed = append(listed, name)
			if got := fileSHA256(t, filepath.Join(dir, name)); got != sum {
				t.Errorf("checksums.txt: %s %s, the file's is %s", name, sum, got)
			}
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var files []string
		for _, e := range entries {
			if !e.IsDir() && e.Name() != "checksums.txt" {
				files = append(files, e.Name())
			}
		}
		if diff := cmp.Diff(files, slices.Sorted(slices.Values(listed))); diff != "" {
			t.Errorf("files listed in checksums.txt (-in the release +listed):\n%s", diff)
		}
	})
}

// TestReleaseRefusesABadVersion: make release refuses a VERSION that is not vX.Y.Z[-pre] before it
// writes anything.
func TestReleaseRefusesABadVersion(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "release")
	for _, version := range []string{"1.2.3", "v1.2", "v1.2.3+build", "latest"} {
		out, err := runMake(t, "release", "VERSION="+version, "RELEASE_DIR="+dir)
		if err == nil || !strings.Contains(out, "VERSION="+version+" is not a version vX.Y.Z[-pre]") {
			t.Errorf("make release VERSION=%s: %v\n%s", version, err, out)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("make release VERSION=%s wrote %s", version, dir)
		}
	}
}

// TestReleaseKeepsTheChart: make release refuses to write into a directory that holds the chart,
// which it would delete first (here a copy of dist/, with CHART_DIR pointed at it).
func TestReleaseKeepsTheChart(t *testing.T) {
	dist := filepath.Join(t.TempDir(), "dist")
	chart := filepath.Join(dist, "chart")
	if err := os.CopyFS(chart, os.DirFS(filepath.Join(moduleRoot(t), "dist", "chart"))); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{dist, filepath.Dir(dist)} {
		out, err := runMake(t, "release", "VERSION="+releaseVersion, "RELEASE_DIR="+dir, "CHART_DIR="+chart)
		if err == nil || !strings.Contains(out, "which make release would delete") {
			t.Errorf("make release RELEASE_DIR=%s: %v\n%s", dir, err, out)
		}
		if _, err := os.Stat(filepath.Join(chart, "Chart.yaml")); err != nil {
			t.Fatalf("make release RELEASE_DIR=%s deleted the chart: %v", dir, err)
		}
	}
}

// layoutDigest is the digest of the image index an OCI image layout holds.
func layoutDigest(t *testing.T, layout string) string {
	t.Helper()
	var index struct {
		Manifests []struct {
			Digest string `json:"digest"`
		} `json:"manifests"`
	}
	data, err := os.ReadFile(filepath.Join(layout, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &index); err != nil || len(index.Manifests) != 1 {
		t.Fatalf("%s/index.json: %v, %d manifests", layout, err, len(index.Manifests))
	}
	return index.Manifests[0].Digest
}

// checkReleasedImages: the manager runs managerImage and gives Welcomes welcomeImage.
func checkReleasedImages(t *testing.T, source string, m manifests, managerImage, welcomeImage string) {
	t.Helper()
	mgr := getManager(t, m)
	if mgr.manager.Image != managerImage {
		t.Errorf("%s: the manager's image %q, want %q", source, mgr.manager.Image, managerImage)
	}
	var welcome []string
	for _, env := range mgr.manager.Env {
		if env.Name == operator.EnvWelcomeImage {
			welcome = append(welcome, env.Value)
		}
	}
	if !slices.Equal(welcome, []string{welcomeImage}) {
		t.Errorf("%s: the manager's %s %q, want %q", source, operator.EnvWelcomeImage, welcome, welcomeImage)
	}
}

// checkPinnedImages: every image m runs is pinned by digest, whatever its tag says: each
// container's image, and each image a container is given to run, in an environment variable named
// *_IMAGE or a flag --*-image.
func checkPinnedImages(t *testing.T, source string, m manifests) {
	t.Helper()
	images := map[string]string{} // where: reference
	for _, o := range m {
		path := []string{"spec", "template", "spec"}
		switch o.GetKind() {
		case "Pod":
			path = []string{"spec"}
		case "CronJob":
			path = []string{"spec", "jobTemplate", "spec", "template", "spec"}
		case "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job":
		default:
			continue
		}
		spec := new(corev1.PodSpec)
		raw, found, err := unstructuredMap(o, path...)
		if err == nil && found {
			var data []byte
			if data, err = json.Marshal(raw); err == nil {
				err = json.Unmarshal(data, spec)
			}
		}
		if err != nil || !found {
			t.Fatalf("%s: %s: pod spec at %s: found %t, %v", source, o.key(), strings.Join(path, "."), found, err)
		}
		for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
			where := o.key() + " container " + c.Name
			images[where+" image"] = c.Image
			for _, env := range c.Env {
				if strings.HasSuffix(env.Name, "_IMAGE") {
					images[where+" env "+env.Name] = env.Value
				}
			}
			for _, arg := range slices.Concat(c.Command, c.Args) {
				if flag, value, ok := strings.Cut(arg, "="); ok && strings.HasPrefix(flag, "--") && strings.HasSuffix(flag, "-image") {
					images[where+" flag "+flag] = value
				}
			}
		}
	}
	if len(images) == 0 {
		t.Fatalf("%s: no images", source)
	}
	for _, where := range slices.Sorted(maps.Keys(images)) {
		named, err := reference.ParseNormalizedNamed(images[where])
		if _, pinned := named.(reference.Digested); err != nil || !pinned {
			t.Errorf("%s: %s: %q is not pinned by digest (%v)", source, where, images[where], err)
		}
	}
}

func readTarGz(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	files := map[string][]byte{}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		files[h.Name] = data
	}
}

// checkBinaryPlatform: the binary is an executable for goos/goarch.
func checkBinaryPlatform(t *testing.T, name string, binary []byte, goos, goarch string) {
	t.Helper()
	var got string
	switch goos {
	case "linux":
		f, err := elf.NewFile(bytes.NewReader(binary))
		if err != nil {
			t.Errorf("%s: not ELF: %v", name, err)
			return
		}
		got = map[elf.Machine]string{elf.EM_X86_64: "amd64", elf.EM_AARCH64: "arm64"}[f.Machine]
	case "darwin":
		f, err := macho.NewFile(bytes.NewReader(binary))
		if err != nil {
			t.Errorf("%s: not Mach-O: %v", name, err)
			return
		}
		got = map[macho.Cpu]string{macho.CpuAmd64: "amd64", macho.CpuArm64: "arm64"}[f.Cpu]
	}
	if got != goarch {
		t.Errorf("%s: a binary for %q, want %s", name, got, goarch)
	}
}

func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
