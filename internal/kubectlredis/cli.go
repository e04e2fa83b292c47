package kubectlredis

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1alpha1"
	"github.com/rediskube/redis-operator/api/v1beta2"
)

// option is one flag. Every command takes the connection options; the others only the
// commands that list them, so that a flag a command would ignore is an error instead.
type option struct {
	names   []string
	key     string
	boolean bool
	// toggle: a boolean that also takes =true or =false (--wait=false), read with
	// invocation.enabled; a plain boolean takes no value.
	toggle bool
	value  string // the value's name in help
	help   string
}

var options = []option{
	{names: []string{"-n", "--namespace"}, key: "namespace", value: "NAMESPACE", help: "namespace of the resource (default: the kubeconfig context's)"},
	{names: []string{"--kind"}, key: "kind", value: "KIND", help: "Redis, RedisCluster, RedisReplication or RedisSentinel, when a name is ambiguous"},
	{names: []string{"-o", "--output"}, key: "output", value: "FORMAT", help: "table (default), json or yaml"},
	{names: []string{"-A", "--all-namespaces"}, key: "all-namespaces", boolean: true, help: "every namespace"},
	{names: []string{"--client"}, key: "client", boolean: true, help: "the plugin's version only, without asking the cluster"},
	{names: []string{"--operator-namespace"}, key: "operator-namespace", value: "NAMESPACE", help: "namespace of the operator's pods, whose log lines are bundled (default: " + defaultOperatorNamespace + ")"},
	{names: []string{"--tail"}, key: "tail", value: "N", help: "how many of the operator's last log lines to search for the resource's name (default: " + strconv.Itoa(defaultLogTail) + ")"},
	{names: []string{"--master"}, key: "master", boolean: true, help: "the master: of POD's shard or replication, else (RedisCluster) the master serving slot 0"},
	{names: []string{"--from-schedule"}, key: "from-schedule", value: "SCHEDULE", help: "take the storage settings from this RedisBackupSchedule's backupTemplate"},
	{names: []string{"--like"}, key: "like", value: "BACKUP", help: "copy the storage settings of this RedisBackup"},
	{names: []string{"--wait"}, key: "wait", boolean: true, toggle: true, help: "wait until the backup is Completed or Failed, printing its progress (default true; --wait=false returns once it is created)"},
	{names: []string{"--timeout"}, key: "timeout", value: "DURATION", help: "how long --wait waits, \"30m\", \"1h30m\" (default: " + shortDuration(defaultBackupTimeout) + ")"},
	{names: []string{"--kubeconfig"}, key: "kubeconfig", value: "FILE", help: "kubeconfig file (default: KUBECONFIG, then ~/.kube/config)"},
	{names: []string{"--context"}, key: "context", value: "NAME", help: "kubeconfig context"},
}

// connectionKeys are the options every command takes.
var connectionKeys = []string{"kubeconfig", "context"}

func optionByName(name string) (option, bool) {
	for _, o := range options {
		if slices.Contains(o.names, name) {
			return o, true
		}
	}
	return option{}, false
}

func optionByKey(key string) option {
	for _, o := range options {
		if o.key == key {
			return o
		}
	}
	return option{}
}

// command is one subcommand: its arguments and flags are checked before anything reaches the
// API server, so that a typo never half-runs.
type command struct {
	name    string
	args    string // the positional arguments, as shown in usage
	summary string
	help    string
	min     int
	max     int
	flags   []string // option keys beyond connectionKeys
	// flagDocs overrides, for this command, the value name and help of an option it reads
	// otherwise (report's -o is a directory, not a format).
	flagDocs map[string]flagDoc
	// command: the command takes the words after "--" (a Redis command to send).
	command bool
	// check validates flag values, before any API call.
	check func(inv invocation) error
	// run does the work; connect is called by run only when it needs the cluster.
	run func(ctx context.Context, inv invocation, connect func() (Plugin, error), out io.Writer) error
}

// flagDoc is how a command documents an option.
type flagDoc struct{ value, help string }

