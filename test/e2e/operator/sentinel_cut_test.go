package operator

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

// roleSample is what one look at a sentinel-watched replication saw: the pods labelled
// master, the ready endpoints of its -master Service, and its Degraded condition.
type roleSample struct {
	at        time.Time
	labelled  []string
	endpoints []string
	degraded  bool
	// master is what the status names; sentinels what each sentinel pod names (its IP).
	master    string
	sentinels []string
}

// sampleRoles looks at the replication every 200 ms until the returned stop is called, which
// returns what it saw.
func sampleRoles(t *testing.T, ns, name string) (stop func() []roleSample) {
	t.Helper()
	var (
		mu      sync.Mutex
		samples []roleSample
	)
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		ctx := context.Background()
		clients := map[string]*goredis.Client{}
		for {
			s := roleSample{at: time.Now()}
			var pods corev1.PodList
			if err := sb.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"app": name, "redis-role": "master"}); err == nil {
				for _, p := range pods.Items {
					s.labelled = append(s.labelled, p.Name)
				}
			}
			var slices discoveryv1.EndpointSliceList
			if err := sb.Client.List(ctx, &slices, client.InNamespace(ns), client.MatchingLabels{discoveryv1.LabelServiceName: name + "-master"}); err == nil {
				for _, sl := range slices.Items {
					for _, e := range sl.Endpoints {
						if e.Conditions.Ready == nil || *e.Conditions.Ready {
							s.endpoints = append(s.endpoints, e.Addresses...)
						}
					}
				}
			}
			cr := &v1beta2.RedisReplication{}
			if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cr); err == nil {
				s.degraded = meta.IsStatusConditionTrue(cr.Status.Conditions, v1beta2.ConditionDegraded)
				s.master = cr.Status.MasterNode
			}
			var sentinels corev1.PodList
			if err := sb.Client.List(ctx, &sentinels, client.InNamespace(ns), client.MatchingLabels{"app": name + "-sn-sentinel"}); err == nil {
				for _, p := range sentinels.Items {
					if p.Status.PodIP == "" {
						continue
					}
					c, ok := clients[p.Status.PodIP]
					if !ok {
						c = sb.RedisAt(t, p.Status.PodIP, 26379)
						clients[p.Status.PodIP] = c
					}
					askCtx, cancel := context.WithTimeout(ctx, time.Second)
					addr, err := c.Do(askCtx, "SENTINEL", "get-master-addr-by-name", "myMaster").StringSlice()
					cancel()
					if err == nil && len(addr) == 2 {
						s.sentinels = append(s.sentinels, addr[0])
					}
				}
			}
			mu.Lock()
			samples = append(samples, s)
			mu.Unlock()
			select {
			case <-done:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return func() []roleSample {
		close(done)
		<-finished
		mu.Lock()
		defer mu.Unlock()
		return samples
	}
}

