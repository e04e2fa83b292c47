package redis_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rediskube/redis-operator/internal/redis"
)

func TestEndpointAddress(t *testing.T) {
	for _, tc := range []struct {
		host string
		port int
		want string
	}{
		{"10.0.0.5", 6379, "10.0.0.5:6379"},
		{"fd00::5", 6379, "[fd00::5]:6379"},
		{"::1", 26379, "[::1]:26379"},
		{"redis-0.redis-headless.ns.svc", 6379, "redis-0.redis-headless.ns.svc:6379"},
	} {
		ep := redis.NewEndpoint(tc.host, tc.port, redis.Auth{Password: "secret"})
		if got := ep.Address(); got != tc.want {
			t.Errorf("NewEndpoint(%q, %d).Address() = %q, want %q", tc.host, tc.port, got, tc.want)
		}
		if strings.Contains(ep.String(), "secret") {
			t.Errorf("String() prints the password: %q", ep.String())
		}
	}
}

// addressAssembly finds host and port joined by hand: `ip + ":" + port`, `"%s:%d"`.
var addressAssembly = regexp.MustCompile(`":"\s*\+|\+\s*":"|%[sv]:%[dsv]`)

// notAddresses are files whose "key:value" text is not an address.
var notAddresses = map[string]string{
	"internal/redis/clusterinfo.go":  "renders CLUSTER INFO's field:value lines",
	"internal/writecheck/checker.go": "names the Redis keys it writes",
}

// TestNoAddressIsAssembledFromStrings keeps every address the operator dials going through
// Endpoint (net.JoinHostPort): a string-joined one breaks on IPv6 pod addresses.
func TestNoAddressIsAssembledFromStrings(t *testing.T) {
	root := filepath.Join("..", "..")
	var offenders []string
	for _, dir := range []string{"internal", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || notAddresses[filepath.ToSlash(rel)] != "" {
				return nil
			}
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			defer func() { _ = f.Close() }()
			scanner := bufio.NewScanner(f)
			for n := 1; scanner.Scan(); n++ {
				if addressAssembly.MatchString(scanner.Text()) {
					offenders = append(offenders, fmt.Sprintf("%s:%d: %s", rel, n, strings.TrimSpace(scanner.Text())))
				}
			}
			return scanner.Err()
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(offenders) > 0 {
		t.Errorf("addresses joined by hand (use redis.Endpoint / net.JoinHostPort):\n%s", strings.Join(offenders, "\n"))
	}
}
