// Package cli implements the `sandbox` command.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rediskube/redis-operator/test/sandbox/cleanup"
	"github.com/rediskube/redis-operator/test/sandbox/daemon"
	"github.com/rediskube/redis-operator/test/sandbox/fault"
	"github.com/rediskube/redis-operator/test/sandbox/instance"
	"github.com/rediskube/redis-operator/test/sandbox/kubelet"
)

const usage = `sandbox: a real Kubernetes control plane with virtual nodes whose pods are local processes.

Usage:
  sandbox up [flags]                       start a sandbox (or show the running one), apply CRDs, RBAC,
                                           the operator and a sample, wait, and print how to use it
  sandbox down [--dir D] [--slot N]        stop the sandbox and remove everything it made (also after a crash)
  sandbox status [--dir D] [--json]        show nodes, pods and addresses
  sandbox leftovers [--dir D] [--slot N]   list what of a sandbox still exists (processes, namespaces, ...)
  sandbox push [--dir D] [--charts DIR] [LAYOUT]
                                           push an OCI image layout (make release's dist/image) and
                                           packaged charts (dist/charts) to the sandbox's registry

Fault injection (on the sandbox of --dir, default the repository's .sandbox):
  sandbox crash-container [-n NS] POD [CONTAINER]   SIGKILL a container; its restart policy acts
  sandbox stop-node NODE                            kill the node's pods, stop its heartbeats (NotReady)
  sandbox start-node NODE                           start a stopped node again
  sandbox cut [-n NS] POD                           take a pod off the network
  sandbox heal [-n NS] POD                          put it back
  sandbox restart-workload [-n NS] KIND/NAME        delete every pod of a statefulset/deployment at once

Run "sandbox COMMAND -h" for the flags of a command.
`

// Main runs the command line args and returns the exit code.
func Main(args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Print(usage)
		return 0
	}
	cmds := map[string]func([]string) error{
		"up":               up,
		"down":             down,
		"status":           status,
		"leftovers":        leftovers,
		"push":             push,
		"run":              run,
		"crash-container":  crashContainer,
		"stop-node":        nodeCmd("stop-node"),
		"start-node":       nodeCmd("start-node"),
		"cut":              podCmd("cut"),
		"heal":             podCmd("heal"),
		"restart-workload": restartWorkload,
	}
	f, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(os.Stderr, "unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	if err := f(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(os.Stderr, "sandbox "+args[0]+":", err)
		return 1
	}
	return 0
}

// binDir is the directory of this executable: bin/ of the repository.
func binDir() string {
	exe, err := os.Executable()
	if err != nil {
		return "bin"
	}
	return filepath.Dir(exe)
}

func repoDir() string { return filepath.Dir(binDir()) }

func defaultDir() string {
	if d := os.Getenv("SANDBOX_DIR"); d != "" {
		return d
	}
	return filepath.Join(repoDir(), ".sandbox")
}

type common struct {
	dir string
}

func newFlags(name string, c *common) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.StringVar(&c.dir, "dir", defaultDir(), "state directory of the sandbox")
	return fs
}

func (c common) client() *fault.Client {
	abs, _ := filepath.Abs(c.dir)
	return fault.New(filepath.Join(abs, "control.sock"))
}

func ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 3*time.Minute)
}

func run(args []string) error {
	var c common
	fs := newFlags("run", &c)
	slot := fs.String("slot", "0", "slot number, or auto")
	nodes := fs.Int("nodes", 3, "number of virtual nodes")
	bin := fs.String("bin", binDir(), "directory with the control-plane binaries and redis-operator")
	exitWith := fs.Int("exit-with-pid", 0, "stop when this process is gone")
	volumeRefresh := fs.Duration("volume-refresh", kubelet.DefaultVolumeRefresh, "how often pods' Secret and ConfigMap volumes are re-rendered (a kubelet's sync period)")
	withRegistry := fs.Bool("registry", false, "run an OCI registry on loopback whose images the nodes pull")
	if err := fs.Parse(args); err != nil {
		return err
	}
	s, err := parseSlot(*slot)
	if err != nil {
		return err
	}
	dir, err := filepath.Abs(c.dir)
	if err != nil {
		return err
	}
	binAbs, err := filepath.Abs(*bin)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	return daemon.Run(daemon.Options{Dir: dir, Slot: s, Nodes: *nodes, Bin: binAbs, ExitWithPid: *exitWith, VolumeRefresh: *volumeRefresh,
		Registry: *withRegistry, Log: log})
}

