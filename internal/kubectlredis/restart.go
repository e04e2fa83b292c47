package kubectlredis

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
)

// RestartAnnotation asks the operator for a rolling restart of the resource's pods: the
// builders copy its value into the pod template of each of its StatefulSets, so that a new
// value is a new template revision, rolled as the operator rolls any other (masters last, each
// once it handed its role over). Its value is the time of the request, in RFC 3339.
const RestartAnnotation = builder.AnnotationRestartedAt

// Restart asks for a rolling restart of the resource (pod ""), or deletes one of its pods.
func (p Plugin) Restart(ctx context.Context, name, kind, pod string) error {
	res, err := findResource(ctx, p.Client, p.Namespace, name, kind)
	if err != nil {
		return err
	}
	if pod != "" {
		return p.restartPod(ctx, res, pod)
	}
	at := p.now().UTC().Truncate(time.Second)
	// Two requests within a second would write the same value, which rolls nothing: the
	// second goes one second past the first.
	if last, err := time.Parse(time.RFC3339, res.obj.GetAnnotations()[RestartAnnotation]); err == nil && !at.After(last) {
		at = last.Add(time.Second)
	}
	value := at.Format(time.RFC3339)
	patch, err := restartPatch(value)
	if err != nil {
		return err
	}
	if err := p.Client.Patch(ctx, res.obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("annotate %s %s: %w", res.kind, name, err)
	}
	_, err = fmt.Fprintf(p.Out, "%s %s: rolling restart requested (restarted-at %s)\n%s", res.kind, name, value, restartHow(res))
	return err
}

// restartPatch is the merge patch of the restart request: the one annotation, nothing else.
func restartPatch(value string) ([]byte, error) {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{RestartAnnotation: value}}})
	if err != nil {
		return nil, fmt.Errorf("patch: %w", err)
	}
	return patch, nil
}

// restartHow says how the operator goes about a rolling restart of the resource.
func restartHow(res *resource) string {
	if paused(res) {
		return fmt.Sprintf("WARNING: %s is paused (%s=true): nothing restarts until kubectl redis resume %s.\n",
			res.obj.GetName(), builder.SkipReconcileAnnotationOf(res.kind), res.obj.GetName())
	}
	switch res.kind {
	case "RedisCluster":
		return "The operator replaces the replicas first, then each master once a replica in sync has taken its shard over; " +
			"kubectl redis status " + res.obj.GetName() + " follows it.\n"
	case "RedisReplication":
		return "The operator replaces the replicas first, then the master once it has handed its role to a replica in sync " +
			"(sentinels, where they watch, fail it over); kubectl redis status " + res.obj.GetName() + " follows it.\n"
	case "RedisSentinel":
		return "The StatefulSet replaces the sentinels one at a time.\n"
	}
	return "The StatefulSet replaces the pod: Redis is unavailable until it is back.\n"
}

func paused(res *resource) bool {
	return res.obj.GetAnnotations()[builder.SkipReconcileAnnotationOf(res.kind)] == "true"
}

// restartPod deletes one pod of the resource, after checking that it is one, and says what the
// operator does about its role.
func (p Plugin) restartPod(ctx context.Context, res *resource, name string) error {
	pod, err := p.resourcePod(ctx, res, name)
	if err != nil {
		return err
	}
	role := pod.Labels[builder.LabelRedisRole]
	if pod.Labels[builder.LabelSetupType] == builder.SetupSentinel {
		role = "sentinel"
	}
	uid := pod.UID
	if err := p.Kube.CoreV1().Pods(p.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil {
		return fmt.Errorf("delete pod %s: %w", pod.Name, err)
	}
	_, err = fmt.Fprintf(p.Out, "%s %s: pod %s (%s) deleted; %s\n", res.kind, res.obj.GetName(), pod.Name, dash(role), podRestartHow(res, role))
	return err
}

// podRestartHow says what follows the deletion of a pod of the given role.
func podRestartHow(res *resource, role string) string {
	const recreated = "the StatefulSet recreates it"
	if paused(res) && role == builder.RedisRoleMaster && res.kind != "Redis" {
		return recreated + ", but the resource is paused: the operator hands nothing over, Redis (or the sentinels) fail over by themselves"
	}
	switch {
	case role == "sentinel":
		return recreated + "; the other sentinels keep watching meanwhile"
	case res.kind == "Redis":
		return recreated + "; Redis is unavailable until it is back"
	case role == builder.RedisRoleSlave:
		return recreated + " and it resyncs from its master"
	case role != builder.RedisRoleMaster:
		return recreated
	case res.kind == "RedisCluster":
		return "it was a master: the operator hands its shard over to a replica in sync (CLUSTER FAILOVER) before it stops, and " + recreated
	case hasSentinels(res):
		return "it was the master: the sentinels fail it over, and " + recreated
	}
	return "it was the master: the operator hands its role over to a replica in sync (FAILOVER TO) before it stops, and " + recreated
}

func hasSentinels(res *resource) bool {
	r, ok := res.obj.(*v1beta2.RedisReplication)
	return ok && r.Spec.Sentinel != nil
}

// resourcePod gets the pod name and checks, by its labels, that it is a pod of the resource.
func (p Plugin) resourcePod(ctx context.Context, res *resource, name string) (*corev1.Pod, error) {
	pod, err := p.Kube.CoreV1().Pods(p.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("no pod %q in namespace %q", name, p.Namespace)
	}
	if err != nil {
		return nil, fmt.Errorf("get pod %s: %w", name, err)
	}
	if err := checkPodOf(res, pod); err != nil {
		return nil, err
	}
	return pod, nil
}

// checkPodOf refuses a pod that is not one of the resource's: its instance label names
// another resource, or its setup type is of another kind.
func checkPodOf(res *resource, pod *corev1.Pod) error {
	instance, setup := pod.Labels[builder.LabelInstance], pod.Labels[builder.LabelSetupType]
	if instance == res.obj.GetName() && slices.Contains(res.setupTypes, setup) {
		return nil
	}
	owner := "no Redis resource (it has no " + builder.LabelInstance + " label)"
	if instance != "" {
		owner = fmt.Sprintf("%q (%s=%s)", instance, builder.LabelSetupType, dash(setup))
	}
	return fmt.Errorf("pod %s is not a pod of %s %s: it belongs to %s", pod.Name, res.kind, res.obj.GetName(), owner)
}

func (p Plugin) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}
