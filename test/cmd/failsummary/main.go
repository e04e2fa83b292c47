// failsummary copies go test -v output from its standard input to its standard output and
// ends it with why each failed test failed (gotestout.Copy). make e2e pipes its tests
// through it; the pipeline's status stays go test's.
package main

import (
	"fmt"
	"os"

	"github.com/rediskube/redis-operator/test/gotestout"
)

func main() {
	if _, err := gotestout.Copy(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "failsummary:", err)
		os.Exit(1)
	}
}
