package deploy

import (
	"net"
	"path/filepath"
	"testing"

	"github.com/seedlabs/webhook-operator/test/testregistry"
)

// newTestRegistry serves a registry like a stranger's (testregistry) on loopback for the test.
func newTestRegistry(t *testing.T) *testregistry.Registry {
	t.Helper()
	dir := t.TempDir()
	reg, err := testregistry.Start("127.0.0.1:0", net.IPv4(127, 0, 0, 1), filepath.Join(dir, "blobs"), filepath.Join(dir, "client"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	return reg
}
