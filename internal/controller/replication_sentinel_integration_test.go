//go:build integration

package controller

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

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

// A replication whose embedded sentinels an earlier version of the operator runs (StatefulSet
// rr-sentinel, group myMaster): the sentinels of this version (rr-s, group mymaster) are made
// beside them, the old ones are deleted only once every new one is ready and monitors the
// master, their other objects are then pruned; the master never moves and every key is kept.
func TestEmbeddedSentinelsOfAnEarlierVersionAreReplaced(t *testing.T) {
	t.Parallel()
	f := newReplicationFixture(t)
	f.waitReady("rr-0")
	f.writeAcknowledged("before", "migration")
	masterIP := f.kubelet.pod("rr-0").ip

	// The earlier version's state, laid out while the operator keeps its hands off.
	f.skipReconcile()
	legacy := "rr-sentinel"
	f.createLegacySentinels(legacy, masterIP)
	old := f.sentinelKubelet(legacy, builder.LegacyEmbeddedMasterGroupName)
	old.nextIP = 100 // apart from the new sentinels' addresses, which share the loopback port
	old.runStatefulSet(f.ctx, f.cr.Namespace, legacy)

	// The operator of this version takes over.
	if err := f.c.Get(f.ctx, client.ObjectKeyFromObject(f.cr), f.cr); err != nil {
		t.Fatal(err)
	}
	delete(f.cr.Annotations, SkipReconcileReplicationAnnotation)
	f.cr.Spec.Sentinel = &v1beta2.Sentinel{Size: 3, Image: "redis:7.0.15",
		SentinelConfig: v1beta2.SentinelConfig{DownAfterMilliseconds: "1000", FailoverTimeout: "5000", ParallelSyncs: "1"}}
	if err := f.c.Update(f.ctx, f.cr); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, "the migration reported while the new sentinels do not run", func() error {
		if err := f.c.Get(f.ctx, client.ObjectKeyFromObject(f.cr), f.cr); err != nil {
			return err
		}
		if p := meta.FindStatusCondition(f.cr.Status.Conditions, v1beta2.ConditionProgressing); p == nil || p.Reason != ReasonSentinelMigration {
			return fmt.Errorf("conditions %s", describeConditions(f.cr.Status.Conditions))
		}
		return nil
	})
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.cr.Namespace, Name: legacy}, &appsv1.StatefulSet{}); err != nil {
		t.Fatalf("the old sentinels went before the new ones ran: %v", err)
	}

	sentinels := f.sentinelKubelet("rr-s", builder.EmbeddedMasterGroupName)
	sentinels.nextIP = 150
	sentinels.runStatefulSet(f.ctx, f.cr.Namespace, "rr-s")
	waitUntil(t, 45*time.Second, "the old sentinels' StatefulSet deleted", func() error {
		err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.cr.Namespace, Name: legacy}, &appsv1.StatefulSet{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%w)", err)
	})
	for _, pod := range old.podNames() { // the garbage collector's part
		old.deletePod(f.ctx, f.cr.Namespace, pod, syscall.SIGTERM)
	}
	f.waitReady("rr-0")
	for _, obj := range []client.Object{&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: legacy}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: legacy + "-headless"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: legacy + "-config"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "rr-sentinel-auth"}}} {
		waitUntil(t, 30*time.Second, fmt.Sprintf("%T %s pruned", obj, obj.GetName()), func() error {
			err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.cr.Namespace, Name: obj.GetName()}, obj)
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("still there (%w)", err)
		})
	}

	if info := f.cr.Status.ConnectionInfo; info == nil || *info != (v1beta2.ConnectionInfo{
		Host: "rr-s-hl." + f.cr.Namespace + ".svc.cluster.local", Port: 26379, MasterName: "mymaster"}) {
		t.Errorf("connectionInfo %+v", info)
	}
	var events eventsv1.EventList
	if err := f.c.List(f.ctx, &events, client.InNamespace(f.cr.Namespace)); err != nil {
		t.Fatal(err)
	}
	replaced := false
	for _, e := range events.Items {
		replaced = replaced || (e.Reason == "SentinelsReplaced" && strings.Contains(e.Note, "rr-0") && strings.Contains(e.Note, legacy))
		if e.Reason == "Promote" {
			t.Errorf("the master moved during the migration: %s", e.Note)
		}
	}
	if !replaced {
		t.Error("no SentinelsReplaced event naming the master and the old sentinels")
	}
	// The new sentinels monitor the master with a majority quorum, and count only each other.
	for _, name := range sentinels.podNames() {
		c, err := f.op.pool.Client(sentinels.pod(name).endpoint(builder.DefaultSentinelPort, redis.Auth{}))
		if err != nil {
			t.Fatal(err)
		}
		waitUntil(t, 30*time.Second, name+" sees its two peers", func() error {
			state, err := c.SentinelMaster(f.ctx, builder.EmbeddedMasterGroupName)
			if err != nil {
				return err
			}
			if state["ip"] != masterIP || state["quorum"] != "2" || state["num-other-sentinels"] != "2" {
				return fmt.Errorf("SENTINEL MASTER mymaster = ip %s quorum %s others %s", state["ip"], state["quorum"], state["num-other-sentinels"])
			}
			return nil
		})
	}
	f.checkTopology("rr-0", map[string]string{"before": "migration"})
}