// invocation is a parsed command line.
type invocation struct {
	command string
	args    []string
	values  map[string]string
	help    bool
	// words are the arguments after "--", nil without "--".
	words []string
	// in is the plugin's standard input (cli reads commands from it).
	in io.Reader
}

func (inv invocation) value(key string) string { return inv.values[key] }
func (inv invocation) set(key string) bool     { _, ok := inv.values[key]; return ok }

// enabled reads a toggle: on when absent or given without a value, off with =false.
func (inv invocation) enabled(key string) bool { return inv.values[key] != "false" }

// arg is the i-th positional argument, "" when absent.
func (inv invocation) arg(i int) string {
	if i < len(inv.args) {
		return inv.args[i]
	}
	return ""
}

func commands() []command {
	return []command{
		{
			name: "status", args: "NAME", min: 1, max: 1, flags: []string{"namespace", "kind", "output"},
			summary: "each pod's role, master, slots, keys, memory, offset, lag and link; conditions and last events",
			help: `Per pod: role, the master it follows, slot ranges, keys, memory, replication offset and
lag, link state and node; then the conditions and the last events. Redis is reached through
the API server (port-forward), with the resource's password. -o json or -o yaml prints the
same (every event, not the last ten) as one document.`,
			check: checkOutput,
			run: func(ctx context.Context, inv invocation, connect func() (Plugin, error), _ io.Writer) error {
				p, err := connect()
				if err != nil {
					return err
				}
				return p.Status(ctx, inv.arg(0), inv.value("kind"), inv.value("output"))
			},
		},
		{
			name: "failover", args: "NAME [POD]", min: 1, max: 2, flags: []string{"namespace", "kind"},
			summary: "ask the operator for a safe failover (to POD, or to the best replica)",
			help: `Ask the operator for a safe failover by annotating the resource with
` + FailoverAnnotation + `: to POD, or for a RedisReplication without POD to the replica
holding the most; for a RedisCluster POD is a replica, or a master whose best replica takes
its shard over. The operator fails over only to a replica in sync, then removes the
annotation; the Failover condition says why it refuses.`,
			run: func(ctx context.Context, inv invocation, connect func() (Plugin, error), _ io.Writer) error {
				p, err := connect()
				if err != nil {
					return err
				}
				return p.Failover(ctx, inv.arg(0), inv.value("kind"), inv.arg(1))
			},
		},
		{
			name: "list", min: 0, max: 0, flags: []string{"namespace", "all-namespaces", "kind", "output"},
			summary: "every resource of the four kinds with its health (-A: in every namespace)",
			help: `Every Redis, RedisCluster, RedisReplication and RedisSentinel of the namespace (-A: of
every namespace; --kind: of one kind) with its health: Paused while its skip-reconcile
annotation is "true", Degraded while its Degraded condition is True, else Ready or NotReady
from its Ready condition (Unknown before the operator wrote one); then its state, the Ready
condition's cause and its age. -o json or -o yaml prints the same as one document.`,
			check: checkOutput,
			run: func(ctx context.Context, inv invocation, connect func() (Plugin, error), _ io.Writer) error {
				p, err := connect()
				if err != nil {
					return err
				}
				return p.List(ctx, inv.value("kind"), inv.set("all-namespaces"), inv.value("output"))
			},
		},
		{
			name: "pause", args: "NAME", min: 1, max: 1, flags: []string{"namespace", "kind"},
			summary: "stop the operator acting on the resource (its skip-reconcile annotation)",
			help: `Set the resource's skip-reconcile annotation (redis.opstreelabs.in/, rediscluster.,
redisreplication. or redissentinel.opstreelabs.in/skip-reconcile, by kind) to "true": the
operator then takes no action on it, not even a failover, and its Progressing condition says
so. Its pods keep running as they are.`,
			run: func(ctx context.Context, inv invocation, connect func() (Plugin, error), _ io.Writer) error {
				p, err := connect()
				if err != nil {
					return err
				}
				return p.Pause(ctx, inv.arg(0), inv.value("kind"))
			},
		},
		{
			name: "resume", args: "NAME", min: 1, max: 1, flags: []string{"namespace", "kind"},
			summary: "let the operator act on the resource again",
			help:    `Remove the resource's skip-reconcile annotation: the operator reconciles it again.`,
			run: func(ctx context.Context, inv invocation, connect func() (Plugin, error), _ io.Writer) error {
				p, err := connect()
				if err != nil {
					return err
				}
				return p.Resume(ctx, inv.arg(0), inv.value("kind"))
			},
		},
		{
			name: "restart", args: "NAME [POD]", min: 1, max: 2, flags: []string{"namespace", "kind"},
			summary: "a rolling restart of every pod, by the operator (or of POD alone)",
			help: `Without POD, annotate the resource with ` + RestartAnnotation + `=<now, RFC 3339>:
the operator copies the value into the pod template of each of its StatefulSets, and rolls
the new template as it rolls any other: replicas first, then each master once a replica in
sync has taken its role over (a RedisCluster's shard, a RedisReplication's master); the
sentinels and a standalone Redis are replaced one pod at a time by their StatefulSet. Only
the annotation is written, never the spec.

With POD, delete that pod (it must be one of the resource's): a master of a RedisCluster or
of a RedisReplication without sentinels hands its role to a replica in sync before its
process stops, sentinels fail a watched master over, and the StatefulSet recreates the pod.`,
			run: func(ctx context.Context, inv invocation, connect func() (Plugin, error), _ io.Writer) error {
				p, err := connect()
				if err != nil {
					return err
				}
				return p.Restart(ctx, inv.arg(0), inv.value("kind"), inv.arg(1))
			},
		},
		{
			name: "report", args: "NAME", min: 1, max: 1, flags: []string{"namespace", "kind", "output", "operator-namespace", "tail"},
			summary:  "write a support bundle: objects, events, each pod's INFO and ROLE, operator log lines",
			flagDocs: map[string]flagDoc{"output": {"DIR", "the bundle's directory (default: ./redis-report-NAME-TIME)"}},
			help: `Write into a directory (-o DIR, default ./redis-report-NAME-TIME): the resource as YAML;
the StatefulSets, Services, pods, PersistentVolumeClaims, ConfigMaps and
PodDisruptionBudgets it owns or labels; the names (never the data) of its Secrets; the events
of the resource and of those objects; per pod, INFO, ROLE and (RedisCluster) CLUSTER NODES,
read through the port-forward with the resource's password, as status does; and the lines of
the operator's log (its pods labelled ` + operatorSelector + ` in
--operator-namespace, the last --tail lines) that name the resource. Every password the
plugin read, and the values of requirepass, masterauth and auth-pass, are replaced by
` + redacted + `. A part that fails is noted in errors.txt and the rest is written; the
directory's path is printed at the end.`,
			check: checkReport,
			run: func(ctx context.Context, inv invocation, connect func() (Plugin, error), _ io.Writer) error {
				p, err := connect()
				if err != nil {
					return err
				}
				return p.Report(ctx, inv.arg(0), inv.value("kind"), reportOptions(inv))
			},
		},
		{
			name: "cli", args: "NAME [POD]", min: 1, max: 2, flags: []string{"namespace", "kind", "master"}, command: true,
			summary: "a redis-cli-like session on a pod of the resource (-- COMMAND runs one command)",
			help: `Send Redis commands to a pod of the resource through the API server (port-forward), with the
resource's password and TLS settings: to POD, to the master with --master (of POD's shard or
replication; without POD, a RedisCluster's master serving slot 0), else to its first pod.
Commands are read from standard input, one a line; arguments are split at spaces, and a
"double-quoted" argument may hold spaces and the escapes \" \\ \n \r \t \xHH ('single
quotes' take none but \'). Replies print as redis-cli prints them: strings quoted,
(integer) N, (nil), numbered arrays, (error) MESSAGE; INFO, CLUSTER NODES and the like
print as text. quit, exit or the end of input ends the session. With -- COMMAND [ARG...]
that one command is sent, its reply printed, and the plugin exits non-zero when Redis
replied with an error. Commands go as typed: the plugin refuses none, FLUSHALL included.`,
			check: checkCli,
			run: func(ctx context.Context, inv invocation, connect func() (Plugin, error), _ io.Writer) error {
				p, err := connect()
				if err != nil {
					return err
				}
				return p.Cli(ctx, inv.arg(0), inv.value("kind"), CliOptions{Pod: inv.arg(1), Master: inv.set("master"),
					Command: inv.words, In: inv.in})
			},
		},
		{
			name: "backups", args: "[NAME]", min: 0, max: 1, flags: []string{"namespace", "all-namespaces", "kind", "output"},
			flagDocs: map[string]flagDoc{"kind": {"KIND", "Redis, RedisCluster or RedisReplication, when a name is ambiguous"}},
			summary:  "the RedisBackups of NAME (of the namespace without NAME), newest first",
			help: `The RedisBackups whose spec.target names the resource NAME (--kind when a name is
ambiguous), newest first: their phase, size, start (UTC), duration (so far, while Running) and
the RedisBackupSchedule that made them (from their owner references; empty for one made by
hand). Without NAME, every RedisBackup of the namespace (-A: of every namespace) with its
target. The backups of a resource that no longer exists are still listed. -o json or
-o yaml prints the same, with each backup's location and condition, as one document.`,
			check: checkBackups,
			run: func(ctx context.Context, inv invocation, connect func() (Plugin, error), _ io.Writer) error {
				p, err := connect()
				if err != nil {
					return err
				}
				return p.Backups(ctx, inv.arg(0), inv.value("kind"), inv.set("all-namespaces"), inv.value("output"))
			},
		},
		{
			name: "backup", args: "NAME", min: 1, max: 1, flags: []string{"namespace", "kind", "from-schedule", "like", "wait", "timeout"},
			flagDocs: map[string]flagDoc{"kind": {"KIND", "Redis, RedisCluster or RedisReplication, when a name is ambiguous"}},
			summary:  "take a RedisBackup of NAME now, and wait for it",
			help: `Create a RedisBackup of the resource NAME (a Redis, RedisReplication or RedisCluster: a
RedisSentinel holds no data), named NAME-manual-<UTC time, yyyymmddhhmmss> (NAME shortened so
that the name has 63 characters at most). Its storage and source are those of the
backupTemplate of the RedisBackupSchedule --from-schedule names, or of the RedisBackup --like
names; with neither, those of the one RedisBackupSchedule whose template targets NAME, else of
its earlier RedisBackups when they all use the same storage (the plugin says which it took);
otherwise it fails and lists the schedules and backups to choose from. The backup is not
labelled nor owned by a schedule, so no schedule's retention deletes it.

By default it then waits until the backup is Completed or Failed (--timeout, default
` + shortDuration(defaultBackupTimeout) + `), printing a line each time its phase or progress changes, then its size,
duration and location. A Failed backup (its condition's message is printed) or a timeout
exits non-zero; the backup goes on in the cluster after a timeout or an interrupt.
--wait=false returns once the backup is created.`,
			check: checkBackup,
			run: func(ctx context.Context, inv invocation, connect func() (Plugin, error), _ io.Writer) error {
				p, err := connect()
				if err != nil {
					return err
				}
				return p.Backup(ctx, inv.arg(0), inv.value("kind"), backupOptions(inv))
			},
		},
		{
			name: "version", min: 0, max: 0, flags: []string{"client"},
			summary: "the plugin's and the operator's versions, with a warning when they differ",
			help: `The plugin's version and commit, then the version of each operator Deployment found
(label app.kubernetes.io/name=redis-operator, in any namespace) with a warning when its
minor version is not the plugin's: an older operator may not honour what a newer plugin
asks. --client prints the plugin's alone, without a cluster.`,
			run: runVersion,
		},
	}
}

