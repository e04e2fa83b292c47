package store

import "testing"

func TestParseEndpoint(t *testing.T) {
	for _, c := range []struct {
		in     string
		host   string
		secure bool
		bad    bool
	}{
		{in: "http://s3-store:8333", host: "s3-store:8333"},
		{in: "https://s3.amazonaws.com", host: "s3.amazonaws.com", secure: true},
		{in: "https://minio.example:9000/", host: "minio.example:9000", secure: true},
		{in: "minio.example:9000", host: "minio.example:9000", secure: true},
		{in: "", bad: true},
		{in: "ftp://x", bad: true},
		{in: "http://x/bucket", bad: true},
	} {
		host, secure, err := parseEndpoint(c.in)
		if c.bad {
			if err == nil {
				t.Errorf("%q: no error", c.in)
			}
			continue
		}
		if err != nil || host != c.host || secure != c.secure {
			t.Errorf("%q: %q, %v, %v; want %q, %v", c.in, host, secure, err, c.host, c.secure)
		}
	}
}

func TestNewS3Refuses(t *testing.T) {
	ok := S3Config{Endpoint: "http://127.0.0.1:1", Bucket: "b", AccessKeyID: "a", SecretAccessKey: "s"}
	if _, err := NewS3(ok); err != nil {
		t.Fatalf("valid settings: %v", err)
	}
	for name, mutate := range map[string]func(*S3Config){
		"no bucket":        func(c *S3Config) { c.Bucket = "" },
		"no access key":    func(c *S3Config) { c.AccessKeyID = "" },
		"no secret":        func(c *S3Config) { c.SecretAccessKey = "" },
		"small parts":      func(c *S3Config) { c.PartSize = 1 << 20 },
		"large parts":      func(c *S3Config) { c.PartSize = 5<<30 + 1 },
		"CA without PEM":   func(c *S3Config) { c.Endpoint, c.CAPEM = "https://x", []byte("nope") },
		"endpoint missing": func(c *S3Config) { c.Endpoint = "" },
	} {
		c := ok
		mutate(&c)
		if _, err := NewS3(c); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// A bare Service name is the Service of the backup's namespace; anything else names a host
// the operator reaches as it is.
func TestInNamespaceQualifiesBareServiceNames(t *testing.T) {
	for _, tc := range []struct{ endpoint, want string }{
		{"http://s3-store:8333", "http://s3-store.team-a:8333"},
		{"https://s3-store", "https://s3-store.team-a"},
		{"s3-store:8333", "s3-store.team-a:8333"},
		{"http://s3-store:8333/", "http://s3-store.team-a:8333/"},
		{"http://s3-store.other:8333", "http://s3-store.other:8333"},
		{"https://s3.eu-west-1.amazonaws.com", "https://s3.eu-west-1.amazonaws.com"},
		{"http://10.0.0.7:9000", "http://10.0.0.7:9000"},
		{"http://[fd00::7]:9000", "http://[fd00::7]:9000"},
		{"http://localhost:9000", "http://localhost:9000"},
		{"", ""},
	} {
		if got := InNamespace(tc.endpoint, "team-a"); got != tc.want {
			t.Errorf("InNamespace(%q) = %q, want %q", tc.endpoint, got, tc.want)
		}
	}
	if got := InNamespace("http://s3-store:8333", ""); got != "http://s3-store:8333" {
		t.Errorf("without a namespace the endpoint must stay as it is, got %q", got)
	}
}
