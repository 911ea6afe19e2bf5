package deploy

import (
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// testRegistry is an OCI registry served in the test process as a stranger's is: over TLS, with a
// certificate of a CA of its own, and to those who present its user's password (HTTP basic auth).
type testRegistry struct {
	// host is its host:port.
	host string
	// clientConfig is a directory holding what a client needs: config.json with the credentials
	// (docker's format, which Helm's registry client reads too) and ca.pem.
	clientConfig string
	server       *httptest.Server
}

const (
	registryUser     = "publisher"
	registryPassword = "s3cret-for-the-test"
)

func newTestRegistry(t *testing.T) *testRegistry {
	t.Helper()
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	server := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, password, ok := r.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(user+":"+password), []byte(registryUser+":"+registryPassword)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="test registry"`)
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(server.Close)
	r := &testRegistry{host: strings.TrimPrefix(server.URL, "https://"), clientConfig: t.TempDir(), server: server}

	auth := base64.StdEncoding.EncodeToString([]byte(registryUser + ":" + registryPassword))
	config, err := json.Marshal(map[string]any{"auths": map[string]any{r.host: map[string]string{"auth": auth}}})
	if err != nil {
		t.Fatal(err)
	}
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: server.Certificate().Raw})
	for file, data := range map[string][]byte{"config.json": config, "ca.pem": ca} {
		if err := os.WriteFile(filepath.Join(r.clientConfig, file), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// clientEnv is the environment with which make, the image pusher and helm reach r: its
// credentials, docker's and Helm's, and its CA as the only one Go's TLS trusts.
func (r *testRegistry) clientEnv() []string {
	return []string{
		"DOCKER_CONFIG=" + r.clientConfig,
		"HELM_REGISTRY_CONFIG=" + filepath.Join(r.clientConfig, "config.json"),
		"SSL_CERT_FILE=" + filepath.Join(r.clientConfig, "ca.pem"),
	}
}

// remoteOptions read from r in the test process.
func (r *testRegistry) remoteOptions(t *testing.T) []remote.Option {
	return []remote.Option{
		remote.WithContext(t.Context()),
		remote.WithTransport(r.server.Client().Transport),
		remote.WithAuth(&authn.Basic{Username: registryUser, Password: registryPassword}),
	}
}
