package controller

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/events"
	"github.com/rediskube/redis-operator/internal/status"
)

// ConditionFailover tells the outcome of the last failover asked with the annotation
// redis.opstreelabs.in/failover: True once done, False while it is refused as unsafe.
const ConditionFailover = "Failover"

// Reasons of ConditionFailover.
const (
	ReasonFailoverDone    = "FailoverDone"
	ReasonFailoverRefused = "FailoverRefused"
	ReasonFailoverInvalid = "FailoverInvalid"
	// ReasonFailoverRequested is the Progressing reason while a requested failover runs.
	ReasonFailoverRequested = "FailoverRequested"
)

// failoverRequest is the part of a requested failover both kinds share: reading the request,
// noting the replica chosen, and closing the request with an event and the condition. What a
// failover is, and when it is safe, each kind's plan decides.
type failoverRequest struct {
	client   client.Client
	recorder recorder.EventRecorder
	obj      client.Object
	// conditions of the resource's status.
	conditions *[]metav1.Condition
	// warned keeps a refusal to one Warning event.
	warned *events.Warned
}

// asked returns the pod the request names and the replica the operator chose in an earlier
// pass ("" before it chose).
func (f failoverRequest) asked() (target, chosen string, ok bool) {
	a := f.obj.GetAnnotations()
	target, ok = a[builder.AnnotationFailover]
	return target, a[builder.AnnotationFailoverTarget], ok
}

// choose notes the replica the failover goes to before it is asked to, so that a later pass
// recognises the request as fulfilled once that replica is master.
func (f failoverRequest) choose(ctx context.Context, pod string) error {
	if _, chosen, _ := f.asked(); chosen == pod {
		return nil
	}
	return f.annotate(ctx, map[string]any{builder.AnnotationFailoverTarget: pod})
}

// done closes the request: master is the master now. The outcome is written to the status
// first and the annotations are removed only by a later pass that reads it back: a reconcile
// that read the resource before the outcome was written (the cache may hand out an older
// status) still sees the request and writes the outcome again, rather than writing a status
// without it. again asks the caller to come back for that pass.
func (f failoverRequest) done(ctx context.Context, master string) (again bool, err error) {
	return f.close(ctx, master, builder.AnnotationFailover, builder.AnnotationFailoverTarget)
}

// doneKeeping closes the request as done does but keeps AnnotationFailoverTarget, which tells
// the planner to leave master its shard.
func (f failoverRequest) doneKeeping(ctx context.Context, master string) (again bool, err error) {
	return f.close(ctx, master, builder.AnnotationFailover)
}

// forget drops AnnotationFailoverTarget once the pod it names is master no more.
func (f failoverRequest) forget(ctx context.Context) error {
	return f.annotate(ctx, map[string]any{builder.AnnotationFailoverTarget: nil})
}

func (f failoverRequest) close(ctx context.Context, master string, remove ...string) (bool, error) {
	message := fmt.Sprintf("%s is the master, as asked with %s", master, builder.AnnotationFailover)
	if !f.recorded(metav1.ConditionTrue, ReasonFailoverDone, message) {
		f.setCondition(metav1.ConditionTrue, ReasonFailoverDone, message)
		f.warned.Cleared(f.obj.GetUID(), ConditionFailover)
		f.recorder.Eventf(f.obj, nil, corev1.EventTypeNormal, ReasonFailoverDone, "Failover", "%s", message)
		log.FromContext(ctx).Info("requested failover done", "master", master)
		return true, nil
	}
	return false, f.annotate(ctx, removal(remove...))
}

// refuse says, once per reason, why the failover is not made. An unsafe request stays and is
// made once safe (remove the annotation to cancel it); an invalid one is dropped, once the
// status that says why has been read back (as done does).
func (f failoverRequest) refuse(ctx context.Context, message string, invalid bool) (again bool, err error) {
	reason := ReasonFailoverRefused
	if invalid {
		reason = ReasonFailoverInvalid
	} else {
		message += "; the failover is made once it is safe, or cancelled by removing the annotation " + builder.AnnotationFailover
	}
	if invalid && f.recorded(metav1.ConditionFalse, reason, message) {
		return false, f.annotate(ctx, removal(builder.AnnotationFailover, builder.AnnotationFailoverTarget))
	}
	f.setCondition(metav1.ConditionFalse, reason, message)
	if f.warned.FirstWarning(f.obj.GetUID(), ConditionFailover, message) {
		f.recorder.Eventf(f.obj, nil, corev1.EventTypeWarning, reason, "Failover", "%s", message)
	}
	return invalid, nil
}

// recorded reports whether the status read says this outcome already.
func (f failoverRequest) recorded(status metav1.ConditionStatus, reason, message string) bool {
	c := meta.FindStatusCondition(*f.conditions, ConditionFailover)
	return c != nil && c.Status == status && c.Reason == reason && c.Message == message
}

func removal(keys ...string) map[string]any {
	m := map[string]any{}
	for _, k := range keys {
		m[k] = nil
	}
	return m
}

func (f failoverRequest) setCondition(conditionStatus metav1.ConditionStatus, reason, message string) {
	status.NewConditions(f.conditions, f.obj.GetGeneration()).Set(ConditionFailover, conditionStatus, reason, message)
}

// annotate merge-patches annotations of a copy of the resource (nil removes one), leaving the
// reconciled object, whose status is written at the end, as it is.
func (f failoverRequest) annotate(ctx context.Context, annotations map[string]any) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	if err != nil {
		return err
	}
	obj, _ := f.obj.DeepCopyObject().(client.Object)
	if err := f.client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("annotate for the requested failover: %w", err)
	}
	return nil
}
