package webhooks

import (
	// The digest algorithm must be linked in for reference to accept sha256 digests.
	_ "crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/distribution/reference"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// The image rules of a DeployObject's spec.image and of a Welcome's, each kind with its own rule IDs.

// ImagePolicy is what admission requires of an image beyond a well-formed reference pinned by a
// tag or a digest.
type ImagePolicy struct {
	allowedRegistries []string
}

// NewImagePolicy returns a policy that allows images from the given registries only, or from any
// registry when none is given. Each registry is a host with an optional port, normalised the way
// image references are (docker.io for Docker Hub, however it is spelled) and in lower case.
func NewImagePolicy(registries []string) (ImagePolicy, error) {
	var allowed []string
	for _, r := range registries {
		// Registry hosts are DNS names, which compare without regard to case.
		r = strings.ToLower(strings.TrimSpace(r))
		if r == "" {
			continue
		}
		named, err := reference.ParseNormalizedNamed(r + "/image-policy-probe")
		// A single word such as "registry" parses as a Docker Hub repository, so an entry must
		// come back as the registry itself; index.docker.io is the one legacy spelling of docker.io.
		if err != nil || strings.Contains(r, "/") || (reference.Domain(named) != r && r != "index.docker.io") {
			return ImagePolicy{}, fmt.Errorf("allowed registry %q is not a registry host such as registry.example.com or registry.local:5000", r)
		}
		allowed = append(allowed, reference.Domain(named))
	}
	slices.Sort(allowed)
	return ImagePolicy{allowedRegistries: slices.Compact(allowed)}, nil
}

// AllowedRegistries returns the normalised registries the policy allows; empty means any.
func (p ImagePolicy) AllowedRegistries() []string { return slices.Clone(p.allowedRegistries) }

// imageRules are the IDs of the image rules as one kind's.
type imageRules struct {
	reference, pinned, registry, latestWithDigest RuleID
}

// validateImage parses an image reference as the container runtime does and requires it to be
// pinned by a tag other than latest, or by a digest, and to come from an allowed registry.
func validateImage(image string, policy ImagePolicy, path *field.Path, ids imageRules) (field.ErrorList, admission.Warnings) {
	const example = "registry.example.com/team/app:1.2.3"
	if strings.TrimSpace(image) == "" {
		return field.ErrorList{field.Required(path, "an image reference such as "+example+" is required").WithOrigin(string(ids.reference))}, nil
	}
	if strings.ContainsFunc(image, func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' }) {
		return field.ErrorList{field.Invalid(path, image, "must not contain white space; use a reference such as "+example).WithOrigin(string(ids.reference))}, nil
	}
	named, err := parseImage(image)
	if err != nil {
		return field.ErrorList{field.Invalid(path, image, fmt.Sprintf("is not a valid image reference (%v); use a reference such as %s", err, example)).
			WithOrigin(string(ids.reference))}, nil
	}

	var errs field.ErrorList
	var warnings admission.Warnings
	tagged, hasTag := named.(reference.Tagged)
	_, hasDigest := named.(reference.Digested)
	switch {
	case !hasTag && !hasDigest:
		errs = append(errs, field.Invalid(path, image, fmt.Sprintf(
			"has no tag or digest, so the container runtime would pull %s, whatever latest is that day; pin a version tag such as %s:1.2.3, or a digest",
			reference.TagNameOnly(named), reference.FamiliarName(named))).WithOrigin(string(ids.pinned)))
	case hasTag && tagged.Tag() == "latest" && !hasDigest:
		errs = append(errs, field.Invalid(path, image, fmt.Sprintf(
			"uses the tag latest, which moves without notice; pin a version tag such as %s:1.2.3, or a digest", reference.FamiliarName(named))).
			WithOrigin(string(ids.pinned)))
	case hasTag && tagged.Tag() == "latest":
		warnings = append(warnings, warning(ids.latestWithDigest, "%s: the tag latest is ignored; the digest decides which image runs", path))
	}

	if allowed := policy.allowedRegistries; len(allowed) > 0 {
		if registry := strings.ToLower(reference.Domain(named)); !slices.Contains(allowed, registry) {
			errs = append(errs, field.Invalid(path, image, fmt.Sprintf(
				"is pulled from registry %s, which is not allowed; allowed registries: %s", registry, strings.Join(allowed, ", "))).
				WithOrigin(string(ids.registry)))
		}
	}
	return errs, warnings
}

// parsedImages remembers what reference.ParseNormalizedNamed made of the images validated last:
// an update nearly always carries the image its object was admitted with, and the parse is a
// tenth of a DeployObject's admission. It is emptied when full, so it holds at most
// maxParsedImages references of at most maxParsedImageLen bytes; longer ones are not kept.
var parsedImages = struct {
	sync.RWMutex
	m map[string]parsedImage
}{m: make(map[string]parsedImage)}

const (
	maxParsedImages   = 256
	maxParsedImageLen = 512
)

type parsedImage struct {
	named reference.Named
	err   error
}

// parseImage is reference.ParseNormalizedNamed, remembered in parsedImages.
func parseImage(image string) (reference.Named, error) {
	if len(image) > maxParsedImageLen {
		return reference.ParseNormalizedNamed(image)
	}
	parsedImages.RLock()
	p, ok := parsedImages.m[image]
	parsedImages.RUnlock()
	if ok {
		return p.named, p.err
	}
	named, err := reference.ParseNormalizedNamed(image)
	parsedImages.Lock()
	if len(parsedImages.m) >= maxParsedImages {
		clear(parsedImages.m)
	}
	parsedImages.m[image] = parsedImage{named: named, err: err}
	parsedImages.Unlock()
	return named, err
}
