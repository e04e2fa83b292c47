// Command kubectl-redis is the kubectl plugin `kubectl redis` (kubectl redis --help); the logic is
// in internal/kubectlredis.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/rediskube/redis-operator/internal/kubectlredis"
)

func main() {
	os.Exit(run())
}

// run returns the exit code, so that its deferred stop runs before main exits.
func run() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := kubectlredis.Run(ctx, os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "kubectl redis:", err)
		return 1
	}
	return 0
}
