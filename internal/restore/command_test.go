package restore

import (
	"io"
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
	if _, err := parseCommand(args, func(string) string { return "" }, io.Discard); err == nil {
		t.Error("no credentials in the environment: accepted")
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
