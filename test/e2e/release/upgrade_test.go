//go:build release

package release

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/test/e2e/framework"
	"github.com/rediskube/redis-operator/test/sandbox/registry"
)

// pushRelease pushes a release's image layout and charts to the sandbox's registry, as `sandbox
// push --charts dist/charts dist/image` does, and returns the image as the nodes report it:
// <registry>/redis-operator@<the index's digest>.
func pushRelease(t *testing.T, dist, v string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	pushed, err := registry.PushLayout(ctx, filepath.Join(dist, "image"), sb.Inst.Registry, imageRepository)
	if err != nil {
		t.Fatal(err)
	}
	// The chart names the image by tag: the layout's one index must carry the version's.
	if want := sb.Inst.Registry + "/" + imageRepository + ":" + v + "@"; len(pushed) != 1 || !strings.HasPrefix(pushed[0], want) {
		t.Fatalf("pushed %q, want the release's one index tagged %s", pushed, v)
	}
	if _, err := registry.PushCharts(ctx, filepath.Join(dist, "charts"), sb.Inst.Registry, chartsPrefix); err != nil {
		t.Fatal(err)
	}
	ref, digest, _ := strings.Cut(pushed[0], "@")
	return strings.TrimSuffix(ref, ":"+v) + "@" + digest
}

// waitOperator waits until the chart's Deployment has rolled out to one Ready pod running
// image (as its container status reports the pulled digest) and returns that pod; the
// binary must report version.
func waitOperator(t *testing.T, image, v string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	sb.WaitFor(t, operatorNS, "the operator Deployment rolled out to "+image, 4*time.Minute, func(ctx context.Context) (bool, string, error) {
		d, err := sb.Kube.AppsV1().Deployments(operatorNS).Get(ctx, "redis-operator", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		seen := fmt.Sprintf("generation %d observed %d, %d replicas, %d updated, %d available", d.Generation, d.Status.ObservedGeneration,
			d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.AvailableReplicas)
		if d.Status.ObservedGeneration != d.Generation || d.Status.Replicas != 1 || d.Status.UpdatedReplicas != 1 || d.Status.AvailableReplicas != 1 {
			return false, seen, nil
		}
		list, err := sb.Kube.CoreV1().Pods(operatorNS).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=redis-operator,app.kubernetes.io/instance=" + helmRelease})
		if err != nil {
			return false, "", err
		}
		var live []corev1.Pod
		for _, p := range list.Items {
			seen += "; " + framework.DescribePod(&p)
			if p.DeletionTimestamp == nil {
				live = append(live, p)
			}
		}
		if len(live) != 1 || !framework.PodReady(&live[0]) || len(live[0].Status.ContainerStatuses) == 0 {
			return false, seen, nil
		}
		if id := live[0].Status.ContainerStatuses[0].ImageID; id != image {
			return false, seen + "; image ID " + id, nil
		}
		pod = &live[0]
		return true, seen, nil
	})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	stdout, stderr, err := sb.Exec(ctx, operatorNS, pod.Name, "manager", "/redis-operator", "--version")
	if err != nil || !strings.Contains(stdout, " "+v+" ") {
		t.Fatalf("redis-operator --version in %s: %q %q %v, want %s", pod.Name, stdout, stderr, err, v)
	}
	return pod
}

// statusObject is one of the operator's kinds, with its Ready condition.
type statusObject interface {
	client.Object
	GetCommonStatus() *v1beta2.CommonStatus
}

// workload is a resource of the test, made from a sample of config/samples.
type workload struct {
	kind, name, sample string
	new                func() statusObject
}

var workloads = []workload{
	{"Redis", "redis-standalone", "redis_v1beta2_redis_minimal.yaml", func() statusObject { return &v1beta2.Redis{} }},
	{"RedisReplication", "redis-replication", "redis_v1beta2_redisreplication_minimal.yaml", func() statusObject { return &v1beta2.RedisReplication{} }},
	{"RedisCluster", "redis-cluster", "redis_v1beta2_rediscluster_minimal.yaml", func() statusObject { return &v1beta2.RedisCluster{} }},
}

func (w workload) get(ctx context.Context, ns string) (statusObject, error) {
	obj := w.new()
	err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: w.name}, obj)
	return obj, err
}

// ready: the Ready condition is True and describes the resource's current generation.
func (w workload) ready(ctx context.Context, ns string) (bool, string, error) {
	obj, err := w.get(ctx, ns)
	if err != nil {
		return false, "", err
	}
	c := meta.FindStatusCondition(obj.GetCommonStatus().Conditions, v1beta2.ConditionReady)
	if c == nil {
		return false, w.kind + " " + w.name + ": no Ready condition", nil
	}
	seen := fmt.Sprintf("%s %s: Ready=%s %s: %s (generation %d, condition's %d)", w.kind, w.name, c.Status, c.Reason, c.Message, obj.GetGeneration(), c.ObservedGeneration)
	return c.Status == metav1.ConditionTrue && c.ObservedGeneration == obj.GetGeneration(), seen, nil
}

