package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
)

// SecretKeyError says that the password Secret or its key is missing: the user has to create
// it, so it is reported in a condition rather than retried in a hot loop.
type SecretKeyError struct {
	Name, Key string
	Err       error
}

func (e *SecretKeyError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("password Secret %s: %v", e.Name, e.Err)
	}
	return fmt.Sprintf("password Secret %s has no key %q", e.Name, e.Key)
}

func (e *SecretKeyError) Unwrap() error { return e.Err }

// readPassword returns the password that kubernetesConfig.redisSecret points at, trimmed of
// the whitespace around it (builder.SecretPassword), or "" when no password is configured.
// Everything the operator renders or sends (redis.conf, the auth Secret its pods and hooks
// read, its own logins) takes the password from here.
func readPassword(ctx context.Context, c client.Reader, namespace string, ref *v1beta2.ExistingPasswordSecret) (string, error) {
	if ref == nil || ref.Name == nil || *ref.Name == "" {
		return "", nil
	}
	key := "password"
	if ref.Key != nil && *ref.Key != "" {
		key = *ref.Key
	}
	var secret corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: *ref.Name}, &secret); err != nil {
		return "", &SecretKeyError{Name: *ref.Name, Key: key, Err: err}
	}
	value, ok := secret.Data[key]
	if !ok || len(value) == 0 {
		return "", &SecretKeyError{Name: *ref.Name, Key: key}
	}
	password := builder.SecretPassword(value)
	if password == "" {
		return "", &SecretKeyError{Name: *ref.Name, Key: key, Err: fmt.Errorf("key %q holds only whitespace", key)}
	}
	return password, nil
}
