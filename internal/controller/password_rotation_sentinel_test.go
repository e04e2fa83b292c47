//go:build integration

package controller

import (
	"fmt"
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
)

// A replication watched by embedded sentinels takes a new password in place, and so do its
// sentinels: they keep seeing the master up, a sentinel started afterwards has the new password
// too, and they still fail the replication over.
func TestPasswordChangesInPlaceUnderEmbeddedSentinels(t *testing.T) {
	t.Parallel()
	f := newReplicationFixture(t)
	f.waitReady("rr-0")
	sentinels := f.addEmbeddedSentinels()
	f.rotateUnderSentinels(sentinels, "rr-s", builder.EmbeddedMasterGroupName, nil)
}

// A rotation stopped midway (the operator gone after some steps, on some pods) is finished from
// whatever state each pod is in: rr-1 accepting both passwords (step 1), rr-2 requiring the new
// one alone (step 4), rr-0 untouched.
func TestPasswordRotationUnderSentinelsResumes(t *testing.T) {
	t.Parallel()
	f := newReplicationFixture(t)
	f.waitReady("rr-0")
	sentinels := f.addEmbeddedSentinels()
	f.rotateUnderSentinels(sentinels, "rr-s", builder.EmbeddedMasterGroupName, func(newPassword string) {
		if err := f.redis("rr-1").Do(f.ctx, "acl", "setuser", "default", ">"+newPassword).Err(); err != nil {
			t.Fatal(err)
		}
		for _, parameter := range []string{"masterauth", "requirepass"} {
			if err := f.redis("rr-2").ConfigSet(f.ctx, parameter, newPassword).Err(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// addEmbeddedSentinels gives the replication 3 embedded sentinels and runs them.
func (f *replicationFixture) addEmbeddedSentinels() *fakeKubelet {
	f.t.Helper()
	if err := f.c.Get(f.ctx, client.ObjectKeyFromObject(f.cr), f.cr); err != nil {
		f.t.Fatal(err)
	}
	f.cr.Spec.Sentinel = &v1beta2.Sentinel{Size: 3, Image: "redis:7.0.15",
		SentinelConfig: v1beta2.SentinelConfig{Quorum: "2", DownAfterMilliseconds: "1000", FailoverTimeout: "5000", ParallelSyncs: "1"}}
	if err := f.c.Update(f.ctx, f.cr); err != nil {
		f.t.Fatal(err)
	}
	sentinels := f.sentinelKubelet("rr-s", builder.EmbeddedMasterGroupName)
	sentinels.runStatefulSet(f.ctx, f.cr.Namespace, "rr-s")
	f.waitReady("rr-0")
	return sentinels
}

// The same with a RedisSentinel watching the replication (its password from the same Secret).
func TestPasswordChangesInPlaceUnderARedisSentinel(t *testing.T) {
	t.Parallel()
	f := newReplicationFixture(t)
	f.waitReady("rr-0")
	sn := f.createRedisSentinel()
	sentinels := f.sentinelKubelet("sn-sentinel", builder.DefaultMasterGroupName)
	sentinels.runStatefulSet(f.ctx, f.cr.Namespace, "sn-sentinel")
	waitUntil(t, 45*time.Second, "RedisSentinel Ready", func() error {
		if err := f.c.Get(f.ctx, client.ObjectKeyFromObject(sn), sn); err != nil {
			return err
		}
		if ready := meta.FindStatusCondition(sn.Status.Conditions, v1beta2.ConditionReady); sn.Status.State == SentinelStateReady &&
			ready != nil && ready.Status == metav1.ConditionTrue {
			return nil
		}
		return fmt.Errorf("state %q, conditions %s", sn.Status.State, describeConditions(sn.Status.Conditions))
	})
	f.rotateUnderSentinels(sentinels, "sn-sentinel", builder.DefaultMasterGroupName, nil)
}

// rotateUnderSentinels changes the replication's password in its Secret and checks, on the
// real processes, that the pods and the sentinels of StatefulSet sts (group) took it in place.
// interrupted, when set, puts pods in the state a rotation stopped midway leaves, just before.
func (f *replicationFixture) rotateUnderSentinels(sentinels *fakeKubelet, sts, group string, interrupted func(newPassword string)) {
	t := f.t
	t.Helper()
	f.writeAcknowledged("before", "sentinel-failover")
	pids := map[string]int{}
	for _, k := range []*fakeKubelet{f.kubelet, sentinels} {
		for _, name := range k.podNames() {
			pids[name] = k.pod(name).cmd.Process.Pid
		}
	}

	const newPassword = "n3w-rotated-pass"
	var secret corev1.Secret
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.cr.Namespace, Name: "redis-secret"}, &secret); err != nil {
		t.Fatal(err)
	}
	if interrupted != nil {
		interrupted(newPassword)
	}
	secret.Data["password"] = []byte(newPassword)
	if err := f.c.Update(f.ctx, &secret); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, "the auth Secret to hold the new password", func() error {
		var auth corev1.Secret
		if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.cr.Namespace, Name: builder.AuthSecretName("rr")}, &auth); err != nil {
			return err
		}
		if got, _ := builder.PasswordOfAuthFile(string(auth.Data[builder.RedisAuthKey])); got != newPassword {
			return fmt.Errorf("auth Secret holds %q", got)
		}
		return nil
	})
	// The sentinels' auth Secret, which a sentinel pod starts from, follows.
	waitUntil(t, 30*time.Second, "the sentinels' auth Secret to hold the new password", func() error {
		auth, ok := f.sentinelAuthFile(sts)
		if !ok {
			t.Fatalf("StatefulSet %s mounts no auth Secret", sts)
		}
		if want := fmt.Sprintf("sentinel auth-pass %s %q\n", group, newPassword); !strings.Contains(auth, want) {
			return fmt.Errorf("it holds %d bytes without %q", len(auth), strings.ReplaceAll(want, newPassword, "<new>"))
		}
		return nil
	})
	for _, k := range []*fakeKubelet{f.kubelet, sentinels} {
		for _, name := range k.podNames() {
			if k.pod(name).cmd.Process.Pid != pids[name] {
				t.Errorf("pod %s restarted", name)
			}
		}
	}
	for _, name := range f.kubelet.podNames() {
		for password, want := range map[string]bool{newPassword: true, replicationPassword: false} {
			c := goredis.NewClient(&goredis.Options{Addr: f.kubelet.pod(name).addr(builder.DefaultRedisPort), Password: password, MaxRetries: -1})
			err := c.Ping(f.ctx).Err()
			_ = c.Close()
			if (err == nil) != want {
				t.Errorf("pod %s with the %s password: %v", name, map[bool]string{true: "new", false: "old"}[want], err)
			}
		}
	}
	f.password, f.kubelet.password = newPassword, newPassword

	// Cut every sentinel link to the pods: the sentinels must authenticate again, with what
	// they hold now, and keep seeing the master and replicas up.
	for _, name := range f.kubelet.podNames() {
		for _, typ := range []string{"normal", "pubsub"} {
			if err := f.redis(name).Do(f.ctx, "client", "kill", "type", typ).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	time.Sleep(2 * time.Second) // beyond down-after-milliseconds (1 s)
	f.sentinelsSeeUp(sentinels, group, "rr-0")

	// A sentinel started now takes the new password from the auth Secret.
	var set appsv1.StatefulSet
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.cr.Namespace, Name: sts}, &set); err != nil {
		t.Fatal(err)
	}
	sentinels.deletePod(f.ctx, f.cr.Namespace, sts+"-2", syscall.SIGTERM)
	sentinels.startPod(f.ctx, &set, 2, "")
	time.Sleep(2 * time.Second)
	f.sentinelsSeeUp(sentinels, group, "rr-0")
	f.waitReady("rr-0")

	var events eventsv1.EventList
	if err := f.c.List(f.ctx, &events, client.InNamespace(f.cr.Namespace)); err != nil {
		t.Fatal(err)
	}
	want := "3 pod(s) changed"
	if interrupted != nil {
		want = "2 pod(s) changed" // rr-2 had finished
	}
	rotated := false
	for _, e := range events.Items {
		rotated = rotated || e.Reason == "PasswordRotated" && strings.HasPrefix(e.Note, want) && strings.Contains(e.Note, "3 sentinel(s)")
		if strings.Contains(e.Note, newPassword) || strings.Contains(e.Note, replicationPassword) {
			t.Errorf("event %s carries a password", e.Reason)
		}
	}
	if !rotated {
		t.Errorf("no PasswordRotated event says %s and 3 sentinels changed", want)
	}

	// The sentinels can still fail the replication over: they authenticate to the replicas.
	f.sentinelsFailOver(sentinels.pod(sts+"-0"), group)
}

