package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
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
)

const migratingReplication = `
apiVersion: v1
kind: Secret
metadata: {name: redis-secret}
stringData: {password: migrate-me}
---
apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisReplication
metadata: {name: watched}
spec:
  clusterSize: 3
  kubernetesConfig:
    image: redis:7.0.15
    redisSecret: {name: redis-secret, key: password}
  sentinel:
    size: 3
    image: redis:7.0.15
    downAfterMilliseconds: "2000"
    failoverTimeout: "10000"
`

// A replication whose embedded sentinels an earlier version of the operator made (StatefulSet
// watched-sentinel, group myMaster), taken over by this version under write load: the new
// sentinels (watched-s, group mymaster) start beside the old ones, the old ones go only once
// every new one reports the master, the master never moves, and no acknowledged write is lost.
func TestEmbeddedSentinelsOfAnEarlierVersionMigrateUnderWriteLoad(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := sb.Namespace(t, "sentinel-migration")
	sb.Apply(t, ns, migratingReplication)
	key := client.ObjectKey{Namespace: ns, Name: "watched"}
	cr := &v1beta2.RedisReplication{}
	waitReady := func(what string, cond func() (bool, string)) {
		t.Helper()
		sb.WaitFor(t, ns, what, 4*time.Minute, func(ctx context.Context) (bool, string, error) {
			if err := sb.Client.Get(ctx, key, cr); err != nil {
				return false, "", err
			}
			ready := meta.FindStatusCondition(cr.Status.Conditions, v1beta2.ConditionReady)
			ok, detail := cond()
			return ok && ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == cr.Generation,
				fmt.Sprintf("%s master %q: %s; %s", cr.Status.State, cr.Status.MasterNode, cr.Status.Reason, detail), nil
		})
	}
	waitReady("RedisReplication Ready with its sentinels", func() (bool, string) { return true, "" })
	master := cr.Status.MasterNode

	// What the earlier version ran: this version's sentinel objects under the old names and
	// group, laid out while the operator keeps its hands off.
	skipReconcile(t, ns, key, true)
	recreateAsLegacySentinels(t, ns, "watched")
	legacyPods := sb.WaitPodsReady(t, ns, "app=watched-sentinel", 3, 3*time.Minute)
	for i := range legacyPods {
		sb.WaitFor(t, ns, legacyPods[i].Name+" monitors myMaster", time.Minute, func(ctx context.Context) (bool, string, error) {
			addr, err := sentinelAt(t, legacyPods[i].Status.PodIP).GetMasterAddrByName(ctx, "myMaster").Result()
			return err == nil && len(addr) == 2 && addr[0] == getPod(t, ns, master).Status.PodIP, fmt.Sprintf("%v %v", addr, err), nil
		})
	}

	writes := startAcknowledgedWriter(t, ns, "watched-master", "migrate-me")
	time.Sleep(time.Second)
	skipReconcile(t, ns, key, false)
	waitReady("the new sentinels in charge and the old ones gone", func() (bool, string) {
		err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "watched-sentinel"}, &appsv1.StatefulSet{})
		return apierrors.IsNotFound(err), fmt.Sprintf("old StatefulSet: %v", err)
	})
	sb.WaitFor(t, ns, "the old sentinels' objects pruned", time.Minute, func(ctx context.Context) (bool, string, error) {
		var left []string
		for _, obj := range []client.Object{&corev1.Service{}, &corev1.ConfigMap{}, &corev1.Secret{}} {
			for _, name := range []string{"watched-sentinel", "watched-sentinel-headless", "watched-sentinel-config", "watched-sentinel-auth"} {
				if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj); err == nil {
					left = append(left, fmt.Sprintf("%T %s", obj, name))
				}
			}
		}
		return len(left) == 0, strings.Join(left, ", "), nil
	})
	time.Sleep(time.Second)
	acknowledged, failures := writes()

	if cr.Status.MasterNode != master {
		t.Errorf("the master moved from %s to %s during the migration", master, cr.Status.MasterNode)
	}
	if info := cr.Status.ConnectionInfo; info == nil || *info != (v1beta2.ConnectionInfo{
		Host: "watched-s-hl." + ns + ".svc.cluster.local", Port: 26379, MasterName: "mymaster"}) {
		t.Errorf("connectionInfo %+v", info)
	}
	if len(acknowledged) < 10 {
		t.Fatalf("only %d writes acknowledged during the migration (%d failed)", len(acknowledged), failures)
	}
	rdb := sb.RedisWithPassword(t, getPod(t, ns, master).Status.PodIP, 6379, "migrate-me")
	for _, k := range acknowledged {
		if err := rdb.Get(ctx, k).Err(); err != nil {
			t.Errorf("acknowledged key %s is missing after the migration: %v", k, err)
		}
	}
	t.Logf("%d writes acknowledged, %d refused during the migration", len(acknowledged), failures)
	for _, p := range sb.WaitPodsReady(t, ns, "app=watched-s", 3, time.Minute) {
		fields, err := sentinelAt(t, p.Status.PodIP).Master(ctx, "mymaster").Result()
		if err != nil || fields["ip"] != getPod(t, ns, master).Status.PodIP || fields["quorum"] != "2" {
			t.Errorf("%s: SENTINEL MASTER mymaster = %v, %v", p.Name, fields, err)
		}
	}
	var events eventsv1.EventList
	if err := sb.Client.List(ctx, &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	replaced := false
	for _, e := range events.Items {
		replaced = replaced || e.Reason == "SentinelsReplaced"
		if e.Reason == "Promote" || e.Reason == "HandOver" {
			t.Errorf("the master was moved during the migration: %s", e.Note)
		}
	}
	if !replaced {
		t.Error("no SentinelsReplaced event")
	}
}

