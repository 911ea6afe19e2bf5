//go:build e2e

package e2e

import (
	"archive/tar"
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/seedlabs/webhook-operator/internal/image"
)

// productImage is one image make images builds.
type productImage struct {
	ref     string
	program string // the binary, at /<program>, and its package ./cmd/<program>
}

func productImages() []productImage {
	return []productImage{{ref: cfg.image, program: "manager"}, {ref: cfg.welcome, program: "welcome-web"}}
}

// imagePlatforms are the platforms make images builds by default.
var imagePlatforms = []string{"linux/amd64", "linux/arm64"}

// baseFiles are the files of the base every image of ours starts from.
var baseFiles = []string{"etc/", "etc/group", "etc/passwd", "home/", "home/nonroot/", "tmp/"}

var _ = Describe("The images make images builds", func() {
	It("are an image index per program, for linux/amd64 and linux/arm64: the stamped static binary as entrypoint, run as non-root, on a base without a shell", func() {
		for _, want := range productImages() {
			idx, ref, err := image.ReadLayout(layoutOf(want.ref))
			Expect(err).NotTo(HaveOccurred())
			Expect(ref).To(Equal(want.ref))
			manifest, err := idx.IndexManifest()
			Expect(err).NotTo(HaveOccurred())
			var platforms []string
			for _, desc := range manifest.Manifests {
				platforms = append(platforms, desc.Platform.String())
			}
			Expect(platforms).To(Equal(imagePlatforms), "%s", want.ref)

			for _, desc := range manifest.Manifests {
				img, err := idx.Image(desc.Digest)
				Expect(err).NotTo(HaveOccurred())
				config, err := img.ConfigFile()
				Expect(err).NotTo(HaveOccurred())
				what := want.ref + " " + desc.Platform.String()
				Expect(config.OS + "/" + config.Architecture).To(Equal(desc.Platform.String()))
				Expect(config.Config.User).To(Equal(image.NonRoot), what)
				Expect(config.Config.Entrypoint).To(Equal([]string{"/" + want.program}), what)
				Expect(config.Config.Cmd).To(BeEmpty(), what)
				Expect(config.Config.Labels).To(HaveKeyWithValue("org.opencontainers.image.version", cfg.version), what)
				Expect(config.Config.Labels).To(HaveKeyWithValue("org.opencontainers.image.revision", cfg.commit), what)

				files := imageFiles(img)
				Expect(slices.Sorted(maps.Keys(files))).To(Equal(slices.Sorted(slices.Values(append(slices.Clone(baseFiles), want.program)))),
					"%s holds exactly the base and the binary", what)
				expectBuiltByGoBuild(what, files[want.program], config.Architecture)

				size, err := image.CompressedSize(img)
				Expect(err).NotTo(HaveOccurred())
				AddReportEntry(fmt.Sprintf("image %s (compressed)", what), fmt.Sprintf("%.1f MB", float64(size)/1e6))
				if config.Architecture == runtime.GOARCH {
					out := runBinary(files[want.program], "--version")
					Expect(out).To(Equal(fmt.Sprintf("%s %s (commit %s)\n", want.program, cfg.version, cfg.commit)), what)
				}
			}
		}
	})

	It("are the same, digest for digest, when built again from the same commit", func(ctx SpecContext) {
		dir := GinkgoT().TempDir()
		start := time.Now()
		out, err := makeTarget(ctx, "images", "IMAGES_DIR="+dir)
		Expect(err).NotTo(HaveOccurred(), "make images:\n%s", out)
		AddReportEntry("make images again, with Go's build cache warm", time.Since(start).Round(time.Millisecond).String())
		for _, want := range productImages() {
			again, _, err := image.ReadLayout(filepath.Join(dir, filepath.Base(layoutOf(want.ref))))
			Expect(err).NotTo(HaveOccurred())
			digest, err := again.Digest()
			Expect(err).NotTo(HaveOccurred())
			Expect(digest.String()).To(Equal(layoutDigest(want.ref)), "%s", want.ref)
		}
	}, SpecTimeout(5*time.Minute))

	It("hold the same binaries, build flags, user and entrypoint as the Dockerfile", func() {
		data, err := os.ReadFile(filepath.Join(cfg.root, "Dockerfile"))
		Expect(err).NotTo(HaveOccurred())
		dockerfile := strings.ReplaceAll(string(data), "\\\n", " ")
		for _, want := range productImages() {
			stage := dockerfileStage(dockerfile, want.program)
			Expect(stage).To(ContainElement(MatchRegexp(`^COPY --from=builder /out/%s /%s$`, want.program, want.program)), "the Dockerfile's %s stage", want.program)

			idx, _, err := image.ReadLayout(layoutOf(want.ref))
			Expect(err).NotTo(HaveOccurred())
			img := hostImage(idx)
			config, err := img.ConfigFile()
			Expect(err).NotTo(HaveOccurred())
			Expect(stage).To(ContainElement("USER "+config.Config.User), "the Dockerfile's %s stage", want.program)
			Expect(stage).To(ContainElement(fmt.Sprintf(`ENTRYPOINT ["%s"]`, strings.Join(config.Config.Entrypoint, `", "`))), "the Dockerfile's %s stage", want.program)

			// The Dockerfile's go build of the program has the flags whose marks the image's
			// binary carries (Go records neither -ldflags nor its -X values under -trimpath).
			build := regexp.MustCompile(`(CGO_ENABLED=0)\s.*?go build (-trimpath) -ldflags "([^"]*)" -o /out/` + want.program + `\s`).FindStringSubmatch(dockerfile)
			Expect(build).NotTo(BeNil(), "the Dockerfile builds %s statically, with -trimpath", want.program)
			Expect(strings.Fields(build[3])).To(Equal([]string{"-s", "-w",
				"-X", "github.com/seedlabs/webhook-operator/internal/version.version=${VERSION}",
				"-X", "github.com/seedlabs/webhook-operator/internal/version.commit=${COMMIT}"}), "the Dockerfile's -ldflags for %s", want.program)
			expectBuiltByGoBuild(want.ref, imageFiles(img)[want.program], runtime.GOARCH)
		}
	})
})

