//go:build chaos

package operator

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/rediskube/redis-operator/internal/writecheck"
)

// TestScaleInSoakNeverLetsASlotGo scales a loaded cluster out and in again and again (20
// times unless CHAOS_SCALE_CYCLES says otherwise), with writers on every shard: each cycle must
// end Ready with the designed shape and every slot on a remaining master, and every
// acknowledged write of the whole run reads back. It hunts the race in which a departing
// master's pod went while another master still mapped a slot to it.
func TestScaleInSoakNeverLetsASlotGo(t *testing.T) {
	cycles := 20
	if v := os.Getenv("CHAOS_SCALE_CYCLES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("CHAOS_SCALE_CYCLES=%q: want a positive number", v)
		}
		cycles = n
	}
	start := faultTime()
	c := newCluster(t, strings.Replace(persistentCluster, "name: durable", "name: soak", 1))
	c.waitReady(start)
	c.writeKeys("k", 1000)
	checker := c.startWriting("soak")
	for i := range cycles {
		since := faultTime()
		c.resize(4)
		c.waitReady(since)
		c.assertShapeOf(4, 4)
		since = faultTime()
		c.resize(3)
		c.waitReady(since)
		c.assertShapeOf(3, 3)
		if got := c.slotsPerMaster(); fmt.Sprint(got) != "[5461 5461 5462]" {
			t.Fatalf("cycle %d: slots per master after the scale-in: %v", i+1, got)
		}
		c.readKeys("k", 1000)
		t.Logf("cycle %d of %d: Ready at 4 and back at 3 leaders, every slot served, the 1000 keys read back", i+1, cycles)
	}
	c.requireWrites(checker, fmt.Sprintf("over %d scale-out/scale-in cycles", cycles), 0)
}

// TestReadAfterFailoverSoak hunts the read that once failed on a Ready cluster: a fresh client
// could not read an acknowledged key two minutes after a rolling update ended, and read it on
// every later try. It alternates rolling updates of a loaded cluster with pod-deleted leaders
// handed back to their leader pods (CHAOS_FAILOVER_CYCLES of each, 10 by default), and after
// each, once the cluster is Ready, reads every key acknowledged so far through a new client.
// A key that reads wrong is diagnosed (who owns its slot in each node's view, what each node
// holds) before the test fails, so that a failure says which of the suspected causes it is.
func TestReadAfterFailoverSoak(t *testing.T) {
	cycles := 10
	if v := os.Getenv("CHAOS_FAILOVER_CYCLES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("CHAOS_FAILOVER_CYCLES=%q: want a positive number", v)
		}
		cycles = n
	}
	start := faultTime()
	c := newCluster(t, strings.Replace(persistentCluster, "name: durable", "name: reads", 1))
	c.waitReady(start)
	c.writeKeys("base", 1000)
	for i := range 2 * cycles {
		checker := c.startWriting(fmt.Sprintf("c%d", i))
		since := faultTime()
		var what string
		if i%2 == 0 {
			what = fmt.Sprintf("rolling update %d of %d", i/2+1, cycles)
			cr := c.get()
			cr.Spec.EnvVars = &[]corev1.EnvVar{{Name: "ROLLOUT", Value: strconv.Itoa(i)}}
			if err := sb.Client.Update(c.ctx, cr); err != nil {
				t.Fatal(err)
			}
			c.waitRolledOut(6)
		} else {
			leader := fmt.Sprintf("%s-leader-%d", c.name, (i/2)%3)
			what = fmt.Sprintf("hand-back %d of %d (pod %s deleted)", i/2+1, cycles, leader)
			if err := sb.Client.Delete(c.ctx, c.pod(leader)); err != nil {
				t.Fatal(err)
			}
		}
		c.waitReady(since)
		report := c.requireWritesReadFresh(checker, what)
		c.readKeysDiagnosing("base", 1000, what)
		t.Logf("%s: Ready, %d acknowledged writes and the 1000 base keys read back by new clients", what, report.Acknowledged)
	}
}

// requireWritesReadFresh stops the checker and reads its acknowledged writes back through a
// client that has never seen the cluster; a key lost or wrong is diagnosed first.
func (c *cluster) requireWritesReadFresh(checker *writecheck.Checker, what string) writecheck.Report {
	c.t.Helper()
	checker.Stop()
	report, err := checker.Verify(c.ctx, c.client())
	if err != nil {
		c.t.Fatalf("verify the writes made during the %s: %v", what, err)
	}
	if !report.OK() {
		bad := append(append(append([]string(nil), report.Missing...), report.Wrong...), report.StaleRegisters...)
		for _, entry := range bad[:min(len(bad), 3)] {
			key, _, _ := strings.Cut(entry, ": ") // "key: want X got Y" -> "key"
			c.diagnoseKey(key, what)
		}
		c.t.Fatalf("writes lost or wrong after the %s: %s", what, report)
	}
	return report
}
