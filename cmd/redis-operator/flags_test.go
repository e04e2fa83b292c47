package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// chartFlags is the list of flags the operator chart accepts in redisOperator.extraArgs.
var chartFlags = filepath.Join("..", "..", "charts", "redis-operator", "files", "flags.txt")

// notForADeployment are the flags that make the operator print something and exit: in
// extraArgs they would stop every start, so the chart refuses them like unknown ones.
var notForADeployment = map[string]bool{"version": true}

// TestChartListsEveryFlag: the chart's list of the operator's flags is the flag set's, less
// those that only print and exit, so that the chart refuses at helm install the extraArgs
// the operator would refuse, or stop on, at start.
func TestChartListsEveryFlag(t *testing.T) {
	fs, err := newFlagSet(&options{})
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	want.WriteString("# The operator's flags (name, and \"bool\" for those that take no value), which the chart\n" +
		"# accepts in redisOperator.extraArgs. Written from cmd/redis-operator's flag set:\n" +
		"# TestChartListsEveryFlag fails when they differ.\n")
	fs.VisitAll(func(f *flag.Flag) {
		if notForADeployment[f.Name] {
			return
		}
		want.WriteString(f.Name)
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			want.WriteString(" bool")
		}
		want.WriteString("\n")
	})
	got, err := os.ReadFile(chartFlags)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want.String() {
		t.Errorf("%s is not the operator's flag set; it should read:\n%s", chartFlags, want.String())
	}
}
