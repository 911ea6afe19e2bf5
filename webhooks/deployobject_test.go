package webhooks

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
)

const (
	// imageDigest is a well-formed sha256 digest (that of the empty string).
	imageDigest = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

	imageRequiredDetail   = "an image reference such as registry.example.com/team/app:1.2.3 is required"
	imageWhiteSpaceDetail = "must not contain white space; use a reference such as registry.example.com/team/app:1.2.3"
	latestDigestWarning   = "spec.image: the tag latest is ignored; the digest decides which image runs"

	portsRequiredDetail = "at least one port is required: the Service exposes spec.ports"
	portNameDetail      = "a name is required when there is more than one port"
	nodePortDetail      = "the Service is of type ClusterIP, which has no node ports; remove nodePort"
	protocolDetail      = `supported values: "TCP", "UDP", "SCTP"`
	dnsLabelDetail      = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', " +
		"and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', " +
		"regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
	portNameCharsetDetail = "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"

	envNameDetail = "every environment variable needs a name"

	registryHostError = "is not a registry host such as registry.example.com or registry.local:5000"
)

// unparseableImage is the error for an image reference the reference library refuses with reason.
func unparseableImage(image, reason string) *field.Error {
	return invalid("spec.image", image,
		"is not a valid image reference ("+reason+"); use a reference such as registry.example.com/team/app:1.2.3")
}

// untaggedImage is the error for an image without tag or digest, which the runtime reads as pulled.
func untaggedImage(image, pulled, familiar string) *field.Error {
	return invalid("spec.image", image, "has no tag or digest, so the container runtime would pull "+pulled+
		", whatever latest is that day; pin a version tag such as "+familiar+":1.2.3, or a digest")
}

// latestImage is the error for an image pinned by the tag latest only.
func latestImage(image, familiar string) *field.Error {
	return invalid("spec.image", image,
		"uses the tag latest, which moves without notice; pin a version tag such as "+familiar+":1.2.3, or a digest")
}

// disallowedRegistry is the error for an image pulled from a registry the policy does not allow.
func disallowedRegistry(image, registry, allowed string) *field.Error {
	return invalid("spec.image", image,
		"is pulled from registry "+registry+", which is not allowed; allowed registries: "+allowed)
}

// imagePolicy returns the policy allowing the given registries, failing the test if it is refused.
func imagePolicy(t *testing.T, registries ...string) ImagePolicy {
	t.Helper()
	policy, err := NewImagePolicy(registries)
	if err != nil {
		t.Fatalf("NewImagePolicy(%q) error = %v", registries, err)
	}
	return policy
}

// servicePort returns a port as defaulting leaves it: targetPort and protocol set.
func servicePort(name string, port int32, targetPort intstr.IntOrString, protocol corev1.Protocol) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Port: port, TargetPort: targetPort, Protocol: protocol}
}

// deployObject returns a valid, defaulted DeployObject "app" running nginx:1.27 behind port 80,
// changed by the given functions.
func deployObject(changes ...func(*appv1.DeployObjectSpec)) *appv1.DeployObject {
	d := &appv1.DeployObject{
		TypeMeta:   metav1.TypeMeta{APIVersion: "app.seedlabs.dev/v1", Kind: "DeployObject"},
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default"},
		Spec: appv1.DeployObjectSpec{
			Replicas: ptr.To[int32](1),
			Image:    "nginx:1.27",
			Ports:    []corev1.ServicePort{servicePort("", 80, intstr.FromInt32(8080), corev1.ProtocolTCP)},
		},
	}
	for _, change := range changes {
		change(&d.Spec)
	}
	return d
}

