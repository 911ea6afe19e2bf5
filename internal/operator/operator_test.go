package operator

import (
	"crypto/tls"
	"flag"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/distribution/reference"
)

func parse(t *testing.T, args ...string) Options {
	t.Helper()
	var o Options
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	o.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parsing %v: %v", args, err)
	}
	return o
}

func TestBindFlagsDefaults(t *testing.T) {
	t.Setenv(EnvWelcomeImage, "")
	t.Setenv(EnvMemcachedImage, "")
	t.Setenv("TMPDIR", "")
	got := parse(t)
	want := Options{
		MetricsAddr:    "0",
		SecureMetrics:  true,
		ProbeAddr:      ":8081",
		WebhookPort:    9443,
		WebhookCertDir: "/tmp/k8s-webhook-server/serving-certs",
		MetricsCertDir: "/tmp/k8s-metrics-server/serving-certs",
		WelcomeImage:   DefaultWelcomeImage,
		MemcachedImage: DefaultMemcachedImage,
		ShutdownDelay:  DefaultShutdownDelay,
		PprofAddr:      "0",

		MaxConcurrentReconciles: DefaultMaxConcurrentReconciles,
		CacheSyncTimeout:        DefaultCacheSyncTimeout,
		PolicyStaleness:         DefaultPolicyStaleness,
		StorageMigration:        true,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("defaults:\n got %+v\nwant %+v", got, want)
	}
}

// TestControllersWaitForTheirCachesAsLongAsTold: --cache-sync-timeout reaches every controller,
// which controller-runtime would otherwise give 2 minutes, too few for a new leader's first list
// at 100,000 custom resources.
func TestControllersWaitForTheirCachesAsLongAsTold(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want time.Duration
	}{
		{nil, DefaultCacheSyncTimeout},
		{[]string{"--cache-sync-timeout=25m"}, 25 * time.Minute},
	} {
		o := parse(t, tc.args...)
		if got := o.managerOptions(nil).Controller.CacheSyncTimeout; got != tc.want {
			t.Errorf("%q: the controllers' CacheSyncTimeout is %s, want %s", tc.args, got, tc.want)
		}
	}
}

// TestDefaultMemcachedImageIsPinned: the memcached image a release runs is a reference the
// container runtimes resolve by its digest, with the tag kept for people to read.
func TestDefaultMemcachedImageIsPinned(t *testing.T) {
	named, err := reference.ParseNormalizedNamed(DefaultMemcachedImage)
	if err != nil {
		t.Fatalf("DefaultMemcachedImage %q: %v", DefaultMemcachedImage, err)
	}
	_, tagged := named.(reference.Tagged)
	_, pinned := named.(reference.Digested) // Parse has checked the digest's algorithm and length
	if !tagged || !pinned {
		t.Errorf("DefaultMemcachedImage %q: tagged %t, pinned by digest %t; want both", DefaultMemcachedImage, tagged, pinned)
	}
}

// TestCertDirsFollowTMPDIR: both certificate directories live under TMPDIR, as
// controller-runtime's own defaults do, so a process given another TMPDIR finds its mounted
// certificates there.
func TestCertDirsFollowTMPDIR(t *testing.T) {
	t.Setenv("TMPDIR", "/run/pod")
	got := parse(t)
	if got.WebhookCertDir != "/run/pod/k8s-webhook-server/serving-certs" || got.MetricsCertDir != "/run/pod/k8s-metrics-server/serving-certs" {
		t.Errorf("with TMPDIR=/run/pod: webhook %s, metrics %s", got.WebhookCertDir, got.MetricsCertDir)
	}
}

func TestAllowedRegistries(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{name: "unset allows any", want: nil},
		{name: "comma-separated", args: []string{"--allowed-registries=docker.io, registry.local:5000"},
			want: []string{"docker.io", "registry.local:5000"}},
		{name: "repeated, empty entries skipped", args: []string{"--allowed-registries=ghcr.io,", "--allowed-registries=quay.io"},
			want: []string{"ghcr.io", "quay.io"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parse(t, tt.args...).AllowedRegistries; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("AllowedRegistries = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestWelcomeImage(t *testing.T) {
	tests := []struct {
		name string
		env  string
		args []string
		want string
	}{
		{name: "default", want: DefaultWelcomeImage},
		{name: "environment", env: "registry.example.test/welcome-web:env", want: "registry.example.test/welcome-web:env"},
		{
			name: "flag wins over the environment",
			env:  "registry.example.test/welcome-web:env",
			args: []string{"--welcome-image=registry.example.test/welcome-web:flag"},
			want: "registry.example.test/welcome-web:flag",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(EnvWelcomeImage, tt.env)
			if got := parse(t, tt.args...).WelcomeImage; got != tt.want {
				t.Errorf("WelcomeImage = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTLSOptions(t *testing.T) {
	tests := []struct {
		name       string
		http2      bool
		wantProtos []string
	}{
		{name: "HTTP/2 off by default", wantProtos: []string{"http/1.1"}},
		{name: "HTTP/2 on when enabled", http2: true, wantProtos: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := Options{EnableHTTP2: tt.http2}
			c := &tls.Config{}
			for _, apply := range o.tlsOptions() {
				apply(c)
			}
			if c.MinVersion != tls.VersionTLS12 {
				t.Errorf("MinVersion = %#x, want TLS 1.2 (%#x)", c.MinVersion, tls.VersionTLS12)
			}
			if !slices.Equal(c.NextProtos, tt.wantProtos) {
				t.Errorf("NextProtos = %q, want %q", c.NextProtos, tt.wantProtos)
			}
		})
	}
}

func TestMemoryLimit(t *testing.T) {
	tests := []struct {
		name      string
		env       map[string]string
		want      int64
		wantKnown bool
	}{
		{name: "no limit", env: map[string]string{}},
		{name: "a tenth below the container's limit", env: map[string]string{EnvMemoryLimit: "268435456"}, want: 241591905, wantKnown: true},
		{name: "GOMEMLIMIT wins", env: map[string]string{EnvMemoryLimit: "268435456", "GOMEMLIMIT": "100MiB"}},
		{name: "not a number", env: map[string]string{EnvMemoryLimit: "256Mi"}},
		{name: "zero", env: map[string]string{EnvMemoryLimit: "0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, known := MemoryLimit(func(k string) string { return tc.env[k] })
			if got != tc.want || known != tc.wantKnown {
				t.Errorf("MemoryLimit() = %d, %t; want %d, %t", got, known, tc.want, tc.wantKnown)
			}
		})
	}
}
