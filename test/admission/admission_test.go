//go:build integration

// Package admission applies good and bad manifests to a real kube-apiserver (built from the
// Kubernetes Go modules into bin/) with our generated CRDs installed, and checks that bad
// input is refused with a message naming the field, and that every sample is accepted.
package admission

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"
)

var k8sClient client.Client

// apiWarnings keeps the warnings the API server sent to k8sClient (what kubectl would print).
var apiWarnings = &warningLog{}

type warningLog struct {
	mu    sync.Mutex
	texts []string
}

func (w *warningLog) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.texts = append(w.texts, text)
}

func (w *warningLog) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.texts)
}

// since returns the warnings received after the first n.
func (w *warningLog) since(n int) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.texts[n:])
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join("..", "..", "bin")
	}
	for _, binary := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(assets, binary)); err != nil {
			fmt.Fprintf(os.Stderr, "%s not found in %s: run `make test` (it builds the control plane into bin/)\n", binary, assets)
			return 1
		}
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets,
	}
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "start kube-apiserver: %v\n", err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stop kube-apiserver: %v\n", err)
		}
	}()
	cfg.WarningHandler = apiWarnings
	k8sClient, err = client.New(cfg, client.Options{})
	if err != nil {
		fmt.Fprintf(os.Stderr, "client: %v\n", err)
		return 1
	}
	if err := installPolicies(); err != nil {
		fmt.Fprintf(os.Stderr, "admission policies: %v\n", err)
		return 1
	}
	return m.Run()
}

func TestSamplesAreAccepted(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "config", "samples", "redis_v1beta2_*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, obj := range decodeAll(t, string(data)) {
			obj.SetNamespace("samples")
			ensureNamespace(t, "samples")
			if err := k8sClient.Create(context.Background(), obj); err != nil {
				t.Errorf("%s: %s %s was refused: %v", filepath.Base(file), obj.GetKind(), obj.GetName(), err)
				continue
			}
			kinds[obj.GetKind()]++
		}
	}
	for _, kind := range []string{"Redis", "RedisCluster", "RedisReplication", "RedisSentinel"} {
		if kinds[kind] < 2 {
			t.Errorf("want a minimal and a full sample of %s accepted, got %d", kind, kinds[kind])
		}
	}
}

// The backup samples (config/samples/backup): the kustomization applies the S3 store, and
// every manifest of the folder is namespace-agnostic and accepted, object by object (the
// store's Secret, Service and Deployment, the RedisBackup, the RedisBackupSchedule).
func TestBackupSamplesAreAccepted(t *testing.T) {
	dir := filepath.Join("..", "..", "config", "samples", "backup")
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var kustomization struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(data, &kustomization); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var manifests []string
	for _, f := range files {
		if filepath.Base(f) != "kustomization.yaml" {
			manifests = append(manifests, filepath.Base(f))
		}
	}
	if !slices.Equal(kustomization.Resources, []string{"s3-store.yaml"}) {
		t.Errorf("kustomization.yaml lists %q, want the store alone (the backups are applied once it is ready)", kustomization.Resources)
	}
	for _, r := range kustomization.Resources {
		if !slices.Contains(manifests, r) {
			t.Errorf("kustomization.yaml lists %s, which the folder does not have", r)
		}
	}
	ensureNamespace(t, "samples-backup")
	kinds := map[string]int{}
	for _, file := range manifests {
		data, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		for _, obj := range decodeAll(t, string(data)) {
			if obj.GetNamespace() != "" {
				t.Errorf("%s: %s %s names the namespace %s: the samples go where they are applied", file, obj.GetKind(),
					obj.GetName(), obj.GetNamespace())
			}
			obj.SetNamespace("samples-backup")
			if err := k8sClient.Create(context.Background(), obj); err != nil {
				t.Errorf("%s: %s %s was refused: %v", file, obj.GetKind(), obj.GetName(), err)
				continue
			}
			kinds[obj.GetKind()]++
		}
	}
	for _, kind := range []string{"Secret", "Service", "Deployment", "RedisBackup", "RedisBackupSchedule"} {
		if kinds[kind] != 1 {
			t.Errorf("want one %s among the backup samples accepted, got %d", kind, kinds[kind])
		}
	}
}