func TestValidateImage(t *testing.T) {
	hex64 := strings.TrimPrefix(imageDigest, "sha256:")
	tests := []struct {
		name         string
		image        string
		allowed      []string
		wantErrs     field.ErrorList
		wantWarnings admission.Warnings
	}{
		// Pinned references, any registry.
		{name: "familiar name with a tag", image: "nginx:1.27"},
		{name: "library prefix", image: "library/nginx:1.27"},
		{name: "fully qualified Docker Hub name", image: "docker.io/library/nginx:1.27"},
		{name: "legacy Docker Hub host", image: "index.docker.io/nginx:1.27"},
		{name: "Docker Hub user repository", image: "bitnami/redis:7.2.4-debian-12-r0"},
		{name: "digest only", image: "nginx@" + imageDigest},
		{name: "tag and digest", image: "nginx:1.27@" + imageDigest},
		{
			name:         "latest with a digest is allowed with a warning, as the digest decides",
			image:        "nginx:latest@" + imageDigest,
			wantWarnings: admission.Warnings{latestDigestWarning},
		},
		{name: "registry with a port", image: "registry.local:5000/team/app:v1"},
		{name: "registry with a port and a digest", image: "registry.local:5000/team/app@" + imageDigest},
		{name: "localhost with a port", image: "localhost:5000/app:1"},
		{name: "localhost without a port", image: "localhost/app:1"},
		{name: "IPv4 host with a port", image: "10.0.0.1:5000/app:1"},
		{name: "IPv6 host in brackets with a port", image: "[::1]:5000/app:1"},
		{name: "nested repository path", image: "ghcr.io/org/team/app:v0.1.0"},
		{name: "double underscore is a legal separator", image: "ngi__nx:1"},
		{name: "tag of 128 characters", image: "nginx:" + strings.Repeat("t", 128)},
		{name: "Docker Hub repository of 255 characters with library/", image: strings.Repeat("a", 247) + ":1"},
		{name: "tag LATEST is another tag than latest", image: "nginx:LATEST"},
		{name: "uppercase registry host is a legal host name", image: "REGISTRY.LOCAL/team/app:1"},

		// Missing or unpinned.
		{name: "empty", image: "", wantErrs: field.ErrorList{required("spec.image", imageRequiredDetail)}},
		{name: "only white space", image: " \t", wantErrs: field.ErrorList{required("spec.image", imageRequiredDetail)}},
		{
			name:     "bare name means latest",
			image:    "nginx",
			wantErrs: field.ErrorList{untaggedImage("nginx", "docker.io/library/nginx:latest", "nginx")},
		},
		{
			name:     "registry with a port and no tag",
			image:    "registry.local:5000/team/app",
			wantErrs: field.ErrorList{untaggedImage("registry.local:5000/team/app", "registry.local:5000/team/app:latest", "registry.local:5000/team/app")},
		},
		{
			name:     "tag latest",
			image:    "nginx:latest",
			wantErrs: field.ErrorList{latestImage("nginx:latest", "nginx")},
		},
		{
			name:     "tag latest on a fully qualified name is reported with the familiar name",
			image:    "docker.io/library/nginx:latest",
			wantErrs: field.ErrorList{latestImage("docker.io/library/nginx:latest", "nginx")},
		},

		// White space.
		{name: "leading space", image: " nginx:1.27", wantErrs: field.ErrorList{invalid("spec.image", " nginx:1.27", imageWhiteSpaceDetail)}},
		{name: "trailing space", image: "nginx:1.27 ", wantErrs: field.ErrorList{invalid("spec.image", "nginx:1.27 ", imageWhiteSpaceDetail)}},
		{name: "inner space", image: "nginx :1.27", wantErrs: field.ErrorList{invalid("spec.image", "nginx :1.27", imageWhiteSpaceDetail)}},
		{name: "trailing newline", image: "nginx:1.27\n", wantErrs: field.ErrorList{invalid("spec.image", "nginx:1.27\n", imageWhiteSpaceDetail)}},
		{name: "inner tab", image: "nginx\t:1.27", wantErrs: field.ErrorList{invalid("spec.image", "nginx\t:1.27", imageWhiteSpaceDetail)}},

		// Not a reference.
		{name: "empty tag", image: "nginx:", wantErrs: field.ErrorList{unparseableImage("nginx:", "invalid reference format")}},
		{name: "two tags", image: "nginx:1:2", wantErrs: field.ErrorList{unparseableImage("nginx:1:2", "invalid reference format")}},
		{name: "tag starting with a dash", image: "nginx:-1", wantErrs: field.ErrorList{unparseableImage("nginx:-1", "invalid reference format")}},
		{
			name:     "tag of 129 characters",
			image:    "nginx:" + strings.Repeat("t", 129),
			wantErrs: field.ErrorList{unparseableImage("nginx:"+strings.Repeat("t", 129), "invalid reference format")},
		},
		{
			name:     "short digest",
			image:    "nginx@sha256:abc",
			wantErrs: field.ErrorList{unparseableImage("nginx@sha256:abc", "invalid reference format")},
		},
		{
			name:     "sha256 digest of 32 hex characters",
			image:    "nginx@sha256:" + hex64[:32],
			wantErrs: field.ErrorList{unparseableImage("nginx@sha256:"+hex64[:32], "invalid checksum digest length")},
		},
		{
			name:     "uppercase sha256 digest",
			image:    "nginx@sha256:" + strings.ToUpper(hex64),
			wantErrs: field.ErrorList{unparseableImage("nginx@sha256:"+strings.ToUpper(hex64), "invalid checksum digest format")},
		},
		{
			name:     "md5 digest",
			image:    "nginx@md5:" + hex64[:32],
			wantErrs: field.ErrorList{unparseableImage("nginx@md5:"+hex64[:32], "unsupported digest algorithm")},
		},
		{
			name:     "uppercase repository",
			image:    "Nginx:1.0",
			wantErrs: field.ErrorList{unparseableImage("Nginx:1.0", "invalid reference format: repository name (library/Nginx) must be lowercase")},
		},
		{
			name:     "uppercase path under a registry",
			image:    "registry.local/Team/app:1",
			wantErrs: field.ErrorList{unparseableImage("registry.local/Team/app:1", "invalid reference format: repository name (Team/app) must be lowercase")},
		},
		{name: "exclamation mark", image: "nginx!:1", wantErrs: field.ErrorList{unparseableImage("nginx!:1", "invalid reference format")}},
		{name: "triple underscore", image: "ngi___nx:1", wantErrs: field.ErrorList{unparseableImage("ngi___nx:1", "invalid reference format")}},
		{name: "leading dash", image: "-nginx:1", wantErrs: field.ErrorList{unparseableImage("-nginx:1", "invalid reference format")}},
		{
			name:     "URL scheme",
			image:    "https://registry.local/app:1",
			wantErrs: field.ErrorList{unparseableImage("https://registry.local/app:1", "invalid reference format")},
		},
		{
			name:     "non-numeric registry port",
			image:    "registry.local:abc/app:1",
			wantErrs: field.ErrorList{unparseableImage("registry.local:abc/app:1", "invalid reference format")},
		},
		{
			name:     "Docker Hub repository of 256 characters with library/",
			image:    strings.Repeat("a", 248) + ":1",
			wantErrs: field.ErrorList{unparseableImage(strings.Repeat("a", 248)+":1", "repository name must not be more than 255 characters")},
		},
		{
			name:     "repository path of 256 characters under a registry",
			image:    "registry.local/" + strings.Repeat("a", 256) + ":1",
			wantErrs: field.ErrorList{unparseableImage("registry.local/"+strings.Repeat("a", 256)+":1", "repository name must not be more than 255 characters")},
		},
		{
			name:  "64 hexadecimal characters look like an image ID",
			image: hex64,
			wantErrs: field.ErrorList{unparseableImage(hex64,
				"invalid repository name ("+hex64+"), cannot specify 64-byte hexadecimal strings")},
		},

		// Allow-list, matched on the normalised registry host.
		{name: "familiar name counts as docker.io", image: "nginx:1.27", allowed: []string{"docker.io"}},
		{name: "library prefix counts as docker.io", image: "library/nginx:1.27", allowed: []string{"docker.io"}},
		{name: "legacy host counts as docker.io", image: "index.docker.io/nginx:1.27", allowed: []string{"docker.io"}},
		{name: "docker.io allowed as index.docker.io", image: "docker.io/library/nginx:1.27", allowed: []string{"index.docker.io"}},
		{name: "one of several allowed registries", image: "quay.io/org/app@" + imageDigest, allowed: []string{"ghcr.io", "quay.io"}},
		{name: "registry with its port", image: "registry.local:5000/team/app:v1", allowed: []string{"registry.local:5000"}},
		{name: "localhost with its port", image: "localhost:5000/app:1", allowed: []string{"localhost:5000"}},
		{name: "IPv6 host with its port", image: "[::1]:5000/app:1", allowed: []string{"[::1]:5000"}},
		{
			name:     "ghcr.io when only docker.io is allowed",
			image:    "ghcr.io/org/app:1",
			allowed:  []string{"docker.io"},
			wantErrs: field.ErrorList{disallowedRegistry("ghcr.io/org/app:1", "ghcr.io", "docker.io")},
		},
		{
			name:     "familiar name when Docker Hub is not allowed",
			image:    "nginx:1.27",
			allowed:  []string{"quay.io", "ghcr.io"},
			wantErrs: field.ErrorList{disallowedRegistry("nginx:1.27", "docker.io", "ghcr.io, quay.io")},
		},
		{
			name:     "allow-list spelled index.docker.io is reported as docker.io",
			image:    "quay.io/org/app:1",
			allowed:  []string{"index.docker.io"},
			wantErrs: field.ErrorList{disallowedRegistry("quay.io/org/app:1", "quay.io", "docker.io")},
		},
		{
			name:     "the port is part of the registry: no port",
			image:    "registry.local/team/app:v1",
			allowed:  []string{"registry.local:5000"},
			wantErrs: field.ErrorList{disallowedRegistry("registry.local/team/app:v1", "registry.local", "registry.local:5000")},
		},
		{
			name:     "the port is part of the registry: another port",
			image:    "registry.local:5000/team/app:v1",
			allowed:  []string{"registry.local"},
			wantErrs: field.ErrorList{disallowedRegistry("registry.local:5000/team/app:v1", "registry.local:5000", "registry.local")},
		},
		{
			name:     "Docker Hub's registry endpoint is not docker.io",
			image:    "registry-1.docker.io/library/nginx:1.27",
			allowed:  []string{"docker.io"},
			wantErrs: field.ErrorList{disallowedRegistry("registry-1.docker.io/library/nginx:1.27", "registry-1.docker.io", "docker.io")},
		},
		{
			name:    "registry hosts match without regard to case",
			image:   "REGISTRY.LOCAL/team/app:1",
			allowed: []string{"registry.local"},
		},
		{
			name:    "a mixed-case Docker Hub host is docker.io",
			image:   "Docker.io/library/nginx:1.27",
			allowed: []string{"docker.io"},
		},
		{
			name:    "latest from a disallowed registry gives both errors",
			image:   "quay.io/org/app:latest",
			allowed: []string{"docker.io"},
			wantErrs: field.ErrorList{
				latestImage("quay.io/org/app:latest", "quay.io/org/app"),
				disallowedRegistry("quay.io/org/app:latest", "quay.io", "docker.io"),
			},
		},
		{
			name:    "no tag from a disallowed registry gives both errors",
			image:   "quay.io/org/app",
			allowed: []string{"docker.io"},
			wantErrs: field.ErrorList{
				untaggedImage("quay.io/org/app", "quay.io/org/app:latest", "quay.io/org/app"),
				disallowedRegistry("quay.io/org/app", "quay.io", "docker.io"),
			},
		},
		{
			name:         "latest with a digest from a disallowed registry warns and refuses",
			image:        "quay.io/org/app:latest@" + imageDigest,
			allowed:      []string{"docker.io"},
			wantErrs:     field.ErrorList{disallowedRegistry("quay.io/org/app:latest@"+imageDigest, "quay.io", "docker.io")},
			wantWarnings: admission.Warnings{latestDigestWarning},
		},
		{
			name:     "unparseable image gets no registry error",
			image:    "Nginx:1.0",
			allowed:  []string{"quay.io"},
			wantErrs: field.ErrorList{unparseableImage("Nginx:1.0", "invalid reference format: repository name (library/Nginx) must be lowercase")},
		},
		{
			name:     "empty image gets no registry error",
			image:    "",
			allowed:  []string{"quay.io"},
			wantErrs: field.ErrorList{required("spec.image", imageRequiredDetail)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			policy := imagePolicy(t, tc.allowed...)

			gotErrs, gotWarnings := validateImage(tc.image, policy, field.NewPath("spec", "image"), deployObjectImageRules)

			if diff := gocmp.Diff(tc.wantErrs, gotErrs, compareFieldErrors, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("validateImage(%q) errors (-want +got):\n%s", tc.image, diff)
			}
			if diff := gocmp.Diff(tc.wantWarnings, withoutRuleIDs(t, gotWarnings), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("validateImage(%q) warnings (-want +got):\n%s", tc.image, diff)
			}
		})
	}
}

