//go:build integration

package controller

import (
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/status"
)

// createRedisSentinel creates the RedisSentinel "sn" of 3 sentinels watching the fixture's
// replication "rr" (its password from the fixture's Secret), quick to fail over unless the
// options change it.
func (f *replicationFixture) createRedisSentinel(options ...func(*v1beta2.RedisSentinel)) *v1beta2.RedisSentinel {
	f.t.Helper()
	size := int32(3)
	sn := &v1beta2.RedisSentinel{
		ObjectMeta: metav1.ObjectMeta{Name: "sn", Namespace: f.cr.Namespace},
		Spec: v1beta2.RedisSentinelSpec{
			Size:             &size,
			KubernetesConfig: v1beta2.KubernetesConfig{Image: "redis:7.0.15"},
			RedisSentinelConfig: &v1beta2.RedisSentinelConfig{
				RedisReplicationName: "rr",
				RedisReplicationPassword: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "redis-secret"}, Key: "password"}},
				SentinelConfig: v1beta2.SentinelConfig{Quorum: "2", DownAfterMilliseconds: "1000", FailoverTimeout: "5000", ParallelSyncs: "1"},
			},
		},
	}
	for _, o := range options {
		o(sn)
	}
	if err := f.c.Create(f.ctx, sn); err != nil {
		f.t.Fatal(err)
	}
	return sn
}

// sentinelKubelet runs the pods of the sentinel StatefulSet stsName as real sentinels: each
// takes the monitoring lines the operator rendered into the ConfigMap (the master's address
// among them, if any) and adds what pods sharing the loopback interface need (their own address
// to bind and announce) and the password lines of the auth Secret the StatefulSet mounts, as
// it stands when the pod starts (for a StatefulSet that mounts none, the auth-pass of the
// master group it monitors).
func (f *replicationFixture) sentinelKubelet(stsName, group string) *fakeKubelet {
	k := newFakeKubelet(f.t, f.c, builder.DefaultSentinelPort)
	k.args = []string{"--sentinel"}
	k.confFor = func(p *fakePod) string {
		var cm corev1.ConfigMap
		if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.cr.Namespace, Name: builder.ConfigMapName(stsName)}, &cm); err != nil {
			f.t.Fatalf("sentinel ConfigMap: %v", err)
		}
		conf := fmt.Sprintf("bind %s\nport %d\ndir %s\nsentinel announce-ip %s\n", p.ip, builder.DefaultSentinelPort, p.dataDir, p.ip)
		monitors := false
		for _, line := range strings.Split(cm.Data[builder.SentinelConfKey], "\n") {
			if strings.HasPrefix(line, "sentinel ") {
				conf += line + "\n"
			}
			monitors = monitors || strings.HasPrefix(line, "sentinel monitor ")
		}
		if !monitors {
			return conf // an auth-pass for a group that is not monitored stops the sentinel
		}
		if auth, ok := f.sentinelAuthFile(stsName); ok {
			return conf + auth
		}
		return conf + fmt.Sprintf("sentinel auth-pass %s %s\n", group, replicationPassword)
	}
	return k
}

// sentinelAuthFile is the content of the auth Secret the sentinel StatefulSet stsName mounts;
// ok is false when it mounts none.
func (f *replicationFixture) sentinelAuthFile(stsName string) (string, bool) {
	var sts appsv1.StatefulSet
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.cr.Namespace, Name: stsName}, &sts); err != nil {
		f.t.Fatalf("sentinel StatefulSet: %v", err)
	}
	for _, v := range sts.Spec.Template.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, source := range v.Projected.Sources {
			if source.Secret == nil || !slices.ContainsFunc(source.Secret.Items, func(i corev1.KeyToPath) bool { return i.Key == builder.SentinelAuthKey }) {
				continue
			}
			var secret corev1.Secret
			if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.cr.Namespace, Name: source.Secret.Name}, &secret); err != nil {
				f.t.Fatalf("sentinel auth Secret: %v", err)
			}
			return string(secret.Data[builder.SentinelAuthKey]), true
		}
	}
	return "", false
}

