package main

import (
	"fmt"
	"io"
	"time"
)

// usage is what the banner printed once everything is ready shows.
type usage struct {
	kubeconfig    string
	apiServerURL  string
	webhookServer string
	certDir       string
	kcmLog        string
	readyAfter    time.Duration
}

// printUsage prints where everything runs and how to try the operator.
func printUsage(w io.Writer, u usage) {
	_, _ = fmt.Fprintf(w, `
webhook-operator is running locally (ready in %s).

  kube-apiserver           %s
  webhook server           https://%s (certificates in %s)
  kube-controller-manager  log in %s

Try it:

  export KUBECONFIG=%s
  kubectl apply -f config/samples/
  kubectl get seedlabs
  kubectl apply -f config/samples/invalid/    # refused by the validating webhook

Ctrl-C stops everything.

`, u.readyAfter, u.apiServerURL, u.webhookServer, u.certDir, u.kcmLog, u.kubeconfig)
}