func TestNewImagePolicy(t *testing.T) {
	tests := []struct {
		name       string
		registries []string
		want       []string
		wantErr    string
	}{
		{name: "nil allows any registry", registries: nil},
		{name: "empty list allows any registry", registries: []string{}},
		{name: "blank entries are skipped", registries: []string{"", "  ", "\t"}},
		{name: "docker.io", registries: []string{"docker.io"}, want: []string{"docker.io"}},
		{name: "index.docker.io is docker.io", registries: []string{"index.docker.io"}, want: []string{"docker.io"}},
		{
			name:       "trimmed, deduplicated and sorted",
			registries: []string{" quay.io ", "ghcr.io", "", "quay.io", "docker.io", "index.docker.io"},
			want:       []string{"docker.io", "ghcr.io", "quay.io"},
		},
		{
			name:       "hosts with ports, localhost and IP addresses",
			registries: []string{"registry.local:5000", "localhost:5000", "localhost", "10.0.0.1:5000", "[::1]:5000"},
			want:       []string{"10.0.0.1:5000", "[::1]:5000", "localhost", "localhost:5000", "registry.local:5000"},
		},
		{name: "registry with a path", registries: []string{"docker.io/library"}, wantErr: `allowed registry "docker.io/library" ` + registryHostError},
		{name: "registry with a trailing slash", registries: []string{"registry.local/"}, wantErr: `allowed registry "registry.local/" ` + registryHostError},
		{name: "URL", registries: []string{"https://registry.local"}, wantErr: `allowed registry "https://registry.local" ` + registryHostError},
		{name: "non-numeric port", registries: []string{"registry.local:abc"}, wantErr: `allowed registry "registry.local:abc" ` + registryHostError},
		{name: "inner space", registries: []string{"registry .local"}, wantErr: `allowed registry "registry .local" ` + registryHostError},
		{name: "uppercase host is lowercased", registries: []string{"DOCKER.IO"}, want: []string{"docker.io"}},
		{name: "mixed-case host with port is lowercased", registries: []string{"Registry.Local:5000"}, want: []string{"registry.local:5000"}},
		{
			name:       "one bad entry refuses the whole list and is named trimmed",
			registries: []string{"docker.io", " quay.io/org "},
			wantErr:    `allowed registry "quay.io/org" ` + registryHostError,
		},
		// A single label other than localhost is not a host in an image reference: "registry/app:1"
		// is the Docker Hub repository registry/app. Such an entry must not quietly allow docker.io.
		{name: "single-label name is not a registry host", registries: []string{"registry"}, wantErr: `allowed registry "registry" ` + registryHostError},
		{name: "registry host typed without its domain", registries: []string{"ghcr"}, wantErr: `allowed registry "ghcr" ` + registryHostError},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			policy, err := NewImagePolicy(tc.registries)

			var gotErr string
			if err != nil {
				gotErr = err.Error()
			}
			if gotErr != tc.wantErr {
				t.Errorf("NewImagePolicy(%q) error = %q, want %q", tc.registries, gotErr, tc.wantErr)
			}
			if diff := gocmp.Diff(tc.want, policy.AllowedRegistries(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("NewImagePolicy(%q) allowed registries (-want +got):\n%s", tc.registries, diff)
			}
		})
	}

	t.Run("allowed registries are a copy", func(t *testing.T) {
		policy := imagePolicy(t, "docker.io", "quay.io")
		got := policy.AllowedRegistries()
		got[0] = "evil.example.com"

		if diff := gocmp.Diff([]string{"docker.io", "quay.io"}, policy.AllowedRegistries()); diff != "" {
			t.Errorf("allowed registries after editing the returned slice (-want +got):\n%s", diff)
		}
	})

	t.Run("the caller's list is left alone", func(t *testing.T) {
		registries := []string{" quay.io ", "index.docker.io"}
		imagePolicy(t, registries...)

		if diff := gocmp.Diff([]string{" quay.io ", "index.docker.io"}, registries); diff != "" {
			t.Errorf("registries after NewImagePolicy (-want +got):\n%s", diff)
		}
	})
}

