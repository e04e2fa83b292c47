// Command sandbox runs a real Kubernetes control plane with virtual nodes whose pods are
// local processes: `sandbox up`, `sandbox down`, fault injection, and (internally) the
// daemon and the container init.
package main

import (
	"os"

	"github.com/rediskube/redis-operator/test/sandbox/cli"
	"github.com/rediskube/redis-operator/test/sandbox/containerinit"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == "container-init" {
		containerinit.Main(os.Args[2])
	}
	os.Exit(cli.Main(os.Args[1:]))
}
