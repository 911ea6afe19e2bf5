// Command kube-proxy is the upstream kube-proxy, built from the Go module proxy, for the
// end-to-end test's real node.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-proxy/app"
)

func main() {
	os.Exit(cli.Run(app.NewProxyCommand()))
}