// skipReconcile sets the skip-reconcile annotation and waits until the operator says it keeps
// its hands off.
func (f *replicationFixture) skipReconcile() {
	f.t.Helper()
	if err := f.c.Get(f.ctx, client.ObjectKeyFromObject(f.cr), f.cr); err != nil {
		f.t.Fatal(err)
	}
	metav1.SetMetaDataAnnotation(&f.cr.ObjectMeta, SkipReconcileReplicationAnnotation, "true")
	if err := f.c.Update(f.ctx, f.cr); err != nil {
		f.t.Fatal(err)
	}
	waitUntil(f.t, 15*time.Second, "the operator to skip the replication", func() error {
		if err := f.c.Get(f.ctx, client.ObjectKeyFromObject(f.cr), f.cr); err != nil {
			return err
		}
		if p := meta.FindStatusCondition(f.cr.Status.Conditions, v1beta2.ConditionProgressing); p == nil || p.Reason != status.ReasonSkipReconcile {
			return fmt.Errorf("conditions %s", describeConditions(f.cr.Status.Conditions))
		}
		return nil
	})
}

// createLegacySentinels makes what an earlier version made for embedded sentinels: StatefulSet
// sts monitoring group myMaster at masterIP, its Services, ConfigMap and auth Secret, all
// controlled by the replication and labelled as its own.
func (f *replicationFixture) createLegacySentinels(sts, masterIP string) {
	f.t.Helper()
	ref := *metav1.NewControllerRef(f.cr, v1beta2.GroupVersion.WithKind("RedisReplication"))
	labels := map[string]string{builder.LabelApp: sts, builder.LabelSetupType: builder.SetupSentinel, builder.LabelRole: builder.RoleSentinel}
	meta := func(name string) metav1.ObjectMeta {
		all := map[string]string{builder.LabelInstance: f.cr.Name, builder.LabelManagedBy: builder.ManagedByValue}
		for k, v := range labels {
			all[k] = v
		}
		return metav1.ObjectMeta{Name: name, Namespace: f.cr.Namespace, Labels: all, OwnerReferences: []metav1.OwnerReference{ref}}
	}
	group := builder.LegacyEmbeddedMasterGroupName
	replicas := int32(3)
	port := []corev1.ServicePort{{Name: "sentinel-client", Port: 26379}}
	for _, obj := range []client.Object{
		&corev1.ConfigMap{ObjectMeta: meta(sts + "-config"), Data: map[string]string{builder.SentinelConfKey: fmt.Sprintf(
			"sentinel monitor %s %s 6379 2\nsentinel down-after-milliseconds %[1]s 1000\nsentinel failover-timeout %[1]s 5000\n", group, masterIP)}},
		&corev1.Secret{ObjectMeta: meta("rr-sentinel-auth"), Data: map[string][]byte{builder.SentinelAuthKey: []byte(
			"sentinel auth-pass " + group + " \"" + replicationPassword + "\"\n")}},
		&corev1.Service{ObjectMeta: meta(sts), Spec: corev1.ServiceSpec{Selector: labels, Ports: port}},
		&corev1.Service{ObjectMeta: meta(sts + "-headless"), Spec: corev1.ServiceSpec{Selector: labels, Ports: port, ClusterIP: corev1.ClusterIPNone}},
		&appsv1.StatefulSet{ObjectMeta: meta(sts), Spec: appsv1.StatefulSetSpec{
			Replicas: &replicas, ServiceName: sts + "-headless", Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: sts, Image: "redis:7.0.15"}}}},
		}},
	} {
		if err := f.c.Create(f.ctx, obj); err != nil {
			f.t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
		}
	}
}

// roleSample is one look at the replication: the pods labelled master and whether it is
// Degraded.
type roleSample struct {
	at       time.Time
	masters  []string
	degraded bool
}