// waitSentinelsReadyOn waits until the RedisSentinel sn (of 3 sentinels) is Ready, its three
// sentinels monitoring the master at masterIP.
func (f *replicationFixture) waitSentinelsReadyOn(sn *v1beta2.RedisSentinel, masterIP string) {
	f.t.Helper()
	waitUntil(f.t, 45*time.Second, "RedisSentinel Ready on "+masterIP, func() error {
		if err := f.c.Get(f.ctx, client.ObjectKeyFromObject(sn), sn); err != nil {
			return err
		}
		ready := meta.FindStatusCondition(sn.Status.Conditions, v1beta2.ConditionReady)
		if sn.Status.State == SentinelStateReady && ready != nil && ready.Status == metav1.ConditionTrue &&
			strings.Contains(ready.Message, masterIP) && sn.Status.ReadyReplicas == 3 {
			return nil
		}
		return fmt.Errorf("state %q, conditions %s", sn.Status.State, describeConditions(sn.Status.Conditions))
	})
}

// With a RedisSentinel monitoring it, a RedisReplication's failover is the sentinels' to make:
// the operator does not promote, follows the master they choose (status, labels, the returning
// old master made its replica) and the sentinels report Ready on the new master.
func TestSentinelsFailOverAndTheReplicationFollows(t *testing.T) {
	t.Parallel()
	f := newReplicationFixture(t)
	f.waitReady("rr-0")
	f.writeAcknowledged("before", "sentinel-failover")

	sn := f.createRedisSentinel()
	sentinels := f.sentinelKubelet("sn-sentinel", builder.DefaultMasterGroupName)
	sentinels.runStatefulSet(f.ctx, f.cr.Namespace, "sn-sentinel")
	f.waitSentinelsReadyOn(sn, f.kubelet.pod("rr-0").ip)
	wantSpecUnwritten(t, f.c, sn)

	promoted := f.sentinelsFailOver(sentinels.pod("sn-sentinel-0"), builder.DefaultMasterGroupName)
	f.waitSentinelsReadyOn(sn, f.kubelet.pod(promoted).ip)

	// A failover without any pod event (asked of the sentinels directly): the replication
	// follows within a few of its sentinel checks, well before its 30 s health check.
	sentinel := goredis.NewClient(&goredis.Options{Addr: sentinels.pod("sn-sentinel-1").addr(builder.DefaultSentinelPort)})
	defer func() { _ = sentinel.Close() }()
	// A sentinel refuses a new failover while it still counts the last one as in progress (it
	// lasts until every replica it knows is reconfigured or the failover timeout passes), or
	// before it has seen a replica it would promote: ask until it accepts.
	waitUntil(t, 30*time.Second, "the sentinels to accept SENTINEL FAILOVER", func() error {
		err := sentinel.Do(f.ctx, "sentinel", "failover", builder.DefaultMasterGroupName).Err()
		if err != nil && !strings.HasPrefix(err.Error(), "INPROG") && !strings.HasPrefix(err.Error(), "NOGOODSLAVE") {
			t.Fatal(err)
		}
		return err
	})
	waitUntil(t, time.Minute, "the replication to follow a failover that no pod event announced", func() error {
		if err := f.c.Get(f.ctx, client.ObjectKeyFromObject(f.cr), f.cr); err != nil {
			return err
		}
		if m := f.cr.Status.MasterNode; m != promoted && m != "" {
			return nil
		}
		return fmt.Errorf("master still %q", f.cr.Status.MasterNode)
	})
	f.waitReady(f.cr.Status.MasterNode)
	f.checkTopology(f.cr.Status.MasterNode, map[string]string{"before": "sentinel-failover", "after": "sentinel-failover"})
}

