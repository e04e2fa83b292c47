package restore

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseCommandTakesCredentialsFromTheEnvironmentOnly(t *testing.T) {
	args := []string{"--endpoint", "http://s3:9000", "--bucket", "b", "--key", "k", "--sha256", strings.Repeat("a", 64), "--bytes", "9"}
	env := map[string]string{EnvAccessKeyID: "id", EnvSecretAccessKey: "secret"}
	opts, err := parseCommand(args, func(k string) string { return env[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if opts.AccessKeyID != "id" || opts.SecretAccessKey != "secret" || opts.DataDir != "/data" || opts.AppendOnly {
		t.Errorf("options = %+v", opts)
	}
	bare, err := parseCommand(args, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatalf("parsing needs no credentials (a restored pod has none to give): %v", err)
	}
	if err := bare.reachStore(); err == nil {
		t.Error("no credentials in the environment: the store would be reached without them")
	}
	if _, err := parseCommand(append(args, "--secret-access-key", "x"), func(k string) string { return env[k] }, io.Discard); err == nil {
		t.Error("a credential flag: accepted")
	}
}

func TestOptionsValidate(t *testing.T) {
	good := Options{Key: "k", SHA256: strings.Repeat("0f", 32), Bytes: 1, DataDir: "/data"}
	for name, change := range map[string]func(*Options){
		"no key":         func(o *Options) { o.Key = "" },
		"short sum":      func(o *Options) { o.SHA256 = "abc" },
		"upper-case sum": func(o *Options) { o.SHA256 = strings.Repeat("0F", 32) },
		"not hex":        func(o *Options) { o.SHA256 = strings.Repeat("zz", 32) },
		"no size":        func(o *Options) { o.Bytes = 0 },
		"relative dir":   func(o *Options) { o.DataDir = "data" },
	} {
		o := good
		change(&o)
		if err := o.validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := good.validate(); err != nil {
		t.Errorf("valid options: %v", err)
	}
}

// A pod that restarts after its restore, its credentials Secret deleted since (the variables
// are then empty), starts: the marker says its data is restored, and the store is not asked.
// Without the marker the same command refuses to go on without credentials.
func TestARestoredDataDirNeedsNoCredentials(t *testing.T) {
	dir := t.TempDir()
	sum := strings.Repeat("ab", 32)
	args := []string{"--endpoint", "http://127.0.0.1:1", "--bucket", "b", "--key", "k", "--sha256", sum, "--bytes", "9", "--data-dir", dir}
	noEnv := func(string) string { return "" }
	if err := RunCommand(context.Background(), args, noEnv, io.Discard); err == nil || !strings.Contains(err.Error(), EnvAccessKeyID) {
		t.Fatalf("a first restore without credentials: %v, want an error naming %s", err, EnvAccessKeyID)
	}
	if err := os.WriteFile(filepath.Join(dir, markerPrefix+sum), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := RunCommand(context.Background(), args, noEnv, &out); err != nil {
		t.Fatalf("a restored data dir, no credentials: %v", err)
	}
	if !strings.Contains(out.String(), AlreadyRestored.String()) {
		t.Errorf("output %q, want it to say %q", out.String(), AlreadyRestored)
	}
}
