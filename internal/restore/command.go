package restore

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"github.com/rediskube/redis-operator/internal/backup/store"
)

// Command is the name of the operator binary's subcommand that runs a restore.
const Command = "restore"

// The environment variables the store's credentials come from: never a process argument,
// which anyone on the node can read.
const (
	EnvAccessKeyID     = "AWS_ACCESS_KEY_ID"
	EnvSecretAccessKey = "AWS_SECRET_ACCESS_KEY" //nolint:gosec // the variable's name, not a credential
	// EnvPodName is the pod's name, from the downward API; HOSTNAME, which a StatefulSet's pod
	// has set to its name too, when it is not set.
	EnvPodName = "POD_NAME"
)

// Skipped: the pod is not the one to restore (Decide); nothing was touched.
const Skipped Outcome = AlreadyRestored + 1

// commandOptions are the subcommand's flags.
type commandOptions struct {
	store.S3Config
	caFile string
	// onlyOrdinal, when 0 or more, restores only in the pod of that ordinal (a
	// RedisReplication's first master); podName is the pod's, from the environment.
	onlyOrdinal int
	podName     string
	// skipFile, when set and present, says the resource's restore is done: skip.
	skipFile string
	// objects, when set (a RedisCluster's leaders), are the snapshots by pod ordinal: the pod
	// restores the one of its ordinal, in place of --key, --sha256 and --bytes.
	objects ordinalObjects
	Options
}

// ordinalObjects is the --ordinal-object flag: ORDINAL:SHA256:BYTES:KEY, repeated.
type ordinalObjects map[int]Options

func (o *ordinalObjects) String() string { return fmt.Sprintf("%d objects", len(*o)) }

func (o *ordinalObjects) Set(v string) error {
	parts := strings.SplitN(v, ":", 4)
	if len(parts) != 4 {
		return fmt.Errorf("%q: want ORDINAL:SHA256:BYTES:KEY", v)
	}
	ordinal, err := strconv.Atoi(parts[0])
	if err != nil || ordinal < 0 {
		return fmt.Errorf("%q: the ordinal %q is not a number of 0 or more", v, parts[0])
	}
	size, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil {
		return fmt.Errorf("%q: the size: %w", v, err)
	}
	if *o == nil {
		*o = ordinalObjects{}
	}
	if _, dup := (*o)[ordinal]; dup {
		return fmt.Errorf("%q: ordinal %d given twice", v, ordinal)
	}
	(*o)[ordinal] = Options{SHA256: parts[1], Bytes: size, Key: parts[3]}
	return nil
}

