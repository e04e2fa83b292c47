//go:build integration

package controller

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/status"
)

const replicationPassword = "s3cret-replication"

type replicationFixture struct {
	t       *testing.T
	ctx     context.Context
	c       client.Client
	op      *operator
	kubelet *fakeKubelet
	cr      *v1beta2.RedisReplication
	// password is the one the test's clients use: the Secret's; username the user they log
	// in as ("" for the default user).
	password, username string
	// operatorOptions are those of the operator the fixture starts (options may add some).
	operatorOptions []operatorOption
}

// newReplicationFixture starts a replication of three; options change the fixture (its CR,
// its kubelet) before anything is created.
func newReplicationFixture(t *testing.T, options ...func(*replicationFixture)) *replicationFixture {
	t.Helper()
	size := int32(3)
	ns := testNamespace(t)
	f := &replicationFixture{t: t, ctx: context.Background(), c: newClient(t), password: replicationPassword}
	f.kubelet = newFakeKubelet(t, f.c, builder.DefaultRedisPort)
	f.kubelet.standalone, f.kubelet.password = true, replicationPassword
	if err := f.c.Create(f.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	if err := f.c.Create(f.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "redis-secret", Namespace: ns},
		Data: map[string][]byte{"password": []byte(replicationPassword)}}); err != nil {
		t.Fatal(err)
	}
	secretName, secretKey := "redis-secret", "password"
	f.cr = &v1beta2.RedisReplication{
		ObjectMeta: metav1.ObjectMeta{Name: "rr", Namespace: ns},
		Spec: v1beta2.RedisReplicationSpec{
			Size: &size,
			KubernetesConfig: v1beta2.KubernetesConfig{Image: "redis:7.0.15",
				ExistingPasswordSecret: &v1beta2.ExistingPasswordSecret{Name: &secretName, Key: &secretKey}},
		},
	}
	for _, o := range options {
		o(f)
	}
	f.op = startOperator(t, ns, f.operatorOptions...)
	if err := f.c.Create(f.ctx, f.cr); err != nil {
		t.Fatal(err)
	}
	f.kubelet.runStatefulSet(f.ctx, ns, "rr")
	return f
}

// waitReady waits for Ready with the given master and returns the status.
func (f *replicationFixture) waitReady(master string) {
	f.t.Helper()
	waitUntil(f.t, 30*time.Second, "RedisReplication Ready with master "+master, func() error {
		if err := f.c.Get(f.ctx, client.ObjectKeyFromObject(f.cr), f.cr); err != nil {
			return err
		}
		ready := meta.FindStatusCondition(f.cr.Status.Conditions, v1beta2.ConditionReady)
		if f.cr.Status.State == ReplicationStateReady && ready != nil && ready.Status == metav1.ConditionTrue &&
			ready.ObservedGeneration == f.cr.Generation && f.cr.Status.MasterNode == master &&
			f.cr.Status.ReadyReplicas == *f.cr.Spec.Size {
			return nil
		}
		return fmt.Errorf("state %q master %q ready %d, conditions %s", f.cr.Status.State, f.cr.Status.MasterNode,
			f.cr.Status.ReadyReplicas, describeConditions(f.cr.Status.Conditions))
	})
}

