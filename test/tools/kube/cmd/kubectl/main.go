// Command kubectl is the upstream kubectl, built from the Go module proxy so that the end-to-end
// test drives the cluster with a client of the cluster's own version.
package main

import (
	"os"

	_ "k8s.io/client-go/plugin/pkg/client/auth" // Client auth plugins, as upstream's main has them.
	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	logs.GlogSetter(cmd.GetLogVerbosity(os.Args)) //nolint:errcheck // Upstream ignores it too: a bad -v is reported by flag parsing.
	if err := cli.RunNoErrOutput(cmd.NewDefaultKubectlCommand()); err != nil {
		util.CheckErr(err)
	}
}
