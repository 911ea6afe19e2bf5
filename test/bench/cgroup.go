package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// memoryCgroupRoot is where cgroup v1 mounts its memory controller.
const memoryCgroupRoot = "/sys/fs/cgroup/memory"

// memoryCgroup is a cgroup v1 memory cgroup with a limit, in which the memory section runs a
// leader as kubelet runs a container with that memory limit: the kernel charges it the process's
// memory and the page cache it touches (its binary's pages among them), reclaims page cache when
// the charge reaches the limit, and kills the process when nothing is left to reclaim. Where the
// bench may not make one (not root, or cgroup v2), the leader runs without, and the report says so.
type memoryCgroup struct {
	dir string
}

// newMemoryCgroup makes a memory cgroup named name with limit bytes, without swap.
func newMemoryCgroup(name string, limit int64) (*memoryCgroup, error) {
	if _, err := os.Stat(filepath.Join(memoryCgroupRoot, "memory.limit_in_bytes")); err != nil {
		return nil, fmt.Errorf("no cgroup v1 memory controller at %s: %w", memoryCgroupRoot, err)
	}
	g := &memoryCgroup{dir: filepath.Join(memoryCgroupRoot, name)}
	if err := os.Mkdir(g.dir, 0o755); err != nil {
		return nil, err
	}
	for file, value := range map[string]int64{"memory.limit_in_bytes": limit, "memory.swappiness": 0} {
		if err := g.write(file, value); err != nil {
			return nil, errors.Join(err, g.remove())
		}
	}
	return g, nil
}

func (g *memoryCgroup) write(file string, value int64) error {
	return os.WriteFile(filepath.Join(g.dir, file), []byte(strconv.FormatInt(value, 10)), 0o644)
}

// run makes cmd join g before it execs its program, so that all it uses is charged to g: its
// binary's pages too, which the kernel charges to the cgroup that reads them into the page cache
// first, so they are dropped from it first, as a container's are on a node that never ran it.
func (g *memoryCgroup) run(cmd *exec.Cmd) error {
	binary, err := os.Open(cmd.Path)
	if err != nil {
		return err
	}
	defer binary.Close()
	if err := unix.Fadvise(int(binary.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("dropping %s from the page cache: %w", cmd.Path, err)
	}
	program := cmd.Path
	cmd.Path = "/bin/sh"
	cmd.Args = append([]string{"sh", "-c", `echo $$ > "$0/cgroup.procs" && exec "$@"`, g.dir, program}, cmd.Args[1:]...)
	return nil
}

// memoryCharge is what a memory cgroup records of a process's life.
type memoryCharge struct {
	// peak is the most charged at once, page cache included; reclaims is how often the charge
	// reached the limit (memory.failcnt), each met by reclaiming; oomKills how often nothing was
	// left to reclaim.
	peak, reclaims, oomKills uint64
}

// charge reads what g recorded.
func (g *memoryCgroup) charge() (memoryCharge, error) {
	var c memoryCharge
	var err error
	if c.peak, err = g.read("memory.max_usage_in_bytes"); err != nil {
		return c, err
	}
	if c.reclaims, err = g.read("memory.failcnt"); err != nil {
		return c, err
	}
	control, err := os.ReadFile(filepath.Join(g.dir, "memory.oom_control"))
	if err != nil {
		return c, err
	}
	for _, line := range strings.Split(string(control), "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			c.oomKills, err = strconv.ParseUint(v, 10, 64)
			return c, err
		}
	}
	return c, errors.New("memory.oom_control counts no oom_kill")
}

func (g *memoryCgroup) read(file string) (uint64, error) {
	b, err := os.ReadFile(filepath.Join(g.dir, file))
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
}

// remove removes g, which its process has left.
func (g *memoryCgroup) remove() error {
	return os.Remove(g.dir)
}