func (f *replicationFixture) redis(pod string) *goredis.Client {
	f.t.Helper()
	p := f.kubelet.pod(pod)
	if p == nil {
		f.t.Fatalf("no pod %s", pod)
	}
	rdb := goredis.NewClient(&goredis.Options{Addr: p.addr(builder.DefaultRedisPort), Username: f.username, Password: f.password})
	f.t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// checkTopology asserts from Redis itself: master is a master, every other pod its replica with
// the link up, each holding key=value; and the redis-role labels say the same.
func (f *replicationFixture) checkTopology(master string, keys map[string]string) {
	f.t.Helper()
	masterIP := f.kubelet.pod(master).ip
	for i := range *f.cr.Spec.Size {
		name := builder.PodName("rr", i)
		rdb := f.redis(name)
		waitUntil(f.t, 15*time.Second, name+" in its role with the data", func() error {
			info, err := rdb.Info(f.ctx, "replication").Result()
			if err != nil {
				return err
			}
			if name == master {
				if !strings.Contains(info, "role:master") {
					return fmt.Errorf("%s is not master: %s", name, info)
				}
			} else if !strings.Contains(info, "role:slave") || !strings.Contains(info, "master_host:"+masterIP+"\r") || !strings.Contains(info, "master_link_status:up") {
				return fmt.Errorf("%s is not a linked replica of %s (%s): %s", name, master, masterIP, info)
			}
			for k, v := range keys {
				got, err := rdb.Get(f.ctx, k).Result()
				if err != nil {
					return fmt.Errorf("GET %s on %s: %w", k, name, err)
				}
				if got != v {
					return fmt.Errorf("GET %s on %s = %q, want %q", k, name, got, v)
				}
			}
			return nil
		})
		var pod corev1.Pod
		waitUntil(f.t, 10*time.Second, name+" labelled with its role", func() error {
			if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.cr.Namespace, Name: name}, &pod); err != nil {
				return err
			}
			want := builder.RedisRoleSlave
			if name == master {
				want = builder.RedisRoleMaster
			}
			if got := pod.Labels[builder.LabelRedisRole]; got != want {
				return fmt.Errorf("redis-role=%q, want %q", got, want)
			}
			return nil
		})
	}
}

// writeAcknowledged writes key=value on the master the status names and waits until both
// replicas have it (WAIT 2): the writes a failover must keep.
func (f *replicationFixture) writeAcknowledged(key, value string) {
	f.t.Helper()
	master := f.cr.Status.MasterNode
	if err := f.redis(master).Set(f.ctx, key, value, 0).Err(); err != nil {
		f.t.Fatal(err)
	}
	if n, err := f.redis(master).Wait(f.ctx, 2, 5*time.Second).Result(); err != nil || n != 2 {
		f.t.Fatalf("WAIT 2 = %d, %v", n, err)
	}
}

// waitPromoted waits for the status to name a replica (rr-1 or rr-2) as master.
func (f *replicationFixture) waitPromoted() string {
	f.t.Helper()
	var promoted string
	waitUntil(f.t, 30*time.Second, "a replica promoted", func() error {
		if err := f.c.Get(f.ctx, client.ObjectKeyFromObject(f.cr), f.cr); err != nil {
			return err
		}
		if m := f.cr.Status.MasterNode; m == "rr-1" || m == "rr-2" {
			promoted = m
			return nil
		}
		return fmt.Errorf("master %q, conditions %s", f.cr.Status.MasterNode, describeConditions(f.cr.Status.Conditions))
	})
	return promoted
}

// waitMasterMovedOff waits for the status to name a master other than from, and returns it.
func (f *replicationFixture) waitMasterMovedOff(from string, timeout time.Duration) string {
	f.t.Helper()
	var promoted string
	waitUntil(f.t, timeout, "a master other than "+from, func() error {
		if err := f.c.Get(f.ctx, client.ObjectKeyFromObject(f.cr), f.cr); err != nil {
			return err
		}
		if promoted = f.cr.Status.MasterNode; promoted != from {
			return nil
		}
		return fmt.Errorf("conditions %s", describeConditions(f.cr.Status.Conditions))
	})
	return promoted
}

func (f *replicationFixture) statefulSet() *appsv1.StatefulSet {
	f.t.Helper()
	var sts appsv1.StatefulSet
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.cr.Namespace, Name: "rr"}, &sts); err != nil {
		f.t.Fatal(err)
	}
	return &sts
}

