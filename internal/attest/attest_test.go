package attest

import (
	"bytes"
	"debug/buildinfo"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
	provenance "github.com/in-toto/attestation/go/predicates/provenance/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

// TestSBOMListsWhatTheBinaryLinks reads the SBOM of release-attest, built as make builds it, back:
// every module linked in, with its package URL and go.sum hash, the program with the binary's
// digest, and the same bytes for the same binary. (A test binary records no modules.)
func TestSBOMListsWhatTheBinaryLinks(t *testing.T) {
	binary := filepath.Join(t.TempDir(), "release-attest")
	build := exec.CommandContext(t.Context(), "go", "build", "-trimpath", "-o", binary, "github.com/seedlabs/webhook-operator/cmd/release-attest")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	info, err := buildinfo.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	created := time.Unix(1764000000, 0)
	write := func() []byte {
		bom, err := SBOM(binary, "v1.2.3", created)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := WriteSBOM(&buf, bom); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	data := write()
	if again := write(); !bytes.Equal(data, again) {
		t.Error("two SBOMs of the same binary differ")
	}

	var bom cdx.BOM
	if err := cdx.NewBOMDecoder(bytes.NewReader(data), cdx.BOMFileFormatJSON).Decode(&bom); err != nil {
		t.Fatal(err)
	}
	if bom.SpecVersion != cdx.SpecVersion1_6 || bom.Metadata.Timestamp != "2025-11-24T16:00:00Z" {
		t.Errorf("spec %s, timestamp %s; want 1.6 and the time given", bom.SpecVersion, bom.Metadata.Timestamp)
	}
	program := bom.Metadata.Component
	digest, err := fileSHA256(binary)
	if err != nil {
		t.Fatal(err)
	}
	if program.Name != info.Path || program.Version != "v1.2.3" || program.PackageURL != "pkg:golang/"+info.Main.Path+"@v1.2.3" ||
		program.Hashes == nil || (*program.Hashes)[0].Value != digest {
		t.Errorf("the program is %+v, want %s at v1.2.3 with sha256 %s", program, info.Path, digest)
	}

	components := map[string]cdx.Component{}
	for _, c := range *bom.Components {
		components[c.Name] = c
	}
	if len(components) != len(info.Deps) {
		t.Errorf("%d components, the binary links %d modules", len(components), len(info.Deps))
	}
	for _, dep := range info.Deps {
		if dep.Replace != nil {
			dep = dep.Replace
		}
		c, ok := components[dep.Path]
		if !ok {
			t.Errorf("module %s is not listed", dep.Path)
			continue
		}
		if c.Version != dep.Version || c.PackageURL != "pkg:golang/"+dep.Path+"@"+strings.ReplaceAll(dep.Version, "+", "%2B") {
			t.Errorf("module %s@%s is listed as %s@%s, %s", dep.Path, dep.Version, c.Name, c.Version, c.PackageURL)
		}
		if dep.Sum != "" && (c.Hashes == nil || (*c.Hashes)[0].Value != goSumSHA256(dep.Sum)) {
			t.Errorf("module %s has hashes %v, want the sha256 of %s", dep.Path, c.Hashes, dep.Sum)
		}
	}
	if _, ok := components["github.com/CycloneDX/cyclonedx-go"]; !ok {
		t.Error("cyclonedx-go, which release-attest links, is not listed")
	}
}

func TestSBOMOfWhatIsNoGoBinary(t *testing.T) {
	file := t.TempDir() + "/not-a-binary"
	if err := os.WriteFile(file, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := SBOM(file, "v1.2.3", time.Now()); err == nil || !strings.Contains(err.Error(), "build information") {
		t.Errorf("SBOM of a shell script: %v, want an error about its build information", err)
	}
}

func TestPurl(t *testing.T) {
	for _, c := range []struct{ path, version, want string }{
		{"github.com/a/b", "v1.0.0", "pkg:golang/github.com/a/b@v1.0.0"},
		{"github.com/a/b", "v2.0.0+incompatible", "pkg:golang/github.com/a/b@v2.0.0%2Bincompatible"},
		{"github.com/a/b", "(devel)", "pkg:golang/github.com/a/b"},
	} {
		if got := purl(c.path, c.version); got != c.want {
			t.Errorf("purl(%s, %s) = %s, want %s", c.path, c.version, got, c.want)
		}
	}
}

// TestProvenanceIsSLSAv1 reads the provenance back with the in-toto library's strict parser (no
// unknown field) and its validation, as a verifier would.
func TestProvenanceIsSLSAv1(t *testing.T) {
	b := Build{
		Source: "https://github.com/seedlabs/webhook-operator", Commit: strings.Repeat("ab", 20), GoVersion: "go1.26.8",
		Builder: "https://ci.example.com/runs/7", Parameters: map[string]string{"VERSION": "v1.2.3", "REGISTRY": "ghcr.io/seedlabs"},
	}
	data, err := Provenance(b)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := Provenance(b); err != nil || !bytes.Equal(data, again) {
		t.Errorf("two provenances of the same build differ (%v)", err)
	}
	var p provenance.Provenance
	if err := (protojson.UnmarshalOptions{}).Unmarshal(data, &p); err != nil {
		t.Fatalf("%s\ndoes not parse as SLSA v1 provenance: %v", data, err)
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	def := p.GetBuildDefinition()
	if def.GetBuildType() != BuildType || def.GetExternalParameters().AsMap()["VERSION"] != "v1.2.3" ||
		def.GetExternalParameters().AsMap()["REGISTRY"] != "ghcr.io/seedlabs" || p.GetRunDetails().GetBuilder().GetId() != b.Builder {
		t.Errorf("provenance %s does not say what was built, how and by whom", data)
	}
	source := def.GetResolvedDependencies()[0]
	if source.GetUri() != "git+"+b.Source || source.GetDigest()["gitCommit"] != b.Commit {
		t.Errorf("the source is %v, want the commit %s of %s", source, b.Commit, b.Source)
	}
}

func TestProvenanceNamesWhatIsMissing(t *testing.T) {
	_, err := Provenance(Build{GoVersion: "go1.26.8"})
	for _, want := range []string{"no source", "no commit", "no builder"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Provenance without source, commit and builder: %v, want %q", err, want)
		}
	}
	if _, err := Provenance(Build{Source: "https://x", Commit: "not-hex", GoVersion: "go1", Builder: "https://b"}); err == nil {
		t.Error("a commit that is not hex made a provenance")
	}
}
