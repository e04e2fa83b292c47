package controller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/redis"
)

// Status strings of a standalone Redis.
const (
	StandaloneStateInitializing = "Initializing"
	StandaloneStateReady        = "Ready"
	StandaloneStateFailed       = "Failed"
)

// SkipReconcileAnnotation stops all action on a Redis while "true".
const SkipReconcileAnnotation = "redis.opstreelabs.in/skip-reconcile"

// RedisReconciler runs a standalone Redis: one pod, its Services, config and optional volume.
type RedisReconciler struct {
	Client   client.Client
	Scheme   *runtime.Scheme
	Recorder recorder.EventRecorder
	Redis    *redis.Pool
}

type redisScope struct {
	scopeBase
	cr       *v1beta2.Redis
	password string
	objects  *builder.Objects
	buildErr error
	storage  storageOutcome
	pod      *corev1.Pod
}

func (r *RedisReconciler) phases() []phase[*redisScope] {
	return []phase[*redisScope]{
		{"deletion", r.reconcileDeletion},
		{"skip-reconcile", r.skipReconcile},
		{"finalizer", func(ctx context.Context, s *redisScope) (bool, error) {
			return false, addFinalizer(ctx, r.Client, s.cr)
		}},
		{"password", r.resolvePassword},
		{"password-rotation", r.rotatePassword},
		{"build", r.buildObjects},
		{"storage", r.growStorage},
		{"objects", r.applyObjects},
		{"storage-wait", r.waitForStorage},
		{"pod", r.observePod},
		{"dynamic-config", r.applyDynamicConfig},
		{"health", r.checkHealth},
	}
}

// Reconcile runs the phases in order and writes the status once, when it changed.
func (r *RedisReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return kindShell[*v1beta2.Redis, *redisScope]{
		newScope: func(cr *v1beta2.Redis, b scopeBase) *redisScope { return &redisScope{scopeBase: b, cr: cr} },
		phases:   r.phases(),
	}.reconcile(ctx, r.Client, req)
}

func (r *RedisReconciler) reconcileDeletion(ctx context.Context, s *redisScope) (bool, error) {
	return finalizeDeleted(ctx, r.Client, r.Recorder, s.cr, "Redis", s.cr.Spec.Storage)
}

func (r *RedisReconciler) skipReconcile(_ context.Context, s *redisScope) (bool, error) {
	return skipWhileAnnotated(s.cr, SkipReconcileAnnotation, "Redis", s.conditions), nil
}

// failed is the compatible status of a standalone Redis the user must fix.
func (s *redisScope) failed(message string) {
	s.cr.Status.State, s.cr.Status.Reason = StandaloneStateFailed, message
}

func (r *RedisReconciler) resolvePassword(ctx context.Context, s *redisScope) (stop bool, err error) {
	s.password, stop, err = resolvePasswordOf(ctx, r.Client, r.Recorder, s.cr, s.cr.Spec.KubernetesConfig.ExistingPasswordSecret, s.conditions, s.failed)
	return stop, err
}

// rotatePassword changes a running pod's password in place when the Secret's changed.
func (r *RedisReconciler) rotatePassword(ctx context.Context, s *redisScope) (bool, error) {
	pods := func() ([]corev1.Pod, error) { return podsOf(ctx, r.Client, s.cr.Namespace, s.cr.Name) }
	return passwordRotation{r.Client, r.Redis, r.Recorder}.rotate(ctx, s.cr, pods, builder.DefaultRedisPort, s.password, s.conditions,
		func(why string) { s.requeue(ctx, whileBroken, why) })
}

func (r *RedisReconciler) buildObjects(_ context.Context, s *redisScope) (bool, error) {
	s.objects, s.buildErr = builder.BuildRedis(builder.RedisInput{CR: s.cr, Password: s.password})
	return false, nil
}

// growStorage grows the volumes to a larger storage request before the objects are applied.
func (r *RedisReconciler) growStorage(ctx context.Context, s *redisScope) (bool, error) {
	var err error
	s.storage, err = storageGrowth{r.Client, r.Recorder}.grow(ctx, s.cr, s.objects, s.conditions)
	return false, err
}

func (r *RedisReconciler) applyObjects(ctx context.Context, s *redisScope) (bool, error) {
	return applyBuilt(ctx, r.Client, r.Recorder, s.cr, s.objects, s.buildErr, s.conditions, s.failed)
}

func (r *RedisReconciler) waitForStorage(ctx context.Context, s *redisScope) (bool, error) {
	return storageGrowth{r.Client, r.Recorder}.wait(s.cr, s.storage, s.conditions,
		func(d time.Duration, why string) { s.requeue(ctx, d, why) }), nil
}

func (r *RedisReconciler) observePod(ctx context.Context, s *redisScope) (bool, error) {
	pods, err := podsOf(ctx, r.Client, s.cr.Namespace, s.cr.Name)
	if err != nil {
		return false, err
	}
	s.cr.Status.ReadyReplicas = countReady(pods)
	if s.cr.Status.ReadyReplicas == 0 {
		message := "waiting for pod " + builder.PodName(s.cr.Name, 0) + " to be ready"
		switch {
		case reportPodTrouble(r.Recorder, s.cr, s.conditions, pods):
		case s.cr.Status.State == StandaloneStateReady:
			s.conditions.degraded(ReasonPodsNotReady, message)
		default:
			s.conditions.progressing(ReasonPodsNotReady, message)
		}
		s.cr.Status.State, s.cr.Status.Reason = StandaloneStateInitializing, message
		return true, nil // the pod watch brings us back
	}
	for i := range pods {
		if podReady(&pods[i]) {
			s.pod = &pods[i]
		}
	}
	return false, nil
}

func (r *RedisReconciler) client(s *redisScope) (*redis.Client, error) {
	return r.Redis.Client(podEndpoint(s.pod, builder.DefaultRedisPort, redis.Auth{Password: s.password}))
}

func (r *RedisReconciler) applyDynamicConfig(ctx context.Context, s *redisScope) (bool, error) {
	if s.cr.Spec.RedisConfig == nil || len(s.cr.Spec.RedisConfig.DynamicConfig) == 0 {
		return false, nil
	}
	c, err := r.client(s)
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
	c, err := r.client(s)
	if err == nil {
		err = c.Ping(ctx)
	}
	if err != nil {
		message := fmt.Sprintf("pod %s does not answer PING: %v", s.pod.Name, err)
		s.conditions.progressing(ReasonRedisUnreachable, message)
		s.result.RequeueAfter = whileConverging
		return true, nil
	}
	if s.cr.Status.State != StandaloneStateReady {
		r.Recorder.Eventf(s.cr, nil, corev1.EventTypeNormal, "RedisReady", "Observe", "pod %s answers", s.pod.Name)
	}
	s.cr.Status.State, s.cr.Status.Reason = StandaloneStateReady, "Redis is ready"
	s.conditions.ready(fmt.Sprintf("pod %s answers PING", s.pod.Name))
	s.result.RequeueAfter = healthCheckInterval
	return false, nil
}