func TestReplicationBootstrapsAndStaysQuiet(t *testing.T) {
	t.Parallel()
	f := newReplicationFixture(t)
	f.waitReady("rr-0")
	wantSpecUnwritten(t, f.c, f.cr)
	for _, svc := range []string{"rr", "rr-headless", "rr-additional", "rr-master", "rr-replica"} {
		if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.cr.Namespace, Name: svc}, &corev1.Service{}); err != nil {
			t.Errorf("Service %s: %v", svc, err)
		}
	}
	if err := f.redis("rr-0").Set(f.ctx, "greeting", "hello", 0).Err(); err != nil {
		t.Fatal(err)
	}
	f.checkTopology("rr-0", map[string]string{"greeting": "hello"})
	if ci := f.cr.Status.ConnectionInfo; ci == nil || *ci != (v1beta2.ConnectionInfo{Host: "rr-master." + f.cr.Namespace + ".svc.cluster.local", Port: 6379}) {
		t.Errorf("connectionInfo = %+v, want the -master Service's name and port 6379", ci)
	}
	waitCompat(t, f.cr, map[string]float64{"redisreplication_has_master": 1, "redisreplication_connected_slaves_total": 2,
		"redisreplication_replicas_size_desired": 3, "redisreplication_replicas_size_current": 3,
		"redisreplication_master_role_changes_total": 0, "redisreplication_skipreconcile": 0})

	// A steady state writes nothing, to the API or to Redis.
	apiBefore, redisBefore := f.op.apiWrites.Load(), f.op.redisWrites.Load()
	if err := f.c.Get(f.ctx, client.ObjectKeyFromObject(f.cr), f.cr); err != nil {
		t.Fatal(err)
	}
	f.cr.Annotations = map[string]string{"touch": "1"} // a reconcile with nothing to do
	if err := f.c.Update(f.ctx, f.cr); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if d := f.op.apiWrites.Load() - apiBefore; d != 0 {
		t.Errorf("steady-state reconciles made %d API writes, want 0: %v", d, f.op.writesSince(apiBefore))
	}
	if d := f.op.redisWrites.Load() - redisBefore; d != 0 {
		t.Errorf("steady-state reconciles sent %d Redis commands that write, want 0", d)
	}
	// The bootstrap told as a timeline, and a Ready replication idle through a periodic health
	// check (every 30 s) tells nothing more.
	assertTimeline(t, f.c, f.cr.Namespace)
	assertIdleIsQuiet(t, f.c, f.cr.Namespace, healthCheckInterval+5*time.Second)
	assertTimeline(t, f.c, f.cr.Namespace)
}

// The master's process crashes and its pod comes back at a new IP: its replicas hold the
// stream up to the crash, so the most advanced one is promoted at once (no grace period: the
// old master answered, empty-handed or from its disk) and the old master rejoins as replica.
func TestReplicationRestartedMasterHandsOverToItsReplica(t *testing.T) {
	t.Parallel()
	f := newReplicationFixture(t)
	f.waitReady("rr-0")
	f.writeAcknowledged("before", "crash")
	bootstrap := f.op.promotions.Load() // the first master is promoted too: its pods start waiting
	f.kubelet.deletePod(f.ctx, f.cr.Namespace, "rr-0", syscall.SIGKILL)
	// Comes back empty, as a pod without a volume would.
	f.kubelet.startPod(f.ctx, f.statefulSet(), 0, "")
	promoted := f.waitPromoted()
	f.waitReady(promoted)
	f.checkTopology(promoted, map[string]string{"before": "crash"})
	// One promotion: a second one would drop the writes the first promoted master acknowledged.
	if n := f.op.promotions.Load() - bootstrap; n != 1 {
		t.Errorf("the operator sent REPLICAOF NO ONE %d times, want 1", n)
	}
}

// The master's process crashes and the kubelet restarts it in place, at the same address,
// with nothing on disk (a cache that keeps no data) and no pod event. Its replicas re-link to
// that address by themselves; the pod starts as a replica waiting for its master, which
// refuses to sync them, so they keep what they hold: the most advanced one is promoted and
// every acknowledged key is still there, on every pod.
func TestReplicationMasterRestartedInPlaceWipesNoReplica(t *testing.T) {
	t.Parallel()
	f := newReplicationFixture(t)
	f.waitReady("rr-0")
	f.writeAcknowledged("before", "restart")
	bootstrap := f.op.promotions.Load()
	f.kubelet.restartInPlace(f.ctx, f.cr.Namespace, "rr-0", true)
	// Nothing tells the operator of the restart: its periodic health check (30s) finds it.
	promoted := f.waitMasterMovedOff("rr-0", 90*time.Second)
	f.waitReady(promoted)
	f.checkTopology(promoted, map[string]string{"before": "restart"})
	if n := f.op.promotions.Load() - bootstrap; n != 1 {
		t.Errorf("the operator sent REPLICAOF NO ONE %d times after the bootstrap, want 1", n)
	}
}

