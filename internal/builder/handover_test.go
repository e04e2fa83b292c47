package builder

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// The preStop wait takes half the grace period, at most maxHandOverWait; no time, no hook.
func TestHandOverWait(t *testing.T) {
	for _, c := range []struct {
		grace *int64
		want  int64
	}{
		{nil, 15}, {ptrTo[int64](90), 15}, {ptrTo[int64](10), 5}, {ptrTo[int64](1), 0}, {ptrTo[int64](0), 0},
	} {
		if got := handOverWait(c.grace); got != c.want {
			t.Errorf("grace %v: wait %d, want %d", c.grace, got, c.want)
		}
	}
	w := &workload{server: redisServer, handOverOnStop: true, port: 6379, terminationGrace: ptrTo[int64](1)}
	if w.handOverHook() != nil {
		t.Error("a one-second grace period got a preStop hook")
	}
}

// Masters that can hand over (cluster, replication) wait in preStop with redis-cli authenticated
// from the projected password file (it follows a rotation; the container's REDISCLI_AUTH, set at
// its start, would not, so the hook sets its own); a standalone Redis and a sentinel have
// nothing to hand over.
func TestHandOverHookOnlyWhereAReplicaCanTakeOver(t *testing.T) {
	cluster, err := BuildRedisCluster(RedisClusterInput{CR: fullCluster(), Password: "pw"})
	if err != nil {
		t.Fatal(err)
	}
	for _, sts := range cluster.StatefulSets {
		c := sts.Spec.Template.Spec.Containers[0]
		if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Exec == nil {
			t.Fatalf("%s: no preStop hook", sts.Name)
		}
		script := strings.Join(c.Lifecycle.PreStop.Exec.Command, " ")
		for _, want := range []string{"info replication", "--tls --cacert /tls/", "connected_slaves:0", "+15",
			`REDISCLI_AUTH="$(cat ` + passwordFilePath + ` `} {
			if !strings.Contains(script, want) {
				t.Errorf("%s: preStop %q lacks %q", sts.Name, script, want)
			}
		}
		if !strings.Contains(script, redisCLIAuthEnv+`="$(cat `) || !strings.Contains(script, "export "+redisCLIAuthEnv) {
			t.Errorf("%s: the hook does not set %s from the file over the container's, stale after a rotation: %q", sts.Name, redisCLIAuthEnv, script)
		}
		if !projectsKey(sts.Spec.Template.Spec.Volumes, RedisPasswordKey, passwordRelPath) {
			t.Errorf("%s: the password file is not projected at %s", sts.Name, passwordRelPath)
		}
	}
	for _, s := range cluster.Secrets {
		if s.Name == AuthSecretName(fullCluster().Name) && string(s.Data[RedisPasswordKey]) != "pw" {
			t.Errorf("auth Secret %s: %s = %q, want the password", s.Name, RedisPasswordKey, s.Data[RedisPasswordKey])
		}
	}
	standalone, err := BuildRedis(RedisInput{CR: fullRedis(), Password: "pw"})
	if err != nil {
		t.Fatal(err)
	}
	if c := standalone.StatefulSets[0].Spec.Template.Spec.Containers[0]; c.Lifecycle != nil {
		t.Errorf("standalone Redis got a hand-over hook: %+v", c.Lifecycle)
	}
}

// envNamed is the variable of that name, nil when there is none.
func envNamed(env []corev1.EnvVar, name string) *corev1.EnvVar {
	for i := range env {
		if env[i].Name == name {
			return &env[i]
		}
	}
	return nil
}

func projectsKey(volumes []corev1.Volume, key, path string) bool {
	for _, v := range volumes {
		if v.Projected == nil {
			continue
		}
		for _, src := range v.Projected.Sources {
			if src.Secret == nil {
				continue
			}
			for _, item := range src.Secret.Items {
				if item.Key == key && item.Path == path {
					return true
				}
			}
		}
	}
	return false
}
