package main

import (
	"bytes"
	"encoding/json"
	"log"
	"log/slog"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// TestStandardLibraryLogsInTheManagersEncoding: what net/http logs through package log, a failed
// TLS handshake for one, comes out as one JSON line of the manager's logger.
func TestStandardLibraryLogsInTheManagersEncoding(t *testing.T) {
	before := slog.Default()
	t.Cleanup(func() { slog.SetDefault(before) })
	var out bytes.Buffer
	logStandardLibraryTo(zap.New(zap.WriteTo(&out)))

	log.Printf("http: TLS handshake error from %s: %s", "10.0.0.1:1234", "bad certificate")

	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("want one line, got %q", out.String())
	}
	var entry map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &entry); err != nil {
		t.Fatalf("not JSON: %q: %v", lines[0], err)
	}
	if entry["msg"] != "http: TLS handshake error from 10.0.0.1:1234: bad certificate" || entry["logger"] != "stdlib" {
		t.Errorf("got %v", entry)
	}
}