// Every pod stops and comes back at once, each with its volume: no replica holds more than the
// disks, so the recorded master leads again and nothing is lost.
func TestReplicationAllPodsRestartTogether(t *testing.T) {
	t.Parallel()
	f := newReplicationFixture(t)
	f.waitReady("rr-0")
	f.writeAcknowledged("survives", "everything")
	dirs := map[int32]string{}
	for i := range int32(3) {
		dirs[i] = f.kubelet.deletePod(f.ctx, f.cr.Namespace, builder.PodName("rr", i), syscall.SIGTERM).dataDir
	}
	sts := f.statefulSet()
	for i := range int32(3) {
		f.kubelet.startPod(f.ctx, sts, int(i), dirs[i])
	}
	f.waitReady("rr-0")
	f.checkTopology("rr-0", map[string]string{"survives": "everything"})
}

// The master is gone for good: after the grace period the replica with the most data is
// promoted; writes go to it; when the old master returns with its data it rejoins as a replica.
func TestReplicationPromotesAReplicaWhenTheMasterStaysAway(t *testing.T) {
	t.Parallel()
	f := newReplicationFixture(t)
	f.waitReady("rr-0")
	if err := f.redis("rr-0").Set(f.ctx, "before", "failover", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// WAIT: both replicas acknowledged the write before the master dies.
	if n, err := f.redis("rr-0").Wait(f.ctx, 2, 5*time.Second).Result(); err != nil || n != 2 {
		t.Fatalf("WAIT 2 = %d, %v", n, err)
	}
	f.masterDiesAndRejoins(map[string]string{"before": "failover"})
}

// masterDiesAndRejoins kills the master rr-0: a replica is promoted and takes a write, the old
// master comes back with its data as its replica, and every pod holds keys and that write.
func (f *replicationFixture) masterDiesAndRejoins(keys map[string]string) {
	f.t.Helper()
	old := f.kubelet.deletePod(f.ctx, f.cr.Namespace, "rr-0", syscall.SIGKILL)
	promoted := f.waitPromoted()
	waitUntil(f.t, 15*time.Second, promoted+" accepts writes", func() error {
		return f.redis(promoted).Set(f.ctx, "after", "failover", 0).Err()
	})
	f.kubelet.startPod(f.ctx, f.statefulSet(), 0, old.dataDir)
	f.waitReady(promoted)
	want := maps.Clone(keys)
	want["after"] = "failover"
	f.checkTopology(promoted, want)
}

// The master freezes (as when cut off the network) while its pod stays ready, so no pod event
// marks its return: once a replica was promoted and the old master answers again as a second
// master, the operator still finds it and makes it a replica of the promoted one.
func TestReplicationDemotesAReturningMasterWithoutAPodEvent(t *testing.T) {
	t.Parallel()
	f := newReplicationFixture(t)
	f.waitReady("rr-0")
	f.writeAcknowledged("before", "freeze")
	frozen := f.kubelet.pod("rr-0")
	thaw := frozen.freeze(t)
	// Nothing tells the operator of the freeze: its periodic health check (30s) finds it.
	promoted := f.waitMasterMovedOff("rr-0", 90*time.Second)
	waitUntil(t, 30*time.Second, "the status to say rr-0 does not answer", func() error {
		if err := f.c.Get(f.ctx, client.ObjectKeyFromObject(f.cr), f.cr); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(f.cr.Status.Conditions, v1beta2.ConditionReady); c != nil && strings.Contains(c.Message, "2 answer") {
			return nil
		}
		return fmt.Errorf("conditions %s", describeConditions(f.cr.Status.Conditions))
	})
	thaw()
	f.waitReady(promoted)
	f.checkTopology(promoted, map[string]string{"before": "freeze"})
}

// Scaling in removes the highest ordinals: when the master is among them, the operator first
// hands its role to a replica that stays (FAILOVER TO, no write lost), then shrinks.
func TestReplicationScaleInHandsTheMasterRoleOver(t *testing.T) {
	t.Parallel()
	f := newReplicationFixture(t)
	f.waitReady("rr-0")
	// Make rr-2, the pod that scaling in removes, the master; the operator follows.
	rr2 := f.kubelet.pod("rr-2")
	// Ready counts a replica once it replicates; the master takes FAILOVER TO only once its
	// link to that replica is online, which can come a moment later.
	waitUntil(t, 15*time.Second, "rr-0 to take FAILOVER TO rr-2", func() error {
		return f.redis("rr-0").Do(f.ctx, "failover", "to", rr2.ip, builder.DefaultRedisPort).Err()
	})
	// FAILOVER TO returns before the roles swap (rr-2 first catches up): a reconcile before
	// the swap sees rr-0 master still, so the touch below waits for it.
	waitUntil(t, 15*time.Second, "rr-2 master after FAILOVER TO", func() error {
		role, err := f.redis("rr-2").Do(f.ctx, "ROLE").Slice()
		if err != nil {
			return err
		}
		if fmt.Sprint(role[0]) != "master" {
			return fmt.Errorf("rr-2 reports ROLE %v", role[0])
		}
		return nil
	})
	// A role change inside Redis raises no Kubernetes event: the operator would see it at its
	// next periodic check (30 s); touching the resource brings that check forward.
	if err := f.c.Get(f.ctx, client.ObjectKeyFromObject(f.cr), f.cr); err != nil {
		t.Fatal(err)
	}
	f.cr.Annotations = map[string]string{"touch": "after-failover"}
	if err := f.c.Update(f.ctx, f.cr); err != nil {
		t.Fatal(err)
	}
	f.waitReady("rr-2")
	if err := f.redis("rr-2").Set(f.ctx, "written", "before-scale-in", 0).Err(); err != nil {
		t.Fatal(err)
	}

	if err := f.c.Get(f.ctx, client.ObjectKeyFromObject(f.cr), f.cr); err != nil {
		t.Fatal(err)
	}
	two := int32(2)
	f.cr.Spec.Size = &two
	if err := f.c.Update(f.ctx, f.cr); err != nil {
		t.Fatal(err)
	}
	var handedTo string
	waitUntil(t, 30*time.Second, "the master role handed over and the StatefulSet shrunk", func() error {
		if err := f.c.Get(f.ctx, client.ObjectKeyFromObject(f.cr), f.cr); err != nil {
			return err
		}
		sts := f.statefulSet()
		if m := f.cr.Status.MasterNode; (m == "rr-0" || m == "rr-1") && *sts.Spec.Replicas == 2 {
			handedTo = m
			return nil
		}
		return fmt.Errorf("master %q, StatefulSet replicas %d, conditions %s", f.cr.Status.MasterNode, *sts.Spec.Replicas, describeConditions(f.cr.Status.Conditions))
	})
	// The StatefulSet controller removes rr-2.
	f.kubelet.deletePod(f.ctx, f.cr.Namespace, "rr-2", syscall.SIGTERM)
	f.waitReady(handedTo)
	f.checkTopology(handedTo, map[string]string{"written": "before-scale-in"})
	// rr-0 to rr-2 by hand, rr-2 to handedTo before the scale-in.
	waitCompat(t, f.cr, map[string]float64{"redisreplication_master_role_changes_total": 2, "redisreplication_has_master": 1,
		"redisreplication_connected_slaves_total": 1, "redisreplication_replicas_size_current": 2})
}

// Every replica gone: the master still answers, but the data has a single copy. Past the
// outage bound that is an outage (Degraded, Outage, naming the master; never Failed), said by
// one Warning event however many reconciles it lasts, and cleared once the replicas are back.
func TestReplicationWithoutALinkedReplicaIsAnOutage(t *testing.T) {
	t.Parallel()
	f := newReplicationFixture(t)
	f.waitReady("rr-0")
	f.writeAcknowledged("single", "copy")
	dirs := map[int]string{}
	for _, ordinal := range []int{1, 2} {
		dirs[ordinal] = f.kubelet.deletePod(f.ctx, f.cr.Namespace, builder.PodName("rr", int32(ordinal)), syscall.SIGKILL).dataDir
	}
	waitUntil(t, 30*time.Second, "the outage on the resource", func() error {
		if err := f.c.Get(f.ctx, client.ObjectKeyFromObject(f.cr), f.cr); err != nil {
			return err
		}
		d := meta.FindStatusCondition(f.cr.Status.Conditions, v1beta2.ConditionDegraded)
		if d != nil && d.Status == metav1.ConditionTrue && d.Reason == status.ReasonOutage && strings.Contains(d.Message, "rr-0") {
			return nil
		}
		return fmt.Errorf("state %q, conditions %s", f.cr.Status.State, describeConditions(f.cr.Status.Conditions))
	})
	if f.cr.Status.State == ReplicationStateFailed {
		t.Errorf("an outage that heals by itself reads Failed: %s", f.cr.Status.Reason)
	}
	time.Sleep(2 * time.Second) // reconciles go on during the outage; none may warn again
	sts := f.statefulSet()
	for ordinal, dir := range dirs {
		f.kubelet.startPod(f.ctx, sts, ordinal, dir)
	}
	f.waitReady("rr-0")
	f.checkTopology("rr-0", map[string]string{"single": "copy"})
	if n := warnings(t, f.c, f.cr.Namespace, status.ReasonOutage); n != 1 {
		t.Errorf("%d Outage Warning events, want 1 for the one outage", n)
	}
}

// warnings counts the Warning events of a reason in a namespace, each repetition included.
func warnings(t *testing.T, c client.Client, namespace, reason string) int {
	t.Helper()
	var events eventsv1.EventList
	if err := c.List(context.Background(), &events, client.InNamespace(namespace)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range events.Items {
		if e.Reason == reason && e.Type == corev1.EventTypeWarning {
			n++
			if e.Series != nil {
				n += int(e.Series.Count) - 1
			}
		}
	}
	return n
}

// A password Secret made with `echo pw | base64` ends in a newline that no client types: the
// operator reads the password without the whitespace around it, as the replaced operator does.
// The pods run on the requirepass and masterauth it renders (the auth file included as
// rendered), replicas sync with it, clients typing "pw" write and read keys, and the password
// file of the preStop hook holds it trimmed too.
func TestReplicationPasswordSecretWithATrailingNewline(t *testing.T) {
	t.Parallel()
	f := newReplicationFixture(t, func(f *replicationFixture) {
		var secret corev1.Secret
		if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.cr.Namespace, Name: "redis-secret"}, &secret); err != nil {
			t.Fatal(err)
		}
		secret.Data["password"] = []byte("pw\n")
		if err := f.c.Update(f.ctx, &secret); err != nil {
			t.Fatal(err)
		}
		f.password = "pw"
		f.kubelet.password, f.kubelet.authSecret = "", builder.AuthSecretName(f.cr.Name)
	})
	f.waitReady("rr-0")
	f.writeAcknowledged("trimmed", "yes") // WAIT 2: both replicas synced, with masterauth "pw"
	f.checkTopology("rr-0", map[string]string{"trimmed": "yes"})
	var auth corev1.Secret
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.cr.Namespace, Name: builder.AuthSecretName(f.cr.Name)}, &auth); err != nil {
		t.Fatal(err)
	}
	if got := string(auth.Data[builder.RedisPasswordKey]); got != "pw" {
		t.Errorf("the hook's password file holds %q, want \"pw\"", got)
	}
	untrimmed := goredis.NewClient(&goredis.Options{Addr: f.kubelet.pod("rr-0").addr(builder.DefaultRedisPort), Password: "pw\n"})
	defer func() { _ = untrimmed.Close() }()
	if err := untrimmed.Ping(f.ctx).Err(); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Errorf("the Secret's raw value logged in (%v): the server requires it untrimmed", err)
	}
}