func TestValidateServicePorts(t *testing.T) {
	tcp := corev1.ProtocolTCP
	tests := []struct {
		name  string
		ports []corev1.ServicePort
		want  field.ErrorList
	}{
		{name: "nil", ports: nil, want: field.ErrorList{required("spec.ports", portsRequiredDetail)}},
		{name: "empty", ports: []corev1.ServicePort{}, want: field.ErrorList{required("spec.ports", portsRequiredDetail)}},
		{name: "single unnamed port", ports: []corev1.ServicePort{servicePort("", 80, intstr.FromInt32(8080), tcp)}},
		{name: "single named port", ports: []corev1.ServicePort{servicePort("http", 80, intstr.FromInt32(8080), tcp)}},
		{
			name: "two named ports",
			ports: []corev1.ServicePort{
				servicePort("http", 80, intstr.FromInt32(8080), tcp),
				servicePort("https", 443, intstr.FromString("https"), tcp),
			},
		},
		{
			name: "two unnamed ports both need a name",
			ports: []corev1.ServicePort{
				servicePort("", 80, intstr.FromInt32(8080), tcp),
				servicePort("", 443, intstr.FromInt32(8443), tcp),
			},
			want: field.ErrorList{
				required("spec.ports[0].name", portNameDetail),
				required("spec.ports[1].name", portNameDetail),
			},
		},
		{
			name: "one of two ports unnamed",
			ports: []corev1.ServicePort{
				servicePort("http", 80, intstr.FromInt32(8080), tcp),
				servicePort("", 443, intstr.FromInt32(8443), tcp),
			},
			want: field.ErrorList{required("spec.ports[1].name", portNameDetail)},
		},
		{
			name: "duplicate names",
			ports: []corev1.ServicePort{
				servicePort("http", 80, intstr.FromInt32(8080), tcp),
				servicePort("http", 443, intstr.FromInt32(8443), tcp),
			},
			want: field.ErrorList{duplicate("spec.ports[1].name", "http")},
		},
		{
			name: "one named target for two ports over one protocol",
			ports: []corev1.ServicePort{
				servicePort("http", 80, intstr.FromString("web"), tcp),
				servicePort("alt", 8080, intstr.FromString("web"), tcp),
			},
		},
		{
			name: "one named target for two ports over two protocols",
			ports: []corev1.ServicePort{
				servicePort("dns-tcp", 53, intstr.FromString("dns"), tcp),
				servicePort("dns-udp", 53, intstr.FromString("dns"), corev1.ProtocolUDP),
				servicePort("dns-sctp", 5353, intstr.FromString("dns"), corev1.ProtocolSCTP),
			},
			want: field.ErrorList{
				invalid("spec.ports[1].targetPort", "dns",
					"must name a container port of its own: spec.ports[0] already targets it over TCP, and a container port has one protocol"),
				invalid("spec.ports[2].targetPort", "dns",
					"must name a container port of its own: spec.ports[0] already targets it over TCP, and a container port has one protocol"),
			},
		},
		{
			name:  "uppercase name",
			ports: []corev1.ServicePort{servicePort("HTTP", 80, intstr.FromInt32(8080), tcp)},
			want:  field.ErrorList{invalid("spec.ports[0].name", "HTTP", dnsLabelDetail)},
		},
		{
			name:  "name starting with a dash",
			ports: []corev1.ServicePort{servicePort("-a", 80, intstr.FromInt32(8080), tcp)},
			want:  field.ErrorList{invalid("spec.ports[0].name", "-a", dnsLabelDetail)},
		},
		{
			name:  "name with a dot",
			ports: []corev1.ServicePort{servicePort("web.http", 80, intstr.FromInt32(8080), tcp)},
			want:  field.ErrorList{invalid("spec.ports[0].name", "web.http", "must not contain dots")},
		},
		{
			name:  "name of 63 characters",
			ports: []corev1.ServicePort{servicePort(strings.Repeat("a", 63), 80, intstr.FromInt32(8080), tcp)},
		},
		{
			name:  "name of 64 characters",
			ports: []corev1.ServicePort{servicePort(strings.Repeat("a", 64), 80, intstr.FromInt32(8080), tcp)},
			want:  field.ErrorList{invalid("spec.ports[0].name", strings.Repeat("a", 64), "must be no more than 63 characters")},
		},
		{
			name: "invalid name used twice is reported as invalid twice and duplicate once",
			ports: []corev1.ServicePort{
				servicePort("HTTP", 80, intstr.FromInt32(8080), tcp),
				servicePort("HTTP", 443, intstr.FromInt32(8443), tcp),
			},
			want: field.ErrorList{
				invalid("spec.ports[0].name", "HTTP", dnsLabelDetail),
				invalid("spec.ports[1].name", "HTTP", dnsLabelDetail),
				duplicate("spec.ports[1].name", "HTTP"),
			},
		},
		{name: "port 1", ports: []corev1.ServicePort{servicePort("", 1, intstr.FromInt32(8080), tcp)}},
		{name: "port 65535", ports: []corev1.ServicePort{servicePort("", 65535, intstr.FromInt32(8080), tcp)}},
		{
			name:  "port 0",
			ports: []corev1.ServicePort{servicePort("", 0, intstr.FromInt32(8080), tcp)},
			want:  field.ErrorList{invalid("spec.ports[0].port", int32(0), portDetail)},
		},
		{
			name:  "port 65536",
			ports: []corev1.ServicePort{servicePort("", 65536, intstr.FromInt32(8080), tcp)},
			want:  field.ErrorList{invalid("spec.ports[0].port", int32(65536), portDetail)},
		},
		{
			name:  "negative port",
			ports: []corev1.ServicePort{servicePort("", -80, intstr.FromInt32(8080), tcp)},
			want:  field.ErrorList{invalid("spec.ports[0].port", int32(-80), portDetail)},
		},
		{name: "targetPort 65535", ports: []corev1.ServicePort{servicePort("", 80, intstr.FromInt32(65535), tcp)}},
		{
			name:  "targetPort 0",
			ports: []corev1.ServicePort{servicePort("", 80, intstr.FromInt32(0), tcp)},
			want:  field.ErrorList{invalid("spec.ports[0].targetPort", int32(0), portDetail)},
		},
		{
			name:  "targetPort 70000",
			ports: []corev1.ServicePort{servicePort("", 80, intstr.FromInt32(70000), tcp)},
			want:  field.ErrorList{invalid("spec.ports[0].targetPort", int32(70000), portDetail)},
		},
		{name: "named targetPort", ports: []corev1.ServicePort{servicePort("", 80, intstr.FromString("http"), tcp)}},
		{name: "named targetPort of 15 characters", ports: []corev1.ServicePort{servicePort("", 80, intstr.FromString("abcdefghijklmno"), tcp)}},
		{
			name:  "named targetPort with an underscore",
			ports: []corev1.ServicePort{servicePort("", 80, intstr.FromString("not_valid"), tcp)},
			want:  field.ErrorList{invalid("spec.ports[0].targetPort", "not_valid", portNameCharsetDetail)},
		},
		{
			name:  "named targetPort of 16 characters",
			ports: []corev1.ServicePort{servicePort("", 80, intstr.FromString("abcdefghijklmnop"), tcp)},
			want:  field.ErrorList{invalid("spec.ports[0].targetPort", "abcdefghijklmnop", "must be no more than 15 characters")},
		},
		{
			name:  "uppercase named targetPort",
			ports: []corev1.ServicePort{servicePort("", 80, intstr.FromString("HTTP"), tcp)},
			want: field.ErrorList{
				invalid("spec.ports[0].targetPort", "HTTP", portNameCharsetDetail),
				invalid("spec.ports[0].targetPort", "HTTP", "must contain at least one letter (a-z)"),
			},
		},
		{
			name:  "number written as a string is a name without a letter",
			ports: []corev1.ServicePort{servicePort("", 80, intstr.FromString("8080"), tcp)},
			want:  field.ErrorList{invalid("spec.ports[0].targetPort", "8080", "must contain at least one letter (a-z)")},
		},
		{
			name:  "named targetPort with consecutive hyphens",
			ports: []corev1.ServicePort{servicePort("", 80, intstr.FromString("web--http"), tcp)},
			want:  field.ErrorList{invalid("spec.ports[0].targetPort", "web--http", "must not contain consecutive hyphens")},
		},
		{name: "protocol UDP", ports: []corev1.ServicePort{servicePort("", 53, intstr.FromInt32(5353), corev1.ProtocolUDP)}},
		{name: "protocol SCTP", ports: []corev1.ServicePort{servicePort("", 9000, intstr.FromInt32(9000), corev1.ProtocolSCTP)}},
		{
			name:  "protocol HTTP",
			ports: []corev1.ServicePort{servicePort("", 80, intstr.FromInt32(8080), "HTTP")},
			want:  field.ErrorList{notSupported("spec.ports[0].protocol", corev1.Protocol("HTTP"), protocolDetail)},
		},
		{
			name:  "protocol in lowercase",
			ports: []corev1.ServicePort{servicePort("", 80, intstr.FromInt32(8080), "tcp")},
			want:  field.ErrorList{notSupported("spec.ports[0].protocol", corev1.Protocol("tcp"), protocolDetail)},
		},
		{
			name: "same port twice over TCP",
			ports: []corev1.ServicePort{
				servicePort("a", 80, intstr.FromInt32(8080), tcp),
				servicePort("b", 80, intstr.FromInt32(8081), tcp),
			},
			want: field.ErrorList{duplicate("spec.ports[1]", "80/TCP")},
		},
		{
			name: "same port three times over TCP is reported at each repeat",
			ports: []corev1.ServicePort{
				servicePort("a", 80, intstr.FromInt32(8080), tcp),
				servicePort("b", 80, intstr.FromInt32(8081), tcp),
				servicePort("c", 80, intstr.FromInt32(8082), tcp),
			},
			want: field.ErrorList{
				duplicate("spec.ports[1]", "80/TCP"),
				duplicate("spec.ports[2]", "80/TCP"),
			},
		},
		{
			name: "same port over TCP and UDP",
			ports: []corev1.ServicePort{
				servicePort("dns-tcp", 53, intstr.FromInt32(5353), tcp),
				servicePort("dns-udp", 53, intstr.FromInt32(5353), corev1.ProtocolUDP),
			},
		},
		{
			name: "same targetPort behind two ports",
			ports: []corev1.ServicePort{
				servicePort("http", 80, intstr.FromInt32(8080), tcp),
				servicePort("alt", 8080, intstr.FromInt32(8080), tcp),
			},
		},
		{
			name: "nodePort on a ClusterIP Service",
			ports: []corev1.ServicePort{{
				Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: tcp, NodePort: 30080,
			}},
			want: field.ErrorList{invalid("spec.ports[0].nodePort", int32(30080), nodePortDetail)},
		},
		{
			name: "every rule broken on one port, in field order",
			ports: []corev1.ServicePort{
				servicePort("a", 443, intstr.FromInt32(8443), "HTTP"),
				{Name: "-a", Port: 0, TargetPort: intstr.FromString("not_valid"), Protocol: "HTTP", NodePort: 30080},
				{Name: "a", Port: 443, TargetPort: intstr.FromInt32(-1), Protocol: "HTTP"},
			},
			want: field.ErrorList{
				notSupported("spec.ports[0].protocol", corev1.Protocol("HTTP"), protocolDetail),
				invalid("spec.ports[1].name", "-a", dnsLabelDetail),
				invalid("spec.ports[1].port", int32(0), portDetail),
				invalid("spec.ports[1].targetPort", "not_valid", portNameCharsetDetail),
				notSupported("spec.ports[1].protocol", corev1.Protocol("HTTP"), protocolDetail),
				invalid("spec.ports[1].nodePort", int32(30080), nodePortDetail),
				duplicate("spec.ports[2].name", "a"),
				invalid("spec.ports[2].targetPort", int32(-1), portDetail),
				notSupported("spec.ports[2].protocol", corev1.Protocol("HTTP"), protocolDetail),
				duplicate("spec.ports[2]", "443/HTTP"),
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := validateServicePorts(tc.ports, field.NewPath("spec", "ports"))

			if diff := gocmp.Diff(tc.want, got, compareUnruledErrors, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateEnv(t *testing.T) {
	tests := []struct {
		name         string
		env          []corev1.EnvVar
		wantErrs     field.ErrorList
		wantWarnings admission.Warnings
	}{
		{name: "none", env: nil},
		{name: "unique names", env: []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B"}, {Name: "LOG_LEVEL", Value: "debug"}}},
		{name: "names differing in case are different variables", env: []corev1.EnvVar{{Name: "A"}, {Name: "a"}}},
		{
			name:     "empty name",
			env:      []corev1.EnvVar{{Name: "A"}, {Name: "", Value: "1"}},
			wantErrs: field.ErrorList{required("spec.env[1].name", envNameDetail)},
		},
		{
			name:     "white-space name",
			env:      []corev1.EnvVar{{Name: " \t", Value: "1"}},
			wantErrs: field.ErrorList{required("spec.env[0].name", envNameDetail)},
		},
		{
			name: "two empty names are errors, not duplicates",
			env:  []corev1.EnvVar{{Name: ""}, {Name: "A"}, {Name: ""}},
			wantErrs: field.ErrorList{
				required("spec.env[0].name", envNameDetail),
				required("spec.env[2].name", envNameDetail),
			},
		},
		{
			name:         "duplicate name is a warning",
			env:          []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B"}, {Name: "A", Value: "2"}},
			wantWarnings: admission.Warnings{"spec.env[2].name: A is also set by spec.env[0]; Kubernetes keeps the last value"},
		},
		{
			name: "name set three times warns at each repeat, naming the first",
			env:  []corev1.EnvVar{{Name: "B"}, {Name: "A"}, {Name: "A"}, {Name: "B"}, {Name: "A"}},
			wantWarnings: admission.Warnings{
				"spec.env[2].name: A is also set by spec.env[1]; Kubernetes keeps the last value",
				"spec.env[3].name: B is also set by spec.env[0]; Kubernetes keeps the last value",
				"spec.env[4].name: A is also set by spec.env[1]; Kubernetes keeps the last value",
			},
		},
		{
			name: "value and valueFrom under one name",
			env: []corev1.EnvVar{
				{Name: "PASSWORD", Value: "x"},
				{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "app"}, Key: "password",
				}}},
			},
			wantWarnings: admission.Warnings{"spec.env[1].name: PASSWORD is also set by spec.env[0]; Kubernetes keeps the last value"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gotErrs, gotWarnings := validateEnv(tc.env, field.NewPath("spec", "env"))

			if diff := gocmp.Diff(tc.wantErrs, gotErrs, compareUnruledErrors, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if diff := gocmp.Diff(tc.wantWarnings, withoutRuleIDs(t, gotWarnings), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateRequestsWithinLimits(t *testing.T) {
	tests := []struct {
		name      string
		resources corev1.ResourceRequirements
		want      field.ErrorList
	}{
		{name: "none", resources: corev1.ResourceRequirements{}},
		{
			name: "requests below limits",
			resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: q("500m"), corev1.ResourceMemory: q("256Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("512Mi")},
			},
		},
		{
			name: "cpu request above limit",
			resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: q("2")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: q("1")},
			},
			want: field.ErrorList{invalid("spec.resources.requests[cpu]", "2", "must not be above the limit 1")},
		},
		{
			name: "cpu request in millicores above limit",
			resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: q("1500m")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: q("1")},
			},
			want: field.ErrorList{invalid("spec.resources.requests[cpu]", "1500m", "must not be above the limit 1")},
		},
		{
			name: "memory request equal to limit in other units",
			resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceMemory: q("1Gi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: q("1024Mi")},
			},
		},
		{
			name: "1G is below 1Gi",
			resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceMemory: q("1G")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: q("1Gi")},
			},
		},
		{
			name: "1Gi is above 1G",
			resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceMemory: q("1Gi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: q("1G")},
			},
			want: field.ErrorList{invalid("spec.resources.requests[memory]", "1Gi", "must not be above the limit 1G")},
		},
		{
			name:      "request without limit",
			resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("64")}},
		},
		{
			name:      "limit without request",
			resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: q("1Mi")}},
		},
		{
			name: "limit of another resource does not bound a request",
			resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: q("2")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: q("1")},
			},
		},
		{
			name: "only the resource above its limit is reported",
			resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("2Gi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("1Gi")},
			},
			want: field.ErrorList{invalid("spec.resources.requests[memory]", "2Gi", "must not be above the limit 1Gi")},
		},
		{
			// Five resources so that an unsorted map walk fails this case almost every run.
			name: "several resources above their limits are reported sorted by name",
			resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{
					corev1.ResourceMemory:           q("2Gi"),
					"hugepages-2Mi":                 q("4Mi"),
					"example.com/gpu":               q("2"),
					corev1.ResourceEphemeralStorage: q("2Gi"),
					corev1.ResourceCPU:              q("2"),
				},
				Limits: corev1.ResourceList{
					corev1.ResourceMemory:           q("1Gi"),
					"hugepages-2Mi":                 q("2Mi"),
					"example.com/gpu":               q("1"),
					corev1.ResourceEphemeralStorage: q("1Gi"),
					corev1.ResourceCPU:              q("1"),
				},
			},
			want: field.ErrorList{
				invalid("spec.resources.requests[cpu]", "2", "must not be above the limit 1"),
				invalid("spec.resources.requests[ephemeral-storage]", "2Gi", "must not be above the limit 1Gi"),
				invalid("spec.resources.requests[example.com/gpu]", "2", "must equal the limit 1: example.com/gpu cannot be overcommitted"),
				invalid("spec.resources.requests[hugepages-2Mi]", "4Mi", "must equal the limit 2Mi: hugepages-2Mi cannot be overcommitted"),
				invalid("spec.resources.requests[memory]", "2Gi", "must not be above the limit 1Gi"),
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := validateResources(tc.resources, field.NewPath("spec", "resources"))

			if diff := gocmp.Diff(tc.want, got, compareUnruledErrors, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDefaultDeployObject(t *testing.T) {
	tcp, udp := corev1.ProtocolTCP, corev1.ProtocolUDP
	tests := []struct {
		name string
		spec appv1.DeployObjectSpec
		want appv1.DeployObjectSpec
	}{
		{
			name: "empty spec gets one replica",
			spec: appv1.DeployObjectSpec{},
			want: appv1.DeployObjectSpec{Replicas: ptr.To[int32](1)},
		},
		{
			name: "replicas 0 is kept",
			spec: appv1.DeployObjectSpec{Replicas: ptr.To[int32](0)},
			want: appv1.DeployObjectSpec{Replicas: ptr.To[int32](0)},
		},
		{
			name: "replicas 5 is kept",
			spec: appv1.DeployObjectSpec{Replicas: ptr.To[int32](5)},
			want: appv1.DeployObjectSpec{Replicas: ptr.To[int32](5)},
		},
		{
			name: "unset protocol and targetPort",
			spec: appv1.DeployObjectSpec{Replicas: ptr.To[int32](2), Ports: []corev1.ServicePort{{Port: 80}}},
			want: appv1.DeployObjectSpec{
				Replicas: ptr.To[int32](2),
				Ports:    []corev1.ServicePort{servicePort("", 80, intstr.FromInt32(80), tcp)},
			},
		},
		{
			name: "explicit protocol is kept",
			spec: appv1.DeployObjectSpec{Replicas: ptr.To[int32](2), Ports: []corev1.ServicePort{{Port: 53, Protocol: udp}}},
			want: appv1.DeployObjectSpec{
				Replicas: ptr.To[int32](2),
				Ports:    []corev1.ServicePort{servicePort("", 53, intstr.FromInt32(53), udp)},
			},
		},
		{
			name: "invalid protocol is kept for validation to refuse",
			spec: appv1.DeployObjectSpec{Replicas: ptr.To[int32](2), Ports: []corev1.ServicePort{{Port: 80, Protocol: "HTTP"}}},
			want: appv1.DeployObjectSpec{
				Replicas: ptr.To[int32](2),
				Ports:    []corev1.ServicePort{servicePort("", 80, intstr.FromInt32(80), "HTTP")},
			},
		},
		{
			name: "numeric targetPort is kept",
			spec: appv1.DeployObjectSpec{Replicas: ptr.To[int32](2), Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}},
			want: appv1.DeployObjectSpec{
				Replicas: ptr.To[int32](2),
				Ports:    []corev1.ServicePort{servicePort("", 80, intstr.FromInt32(8080), tcp)},
			},
		},
		{
			name: "named targetPort is kept",
			spec: appv1.DeployObjectSpec{Replicas: ptr.To[int32](2), Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromString("http")}}},
			want: appv1.DeployObjectSpec{
				Replicas: ptr.To[int32](2),
				Ports:    []corev1.ServicePort{servicePort("", 80, intstr.FromString("http"), tcp)},
			},
		},
		{
			name: "empty string targetPort is unset",
			spec: appv1.DeployObjectSpec{Replicas: ptr.To[int32](2), Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromString("")}}},
			want: appv1.DeployObjectSpec{
				Replicas: ptr.To[int32](2),
				Ports:    []corev1.ServicePort{servicePort("", 80, intstr.FromInt32(80), tcp)},
			},
		},
		{
			name: "targetPort 0 is unset, as in a Service",
			spec: appv1.DeployObjectSpec{Replicas: ptr.To[int32](2), Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(0)}}},
			want: appv1.DeployObjectSpec{
				Replicas: ptr.To[int32](2),
				Ports:    []corev1.ServicePort{servicePort("", 80, intstr.FromInt32(80), tcp)},
			},
		},
		{
			name: "invalid port is copied to the unset targetPort and left for validation",
			spec: appv1.DeployObjectSpec{Replicas: ptr.To[int32](2), Ports: []corev1.ServicePort{{Port: 70000}}},
			want: appv1.DeployObjectSpec{
				Replicas: ptr.To[int32](2),
				Ports:    []corev1.ServicePort{servicePort("", 70000, intstr.FromInt32(70000), tcp)},
			},
		},
		{
			name: "every port is defaulted on its own",
			spec: appv1.DeployObjectSpec{Ports: []corev1.ServicePort{
				{Name: "http", Port: 80, TargetPort: intstr.FromString("web"), Protocol: tcp},
				{Name: "dns", Port: 53, Protocol: udp},
				{Name: "metrics", Port: 9090},
			}},
			want: appv1.DeployObjectSpec{
				Replicas: ptr.To[int32](1),
				Ports: []corev1.ServicePort{
					servicePort("http", 80, intstr.FromString("web"), tcp),
					servicePort("dns", 53, intstr.FromInt32(53), udp),
					servicePort("metrics", 9090, intstr.FromInt32(9090), tcp),
				},
			},
		},
		{
			name: "fields without defaults are untouched",
			spec: appv1.DeployObjectSpec{
				Replicas: ptr.To[int32](3),
				Image:    "nginx:latest",
				Env:      []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: ""}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
				},
				Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: tcp, NodePort: 30080}},
			},
			want: appv1.DeployObjectSpec{
				Replicas: ptr.To[int32](3),
				Image:    "nginx:latest",
				Env:      []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: ""}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
				},
				Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: tcp, NodePort: 30080}},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := &appv1.DeployObject{
				ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default", Labels: map[string]string{"team": "web"}},
				Spec:       tc.spec,
				Status:     appv1.DeployObjectStatus{ObservedGeneration: 3, ReadyReplicas: 2},
			}
			wantMeta, wantStatus := *d.ObjectMeta.DeepCopy(), *d.Status.DeepCopy()

			DefaultDeployObject(d)

			if diff := gocmp.Diff(tc.want, d.Spec); diff != "" {
				t.Errorf("spec after defaulting (-want +got):\n%s", diff)
			}
			if diff := gocmp.Diff(wantMeta, d.ObjectMeta); diff != "" {
				t.Errorf("metadata changed by defaulting (-want +got):\n%s", diff)
			}
			if diff := gocmp.Diff(wantStatus, d.Status); diff != "" {
				t.Errorf("status changed by defaulting (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("defaults are not shared", func(t *testing.T) {
		first, second := &appv1.DeployObject{}, &appv1.DeployObject{}
		DefaultDeployObject(first)
		DefaultDeployObject(second)

		*first.Spec.Replicas = 7

		if got := *second.Spec.Replicas; got != 1 {
			t.Errorf("second DeployObject's replicas = %d after editing the first's, want 1: defaults share a pointer", got)
		}
	})
}

