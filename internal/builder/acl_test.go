package builder

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/rediskube/redis-operator/internal/redis"
)

func TestRenderACLFile(t *testing.T) {
	sum := sha256.Sum256([]byte("s3cret"))
	hash := "#" + hex.EncodeToString(sum[:])
	for _, tc := range []struct {
		name, file, password string
		want                 []string // lines before the marker
	}{
		{"no default user: the operator's closes it", "user app on >x ~app:* +get\n", "s3cret",
			[]string{"user app on >x ~app:* +get", "user default on " + hash + " ~* &* +@all"}},
		{"the user's default gets the operator's password last", "\r\nuser default on nopass ~* +@all\r\nuser app on >x\n", "s3cret",
			[]string{"user default on nopass ~* +@all " + hash, "user app on >x"}},
		{"no password: the file as is", "user app on >x\n", "", []string{"user app on >x"}},
		{"empty", "", "s3cret", []string{"user default on " + hash + " ~* &* +@all"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := renderACLFile(tc.file, tc.password)
			lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
			marker := ACLFileMarker(got)
			if !IsACLMarker(marker) || lines[len(lines)-1] != "user "+marker+" off" {
				t.Fatalf("no marker last:\n%s", got)
			}
			wantEqual(t, "lines", lines[:len(lines)-1], tc.want)
			if strings.Contains(got, "s3cret") {
				t.Fatal("the password is in the file in clear")
			}
			users, err := redis.ParseACLFile(got)
			if err != nil {
				t.Fatalf("Redis would refuse the rendered file: %v", err)
			}
			if err := redis.CheckOperatorUser(users); err != nil {
				t.Fatal(err)
			}
			if other := renderACLFile(tc.file+"user more on\n", tc.password); ACLFileMarker(other) == marker {
				t.Fatal("another file has the same marker")
			}
		})
	}
	if ACLFileMarker("user a on\n") != "" {
		t.Fatal("a file without marker has one")
	}
}
