//go:build linux

package cluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Process is a program the harness started, with its output in a log file.
type Process struct {
	// Name names the process in errors and is the base name of its log file.
	Name string
	// LogPath is the file holding its stdout and stderr.
	LogPath string
	// Started is when the process started.
	Started time.Time
	// exited is when it exited; only meaningful once done is closed.
	exited time.Time

	binary string
	args   []string
	env    []string
	attr   *syscall.SysProcAttr

	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// StartProcess starts binary with args and env added to this process's environment, writing its
// output to <logDir>/<name>.log. The process is killed if the harness dies first.
func StartProcess(name, logDir, binary string, args, env []string) (*Process, error) {
	return startProcess(name, logDir, binary, args, append(os.Environ(), env...))
}

// startProcess is StartProcess with exactly the environment env.
func startProcess(name, logDir, binary string, args, env []string) (*Process, error) {
	return start(&Process{
		Name: name, LogPath: filepath.Join(logDir, name+".log"),
		binary: binary, args: args, env: env, attr: &syscall.SysProcAttr{},
	})
}

// start runs p's command. The log is appended to, so that a restarted process keeps the
// output of the runs before it, as `kubectl logs --previous` would.
func start(p *Process) (*Process, error) {
	log, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("creating the log of %s: %w", p.Name, err)
	}
	cmd := exec.Command(p.binary, p.args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = p.env
	attr := *p.attr
	attr.Pdeathsig = syscall.SIGKILL
	cmd.SysProcAttr = &attr
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return nil, fmt.Errorf("starting %s: %w", p.Name, err)
	}
	p.Started, p.cmd, p.done, p.err = time.Now(), cmd, make(chan struct{}), nil
	go func() {
		p.err = cmd.Wait()
		p.exited = time.Now()
		_ = log.Close()
		close(p.done)
	}()
	return p, nil
}

// again starts a new run of the same command, logging to the same file.
func (p *Process) again() (*Process, error) {
	return start(&Process{Name: p.Name, LogPath: p.LogPath, binary: p.binary, args: p.args, env: p.env, attr: p.attr})
}

// Kill sends SIGKILL and waits for the process to exit.
func (p *Process) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited is when the process exited; only meaningful once Done is closed.
func (p *Process) Exited() time.Time { return p.exited }

// Err is how the process ended; only meaningful once Done is closed.
func (p *Process) Err() error { return p.err }

// Running returns an error when the process has already exited, naming its log.
func (p *Process) Running() error {
	select {
	case <-p.done:
		if p.err == nil {
			return fmt.Errorf("%s exited; see %s", p.Name, p.LogPath)
		}
		return fmt.Errorf("%s exited: %w; see %s", p.Name, p.err, p.LogPath)
	default:
		return nil
	}
}

// Stop sends SIGTERM and waits up to grace for the process to exit, then kills it. It returns
// the process's own error when it exited on SIGTERM with a failure.
func (p *Process) Stop(grace time.Duration) error {
	select {
	case <-p.done:
		return p.exitError()
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stopping %s: %w", p.Name, err)
	}
	select {
	case <-p.done:
		return p.exitError()
	case <-time.After(grace):
		// A Go program dumps its goroutines on SIGQUIT, into its log: what it was waiting for.
		_ = p.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-p.done:
		case <-time.After(2 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		return fmt.Errorf("%s did not stop within %s of SIGTERM and was killed with SIGQUIT (a Go program's goroutines are in its log); see %s", p.Name, grace, p.LogPath)
	}
}

// exitError is nil for a clean exit, or for death by the SIGTERM Stop sent (programs without a
// handler for it), and the exit status otherwise.
func (p *Process) exitError() error {
	var exit *exec.ExitError
	if errors.As(p.err, &exit) {
		if status, ok := exit.Sys().(syscall.WaitStatus); ok && status.Signaled() && status.Signal() == syscall.SIGTERM {
			return nil
		}
	}
	if p.err != nil {
		return fmt.Errorf("%s: %w; see %s", p.Name, p.err, p.LogPath)
	}
	return nil
}

// addCost adds the process's resident memory, threads and inotify watches to cost.
func (p *Process) addCost(cost *NodeCost) error {
	proc := filepath.Join("/proc", strconv.Itoa(p.cmd.Process.Pid))
	status, err := os.ReadFile(filepath.Join(proc, "status"))
	if err != nil {
		return fmt.Errorf("%s: %w", p.Name, err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		key, value, _ := strings.Cut(line, ":")
		fields := strings.Fields(value)
		if len(fields) == 0 {
			continue
		}
		switch key {
		case "VmRSS":
			kib, _ := strconv.ParseInt(fields[0], 10, 64)
			cost.RSS += kib << 10
		case "Threads":
			n, _ := strconv.Atoi(fields[0])
			cost.Threads += n
		}
	}
	fds, err := os.ReadDir(filepath.Join(proc, "fd"))
	if err != nil {
		return fmt.Errorf("%s: %w", p.Name, err)
	}
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join(proc, "fd", fd.Name())); err != nil || target != "anon_inode:inotify" {
			continue
		}
		info, err := os.ReadFile(filepath.Join(proc, "fdinfo", fd.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		cost.InotifyWatches += strings.Count(string(info), "inotify wd:")
	}
	return nil
}
