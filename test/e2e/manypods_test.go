package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rediskube/redis-operator/test/sandbox/network"
)

// The sandbox holds hundreds of pods, each answering on its own address: the kernel's
// neighbour table, shared by every network namespace, has its limits raised while a sandbox
// runs (by default it overflows past about 160 pods and connections time out at random).
// E2E_MANY_PODS sets the number (300 by default).
func TestHundredsOfPodsAllAnswer(t *testing.T) {
	pods := 300
	if v := os.Getenv("E2E_MANY_PODS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("E2E_MANY_PODS=%q is no positive number", v)
		}
		pods = n
	}
	for name, want := range network.NeighLimits {
		b, err := os.ReadFile("/proc/sys/net/ipv4/neigh/default/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := strconv.Atoi(strings.TrimSpace(string(b))); got < want {
			t.Errorf("neighbour table %s = %d while a sandbox runs, want at least %d", name, got, want)
		}
	}
	ctx := context.Background()
	ns := sb.Namespace(t, "many")
	sb.Apply(t, ns, fmt.Sprintf(`
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: many
spec:
  serviceName: many
  replicas: %d
  podManagementPolicy: Parallel
  selector:
    matchLabels: {app: many}
  template:
    metadata:
      labels: {app: many}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
        - name: redis
          image: redis:7.0
          args: ["--appendonly", "no", "--maxmemory", "2mb"]
`, pods))
	ready := sb.WaitPodsReady(t, ns, "app=many", pods, 15*time.Minute)

	// Every pod answers, several times over, from the host through the bridge.
	var mu sync.Mutex
	var failed []string
	var wg sync.WaitGroup
	work := make(chan int)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				rdb := sb.Redis(t, &ready[i])
				for round := range 3 {
					if err := rdb.Ping(ctx).Err(); err != nil {
						mu.Lock()
						failed = append(failed, fmt.Sprintf("%s (%s) round %d: %v", ready[i].Name, ready[i].Status.PodIP, round, err))
						mu.Unlock()
					}
				}
			}
		}()
	}
	for i := range ready {
		work <- i
	}
	close(work)
	wg.Wait()
	if len(failed) > 0 {
		t.Errorf("%d of %d pods did not answer: %s", len(failed), pods, strings.Join(failed[:min(len(failed), 10)], "; "))
	}
}
