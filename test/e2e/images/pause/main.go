// Command pause is the end-to-end node's pod sandbox, in place of registry.k8s.io/pause, which
// cannot be pulled there: it holds the pod's namespaces, reaps whatever exits in them, and exits
// on SIGTERM or SIGINT, as the upstream one does.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 16)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range signals {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		// Reap every child that has exited; one SIGCHLD may stand for several.
		for {
			var status syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
