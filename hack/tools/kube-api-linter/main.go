// Command golangci-lint-kal is golangci-lint with kube-api-linter (sigs.k8s.io/kube-api-linter)
// built in as the module plugin "kubeapilinter". `golangci-lint custom` would build the same
// binary, but it clones golangci-lint's sources with git; this module takes both from the Go
// module proxy instead, at the versions its go.mod pins. make lint runs it over ./api/... with
// .golangci-kal.yml.
package main

import (
	"fmt"
	"os"
	"runtime/debug"

	"github.com/golangci/golangci-lint/v2/pkg/commands"
	"github.com/golangci/golangci-lint/v2/pkg/exitcodes"

	// Registers the plugin "kubeapilinter" with every analyzer of kube-api-linter.
	_ "sigs.k8s.io/kube-api-linter"
)

func main() {
	info := commands.BuildInfo{Version: "(unknown)", Commit: "(unknown)", Date: "(unknown)"}
	if bi, ok := debug.ReadBuildInfo(); ok {
		info.GoVersion = bi.GoVersion
		for _, dep := range bi.Deps {
			switch dep.Path {
			case "github.com/golangci/golangci-lint/v2":
				info.Version = dep.Version
			case "sigs.k8s.io/kube-api-linter":
				info.Commit = "kube-api-linter " + dep.Version
			}
		}
	}
	if err := commands.Execute(info); err != nil {
		fmt.Fprintf(os.Stderr, "golangci-lint-kal: %v\n", err)
		os.Exit(exitcodes.Failure)
	}
}