func parseCommand(args []string, getenv func(string) string, output io.Writer) (*commandOptions, error) {
	opts := &commandOptions{}
	fs := flag.NewFlagSet("redis-operator "+Command, flag.ContinueOnError)
	fs.SetOutput(output)
	fs.StringVar(&opts.Endpoint, "endpoint", "", "The S3 store: https://host[:port], http://host[:port] or host[:port] (HTTPS).")
	fs.StringVar(&opts.Bucket, "bucket", "", "The bucket of the backup.")
	fs.StringVar(&opts.Region, "region", "", "The bucket's region; empty: asked of the store.")
	fs.BoolVar(&opts.ForcePathStyle, "force-path-style", false, "Address the bucket in the path, as most self-hosted stores need.")
	fs.StringVar(&opts.caFile, "ca-file", "", "PEM bundle the store's certificate is verified against instead of the system's roots.")
	fs.StringVar(&opts.Key, "key", "", "The snapshot's object key.")
	fs.StringVar(&opts.SHA256, "sha256", "", "The snapshot's SHA-256 (hex) the backup recorded.")
	fs.Int64Var(&opts.Bytes, "bytes", 0, "The snapshot's size the backup recorded.")
	fs.StringVar(&opts.DataDir, "data-dir", "/data", "Redis's data directory.")
	fs.BoolVar(&opts.AppendOnly, "appendonly", false, "Redis runs with appendonly yes: write the snapshot as the base of a new AOF.")
	fs.IntVar(&opts.onlyOrdinal, "only-ordinal", -1,
		"Restore only in the StatefulSet pod of this ordinal (its name from "+EnvPodName+", else HOSTNAME); other pods skip. -1: every pod restores.")
	fs.Var(&opts.objects, "ordinal-object",
		"ORDINAL:SHA256:BYTES:KEY, repeated: the StatefulSet pod of each ordinal restores its own object (a cluster's leaders, a shard each); "+
			"a pod of another ordinal skips. Replaces --key, --sha256 and --bytes.")
	fs.StringVar(&opts.skipFile, "skip-file", "", "Skip when this file exists: the resource was restored already and this pod syncs from its master.")
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("parse flags: %w", err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if len(opts.objects) > 0 && (opts.Key != "" || opts.SHA256 != "" || opts.Bytes != 0 || opts.onlyOrdinal >= 0) {
		return nil, errors.New("--ordinal-object replaces --key, --sha256, --bytes and --only-ordinal: give one or the other")
	}
	opts.AccessKeyID, opts.SecretAccessKey = getenv(EnvAccessKeyID), getenv(EnvSecretAccessKey)
	opts.podName = getenv(EnvPodName)
	if opts.podName == "" {
		opts.podName = getenv("HOSTNAME")
	}
	return opts, nil
}

// reachStore completes the options for reaching the store: its credentials and CA bundle.
func (opts *commandOptions) reachStore() error {
	if opts.AccessKeyID == "" || opts.SecretAccessKey == "" {
		return fmt.Errorf("set the store's credentials in %s and %s", EnvAccessKeyID, EnvSecretAccessKey)
	}
	if opts.caFile != "" {
		ca, err := os.ReadFile(opts.caFile)
		if err != nil {
			return fmt.Errorf("read --ca-file: %w", err)
		}
		opts.CAPEM = ca
	}
	return nil
}

// RunCommand runs `redis-operator restore ARGS`: it parses args, reads the credentials through
// getenv, restores and tells what it did on out.
func RunCommand(ctx context.Context, args []string, getenv func(string) string, out io.Writer) error {
	opts, err := parseCommand(args, getenv, out)
	if err != nil {
		return fmt.Errorf("%s: %w", Command, err)
	}
	if skip, why, err := opts.skip(); err != nil || skip {
		if err != nil {
			return fmt.Errorf("%s: %w", Command, err)
		}
		if _, err := fmt.Fprintf(out, "%s into %s: %s: %s\n", opts.SHA256, opts.DataDir, Skipped, why); err != nil {
			return fmt.Errorf("%s: %w", Command, err)
		}
		return nil
	}
	// A pod that restarts after its restore needs neither the store nor its credentials (the
	// Secret may be gone): its data is its own.
	done, err := restoredBefore(opts.DataDir, opts.SHA256)
	if err != nil {
		return fmt.Errorf("%s: %w", Command, err)
	}
	if done {
		_, err = fmt.Fprintf(out, "%s into %s: %s\n", opts.SHA256, opts.DataDir, AlreadyRestored)
		if err != nil {
			return fmt.Errorf("%s: %w", Command, err)
		}
		return nil
	}
	if err := opts.reachStore(); err != nil {
		return fmt.Errorf("%s: %w", Command, err)
	}
	s3, err := store.NewS3(opts.S3Config)
	if err != nil {
		return fmt.Errorf("%s: %w", Command, err)
	}
	outcome, err := Run(ctx, s3, opts.Options)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "%s %s into %s: %s\n", s3.Location(opts.Key), opts.SHA256, opts.DataDir, outcome)
	if err != nil {
		return fmt.Errorf("%s: %w", Command, err)
	}
	return nil
}

// skip tells whether this pod leaves the restore to another, and why; with --ordinal-object it
// also picks the pod's object. A RedisCluster's leaders each restore the object of their
// ordinal, and skip once the resource is restored, as below. A RedisReplication sets
// --only-ordinal: its pods share one template, but only the pod of ordinal 0, which the
// operator makes the first master, restores; the others start empty and sync from it. Once
// the resource is restored (the skip file, which the operator's ConfigMap fills then, is there)
// no pod restores any more, not even pod 0 recreated without its volume: it becomes a replica
// of the master, which holds newer data than the backup, and the backup may be gone by then.
func (opts *commandOptions) skip() (bool, string, error) {
	if opts.skipFile != "" {
		_, err := os.Stat(opts.skipFile)
		switch {
		case err == nil:
			return true, "the resource was restored already; this pod syncs from its master", nil
		case !errors.Is(err, fs.ErrNotExist):
			return false, "", fmt.Errorf("skip file: %w", err)
		}
	}
	if opts.onlyOrdinal < 0 && len(opts.objects) == 0 {
		return false, "", nil
	}
	ordinal, err := PodOrdinal(opts.podName)
	if err != nil {
		return false, "", err
	}
	if len(opts.objects) > 0 {
		// A cluster's leader restores its own shard; a leader added since has none.
		object, ok := opts.objects[ordinal]
		if !ok {
			return true, fmt.Sprintf("pod %s has no snapshot of its ordinal to restore", opts.podName), nil
		}
		opts.Key, opts.SHA256, opts.Bytes = object.Key, object.SHA256, object.Bytes
		return false, "", nil
	}
	if ordinal != opts.onlyOrdinal {
		return true, fmt.Sprintf("pod %s is not of ordinal %d, which restores; it syncs from its master", opts.podName, opts.onlyOrdinal), nil
	}
	return false, "", nil
}

// PodOrdinal is the ordinal that ends a StatefulSet pod's name (<statefulset>-<ordinal>).
func PodOrdinal(pod string) (int, error) {
	i := strings.LastIndexByte(pod, '-')
	if pod == "" {
		return 0, fmt.Errorf("no pod name: set %s (downward API metadata.name) or HOSTNAME", EnvPodName)
	}
	n, err := strconv.Atoi(pod[i+1:])
	if i < 0 || err != nil || n < 0 || strconv.Itoa(n) != pod[i+1:] {
		return 0, fmt.Errorf("pod name %q does not end in a StatefulSet ordinal", pod)
	}
	return n, nil
}
