// Package attest writes what a release says of its images besides their digests: a software bill
// of materials (SBOM) of each image's program, and the provenance of the release. make release
// writes them (cmd/release-attest) and make publish attaches them to the images as in-toto
// attestations signed with the release's key, which cosign verify-attestation checks.
package attest

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

// SBOM is the CycloneDX bill of materials of the Go program binary, read from the build
// information the Go toolchain writes into every binary (debug/buildinfo), so it lists exactly
// what was linked in: the program is the component it describes (its module at version, the
// binary's sha256, the toolchain and build settings as properties, named by its main package), and each module linked into it
// a library, with its package URL and the sha256 of its go.sum hash. A module replaced is listed as
// its replacement, which is what was compiled.
//
// created is the SBOM's timestamp: the release's SOURCE_DATE_EPOCH, so the same commit gives the
// same SBOM. The serial number is derived from the binary's digest for the same reason.
func SBOM(binary, version string, created time.Time) (*cdx.BOM, error) {
	info, err := buildinfo.ReadFile(binary)
	if err != nil {
		return nil, fmt.Errorf("reading the build information of %s: %w", binary, err)
	}
	digest, err := fileSHA256(binary)
	if err != nil {
		return nil, err
	}
	properties := []cdx.Property{
		{Name: "cdx:gomod:binary:name", Value: filepath.Base(binary)},
		{Name: "cdx:gomod:build:env:GOVERSION", Value: info.GoVersion},
	}
	for _, s := range info.Settings {
		properties = append(properties, cdx.Property{Name: "cdx:gomod:build:setting:" + s.Key, Value: s.Value})
	}
	slices.SortStableFunc(properties[2:], func(a, b cdx.Property) int { return strings.Compare(a.Name, b.Name) })
	program := purl(info.Main.Path, version)
	component := cdx.Component{
		BOMRef:     program,
		Type:       cdx.ComponentTypeApplication,
		Name:       info.Path,
		Version:    version,
		PackageURL: program,
		Hashes:     &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: digest}},
		Properties: &properties,
	}

	components := make([]cdx.Component, 0, len(info.Deps))
	refs := make([]string, 0, len(info.Deps))
	for _, dep := range info.Deps {
		module := dep
		var replaced *[]cdx.Property
		if dep.Replace != nil {
			module = dep.Replace
			replaced = &[]cdx.Property{{Name: "cdx:gomod:replaces", Value: dep.Path + "@" + dep.Version}}
		}
		ref := purl(module.Path, module.Version)
		c := cdx.Component{
			BOMRef:     ref,
			Type:       cdx.ComponentTypeLibrary,
			Name:       module.Path,
			Version:    module.Version,
			Scope:      cdx.ScopeRequired,
			PackageURL: ref,
			Properties: replaced,
		}
		if sum := goSumSHA256(module.Sum); sum != "" {
			c.Hashes = &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: sum}}
		}
		components = append(components, c)
		refs = append(refs, ref)
	}

	bom := cdx.NewBOM()
	bom.SerialNumber = "urn:uuid:" + uuidOf(digest)
	bom.Metadata = &cdx.Metadata{
		Timestamp: created.UTC().Format(time.RFC3339),
		Tools: &cdx.ToolsChoice{Components: &[]cdx.Component{{
			Type: cdx.ComponentTypeApplication, Name: "webhook-operator release-attest", Version: version,
		}}},
		Component: &component,
	}
	bom.Components = &components
	// Build information does not say which modules the program imports directly: the program
	// depends on every one.
	dependencies := []cdx.Dependency{{Ref: program, Dependencies: &refs}}
	for _, ref := range refs {
		dependencies = append(dependencies, cdx.Dependency{Ref: ref})
	}
	bom.Dependencies = &dependencies
	return bom, nil
}

// WriteSBOM writes bom as CycloneDX 1.6 JSON.
func WriteSBOM(w io.Writer, bom *cdx.BOM) error {
	return cdx.NewBOMEncoder(w, cdx.BOMFileFormatJSON).SetPretty(true).EncodeVersion(bom, cdx.SpecVersion1_6)
}

// purl is the package URL of the Go module path at version: pkg:golang/<path>@<version>, each
// segment escaped as the purl specification asks ("+incompatible" is "%2Bincompatible").
func purl(path, version string) string {
	segments := strings.Split(path, "/")
	for i, s := range segments {
		segments[i] = url.PathEscape(s)
	}
	p := "pkg:golang/" + strings.Join(segments, "/")
	if version != "" && version != "(devel)" {
		p += "@" + strings.ReplaceAll(url.PathEscape(version), "+", "%2B")
	}
	return p
}

// goSumSHA256 is the sha256 of a go.sum hash (h1:<base64>, the sha256 of the module's files'
// hashes), in hex as CycloneDX writes hashes, or "" for another form.
func goSumSHA256(sum string) string {
	encoded, ok := strings.CutPrefix(sum, "h1:")
	if !ok {
		return ""
	}
	b, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil || len(b) != sha256.Size {
		return ""
	}
	return hex.EncodeToString(b)
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// uuidOf makes a version 5 style UUID of the first 16 bytes of the hex digest.
func uuidOf(digest string) string {
	b, _ := hex.DecodeString(digest[:32])
	b[6] = b[6]&0x0f | 0x50
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