// snapshot is what must not change across the operator's upgrade: each Redis pod (its UID and
// its containers' restarts) and each StatefulSet (its generation and pod template).
type snapshot struct {
	pods map[string]podState
	sets map[string]appsv1.StatefulSet
}

type podState struct {
	uid      types.UID
	restarts string
}

func (p podState) String() string { return fmt.Sprintf("uid %s, restarts %s", p.uid, p.restarts) }

func podStateOf(p *corev1.Pod) podState {
	var restarts []string
	for _, c := range p.Status.ContainerStatuses {
		restarts = append(restarts, fmt.Sprintf("%s=%d", c.Name, c.RestartCount))
	}
	return podState{uid: p.UID, restarts: strings.Join(restarts, ",")}
}

func takeSnapshot(ctx context.Context, ns string) (snapshot, error) {
	s := snapshot{pods: map[string]podState{}, sets: map[string]appsv1.StatefulSet{}}
	pods, err := sb.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return s, err
	}
	for i := range pods.Items {
		if pods.Items[i].DeletionTimestamp == nil {
			s.pods[pods.Items[i].Name] = podStateOf(&pods.Items[i])
		}
	}
	sets, err := sb.Kube.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return s, err
	}
	for _, st := range sets.Items {
		s.sets[st.Name] = st
	}
	return s, nil
}

// changes lists how now differs from s: a pod replaced, gone, new or restarted, a StatefulSet
// whose pod template changed (with what changed in it).
func (s snapshot) changes(now snapshot) []string {
	var out []string
	for name, before := range s.pods {
		after, ok := now.pods[name]
		switch {
		case !ok:
			out = append(out, "pod "+name+" is gone (was "+before.String()+")")
		case after != before:
			out = append(out, "pod "+name+" restarted: "+before.String()+", now "+after.String())
		}
	}
	for name := range now.pods {
		if _, ok := s.pods[name]; !ok {
			out = append(out, "pod "+name+" is new")
		}
	}
	for name, before := range s.sets {
		after, ok := now.sets[name]
		if !ok {
			out = append(out, "StatefulSet "+name+" is gone")
			continue
		}
		diff := templateDiff(before.Spec.Template, after.Spec.Template)
		switch {
		case len(diff) > 0:
			out = append(out, fmt.Sprintf("StatefulSet %s (generation %d, then %d): its pod template changed: %s",
				name, before.Generation, after.Generation, strings.Join(diff, "; ")))
		case after.Generation != before.Generation:
			out = append(out, fmt.Sprintf("StatefulSet %s went from generation %d to %d, its pod template unchanged: the operator rewrote another part of its spec",
				name, before.Generation, after.Generation))
		}
	}
	return out
}

// watchUpgrade polls, until stop is called, every workload's Ready condition and the pods and
// StatefulSets of ns against before, and returns each change it saw, once, with when.
func watchUpgrade(ns string, before snapshot) (stop func() []string) {
	ctx, cancel := context.WithCancel(context.Background())
	var seen []string
	known := map[string]bool{}
	note := func(msg string) {
		if !known[msg] && len(seen) < 100 {
			known[msg] = true
			seen = append(seen, time.Now().Format("15:04:05.000")+" "+msg)
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			for _, w := range workloads {
				ok, st, err := w.ready(ctx, ns)
				switch {
				case err != nil && ctx.Err() == nil:
					note(w.kind + " " + w.name + ": " + err.Error())
				case err == nil && !ok:
					note("not Ready: " + st)
				}
			}
			if now, err := takeSnapshot(ctx, ns); err == nil {
				for _, c := range before.changes(now) {
					note(c)
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
	})
	return func() []string {
		cancel()
		wg.Wait()
		return seen
	}
}

// waitReconciledBy waits until the operator in pod has reconciled every workload since it
// started: its metrics, which a new process only has for resources it reconciled, report each
// Ready.
func waitReconciledBy(t *testing.T, ns string, pod *corev1.Pod) {
	t.Helper()
	token := sb.MetricsToken(t)
	sb.WaitFor(t, ns, "the operator of "+pod.Name+" to reconcile every workload", 3*time.Minute, func(ctx context.Context) (bool, string, error) {
		body, err := framework.OperatorMetrics(ctx, pod.Status.PodIP, token)
		if err != nil {
			return false, err.Error(), nil
		}
		for _, w := range workloads {
			want := fmt.Sprintf(`redis_operator_resource_ready{kind=%q,name=%q,namespace=%q} 1`, w.kind, w.name, ns)
			if !strings.Contains(body, want) {
				return false, "no " + want, nil
			}
		}
		return true, "", nil
	})
}

// data is what the test writes before the upgrade and reads after it: a key on the standalone
// server, one on the replication's master (read back on every replica too) and keys spread
// over the cluster's slots.
type data struct {
	t  *testing.T
	ns string
}

const (
	dataKey     = "written-before-the-upgrade"
	clusterKeys = 50
)

func (d data) podByName(ctx context.Context, name string) *corev1.Pod {
	d.t.Helper()
	p, err := sb.Kube.CoreV1().Pods(d.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		d.t.Fatal(err)
	}
	return p
}

func (d data) replicationPods(ctx context.Context) (master *corev1.Pod, replicas []*corev1.Pod) {
	d.t.Helper()
	var cr v1beta2.RedisReplication
	if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: d.ns, Name: "redis-replication"}, &cr); err != nil {
		d.t.Fatal(err)
	}
	if cr.Status.MasterNode == "" {
		d.t.Fatal("the RedisReplication's status names no master")
	}
	for i := range 3 {
		p := d.podByName(ctx, fmt.Sprintf("redis-replication-%d", i))
		if p.Name == cr.Status.MasterNode {
			master = p
		} else {
			replicas = append(replicas, p)
		}
	}
	if master == nil {
		d.t.Fatalf("master %s is none of the replication's pods", cr.Status.MasterNode)
	}
	return master, replicas
}

