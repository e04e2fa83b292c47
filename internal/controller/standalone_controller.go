package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/reconcile"
	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/status"
)

// Status strings of a standalone Redis.
const (
	StandaloneStateInitializing = "Initializing"
	StandaloneStateReady        = "Ready"
	StandaloneStateFailed       = "Failed"
)

// SkipReconcileAnnotation stops all action on a Redis while "true".
const SkipReconcileAnnotation = builder.AnnotationSkipReconcileRedis

// RedisReconciler runs a standalone Redis: one pod, its Services, config and optional volume.
type RedisReconciler struct {
	// Dependencies are the clients and memory every kind's reconciler shares.
	Dependencies
}

type redisScope struct {
	workloadScope
	cr  *v1beta2.Redis
	pod *corev1.Pod
	// restore is what the restore phase decided of spec.restore.
	restore restoreState
}

func (r *RedisReconciler) phases() []reconcile.Phase[*redisScope] {
	return []reconcile.Phase[*redisScope]{
		sharedPhase[*redisScope]("deletion", r.finalizeIfDeleted),
		sharedPhase[*redisScope]("skip-reconcile", r.skipIfAnnotated),
		sharedPhase[*redisScope]("finalizer", r.ensureFinalizer),
		sharedPhase[*redisScope]("password", r.resolvePassword),
		sharedPhase[*redisScope]("tls", r.resolveTLS),
		sharedPhase[*redisScope]("acl", r.resolveACL),
		sharedPhase[*redisScope]("password-rotation", r.rotatePassword),
		{Name: "restore", Run: r.resolveRestoreOf},
		{Name: "build", Run: r.buildObjects},
		sharedPhase[*redisScope]("storage", r.growStorage),
		sharedPhase[*redisScope]("objects", r.applyObjects),
		sharedPhase[*redisScope]("exporter-password", r.restartStaleExporters),
		sharedPhase[*redisScope]("storage-wait", r.waitForStorage),
		{Name: "pod", Run: r.observePod},
		{Name: "restored", Run: r.markRestoredOf},
		{Name: "tls-reload", Run: r.reloadTLS},
		{Name: "acl-reload", Run: r.reloadACL},
		{Name: "dynamic-config", Run: r.applyDynamicConfig},
		{Name: "health", Run: r.checkHealth},
	}
}

// Reconcile runs the phases in order and writes the status once, when it changed.
func (r *RedisReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return kindShell[*v1beta2.Redis, *redisScope]{
		newObject: func() *v1beta2.Redis { return &v1beta2.Redis{} },
		newScope: func(cr *v1beta2.Redis, b workloadScope) *redisScope {
			b.spec = workloadSpec{owner: cr, kind: "Redis", skipAnnotation: SkipReconcileAnnotation, skipWhat: "Redis",
				passwordSecret: cr.Spec.KubernetesConfig.ExistingPasswordSecret, tls: cr.Spec.TLS, acl: cr.Spec.ACL,
				storage: cr.Spec.Storage, port: builder.DefaultRedisPort,
				pods: func(ctx context.Context) ([]corev1.Pod, error) { return podsOf(ctx, r.Client, cr.Namespace, cr.Name) }}
			return &redisScope{workloadScope: b, cr: cr}
		},
		phases:   r.phases(),
		liveness: r.Liveness,
		finish:   func(_ context.Context, s *redisScope) { finishRestore(&s.workloadScope, &s.restore) },
		memory:   r.Memory,
	}.reconcile(ctx, r.Client, req)
}

// reloadTLS brings a renewed TLS Secret into the running pod, without a restart.
func (r *RedisReconciler) reloadTLS(ctx context.Context, s *redisScope) (bool, error) {
	return false, r.reloadTLSOn(ctx, &s.workloadScope, []corev1.Pod{*s.pod})
}

// reloadACL brings an edit of the ACL Secret into the running pod, without a restart.
func (r *RedisReconciler) reloadACL(ctx context.Context, s *redisScope) (bool, error) {
	return false, r.reloadACLOn(ctx, &s.workloadScope, []corev1.Pod{*s.pod})
}

func (r *RedisReconciler) buildObjects(_ context.Context, s *redisScope) (bool, error) {
	s.objects, s.buildErr = builder.BuildRedis(builder.RedisInput{CR: s.cr, Password: s.password, ACL: s.acl.content, ACLOperatorUser: s.acl.operatorUser,
		Restore: s.restore.decision.input, RestoredFrom: s.restore.decision.restoredFrom})
	s.acl.keepIn(s.objects, s.cr.Name)
	return false, nil
}

