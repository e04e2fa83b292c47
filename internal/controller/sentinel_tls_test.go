//go:build integration

package controller

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/redis/redistest"
)

// A renewal the sentinels have not taken restarts their pods one at a time, never two down
// at once, each only once; then every sentinel forgets the departed ones (SENTINEL RESET)
// and counts exactly the two others, and they can still authorize a failover. Plain-text
// sentinels stand in for TLS ones: which pod goes when does not depend on TLS.
func TestSentinelTLSRollRestartsOnePodAtATimeAndForgetsTheDeparted(t *testing.T) {
	t.Parallel()
	f := newReplicationFixture(t)
	f.waitReady("rr-0")
	sn := f.createRedisSentinel()
	size := *sn.Spec.Size
	const sts, group = "sn-sentinel", builder.DefaultMasterGroupName
	kubelet := f.sentinelKubelet(sts, group)
	kubelet.runStatefulSet(f.ctx, f.cr.Namespace, sts)

	ca := redistest.NewCA(t, "redis-ca")
	issued := ca.Issue(t, "sn")
	settings := &tlsSettings{material: redis.TLSMaterial{CA: ca.CertPEM, Cert: issued.CertPEM, Key: issued.KeyPEM}, hash: "renewed", firstSeen: time.Now()}
	rec := events.NewFakeRecorder(100)
	roll := sentinelTLSRoll{&Dependencies{Client: f.c, Redis: f.op.pool, Recorder: rec}}

	original := map[types.UID]bool{}
	deleted := 0
	waitUntil(t, 2*time.Minute, "every sentinel pod restarted once and the departed forgotten", func() error {
		pods, err := podsOf(f.ctx, f.c, f.cr.Namespace, sts)
		if err != nil {
			t.Fatal(err)
		}
		if len(original) == 0 {
			if countReady(pods) < size {
				return fmt.Errorf("%d sentinel pods ready", countReady(pods))
			}
			for _, p := range pods {
				original[p.UID] = true
			}
		}
		kubelet.replaceDeleted(f.ctx, f.cr.Namespace, sts)
		if down := size - countReady(pods); down > 1 {
			t.Fatalf("%d sentinel pods down at once", down)
		}
		before := map[types.UID]bool{}
		for _, p := range pods {
			before[p.UID] = true
		}
		waiting := ""
		if _, err := roll.roll(f.ctx, sn, settings, sentinelSet{statefulSet: sts, pods: pods, replicas: size, group: group},
			func(_ time.Duration, why string) { waiting = why }); err != nil {
			t.Fatal(err)
		}
		left := 0
		for _, p := range pods {
			if original[p.UID] {
				left++
			}
		}
		after, err := podsOf(f.ctx, f.c, f.cr.Namespace, sts)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range after {
			delete(before, p.UID)
		}
		deleted += len(before)
		if left > 0 {
			return fmt.Errorf("%d original sentinel pods left (%s)", left, waiting)
		}
		for _, p := range pods {
			c, err := f.op.pool.Client(podEndpoint(&p, builder.DefaultSentinelPort, redis.Auth{}))
			if err != nil {
				t.Fatal(err)
			}
			fields, err := c.SentinelMaster(f.ctx, group)
			if err != nil {
				return err
			}
			if fields["num-other-sentinels"] != "2" {
				return fmt.Errorf("sentinel %s counts %s other sentinels", p.Name, fields["num-other-sentinels"])
			}
		}
		return nil
	})
	if deleted != int(size) {
		t.Errorf("%d sentinel pods deleted, want each of the %d once", deleted, size)
	}
	pods, err := podsOf(f.ctx, f.c, f.cr.Namespace, sts)
	if err != nil {
		t.Fatal(err)
	}
	c, err := f.op.pool.Client(podEndpoint(&pods[0], builder.DefaultSentinelPort, redis.Auth{}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SentinelCkQuorum(f.ctx, group); err != nil {
		t.Errorf("CKQUORUM after the roll: %v", err)
	}
	close(rec.Events)
	var restarted, forgotten int
	for e := range rec.Events {
		switch {
		case containsAll(e, ReasonTLSRestarted):
			restarted++
		case containsAll(e, ReasonSentinelsForgotten):
			forgotten++
		}
	}
	if restarted != int(size) || forgotten == 0 {
		t.Errorf("%d TLSRestarted and %d SentinelsForgotten events, want %d and some", restarted, forgotten, size)
	}
}

// replaceDeleted does what the StatefulSet controller and the kubelet do for a pod deleted in
// the API: stops its process and starts a new pod of the same ordinal, with a new address and
// an empty volume.
func (k *fakeKubelet) replaceDeleted(ctx context.Context, namespace, stsName string) {
	k.t.Helper()
	var sts appsv1.StatefulSet
	if err := k.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: stsName}, &sts); err != nil {
		k.t.Fatal(err)
	}
	for _, name := range k.podNames() {
		var pod corev1.Pod
		err := k.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &pod)
		if client.IgnoreNotFound(err) != nil {
			k.t.Fatal(err)
		}
		if err == nil && pod.DeletionTimestamp == nil {
			continue
		}
		ordinal, err := strconv.Atoi(name[strings.LastIndex(name, "-")+1:])
		if err != nil {
			k.t.Fatal(err)
		}
		k.deletePod(ctx, namespace, name, syscall.SIGTERM)
		k.startPod(ctx, &sts, ordinal, "")
	}
}