func (d data) cluster(ctx context.Context) *goredis.ClusterClient {
	d.t.Helper()
	pods, err := sb.Kube.CoreV1().Pods(d.ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=redis-cluster"})
	if err != nil {
		d.t.Fatal(err)
	}
	var addrs []string
	for _, p := range pods.Items {
		addrs = append(addrs, p.Status.PodIP+":6379")
	}
	cc := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: addrs, MaxRedirects: 8, DialTimeout: 2 * time.Second})
	d.t.Cleanup(func() { _ = cc.Close() })
	return cc
}

func (d data) write(ctx context.Context) {
	d.t.Helper()
	if err := sb.Redis(d.t, d.podByName(ctx, "redis-standalone-0")).Set(ctx, dataKey, "standalone", 0).Err(); err != nil {
		d.t.Fatalf("SET on the standalone server: %v", err)
	}
	master, replicas := d.replicationPods(ctx)
	m := sb.Redis(d.t, master)
	if err := m.Set(ctx, dataKey, "replication", 0).Err(); err != nil {
		d.t.Fatalf("SET on the replication's master %s: %v", master.Name, err)
	}
	if n, err := m.Do(ctx, "WAIT", len(replicas), 5000).Int(); err != nil || n != len(replicas) {
		d.t.Fatalf("WAIT on %s: %d replicas acknowledged, %v; want %d", master.Name, n, err, len(replicas))
	}
	cc := d.cluster(ctx)
	for i := range clusterKeys {
		if err := cc.Set(ctx, fmt.Sprintf("%s-%d", dataKey, i), i, 0).Err(); err != nil {
			d.t.Fatalf("SET %s-%d on the cluster: %v", dataKey, i, err)
		}
	}
}

func (d data) read(ctx context.Context) {
	d.t.Helper()
	if v, err := sb.Redis(d.t, d.podByName(ctx, "redis-standalone-0")).Get(ctx, dataKey).Result(); err != nil || v != "standalone" {
		d.t.Errorf("GET %s on the standalone server = %q, %v; want standalone", dataKey, v, err)
	}
	master, replicas := d.replicationPods(ctx)
	for _, p := range append([]*corev1.Pod{master}, replicas...) {
		if v, err := sb.Redis(d.t, p).Get(ctx, dataKey).Result(); err != nil || v != "replication" {
			d.t.Errorf("GET %s on replication pod %s = %q, %v; want replication", dataKey, p.Name, v, err)
		}
	}
	cc := d.cluster(ctx)
	for i := range clusterKeys {
		if v, err := cc.Get(ctx, fmt.Sprintf("%s-%d", dataKey, i)).Int(); err != nil || v != i {
			d.t.Errorf("GET %s-%d on the cluster = %d, %v", dataKey, i, v, err)
		}
	}
}