func TestValidateDeployObject(t *testing.T) {
	tests := []struct {
		name         string
		object       *appv1.DeployObject
		allowed      []string
		wantErrs     field.ErrorList
		wantWarnings admission.Warnings
	}{
		{name: "minimal valid object", object: deployObject()},
		{name: "valid object under an allow-list", object: deployObject(), allowed: []string{"docker.io"}},
		{name: "unset replicas is valid", object: deployObject(func(s *appv1.DeployObjectSpec) { s.Replicas = nil })},
		{name: "replicas 0 is valid", object: deployObject(func(s *appv1.DeployObjectSpec) { s.Replicas = ptr.To[int32](0) })},
		{
			name:     "replicas -1",
			object:   deployObject(func(s *appv1.DeployObjectSpec) { s.Replicas = ptr.To[int32](-1) }),
			wantErrs: field.ErrorList{invalid("spec.replicas", int32(-1), replicasDetail)},
		},
		{
			name:     "no ports",
			object:   deployObject(func(s *appv1.DeployObjectSpec) { s.Ports = nil }),
			wantErrs: field.ErrorList{required("spec.ports", portsRequiredDetail)},
		},
		{
			name:     "image from a registry outside the allow-list",
			object:   deployObject(func(s *appv1.DeployObjectSpec) { s.Image = "quay.io/team/app:1" }),
			allowed:  []string{"docker.io"},
			wantErrs: field.ErrorList{disallowedRegistry("quay.io/team/app:1", "quay.io", "docker.io")},
		},
		{
			name: "fully specified valid object with warnings",
			object: deployObject(func(s *appv1.DeployObjectSpec) {
				s.Replicas = ptr.To[int32](3)
				s.Image = "registry.local:5000/team/app:latest@" + imageDigest
				s.Env = []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "A", Value: "2"}}
				s.Resources = corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: q("500m")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: q("1")},
				}
				s.Ports = []corev1.ServicePort{
					servicePort("http", 80, intstr.FromString("http"), corev1.ProtocolTCP),
					servicePort("dns", 53, intstr.FromInt32(5353), corev1.ProtocolUDP),
				}
			}),
			allowed: []string{"registry.local:5000"},
			wantWarnings: admission.Warnings{
				latestDigestWarning,
				"spec.env[1].name: A is also set by spec.env[0]; Kubernetes keeps the last value",
			},
		},
		{
			name: "every rule broken at once returns every violation in field order",
			object: deployObject(func(s *appv1.DeployObjectSpec) {
				s.Image = "quay.io/team/app"
				s.Replicas = ptr.To[int32](-1)
				s.Ports = []corev1.ServicePort{
					{Name: "HTTP", Port: 0, TargetPort: intstr.FromString("not_valid"), Protocol: "HTTP", NodePort: 30080},
					servicePort("", 70000, intstr.FromInt32(0), corev1.ProtocolTCP),
					servicePort("b", 443, intstr.FromInt32(8443), corev1.ProtocolTCP),
					servicePort("b", 443, intstr.FromInt32(8443), corev1.ProtocolTCP),
				}
				s.Env = []corev1.EnvVar{{Name: ""}, {Name: "A"}, {Name: "A"}}
				s.Resources = corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: q("2"), corev1.ResourceMemory: q("2Gi")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("1Gi")},
				}
			}),
			allowed: []string{"docker.io"},
			wantErrs: field.ErrorList{
				untaggedImage("quay.io/team/app", "quay.io/team/app:latest", "quay.io/team/app"),
				disallowedRegistry("quay.io/team/app", "quay.io", "docker.io"),
				invalid("spec.replicas", int32(-1), replicasDetail),
				invalid("spec.ports[0].name", "HTTP", dnsLabelDetail),
				invalid("spec.ports[0].port", int32(0), portDetail),
				invalid("spec.ports[0].targetPort", "not_valid", portNameCharsetDetail),
				notSupported("spec.ports[0].protocol", corev1.Protocol("HTTP"), protocolDetail),
				invalid("spec.ports[0].nodePort", int32(30080), nodePortDetail),
				required("spec.ports[1].name", portNameDetail),
				invalid("spec.ports[1].port", int32(70000), portDetail),
				invalid("spec.ports[1].targetPort", int32(0), portDetail),
				duplicate("spec.ports[3].name", "b"),
				duplicate("spec.ports[3]", "443/TCP"),
				required("spec.env[0].name", envNameDetail),
				invalid("spec.resources.requests[cpu]", "2", "must not be above the limit 1"),
				invalid("spec.resources.requests[memory]", "2Gi", "must not be above the limit 1Gi"),
			},
			wantWarnings: admission.Warnings{"spec.env[2].name: A is also set by spec.env[1]; Kubernetes keeps the last value"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.object.DeepCopy()

			gotErrs, gotWarnings := ValidateDeployObject(nil, tc.object, DefaultPolicy(imagePolicy(t, tc.allowed...)))

			if diff := gocmp.Diff(tc.wantErrs, gotErrs, compareFieldErrors, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if diff := gocmp.Diff(tc.wantWarnings, withoutRuleIDs(t, gotWarnings), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			if diff := gocmp.Diff(before, tc.object); diff != "" {
				t.Errorf("validation changed the object (-before +after):\n%s", diff)
			}
		})
	}
}