// Embedded sentinels (spec.sentinel), added to a running RedisReplication: they are created
// once it has a master, Ready waits for them to monitor it, and they fail it over.
func TestEmbeddedSentinelsFailOver(t *testing.T) {
	t.Parallel()
	f := newReplicationFixture(t)
	f.waitReady("rr-0")
	f.writeAcknowledged("before", "sentinel-failover")
	if err := f.c.Get(f.ctx, client.ObjectKeyFromObject(f.cr), f.cr); err != nil {
		t.Fatal(err)
	}
	f.cr.Spec.Sentinel = &v1beta2.Sentinel{Size: 3, Image: "redis:7.0.15",
		SentinelConfig: v1beta2.SentinelConfig{Quorum: "2", DownAfterMilliseconds: "1000", FailoverTimeout: "5000", ParallelSyncs: "1"}}
	if err := f.c.Update(f.ctx, f.cr); err != nil {
		t.Fatal(err)
	}
	sentinels := f.sentinelKubelet("rr-s", builder.EmbeddedMasterGroupName)
	sentinels.runStatefulSet(f.ctx, f.cr.Namespace, "rr-s")
	f.waitReady("rr-0")
	if ready := meta.FindStatusCondition(f.cr.Status.Conditions, v1beta2.ConditionReady); ready.ObservedGeneration != f.cr.Generation {
		t.Errorf("Ready describes generation %d, the spec with sentinels is %d", ready.ObservedGeneration, f.cr.Generation)
	}
	if info := f.cr.Status.ConnectionInfo; info == nil || *info != (v1beta2.ConnectionInfo{
		Host: "rr-s-hl." + f.cr.Namespace + ".svc.cluster.local", Port: 26379, MasterName: "mymaster"}) {
		t.Errorf("connectionInfo %+v, want the embedded sentinels' headless Service and group mymaster", info)
	}
	f.sentinelsFailOver(sentinels.pod("rr-s-0"), builder.EmbeddedMasterGroupName)
}

// sentinelsFailOver kills the master rr-0 for good, waits for the sentinels to promote a
// replica and for the operator to follow, brings rr-0 back (with its volume) as a replica, checks
// every key and that the operator promoted nobody, and returns the promoted pod.
func (f *replicationFixture) sentinelsFailOver(sentinel *fakePod, group string) string {
	t := f.t
	t.Helper()
	old := f.kubelet.deletePod(f.ctx, f.cr.Namespace, "rr-0", syscall.SIGKILL)
	promoted := f.waitPromoted()
	waitUntil(t, 45*time.Second, promoted+" accepts writes", func() error {
		return f.redis(promoted).Set(f.ctx, "after", "sentinel-failover", 0).Err()
	})
	f.kubelet.startPod(f.ctx, f.statefulSet(), 0, old.dataDir)
	f.waitReady(promoted)
	f.checkTopology(promoted, map[string]string{"before": "sentinel-failover", "after": "sentinel-failover"})

	// The sentinels promoted, not the operator (whose own grace period is 2 s in these tests).
	var events eventsv1.EventList
	if err := f.c.List(f.ctx, &events, client.InNamespace(f.cr.Namespace)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.Reason == "Promote" {
			t.Errorf("the operator promoted a replica although sentinels monitor the replication: %s", e.Note)
		}
	}
	// The sentinels' own record says they failed over: a failover starts a new config epoch.
	c, err := f.op.pool.Client(sentinel.endpoint(builder.DefaultSentinelPort, redis.Auth{}))
	if err != nil {
		t.Fatal(err)
	}
	// (A sentinel finishes the failover once it reconfigured every replica it knows or its
	// failover timeout passed: the dead old master is one it cannot reach.)
	waitUntil(t, time.Minute, "the sentinels' failover recorded", func() error {
		state, err := c.SentinelMaster(f.ctx, group)
		if err != nil {
			return err
		}
		if state["config-epoch"] == "0" || state["config-epoch"] == "" || state["ip"] != f.kubelet.pod(promoted).ip {
			return fmt.Errorf("SENTINEL MASTER = %v; want a config epoch above 0 and the promoted master", state)
		}
		return nil
	})
	return promoted
}

