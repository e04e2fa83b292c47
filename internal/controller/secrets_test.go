package controller

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// A Secret the cache lacks is read from the API server (a user's Secret, named by a resource),
// unless the Get says it is one the operator owns: every owned Secret is in the cache, so a
// resource without one costs no request per reconcile.
func TestReadNamedSecretsAsksTheAPIServerOnlyForSecretsItDoesNotOwn(t *testing.T) {
	ctx := context.Background()
	cached := fake.NewClientBuilder().Build()
	api := &countingReader{Reader: fake.NewClientBuilder().WithObjects(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "users-password"}}).Build()}
	c := ReadNamedSecrets(cached, api)
	key := client.ObjectKey{Namespace: "ns", Name: "users-password"}
	if err := c.Get(ctx, key, &corev1.Secret{}); err != nil {
		t.Fatalf("a user's Secret outside the cache: %v", err)
	}
	if api.gets != 1 {
		t.Fatalf("%d reads from the API server, want 1", api.gets)
	}
	err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "cache-redis-auth"}, &corev1.Secret{}, OwnedSecret)
	if !apierrors.IsNotFound(err) {
		t.Fatalf("an owned Secret that does not exist: %v, want NotFound", err)
	}
	if api.gets != 1 {
		t.Fatalf("an owned Secret's miss was read from the API server (%d reads)", api.gets)
	}
}

type countingReader struct {
	client.Reader
	gets int
}

func (r *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.gets++
	return r.Reader.Get(ctx, key, obj, opts...)
}
