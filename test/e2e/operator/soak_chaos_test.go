//go:build chaos

package operator

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
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