// What a RedisSentinel cannot act on is said in its conditions: a RedisReplication that does
// not exist (it waits for it), a password from anything but a Secret (the user must fix it), and
// the skip annotation (no object is created).
func TestSentinelReportsWhatItWaitsFor(t *testing.T) {
	t.Parallel()
	ns, _, c := operatorInNamespace(t)
	ctx := t.Context()
	size := int32(3)
	sentinel := func(name string, cfg v1beta2.RedisSentinelConfig, annotations map[string]string) *v1beta2.RedisSentinel {
		return &v1beta2.RedisSentinel{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: annotations},
			Spec: v1beta2.RedisSentinelSpec{Size: &size, KubernetesConfig: v1beta2.KubernetesConfig{Image: "redis:7.0.15"},
				RedisSentinelConfig: &cfg},
		}
	}
	cases := []struct {
		cr                      *v1beta2.RedisSentinel
		condition, reason, text string
		status                  metav1.ConditionStatus
	}{
		{sentinel("no-replication", v1beta2.RedisSentinelConfig{RedisReplicationName: "missing"}, nil),
			v1beta2.ConditionProgressing, status.ReasonMasterUnknown, "RedisReplication missing does not exist", metav1.ConditionTrue},
		{sentinel("configmap-password", v1beta2.RedisSentinelConfig{RedisReplicationName: "missing",
			RedisReplicationPassword: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Key: "password"}}}, nil),
			v1beta2.ConditionDegraded, status.ReasonInvalidSpec, "must be a secretKeyRef", metav1.ConditionTrue},
		{sentinel("hands-off", v1beta2.RedisSentinelConfig{RedisReplicationName: "missing"}, map[string]string{SkipReconcileSentinelAnnotation: "true"}),
			v1beta2.ConditionProgressing, status.ReasonSkipReconcile, SkipReconcileSentinelAnnotation, metav1.ConditionFalse},
	}
	for _, tc := range cases {
		if err := c.Create(ctx, tc.cr); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range cases {
		waitUntil(t, 15*time.Second, tc.cr.Name+" reports "+tc.reason, func() error {
			if err := c.Get(ctx, client.ObjectKeyFromObject(tc.cr), tc.cr); err != nil {
				return err
			}
			cond := meta.FindStatusCondition(tc.cr.Status.Conditions, tc.condition)
			if cond != nil && cond.Status == tc.status && cond.Reason == tc.reason && strings.Contains(cond.Message, tc.text) &&
				cond.ObservedGeneration == tc.cr.Generation {
				return nil
			}
			return fmt.Errorf("conditions %s", describeConditions(tc.cr.Status.Conditions))
		})
	}
	var sets appsv1.StatefulSetList
	if err := c.List(ctx, &sets, client.InNamespace(ns)); err != nil || len(sets.Items) != 0 {
		t.Errorf("StatefulSets = %d (%v), want none: sentinels wait for the replication they name", len(sets.Items), err)
	}
}