func TestDefaultsAreApplied(t *testing.T) {
	ensureNamespace(t, "defaults")
	obj := decode(t, `
apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisCluster
metadata: {name: defaults, namespace: defaults}
spec:
  clusterSize: 3
  kubernetesConfig:
    image: redis:7.0.15
    service:
      headless: {}
  redisExporter: {image: exporter}
`)
	if err := k8sClient.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]any{
		"spec.port":               int64(6379),
		"spec.clusterVersion":     "v7",
		"spec.redisExporter.port": int64(9121),
		"spec.kubernetesConfig.service.headless.enabled": true,
		"spec.kubernetesConfig.service.headless.type":    "ClusterIP",
	} {
		got, found, err := unstructured.NestedFieldNoCopy(obj.Object, strings.Split(path, ".")...)
		if err != nil || !found || got != want {
			t.Errorf("%s = %v (found %v, err %v), want default %v", path, got, found, err, want)
		}
	}
}

// TestSentinelsAreAcceptedWhereTheReferenceAcceptsThem covers specs the reference operator
// admits that earlier schemas of ours refused: a quorum larger than the number of sentinels
// (the reference's schema defaults it to "2" whatever the size, so every object it stored
// carries it; the operator runs the largest quorum the sentinels can reach and says so), and
// sentinels with nothing to monitor yet. Stored objects stay editable: a size lowered under
// the quorum is accepted too.
func TestSentinelsAreAcceptedWhereTheReferenceAcceptsThem(t *testing.T) {
	ensureNamespace(t, "accepted")
	const sentinel = `
apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisSentinel
metadata: {name: %s, namespace: accepted}
spec:
  kubernetesConfig: {image: redis:7.0.15}
`
	const embedded = `
apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisReplication
metadata: {name: %s, namespace: accepted}
spec:
  clusterSize: 3
  kubernetesConfig: {image: redis:7.0.15}
`
	sentinelQuorum := []string{"spec", "redisSentinelConfig", "quorum"}
	embeddedQuorum := []string{"spec", "sentinel", "quorum"}
	for _, tc := range []struct {
		name, manifest string
		quorumPath     []string // where the quorum is
		quorum         string   // what the API server stores there: the default "2" unless given
	}{
		{"one-sentinel", fmt.Sprintf(sentinel, "one-sentinel") + "  clusterSize: 1\n  redisSentinelConfig: {redisReplicationName: repl}\n", sentinelQuorum, "2"},
		{"one-sentinel-quorum-one", fmt.Sprintf(sentinel, "one-sentinel-quorum-one") + "  clusterSize: 1\n  redisSentinelConfig: {redisReplicationName: repl, quorum: \"1\"}\n", sentinelQuorum, "1"},
		{"quorum-above-size", fmt.Sprintf(sentinel, "quorum-above-size") + "  clusterSize: 3\n  redisSentinelConfig: {redisReplicationName: repl, quorum: \"4\"}\n", sentinelQuorum, "4"},
		{"no-config", fmt.Sprintf(sentinel, "no-config") + "  clusterSize: 3\n", nil, ""},
		{"no-config-one", fmt.Sprintf(sentinel, "no-config-one") + "  clusterSize: 1\n", nil, ""},
		// The reference's schema requires the key, as ours does, but not a name in it.
		{"empty-replication-name", fmt.Sprintf(sentinel, "empty-replication-name") + "  clusterSize: 3\n  redisSentinelConfig: {redisReplicationName: \"\"}\n", sentinelQuorum, "2"},
		{"embedded-one-sentinel", fmt.Sprintf(embedded, "embedded-one-sentinel") + "  sentinel: {image: redis:7.0.15, size: 1}\n", embeddedQuorum, "2"},
		{"embedded-quorum-above-size", fmt.Sprintf(embedded, "embedded-quorum-above-size") + "  sentinel: {image: redis:7.0.15, size: 1, quorum: \"3\"}\n", embeddedQuorum, "3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := decode(t, tc.manifest)
			if err := k8sClient.Create(context.Background(), obj); err != nil {
				t.Fatalf("refused: %v", err)
			}
			if tc.quorumPath == nil {
				return
			}
			if got, _, _ := unstructured.NestedFieldNoCopy(obj.Object, tc.quorumPath...); got != tc.quorum {
				t.Errorf("%s = %v, want %q", strings.Join(tc.quorumPath, "."), got, tc.quorum)
			}
		})
	}

	// A stored object whose size is lowered below its quorum is still editable.
	obj := decode(t, fmt.Sprintf(sentinel, "shrunk")+"  clusterSize: 3\n  redisSentinelConfig: {redisReplicationName: repl, quorum: \"3\"}\n")
	if err := k8sClient.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(obj.Object, int64(1), "spec", "clusterSize"); err != nil {
		t.Fatal(err)
	}
	if err := k8sClient.Update(context.Background(), obj); err != nil {
		t.Errorf("lowering clusterSize below the quorum was refused: %v", err)
	}
}