func findCommand(name string) (command, bool) {
	for _, c := range commands() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// parseArgs accepts flags before, between and after the arguments, as kubectl does, and
// checks them against the command's own; it makes no API call.
func parseArgs(args []string) (invocation, command, error) {
	inv, positional, err := splitArgs(args)
	if err != nil {
		return inv, command{}, err
	}
	if len(positional) > 0 && positional[0] == "help" {
		inv.help, positional = true, positional[1:]
	}
	if len(positional) == 0 {
		inv.help = true
		return inv, command{}, nil
	}
	inv.command, inv.args = positional[0], positional[1:]
	cmd, ok := findCommand(inv.command)
	if !ok {
		return inv, command{}, fmt.Errorf("unknown command %q (%s)", inv.command, strings.Join(commandNames(), ", "))
	}
	if inv.help {
		return inv, cmd, nil
	}
	if err := validate(inv, cmd); err != nil {
		return inv, cmd, usageError(cmd, err)
	}
	return inv, cmd, nil
}

// splitArgs reads the flags and returns the positional arguments.
func splitArgs(args []string) (invocation, []string, error) {
	inv := invocation{values: map[string]string{}}
	var positional []string
	for len(args) > 0 {
		a := args[0]
		args = args[1:]
		if a == "--" {
			inv.words = slices.Clone(args) // a command to send: its words are not the plugin's flags
			if inv.words == nil {
				inv.words = []string{}
			}
			break
		}
		if a == "-h" || a == "--help" {
			inv.help = true
			continue
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			positional = append(positional, a)
			continue
		}
		name, value, hasValue := strings.Cut(a, "=")
		o, ok := optionByName(name)
		if !ok {
			return inv, nil, fmt.Errorf("unknown flag %s", name)
		}
		switch {
		case o.toggle && hasValue:
			b, err := strconv.ParseBool(value)
			if err != nil {
				return inv, nil, fmt.Errorf("flag %s takes true or false, not %q", name, value)
			}
			value = strconv.FormatBool(b)
		case o.boolean && hasValue:
			return inv, nil, fmt.Errorf("flag %s takes no value", name)
		case o.boolean:
			value = "true"
		case !hasValue:
			if len(args) == 0 {
				return inv, nil, fmt.Errorf("flag %s needs a value", name)
			}
			value, args = args[0], args[1:]
		}
		inv.values[o.key] = value
	}
	return inv, positional, nil
}

// validate checks the flags and the number of arguments against the command.
func validate(inv invocation, cmd command) error {
	for key := range inv.values {
		if !slices.Contains(cmd.flags, key) && !slices.Contains(connectionKeys, key) {
			names := optionByKey(key).names
			return fmt.Errorf("%s takes no %s flag", cmd.name, names[len(names)-1])
		}
	}
	switch {
	case inv.words != nil && !cmd.command:
		return fmt.Errorf("%s takes no command after --", cmd.name)
	case inv.words != nil && len(inv.words) == 0:
		return fmt.Errorf("%s: no command after --", cmd.name)
	}
	switch {
	case len(inv.args) < cmd.min:
		return fmt.Errorf("%s needs %s", cmd.name, cmd.args)
	case len(inv.args) > cmd.max:
		return fmt.Errorf("%s takes at most %d argument(s), got %q", cmd.name, cmd.max, inv.args)
	}
	if k := inv.value("kind"); k != "" {
		if _, err := normalizeKind(k); err != nil {
			return err
		}
	}
	if cmd.check != nil {
		return cmd.check(inv)
	}
	return nil
}

func usageError(cmd command, err error) error {
	return fmt.Errorf("%w\nusage: %s (kubectl redis %s --help)", err, usageLine(cmd), cmd.name)
}

func usageLine(cmd command) string {
	line := "kubectl redis " + cmd.name
	if cmd.args != "" {
		line += " " + cmd.args
	}
	for _, key := range cmd.flags {
		o := cmd.option(key)
		flag := o.names[0]
		if !o.boolean {
			flag += " " + o.value
		}
		line += " [" + flag + "]"
	}
	if cmd.command {
		line += " [-- COMMAND [ARG...]]"
	}
	return line
}

// option is the option of key as the command documents it.
func (c command) option(key string) option {
	o := optionByKey(key)
	if d, ok := c.flagDocs[key]; ok {
		o.value, o.help = d.value, d.help
	}
	return o
}

func commandNames() []string {
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	return names
}

// writeUsage prints the plugin's help: every command and the connection flags.
func writeUsage(out io.Writer) error {
	var b strings.Builder
	b.WriteString("kubectl redis: look at and act on Redis, RedisCluster, RedisReplication and RedisSentinel resources.\n\nCommands:\n")
	tw := tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0)
	for _, c := range commands() {
		_, _ = fmt.Fprintf(tw, "  %s %s\t%s\n", c.name, c.args, c.summary)
	}
	_ = tw.Flush()
	b.WriteString("\nkubectl redis COMMAND --help tells a command's arguments and flags.\n\nFlags of every command:\n")
	writeFlags(&b, command{}, connectionKeys)
	_, err := io.WriteString(out, b.String())
	return err
}

