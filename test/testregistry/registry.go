// Package testregistry serves an OCI registry as a stranger's is: over TLS, with a certificate of
// a CA of its own, to those who present its user's password (HTTP basic auth). It is
// go-containerregistry's registry. The release test publishes to it (make publish), and the
// end-to-end suite's node pulls the operator's images from it, as containerd pulls any.
package testregistry

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/seedlabs/webhook-operator/certs"
)

// The one user the registry serves.
const (
	User     = "publisher"
	Password = "s3cret-for-the-test"
)

// Registry is a running registry.
type Registry struct {
	// Host is its host:port.
	Host string
	// ClientConfig is a directory holding what a client needs: config.json with the credentials
	// (docker's format, which Helm's registry client reads too) and ca.pem, the CA's certificate.
	ClientConfig string
	// CAPEM is the certificate of the CA that signed the registry's.
	CAPEM []byte

	server    *httptest.Server
	transport http.RoundTripper

	mu sync.Mutex
	// reads counts the user's reads of manifests, by repository.
	reads map[string]int
}

// PublicPrefix begins the repositories anyone may pull from without credentials (public/app), as
// from a public package on ghcr.io; pushing there still takes the user's password.
const PublicPrefix = "public/"

// Start serves a registry at addr (host:port; port 0 picks one) with a certificate for ip, its
// blobs in blobDir and its clients' configuration in clientConfig.
func Start(addr string, ip net.IP, blobDir, clientConfig string) (*Registry, error) {
	ca, err := certs.NewCA("test registry CA", 24*time.Hour)
	if err != nil {
		return nil, err
	}
	pair, err := ca.NewServingPair(nil, []net.IP{ip}, 24*time.Hour)
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(pair.CertPEM, pair.KeyPEM)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(blobDir, 0o755); err != nil {
		return nil, err
	}
	listener, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("serving the registry: %w", err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	r := &Registry{
		Host:         listener.Addr().String(),
		ClientConfig: clientConfig,
		CAPEM:        ca.CertPEM,
		transport:    &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}},
		reads:        map[string]int{},
	}
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)), registry.WithBlobHandler(registry.NewDiskBlobHandler(blobDir)))
	r.server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		user, password, ok := req.BasicAuth()
		authorized := ok && subtle.ConstantTimeCompare([]byte(user+":"+password), []byte(User+":"+Password)) == 1
		if !authorized && !publicRead(req) {
			w.Header().Set("WWW-Authenticate", `Basic realm="test registry"`)
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
			return
		}
		if repository, ok := manifestRead(req); ok && authorized {
			r.mu.Lock()
			r.reads[repository]++
			r.mu.Unlock()
		}
		reg.ServeHTTP(w, req)
	}))
	r.server.Listener.Close()
	r.server.Listener = listener
	r.server.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	r.server.StartTLS()

	if err := r.writeClientConfig(); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// publicRead reports whether req reads a manifest or blob of a repository under PublicPrefix
// (GET or HEAD). The API's version check (/v2/) still asks for credentials: a client that got
// none asked for there would push without them.
func publicRead(req *http.Request) bool {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		return false
	}
	return strings.HasPrefix(req.URL.Path, "/v2/"+PublicPrefix) &&
		(strings.Contains(req.URL.Path, "/manifests/") || strings.Contains(req.URL.Path, "/blobs/"))
}

// manifestRead reports whether req reads a manifest, and of which repository: GET or HEAD
// /v2/<repository>/manifests/<reference>. A pull resolves a tag with HEAD, and GETs only what it
// does not already hold.
func manifestRead(req *http.Request) (string, bool) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		return "", false
	}
	path, ok := strings.CutPrefix(req.URL.Path, "/v2/")
	if !ok {
		return "", false
	}
	i := strings.LastIndex(path, "/manifests/")
	if i < 0 {
		return "", false
	}
	return path[:i], true
}

// writeClientConfig writes config.json and ca.pem into ClientConfig.
func (r *Registry) writeClientConfig() error {
	config, err := json.Marshal(map[string]any{"auths": map[string]any{r.Host: map[string]string{"auth": r.auth()}}})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(r.ClientConfig, 0o700); err != nil {
		return err
	}
	var errs []error
	for file, data := range map[string][]byte{"config.json": config, "ca.pem": r.CAPEM} {
		errs = append(errs, os.WriteFile(filepath.Join(r.ClientConfig, file), data, 0o600))
	}
	return errors.Join(errs...)
}

// auth is the user and password as docker's config.json and a dockerconfigjson Secret hold them.
func (r *Registry) auth() string {
	return base64.StdEncoding.EncodeToString([]byte(User + ":" + Password))
}

// DockerConfigJSON is the .dockerconfigjson of a kubernetes.io/dockerconfigjson Secret that pulls
// from r.
func (r *Registry) DockerConfigJSON() []byte {
	data, err := os.ReadFile(filepath.Join(r.ClientConfig, "config.json"))
	if err != nil {
		panic(err) // written by Start
	}
	return data
}

// CAFile is the path of the CA's certificate.
func (r *Registry) CAFile() string { return filepath.Join(r.ClientConfig, "ca.pem") }

// ClientEnv is the environment with which make, the image pusher and helm reach r: its
// credentials, docker's and Helm's, and its CA as the only one Go's TLS trusts.
func (r *Registry) ClientEnv() []string {
	return []string{
		"DOCKER_CONFIG=" + r.ClientConfig,
		"HELM_REGISTRY_CONFIG=" + filepath.Join(r.ClientConfig, "config.json"),
		"SSL_CERT_FILE=" + r.CAFile(),
	}
}

// RemoteOptions reach r from this process, as its user. (SSL_CERT_FILE cannot: Go reads the
// system's roots once.)
func (r *Registry) RemoteOptions(ctx context.Context) []remote.Option {
	return []remote.Option{
		remote.WithContext(ctx),
		remote.WithTransport(r.transport),
		remote.WithAuth(&authn.Basic{Username: User, Password: Password}),
	}
}

// ManifestReads is how many times the user (not anyone) has read a manifest of repository (such as
// seedlabs/webhook-operator), or resolved one (HEAD): by tag or digest, an index or an image's.
func (r *Registry) ManifestReads(repository string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reads[repository]
}

// Close stops serving.
func (r *Registry) Close() { r.server.Close() }