// sampleRoles looks every 100 ms until stop is closed, then hands its samples to the channel
// it returns.
func (f *replicationFixture) sampleRoles(stop <-chan struct{}) <-chan []roleSample {
	out := make(chan []roleSample, 1)
	go func() {
		var samples []roleSample
		defer func() { out <- samples }()
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			var pods corev1.PodList
			if err := f.c.List(f.ctx, &pods, client.InNamespace(f.cr.Namespace),
				client.MatchingLabels{builder.LabelApp: f.cr.Name, builder.LabelRedisRole: builder.RedisRoleMaster}); err != nil {
				continue
			}
			var cr v1beta2.RedisReplication
			if err := f.c.Get(f.ctx, client.ObjectKeyFromObject(f.cr), &cr); err != nil {
				continue
			}
			s := roleSample{at: time.Now(), degraded: meta.IsStatusConditionTrue(cr.Status.Conditions, v1beta2.ConditionDegraded)}
			for i := range pods.Items {
				s.masters = append(s.masters, pods.Items[i].Name)
			}
			samples = append(samples, s)
		}
	}()
	return out
}

// labelOf is the redis-role label of a pod of the replication.
func (f *replicationFixture) labelOf(name string) (string, error) {
	var pod corev1.Pod
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.cr.Namespace, Name: name}, &pod); err != nil {
		return "", err
	}
	return pod.Labels[builder.LabelRedisRole], nil
}

// The master's redis-server freezes (SIGSTOP: a hung process, a partition) while its pod stays
// Running and Ready, and the sentinels fail over: the frozen pod loses the master label while
// it is still frozen, the promoted one gets it, no two pods are ever labelled master together,
// and the replication is Degraded all the while a pod does not answer. Thawed, the old master
// still says master until it is re-pointed: it is labelled slave at once and becomes a replica.
func TestSentinelFailoverMovesTheMasterLabelOffAFrozenMaster(t *testing.T) {
	t.Parallel()
	f := newReplicationFixture(t, func(f *replicationFixture) { f.operatorOptions = append(f.operatorOptions, withLiveness) })
	f.waitReady("rr-0")
	f.writeAcknowledged("before", "freeze")
	sn := f.createRedisSentinel()
	sentinels := f.sentinelKubelet("sn-sentinel", builder.DefaultMasterGroupName)
	sentinels.runStatefulSet(f.ctx, f.cr.Namespace, "sn-sentinel")
	masterIP := f.kubelet.pod("rr-0").ip
	waitUntil(t, 45*time.Second, "RedisSentinel Ready on rr-0", func() error {
		if err := f.c.Get(f.ctx, client.ObjectKeyFromObject(sn), sn); err != nil {
			return err
		}
		if ready := meta.FindStatusCondition(sn.Status.Conditions, v1beta2.ConditionReady); ready == nil ||
			ready.Status != metav1.ConditionTrue || !strings.Contains(ready.Message, masterIP) {
			return fmt.Errorf("conditions %s", describeConditions(sn.Status.Conditions))
		}
		return nil
	})
	f.waitReady("rr-0")
	f.checkTopology("rr-0", map[string]string{"before": "freeze"})

	stopSampling := make(chan struct{})
	samples := f.sampleRoles(stopSampling)
	frozen := f.kubelet.pod("rr-0")
	stopped := time.Now()
	thaw := frozen.freeze(t)

	var promoted string
	waitUntil(t, 20*time.Second, "the master label off the frozen rr-0 and on the promoted pod", func() error {
		old, err := f.labelOf("rr-0")
		if err != nil {
			return err
		}
		if old == builder.RedisRoleMaster {
			return fmt.Errorf("rr-0 still labelled master")
		}
		for _, name := range []string{"rr-1", "rr-2"} {
			label, err := f.labelOf(name)
			if err != nil {
				return err
			}
			if label != builder.RedisRoleMaster {
				continue
			}
			role, err := f.redis(name).Do(f.ctx, "role").Slice()
			if err != nil {
				return err
			}
			if len(role) == 0 || role[0] != "master" {
				return fmt.Errorf("%s labelled master, ROLE says %v", name, role)
			}
			promoted = name
			return nil
		}
		return fmt.Errorf("no replica labelled master yet")
	})
	t.Logf("the master label moved from the frozen rr-0 to %s %s after the freeze", promoted, time.Since(stopped).Round(100*time.Millisecond))
	time.Sleep(3 * time.Second) // the labels and Degraded must hold while rr-0 stays frozen
	if label, err := f.labelOf(promoted); err != nil || label != builder.RedisRoleMaster {
		t.Errorf("%s labelled %q while rr-0 is frozen (%v)", promoted, label, err)
	}
	thawedAt := time.Now()
	thaw()

	waitUntil(t, 30*time.Second, "the thawed rr-0 labelled slave and a replica of "+promoted, func() error {
		label, err := f.labelOf("rr-0")
		if err != nil {
			return err
		}
		info, err := f.redis("rr-0").Info(f.ctx, "replication").Result()
		if err != nil {
			return err
		}
		if label != builder.RedisRoleSlave || !strings.Contains(info, "role:slave") ||
			!strings.Contains(info, "master_host:"+f.kubelet.pod(promoted).ip+"\r") {
			return fmt.Errorf("rr-0 labelled %q: %s", label, info)
		}
		return nil
	})
	f.waitReady(promoted)
	f.checkTopology(promoted, map[string]string{"before": "freeze"})
	close(stopSampling)

	// What the samples saw: never two masters, and Degraded from soon after the freeze until
	// the thaw.
	var degradedSince time.Time
	for _, s := range <-samples {
		if len(s.masters) > 1 {
			t.Errorf("at %s after the freeze, %d pods labelled master: %v", s.at.Sub(stopped).Round(time.Millisecond), len(s.masters), s.masters)
		}
		if s.at.After(thawedAt) {
			continue
		}
		switch {
		case s.degraded && degradedSince.IsZero():
			degradedSince = s.at
		case !s.degraded && !degradedSince.IsZero():
			t.Errorf("at %s after the freeze, rr-0 still frozen, the replication is not Degraded", s.at.Sub(stopped).Round(time.Millisecond))
		}
	}
	switch {
	case degradedSince.IsZero():
		t.Error("never Degraded while rr-0 was frozen")
	case degradedSince.Sub(stopped) > 10*time.Second:
		t.Errorf("Degraded only %s after rr-0 froze", degradedSince.Sub(stopped).Round(100*time.Millisecond))
	default:
		t.Logf("Degraded %s after the freeze", degradedSince.Sub(stopped).Round(100*time.Millisecond))
	}
	// The sentinels promoted, not the operator.
	var events eventsv1.EventList
	if err := f.c.List(f.ctx, &events, client.InNamespace(f.cr.Namespace)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.Reason == "Promote" {
			t.Errorf("the operator promoted a replica although sentinels monitor the replication: %s", e.Note)
		}
	}
}