// layoutOf is the OCI layout, among those make test-e2e hands the suite, of the image ref.
func layoutOf(ref string) string {
	dir := imageLayouts()[ref]
	if dir == "" {
		Fail("no image layout holds " + ref)
	}
	return dir
}

// imageLayouts are the OCI layouts make test-e2e hands the suite, which the node imported, by the
// name of their image.
func imageLayouts() map[string]string {
	layouts := map[string]string{}
	for _, dir := range cfg.images {
		_, name, err := image.ReadLayout(dir)
		ExpectWithOffset(2, err).NotTo(HaveOccurred())
		layouts[name] = dir
	}
	return layouts
}

// layoutDigest is the digest of the image index of ref, as its OCI layout holds it.
func layoutDigest(ref string) string {
	idx, _, err := image.ReadLayout(layoutOf(ref))
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	digest, err := idx.Digest()
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return digest.String()
}

// hostImageID is the image ID, as the container runtime reports it, of this machine's image in
// the index of ref: the digest of its configuration.
func hostImageID(ref string) string {
	idx, _, err := image.ReadLayout(layoutOf(ref))
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	id, err := hostImage(idx).ConfigName()
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return id.String()
}

// hostImage is the image of the index for this machine's platform.
func hostImage(idx v1.ImageIndex) v1.Image {
	manifest, err := idx.IndexManifest()
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	for _, desc := range manifest.Manifests {
		if desc.Platform.OS == runtime.GOOS && desc.Platform.Architecture == runtime.GOARCH {
			img, err := idx.Image(desc.Digest)
			ExpectWithOffset(1, err).NotTo(HaveOccurred())
			return img
		}
	}
	Fail("no image for " + runtime.GOOS + "/" + runtime.GOARCH)
	return nil
}

