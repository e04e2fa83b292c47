//go:build integration

package kubectlredis

import (
	"context"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/redis/redistest"
)

// TestCliAgainstRedis: cli logs in with the resource's password and prints a real server's
// replies as redis-cli does, in a session read from standard input and for one command after
// --, which makes the plugin fail when Redis replies with an error. The port-forward is
// replaced by the server's own address; the rest is the plugin's path.
func TestCliAgainstRedis(t *testing.T) {
	server := redistest.StartServer(t, redistest.ServerOptions{Password: "cli-pw"})
	cache := &v1beta2.Redis{ObjectMeta: objectMeta("shop", "cache", nil)}
	cache.Spec.KubernetesConfig.ExistingPasswordSecret = &v1beta2.ExistingPasswordSecret{Name: ptr("cache-pw"), Key: ptr("pw")}
	kube := kubefake.NewClientset(
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cache-0",
			Labels: map[string]string{builder.LabelInstance: "cache", builder.LabelSetupType: builder.SetupStandalone}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cache-pw"}, Data: map[string][]byte{"pw": []byte("cli-pw\n")}})
	c := fakeClient(t, cache)
	connector := func(_ invocation, out io.Writer) (Plugin, error) {
		p := Plugin{Client: c, Kube: kube, Namespace: "shop", Out: out}
		p.dial = func(ctx context.Context, res *resource, _ *corev1.Pod) (redisConn, error) {
			password, err := p.password(ctx, res.secret)
			if err != nil {
				return nil, err
			}
			rdb, err := dialRedis(ctx, net.JoinHostPort(server.Host, strconv.Itoa(server.Port)), password, true, nil)
			if err != nil {
				return nil, err
			}
			return podConn{Client: rdb, stop: func() {}}, nil
		}
		return p, nil
	}

	var out strings.Builder
	in := strings.NewReader("SET greeting \"hello \\\"world\\\"\"\nGET greeting\nGET missing\nRPUSH l a b c\nLRANGE l 0 -1\n" +
		"HSET h f v\nNOSUCH\nINFO server\n")
	if err := RunWithInput(t.Context(), []string{"cli", "cache"}, in, &out, connector); err != nil {
		t.Fatal(err)
	}
	want := []string{`"OK"`, `"hello \"world\""`, "(nil)", "(integer) 3", "1) \"a\"\n2) \"b\"\n3) \"c\"", "(integer) 1",
		"(error) ERR unknown command 'NOSUCH'", "# Server\nredis_version:"}
	got := out.String()
	for _, w := range want {
		i := strings.Index(got, w)
		if i < 0 {
			t.Fatalf("output lacks %q (in order):\n%s", w, out.String())
		}
		got = got[i+len(w):]
	}

	out.Reset()
	if err := RunWith(t.Context(), []string{"cli", "cache", "cache-0", "--", "GET", "greeting"}, &out, connector); err != nil {
		t.Fatal(err)
	}
	if out.String() != "\"hello \\\"world\\\"\"\n" {
		t.Errorf("one command: %q", out.String())
	}
	out.Reset()
	err := RunWith(t.Context(), []string{"cli", "cache", "--", "INCR", "greeting"}, &out, connector)
	if err == nil || !strings.Contains(err.Error(), "INCR: redis replied with an error") ||
		!strings.HasPrefix(out.String(), "(error) ERR value is not an integer") {
		t.Errorf("an error reply: %q, %v", out.String(), err)
	}
}