// A RedisSentinel without redisSentinelConfig (the reference admits it) runs its sentinels
// monitoring nothing and says so: not Ready, not progressing, not degraded, with what to set.
// Given a replication later, its pods are replaced (the StatefulSet controller's part, played
// here by the test) by sentinels monitoring the master, and it becomes Ready.
func TestSentinelWithoutConfigRunsIdleUntilToldWhatToMonitor(t *testing.T) {
	t.Parallel()
	f := newReplicationFixture(t)
	f.waitReady("rr-0")
	size := int32(3)
	sn := &v1beta2.RedisSentinel{
		ObjectMeta: metav1.ObjectMeta{Name: "idle", Namespace: f.cr.Namespace},
		Spec:       v1beta2.RedisSentinelSpec{Size: &size, KubernetesConfig: v1beta2.KubernetesConfig{Image: "redis:7.0.15"}},
	}
	if err := f.c.Create(f.ctx, sn); err != nil {
		t.Fatal(err)
	}
	sentinels := f.sentinelKubelet("idle-sentinel", builder.DefaultMasterGroupName)
	sentinels.runStatefulSet(f.ctx, f.cr.Namespace, "idle-sentinel")
	for _, svc := range []string{"idle-sentinel", "idle-sentinel-headless", "idle-sentinel-additional"} {
		if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.cr.Namespace, Name: svc}, &corev1.Service{}); err != nil {
			t.Errorf("Service %s: %v", svc, err)
		}
	}
	var cm corev1.ConfigMap
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.cr.Namespace, Name: "idle-sentinel-config"}, &cm); err != nil {
		t.Fatal(err)
	}
	if conf := cm.Data[builder.SentinelConfKey]; strings.Contains(conf, "sentinel monitor") {
		t.Errorf("sentinel.conf of sentinels with nothing to monitor monitors something:\n%s", conf)
	}

	waitUntil(t, 30*time.Second, "RedisSentinel reports "+ReasonNoMasterToMonitor, func() error {
		if err := f.c.Get(f.ctx, client.ObjectKeyFromObject(sn), sn); err != nil {
			return err
		}
		for typ, want := range map[string]metav1.ConditionStatus{v1beta2.ConditionReady: metav1.ConditionFalse,
			v1beta2.ConditionProgressing: metav1.ConditionFalse, v1beta2.ConditionDegraded: metav1.ConditionFalse} {
			cond := meta.FindStatusCondition(sn.Status.Conditions, typ)
			if cond == nil || cond.Status != want || cond.Reason != ReasonNoMasterToMonitor || cond.ObservedGeneration != sn.Generation ||
				!strings.Contains(cond.Message, "spec.redisSentinelConfig.redisReplicationName") {
				return fmt.Errorf("state %q, conditions %s", sn.Status.State, describeConditions(sn.Status.Conditions))
			}
		}
		if sn.Status.ReadyReplicas != 3 || sn.Status.State != SentinelStateInitializing {
			return fmt.Errorf("ready %d, state %q", sn.Status.ReadyReplicas, sn.Status.State)
		}
		return nil
	})
	// The sentinels really run, and monitor nothing.
	for _, name := range sentinels.podNames() {
		sentinel := goredis.NewClient(&goredis.Options{Addr: sentinels.pod(name).addr(builder.DefaultSentinelPort)})
		masters, err := sentinel.Do(f.ctx, "sentinel", "masters").Slice()
		_ = sentinel.Close()
		if err != nil || len(masters) != 0 {
			t.Errorf("%s: SENTINEL MASTERS = %v (%v), want none", name, masters, err)
		}
	}
	var events eventsv1.EventList
	if err := f.c.List(f.ctx, &events, client.InNamespace(f.cr.Namespace)); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(events.Items, func(e eventsv1.Event) bool {
		return e.Reason == ReasonNoMasterToMonitor && e.Regarding.Name == "idle"
	}) {
		t.Errorf("no %s event", ReasonNoMasterToMonitor)
	}

	// Told what to monitor: a new sentinel.conf (its hash in the pod template), new pods.
	idleTemplate := f.sentinelTemplateHash("idle-sentinel")
	sn.Spec.RedisSentinelConfig = &v1beta2.RedisSentinelConfig{
		RedisReplicationName: "rr",
		RedisReplicationPassword: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "redis-secret"}, Key: "password"}},
	}
	if err := f.c.Update(f.ctx, sn); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 15*time.Second, "the sentinel pod template to change", func() error {
		if h := f.sentinelTemplateHash("idle-sentinel"); h == idleTemplate {
			return fmt.Errorf("config hash still %s", h)
		}
		return nil
	})
	var sts appsv1.StatefulSet
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.cr.Namespace, Name: "idle-sentinel"}, &sts); err != nil {
		t.Fatal(err)
	}
	for i := int(size) - 1; i >= 0; i-- {
		sentinels.deletePod(f.ctx, f.cr.Namespace, fmt.Sprintf("idle-sentinel-%d", i), syscall.SIGTERM)
		sentinels.startPod(f.ctx, &sts, i, "")
	}
	master := f.kubelet.pod("rr-0").ip
	waitUntil(t, 45*time.Second, "RedisSentinel Ready on "+master, func() error {
		if err := f.c.Get(f.ctx, client.ObjectKeyFromObject(sn), sn); err != nil {
			return err
		}
		ready := meta.FindStatusCondition(sn.Status.Conditions, v1beta2.ConditionReady)
		if sn.Status.State == SentinelStateReady && ready != nil && ready.Status == metav1.ConditionTrue &&
			ready.ObservedGeneration == sn.Generation && strings.Contains(ready.Message, master) {
			return nil
		}
		return fmt.Errorf("state %q, conditions %s", sn.Status.State, describeConditions(sn.Status.Conditions))
	})
}

