//go:build linux

package cluster

import (
	"net"
	"net/netip"
	"os"
	"testing"
)

// TestEstablishedConnections counts this process's own connections to a listener, on IPv4 and
// IPv6 loopback, through /proc as APIServerConnectionsTo counts kube-apiserver's.
func TestEstablishedConnections(t *testing.T) {
	for _, loopback := range []string{"127.0.0.1:0", "[::1]:0"} {
		t.Run(loopback, func(t *testing.T) {
			listener, err := net.Listen("tcp", loopback)
			if err != nil {
				t.Skipf("no %s here: %v", loopback, err)
			}
			defer func() { _ = listener.Close() }()
			to := listener.Addr().(*net.TCPAddr).AddrPort()
			expect := func(want int) {
				t.Helper()
				got, err := establishedConnections(os.Getpid(), to)
				if err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Fatalf("%d connections established to %s, want %d", got, to, want)
				}
			}
			expect(0)
			var conns []net.Conn
			for range 3 {
				conn, err := net.Dial("tcp", to.String())
				if err != nil {
					t.Fatal(err)
				}
				defer func() { _ = conn.Close() }()
				conns = append(conns, conn)
			}
			// The listener's ends of the connections have the clients' ports as peers: not counted.
			expect(3)
			_ = conns[0].Close()
			expect(2)
			other := netip.AddrPortFrom(to.Addr(), to.Port()+1)
			if got, err := establishedConnections(os.Getpid(), other); err != nil || got != 0 {
				t.Fatalf("%d connections to %s, %v; want none", got, other, err)
			}
		})
	}
}

func TestParseProcAddress(t *testing.T) {
	for text, want := range map[string]string{
		// What /proc/net/tcp{,6} print for these on a little-endian machine.
		"0100007F:1F90":                         "127.0.0.1:8080",
		"0102000A:24E3":                         "10.0.2.1:9443",
		"00000000000000000000000001000000:0016": "[::1]:22",
		"0000000000000000FFFF00000102000A:24E3": "10.0.2.1:9443",
	} {
		got, err := parseProcAddress(text)
		if err != nil || got.String() != want {
			t.Errorf("parseProcAddress(%q) = %v, %v; want %s", text, got, err, want)
		}
	}
	for _, text := range []string{"", "0100007F", "0100007F:1F9", "01007F:1F90", "zz00007F:1F90"} {
		if got, err := parseProcAddress(text); err == nil {
			t.Errorf("parseProcAddress(%q) = %v, want an error", text, got)
		}
	}
}