// sentinelAt connects to the sentinel of a pod.
func sentinelAt(t *testing.T, ip string) *goredis.SentinelClient {
	t.Helper()
	c := goredis.NewSentinelClient(&goredis.Options{Addr: net.JoinHostPort(ip, "26379"), DialTimeout: 2 * time.Second,
		ReadTimeout: 2 * time.Second, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// skipReconcile sets or removes the replication's skip-reconcile annotation.
func skipReconcile(t *testing.T, ns string, key client.ObjectKey, skip bool) {
	t.Helper()
	skipResource(t, ns, "RedisReplication", key.Name, skip)
}

// recreateAsLegacySentinels replaces the embedded sentinels of replication name (<name>-s,
// group mymaster) by the same objects under the names and group an earlier version used
// (<name>-sentinel, myMaster), keeping the replication as their controller.
func recreateAsLegacySentinels(t *testing.T, ns, name string) {
	t.Helper()
	ctx := context.Background()
	newName, oldName := name+"-s", name+"-sentinel"
	rename := func(s string) string {
		s = strings.ReplaceAll(s, "mymaster", "myMaster")
		s = strings.ReplaceAll(s, newName+"-hl", oldName+"-headless")
		s = strings.ReplaceAll(s, newName+"-auth", oldName+"-auth")
		return strings.ReplaceAll(s, newName, oldName)
	}
	var sts appsv1.StatefulSet
	if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: newName}, &sts); err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: newName + "-config"}, &cm); err != nil {
		t.Fatal(err)
	}
	var secret corev1.Secret
	if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: newName + "-auth"}, &secret); err != nil {
		t.Fatal(err)
	}
	var headless corev1.Service
	if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: newName + "-hl"}, &headless); err != nil {
		t.Fatal(err)
	}
	// Delete this version's sentinels first (their pods too), so only the old ones watch.
	for _, obj := range []client.Object{&sts, &cm, &secret, &headless} {
		if err := sb.Client.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
			t.Fatal(err)
		}
	}
	sb.WaitFor(t, ns, "this version's sentinel pods gone", 2*time.Minute, func(ctx context.Context) (bool, string, error) {
		var pods corev1.PodList
		err := sb.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"app": newName})
		return err == nil && len(pods.Items) == 0, fmt.Sprintf("%d pods", len(pods.Items)), err
	})

	legacyMeta := func(m metav1.ObjectMeta) metav1.ObjectMeta {
		out := metav1.ObjectMeta{Name: rename(m.Name), Namespace: ns, OwnerReferences: m.OwnerReferences,
			Labels: map[string]string{}, Annotations: map[string]string{}}
		for k, v := range m.Labels {
			out.Labels[k] = rename(v)
		}
		for k, v := range m.Annotations {
			out.Annotations[k] = rename(v)
		}
		return out
	}
	oldCM := &corev1.ConfigMap{ObjectMeta: legacyMeta(cm.ObjectMeta), Data: map[string]string{}}
	for k, v := range cm.Data {
		oldCM.Data[k] = rename(v)
	}
	oldSecret := &corev1.Secret{ObjectMeta: legacyMeta(secret.ObjectMeta), Data: map[string][]byte{}}
	for k, v := range secret.Data {
		oldSecret.Data[k] = []byte(rename(string(v)))
	}
	oldHeadless := &corev1.Service{ObjectMeta: legacyMeta(headless.ObjectMeta), Spec: corev1.ServiceSpec{
		ClusterIP: corev1.ClusterIPNone, Ports: headless.Spec.Ports, Selector: map[string]string{}}}
	for k, v := range headless.Spec.Selector {
		oldHeadless.Spec.Selector[k] = rename(v)
	}
	oldSTS := &appsv1.StatefulSet{ObjectMeta: legacyMeta(sts.ObjectMeta), Spec: *sts.Spec.DeepCopy()}
	oldSTS.Spec.ServiceName = rename(sts.Spec.ServiceName)
	oldSTS.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{}}
	for k, v := range sts.Spec.Selector.MatchLabels {
		oldSTS.Spec.Selector.MatchLabels[k] = rename(v)
	}
	// Every name in the pod template (volumes, projected sources, containers, labels) follows.
	tmpl, err := json.Marshal(sts.Spec.Template)
	if err != nil {
		t.Fatal(err)
	}
	oldSTS.Spec.Template = corev1.PodTemplateSpec{}
	if err := json.Unmarshal([]byte(rename(string(tmpl))), &oldSTS.Spec.Template); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []client.Object{oldCM, oldSecret, oldHeadless, oldSTS} {
		if err := sb.Client.Create(ctx, obj); err != nil {
			t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
		}
	}
}