// An embedded sentinel that freezes (SIGSTOP) while its pod stays Running and Ready is on the
// replication's status within seconds, through the liveness watcher: Degraded naming the
// sentinel's pod, not Ready. Thawed, the replication is Ready again with its master unchanged.
func TestFrozenEmbeddedSentinelIsDegradedWithinSeconds(t *testing.T) {
	t.Parallel()
	f := newReplicationFixture(t, func(f *replicationFixture) {
		f.operatorOptions = append(f.operatorOptions, withLiveness)
		f.cr.Spec.Sentinel = &v1beta2.Sentinel{Size: 3, Image: "redis:7.0.15",
			SentinelConfig: v1beta2.SentinelConfig{DownAfterMilliseconds: "5000", FailoverTimeout: "10000", ParallelSyncs: "1"}}
	})
	sentinels := f.sentinelKubelet("rr-s", builder.EmbeddedMasterGroupName)
	sentinels.runStatefulSet(f.ctx, f.cr.Namespace, "rr-s")
	f.waitReady("rr-0")
	time.Sleep(time.Second) // just after a reconcile: only the watcher can tell of the freeze soon

	frozen := sentinels.pod("rr-s-1")
	stopped := time.Now()
	thaw := frozen.freeze(t)
	waitUntil(t, 15*time.Second, "Degraded naming the frozen sentinel rr-s-1", func() error {
		if err := f.c.Get(f.ctx, client.ObjectKeyFromObject(f.cr), f.cr); err != nil {
			return err
		}
		degraded := meta.FindStatusCondition(f.cr.Status.Conditions, v1beta2.ConditionDegraded)
		ready := meta.FindStatusCondition(f.cr.Status.Conditions, v1beta2.ConditionReady)
		if degraded == nil || degraded.Status != metav1.ConditionTrue || !strings.Contains(degraded.Message, "rr-s-1") ||
			ready == nil || ready.Status == metav1.ConditionTrue {
			return fmt.Errorf("conditions %s", describeConditions(f.cr.Status.Conditions))
		}
		return nil
	})
	took := time.Since(stopped)
	t.Logf("Degraded %s after the sentinel froze", took.Round(100*time.Millisecond))
	if took > 10*time.Second {
		t.Errorf("Degraded only %s after the sentinel froze", took.Round(100*time.Millisecond))
	}
	thaw()
	f.waitReady("rr-0")
}