// uninstall removes what the test installed, for the package's other tests: the workloads
// first, while the operator runs to remove their finalizers, then the chart, then what Helm
// leaves (the CRDs of crds/ and the namespace --create-namespace made).
func uninstall(t *testing.T, workloadNS string) {
	t.Helper()
	if workloadNS != "" {
		// sb.Namespace's cleanup, which ran first, deleted the namespace.
		err := sb.Poll("namespace "+workloadNS+" deleted", 3*time.Minute, func(ctx context.Context) (bool, string, error) {
			_, err := sb.Kube.CoreV1().Namespaces().Get(ctx, workloadNS, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, "", nil
			}
			return false, "still there", err
		})
		if err != nil {
			t.Error(err)
		}
	}
	if out, err := sb.Helm("uninstall", helmRelease, "--namespace", operatorNS, "--wait", "--timeout", "3m"); err != nil {
		t.Errorf("helm uninstall: %v\n%s", err, out)
	}
	var leftovers []*unstructured.Unstructured
	for _, plural := range []string{"redis", "redisclusters", "redisreplications", "redissentinels"} {
		crd := &unstructured.Unstructured{}
		crd.SetAPIVersion("apiextensions.k8s.io/v1")
		crd.SetKind("CustomResourceDefinition")
		crd.SetName(plural + ".redis.redis.opstreelabs.in")
		leftovers = append(leftovers, crd)
	}
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName(operatorNS)
	deleteAndWait(t, "the CRDs and namespace helm uninstall leaves", append([]*unstructured.Unstructured{ns}, leftovers...))
}

// Users install the operator from the chart a release pushes to an OCI registry, and upgrade
// it to the next release the same way: the upgrade replaces the operator's pod with the new
// release's image and nothing else, since the operator writes no version of its own into the
// workloads' pod templates. Every resource stays Ready throughout, no Redis pod restarts, and
// the data written before is there after.
func TestHelmInstallFromOCIThenUpgrade(t *testing.T) {
	from, to := buildRelease(t, version), buildRelease(t, nextVersion)
	addr := sb.Inst.Registry
	fromImage := pushRelease(t, from, version)

	// Registered before the workloads' namespace, so that it runs after that namespace's own
	// cleanup (which dumps it if the test failed, then deletes it).
	var workloadNS string
	t.Cleanup(func() { uninstall(t, workloadNS) })
	sb.MustHelm(t, helmInstallArgs(addr, version)...)
	waitOperator(t, fromImage, version)

	ns := sb.Namespace(t, "upgrade")
	workloadNS = ns
	for _, w := range workloads {
		raw, err := os.ReadFile(filepath.Join(sb.Repo(), "config", "samples", w.sample))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(raw), "\n  name: "+w.name+"\n") {
			t.Fatalf("config/samples/%s does not name its %s %s: the test reads it by that name", w.sample, w.kind, w.name)
		}
		sb.Apply(t, ns, string(raw))
	}
	for _, w := range workloads {
		sb.WaitFor(t, ns, w.kind+" "+w.name+" Ready", 5*time.Minute, func(ctx context.Context) (bool, string, error) { return w.ready(ctx, ns) })
	}
	ctx := t.Context()
	d := data{t: t, ns: ns}
	d.write(ctx)
	before, err := takeSnapshot(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	if len(before.pods) != 1+3+6 || len(before.sets) != 4 {
		t.Fatalf("%d pods and %d StatefulSets, want 10 (1 standalone, 3 replication, 6 cluster) and 4", len(before.pods), len(before.sets))
	}

	toImage := pushRelease(t, to, nextVersion)
	if toImage == fromImage {
		t.Fatalf("both releases' images are %s: the version must make them differ", toImage)
	}
	stop := watchUpgrade(ns, before)
	sb.MustHelm(t, helmUpgradeArgs(addr, nextVersion)...)
	pod := waitOperator(t, toImage, nextVersion)
	waitReconciledBy(t, ns, pod)
	// A restart the new operator decided on shows within a few reconciles: watch a while
	// longer.
	time.Sleep(30 * time.Second)
	seen := stop()

	if len(seen) > 0 {
		t.Errorf("during the upgrade to %s:\n%s", nextVersion, strings.Join(seen, "\n"))
	}
	after, err := takeSnapshot(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	if changes := before.changes(after); len(changes) > 0 {
		t.Errorf("upgrading the operator alone changed the workloads; the operator's version must not reach pod templates, "+
			"and a template the new release renders differently restarts every Redis pod of every user at the upgrade:\n%s",
			strings.Join(changes, "\n"))
	}
	for _, w := range workloads {
		if ok, st, err := w.ready(ctx, ns); err != nil || !ok {
			t.Errorf("after the upgrade: %s %v", st, err)
		}
	}
	d.read(ctx)
	if out := sb.MustHelm(t, "history", helmRelease, "--namespace", operatorNS, "--max", "1", "--output", "yaml"); !strings.Contains(out, "app_version: "+nextVersion) ||
		!strings.Contains(out, "status: deployed") {
		t.Errorf("helm history after the upgrade:\n%s", out)
	}
}