// TestAnyClusterVersionIsAccepted: the reference's schema takes any clusterVersion, and the
// operator follows the version the servers report, so no value is refused (v5 and v9 were).
func TestAnyClusterVersionIsAccepted(t *testing.T) {
	ensureNamespace(t, "versions")
	for _, version := range []string{"v5", "v6", "v7", "v8", "v9", "7.2"} {
		name := "v-" + strings.ReplaceAll(strings.TrimPrefix(version, "v"), ".", "-")
		obj := decode(t, fmt.Sprintf(`
apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisCluster
metadata: {name: %s, namespace: versions}
spec:
  clusterSize: 3
  clusterVersion: %q
  kubernetesConfig: {image: redis:7.0.15}
`, name, version))
		if err := k8sClient.Create(context.Background(), obj); err != nil {
			t.Errorf("clusterVersion %s refused: %v", version, err)
		}
	}
}

// badManifest is refused by the API server; when before is set, the object is first created
// from before and then updated to manifest (for transition rules).
type badManifest struct {
	name     string
	before   string
	manifest string
	wants    []string // substrings of the error: the field path and our message
}

const clusterHead = `
apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisCluster
metadata: {name: bad}
spec:
  kubernetesConfig: {image: redis:7.0.15}
`

const replicationHead = `
apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisReplication
metadata: {name: bad}
spec:
  kubernetesConfig: {image: redis:7.0.15}
`

const sentinelHead = `
apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisSentinel
metadata: {name: bad}
spec:
  kubernetesConfig: {image: redis:7.0.15}
  redisSentinelConfig: {redisReplicationName: repl}
`

const standaloneHead = `
apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: Redis
metadata: {name: bad}
spec:
  kubernetesConfig: {image: redis:7.0.15}
`

func storage(size string) string {
	return fmt.Sprintf(`
  storage:
    volumeClaimTemplate:
      spec:
        accessModes: [ReadWriteOnce]
        resources: {requests: {storage: %s}}
`, size)
}

func nodeConfStorage(size string) string {
	return fmt.Sprintf(`
  storage:
    nodeConfVolume: true
    nodeConfVolumeClaimTemplate:
      spec:
        accessModes: [ReadWriteOnce]
        resources: {requests: {storage: %s}}
`, size)
}