func (f *replicationFixture) sentinelTemplateHash(name string) string {
	f.t.Helper()
	var sts appsv1.StatefulSet
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.cr.Namespace, Name: name}, &sts); err != nil {
		f.t.Fatal(err)
	}
	return sts.Spec.Template.Annotations[builder.AnnotationConfigHash]
}

// Deletion does not depend on the spec: a RedisSentinel without redisSentinelConfig, its
// objects made, is deleted, its finalizer removed.
func TestSentinelWithoutConfigIsDeleted(t *testing.T) {
	t.Parallel()
	ns, _, c := operatorInNamespace(t)
	ctx := t.Context()
	size := int32(1)
	sn := &v1beta2.RedisSentinel{
		ObjectMeta: metav1.ObjectMeta{Name: "bare", Namespace: ns},
		Spec:       v1beta2.RedisSentinelSpec{Size: &size, KubernetesConfig: v1beta2.KubernetesConfig{Image: "redis:7.0.15"}},
	}
	if err := c.Create(ctx, sn); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 15*time.Second, "the sentinels' StatefulSet and the finalizer", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(sn), sn); err != nil {
			return err
		}
		if len(sn.Finalizers) == 0 {
			return fmt.Errorf("no finalizer yet")
		}
		return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "bare-sentinel"}, &appsv1.StatefulSet{})
	})
	if err := c.Delete(ctx, sn); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 15*time.Second, "RedisSentinel deleted", func() error {
		err := c.Get(ctx, client.ObjectKeyFromObject(sn), sn)
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (finalizers %v): %w", sn.Finalizers, err)
	})
}

// A RedisSentinel waiting for a RedisReplication that never comes: progress until the bound,
// then Degraded (Stuck) saying what it waits for and since when, not Failed (the replication may
// still be created), with one Warning event however many reconciles follow.
func TestSentinelWaitingPastItsBoundSaysItIsStuck(t *testing.T) {
	t.Parallel()
	ns := testNamespace(t)
	c := newClient(t)
	ctx := t.Context()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	startOperator(t, ns, stuckAfter(2*time.Second))
	size := int32(3)
	cr := &v1beta2.RedisSentinel{
		ObjectMeta: metav1.ObjectMeta{Name: "waits", Namespace: ns},
		Spec: v1beta2.RedisSentinelSpec{Size: &size, KubernetesConfig: v1beta2.KubernetesConfig{Image: "redis:7.0.15"},
			RedisSentinelConfig: &v1beta2.RedisSentinelConfig{RedisReplicationName: "never"}},
	}
	if err := c.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 15*time.Second, "the wait reported as stuck", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(cr), cr); err != nil {
			return err
		}
		d := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionDegraded)
		if d != nil && d.Status == metav1.ConditionTrue && d.Reason == ReasonStuck &&
			strings.Contains(d.Message, "RedisReplication never does not exist") && strings.Contains(d.Message, "unchanged since") {
			return nil
		}
		return fmt.Errorf("conditions %s", describeConditions(cr.Status.Conditions))
	})
	if cr.Status.State == "Failed" {
		t.Errorf("a wait that may still end reads Failed: %s", cr.Status.Reason)
	}
	time.Sleep(3 * time.Second) // more reconciles: the bound's requeue and any other
	if n := warnings(t, c, ns, ReasonStuck); n != 1 {
		t.Errorf("%d Stuck Warning events, want 1", n)
	}
}

