package operator

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// cpuLoad keeps busy goroutines spinning until the returned function is called or the bound
// passes, whichever comes first: a loaded machine slows the pods' restarts and the operator's
// reconciles, which is when a replica was once left following its master's old address.
func cpuLoad(t *testing.T, spinners int, bound time.Duration) func() {
	t.Helper()
	done := make(chan struct{})
	var once sync.Once
	stop := func() { once.Do(func() { close(done) }) }
	timer := time.AfterFunc(bound, stop)
	var wg sync.WaitGroup
	for range spinners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 0
			for {
				select {
				case <-done:
					return
				default:
				}
				for i := 0; i < 1<<16; i++ { // spin between checks
					n += i
				}
			}
		}()
	}
	t.Cleanup(func() {
		stop()
		timer.Stop()
		wg.Wait()
	})
	return func() {
		stop()
		wg.Wait()
	}
}

// assertReplicaLinks checks every replica from Redis' side: its link is up and its
// master_host is the current address of a pod that is a master and lists it as a replica.
func (c *cluster) assertReplicaLinks() {
	c.t.Helper()
	pods := c.pods(c.ctx)
	byIP := map[string]corev1.Pod{}
	for _, p := range pods {
		byIP[p.Status.PodIP] = p
	}
	replicas := 0
	for _, p := range pods {
		info, err := c.redis(&p).Info(c.ctx, "replication").Result()
		if err != nil {
			c.t.Fatalf("pod %s: INFO replication: %v", p.Name, err)
		}
		fields := map[string]string{}
		for _, line := range strings.Split(info, "\n") {
			if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
				fields[k] = v
			}
		}
		if fields["role"] != "slave" {
			continue
		}
		replicas++
		if fields["master_link_status"] != "up" {
			c.t.Errorf("replica %s: master_link_status:%s (master_host %s)", p.Name, fields["master_link_status"], fields["master_host"])
		}
		master, ok := byIP[fields["master_host"]]
		if !ok {
			c.t.Errorf("replica %s follows %s, the address of no current pod", p.Name, fields["master_host"])
			continue
		}
		role, err := c.redis(&master).Do(c.ctx, "ROLE").Slice()
		if err != nil {
			c.t.Fatalf("pod %s: ROLE: %v", master.Name, err)
		}
		if role[0] != "master" || !strings.Contains(fmt.Sprint(role[2]), p.Status.PodIP) {
			c.t.Errorf("replica %s follows %s at %s, whose ROLE is %v", p.Name, master.Name, master.Status.PodIP, role)
		}
	}
	if replicas != 3 {
		c.t.Errorf("%d replicas, want 3", replicas)
	}
}

// Every pod of a persistent 3×(1+1) cluster deleted at once while the machine is busy: the
// pods come back with new addresses, slowly. The cluster must come back Ready with every key
// (from the volumes), every replica linked to its master's new address, and must never say
// Failed (nothing needs a human). It is also the test of the all-pods restart without load.
func TestEveryPodDeletedUnderCPULoadRecoversEveryLink(t *testing.T) {
	start := time.Now()
	c := newCluster(t, strings.Replace(persistentCluster, "name: durable", "name: loaded", 1)) // its keys outlive the pods
	c.waitReady(start)
	c.writeKeys("l", 300)
	statuses := c.recordStatus()
	stopLoad := cpuLoad(t, 2, 3*time.Minute) // through the recovery, bounded
	fault := faultTime()
	if err := sb.Client.DeleteAllOf(c.ctx, &corev1.Pod{}, client.InNamespace(c.ns), client.MatchingLabels{"app.kubernetes.io/instance": c.name}); err != nil {
		t.Fatal(err)
	}
	sb.WaitFor(t, c.ns, "six new pods running", 2*time.Minute, func(ctx context.Context) (bool, string, error) {
		fresh := 0
		for _, p := range c.pods(ctx) {
			if p.CreationTimestamp.After(fault.Add(-time.Second)) && p.Status.Phase == corev1.PodRunning {
				fresh++
			}
		}
		return fresh == 6, fmt.Sprintf("%d new pods running", fresh), nil
	})
	c.waitReady(fault)
	stopLoad()
	seen := statuses()
	c.assertShape()
	c.assertReplicaLinks()
	c.readKeys("l", 300)
	outage := false
	for _, st := range seen {
		t.Logf("status %s", st)
		// Every pod gone is an outage, told as one (an alert on Degraded fires).
		outage = outage || st.degraded == metav1.ConditionTrue && strings.HasPrefix(st.degradedBecause, "Outage: ")
		if st.state == "Failed" {
			t.Errorf("the restart showed Failed: %s", st)
		}
		if (st.state == "Ready") != (st.ready == metav1.ConditionTrue) {
			t.Errorf("state %q with Ready=%s", st.state, st.ready)
		}
	}
	if !outage {
		t.Errorf("the resource never said Degraded/Outage while no pod ran")
	}
}
