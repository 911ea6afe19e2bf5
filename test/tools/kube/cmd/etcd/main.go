// Command etcd is the upstream etcd server, built from the Go module proxy at the version of
// Kubernetes' own etcd client (its build/dependencies.yaml names the same), in the module that
// builds kube-apiserver: the two then compile the packages they share once.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
