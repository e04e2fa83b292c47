package helm

import (
	"context"
	"fmt"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

// The operator installed with rbac.scope=namespace, watching one namespace, runs a Redis with
// a password there on its Roles alone (the Secret read by name, its changes seen by their
// metadata), and may read no Secret and write no StatefulSet in any other namespace,
// kube-system included.
func TestHelmNamespacedRBAC(t *testing.T) {
	ctx := context.Background()
	ns := sb.Namespace(t, "scoped")
	installOperator(t, "--set", "rbac.scope=namespace", "--set", "redisOperator.watchNamespace="+ns)
	t.Cleanup(func() { sb.MustHelm(t, "uninstall", "redis-operator", "-n", operatorNamespace, "--wait") })

	account := "system:serviceaccount:" + operatorNamespace + ":redis-operator"
	may := func(verb, resource, namespace string) bool {
		group := ""
		if resource == "statefulsets" {
			group = "apps"
		}
		t.Helper()
		review, err := sb.Kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: account, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + operatorNamespace},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Group: group, Resource: resource, Namespace: namespace},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return review.Status.Allowed
	}
	for _, c := range []struct {
		verb, resource, namespace string
		want                      bool
	}{
		{"get", "secrets", ns, true},
		{"create", "statefulsets", ns, true},
		{"get", "secrets", "kube-system", false},
		{"list", "secrets", "", false},
		{"create", "statefulsets", "kube-system", false},
		{"create", "configmaps", "default", false},
		{"get", "secrets", operatorNamespace, true}, // the webhook's certificate
	} {
		if got := may(c.verb, c.resource, c.namespace); got != c.want {
			t.Errorf("may %s %s in %q: %v, want %v", c.verb, c.resource, c.namespace, got, c.want)
		}
	}

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "solo-auth", Namespace: ns}, Data: map[string][]byte{"password": []byte("first-pass")}}
	if _, err := sb.Kube.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sb.Apply(t, ns, `apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: Redis
metadata: {name: solo}
spec:
  kubernetesConfig:
    image: redis:7.0.15
    redisSecret: {name: solo-auth, key: password}
`)
	solo := &v1beta2.Redis{ObjectMeta: metav1.ObjectMeta{Name: "solo"}}
	waitReady(t, ns, solo, func() []metav1.Condition { return solo.Status.Conditions })
	pod := podsOf(t, ns, "app.kubernetes.io/instance=solo")[0]
	if err := sb.RedisWithPassword(t, pod.Status.PodIP, 6379, "first-pass").Ping(ctx).Err(); err != nil {
		t.Fatalf("PING with the password: %v", err)
	}
	// A rotation reaches the pod: the Secret's change is seen without a cluster-wide watch.
	secret.Data["password"] = []byte("second-pass")
	if _, err := sb.Kube.CoreV1().Secrets(ns).Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	sb.WaitFor(t, ns, "the pod requires the new password", 2*time.Minute, func(ctx context.Context) (bool, string, error) {
		err := sb.RedisWithPassword(t, pod.Status.PodIP, 6379, "second-pass").Ping(ctx).Err()
		return err == nil, fmt.Sprint(err), nil
	})

	// A Redis in a namespace the operator does not watch is left alone.
	other := sb.Namespace(t, "unwatched")
	sb.Apply(t, other, `apiVersion: redis.redis.opstreelabs.in/v1beta2
kind: Redis
metadata: {name: ignored}
spec:
  kubernetesConfig:
    image: redis:7.0.15
`)
	time.Sleep(10 * time.Second)
	if _, err := sb.Kube.AppsV1().StatefulSets(other).Get(ctx, "ignored", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the operator made a StatefulSet in a namespace it does not watch: %v", err)
	}
	// Deleted while the operator runs, which removes its finalizer.
	if err := sb.Client.Delete(ctx, solo); err != nil {
		t.Fatal(err)
	}
	waitGone(t, ns)
}
