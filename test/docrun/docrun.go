// Package docrun runs the shell blocks of the docs as a reader would: each ```sh block of a page
// as one bash script, in a copy of the repository, so that a stale command fails a test.
package docrun

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Block is a ```sh block of a page.
type Block struct {
	Page    string
	Line    int // of the opening fence
	Section string
	Script  string
}

// Blocks reads the ```sh blocks of page, under the repository root.
func Blocks(root, page string) ([]Block, error) {
	data, err := os.ReadFile(filepath.Join(root, page))
	if err != nil {
		return nil, err
	}
	var (
		blocks  []Block
		current *Block
		section string
	)
	scanner := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; scanner.Scan(); line++ {
		text := scanner.Text()
		switch {
		case current != nil && strings.HasPrefix(text, "```"):
			blocks = append(blocks, *current)
			current = nil
		case current != nil:
			current.Script += text + "\n"
		case text == "```sh":
			current = &Block{Page: page, Line: line, Section: section}
		case strings.HasPrefix(text, "## "):
			section = strings.TrimPrefix(text, "## ")
		}
	}
	if current != nil {
		return nil, fmt.Errorf("%s: the block of line %d is not closed", page, current.Line)
	}
	return blocks, scanner.Err()
}

// RunLocalKubeconfig is where make run-local writes its kubeconfig once everything answers, and
// removes it on exit.
const RunLocalKubeconfig = "bin/local/kubeconfig"

// Runnable is script as the docs spec runs it, as a reader would use it:
//   - a command commented "# refused..." must be refused by admission: it fails the script if it
//     succeeds, or fails for another reason (a typo in a file name, say);
//   - a command commented "# terminal 1..." keeps running while the reader goes on in another
//     terminal: it runs in the background, its output in a file, and the script goes on once make
//     run-local has written its kubeconfig, as the reader waits for it to say ready.
func Runnable(script string) string {
	var out strings.Builder
	for _, line := range strings.Split(strings.TrimRight(script, "\n"), "\n") {
		command, comment, _ := strings.Cut(line, " # ")
		command, comment = strings.TrimSpace(command), strings.TrimSpace(comment)
		switch {
		case strings.HasPrefix(comment, "refused"):
			quoted := strings.ReplaceAll(command, "'", "")
			fmt.Fprintf(&out, "if refusal=$(%s 2>&1); then echo 'admitted, though the docs say refused: %s' >&2; exit 1; fi\n", command, quoted)
			fmt.Fprintf(&out, "echo \"$refusal\"; grep -qE 'denied the request|is invalid' <<<\"$refusal\" || { echo 'failed, but admission did not refuse it: %s' >&2; exit 1; }\n", quoted)
		case strings.HasPrefix(comment, "terminal 1"):
			fmt.Fprintf(&out, "%s > terminal-1.log 2>&1 &\n", command)
			fmt.Fprintf(&out, "timeout 300 bash -c 'until [ -f %s ]; do sleep 1; done' || { cat terminal-1.log >&2; exit 1; }\n", RunLocalKubeconfig)
		default:
			out.WriteString(line + "\n")
		}
	}
	return out.String()
}

// CopyTrackedFiles copies the files git tracks in root, as they are in the working tree, to dir.
func CopyTrackedFiles(ctx context.Context, root, dir string) error {
	out, err := exec.CommandContext(ctx, "git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		return fmt.Errorf("git ls-files: %w", err)
	}
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		from, to := filepath.Join(root, name), filepath.Join(dir, name)
		info, err := os.Lstat(from)
		if os.IsNotExist(err) {
			continue // deleted in the working tree
		}
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(from)
			if err != nil {
				return err
			}
			if err := os.Symlink(target, to); err != nil {
				return err
			}
			continue
		}
		data, err := os.ReadFile(from)
		if err != nil {
			return err
		}
		if err := os.WriteFile(to, data, info.Mode().Perm()); err != nil {
			return err
		}
		// As old as the original, so that make builds nothing again that bin/ holds.
		if err := os.Chtimes(to, info.ModTime(), info.ModTime()); err != nil {
			return err
		}
	}
	// make reads the commit the tree is at (COMMIT), as in a clone.
	return os.Symlink(filepath.Join(root, ".git"), filepath.Join(dir, ".git"))
}

// LinkTools links each entry of the tools directory bin into dir but the images make images
// writes, which other specs read, so that make builds none of the tools again.
func LinkTools(bin, dir string) error {
	entries, err := os.ReadDir(bin)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name() == "images" || e.Name() == "local" {
			continue
		}
		if err := os.Symlink(filepath.Join(bin, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// Run runs script with bash (-e -o pipefail) in dir, with env added to the environment (without
// an outer make's variables) and stdin as what the reader types, and returns its output. Whatever
// it left running in the background (make run-local) is then stopped as at Ctrl-C, and Run waits
// until run-local has removed its kubeconfig.
func Run(ctx context.Context, dir string, env []string, stdin, script string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(WithoutMakeVariables(os.Environ()), env...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	if cmd.Process == nil {
		return out, err
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
	stopped := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		_, statErr := os.Stat(filepath.Join(dir, RunLocalKubeconfig))
		return os.IsNotExist(statErr), nil
	})
	if stopped != nil {
		return out, errors.Join(err, fmt.Errorf("make run-local did not stop: %w", stopped))
	}
	return out, err
}

// WithoutMakeVariables is environ without the variables an outer make passes its commands: a
// reader's shell has none.
func WithoutMakeVariables(environ []string) []string {
	var env []string
	for _, e := range environ {
		if !strings.HasPrefix(e, "MAKEFLAGS=") && !strings.HasPrefix(e, "MAKELEVEL=") && !strings.HasPrefix(e, "MFLAGS=") {
			env = append(env, e)
		}
	}
	return env
}