// The master of a replication watched by a RedisSentinel cut off the network for 40 s while
// its pod keeps running, under a writer whose writes a replica acknowledges: the sentinels
// fail over and the operator follows. At no look does the -master Service have two
// endpoints or do two pods carry the master label; the cut master's label is gone by the time
// most sentinels name another master (it goes once the pod stops answering), the status and
// labels name the new master within 5 s of the sentinels; the resource is Degraded while the
// master does not answer.
// After the heal the old master is a replica of the new one and every acknowledged write is
// on the new master.
func TestSentinelWatchedMasterCutOffFailsOverWithTruthfulLabels(t *testing.T) {
	t.Parallel()
	ns := sb.Namespace(t, "sentinel-cut")
	ctx := context.Background()
	const name = "cut"
	sb.Apply(t, ns, `apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisReplication
metadata:
  name: cut
spec:
  clusterSize: 3
  kubernetesConfig:
    image: redis:7.0.15
---
apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: RedisSentinel
metadata:
  name: cut-sn
spec:
  clusterSize: 3
  kubernetesConfig:
    image: redis:7.0.15
  redisSentinelConfig:
    redisReplicationName: cut
    downAfterMilliseconds: "3000"
    failoverTimeout: "10000"
`)
	cr := &v1beta2.RedisReplication{}
	watched := sentinelWatched{ns: ns, name: name, sentinel: "cut-sn", cr: cr, timeout: 4 * time.Minute}
	watched.waitReady(t, "at first", time.Time{})
	master := getPod(t, ns, cr.Status.MasterNode)
	writes := startAcknowledgedWriter(t, ns, name+"-master", "")
	time.Sleep(2 * time.Second)

	stopSampling := sampleRoles(t, ns, name)
	cut := faultTime()
	healCut := cutOff(t, ns, master.Name)
	var promoted string
	sb.WaitFor(t, ns, "the sentinels' new master in the status", 2*time.Minute, func(ctx context.Context) (bool, string, error) {
		if err := sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cr); err != nil {
			return false, "", err
		}
		promoted = cr.Status.MasterNode
		return promoted != "" && promoted != master.Name, "master " + promoted, nil
	})
	time.Sleep(max(0, 40*time.Second-time.Since(cut)))
	healCut()
	heal := time.Now()
	watched.waitReady(t, "after the heal", heal)
	samples := stopSampling()
	acknowledged, failures := writes()

	if cr.Status.MasterNode != promoted {
		t.Errorf("master %s after the heal, want the sentinels' %s", cr.Status.MasterNode, promoted)
	}
	if role, err := sb.Redis(t, getPod(t, ns, master.Name)).Do(ctx, "ROLE").Slice(); err != nil || role[0] != "slave" {
		t.Errorf("the old master after the heal: ROLE %v, %v", role, err)
	}
	newMaster := sb.Redis(t, getPod(t, ns, promoted))
	for _, k := range acknowledged {
		if err := newMaster.Get(ctx, k).Err(); err != nil {
			t.Errorf("acknowledged key %s is not on the new master %s: %v", k, promoted, err)
		}
	}
	if len(acknowledged) < 10 {
		t.Errorf("only %d writes acknowledged (%d failed)", len(acknowledged), failures)
	}

	// switched: the first look at which most sentinels name another master; followed: the
	// first at which the status and the labels name the promoted pod alone.
	var degradedInCut bool
	var labelGone, switched, followed time.Time
	for _, s := range samples {
		if len(s.labelled) > 1 {
			t.Errorf("%s: two pods labelled master: %v", s.at.Format("15:04:05.000"), s.labelled)
		}
		if len(s.endpoints) > 1 {
			t.Errorf("%s: the -master Service has %d endpoints: %v", s.at.Format("15:04:05.000"), len(s.endpoints), s.endpoints)
		}
		if s.at.After(cut.Add(5*time.Second)) && s.at.Before(heal) && s.degraded {
			degradedInCut = true
		}
		if labelGone.IsZero() && s.at.After(cut) && !slices.Contains(s.labelled, master.Name) {
			labelGone = s.at
		}
		others := 0
		for _, ip := range s.sentinels {
			if ip != master.Status.PodIP {
				others++
			}
		}
		if switched.IsZero() && s.at.After(cut) && 2*others > len(s.sentinels) {
			switched = s.at
		}
		if followed.IsZero() && s.at.After(cut) && s.master == promoted && slices.Equal(s.labelled, []string{promoted}) {
			followed = s.at
		}
	}
	if !degradedInCut {
		t.Error("never Degraded while the master was cut off")
	}
	switch {
	case labelGone.IsZero():
		t.Errorf("the cut master %s kept its master label", master.Name)
	case switched.IsZero():
		t.Error("no look saw most sentinels name another master")
	case labelGone.After(switched.Add(2 * time.Second)): // 1.3 s seen inside the full suite
		t.Errorf("the cut master's label went %s after the sentinels named another master", labelGone.Sub(switched).Round(time.Millisecond))
	case followed.IsZero():
		t.Errorf("the status and labels never named %s alone", promoted)
	case followed.After(switched.Add(5 * time.Second)):
		t.Errorf("the status and labels named the sentinels' master %s after the sentinels did", followed.Sub(switched).Round(time.Millisecond))
	}
	// What changed when, for the log: the status's master, the labels, the sentinels' view.
	var last roleSample
	for i, s := range samples {
		if i == 0 || s.master != last.master || !slices.Equal(s.labelled, last.labelled) || !slices.Equal(s.sentinels, last.sentinels) ||
			len(s.endpoints) != len(last.endpoints) || s.degraded != last.degraded {
			t.Logf("+%s master %q labelled %v endpoints %v sentinels %v degraded %v", s.at.Sub(cut).Round(100*time.Millisecond),
				s.master, s.labelled, s.endpoints, s.sentinels, s.degraded)
		}
		last = s
	}
	t.Logf("%d writes acknowledged, %d failed; cut %s: its label gone after %s, the sentinels named %s after %s, the status and labels after %s; %d looks",
		len(acknowledged), failures, master.Name, labelGone.Sub(cut).Round(time.Millisecond), promoted, switched.Sub(cut).Round(time.Millisecond),
		followed.Sub(cut).Round(time.Millisecond), len(samples))
}
