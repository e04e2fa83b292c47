package builder

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func (w *workload) podTemplate() corev1.PodTemplateSpec {
	spec := corev1.PodSpec{
		InitContainers:            w.initContainers(),
		Containers:                w.containers(),
		Volumes:                   w.volumes(),
		ImagePullSecrets:          slices.Clone(w.imagePullSecrets),
		NodeSelector:              maps.Clone(w.nodeSelector),
		Affinity:                  w.affinity.DeepCopy(),
		Tolerations:               deepCopySlice(w.tolerations, (*corev1.Toleration).DeepCopy),
		TopologySpreadConstraints: deepCopySlice(w.topologySpread, (*corev1.TopologySpreadConstraint).DeepCopy),
		SecurityContext:           w.podSecurityContext(),
		// Redis and sentinels never call the API server: no token for whoever gets into a pod.
		AutomountServiceAccountToken:  ptrTo(false),
		PriorityClassName:             w.priorityClassName,
		ServiceAccountName:            w.serviceAccountName,
		TerminationGracePeriodSeconds: copyPtr(w.terminationGrace),
		HostNetwork:                   w.hostNetwork,
	}
	if w.hostNetwork {
		// Keep cluster DNS working for a pod on the host's network.
		spec.DNSPolicy = corev1.DNSClusterFirstWithHostNet
		// On the host's network every container port is a host port; the API server would
		// default it so, and writing it keeps desired and stored objects equal.
		for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
			for i := range cs {
				for j := range cs[i].Ports {
					cs[i].Ports[j].HostPort = cs[i].Ports[j].ContainerPort
				}
			}
		}
	}
	annotations := w.workloadAnnotations()
	for _, k := range w.ignoreAnnotations {
		delete(annotations, k)
	}
	annotations[AnnotationConfigHash] = w.configHash // rolls the pods: never ignored
	if w.restartedAt != "" {
		// A restart request: a new value is a new template revision, which rolls the pods.
		annotations[AnnotationRestartedAt] = w.restartedAt
	}
	labels := w.labels()
	maps.Copy(labels, w.podLabels)
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      labels,
			Annotations: annotations,
		},
		Spec: spec,
	}
}

func (w *workload) podSecurityContext() *corev1.PodSecurityContext {
	sc, _ := podSecurity(w.userPodSecurityContext)
	return sc
}

// secretFileMode is the mode of the files holding secrets (password, ACL users, TLS key):
// readable by the owner and the pod's fsGroup only, which the kubelet makes the group of the
// files (the default context's fsGroup is the redis user's own group). Without an fsGroup the
// files stay root's, so they keep the default mode the Redis user can read.
func (w *workload) secretFileMode() *int32 {
	if sc := w.podSecurityContext(); sc == nil || sc.FSGroup == nil {
		return nil
	}
	return ptrTo[int32](0o440)
}

// ownSecurityContext is the security context of the operator's own containers, given the
// user's (nil when unset).
func (w *workload) ownSecurityContext(user *corev1.SecurityContext) *corev1.SecurityContext {
	_, defaulted := podSecurity(w.userPodSecurityContext)
	return containerSecurity(user, defaulted)
}
