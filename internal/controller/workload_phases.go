package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/reconcile"
	"github.com/rediskube/redis-operator/internal/redis"
)

// workloadSpec is what the phases every kind shares read of the resource: the kind gives it
// when it makes its scope, so that those phases never look at a kind's type.
type workloadSpec struct {
	// owner is the resource the phases report on and own objects for.
	owner client.Object
	// kind names the resource's kind in events and logs ("Redis", "RedisCluster", ...).
	kind string
	// skipAnnotation stops every later phase while it is "true"; skipWhat names the resource in
	// the condition that says so.
	skipAnnotation, skipWhat string
	passwordSecret           *v1beta2.ExistingPasswordSecret
	tls                      *v1beta2.TLSConfig
	acl                      *v1beta2.ACLConfig
	// aclForSentinels: sentinels log in to these pods with the ACL (a replication's own).
	aclForSentinels bool
	// storage is the spec's storage (nil without): what a deletion keeps.
	storage *v1beta2.Storage
	// port is the Redis port of the resource's pods.
	port int
	// pods lists the resource's Redis pods (a cluster's leaders, then its followers); nil
	// for a kind without them.
	pods func(context.Context) ([]corev1.Pod, error)
	// sentinels lists the sentinels that log in to those pods (nil: none do).
	sentinels func(context.Context) ([]watchingSentinels, error)
}

// resolved is what the shared phases found, read by the phases after them.
type resolved struct {
	password string
	tls      *tlsSettings
	// acl is what the acl phase found in spec.acl.secret.
	acl      aclState
	objects  *builder.Objects
	buildErr error
	storage  storageOutcome
}

// auth is how the operator logs in to the resource's pods.
func (w *workloadScope) auth() redis.Auth { return w.acl.auth(w.password) }

// endpointOf is how to reach the Redis at host on the resource's port: its login and its TLS.
func (w *workloadScope) endpointOf(host string) redis.Endpoint {
	return redis.NewEndpoint(host, w.spec.port, w.auth()).WithTLS(w.tls.clientConfig())
}

// sharedPhase is a phase every kind runs the same way, written once over the workloadScope.
func sharedPhase[S workloadScoped](name string, run func(context.Context, *workloadScope) (bool, error)) reconcile.Phase[S] {
	return reconcile.Phase[S]{Name: name, Run: func(ctx context.Context, s S) (bool, error) { return run(ctx, s.workload()) }}
}

// finalizeIfDeleted lets a deleted resource go, its claims deleted unless the spec keeps them.
func (d *Dependencies) finalizeIfDeleted(ctx context.Context, w *workloadScope) (bool, error) {
	return d.finalizeDeleted(ctx, w.spec.owner, w.spec.kind, w.spec.storage, w.Requeuer(ctx))
}

// skipIfAnnotated stops every later phase while the kind's skip annotation is "true".
func (d *Dependencies) skipIfAnnotated(_ context.Context, w *workloadScope) (bool, error) {
	return skipWhileAnnotated(w.spec.owner, w.spec.skipAnnotation, w.spec.skipWhat, w.Conditions), nil
}

// ensureFinalizer adds the operator's finalizer, patching metadata.finalizers only.
func (d *Dependencies) ensureFinalizer(ctx context.Context, w *workloadScope) (bool, error) {
	return false, addFinalizer(ctx, d.Client, w.spec.owner)
}

func (d *Dependencies) resolvePassword(ctx context.Context, w *workloadScope) (stop bool, err error) {
	w.password, stop, err = resolvePasswordOf(ctx, d.Client, d.Recorder, w.spec.owner, w.spec.passwordSecret, w.Conditions)
	return stop, err
}

func (d *Dependencies) resolveTLS(ctx context.Context, w *workloadScope) (stop bool, err error) {
	w.tls, stop, err = d.resolveTLSOf(ctx, w.spec.owner, w.spec.tls, w.Conditions)
	return stop, err
}

func (d *Dependencies) resolveACL(ctx context.Context, w *workloadScope) (stop bool, err error) {
	w.acl, stop, err = resolveACLOf(ctx, d.Client, d.Recorder, w.spec.owner, w.spec.acl, w.password, w.spec.aclForSentinels, w.Conditions)
	return stop, err
}

// growStorage grows the volumes to a larger storage request before the objects are applied.
func (d *Dependencies) growStorage(ctx context.Context, w *workloadScope) (bool, error) {
	var err error
	w.storage, err = storageGrowth{c: d.Client, rec: d.Recorder, warned: w.memory.warned}.grow(ctx, w.spec.owner, w.objects, w.Conditions)
	return false, err
}

// applyObjects writes the objects the build phase made.
func (d *Dependencies) applyObjects(ctx context.Context, w *workloadScope) (bool, error) {
	return d.applyBuilt(ctx, w.spec.owner, w.objects, w.buildErr, w.Conditions)
}

// restartStaleExporters gives the exporters a password rotation marked the password the
// objects phase has just written to the auth Secret.
func (d *Dependencies) restartStaleExporters(ctx context.Context, w *workloadScope) (bool, error) {
	pods, err := w.spec.pods(ctx)
	if err != nil {
		return false, err
	}
	return false, exporterRestart{client: d.Client, recorder: d.Recorder}.restartStale(ctx, w.spec.owner, pods)
}

// waitForStorage stops while volumes grow or cannot, and says so.
func (d *Dependencies) waitForStorage(ctx context.Context, w *workloadScope) (bool, error) {
	return storageGrowth{c: d.Client, rec: d.Recorder, warned: w.memory.warned}.wait(w.spec.owner, w.storage, w.Conditions,
		w.Requeuer(ctx)), nil
}

// reloadTLSOn brings a renewed TLS Secret into the running pods, without restarts.
func (d *Dependencies) reloadTLSOn(ctx context.Context, w *workloadScope, pods []corev1.Pod) error {
	return tlsReload{client: d.Client, node: d.redisNode, servedCertificate: d.servedCertificate, recorder: d.Recorder}.reload(ctx, w, pods)
}

// reloadACLOn brings an edit of the ACL Secret into the running pods, without restarts.
func (d *Dependencies) reloadACLOn(ctx context.Context, w *workloadScope, pods []corev1.Pod) error {
	return aclReload{node: d.redisNode, evict: d.evictRedisNode, recorder: d.Recorder}.reload(ctx, w, pods)
}

// rotatePassword changes the running pods' password in place when the Secret's changed, and
// that of the sentinels that log in to them in step with it.
func (d *Dependencies) rotatePassword(ctx context.Context, w *workloadScope) (bool, error) {
	pods := func() ([]corev1.Pod, error) { return w.spec.pods(ctx) }
	var sentinels func() ([]watchingSentinels, error)
	if w.spec.sentinels != nil {
		sentinels = func() ([]watchingSentinels, error) { return w.spec.sentinels(ctx) }
	}
	rotation := passwordRotation{client: d.Client, node: d.redisNode, recorder: d.Recorder, tls: w.tls.clientConfig(), acl: w.acl}
	return rotation.rotateWatched(ctx, w.spec.owner, pods, sentinels, w.spec.port, w.password, w.Conditions,
		func(why string) { w.Requeue(ctx, whileBroken, why) })
}