// writeCommandHelp prints one command's usage, description and flags.
func writeCommandHelp(out io.Writer, cmd command) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: %s\n\n%s\n\nFlags:\n", usageLine(cmd), cmd.help)
	writeFlags(&b, cmd, append(slices.Clone(cmd.flags), connectionKeys...))
	_, err := io.WriteString(out, b.String())
	return err
}

func writeFlags(b *strings.Builder, cmd command, keys []string) {
	tw := tabwriter.NewWriter(b, 2, 4, 2, ' ', 0)
	for _, key := range keys {
		o := cmd.option(key)
		names := strings.Join(o.names, ", ")
		if !o.boolean {
			names += " " + o.value
		}
		_, _ = fmt.Fprintf(tw, "  %s\t%s\n", names, o.help)
	}
	_ = tw.Flush()
}

// Connector makes the clients of one invocation; tests give fake ones.
type Connector func(inv invocation, out io.Writer) (Plugin, error)

// Run runs the plugin with the arguments after "kubectl redis"; in is its standard input.
func Run(ctx context.Context, args []string, in io.Reader, out io.Writer) error {
	return RunWithInput(ctx, args, in, out, connect)
}

// RunWith is Run with the clients made by connector and an empty standard input.
func RunWith(ctx context.Context, args []string, out io.Writer, connector Connector) error {
	return RunWithInput(ctx, args, strings.NewReader(""), out, connector)
}

