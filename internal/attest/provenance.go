package attest

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	provenance "github.com/in-toto/attestation/go/predicates/provenance/v1"
	intoto "github.com/in-toto/attestation/go/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

// BuildType is the SLSA build type of make release: what its external parameters mean and how
// it turns a commit into the release's files is written in docs/release.md.
const BuildType = "https://github.com/seedlabs/webhook-operator/blob/main/docs/release.md#provenance"

// Build is what make release was asked to build, from what, and by whom.
type Build struct {
	// Source is the repository's URL, and Commit the commit built.
	Source, Commit string
	// GoVersion is the toolchain that compiled the binaries (go1.26.8, say).
	GoVersion string
	// Builder identifies who ran make release: a CI run's URL, or a person's machine.
	Builder string
	// Parameters are the make variables that select what is built (VERSION, REGISTRY, PLATFORMS).
	Parameters map[string]string
}

// Provenance is the SLSA v1 provenance predicate of the release b builds, in JSON, as cosign
// attest --type slsaprovenance1 takes it (cosign adds the subject, the image's digest). It is
// made with the in-toto attestation library's types and validated by them, since cosign keeps
// what it cannot read silently out of the statement. It holds no time, so that the same commit
// gives the same bytes.
func Provenance(b Build) ([]byte, error) {
	var missing []error
	for name, value := range map[string]string{"source": b.Source, "commit": b.Commit, "Go version": b.GoVersion, "builder": b.Builder} {
		if value == "" {
			missing = append(missing, fmt.Errorf("no %s", name))
		}
	}
	if err := errors.Join(missing...); err != nil {
		return nil, err
	}
	parameters := map[string]any{}
	for _, k := range slices.Sorted(maps.Keys(b.Parameters)) {
		parameters[k] = b.Parameters[k]
	}
	external, err := structpb.NewStruct(parameters)
	if err != nil {
		return nil, err
	}
	p := &provenance.Provenance{
		BuildDefinition: &provenance.BuildDefinition{
			BuildType:          BuildType,
			ExternalParameters: external,
			ResolvedDependencies: []*intoto.ResourceDescriptor{
				{Uri: "git+" + b.Source, Digest: map[string]string{"gitCommit": b.Commit}},
				{Name: "go", Uri: "pkg:golang/stdlib@" + b.GoVersion},
			},
		},
		RunDetails: &provenance.RunDetails{Builder: &provenance.Builder{Id: b.Builder}},
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("the provenance is not valid SLSA v1: %w", err)
	}
	data, err := protojson.Marshal(p)
	if err != nil {
		return nil, err
	}
	// protojson varies its spacing from run to run on purpose; encoding/json does not, and sorts
	// the keys.
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	out, err := json.MarshalIndent(v, "", "  ")
	return append(out, '\n'), err
}