var badManifests = []badManifest{
	{
		name:     "cluster size zero",
		manifest: clusterHead + "  clusterSize: 0\n",
		wants:    []string{"spec.clusterSize", "clusterSize must be at least 1"},
	},
	{
		name:     "cluster without size",
		manifest: clusterHead,
		wants:    []string{"spec.clusterSize", "Required value"},
	},
	{
		name:     "replication size zero",
		manifest: replicationHead + "  clusterSize: 0\n",
		wants:    []string{"spec.clusterSize", "clusterSize must be at least 1"},
	},
	{
		name:     "sentinel size zero",
		manifest: sentinelHead + "  clusterSize: 0\n",
		wants:    []string{"spec.clusterSize", "should be greater than or equal to 1"},
	},
	{
		name:     "embedded sentinel size zero",
		manifest: replicationHead + "  clusterSize: 3\n  sentinel: {image: redis:7.0.15, size: 0, quorum: \"1\"}\n",
		wants:    []string{"spec.sentinel.size", "sentinel size must be at least 1"},
	},
	{
		name:     "negative leader replicas",
		manifest: clusterHead + "  clusterSize: 3\n  redisLeader: {replicas: -1}\n",
		wants:    []string{"spec.redisLeader.replicas", "replicas must not be negative"},
	},
	{
		name:     "negative follower replicas",
		manifest: clusterHead + "  clusterSize: 3\n  redisFollower: {replicas: -3}\n",
		wants:    []string{"spec.redisFollower.replicas", "replicas must not be negative"},
	},
	{
		name:     "followers not a multiple of leaders",
		manifest: clusterHead + "  clusterSize: 3\n  redisFollower: {replicas: 4}\n",
		wants:    []string{"spec.redisFollower.replicas", "must be zero or a multiple of the leader count"},
	},
	{
		name:     "followers not a multiple of explicit leader replicas",
		manifest: clusterHead + "  clusterSize: 3\n  redisLeader: {replicas: 2}\n  redisFollower: {replicas: 3}\n",
		wants:    []string{"spec.redisFollower.replicas", "must be zero or a multiple of the leader count"},
	},
	{
		name:     "both ACL sources",
		manifest: standaloneHead + "  acl: {secret: {secretName: acl}, persistentVolumeClaim: acl-pvc}\n",
		wants:    []string{"spec.acl", "either secret or persistentVolumeClaim, not both"},
	},
	{
		name:     "sentinel quorum not a number",
		manifest: sentinelHead + "  clusterSize: 3\n  redisSentinelConfig: {redisReplicationName: repl, quorum: two}\n",
		wants:    []string{"spec.redisSentinelConfig.quorum", "quorum must be a positive whole number"},
	},
	{
		name:     "cluster port leaves no room for the bus port",
		manifest: clusterHead + "  clusterSize: 3\n  port: 60000\n",
		wants:    []string{"spec.port", "port must be between 1 and 55535"},
	},
	{
		name:     "pdb with both bounds",
		manifest: replicationHead + "  clusterSize: 3\n  pdb: {enabled: true, minAvailable: 1, maxUnavailable: 1}\n",
		wants:    []string{"spec.pdb", "either minAvailable or maxUnavailable, not both"},
	},
	{
		name:     "password secret without key",
		manifest: strings.Replace(standaloneHead, "{image: redis:7.0.15}", "{image: redis:7.0.15, redisSecret: {name: only-name}}", 1),
		wants:    []string{"spec.kubernetesConfig.redisSecret", "redisSecret needs both name and key"},
	},
	{
		name:     "max memory percent out of range",
		manifest: standaloneHead + "  redisConfig: {maxMemoryPercentOfLimit: 0}\n",
		wants:    []string{"spec.redisConfig.maxMemoryPercentOfLimit", "should be greater than or equal to 1"},
	},
	{
		name:     "unknown service type",
		manifest: strings.Replace(standaloneHead, "{image: redis:7.0.15}", "{image: redis:7.0.15, service: {serviceType: External}}", 1),
		wants:    []string{"spec.kubernetesConfig.service.serviceType", "Unsupported value"},
	},
}

