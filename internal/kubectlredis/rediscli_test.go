package kubectlredis

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
)

func cliPodFixture(name, instance, setup, role, ip string) *corev1.Pod {
	labels := map[string]string{builder.LabelInstance: instance, builder.LabelSetupType: setup}
	if role != "" {
		labels[builder.LabelRedisRole] = role
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Labels: labels},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip}}
}

// TestCliPicksThePod: the pod cli talks to is POD, the first pod, or with --master the master
// serving slot 0 (cluster), the labelled master (replication) or the master POD replicates;
// each command after -- goes to that pod only, and a pod of another resource is refused.
func TestCliPicksThePod(t *testing.T) {
	pods := []runtime.Object{
		cliPodFixture("cart-leader-0", "cart", builder.SetupCluster, "slave", "10.0.0.1"),
		cliPodFixture("cart-leader-1", "cart", builder.SetupCluster, "master", "10.0.0.2"),
		cliPodFixture("sessions-0", "sessions", builder.SetupReplication, "slave", "10.0.1.1"),
		cliPodFixture("sessions-1", "sessions", builder.SetupReplication, "master", "10.0.1.2"),
	}
	id := func(c string) string { return strings.Repeat(c, 40) }
	nodes := id("a") + " 10.0.0.1:6379@16379 myself,slave " + id("b") + " 0 0 2 connected\n" +
		id("b") + " 10.0.0.2:6379@16379 master - 0 0 2 connected 0-8191\n" +
		id("c") + " 10.0.0.9:6379@16379 master - 0 0 3 connected 8192-16383\n"
	conns := map[string]*fakeConn{}
	for _, p := range pods {
		name := p.(*corev1.Pod).Name
		conns[name] = &fakeConn{replies: map[string]any{"get k": "from " + name, "cluster nodes": nodes}}
	}
	conns["sessions-0"].replies["role"] = []any{"slave", "10.0.1.2", int64(6379), "connected", int64(10)}
	conns["cart-leader-0"].replies["role"] = []any{"slave", "10.0.0.2", int64(6379), "connected", int64(10)}
	c := fakeClient(t, &v1beta2.RedisCluster{ObjectMeta: objectMeta("shop", "cart", nil)},
		&v1beta2.RedisReplication{ObjectMeta: objectMeta("shop", "sessions", nil)},
		&v1beta2.RedisSentinel{ObjectMeta: objectMeta("shop", "watch", nil)})
	kube := kubefake.NewClientset(pods...)
	connector := func(_ invocation, out io.Writer) (Plugin, error) {
		return Plugin{Client: c, Kube: kube, Namespace: "shop", Out: out,
			dial: func(_ context.Context, _ *resource, pod *corev1.Pod) (redisConn, error) {
				if conn, ok := conns[pod.Name]; ok {
					return conn, nil
				}
				return nil, errors.New("unknown pod")
			}}, nil
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"cart"}, "from cart-leader-0"},
		{[]string{"cart", "--master"}, "from cart-leader-1"},
		{[]string{"cart", "cart-leader-0", "--master"}, "from cart-leader-1"},
		{[]string{"cart", "cart-leader-0"}, "from cart-leader-0"},
		{[]string{"sessions", "--master"}, "from sessions-1"},
		{[]string{"sessions", "sessions-0", "--master"}, "from sessions-1"},
		{[]string{"sessions"}, "from sessions-0"},
	} {
		var out strings.Builder
		args := append(append([]string{"cli"}, tc.args...), "--", "GET", "k")
		if err := RunWith(t.Context(), args, &out, connector); err != nil || out.String() != `"`+tc.want+`"`+"\n" {
			t.Errorf("%q: %q, %v; want %q", tc.args, out.String(), err, tc.want)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"cart", "sessions-0"}, "pod sessions-0 is not a pod of RedisCluster cart"},
		{[]string{"watch", "--master"}, "a RedisSentinel has no master"},
		{[]string{"watch"}, "RedisSentinel watch has no pod running"},
	} {
		var out strings.Builder
		err := RunWith(t.Context(), append(append([]string{"cli"}, tc.args...), "--", "GET", "k"), &out, connector)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.args, err, tc.want)
		}
	}
}
