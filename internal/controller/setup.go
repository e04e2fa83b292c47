package controller

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlbuilder "sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
)

// passwordSecretIndex indexes custom resources by the name of their password Secret, so that
// a change to a Secret reaches the resources that use it.
const passwordSecretIndex = "spec.kubernetesConfig.redisSecret.name" //nolint:gosec // G101: a field index name, no credential

// SetupWithManager registers the RedisCluster controller.
func (r *RedisClusterReconciler) SetupWithManager(mgr ctrl.Manager) error {
	b, err := watchKind(mgr, "rediscluster", &v1beta2.RedisCluster{}, &v1beta2.RedisClusterList{}, builder.SetupCluster,
		func(obj client.Object) *v1beta2.ExistingPasswordSecret {
			return obj.(*v1beta2.RedisCluster).Spec.KubernetesConfig.ExistingPasswordSecret
		})
	if err != nil {
		return err
	}
	return b.Complete(r)
}

// SetupWithManager registers the Redis controller.
func (r *RedisReconciler) SetupWithManager(mgr ctrl.Manager) error {
	b, err := watchKind(mgr, "redis", &v1beta2.Redis{}, &v1beta2.RedisList{}, builder.SetupStandalone,
		func(obj client.Object) *v1beta2.ExistingPasswordSecret {
			return obj.(*v1beta2.Redis).Spec.KubernetesConfig.ExistingPasswordSecret
		})
	if err != nil {
		return err
	}
	return b.Complete(r)
}

// SetupWithManager registers the RedisReplication controller.
func (r *RedisReplicationReconciler) SetupWithManager(mgr ctrl.Manager) error {
	b, err := watchKind(mgr, "redisreplication", &v1beta2.RedisReplication{}, &v1beta2.RedisReplicationList{}, builder.SetupReplication,
		func(obj client.Object) *v1beta2.ExistingPasswordSecret {
			return obj.(*v1beta2.RedisReplication).Spec.KubernetesConfig.ExistingPasswordSecret
		})
	if err != nil {
		return err
	}
	// A RedisSentinel that starts or stops monitoring changes who may promote.
	return b.Watches(&v1beta2.RedisSentinel{}, handler.EnqueueRequestsFromMapFunc(
		func(_ context.Context, obj client.Object) []reconcile.Request {
			cfg := obj.(*v1beta2.RedisSentinel).Spec.RedisSentinelConfig
			if cfg == nil || cfg.RedisReplicationName == "" {
				return nil
			}
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: cfg.RedisReplicationName}}}
		})).Complete(r)
}

// watchKind registers a kind's controller: it watches the resources and what they own, their
// pods (owned by StatefulSets, mapped back by their instance label) and the password Secrets
// they read (through a field index on the Secret's name).
func watchKind(mgr ctrl.Manager, name string, obj client.Object, list client.ObjectList, setupType string,
	passwordSecret func(client.Object) *v1beta2.ExistingPasswordSecret) (*ctrlbuilder.Builder, error) {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), obj, passwordSecretIndex,
		func(o client.Object) []string { return secretNames(passwordSecret(o)) }); err != nil {
		return nil, fmt.Errorf("index %s by password Secret: %w", name, err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(obj).
		Owns(&appsv1.StatefulSet{}).
		Owns(&corev1.Service{}).
		Owns(&corev1.ConfigMap{}).
		Owns(&corev1.Secret{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(podToInstance(setupType))).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(secretToUsers(mgr.GetClient(), list))).
		Named(name), nil
}

// podToInstance maps a pod to the custom resource named by its instance label, for pods of the
// given setup type: pods are owned by StatefulSets, not by the resource itself.
func podToInstance(setupType string) handler.MapFunc {
	return func(_ context.Context, obj client.Object) []reconcile.Request {
		labels := obj.GetLabels()
		instance := labels[builder.LabelInstance]
		if instance == "" || labels[builder.LabelSetupType] != setupType || labels[builder.LabelManagedBy] != builder.ManagedByValue {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: instance}}}
	}
}

// secretToUsers maps a Secret to the resources of a kind whose password it holds.
func secretToUsers(c client.Client, list client.ObjectList) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		l := list.DeepCopyObject().(client.ObjectList)
		if err := c.List(ctx, l, client.InNamespace(obj.GetNamespace()), client.MatchingFields{passwordSecretIndex: obj.GetName()}); err != nil {
			return nil
		}
		items, _ := objectsOf(l)
		requests := make([]reconcile.Request, 0, len(items))
		for _, item := range items {
			requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(item)})
		}
		return requests
	}
}

func secretNames(ref *v1beta2.ExistingPasswordSecret) []string {
	if ref == nil || ref.Name == nil || *ref.Name == "" {
		return nil
	}
	return []string{*ref.Name}
}
