//go:build integration

package helm

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// theirValues holds the values.yaml of every released version of the replaced operator's
// charts, by chart: users keep files made from any of them.
const theirValues = "testdata/their-values"

// TestTheirValuesFilesRender: each of their values files installs with our chart of the same
// name.
func TestTheirValuesFilesRender(t *testing.T) {
	n := 0
	for _, c := range charts {
		files, err := filepath.Glob(filepath.Join(theirValues, c, "*.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if len(files) == 0 {
			t.Errorf("no values files in %s/%s", theirValues, c)
		}
		for _, f := range files {
			n++
			if out, err := helm(t, "template", "r", chartPath(c), "--namespace", "ns", "-f", f); err != nil {
				t.Errorf("%s with %s: %v\n%s", c, f, err, out)
			}
		}
	}
	t.Logf("%d values files rendered", n)
}

// rendered is one object of helm template's output.
type rendered map[string]any

// renderObjects runs helm template and returns its objects by "Kind/name".
func renderObjects(t *testing.T, chart string, args ...string) map[string]rendered {
	t.Helper()
	out, err := helm(t, append([]string{"template", "r", chartPath(chart), "--namespace", "ns"}, args...)...)
	if err != nil {
		t.Fatalf("helm template %s %v: %v\n%s", chart, args, err, out)
	}
	objs := map[string]rendered{}
	for _, doc := range strings.Split(out, "\n---") {
		var obj rendered
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
		if obj == nil {
			continue
		}
		meta, _ := obj["metadata"].(map[string]any)
		objs[fmt.Sprintf("%v/%v", obj["kind"], meta["name"])] = obj
	}
	return objs
}

// field is the value at a dotted path (numbers index lists), printed; "<none>" when absent.
func (o rendered) field(path string) string {
	var v any = map[string]any(o)
	for _, k := range strings.Split(path, ".") {
		switch cur := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = cur[k]; !ok {
				return "<none>"
			}
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i >= len(cur) {
				return "<none>"
			}
			v = cur[i]
		default:
			return "<none>"
		}
	}
	return fmt.Sprint(v)
}

