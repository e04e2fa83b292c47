package controller

import (
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlbuilder "sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rediskube/redis-operator/api/v1alpha1"
	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/apply"
	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/liveness"
)

// secretsIndex indexes custom resources by the names of the Secrets they read (password and
// TLS), so that a change to a Secret reaches the resources that use it.
const secretsIndex = "spec.secrets"

// SetupWithManager registers the RedisCluster controller.
func (r *RedisClusterReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := requireShared(r.Memory, r.Applier, "RedisClusterReconciler"); err != nil {
		return err
	}
	return setupRestoringKind(mgr, &r.Dependencies, r, "rediscluster", &v1beta2.RedisCluster{}, &v1beta2.RedisClusterList{}, builder.SetupCluster,
		func(obj runtime.Object) restoringSpec {
			spec := obj.(*v1beta2.RedisCluster).Spec
			return restoringSpec{spec.KubernetesConfig.ExistingPasswordSecret, spec.TLS, spec.ACL, spec.Restore}
		})
}

// restoringSpec is what the watches of a kind that restores backups read of a resource.
type restoringSpec struct {
	password *v1beta2.ExistingPasswordSecret
	tls      *v1beta2.TLSConfig
	acl      *v1beta2.ACLConfig
	restore  *v1beta2.RestoreSpec
}

// setupRestoringKind registers the controller of a kind with spec.restore: watchKind's
// watches, and the RedisBackups: one that appears or completes lets the resources that
// restore it go on.
func setupRestoringKind(mgr ctrl.Manager, d *Dependencies, r reconcile.Reconciler, name string, obj client.Object, list client.ObjectList,
	setupType string, specOf func(runtime.Object) restoringSpec) error {
	b, err := watchKind(mgr, d.SecretWatch, d.Liveness, name, obj, list, setupType, func(obj client.Object) []string {
		spec := specOf(obj)
		return secretNames(spec.password, spec.tls, spec.acl)
	})
	if err != nil {
		return err
	}
	return b.Watches(&v1alpha1.RedisBackup{}, restoringFrom(mgr.GetClient(), list,
		func(o runtime.Object) *v1beta2.RestoreSpec { return specOf(o).restore })).Complete(r)
}

// restoringFrom enqueues the resources of a kind (list is its empty list) whose spec.restore
// names the RedisBackup.
func restoringFrom(c client.Client, list client.ObjectList, restoreOf func(runtime.Object) *v1beta2.RestoreSpec) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
		l, ok := list.DeepCopyObject().(client.ObjectList)
		if !ok {
			return nil
		}
		if err := c.List(ctx, l, client.InNamespace(obj.GetNamespace())); err != nil {
			return nil
		}
		items, err := meta.ExtractList(l)
		if err != nil {
			return nil
		}
		var out []reconcile.Request
		for _, item := range items {
			o, ok := item.(client.Object)
			if rs := restoreOf(item); ok && rs != nil && rs.BackupName == obj.GetName() {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(o)})
			}
		}
		return out
	})
}

// SetupWithManager registers the Redis controller.
func (r *RedisReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := requireShared(r.Memory, r.Applier, "RedisReconciler"); err != nil {
		return err
	}
	return setupRestoringKind(mgr, &r.Dependencies, r, "redis", &v1beta2.Redis{}, &v1beta2.RedisList{}, builder.SetupStandalone,
		func(obj runtime.Object) restoringSpec {
			spec := obj.(*v1beta2.Redis).Spec
			return restoringSpec{spec.KubernetesConfig.ExistingPasswordSecret, spec.TLS, spec.ACL, spec.Restore}
		})
}

// SetupWithManager registers the RedisReplication controller.
func (r *RedisReplicationReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := requireShared(r.Memory, r.Applier, "RedisReplicationReconciler"); err != nil {
		return err
	}
	b, err := watchKind(mgr, r.SecretWatch, r.Liveness, "redisreplication", &v1beta2.RedisReplication{}, &v1beta2.RedisReplicationList{}, builder.SetupReplication,
		func(obj client.Object) []string {
			spec := obj.(*v1beta2.RedisReplication).Spec
			return secretNames(spec.KubernetesConfig.ExistingPasswordSecret, spec.TLS, spec.ACL)
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
		})).
		// A RedisBackup that appears or completes lets the replication that restores it go on.
		Watches(&v1alpha1.RedisBackup{}, restoringFrom(mgr.GetClient(), &v1beta2.RedisReplicationList{},
			func(o runtime.Object) *v1beta2.RestoreSpec { return o.(*v1beta2.RedisReplication).Spec.Restore })).
		Complete(r)
}

// watchKind registers a kind's controller: it watches the resources and what they own, their
// pods (owned by StatefulSets, mapped back by their instance label) and the password, TLS and
// ACL Secrets they read (through a field index on the Secrets' names), by their metadata only
// when secrets is set.
func watchKind(mgr ctrl.Manager, secrets *SecretWatch, live *liveness.Watcher, name string, obj client.Object, list client.ObjectList, setupType string,
	secretsOf func(client.Object) []string) (*ctrlbuilder.Builder, error) {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), obj, secretsIndex,
		secretsOf); err != nil {
		return nil, fmt.Errorf("index %s by the Secrets it reads: %w", name, err)
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(obj).
		Owns(&appsv1.StatefulSet{}).
		Owns(&corev1.Service{}).
		Owns(&corev1.ConfigMap{}).
		Owns(&corev1.Secret{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(podToInstance(setupType)))
	if live != nil {
		// Pods that stop answering, or answer again, with no Kubernetes event to say so.
		b = b.WatchesRawSource(live.Source(kindName(obj)))
	}
	if secrets != nil {
		b = b.WatchesRawSource(secrets.source(secretToUsers(mgr.GetClient(), list)))
	} else {
		b = b.Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(secretToUsers(mgr.GetClient(), list)))
	}
	return b.Named(name), nil
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
		if err := c.List(ctx, l, client.InNamespace(obj.GetNamespace()), client.MatchingFields{secretsIndex: obj.GetName()}); err != nil {
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

// secretNames are the names of the password, TLS and ACL Secrets a spec reads.
func secretNames(password *v1beta2.ExistingPasswordSecret, tls *v1beta2.TLSConfig, acl *v1beta2.ACLConfig) []string {
	var out []string
	if password != nil && password.Name != nil && *password.Name != "" {
		out = append(out, *password.Name)
	}
	if tls != nil && tls.Secret.SecretName != "" && !slices.Contains(out, tls.Secret.SecretName) {
		out = append(out, tls.Secret.SecretName)
	}
	if acl != nil && acl.Secret != nil && acl.Secret.SecretName != "" && !slices.Contains(out, acl.Secret.SecretName) {
		out = append(out, acl.Secret.SecretName)
	}
	return out
}

// requireShared refuses to set up a reconciler given no Memory (requireMemory) or no Applier:
// without one it could write none of the objects its resources own.
func requireShared(m *Memory, a *apply.Applier, reconciler string) error {
	if err := requireMemory(m, reconciler); err != nil {
		return err
	}
	if a == nil {
		return fmt.Errorf("%s has no Applier: give it the one apply.NewApplier made for the operator", reconciler)
	}
	return nil
}

// objectsOf returns the items of a list as objects.
func objectsOf(list client.ObjectList) ([]client.Object, error) {
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, fmt.Errorf("read list: %w", err)
	}
	out := make([]client.Object, 0, len(items))
	for _, item := range items {
		obj, ok := item.(client.Object)
		if !ok {
			return nil, fmt.Errorf("list item %T is not an object", item)
		}
		out = append(out, obj)
	}
	return out, nil
}
