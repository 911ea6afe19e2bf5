// Package docblock holds a block that a test generates into a page of docs/ to what it generates:
// the text between a begin and an end marker. With UPDATE_DOCS=1 (make docs) it rewrites the block
// instead of failing.
package docblock

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Check fails t unless the text between begin and end in the page at path is want; source names
// what the block is generated from, for the failure. With UPDATE_DOCS=1 it writes want there instead.
func Check(t testing.TB, path, begin, end, want, source string) {
	t.Helper()
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	from := bytes.Index(page, []byte(begin))
	to := bytes.Index(page, []byte(end))
	if from < 0 || to < from {
		t.Fatalf("%s has no %s ... %s block", path, begin, end)
	}
	from += len(begin)
	got := string(page[from:to])
	if got == want {
		return
	}
	if os.Getenv("UPDATE_DOCS") == "1" {
		if err := os.WriteFile(path, slices.Concat(page[:from], []byte(want), page[to:]), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote the block of %s generated from %s", path, source)
		return
	}
	t.Errorf("the block of %s is not what %s gives; run `make docs` (-want +got):\n%s", path, source,
		cmp.Diff(strings.Split(want, "\n"), strings.Split(got, "\n")))
}
