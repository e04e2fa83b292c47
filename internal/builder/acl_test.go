package builder

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/rediskube/redis-operator/internal/redis"
)

func TestRenderACLFile(t *testing.T) {
	sum := sha256.Sum256([]byte("s3cret"))
	hash := "#" + hex.EncodeToString(sum[:])
	for _, tc := range []struct {
		name, file, password string
		operatorUser         bool
		want                 []string // lines before the marker
	}{
		{"no default user: the operator's closes it", "user app on >x ~app:* +get\n", "s3cret", false,
			[]string{"user app on >x ~app:* +get", "user default on " + hash + " ~* &* +@all"}},
		{"the user's default gets the operator's password last", "\r\nuser default on nopass ~* +@all\r\nuser app on >x\n", "s3cret", false,
			[]string{"user default on nopass ~* +@all " + hash, "user app on >x"}},
		{"no password: the file as is", "user app on >x\n", "", false, []string{"user app on >x"}},
		{"empty", "", "s3cret", false, []string{"user default on " + hash + " ~* &* +@all"}},
		{"default off: the operator's own user, default left off", "user default off\nuser app on >x\n", "s3cret", true,
			[]string{"user default off", "user app on >x", "user redis-operator on " + hash + " ~* &* +@all"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := renderACLFile(tc.file, tc.password, tc.operatorUser)
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
			if redis.DefaultUserOff(users) != tc.operatorUser {
				t.Fatalf("the rendered file turns the default user off: %v, want %v", redis.DefaultUserOff(users), tc.operatorUser)
			}
			if other := renderACLFile(tc.file+"user more on\n", tc.password, tc.operatorUser); ACLFileMarker(other) == marker {
				t.Fatal("another file has the same marker")
			}
		})
	}
	if ACLFileMarker("user a on\n") != "" {
		t.Fatal("a file without marker has one")
	}
}

// With the default user off, the operator's own user carries the password: in the aclfile,
// as the replicas' masteruser, for the preStop hook's redis-cli and for the exporter.
func TestOperatorACLUserWhereTheDefaultIsOff(t *testing.T) {
	cr := fullCluster()
	out, err := BuildRedisCluster(RedisClusterInput{CR: cr, Password: "pw", ACL: "user default off\n", ACLOperatorUser: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range out.Secrets {
		switch s.Name {
		case AuthSecretName(cr.Name):
			if !strings.Contains(string(s.Data[RedisAuthKey]), "\nmasteruser "+redis.OperatorUser+"\n") || string(s.Data[RedisUserKey]) != redis.OperatorUser {
				t.Errorf("auth Secret: %s / user %q, want masteruser and user %s", s.Data[RedisAuthKey], s.Data[RedisUserKey], redis.OperatorUser)
			}
		case ACLSecretName(cr.Name):
			users, err := redis.ParseACLFile(string(s.Data[ACLFileKey]))
			if err != nil || !redis.DefaultUserOff(users) || !slices.ContainsFunc(users, func(u redis.ACLUser) bool { return u.Name == redis.OperatorUser && u.Enabled() }) {
				t.Errorf("aclfile %q (%v): want default off and %s on", s.Data[ACLFileKey], err, redis.OperatorUser)
			}
		}
	}
	for _, sts := range out.StatefulSets {
		exporter := sts.Spec.Template.Spec.Containers[1]
		if !slices.ContainsFunc(exporter.Env, func(e corev1.EnvVar) bool { return e.Name == exporterUserEnv && e.Value == redis.OperatorUser }) {
			t.Errorf("%s: the exporter does not log in as %s: %+v", sts.Name, redis.OperatorUser, exporter.Env)
		}
	}
}