// RunWithInput is Run with the clients made by connector.
func RunWithInput(ctx context.Context, args []string, in io.Reader, out io.Writer, connector Connector) error {
	inv, cmd, err := parseArgs(args)
	if err != nil {
		return err
	}
	inv.in = in
	if inv.help {
		if cmd.name == "" {
			return writeUsage(out)
		}
		return writeCommandHelp(out, cmd)
	}
	return cmd.run(ctx, inv, func() (Plugin, error) { return connector(inv, out) }, out)
}

func connect(inv invocation, out io.Writer) (Plugin, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = inv.value("kubeconfig")
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: inv.value("context")})
	config, err := loader.ClientConfig()
	if err != nil {
		return Plugin{}, fmt.Errorf("kubeconfig: %w", err)
	}
	namespace := inv.value("namespace")
	if namespace == "" {
		if namespace, _, err = loader.Namespace(); err != nil {
			return Plugin{}, fmt.Errorf("kubeconfig namespace: %w", err)
		}
	}
	scheme, err := newScheme()
	if err != nil {
		return Plugin{}, err
	}
	c, err := client.New(config, client.Options{Scheme: scheme})
	if err != nil {
		return Plugin{}, fmt.Errorf("client: %w", err)
	}
	kube, err := kubernetes.NewForConfig(config)
	if err != nil {
		return Plugin{}, fmt.Errorf("clientset: %w", err)
	}
	return Plugin{Config: config, Kube: kube, Client: c, Namespace: namespace, Out: out}, nil
}

// newScheme knows the built-in kinds, the four Redis kinds and the backup kinds.
func newScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("scheme: %w", err)
	}
	if err := v1beta2.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("scheme: %w", err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("scheme: %w", err)
	}
	return scheme, nil
}