// sentinelsSeeUp waits until every sentinel pod sees master up (flags "master" alone, no
// s_down or o_down, a recent valid PING reply) and every replica up.
func (f *replicationFixture) sentinelsSeeUp(sentinels *fakeKubelet, group, master string) {
	f.t.Helper()
	for _, name := range sentinels.podNames() {
		c := goredis.NewClient(&goredis.Options{Addr: sentinels.pod(name).addr(builder.DefaultSentinelPort)})
		waitUntil(f.t, 15*time.Second, "sentinel "+name+" to see the master and replicas up", func() error {
			state, err := c.Do(f.ctx, "sentinel", "master", group).Result()
			if err != nil {
				return err
			}
			fields, err := fieldMap(state)
			if err != nil {
				return err
			}
			if fields["flags"] != "master" || fields["ip"] != f.kubelet.pod(master).ip {
				return fmt.Errorf("master %s flags %q", fields["ip"], fields["flags"])
			}
			replicas, err := c.Do(f.ctx, "sentinel", "replicas", group).Slice()
			if err != nil {
				return err
			}
			if len(replicas) != 2 {
				return fmt.Errorf("%d replicas known", len(replicas))
			}
			for _, r := range replicas {
				fields, err := fieldMap(r)
				if err != nil {
					return err
				}
				if fields["flags"] != "slave" {
					return fmt.Errorf("replica %s flags %q", fields["ip"], fields["flags"])
				}
			}
			return nil
		})
		_ = c.Close()
	}
}

// fieldMap reads a sentinel's field/value reply (a RESP3 map or a flat RESP2 array).
func fieldMap(reply any) (map[string]string, error) {
	out := map[string]string{}
	switch r := reply.(type) {
	case map[any]any:
		for k, v := range r {
			out[fmt.Sprint(k)] = fmt.Sprint(v)
		}
	case []any:
		for i := 0; i+1 < len(r); i += 2 {
			out[fmt.Sprint(r[i])] = fmt.Sprint(r[i+1])
		}
	default:
		return nil, fmt.Errorf("unexpected reply %T", reply)
	}
	return out, nil
}
