package kubectlredis

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
)

// resource is what the plugin needs of a Redis resource, whatever its kind.
type resource struct {
	obj        client.Object
	kind       string
	setupTypes []string // the redis_setup_type labels of its pods
	secret     *v1beta2.ExistingPasswordSecret
	// sentinelSecret is the password of a replication's embedded sentinels.
	sentinelSecret *v1beta2.ExistingPasswordSecret
	// tls is the resource's TLS settings (its pods, sentinels included, serve TLS only), nil
	// without TLS.
	tls           *v1beta2.TLSConfig
	conditions    []metav1.Condition
	state, reason string
}

// kinds in the order a bare name is looked up.
var kinds = []string{"RedisCluster", "RedisReplication", "RedisSentinel", "Redis"}

func newObject(kind string) client.Object {
	switch kind {
	case "RedisCluster":
		return &v1beta2.RedisCluster{}
	case "RedisReplication":
		return &v1beta2.RedisReplication{}
	case "RedisSentinel":
		return &v1beta2.RedisSentinel{}
	case "Redis":
		return &v1beta2.Redis{}
	}
	return nil
}

// normalizeKind accepts kubectl-style names: rediscluster, redisclusters, RedisCluster, redis.
func normalizeKind(kind string) (string, error) {
	k := strings.TrimSuffix(strings.ToLower(kind), "s")
	for _, known := range kinds {
		if strings.EqualFold(known, k) || strings.EqualFold(known, kind) {
			return known, nil
		}
	}
	return "", fmt.Errorf("unknown kind %q (want one of %s)", kind, strings.Join(kinds, ", "))
}

// findResource gets the resource named name: of the given kind, or of the only kind that has
// one by that name.
func findResource(ctx context.Context, c client.Reader, namespace, name, kind string) (*resource, error) {
	candidates := kinds
	if kind != "" {
		k, err := normalizeKind(kind)
		if err != nil {
			return nil, err
		}
		candidates = []string{k}
	}
	return findAmong(ctx, c, namespace, name, candidates)
}

// notFoundError: no resource of the kinds looked up has the name.
type notFoundError struct {
	name, namespace string
	kinds           []string
}

func (e *notFoundError) Error() string {
	return fmt.Sprintf("no %s named %q in namespace %q", strings.Join(e.kinds, ", "), e.name, e.namespace)
}

// findAmong gets the resource named name of the only kind among candidates that has one.
func findAmong(ctx context.Context, c client.Reader, namespace, name string, candidates []string) (*resource, error) {
	var found []*resource
	for _, k := range candidates {
		obj := newObject(k)
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("get %s %s/%s: %w", k, namespace, name, err)
		}
		found = append(found, describe(obj))
	}
	switch len(found) {
	case 0:
		return nil, &notFoundError{name: name, namespace: namespace, kinds: candidates}
	case 1:
		return found[0], nil
	}
	var names []string
	for _, r := range found {
		names = append(names, r.kind)
	}
	return nil, errors.New("several resources are named " + name + " (" + strings.Join(names, ", ") + "): say which with --kind")
}

func describe(obj client.Object) *resource {
	switch o := obj.(type) {
	case *v1beta2.RedisCluster:
		return &resource{obj: o, kind: "RedisCluster", setupTypes: []string{builder.SetupCluster}, secret: o.Spec.KubernetesConfig.ExistingPasswordSecret,
			tls: o.Spec.TLS, conditions: o.Status.Conditions, state: o.Status.State, reason: o.Status.Reason}
	case *v1beta2.RedisReplication:
		r := &resource{obj: o, kind: "RedisReplication", setupTypes: []string{builder.SetupReplication, builder.SetupSentinel},
			secret: o.Spec.KubernetesConfig.ExistingPasswordSecret, tls: o.Spec.TLS, conditions: o.Status.Conditions, state: o.Status.State, reason: o.Status.Reason}
		if o.Spec.Sentinel != nil {
			r.sentinelSecret = o.Spec.Sentinel.ExistingPasswordSecret
		}
		return r
	case *v1beta2.RedisSentinel:
		return &resource{obj: o, kind: "RedisSentinel", setupTypes: []string{builder.SetupSentinel}, secret: o.Spec.KubernetesConfig.ExistingPasswordSecret,
			tls: o.Spec.TLS, conditions: o.Status.Conditions, state: o.Status.State, reason: o.Status.Reason}
	case *v1beta2.Redis:
		return &resource{obj: o, kind: "Redis", setupTypes: []string{builder.SetupStandalone}, secret: o.Spec.KubernetesConfig.ExistingPasswordSecret,
			tls: o.Spec.TLS, conditions: o.Status.Conditions, state: o.Status.State, reason: o.Status.Reason}
	}
	return nil
}