func TestBadManifestsAreRefusedWithTheirReason(t *testing.T) {
	for i, tc := range badManifests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			namespace := fmt.Sprintf("bad-%d", i)
			ensureNamespace(t, namespace)
			obj := decode(t, tc.manifest)
			obj.SetNamespace(namespace)
			var err error
			if tc.before != "" {
				existing := decode(t, tc.before)
				existing.SetNamespace(namespace)
				if err := k8sClient.Create(ctx, existing); err != nil {
					t.Fatalf("the valid starting object was refused: %v", err)
				}
				obj.SetResourceVersion(existing.GetResourceVersion())
				err = k8sClient.Update(ctx, obj)
			} else {
				err = k8sClient.Create(ctx, obj)
			}
			if err == nil {
				t.Fatalf("the API server accepted it; want an error containing %q", tc.wants)
			}
			for _, want := range tc.wants {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
	if len(badManifests) < 12 {
		t.Errorf("want at least 12 bad manifests, have %d", len(badManifests))
	}
}

// TestStorageShrinkIsAcceptedWithAWarning: a smaller storage request is stored (the operator
// ignores it for the volumes) and the API server warns, naming the field and both sizes.
func TestStorageShrinkIsAcceptedWithAWarning(t *testing.T) {
	for i, tc := range []struct {
		name, before, after, want string
	}{
		{"standalone", standaloneHead + storage("2Gi"), standaloneHead + storage("1Gi"),
			"spec.storage.volumeClaimTemplate.spec.resources.requests.storage does not shrink (from 2Gi to 1Gi)"},
		{"cluster", clusterHead + "  clusterSize: 3\n" + storage("10Gi"), clusterHead + "  clusterSize: 3\n" + storage("9000Mi"),
			"spec.storage.volumeClaimTemplate.spec.resources.requests.storage does not shrink (from 10Gi to 9000Mi)"},
		{"replication storage removed", replicationHead + "  clusterSize: 3\n" + storage("1Gi"), replicationHead + "  clusterSize: 3\n",
			"spec.storage.volumeClaimTemplate.spec.resources.requests.storage does not shrink (from 1Gi to nothing)"},
		{"cluster node-conf", clusterHead + "  clusterSize: 3\n" + nodeConfStorage("1Gi"), clusterHead + "  clusterSize: 3\n" + nodeConfStorage("512Mi"),
			"spec.storage.nodeConfVolumeClaimTemplate.spec.resources.requests.storage does not shrink (from 1Gi to 512Mi)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			namespace := fmt.Sprintf("shrink-%d", i)
			ensureNamespace(t, namespace)
			existing := decode(t, tc.before)
			existing.SetNamespace(namespace)
			if err := k8sClient.Create(ctx, existing); err != nil {
				t.Fatalf("the starting object was refused: %v", err)
			}
			smaller := decode(t, tc.after)
			smaller.SetNamespace(namespace)
			smaller.SetResourceVersion(existing.GetResourceVersion())
			seen := apiWarnings.count()
			if err := k8sClient.Update(ctx, smaller); err != nil {
				t.Fatalf("the smaller request was refused: %v", err)
			}
			warnings := apiWarnings.since(seen)
			if !slices.ContainsFunc(warnings, func(w string) bool { return strings.Contains(w, tc.want) }) {
				t.Errorf("warnings %q do not contain %q", warnings, tc.want)
			}
			stored := existing.DeepCopy()
			if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(existing), stored); err != nil {
				t.Fatal(err)
			}
			if stored.GetGeneration() != 2 {
				t.Errorf("generation = %d, want 2: the smaller request is stored", stored.GetGeneration())
			}
		})
	}
}

func TestStorageMayGrow(t *testing.T) {
	ctx := context.Background()
	ensureNamespace(t, "grow")
	obj := decode(t, standaloneHead+storage("1Gi"))
	obj.SetNamespace("grow")
	if err := k8sClient.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	bigger := decode(t, standaloneHead+storage("2Gi"))
	bigger.SetNamespace("grow")
	bigger.SetResourceVersion(obj.GetResourceVersion())
	if err := k8sClient.Update(ctx, bigger); err != nil {
		t.Fatalf("growing the storage request was refused: %v", err)
	}
}

func ensureNamespace(t *testing.T, name string) {
	t.Helper()
	if err := createNamespace(name); err != nil {
		t.Fatal(err)
	}
}

func createNamespace(name string) error {
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName(name)
	if err := k8sClient.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	return nil
}

func decode(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	objs := decodeAll(t, manifest)
	if len(objs) != 1 {
		t.Fatalf("want one object, got %d", len(objs))
	}
	return objs[0]
}

