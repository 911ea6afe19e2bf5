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
)

// The image rules of a DeployObject's spec.image and of a Welcome's, each kind with its own rule IDs.

// ImagePolicy is what admission requires of an image beyond a well-formed reference pinned by a
// tag or a digest. The zero ImagePolicy allows any registry.
type ImagePolicy struct {
	// restricted holds images to allowedRegistries, which may then be empty: no registry allowed.
	restricted        bool
	allowedRegistries []string
}

// NewImagePolicy returns a policy that allows images from the given registries only, or from any
// registry when none is given. Each registry is a host with an optional port, normalised the way
// image references are (docker.io for Docker Hub, however it is spelled) and in lower case.
func NewImagePolicy(registries []string) (ImagePolicy, error) {
	var allowed []string
	for _, r := range registries {
		if strings.TrimSpace(r) == "" {
			continue
		}
		host, err := registryHost(r)
		if err != nil {
			return ImagePolicy{}, err
		}
		allowed = append(allowed, host)
	}
	if len(allowed) == 0 {
		return ImagePolicy{}, nil
	}
	slices.Sort(allowed)
	return ImagePolicy{restricted: true, allowedRegistries: slices.Compact(allowed)}, nil
}

// registryHost normalises a registry entry, or says why it is not a registry host.
func registryHost(entry string) (string, error) {
	// Registry hosts are DNS names, which compare without regard to case.
	r := strings.ToLower(strings.TrimSpace(entry))
	named, err := reference.ParseNormalizedNamed(r + "/image-policy-probe")
	// A single word such as "registry" parses as a Docker Hub repository, so an entry must come
	// back as the registry itself; index.docker.io is the one legacy spelling of docker.io.
	if r == "" || err != nil || strings.Contains(r, "/") || (reference.Domain(named) != r && r != "index.docker.io") {
		return "", fmt.Errorf("allowed registry %q is not a registry host such as registry.example.com or registry.local:5000", r)
	}
	return reference.Domain(named), nil
}

// compileImagePolicy is the image policy of an AdmissionPolicy's allowedRegistries. Unlike the
// flag's, it keeps going past a bad entry: it reports each entry that is not a registry host (a
// blank one included) at its index of path, and allows only the valid ones, so a list of no valid
// entry allows no registry. Only an empty list allows any.
func compileImagePolicy(registries []string, path *field.Path) (ImagePolicy, field.ErrorList) {
	if len(registries) == 0 {
		return ImagePolicy{}, nil
	}
	var errs field.ErrorList
	allowed := []string{}
	for i, entry := range registries {
		host, err := registryHost(entry)
		if err != nil {
			errs = append(errs, field.Invalid(path.Index(i), entry, err.Error()))
			continue
		}
		allowed = append(allowed, host)
	}
	slices.Sort(allowed)
	return ImagePolicy{restricted: true, allowedRegistries: slices.Compact(allowed)}, errs
}

// AllowedRegistries returns the normalised registries the policy allows; nil means any, and an
// empty list none.
func (p ImagePolicy) AllowedRegistries() []string {
	if !p.restricted {
		return nil
	}
	return slices.Clone(p.allowedRegistries)
}

// imageRules are the IDs of the image rules as one kind's.
type imageRules struct {
	reference, pinned, registry, latestWithDigest RuleID
}

// validateImage parses an image reference as the container runtime does and requires it to be
// pinned by a tag other than latest, or by a digest, and to come from an allowed registry.
func validateImage(image string, policy ImagePolicy, path *field.Path, ids imageRules) (field.ErrorList, []Warning) {
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
	var warnings []Warning
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

	if allowed := policy.allowedRegistries; policy.restricted {
		if registry := strings.ToLower(reference.Domain(named)); !slices.Contains(allowed, registry) {
			list := strings.Join(allowed, ", ")
			if len(allowed) == 0 {
				list = "none (the AdmissionPolicy names no valid registry)"
			}
			errs = append(errs, field.Invalid(path, image, fmt.Sprintf(
				"is pulled from registry %s, which is not allowed; allowed registries: %s", registry, list)).
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