// A single sentinel with the schema's default quorum ("2", the reference's, which every object
// it stored carries): admitted, run with the quorum it can reach (1), and said so on the
// resource (condition QuorumAdjusted, one Warning event) while it lasts; it still goes Ready.
// With enough sentinels the condition goes away and they run with the quorum asked for.
func TestQuorumAboveTheSentinelsIsLoweredAndSaidSo(t *testing.T) {
	t.Parallel()
	f := newReplicationFixture(t)
	f.waitReady("rr-0")
	size := int32(1)
	sn := &v1beta2.RedisSentinel{
		ObjectMeta: metav1.ObjectMeta{Name: "sn", Namespace: f.cr.Namespace},
		Spec: v1beta2.RedisSentinelSpec{Size: &size, KubernetesConfig: v1beta2.KubernetesConfig{Image: "redis:7.0.15"},
			RedisSentinelConfig: &v1beta2.RedisSentinelConfig{RedisReplicationName: "rr",
				RedisReplicationPassword: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "redis-secret"}, Key: "password"}}}},
	}
	if err := f.c.Create(f.ctx, sn); err != nil {
		t.Fatal(err)
	}
	if q := sn.Spec.RedisSentinelConfig.Quorum; q != "2" {
		t.Fatalf("quorum defaulted to %q, want the reference's \"2\"", q)
	}
	sentinels := f.sentinelKubelet("sn-sentinel", builder.DefaultMasterGroupName)
	sentinels.runStatefulSet(f.ctx, f.cr.Namespace, "sn-sentinel")
	masterIP := f.kubelet.pod("rr-0").ip
	waitUntil(t, 45*time.Second, "RedisSentinel Ready with its quorum lowered", func() error {
		if err := f.c.Get(f.ctx, client.ObjectKeyFromObject(sn), sn); err != nil {
			return err
		}
		ready := meta.FindStatusCondition(sn.Status.Conditions, v1beta2.ConditionReady)
		adjusted := meta.FindStatusCondition(sn.Status.Conditions, ConditionQuorumAdjusted)
		if ready != nil && ready.Status == metav1.ConditionTrue && adjusted != nil && adjusted.Status == metav1.ConditionTrue &&
			adjusted.Reason == ReasonQuorumAboveSize && adjusted.Message == "quorum 2 is more than the 1 sentinels could ever reach: they run with quorum 1" {
			return nil
		}
		return fmt.Errorf("conditions %s", describeConditions(sn.Status.Conditions))
	})
	sentinel := goredis.NewSentinelClient(&goredis.Options{Addr: sentinels.pod("sn-sentinel-0").addr(builder.DefaultSentinelPort)})
	defer func() { _ = sentinel.Close() }()
	if fields, err := sentinel.Master(f.ctx, builder.DefaultMasterGroupName).Result(); err != nil || fields["quorum"] != "1" || fields["ip"] != masterIP {
		t.Errorf("the sentinel monitors %v (%v), want %s with quorum 1", fields, err, masterIP)
	}
	time.Sleep(2 * time.Second) // more reconciles: still one event
	if n := warnings(t, f.c, f.cr.Namespace, ReasonQuorumAboveSize); n != 1 {
		t.Errorf("%d %s Warning events, want 1", n, ReasonQuorumAboveSize)
	}

	if err := f.c.Get(f.ctx, client.ObjectKeyFromObject(sn), sn); err != nil {
		t.Fatal(err)
	}
	size = 3
	sn.Spec.Size = &size
	if err := f.c.Update(f.ctx, sn); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, "QuorumAdjusted gone and the configured quorum 2", func() error {
		if err := f.c.Get(f.ctx, client.ObjectKeyFromObject(sn), sn); err != nil {
			return err
		}
		var cm corev1.ConfigMap
		if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.cr.Namespace, Name: "sn-sentinel-config"}, &cm); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(sn.Status.Conditions, ConditionQuorumAdjusted); c != nil {
			return fmt.Errorf("still %s", describeConditions(sn.Status.Conditions))
		}
		if !strings.Contains(cm.Data[builder.SentinelConfKey], " 6379 2\n") {
			return fmt.Errorf("sentinel.conf:\n%s", cm.Data[builder.SentinelConfKey])
		}
		return nil
	})
}