func decodeAll(t *testing.T, manifests string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := parseManifests(manifests)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// parseManifests splits a multi-document YAML stream into objects.
func parseManifests(manifests string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	reader := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(manifests)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read manifest: %w", err)
		}
		if strings.TrimSpace(string(doc)) == "" {
			continue
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &obj.Object); err != nil {
			return nil, fmt.Errorf("parse manifest: %w\n%s", err, doc)
		}
		out = append(out, obj)
	}
}

// installPolicies creates the admission policies of config/policy and waits until the API
// server enforces them (its policy informer picks them up asynchronously).
func installPolicies() error {
	ctx := context.Background()
	data, err := os.ReadFile(filepath.Join("..", "..", "config", "policy", "storage-never-shrinks.yaml"))
	if err != nil {
		return err
	}
	policies, err := parseManifests(string(data))
	if err != nil {
		return err
	}
	for _, obj := range policies {
		if err := k8sClient.Create(ctx, obj); err != nil {
			return fmt.Errorf("create %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	if err := createNamespace("policy-probe"); err != nil {
		return err
	}
	probes, err := parseManifests(standaloneHead + storage("2Gi"))
	if err != nil {
		return err
	}
	probe := probes[0]
	probe.SetNamespace("policy-probe")
	if err := k8sClient.Create(ctx, probe); err != nil {
		return fmt.Errorf("create policy probe: %w", err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		shrunks, err := parseManifests(standaloneHead + storage("1Gi"))
		if err != nil {
			return err
		}
		shrunk := shrunks[0]
		shrunk.SetNamespace("policy-probe")
		shrunk.SetResourceVersion(probe.GetResourceVersion())
		seen := apiWarnings.count()
		if err := k8sClient.Update(ctx, shrunk, client.DryRunAll); err != nil {
			return fmt.Errorf("a dry-run shrink was refused: %w", err)
		}
		if slices.ContainsFunc(apiWarnings.since(seen), func(w string) bool { return strings.Contains(w, "does not shrink") }) {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("the storage policy was not enforced within 60s")
}

// TestNamesAreLimitedToWhatTheObjectsAllow: per kind, the longest name whose derived objects
// Kubernetes accepts is admitted, and one character more is refused with the limit named.
func TestNamesAreLimitedToWhatTheObjectsAllow(t *testing.T) {
	ensureNamespace(t, "names")
	for _, tc := range []struct {
		kind    string
		spec    string
		longest int
	}{
		{"Redis", "kubernetesConfig: {image: redis:7.0.15}", 52},
		{"RedisCluster", "clusterSize: 3\n  kubernetesConfig: {image: redis:7.0.15}", 43},
		{"RedisReplication", "clusterSize: 3\n  kubernetesConfig: {image: redis:7.0.15}", 52},
		{"RedisReplication", "clusterSize: 3\n  kubernetesConfig: {image: redis:7.0.15}\n  sentinel: {size: 3, image: redis:7.0.15}", 43},
		{"RedisSentinel", "clusterSize: 3\n  kubernetesConfig: {image: redis:7.0.15}", 43},
	} {
		t.Run(fmt.Sprintf("%s-%d", tc.kind, tc.longest), func(t *testing.T) {
			manifest := func(name string) string {
				return fmt.Sprintf("apiVersion: redis.redis.opstreelabs.in/v1beta2\nkind: %s\nmetadata:\n  name: %s\n  namespace: names\nspec:\n  %s\n", tc.kind, name, tc.spec)
			}
			longest := "n" + strings.Repeat("a", tc.longest-1)
			obj := decode(t, manifest(longest))
			if err := k8sClient.Create(context.Background(), obj); err != nil {
				t.Fatalf("a name of %d characters was refused: %v", tc.longest, err)
			}
			t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), obj) })
			err := k8sClient.Create(context.Background(), decode(t, manifest(longest+"a")))
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("at most %d characters", tc.longest)) {
				t.Errorf("a name of %d characters: %v, want a refusal naming the limit %d", tc.longest+1, err, tc.longest)
			}
		})
	}
}