// resolveRestoreOf decides what becomes of spec.restore before the build.
func (r *RedisReconciler) resolveRestoreOf(ctx context.Context, s *redisScope) (bool, error) {
	return r.resolveRestore(ctx, &s.workloadScope, "Redis", s.cr.Name, true, s.cr.Spec.Restore, &s.restore)
}

// markRestoredOf says Restored once the pod is Ready after a restore.
func (r *RedisReconciler) markRestoredOf(_ context.Context, s *redisScope) (bool, error) {
	r.markRestored(&s.workloadScope, &s.restore)
	return false, nil
}

func (r *RedisReconciler) observePod(ctx context.Context, s *redisScope) (bool, error) {
	pods, err := podsOf(ctx, r.Client, s.cr.Namespace, s.cr.Name)
	if err != nil {
		return false, err
	}
	watchLiveness(r.Liveness, s.cr, pods, func(pod *corev1.Pod) redis.Endpoint { return r.endpoint(s, pod) })
	s.cr.Status.ReadyReplicas = countReady(pods)
	if s.cr.Status.ReadyReplicas == 0 {
		message := "waiting for pod " + builder.PodName(s.cr.Name, 0) + " to be ready"
		switch {
		case r.reportPodTrouble(ctx, s.cr, s.Conditions, pods, s.Requeuer(ctx)):
		case s.Conditions.HasServed():
			s.Conditions.Degraded(status.ReasonPodsNotReady, message)
		default:
			s.Conditions.Progressing(status.ReasonPodsNotReady, message)
		}
		return true, nil // the pod watch brings us back
	}
	for i := range pods {
		if podReady(&pods[i]) {
			s.pod = &pods[i]
		}
	}
	return false, nil
}

// node is the Redis of the ready pod.
func (r *RedisReconciler) node(s *redisScope) (RedisNode, error) {
	return r.redisNode(r.endpoint(s, s.pod))
}

// endpoint is how to reach the Redis of the pod: its port, password and TLS.
func (r *RedisReconciler) endpoint(s *redisScope, pod *corev1.Pod) redis.Endpoint {
	return s.endpointOf(pod.Status.PodIP)
}

func (r *RedisReconciler) applyDynamicConfig(ctx context.Context, s *redisScope) (bool, error) {
	if s.cr.Spec.RedisConfig == nil || len(s.cr.Spec.RedisConfig.DynamicConfig) == 0 {
		return false, nil
	}
	c, err := r.node(s)
	if err != nil {
		return false, err
	}
	changed, err := setDynamicConfig(ctx, c, s.cr.Spec.RedisConfig.DynamicConfig)
	if err != nil {
		r.Recorder.Eventf(s.cr, nil, corev1.EventTypeWarning, "DynamicConfigFailed", "ConfigSet", "%v", err)
		return false, err
	}
	if len(changed) > 0 {
		r.Recorder.Eventf(s.cr, nil, corev1.EventTypeNormal, "DynamicConfig", "ConfigSet", "set %v", changed)
	}
	return false, nil
}

// checkHealth is Ready when Redis answers PING with the configured password.
func (r *RedisReconciler) checkHealth(ctx context.Context, s *redisScope) (bool, error) {
	c, err := r.node(s)
	if err == nil {
		readCtx, cancel := r.Liveness.ReadContext(ctx, livenessOwner(s.cr), s.pod.Name)
		err = c.Ping(readCtx)
		cancel()
	}
	if err != nil {
		message := fmt.Sprintf("pod %s does not answer PING: %v", s.pod.Name, err)
		if s.Conditions.HasServed() {
			// It served: an outage, as every kind says of a pod that stops answering.
			s.Conditions.Degraded(status.ReasonRedisUnreachable, message)
		} else {
			s.Conditions.Progressing(status.ReasonRedisUnreachable, message)
		}
		s.Requeue(ctx, whileConverging, "Redis does not answer PING")
		return true, nil
	}
	if s.cr.Status.State != StandaloneStateReady && s.Conditions.FirstReady() {
		r.Recorder.Eventf(s.cr, nil, corev1.EventTypeNormal, "RedisReady", "Observe", "pod %s answers", s.pod.Name)
	}
	s.Conditions.Ready(fmt.Sprintf("pod %s answers PING", s.pod.Name))
	s.Requeue(ctx, healthCheckInterval, "periodic health check")
	return false, nil
}
