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

func TestPodOrdinal(t *testing.T) {
	for pod, want := range map[string]int{"cache-0": 0, "my-cache-12": 12, "a-b-c-3": 3} {
		if got, err := PodOrdinal(pod); err != nil || got != want {
			t.Errorf("PodOrdinal(%q) = %d, %v; want %d", pod, got, err, want)
		}
	}
	for _, pod := range []string{"", "cache", "cache-", "cache-x", "cache-01", "cache-+1"} {
		if got, err := PodOrdinal(pod); err == nil {
			t.Errorf("PodOrdinal(%q) = %d, want an error", pod, got)
		}
	}
}

// In a RedisReplication only the pod of ordinal 0, which the operator makes the first master,
// restores; the others, and any pod once the skip file says the resource was restored, skip
// without reaching the store: they need neither the backup nor its credentials.
func TestRestoreOnlyOnTheOrdinal(t *testing.T) {
	sum := strings.Repeat("ab", 32)
	dir := t.TempDir()
	skipFile := filepath.Join(t.TempDir(), "restored")
	base := []string{"--endpoint", "http://127.0.0.1:1", "--bucket", "b", "--key", "k", "--sha256", sum, "--bytes", "9",
		"--data-dir", dir, "--only-ordinal", "0", "--skip-file", skipFile}
	for _, tc := range []struct {
		name string
		env  map[string]string
		// skip: the command skips (no credentials, no store: it succeeds only by skipping).
		skip bool
		// fails: a bad pod name, said as such.
		fails string
	}{
		{name: "ordinal 0 restores", env: map[string]string{EnvPodName: "repl-0"}},
		{name: "ordinal 1 skips", env: map[string]string{EnvPodName: "repl-1"}, skip: true},
		{name: "ordinal 10 skips", env: map[string]string{EnvPodName: "repl-10"}, skip: true},
		{name: "HOSTNAME without POD_NAME", env: map[string]string{"HOSTNAME": "repl-2"}, skip: true},
		{name: "POD_NAME first", env: map[string]string{EnvPodName: "repl-0", "HOSTNAME": "repl-2"}},
		{name: "no name", env: map[string]string{}, fails: EnvPodName},
		{name: "not a StatefulSet pod", env: map[string]string{EnvPodName: "repl"}, fails: "ordinal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			err := RunCommand(context.Background(), base, func(k string) string { return tc.env[k] }, &out)
			switch {
			case tc.fails != "":
				if err == nil || !strings.Contains(err.Error(), tc.fails) {
					t.Errorf("error %v, want one naming %q", err, tc.fails)
				}
			case tc.skip:
				if err != nil || !strings.Contains(out.String(), Skipped.String()) {
					t.Errorf("error %v, output %q; want it skipped", err, out.String())
				}
			default:
				// The restoring pod goes for the store, and without credentials says so.
				if err == nil || !strings.Contains(err.Error(), EnvAccessKeyID) {
					t.Errorf("error %v, want the restore to go on and ask for %s", err, EnvAccessKeyID)
				}
			}
		})
	}
	// Restored: the operator's ConfigMap gives the skip file, and pod 0 recreated without its
	// volume skips too (it syncs from the master, and the backup may be gone).
	if err := os.WriteFile(skipFile, []byte("nightly"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := RunCommand(context.Background(), base, func(k string) string { return map[string]string{EnvPodName: "repl-0"}[k] }, &out); err != nil ||
		!strings.Contains(out.String(), Skipped.String()) {
		t.Errorf("pod 0 after the restore: error %v, output %q; want it skipped", err, out.String())
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 0 {
		t.Errorf("data dir %v, %v: a skipping pod wrote into it", entries, err)
	}
	// Without the flags (a standalone Redis) every pod restores, whatever its name.
	plain := base[:len(base)-4]
	err = RunCommand(context.Background(), plain, func(k string) string { return map[string]string{EnvPodName: "cache-3"}[k] }, io.Discard)
	if err == nil || !strings.Contains(err.Error(), EnvAccessKeyID) {
		t.Errorf("no ordinal flag: %v, want the restore to go on", err)
	}
}

// A cluster's leaders share one command: each picks the object of its own ordinal (here
// found restored already by its marker, so no store is asked), a pod of an ordinal without
// one skips, and so does every pod once the skip file says the cluster was restored.
func TestOrdinalObjectsArePickedByThePodsOrdinal(t *testing.T) {
	sums := []string{strings.Repeat("0a", 32), strings.Repeat("1b", 32)}
	args := func(dir string, extra ...string) []string {
		return append([]string{"--endpoint", "http://127.0.0.1:1", "--bucket", "b", "--data-dir", dir,
			"--ordinal-object", "0:" + sums[0] + ":10:cluster/ns/b/shard:0.rdb",
			"--ordinal-object", "1:" + sums[1] + ":11:cluster/ns/b/shard:1.rdb"}, extra...)
	}
	env := func(pod string) func(string) string {
		return func(k string) string {
			if k == EnvPodName {
				return pod
			}
			return ""
		}
	}
	dir := t.TempDir()
	opts, err := parseCommand(args(dir), env("shards-leader-1"), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if skip, why, err := opts.skip(); err != nil || skip {
		t.Fatalf("leader 1: skip %v (%s), %v", skip, why, err)
	}
	if opts.Key != "cluster/ns/b/shard:1.rdb" || opts.SHA256 != sums[1] || opts.Bytes != 11 {
		t.Errorf("leader 1 picked %+v, want its own object", opts.Options)
	}
	if err := os.WriteFile(filepath.Join(dir, markerPrefix+sums[1]), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := RunCommand(context.Background(), args(dir), env("shards-leader-1"), &out); err != nil ||
		!strings.Contains(out.String(), sums[1]) || !strings.Contains(out.String(), AlreadyRestored.String()) {
		t.Errorf("leader 1 with its marker: %q, %v; want its object already restored", out.String(), err)
	}
	// Leader 0 in a data dir restored for leader 1: its own object is not there, and the
	// store (unreachable, no credentials) is asked for it.
	if err := RunCommand(context.Background(), args(dir), env("shards-leader-0"), io.Discard); err == nil {
		t.Error("leader 0 found its object restored by leader 1's marker")
	}
	out.Reset()
	if err := RunCommand(context.Background(), args(t.TempDir()), env("shards-leader-2"), &out); err != nil || !strings.Contains(out.String(), Skipped.String()) {
		t.Errorf("leader 2, which has no object: %q, %v; want skipped", out.String(), err)
	}
	skipFile := filepath.Join(t.TempDir(), "restored")
	if err := os.WriteFile(skipFile, []byte("nightly"), 0o600); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := RunCommand(context.Background(), args(t.TempDir(), "--skip-file", skipFile), env("shards-leader-0"), &out); err != nil ||
		!strings.Contains(out.String(), Skipped.String()) {
		t.Errorf("leader 0 after the cluster was restored: %q, %v; want skipped", out.String(), err)
	}
	for name, bad := range map[string][]string{
		"with --key":        args(dir, "--key", "k"),
		"with only-ordinal": args(dir, "--only-ordinal", "0"),
		"twice":             args(dir, "--ordinal-object", "1:"+sums[1]+":11:k"),
		"no key":            {"--ordinal-object", "0:" + sums[0] + ":10"},
		"bad size":          {"--ordinal-object", "0:" + sums[0] + ":ten:k"},
		"bad ordinal":       {"--ordinal-object", "-1:" + sums[0] + ":10:k"},
	} {
		if _, err := parseCommand(bad, env("shards-leader-0"), io.Discard); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}