// imageFiles reads every layer of img, in order, into a map from path to content; directories
// end in "/" and have no content.
func imageFiles(img v1.Image) map[string][]byte {
	layers, err := img.Layers()
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	files := map[string][]byte{}
	for _, layer := range layers {
		rc, err := layer.Uncompressed()
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
		tr := tar.NewReader(rc)
		for {
			hdr, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			ExpectWithOffset(1, err).NotTo(HaveOccurred())
			data, err := io.ReadAll(tr)
			ExpectWithOffset(1, err).NotTo(HaveOccurred())
			files[hdr.Name] = data
		}
		ExpectWithOffset(1, rc.Close()).To(Succeed())
	}
	return files
}

// expectBuiltByGoBuild checks that binary, of a program built for arch, bears every mark of the
// Makefile's GO_BUILD: static (CGO_ENABLED=0, no dynamic loader), -trimpath, stripped of its
// symbol table (-s) and DWARF (-w), and stamped with the version and commit (-X).
func expectBuiltByGoBuild(what string, binary []byte, arch string) {
	f, err := elf.NewFile(bytes.NewReader(binary))
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), what)
	ExpectWithOffset(1, f.Machine).To(Equal(map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]), what)
	ExpectWithOffset(1, f.Progs).NotTo(ContainElement(HaveField("Type", elf.PT_INTERP)), "%s: a static binary, with no dynamic loader", what)
	for _, section := range f.Sections {
		ExpectWithOffset(1, section.Name).NotTo(Or(Equal(".symtab"), HavePrefix(".debug_"), HavePrefix(".zdebug_")), "%s: stripped by -s -w", what)
	}
	settings := buildSettings(binary)
	ExpectWithOffset(1, settings).To(HaveKeyWithValue("CGO_ENABLED", "0"), what)
	ExpectWithOffset(1, settings).To(HaveKeyWithValue("-trimpath", "true"), what)
	ExpectWithOffset(1, bytes.Contains(binary, []byte(cfg.version))).To(BeTrue(), "%s: stamped with %s", what, cfg.version)
	ExpectWithOffset(1, bytes.Contains(binary, []byte(cfg.commit))).To(BeTrue(), "%s: stamped with %s", what, cfg.commit)
}

// buildSettings are the build settings Go recorded in a binary: -ldflags, -trimpath,
// CGO_ENABLED and the like.
func buildSettings(binary []byte) map[string]string {
	info, err := buildinfo.Read(bytes.NewReader(binary))
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	return settings
}

// runBinary runs a binary of this machine's platform with args and returns its output.
func runBinary(binary []byte, args ...string) string {
	path := filepath.Join(GinkgoT().TempDir(), "binary")
	ExpectWithOffset(1, os.WriteFile(path, binary, 0o755)).To(Succeed())
	out, err := exec.Command(path, args...).CombinedOutput()
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), "%s", out)
	return string(out)
}

// dockerfileStage is the instructions of the Dockerfile's stage of that name, from its FROM to
// the next, one per line, with continuation lines joined.
func dockerfileStage(dockerfile, name string) []string {
	var stage []string
	in := false
	for _, line := range strings.Split(dockerfile, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "FROM ") {
			in = strings.HasSuffix(line, " AS "+name)
		}
		if in && line != "" && !strings.HasPrefix(line, "#") {
			stage = append(stage, line)
		}
	}
	ExpectWithOffset(1, stage).NotTo(BeEmpty(), "the Dockerfile has no stage %s", name)
	return stage
}

// builtImage reports whether ref names an image the suite imported into the node: one that pods
// can run without a registry.
func builtImage(ref string) bool {
	_, found := imageLayouts()[ref]
	return found
}
