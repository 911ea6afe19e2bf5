package deploy

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/seedlabs/webhook-operator/test/docrun"
)

// TestReadmeQuickStart runs the quick start of README.md as written, in a copy of the tree: make
// run-local in the background, as in the reader's first terminal, and the rest once it is ready, as
// in the second. A command the README says is refused must be refused by admission. It needs the
// control plane and kubectl make run-local runs (make test-deploy builds them).
func TestReadmeQuickStart(t *testing.T) {
	root := moduleRoot(t)
	blocks, err := docrun.Blocks(root, "README.md")
	if err != nil {
		t.Fatal(err)
	}
	var quickStart []docrun.Block
	for _, b := range blocks {
		if b.Section == "Quick start" {
			quickStart = append(quickStart, b)
		}
	}
	if len(quickStart) != 1 {
		t.Fatalf("README.md has %d sh blocks under Quick start, want 1", len(quickStart))
	}
	tree := filepath.Join(t.TempDir(), "tree")
	if err := docrun.CopyTrackedFiles(t.Context(), root, tree); err != nil {
		t.Fatal(err)
	}
	if err := docrun.LinkTools(filepath.Join(root, "bin"), filepath.Join(tree, "bin")); err != nil {
		t.Fatal(err)
	}
	script := docrun.Runnable(quickStart[0].Script)
	// A reader's shell has no kubeconfig of the test's: the quick start exports its own.
	out, err := docrun.Run(t.Context(), tree, []string{"KUBECONFIG="}, "", script)
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(tree, "terminal-1.log"))
		t.Fatalf("README.md line %d, as run:\n%s\nits output:\n%s\nmake run-local's:\n%s", quickStart[0].Line, script, out, log)
	}
	t.Logf("README.md line %d:\n%s", quickStart[0].Line, out)
}
