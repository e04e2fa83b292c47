package builder

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// listOrder is what one built object lists, by name, in order.
type listOrder struct {
	ports []string // a Service's
	// a StatefulSet's pod template
	initContainers []string
	containers     []string
	volumes        []string
	mounts         map[string][]string // each container's volumeMounts, init ones too
}

// TestListOrder pins the order of every list users' tooling compares by position (GitOps
// diffs, asserts written against the replaced operator's objects). The rule: what the
// replaced operator lists too comes first, in its order; what only we emit follows. Its
// orders: a Service lists the client port, then the exporter's, then extras (the bus, on
// the per-pod NodePort Services only); the containers are the server, the exporter, then the
// sidecars; the server mounts node-conf, the data, tls-certs, then the user's; the pod lists
// the user's volumes, then tls-certs; the exporter's own variables are sorted by name.
// The goldens hold the same lists; this test says which order is meant.
func TestListOrder(t *testing.T) {
	exporterEnv := []string{"REDIS_ADDR", "REDIS_EXPORTER_SKIP_TLS_VERIFICATION", "REDIS_EXPORTER_TLS_CA_CERT_FILE",
		"REDIS_EXPORTER_TLS_CLIENT_CERT_FILE", "REDIS_EXPORTER_TLS_CLIENT_KEY_FILE", "REDIS_EXPORTER_WEB_LISTEN_ADDRESS",
		"REDIS_PASSWORD", "REDIS_EXPORTER_INCL_SYSTEM_METRICS"}
	redisServices := func(name, client string, withExporter bool) map[string]listOrder {
		out := map[string]listOrder{
			name:                        {ports: []string{client}},
			HeadlessServiceName(name):   {ports: []string{client}},
			AdditionalServiceName(name): {ports: []string{client}},
		}
		if withExporter {
			out[name] = listOrder{ports: []string{client, exporterPortName}}
			out[MetricsServiceName(name)] = listOrder{ports: []string{exporterPortName}}
		}
		return out
	}
	fullRedisPod := func(sts string) listOrder {
		return listOrder{
			initContainers: []string{"init"},
			containers:     []string{sts, "redis-exporter", "log-shipper"},
			volumes:        []string{"extra", "tls-certs", "redis-config"},
			mounts: map[string][]string{
				"init":           {sts, "extra"},
				sts:              {sts, "tls-certs", "extra", "redis-config"},
				"redis-exporter": {"tls-certs"},
				"log-shipper":    {"extra"},
			},
		}
	}
	fullClusterRole := func(sts string) listOrder {
		return listOrder{
			initContainers: []string{"init", "acl-file"},
			containers:     []string{sts, "redis-exporter", "log-shipper"},
			volumes:        []string{"extra", "tls-certs", "redis-config", "acl"},
			mounts: map[string][]string{
				"init":           {sts, "extra", "node-conf"},
				"acl-file":       {"acl"},
				sts:              {"node-conf", sts, "tls-certs", "extra", "redis-config", "acl"},
				"redis-exporter": {"tls-certs"},
				"log-shipper":    {"extra"},
			},
		}
	}
	nodePortRole := func(sts string) listOrder {
		return listOrder{
			initContainers: []string{"address-gate"},
			containers:     []string{sts},
			volumes:        []string{"tls-certs", sts, "redis-config", "node-ports", "address-holders"},
			mounts: map[string][]string{sts: {sts, "tls-certs", "redis-config", "node-ports"},
				"address-gate": {sts, "address-holders"}},
		}
	}
	with := func(m map[string]listOrder, more map[string]listOrder) map[string]listOrder {
		for k, v := range more {
			m[k] = v
		}
		return m
	}

	cases := map[string]map[string]listOrder{
		"redis-minimal": with(redisServices("cache", redisPortName, false), map[string]listOrder{
			"cache/sts": {
				containers: []string{"cache"},
				volumes:    []string{"cache", "redis-config"}, // both ours: an emptyDir /data, the config
				mounts:     map[string][]string{"cache": {"cache", "redis-config"}},
			},
		}),
		"redis-full": with(redisServices("cache", redisPortName, true), map[string]listOrder{
			"cache/sts": fullRedisPod("cache"),
		}),
		"rediscluster-full": with(with(with(
			redisServices("shards-leader", redisPortName, true),
			redisServices("shards-follower", redisPortName, true)),
			map[string]listOrder{
				// The bus port, which their client Services lack, after the exporter's.
				"shards-leader":            {ports: []string{redisPortName, exporterPortName, busPortName}},
				"shards-follower":          {ports: []string{redisPortName, exporterPortName, busPortName}},
				"shards-leader-headless":   {ports: []string{redisPortName, busPortName}},
				"shards-follower-headless": {ports: []string{redisPortName, busPortName}},
				"shards-master":            {ports: []string{redisPortName}},
			}),
			map[string]listOrder{
				"shards-leader/sts":   fullClusterRole("shards-leader"),
				"shards-follower/sts": fullClusterRole("shards-follower"),
			}),
		"rediscluster-nodeport": with(with(
			redisServices("shards-leader", redisPortName, false),
			redisServices("shards-follower", redisPortName, false)),
			map[string]listOrder{
				"shards-master":       {ports: []string{redisPortName}},
				"shards-leader/sts":   nodePortRole("shards-leader"),
				"shards-follower/sts": nodePortRole("shards-follower"),
			}),
		"redisreplication-full": with(redisServices("repl", redisPortName, true), map[string]listOrder{
			"repl-master":  {ports: []string{redisPortName}},
			"repl-replica": {ports: []string{redisPortName}},
			"repl-s":       {ports: []string{sentinelPortName}},
			"repl-s-hl":    {ports: []string{sentinelPortName}},
			"repl/sts":     fullRedisPod("repl"),
			"repl-s/sts": {
				initContainers: []string{"sentinel-config"},
				containers:     []string{"repl-s"},
				volumes:        []string{"tls-certs", "repl-s", "sentinel-config", "sentinel-additional"},
				mounts: map[string][]string{
					"sentinel-config": {"repl-s", "sentinel-config", "sentinel-additional"},
					"repl-s":          {"tls-certs", "repl-s"},
				},
			},
		}),
		"redissentinel-full": with(redisServices("watch-sentinel", sentinelPortName, true), map[string]listOrder{
			"watch-sentinel/sts": {
				initContainers: []string{"sentinel-config", "init"},
				containers:     []string{"watch-sentinel", "redis-exporter", "log-shipper"},
				volumes:        []string{"extra", "tls-certs", "watch-sentinel", "sentinel-config", "sentinel-additional"},
				mounts: map[string][]string{
					"sentinel-config": {"watch-sentinel", "sentinel-config", "sentinel-additional"},
					"init":            {"watch-sentinel", "extra"},
					"watch-sentinel":  {"tls-certs", "extra", "watch-sentinel"},
					"redis-exporter":  {"tls-certs"},
					"log-shipper":     {"extra"},
				},
			},
		}),
	}
	for i := range 3 {
		for _, role := range []string{"leader", "follower"} {
			cases["rediscluster-nodeport"][fmt.Sprintf("shards-%s-%d", role, i)] = listOrder{ports: []string{redisPortName, busPortName}}
		}
	}

	built := map[string]*Objects{}
	for _, c := range allCases() {
		objs, err := c.build()
		if err != nil {
			t.Fatalf("%s: build: %v", c.name, err)
		}
		built[c.name] = objs
	}
	for name, want := range cases {
		t.Run(name, func(t *testing.T) {
			objs := built[name]
			if objs == nil {
				t.Fatalf("no case %s", name)
			}
			seen := 0
			for _, svc := range objs.Services {
				w, ok := want[svc.Name]
				if !ok {
					t.Errorf("Service %s has no expected order", svc.Name)
					continue
				}
				seen++
				wantEqual(t, "Service "+svc.Name+" ports", listNames(svc.Spec.Ports), w.ports)
			}
			for _, sts := range objs.StatefulSets {
				w, ok := want[sts.Name+"/sts"]
				if !ok {
					t.Errorf("StatefulSet %s has no expected order", sts.Name)
					continue
				}
				seen++
				spec := sts.Spec.Template.Spec
				what := "StatefulSet " + sts.Name
				wantEqual(t, what+" initContainers", listNames(spec.InitContainers), w.initContainers)
				wantEqual(t, what+" containers", listNames(spec.Containers), w.containers)
				wantEqual(t, what+" volumes", listNames(spec.Volumes), w.volumes)
				for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
					wantEqual(t, what+" container "+c.Name+" volumeMounts", listNames(c.VolumeMounts), w.mounts[c.Name])
					if c.Name == exporterContainerName {
						wantEqual(t, what+" exporter env", listNames(c.Env), exporterEnv)
					}
				}
			}
			if seen != len(want) {
				t.Errorf("%d objects checked, %d expected: an expected object was not built", seen, len(want))
			}
		})
	}
}

// listed are the element types of the lists pinned here.
type listed interface {
	corev1.ServicePort | corev1.Container | corev1.Volume | corev1.VolumeMount | corev1.EnvVar
}

// listNames is the names of a list's elements, in order; nil for an empty list, as an
// expectation left out is.
func listNames[T listed](list []T) []string {
	var out []string
	for i := range list {
		switch v := any(&list[i]).(type) {
		case *corev1.ServicePort:
			out = append(out, v.Name)
		case *corev1.Container:
			out = append(out, v.Name)
		case *corev1.Volume:
			out = append(out, v.Name)
		case *corev1.VolumeMount:
			out = append(out, v.Name)
		case *corev1.EnvVar:
			out = append(out, v.Name)
		}
	}
	return out
}