func TestValidateDeployObjectUpdate(t *testing.T) {
	image := func(ref string) func(*appv1.DeployObjectSpec) {
		return func(s *appv1.DeployObjectSpec) { s.Image = ref }
	}
	replicas := func(n int32) func(*appv1.DeployObjectSpec) {
		return func(s *appv1.DeployObjectSpec) { s.Replicas = ptr.To(n) }
	}
	admittedEarlier := deployObject(image("quay.io/x:1"))
	if errs, warnings := ValidateDeployObject(nil, admittedEarlier, DefaultPolicy(imagePolicy(t))); len(errs) != 0 || len(warnings) != 0 {
		t.Fatalf("the stored object was not admitted under the empty policy: %v, %q", errs, warnings)
	}

	tests := []struct {
		name         string
		allowed      []string
		old, new     *appv1.DeployObject
		wantErrs     field.ErrorList
		wantWarnings admission.Warnings
	}{
		{
			name:    "allow-list narrowed: changing replicas only keeps the admitted image",
			allowed: []string{"docker.io"},
			old:     admittedEarlier,
			new:     deployObject(image("quay.io/x:1"), replicas(3)),
		},
		{
			name:    "allow-list narrowed: changing metadata only keeps the admitted image",
			allowed: []string{"docker.io"},
			old:     admittedEarlier,
			new: func() *appv1.DeployObject {
				d := admittedEarlier.DeepCopy()
				d.Labels = map[string]string{"team": "web"}
				return d
			}(),
		},
		{
			name:     "allow-list narrowed: changing to another disallowed image is refused",
			allowed:  []string{"docker.io"},
			old:      admittedEarlier,
			new:      deployObject(image("quay.io/y:1")),
			wantErrs: field.ErrorList{disallowedRegistry("quay.io/y:1", "quay.io", "docker.io")},
		},
		{
			name:     "allow-list narrowed: another tag of the same repository is another image",
			allowed:  []string{"docker.io"},
			old:      admittedEarlier,
			new:      deployObject(image("quay.io/x:2")),
			wantErrs: field.ErrorList{disallowedRegistry("quay.io/x:2", "quay.io", "docker.io")},
		},
		{
			name:    "allow-list narrowed: changing to an allowed image",
			allowed: []string{"docker.io"},
			old:     admittedEarlier,
			new:     deployObject(image("nginx:1.27")),
		},
		{
			name:     "allow-list narrowed: a kept image does not excuse a new violation elsewhere",
			allowed:  []string{"docker.io"},
			old:      admittedEarlier,
			new:      deployObject(image("quay.io/x:1"), replicas(-1)),
			wantErrs: field.ErrorList{invalid("spec.replicas", int32(-1), replicasDetail)},
		},
		{
			name:     "create is not ratcheted",
			allowed:  []string{"docker.io"},
			old:      nil,
			new:      deployObject(image("quay.io/x:1")),
			wantErrs: field.ErrorList{disallowedRegistry("quay.io/x:1", "quay.io", "docker.io")},
		},
		{
			name:    "unpinned image stored before the webhook, kept with another change",
			allowed: []string{"docker.io"},
			old:     deployObject(image("quay.io/x")),
			new:     deployObject(image("quay.io/x"), replicas(2)),
		},
		{
			name:     "unpinned image changed to latest is refused",
			old:      deployObject(image("nginx")),
			new:      deployObject(image("nginx:latest")),
			wantErrs: field.ErrorList{latestImage("nginx:latest", "nginx")},
		},
		{
			name:     "valid image changed to an unpinned one is refused",
			old:      deployObject(),
			new:      deployObject(image("nginx")),
			wantErrs: field.ErrorList{untaggedImage("nginx", "docker.io/library/nginx:latest", "nginx")},
		},
		{
			name:         "warnings are judged on the new object",
			old:          deployObject(image("nginx:latest@" + imageDigest)),
			new:          deployObject(image("nginx:latest@"+imageDigest), replicas(2)),
			wantWarnings: admission.Warnings{latestDigestWarning},
		},
		{
			name: "kept port violations with another field changed",
			old: deployObject(func(s *appv1.DeployObjectSpec) {
				s.Ports = []corev1.ServicePort{
					servicePort("", 80, intstr.FromInt32(8080), corev1.ProtocolTCP),
					servicePort("", 443, intstr.FromInt32(8443), corev1.ProtocolTCP),
				}
			}),
			new: deployObject(replicas(4), func(s *appv1.DeployObjectSpec) {
				s.Ports = []corev1.ServicePort{
					servicePort("", 80, intstr.FromInt32(8080), corev1.ProtocolTCP),
					servicePort("", 443, intstr.FromInt32(8443), corev1.ProtocolTCP),
				}
			}),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var oldBefore *appv1.DeployObject
			if tc.old != nil {
				oldBefore = tc.old.DeepCopy()
			}
			newBefore := tc.new.DeepCopy()

			gotErrs, gotWarnings := ValidateDeployObject(tc.old, tc.new, DefaultPolicy(imagePolicy(t, tc.allowed...)))

			if diff := gocmp.Diff(tc.wantErrs, gotErrs, compareFieldErrors, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if diff := gocmp.Diff(tc.wantWarnings, withoutRuleIDs(t, gotWarnings), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			if tc.old != nil {
				if diff := gocmp.Diff(oldBefore, tc.old); diff != "" {
					t.Errorf("validation changed the old object (-before +after):\n%s", diff)
				}
			}
			if diff := gocmp.Diff(newBefore, tc.new); diff != "" {
				t.Errorf("validation changed the new object (-before +after):\n%s", diff)
			}
		})
	}
}

func TestDeployObjectValidatorReturnsInvalidStatus(t *testing.T) {
	ctx := context.Background()
	policy := imagePolicy(t, "docker.io")
	validator := deployObjectValidator(policy)
	bad := deployObject(func(s *appv1.DeployObjectSpec) {
		s.Image = "quay.io/team/app:latest"
		s.Replicas = ptr.To[int32](-1)
		s.Ports = []corev1.ServicePort{
			servicePort("web", 0, intstr.FromInt32(8080), corev1.ProtocolTCP),
			{Port: 81, TargetPort: intstr.FromInt32(8081), Protocol: corev1.ProtocolTCP, NodePort: 30081},
		}
		s.Env = []corev1.EnvVar{{Name: "A"}, {Name: "A"}}
	})
	bad.Name = "bad-app"

	warnings, err := validator.ValidateCreate(ctx, bad)

	if diff := gocmp.Diff(admission.Warnings{"spec.env[1].name: A is also set by spec.env[0]; Kubernetes keeps the last value"}, sentWithoutRuleIDs(t, warnings)); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		t.Fatalf("ValidateCreate error = %#v, want an apierrors.APIStatus", err)
	}
	latestMsg := `Invalid value: "quay.io/team/app:latest": uses the tag latest, which moves without notice; ` +
		`pin a version tag such as quay.io/team/app:1.2.3, or a digest`
	registryMsg := `Invalid value: "quay.io/team/app:latest": is pulled from registry quay.io, which is not allowed; ` +
		`allowed registries: docker.io`
	want := metav1.Status{
		Status: metav1.StatusFailure,
		Code:   http.StatusUnprocessableEntity,
		Reason: metav1.StatusReasonInvalid,
		Message: `DeployObject.app.seedlabs.dev "bad-app" is invalid: [` +
			`spec.image: ` + latestMsg + `, ` +
			`spec.image: ` + registryMsg + `, ` +
			`spec.replicas: Invalid value: -1: must be 0 or more, ` +
			`spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, ` +
			`spec.ports[1].name: Required value: a name is required when there is more than one port, ` +
			`spec.ports[1].nodePort: Invalid value: 30081: ` + nodePortDetail + `]`,
		Details: &metav1.StatusDetails{
			Name:  "bad-app",
			Group: "app.seedlabs.dev",
			Kind:  "DeployObject",
			Causes: []metav1.StatusCause{
				{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec.image", Message: latestMsg},
				{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec.image", Message: registryMsg},
				{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec.replicas", Message: "Invalid value: -1: " + replicasDetail},
				{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec.ports[0].port", Message: "Invalid value: 0: " + portDetail},
				{Type: metav1.CauseTypeFieldValueRequired, Field: "spec.ports[1].name", Message: "Required value: " + portNameDetail},
				{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec.ports[1].nodePort", Message: "Invalid value: 30081: " + nodePortDetail},
			},
		},
	}
	if diff := gocmp.Diff(want, statusWithoutRuleIDs(t, status.Status())); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}

	t.Run("valid object", func(t *testing.T) {
		warnings, err := validator.ValidateCreate(ctx, deployObject())
		if err != nil || len(warnings) != 0 {
			t.Errorf("ValidateCreate = %q, %v, want no warnings and no error", warnings, err)
		}
	})

	t.Run("valid object with a warning", func(t *testing.T) {
		warnings, err := validator.ValidateCreate(ctx, deployObject(func(s *appv1.DeployObjectSpec) {
			s.Image = "nginx:latest@" + imageDigest
		}))
		if err != nil {
			t.Errorf("ValidateCreate error = %v, want nil", err)
		}
		if diff := gocmp.Diff(admission.Warnings{latestDigestWarning}, sentWithoutRuleIDs(t, warnings)); diff != "" {
			t.Errorf("warnings (-want +got):\n%s", diff)
		}
	})

	t.Run("update keeping an image admitted under an earlier policy", func(t *testing.T) {
		old := deployObject(func(s *appv1.DeployObjectSpec) { s.Image = "quay.io/x:1" })
		updated := deployObject(func(s *appv1.DeployObjectSpec) {
			s.Image = "quay.io/x:1"
			s.Replicas = ptr.To[int32](5)
		})
		warnings, err := validator.ValidateUpdate(ctx, old, updated)
		if err != nil || len(warnings) != 0 {
			t.Errorf("ValidateUpdate = %q, %v, want no warnings and no error", warnings, err)
		}
	})

	t.Run("update to another disallowed image", func(t *testing.T) {
		old := deployObject(func(s *appv1.DeployObjectSpec) { s.Image = "quay.io/x:1" })
		updated := deployObject(func(s *appv1.DeployObjectSpec) { s.Image = "quay.io/y:1" })
		_, err := validator.ValidateUpdate(ctx, old, updated)
		var status apierrors.APIStatus
		if !errors.As(err, &status) {
			t.Fatalf("ValidateUpdate error = %#v, want an apierrors.APIStatus", err)
		}
		msg := `Invalid value: "quay.io/y:1": is pulled from registry quay.io, which is not allowed; allowed registries: docker.io`
		want := metav1.Status{
			Status:  metav1.StatusFailure,
			Code:    http.StatusUnprocessableEntity,
			Reason:  metav1.StatusReasonInvalid,
			Message: `DeployObject.app.seedlabs.dev "app" is invalid: spec.image: ` + msg,
			Details: &metav1.StatusDetails{
				Name:   "app",
				Group:  "app.seedlabs.dev",
				Kind:   "DeployObject",
				Causes: []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec.image", Message: msg}},
			},
		}
		if diff := gocmp.Diff(want, statusWithoutRuleIDs(t, status.Status())); diff != "" {
			t.Errorf("status (-want +got):\n%s", diff)
		}
	})

	t.Run("delete is always allowed", func(t *testing.T) {
		warnings, err := validator.ValidateDelete(ctx, bad)
		if err != nil || warnings != nil {
			t.Errorf("ValidateDelete = %q, %v, want no warnings and no error", warnings, err)
		}
	})

	// A patch, an apply and an edit all reach the webhook as an UPDATE of the whole object.
	t.Run("update through the admission handler", func(t *testing.T) {
		handler := testWebhooks(policy)[deployObjectKind.validate]
		old := `{"apiVersion":"app.seedlabs.dev/v1","kind":"DeployObject",` +
			`"metadata":{"name":"app","namespace":"default"},` +
			`"spec":{"replicas":1,"image":"quay.io/x:1","ports":[{"port":80,"targetPort":8080,"protocol":"TCP"}]}}`
		kept := `{"apiVersion":"app.seedlabs.dev/v1","kind":"DeployObject",` +
			`"metadata":{"name":"app","namespace":"default"},` +
			`"spec":{"replicas":2,"image":"quay.io/x:1","ports":[{"port":80,"targetPort":8080,"protocol":"TCP"}]}}`
		changed := `{"apiVersion":"app.seedlabs.dev/v1","kind":"DeployObject",` +
			`"metadata":{"name":"app","namespace":"default"},` +
			`"spec":{"replicas":1,"image":"quay.io/y:1","ports":[{"port":80,"targetPort":8080,"protocol":"TCP"}]}}`

		if resp, _ := admit(t, handler, deployObjectRequest(admissionv1.Update, kept, old)); !resp.Allowed {
			t.Errorf("update keeping the image denied with %+v, want allowed", resp.Result)
		}

		resp, _ := admit(t, handler, deployObjectRequest(admissionv1.Update, changed, old))
		if resp.Allowed {
			t.Fatalf("update changing the image allowed, want denied")
		}
		if resp.Result == nil {
			t.Fatalf("response has no result")
		}
		if resp.Result.Code != http.StatusUnprocessableEntity || resp.Result.Reason != metav1.StatusReasonInvalid {
			t.Errorf("result code, reason = %d, %q, want 422, %q", resp.Result.Code, resp.Result.Reason, metav1.StatusReasonInvalid)
		}
		wantDetails := &metav1.StatusDetails{
			Name:  "app",
			Group: "app.seedlabs.dev",
			Kind:  "DeployObject",
			Causes: []metav1.StatusCause{{
				Type:    metav1.CauseTypeFieldValueInvalid,
				Field:   "spec.image",
				Message: `Invalid value: "quay.io/y:1": is pulled from registry quay.io, which is not allowed; allowed registries: docker.io`,
			}},
		}
		if diff := gocmp.Diff(wantDetails, statusWithoutRuleIDs(t, *resp.Result).Details); diff != "" {
			t.Errorf("result details (-want +got):\n%s", diff)
		}
	})
}

func TestDeployObjectDefaultingPatch(t *testing.T) {
	handler := testWebhooks(ImagePolicy{})[deployObjectKind.mutate]

	const head = `{"apiVersion":"app.seedlabs.dev/v1","kind":"DeployObject","metadata":{"name":"app","namespace":"default"},`
	tests := []struct {
		name      string
		operation admissionv1.Operation
		object    string
		oldObject string
		want      []jsonpatch.Operation
	}{
		{
			name:      "object as kubectl sends it gets replicas, protocol and targetPort",
			operation: admissionv1.Create,
			object:    head + `"spec":{"image":"nginx:1.27","ports":[{"port":80}]}}`,
			want: []jsonpatch.Operation{
				{Operation: "add", Path: "/spec/ports/0/protocol", Value: "TCP"},
				{Operation: "add", Path: "/spec/ports/0/targetPort", Value: float64(80)},
				{Operation: "add", Path: "/spec/replicas", Value: float64(1)},
			},
		},
		{
			name:      "fully specified object, replicas 0 included, is not patched",
			operation: admissionv1.Create,
			object: head + `"spec":{"replicas":0,"image":"nginx:1.27",` +
				`"ports":[{"name":"http","port":80,"targetPort":"http","protocol":"TCP"},` +
				`{"name":"dns","port":53,"targetPort":5353,"protocol":"UDP"}]}}`,
		},
		// "add" sets a member that is there too (RFC 6902, 4.1): the patch never needs to know.
		{
			name:      "empty string targetPort is replaced by the port",
			operation: admissionv1.Create,
			object:    head + `"spec":{"replicas":2,"image":"nginx:1.27","ports":[{"port":8080,"targetPort":"","protocol":"TCP"}]}}`,
			want:      []jsonpatch.Operation{{Operation: "add", Path: "/spec/ports/0/targetPort", Value: float64(8080)}},
		},
		{
			name:      "targetPort 0 is replaced by the port",
			operation: admissionv1.Create,
			object:    head + `"spec":{"replicas":2,"image":"nginx:1.27","ports":[{"port":8080,"targetPort":0,"protocol":"TCP"}]}}`,
			want:      []jsonpatch.Operation{{Operation: "add", Path: "/spec/ports/0/targetPort", Value: float64(8080)}},
		},
		{
			name:      "what defaulting leaves alone keeps its spelling: 1000m is not rewritten 1",
			operation: admissionv1.Create,
			object:    head + `"spec":{"replicas":2,"image":"nginx:1.27","ports":[{"port":80,"protocol":"TCP"}],"resources":{"limits":{"cpu":"1000m"}}}}`,
			want:      []jsonpatch.Operation{{Operation: "add", Path: "/spec/ports/0/targetPort", Value: float64(80)}},
		},
		{
			name:      "a port sent as {} gets its members; one sent as null, set whole",
			operation: admissionv1.Create,
			object:    head + `"spec":{"replicas":2,"image":"nginx:1.27","ports":[{},null]}}`,
			want: []jsonpatch.Operation{
				{Operation: "add", Path: "/spec/ports/0/protocol", Value: "TCP"},
				{Operation: "replace", Path: "/spec/ports/1", Value: map[string]any{"port": float64(0), "protocol": "TCP", "targetPort": float64(0)}},
			},
		},
		{
			name:      "only the second port is defaulted",
			operation: admissionv1.Create,
			object: head + `"spec":{"replicas":2,"image":"nginx:1.27",` +
				`"ports":[{"name":"http","port":80,"targetPort":8080,"protocol":"TCP"},{"name":"dns","port":53,"protocol":"UDP"}]}}`,
			want: []jsonpatch.Operation{{Operation: "add", Path: "/spec/ports/1/targetPort", Value: float64(53)}},
		},
		{
			name:      "invalid values are left for validation",
			operation: admissionv1.Create,
			object: head + `"spec":{"replicas":-1,"image":"Nginx",` +
				`"ports":[{"name":"HTTP","port":0,"targetPort":"not_valid","protocol":"HTTP","nodePort":30080}]}}`,
		},
		{
			name:      "fields unknown to Go, empty values and status get no removal operations",
			operation: admissionv1.Create,
			object: `{"apiVersion":"app.seedlabs.dev/v1","kind":"DeployObject",` +
				`"metadata":{"name":"app","namespace":"default","creationTimestamp":null},` +
				`"spec":{"image":"nginx:1.27","futureField":{"a":1},"env":[],"resources":{},"ports":[{"port":80}]},` +
				`"status":{}}`,
			want: []jsonpatch.Operation{
				{Operation: "add", Path: "/spec/ports/0/protocol", Value: "TCP"},
				{Operation: "add", Path: "/spec/ports/0/targetPort", Value: float64(80)},
				{Operation: "add", Path: "/spec/replicas", Value: float64(1)},
			},
		},
		{
			name:      "update that drops replicas gets it back",
			operation: admissionv1.Update,
			object:    head + `"spec":{"image":"nginx:1.27","ports":[{"port":80,"targetPort":8080,"protocol":"TCP"}]}}`,
			oldObject: head + `"spec":{"replicas":3,"image":"nginx:1.27","ports":[{"port":80,"targetPort":8080,"protocol":"TCP"}]}}`,
			want:      []jsonpatch.Operation{{Operation: "add", Path: "/spec/replicas", Value: float64(1)}},
		},
		{
			name:      "delete is allowed without a patch",
			operation: admissionv1.Delete,
			oldObject: head + `"spec":{"image":"nginx:1.27","ports":[{"port":80}]}}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, ops := admit(t, handler, deployObjectRequest(tc.operation, tc.object, tc.oldObject))

			if !resp.Allowed {
				t.Fatalf("response denied with %+v, want allowed", resp.Result)
			}
			got := slices.SortedFunc(slices.Values(ops), func(a, b jsonpatch.Operation) int {
				return cmp.Compare(a.Path, b.Path)
			})
			if diff := gocmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("patch operations (-want +got):\n%s", diff)
			}
			var wantPatchType *admissionv1.PatchType
			if len(tc.want) > 0 {
				wantPatchType = ptr.To(admissionv1.PatchTypeJSONPatch)
			}
			if diff := gocmp.Diff(wantPatchType, resp.PatchType); diff != "" {
				t.Errorf("patch type (-want +got):\n%s", diff)
			}
		})
	}
}
