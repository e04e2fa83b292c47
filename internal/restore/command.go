package restore

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/rediskube/redis-operator/internal/backup/store"
)

// Command is the name of the operator binary's subcommand that runs a restore.
const Command = "restore"

// The environment variables the store's credentials come from: never a process argument,
// which anyone on the node can read.
const (
	EnvAccessKeyID     = "AWS_ACCESS_KEY_ID"
	EnvSecretAccessKey = "AWS_SECRET_ACCESS_KEY" //nolint:gosec // the variable's name, not a credential
)

// commandOptions are the subcommand's flags.
type commandOptions struct {
	store.S3Config
	caFile string
	Options
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
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("parse flags: %w", err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	opts.AccessKeyID, opts.SecretAccessKey = getenv(EnvAccessKeyID), getenv(EnvSecretAccessKey)
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
