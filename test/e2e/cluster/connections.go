//go:build linux

package cluster

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
)

// APIServerConnectionsTo counts the TCP connections kube-apiserver holds established to to: for a
// webhook's address, the connections its webhook clients keep alive there, over any of which a
// call goes out without the Service being resolved again.
func (c *Cluster) APIServerConnectionsTo(to netip.AddrPort) (int, error) {
	return establishedConnections(c.process("kube-apiserver").cmd.Process.Pid, to)
}

// establishedConnections counts the TCP sockets of process pid that are established to to, as
// /proc lists them: its file descriptors name the sockets' inodes, the tables of its network
// namespace their states and peers.
func establishedConnections(pid int, to netip.AddrPort) (int, error) {
	proc := filepath.Join("/proc", fmt.Sprint(pid))
	fds, err := os.ReadDir(filepath.Join(proc, "fd"))
	if err != nil {
		return 0, err
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		// A descriptor closed since the directory was read is no longer the process's.
		if target, err := os.Readlink(filepath.Join(proc, "fd", fd.Name())); err == nil {
			if inode, ok := strings.CutPrefix(target, "socket:["); ok {
				inodes[strings.TrimSuffix(inode, "]")] = true
			}
		}
	}
	count := 0
	for _, table := range []string{"tcp", "tcp6"} {
		data, err := os.ReadFile(filepath.Join(proc, "net", table))
		if err != nil {
			return 0, err
		}
		n, err := countEstablished(data, to, inodes)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/net/%s: %w", pid, table, err)
		}
		count += n
	}
	return count, nil
}

// tcpEstablished is the state /proc/net/tcp gives an established socket (TCP_ESTABLISHED).
const tcpEstablished = "01"

// countEstablished counts the rows of a /proc/net/tcp or tcp6 table that are established sockets
// with a peer of to and an inode among inodes. Its columns: sl, local_address, rem_address, st,
// tx_queue:rx_queue, tr:tm->when, retrnsmt, uid, timeout, inode.
func countEstablished(table []byte, to netip.AddrPort, inodes map[string]bool) (int, error) {
	count := 0
	lines := bufio.NewScanner(bytes.NewReader(table))
	lines.Scan() // the header
	for lines.Scan() {
		fields := strings.Fields(lines.Text())
		if len(fields) < 10 {
			return 0, fmt.Errorf("a row of %d columns: %q", len(fields), lines.Text())
		}
		if fields[3] != tcpEstablished || !inodes[fields[9]] {
			continue
		}
		peer, err := parseProcAddress(fields[2])
		if err != nil {
			return 0, err
		}
		if peer == to {
			count++
		}
	}
	return count, lines.Err()
}

// parseProcAddress parses an address of /proc/net/tcp{,6}: the address's 32-bit words in hex,
// each as the kernel holds it in memory (so in this machine's byte order), a colon, and the port
// in hex. An IPv4 address mapped into IPv6 comes out as IPv4.
func parseProcAddress(s string) (netip.AddrPort, error) {
	host, port, ok := strings.Cut(s, ":")
	raw, err := hex.DecodeString(host)
	if !ok || err != nil || (len(raw) != 4 && len(raw) != 16) || len(port) != 4 {
		return netip.AddrPort{}, fmt.Errorf("not an address of /proc/net/tcp: %q", s)
	}
	ip := make([]byte, len(raw))
	for i := 0; i < len(raw); i += 4 {
		binary.NativeEndian.PutUint32(ip[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	p, err := hex.DecodeString(port)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("not an address of /proc/net/tcp: %q", s)
	}
	addr, _ := netip.AddrFromSlice(ip)
	return netip.AddrPortFrom(addr.Unmap(), binary.BigEndian.Uint16(p)), nil
}
