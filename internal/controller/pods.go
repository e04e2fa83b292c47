package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/redis"
)

// The pods of the StatefulSets every kind runs: listing them, reaching them, counting them.

// podEndpoint is how to reach the process listening on port in the pod.
func podEndpoint(pod *corev1.Pod, port int, auth redis.Auth) redis.Endpoint {
	return redis.NewEndpoint(pod.Status.PodIP, port, auth)
}

// podsOf lists the live pods of a StatefulSet.
func podsOf(ctx context.Context, c client.Client, namespace, statefulSet string) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(namespace), client.MatchingLabels{builder.LabelApp: statefulSet}); err != nil {
		return nil, fmt.Errorf("list pods of %s: %w", statefulSet, err)
	}
	var out []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && ownedByStatefulSet(&p, statefulSet) {
			out = append(out, p)
		}
	}
	return out, nil
}

// ownedByStatefulSet: the StatefulSet named is the pod's controller.
func ownedByStatefulSet(pod *corev1.Pod, statefulSet string) bool {
	for _, ref := range pod.OwnerReferences {
		if ref.Kind == "StatefulSet" && ref.Name == statefulSet && ref.Controller != nil && *ref.Controller {
			return true
		}
	}
	return false
}

// countRunning counts the pods that have an address and a running container: Redis may answer.
func countRunning(pods []corev1.Pod) int32 {
	return int32(len(runningPods(pods))) //nolint:gosec // a StatefulSet's pods, far fewer than MaxInt32
}

// runningPods are the pods that have an address and a running container.
func runningPods(pods []corev1.Pod) []corev1.Pod {
	var out []corev1.Pod
	for i := range pods {
		if pods[i].Status.PodIP != "" && pods[i].Status.Phase == corev1.PodRunning {
			out = append(out, pods[i])
		}
	}
	return out
}

// countReady counts the pods that have an address and are Ready.
func countReady(pods []corev1.Pod) int32 {
	var n int32
	for i := range pods {
		if podReady(&pods[i]) {
			n++
		}
	}
	return n
}

// podReady: the pod has an address and its Ready condition is True.
func podReady(pod *corev1.Pod) bool {
	if pod.Status.PodIP == "" {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