func parseSlot(s string) (int, error) {
	if s == "auto" {
		return daemon.AutoSlot, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n >= instance.MaxSlots {
		return 0, fmt.Errorf("--slot must be auto or 0..%d", instance.MaxSlots-1)
	}
	return n, nil
}

// target resolves the instance to take down: the state directory's record, or --slot.
func target(dir string, slot int) (instance.Instance, error) {
	inst, err := instance.Load(dir)
	if err == nil {
		return inst, nil
	}
	if slot < 0 {
		abs, _ := filepath.Abs(dir)
		return instance.Instance{Slot: -1, Dir: abs}, nil
	}
	return instance.New(slot, dir, 1)
}

func down(args []string) error {
	var c common
	fs := newFlags("down", &c)
	slot := fs.Int("slot", -1, "slot to clean up when the state directory is gone")
	keep := fs.Bool("keep-dir", false, "keep the state directory (logs, volumes)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	inst, err := target(c.dir, *slot)
	if err != nil {
		return err
	}
	if inst.Slot < 0 {
		fmt.Printf("No sandbox in %s.\n", inst.Dir)
		return nil
	}
	start := time.Now()
	if err := cleanup.Down(inst, cleanup.Options{KeepDir: *keep}); err != nil {
		return err
	}
	fmt.Printf("Sandbox of slot %d (%s) is down; nothing left behind (%.1f s).\n", inst.Slot, inst.Dir, time.Since(start).Seconds())
	return nil
}

func leftovers(args []string) error {
	var c common
	fs := newFlags("leftovers", &c)
	slot := fs.Int("slot", -1, "slot to check when the state directory is gone")
	if err := fs.Parse(args); err != nil {
		return err
	}
	inst, err := target(c.dir, *slot)
	if err != nil {
		return err
	}
	if inst.Slot < 0 {
		return fmt.Errorf("no sandbox record in %s: pass --slot", inst.Dir)
	}
	left := cleanup.Leftovers(inst, false)
	for _, l := range left {
		fmt.Println(l)
	}
	if len(left) > 0 {
		return fmt.Errorf("%d leftovers", len(left))
	}
	return nil
}

func status(args []string) error {
	var c common
	fs := newFlags("status", &c)
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cx, cancel := ctx()
	defer cancel()
	s, err := c.client().Status(cx)
	if err != nil {
		return fmt.Errorf("no sandbox running in %s: %w", c.dir, err)
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	printStatus(os.Stdout, s)
	return nil
}

func printStatus(w io.Writer, s *fault.Status) {
	_, _ = fmt.Fprintf(w, "slot %d, state %s, API server %s, pods %s on bridge %s, services %s (kube-proxy in the node namespace)\n",
		s.Slot, s.Dir, s.APIServer, s.PodCIDR, s.Bridge, s.ServiceCIDR)
	_, _ = fmt.Fprintf(w, "Secret and ConfigMap volumes refreshed every %s\n", time.Duration(s.VolumeRefreshSeconds*float64(time.Second)))
	if s.Registry != "" {
		_, _ = fmt.Fprintf(w, "OCI registry %s (its images run from their layers)\n", s.Registry)
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "NODE\tZONE\tKUBELET")
	for _, n := range s.Nodes {
		state := "running"
		if !n.Running {
			state = "stopped"
		}
		_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\n", n.Name, n.Zone, state)
	}
	_ = tw.Flush()
	if len(s.Pods) > 0 {
		tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		_, _ = fmt.Fprintln(tw, "NAMESPACE\tPOD\tNODE\tIP\tNETWORK")
		for _, p := range s.Pods {
			net := "connected"
			if p.Cut {
				net = "CUT"
			}
			_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Namespace, p.Name, p.Node, p.IP, net)
		}
		_ = tw.Flush()
	}
}

func splitNS(ns string, args []string, n int) (string, []string, error) {
	if len(args) < 1 || len(args) > n {
		return "", nil, fmt.Errorf("expected POD%s", strings.Repeat(" [ARG]", n-1))
	}
	if a, b, ok := strings.Cut(args[0], "/"); ok && ns == "default" {
		return a, append([]string{b}, args[1:]...), nil
	}
	return ns, args, nil
}

func crashContainer(args []string) error {
	var c common
	fs := newFlags("crash-container", &c)
	ns := fs.String("n", "default", "namespace")
	if err := fs.Parse(args); err != nil {
		return err
	}
	namespace, rest, err := splitNS(*ns, fs.Args(), 2)
	if err != nil {
		return err
	}
	container := ""
	if len(rest) == 2 {
		container = rest[1]
	}
	cx, cancel := ctx()
	defer cancel()
	if err := c.client().CrashContainer(cx, namespace, rest[0], container); err != nil {
		return err
	}
	fmt.Printf("killed container %q of pod %s/%s\n", container, namespace, rest[0])
	return nil
}

func podCmd(name string) func([]string) error {
	return func(args []string) error {
		var c common
		fs := newFlags(name, &c)
		ns := fs.String("n", "default", "namespace")
		if err := fs.Parse(args); err != nil {
			return err
		}
		namespace, rest, err := splitNS(*ns, fs.Args(), 1)
		if err != nil {
			return err
		}
		cx, cancel := ctx()
		defer cancel()
		cl := c.client()
		if name == "cut" {
			err = cl.Cut(cx, namespace, rest[0])
		} else {
			err = cl.Heal(cx, namespace, rest[0])
		}
		if err != nil {
			return err
		}
		fmt.Printf("%s %s/%s\n", name, namespace, rest[0])
		return nil
	}
}

func nodeCmd(name string) func([]string) error {
	return func(args []string) error {
		var c common
		fs := newFlags(name, &c)
		if err := fs.Parse(args); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return errors.New("expected NODE")
		}
		cx, cancel := ctx()
		defer cancel()
		cl := c.client()
		var err error
		if name == "stop-node" {
			err = cl.StopNode(cx, fs.Arg(0))
		} else {
			err = cl.StartNode(cx, fs.Arg(0))
		}
		if err != nil {
			return err
		}
		fmt.Printf("%s %s\n", name, fs.Arg(0))
		return nil
	}
}

func restartWorkload(args []string) error {
	var c common
	fs := newFlags("restart-workload", &c)
	ns := fs.String("n", "default", "namespace")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("expected KIND/NAME, e.g. statefulset/redis")
	}
	kind, name, ok := strings.Cut(fs.Arg(0), "/")
	if !ok {
		return errors.New("expected KIND/NAME, e.g. statefulset/redis")
	}
	cx, cancel := ctx()
	defer cancel()
	pods, err := c.client().RestartWorkload(cx, *ns, kind, name)
	if err != nil {
		return err
	}
	fmt.Printf("deleted pods %s of %s %s/%s\n", strings.Join(pods, ", "), kind, *ns, name)
	return nil
}