// TestTheirValuesAreHonoured: for a few of their files, and for keys their templates read
// beyond their values.yaml, the rendered objects carry the values as their charts wrote them.
func TestTheirValuesAreHonoured(t *testing.T) {
	for _, c := range []struct {
		chart, file string
		set         []string                     // "string:" before a --set-string
		want        map[string]map[string]string // object -> path -> value
	}{
		{"redis-cluster", "0.10.0", nil, map[string]map[string]string{"RedisCluster/r": {
			"spec.kubernetesConfig.image": "quay.io/opstree/redis:v6.2.5", "spec.redisLeader.replicas": "3",
			"spec.redisFollower.replicas": "0", "spec.redisExporter.image": "quay.io/opstree/redis-exporter:1.0",
			"spec.storage.volumeClaimTemplate.spec.resources.requests.storage": "1Gi",
		}}},
		// The first cluster charts' top-level keys: both roles, and the pods' security context.
		{"redis-cluster", "0.11.1", []string{"nodeSelector.disk=ssd", "securityContext.runAsUser=7"}, map[string]map[string]string{"RedisCluster/r": {
			"spec.redisLeader.nodeSelector.disk": "ssd", "spec.redisFollower.nodeSelector.disk": "ssd",
			"spec.redisLeader.pdb.enabled": "true", "spec.redisFollower.pdb.minAvailable": "1",
			"spec.podSecurityContext.runAsUser": "7",
		}}},
		{"redis-cluster", "0.17.1", []string{"externalService.enabled=true", "externalService.annotations.lb=internal",
			"acl.persistentVolumeClaim=acl-users", "sidecars.name=probe", "sidecars.image=busybox"}, map[string]map[string]string{
			"Service/r-leader-external-service": {"spec.selector.app": "r-leader", "spec.selector.role": "leader",
				"spec.selector.redis_setup_type": "cluster", "spec.ports.0.name": "client", "spec.ports.0.targetPort": "6379",
				"metadata.annotations.lb": "internal"},
			"Service/r-follower-external-service": {"spec.selector.app": "r-follower", "spec.selector.role": "follower"},
			"RedisCluster/r": {"spec.acl.persistentVolumeClaim": "acl-users", "spec.sidecars.0.name": "probe",
				"spec.sidecars.0.resources.limits.cpu": "100m", "spec.sidecars.0.env": "<none>",
			},
		}},
		{"redis", "0.16.9", []string{"redisStandalone.name=cache", "externalService.enabled=true", "externalService.nodePort=30079",
			"externalService.annotations.a=b"}, map[string]map[string]string{
			"Redis/cache": {"spec.kubernetesConfig.image": "quay.io/opstree/redis:v7.0.15", "spec.podSecurityContext.runAsUser": "1000",
				"spec.sidecars": "<none>"},
			"Service/cache-external-service": {"spec.type": "NodePort", "spec.ports.0.nodePort": "30079", "spec.ports.0.port": "6379",
				"spec.selector.role": "standalone", "metadata.annotations.a": "b"},
		}},
		{"redis-replication", "0.17.0", []string{"pdb.enabled=true", "pdb.minAvailable=null", "pdb.maxUnavailable=0",
			"acl.persistentVolumeClaim=acl-users", "sentinel.enabled=true", "sentinel.additionalSentinelConfig=sentinel-extra"}, map[string]map[string]string{
			"RedisReplication/r": {"spec.clusterSize": "3", "spec.pdb.maxUnavailable": "0", "spec.pdb.minAvailable": "<none>",
				"spec.acl.persistentVolumeClaim": "acl-users", "spec.sentinel.additionalSentinelConfig": "sentinel-extra"},
		}},
		// Their sentinel chart writes every timing, with its defaults where the values are empty.
		{"redis-sentinel", "0.16.12", []string{"string:redisSentinelConfig.quorum=3"}, map[string]map[string]string{"RedisSentinel/r": {
			"spec.redisSentinelConfig.redisReplicationName": "redis-replication", "spec.redisSentinelConfig.masterGroupName": "myMaster",
			"spec.redisSentinelConfig.redisPort": "6379", "spec.redisSentinelConfig.quorum": "3",
			"spec.redisSentinelConfig.parallelSyncs": "1", "spec.redisSentinelConfig.failoverTimeout": "180000",
			"spec.redisSentinelConfig.downAfterMilliseconds": "30000", "spec.redisSentinelConfig.resolveHostnames": "no",
			"spec.redisSentinelConfig.announceHostnames": "no", "spec.acl": "<none>", "spec.storage": "<none>",
		}}},
		{"redis-operator", "0.26.1", []string{"manager.config.kubeClientQPS=25", "redisOperator.webhook=true"}, map[string]map[string]string{"Deployment/redis-operator": {
			"spec.template.spec.containers.0.args.6": "--kube-client-qps=25", "spec.template.spec.containers.0.args.7": "--kube-client-timeout=60s",
			"spec.template.spec.containers.0.args.5": "--max-concurrent-reconciles=3",
		}}},
		{"redis-operator", "0.15.9", []string{"redisOperator.watch_namespace=apps", "redisOperator.pprof.enabled=true"}, map[string]map[string]string{"Deployment/redis-operator": {
			"spec.template.spec.containers.0.env.1.name": "WATCH_NAMESPACE", "spec.template.spec.containers.0.env.1.value": "apps",
			"spec.template.spec.containers.0.args.8": "--pprof-bind-address=:6060",
		}}},
		// cert-manager issues the webhook's certificate into certificate.secretName, which the operator serves.
		{"redis-operator", "0.26.1", []string{"certmanager.enabled=true", "certificate.secretName=hook-tls"}, map[string]map[string]string{
			"Certificate/serving-cert": {"spec.secretName": "hook-tls", "spec.issuerRef.name": "redis-operator-issuer",
				"spec.dnsNames.0": "redis-operator-webhook.ns.svc", "spec.dnsNames.1": "redis-operator-webhook.ns.svc.cluster.local"},
			"Issuer/redis-operator-issuer": {"spec.selfSigned": "map[]"},
			"Deployment/redis-operator":    {"spec.template.spec.containers.0.args.10": "--webhook-cert-secret=hook-tls"},
		}},
	} {
		t.Run(c.chart+"-"+c.file, func(t *testing.T) {
			args := []string{"-f", filepath.Join(theirValues, c.chart, c.file+".yaml")}
			for _, s := range c.set {
				if v, ok := strings.CutPrefix(s, "string:"); ok {
					args = append(args, "--set-string", v)
				} else {
					args = append(args, "--set", s)
				}
			}
			objs := renderObjects(t, c.chart, args...)
			for name, fields := range c.want {
				obj, ok := objs[name]
				if !ok {
					t.Errorf("no %s rendered", name)
					continue
				}
				for path, want := range fields {
					if got := obj.field(path); got != want {
						t.Errorf("%s %s = %s, want %s", name, path, got, want)
					}
				}
			}
		})
	}
}