// startAcknowledgedWriter writes one key at a time through the Service named svcName; a key
// counts as acknowledged once a replica has it too (WAIT 1). Errors while roles change are
// counted, not fatal. The returned function stops it and returns what it wrote.
func startAcknowledgedWriter(t *testing.T, ns, svcName, password string) func() (acknowledged []string, failures int) {
	t.Helper()
	ctx := context.Background()
	var svc corev1.Service
	if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: svcName}, &svc); err != nil {
		t.Fatal(err)
	}
	writer := sb.RedisWithPassword(t, svc.Spec.ClusterIP, 6379, password)
	var (
		mu    sync.Mutex
		acked []string
		fails int
	)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			k := "w-" + strconv.Itoa(i)
			if err := writer.Set(ctx, k, i, 0).Err(); err != nil {
				mu.Lock()
				fails++
				mu.Unlock()
				time.Sleep(50 * time.Millisecond)
				continue
			}
			if n, err := writer.Wait(ctx, 1, time.Second).Result(); err == nil && n >= 1 {
				mu.Lock()
				acked = append(acked, k)
				mu.Unlock()
			}
		}
	}()
	return func() ([]string, int) {
		close(stop)
		<-done
		mu.Lock()
		defer mu.Unlock()
		return acked, fails
	}
}
