package builder

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

// TestReplicationPodsAnnounceTheirNames: with AnnounceHostnames each Redis pod announces its
// DNS name (the kubelet expands POD_NAME), the embedded sentinels are seeded with the
// master's name and told to resolve and announce names; without it nothing of that is there,
// whatever the sentinel config says. Either way each pod starts as a replica of no reachable
// master: replicas that re-link to it by themselves never sync from it until it is told its
// role.
func TestReplicationPodsAnnounceTheirNames(t *testing.T) {
	in := hostnamesReplicationInput()
	o := mustBuild(t)(BuildRedisReplication(in))
	redis := container(t, o.StatefulSet("repl").Spec.Template.Spec, "repl")
	wantEqual(t, "command", redis.Command, []string{"redis-server", redisConfPath,
		"--replica-announce-ip", "$(POD_NAME).repl-headless.redis-ns.svc.example.internal", "--replicaof", "127.0.0.1", "0"})
	if !slices.ContainsFunc(redis.Env, func(e corev1.EnvVar) bool {
		return e.Name == "POD_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name"
	}) {
		t.Errorf("no POD_NAME from metadata.name in %v", redis.Env)
	}
	conf := confOf(t, o, "repl-s-config", SentinelConfKey)
	for _, want := range []string{"sentinel resolve-hostnames yes", "sentinel announce-hostnames yes",
		"sentinel monitor mymaster repl-0.repl-headless.redis-ns.svc.example.internal 6379 2"} {
		if !strings.Contains(conf, want+"\n") {
			t.Errorf("sentinel.conf lacks %q:\n%s", want, conf)
		}
	}

	in.AnnounceHostnames, in.MasterHost = false, testMasterHost
	o = mustBuild(t)(BuildRedisReplication(in))
	redis = container(t, o.StatefulSet("repl").Spec.Template.Spec, "repl")
	wantEqual(t, "command without names", redis.Command, []string{"redis-server", redisConfPath, "--replicaof", "127.0.0.1", "0"})
	if len(redis.Env) != 0 {
		t.Errorf("env without names: %v", redis.Env)
	}

	in = hostnamesReplicationInput()
	in.CR.Spec.KubernetesConfig.Service = &v1beta2.ServiceConfig{Headless: &v1beta2.ServiceOption{Enabled: ptrTo(false)}}
	if _, err := BuildRedisReplication(in); err == nil {
		t.Error("pods announce DNS names no headless Service makes resolve")
	}
}

func TestReplicationNamesHosts(t *testing.T) {
	names := v1beta2.SentinelConfig{ResolveHostnames: "yes", AnnounceHostnames: "yes"}
	resolveOnly := v1beta2.SentinelConfig{ResolveHostnames: "yes"}
	embedded := func(c v1beta2.SentinelConfig) *v1beta2.RedisReplication {
		cr := minimalReplication()
		cr.Spec.Sentinel = &v1beta2.Sentinel{Size: 3, Image: "redis:7.4.2", SentinelConfig: c}
		return cr
	}
	watching := func(c v1beta2.SentinelConfig) []v1beta2.RedisSentinel {
		sn := minimalSentinel()
		sn.Spec.RedisSentinelConfig.SentinelConfig = c
		return []v1beta2.RedisSentinel{*minimalSentinel(), *sn}
	}
	noHeadless := embedded(names)
	noHeadless.Spec.KubernetesConfig.Service = &v1beta2.ServiceConfig{Headless: &v1beta2.ServiceOption{Enabled: ptrTo(false)}}
	for _, c := range []struct {
		name      string
		cr        *v1beta2.RedisReplication
		sentinels []v1beta2.RedisSentinel
		want      bool
	}{
		{"no sentinels", minimalReplication(), nil, false},
		{"embedded sentinels by IP", embedded(v1beta2.SentinelConfig{}), nil, false},
		{"embedded sentinels resolving names, announcing IPs", embedded(resolveOnly), nil, false},
		{"embedded sentinels by name", embedded(names), nil, true},
		{"a RedisSentinel by name", minimalReplication(), watching(names), true},
		{"RedisSentinels by IP", minimalReplication(), watching(resolveOnly), false},
		{"no headless Service", noHeadless, watching(names), false},
	} {
		if got := ReplicationNamesHosts(c.cr, c.sentinels); got != c.want {
			t.Errorf("%s: ReplicationNamesHosts = %v, want %v", c.name, got, c.want)
		}
	}
}