// TestTheirLabels: what the resource charts create carries their charts' labels, the
// resource's name as app.kubernetes.io/name and instance.
func TestTheirLabels(t *testing.T) {
	objs := renderObjects(t, "redis-replication", "--set", "redisReplication.name=cache", "--set", "externalService.enabled=true", "--set", "externalConfig.enabled=true")
	for _, name := range []string{"RedisReplication/cache", "Service/cache-external-service", "ConfigMap/cache-ext-config"} {
		labels, _ := objs[name]["metadata"].(map[string]any)["labels"].(map[string]any)
		for k, want := range map[string]string{"app.kubernetes.io/name": "cache", "app.kubernetes.io/instance": "cache",
			"app.kubernetes.io/component": "middleware", "app.kubernetes.io/managed-by": "Helm", "helm.sh/chart": "redis-replication-0.1.0"} {
			if got := fmt.Sprint(labels[k]); got != want {
				t.Errorf("%s label %s = %s, want %s", name, k, got, want)
			}
		}
		if labels["app.kubernetes.io/version"] == nil {
			t.Errorf("%s has no app.kubernetes.io/version label", name)
		}
	}
}

// TestTheirValuesRefused: what cannot be honoured fails helm template with the key and what
// to do, never the operator's start.
func TestTheirValuesRefused(t *testing.T) {
	for _, c := range []struct {
		chart string
		set   []string
		want  string
	}{
		{"redis-operator", []string{"redisOperator.extraArgs={--enable-webhooks=true}"}, `no flag "--enable-webhooks=true"; its flags are --claim-store-image`},
		{"redis-operator", []string{"redisOperator.extraArgs={--zap-log-level}"}, "--zap-log-level needs a value"},
		{"redis-operator", []string{"redisOperator.extraArgs={--leader-elect,later}"}, `"later" is no flag`},
		{"redis-operator", []string{"certmanager.enabled=true", "issuer.type=acme"}, "issuer.type=acme"},
		{"redis", []string{"acl.secret.secretName=users", "acl.persistentVolumeClaim=users"}, "acl: set acl.secret.secretName or acl.persistentVolumeClaim, not both"},
		{"redis-replication", []string{"pdb.enabled=true", "pdb.maxUnavailable=1"}, "pdb: set minAvailable or maxUnavailable, not both"},
		{"redis-cluster", []string{"externalService.enabled=true", "externalService.nodePort=30079"}, "externalService.nodePort"},
	} {
		args := []string{"template", "r", chartPath(c.chart)}
		for _, s := range c.set {
			args = append(args, "--set", s)
		}
		out, err := helm(t, args...)
		if err == nil || !strings.Contains(out, c.want) {
			t.Errorf("%s %v: %v, want an error with %q:\n%s", c.chart, c.set, err, c.want, out)
		}
	}
	// Every flag the operator takes passes.
	flags, err := os.ReadFile(filepath.Join(repo(t), "charts", "redis-operator", "files", "flags.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var extra []string
	for _, line := range strings.Split(string(flags), "\n") {
		name, kind, _ := strings.Cut(line, " ")
		if name == "" || strings.HasPrefix(name, "#") {
			continue
		}
		if kind == "bool" {
			extra = append(extra, "--"+name)
		} else {
			extra = append(extra, "--"+name, "v")
		}
	}
	if out, err := helm(t, "template", "r", chartPath("redis-operator"), "--set", "redisOperator.extraArgs={"+strings.Join(extra, ",")+"}"); err != nil {
		t.Errorf("the operator's own flags refused: %v\n%s", err, out)
	}
}
