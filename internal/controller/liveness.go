package controller

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/internal/liveness"
	"github.com/rediskube/redis-operator/internal/redis"
)

// livenessOwner is how the liveness watcher knows a resource: by the kind its controller
// watches the watcher's Source for, and its name.
func livenessOwner(obj client.Object) liveness.Owner {
	return liveness.Owner{Kind: kindName(obj), NamespacedName: client.ObjectKeyFromObject(obj)}
}

// watchLiveness tells the watcher the pods of a resource that run with an address, each at the
// endpoint the reconcile reaches it at (same address, credentials and TLS: the same pooled
// connection), so that one that stops answering, or answers again, brings the resource back
// within seconds whatever Kubernetes reports.
func watchLiveness(w *liveness.Watcher, owner client.Object, pods []corev1.Pod, endpoint func(*corev1.Pod) redis.Endpoint) {
	w.Watch(livenessOwner(owner), livenessEndpoints(pods, endpoint))
}

// livenessEndpoints are the endpoints of the pods that run with an address, by pod name.
func livenessEndpoints(pods []corev1.Pod, endpoint func(*corev1.Pod) redis.Endpoint) map[string]redis.Endpoint {
	endpoints := map[string]redis.Endpoint{}
	for i := range pods {
		pod := &pods[i]
		if pod.Status.PodIP != "" && pod.Status.Phase == corev1.PodRunning && pod.DeletionTimestamp == nil {
			endpoints[pod.Name] = endpoint(pod)
		}
	}
	return endpoints
}

// silentPods says which running pods did not answer, in the words every kind's status uses.
func silentPods(pods []string) string {
	if len(pods) == 1 {
		return "pod " + pods[0] + " does not answer"
	}
	return "pods " + strings.Join(pods, ", ") + " do not answer"
}
