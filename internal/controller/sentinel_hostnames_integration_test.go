//go:build integration

package controller

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/internal/builder"
)

// A RedisSentinel that resolves and announces hostnames comes to watch a replication that is
// Ready on rr-0: the replication's pods are told to announce their DNS names, the sentinels are
// seeded with the master pod's name, the replicas that follow the master by IP are left as they
// are (either form is the master), and a replica the operator has to point at the master is
// told its name, once: ROLE then reports the name, which the operator takes for rr-0's IP.
//
// The pods here are processes on loopback addresses, which no DNS name resolves to, so a
// replica told a name never links and no sentinel can start from a seed naming a host it
// cannot resolve: this tier checks what the operator writes and sends; the sandbox's
// end-to-end test (TestSentinelsNameTheMasterByDNSName) runs the failover by name.
func TestSentinelsNamingHostsAreToldThePodsNames(t *testing.T) {
	t.Parallel()
	f := newReplicationFixture(t)
	f.waitReady("rr-0")
	ns := f.cr.Namespace
	fqdn := func(pod string) string { return pod + ".rr-headless." + ns + ".svc.cluster.local" }
	sn := f.createRedisSentinel()
	sn.Spec.RedisSentinelConfig.ResolveHostnames, sn.Spec.RedisSentinelConfig.AnnounceHostnames = "yes", "yes"
	if err := f.c.Update(f.ctx, sn); err != nil {
		t.Fatal(err)
	}

	waitUntil(t, 30*time.Second, "the sentinels seeded with rr-0's DNS name", func() error {
		var cm corev1.ConfigMap
		if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: ns, Name: builder.ConfigMapName("sn-sentinel")}, &cm); err != nil {
			return err
		}
		conf := cm.Data[builder.SentinelConfKey]
		for _, want := range []string{"sentinel resolve-hostnames yes", "sentinel announce-hostnames yes",
			"sentinel monitor " + builder.DefaultMasterGroupName + " " + fqdn("rr-0") + " 6379 2"} {
			if !slices.Contains(strings.Split(conf, "\n"), want) {
				return fmt.Errorf("no %q in\n%s", want, conf)
			}
		}
		return nil
	})
	waitUntil(t, 30*time.Second, "the Redis pods told to announce their DNS names", func() error {
		var sts appsv1.StatefulSet
		if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: ns, Name: "rr"}, &sts); err != nil {
			return err
		}
		command := sts.Spec.Template.Spec.Containers[0].Command
		if i := slices.Index(command, "--replica-announce-ip"); i < 0 || i+1 >= len(command) ||
			command[i+1] != "$(POD_NAME).rr-headless."+ns+".svc.cluster.local" {
			return fmt.Errorf("command %v", command)
		}
		return nil
	})

	// rr-2 leaves the master; the operator points it back, by name.
	if err := f.redis("rr-2").Do(f.ctx, "replicaof", "no", "one").Err(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, "rr-2 told to follow rr-0 by name", func() error {
		info, err := f.redis("rr-2").Info(f.ctx, "replication").Result()
		if err != nil {
			return err
		}
		if !strings.Contains(info, "master_host:"+fqdn("rr-0")+"\r\n") {
			return fmt.Errorf("INFO replication:\n%s", info)
		}
		return nil
	})
	// Following the master's name is following the master: rr-2 is not told again, and rr-1,
	// following rr-0 by IP, is not re-pointed.
	time.Sleep(3 * time.Second)
	info, err := f.redis("rr-1").Info(f.ctx, "replication").Result()
	if err != nil {
		t.Fatal(err)
	}
	if want := "master_host:" + f.kubelet.pod("rr-0").ip + "\r\n"; !strings.Contains(info, want) {
		t.Errorf("rr-1 re-pointed: INFO replication\n%s", info)
	}
	if err := f.c.Get(f.ctx, client.ObjectKeyFromObject(f.cr), f.cr); err != nil {
		t.Fatal(err)
	}
	if f.cr.Status.MasterNode != "rr-0" {
		t.Errorf("masterNode %q", f.cr.Status.MasterNode)
	}
	var events eventsv1.EventList
	if err := f.c.List(f.ctx, &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	told := 0
	for _, e := range events.Items {
		if e.Reason == "ReplicaOf" && e.Related != nil && e.Related.Name == "rr-2" && strings.Contains(e.Note, fqdn("rr-0")+":6379") {
			told++
			if e.Series != nil {
				told += int(e.Series.Count) - 1
			}
		}
	}
	if told != 1 {
		t.Errorf("rr-2 told to follow %s %d times, want once", fqdn("rr-0"), told)
	}
}
