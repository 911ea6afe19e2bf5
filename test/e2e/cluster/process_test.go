//go:build linux

package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// startShell runs script, and waits until it prints "ready" when it does so.
func startShell(t *testing.T, script string) *Process {
	t.Helper()
	p, err := StartProcess("sh", t.TempDir(), "/bin/sh", []string{"-c", script}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(time.Second) })
	if strings.Contains(script, "echo ready") {
		ready := logContains(p, "ready")
		if err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			return ready(ctx) == nil, nil
		}); err != nil {
			t.Fatalf("the script never got ready: %v", err)
		}
	}
	return p
}

func TestStopIsCleanForAProgramThatExitsOnSIGTERM(t *testing.T) {
	for name, script := range map[string]string{
		"handles SIGTERM":        `trap 'exit 0' TERM; echo ready; while :; do sleep 0.05; done`,
		"dies of SIGTERM itself": `exec sleep 60`,
	} {
		t.Run(name, func(t *testing.T) {
			p := startShell(t, script)
			if err := p.Running(); err != nil {
				t.Fatal(err)
			}
			if err := p.Stop(10 * time.Second); err != nil {
				t.Errorf("Stop: %v", err)
			}
		})
	}
}

func TestStopReportsAFailedExitAndAKill(t *testing.T) {
	failing := startShell(t, `trap 'exit 3' TERM; echo ready; while :; do sleep 0.05; done`)
	var exit *exec.ExitError
	if err := failing.Stop(10 * time.Second); !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Errorf("Stop of a program exiting 3: %v", err)
	}

	stubborn := startShell(t, `trap '' TERM; echo ready; while :; do sleep 0.05; done`)
	err := stubborn.Stop(200 * time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "was killed") || errors.As(err, &exit) {
		t.Errorf("Stop of a program ignoring SIGTERM: %v", err)
	}
}

func TestRunningNamesTheLogOfAnExitedProcess(t *testing.T) {
	p := startShell(t, `echo boom; exit 2`)
	<-p.Done()
	err := p.Running()
	if err == nil || !strings.Contains(err.Error(), p.LogPath) || !strings.Contains(err.Error(), "exit status 2") {
		t.Errorf("Running after exit 2: %v", err)
	}
}

// logContains checks that p's log holds line.
func logContains(p *Process, line string) func(context.Context) error {
	return func(context.Context) error {
		data, err := os.ReadFile(p.LogPath)
		if err != nil {
			return err
		}
		if !strings.Contains(string(data), line) {
			return fmt.Errorf("%s has not logged %q", p.Name, line)
		}
		return nil
	}
}
