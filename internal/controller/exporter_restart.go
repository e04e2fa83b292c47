package controller

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/rediskube/redis-operator/internal/builder"
)

// AnnotationExporterImage, on a pod whose exporter runs from a digest-pinned image, holds the
// image reference its template names; the next exporter restart puts it back.
const AnnotationExporterImage = "redis.opstreelabs.in/exporter-image"

// AnnotationExporterStale, on a pod, says its exporter still holds the password the pod
// required before a rotation. The exporter reads the password from the auth Secret, which gets
// the new one only once every pod has it (the objects phase after the rotation): so a rotation
// marks the pod, and the exporter is restarted after that write (restartStale). The mark
// outlives an interrupted reconcile, which would otherwise leave the exporter on the old
// password with nothing left to tell.
const AnnotationExporterStale = "redis.opstreelabs.in/exporter-password-stale"

// digestRef is an image reference pinned to a digest, as the kubelet reports the image a
// container runs ("docker-pullable://" is how older runtimes prefix it).
var digestRef = regexp.MustCompile(`^(?:docker-pullable://)?([^@\s]+@sha256:[0-9a-f]{64})$`)

// exporterRestart restarts the exporter sidecar of a pod, and nothing else of it. The exporter
// reads the password from its environment at start only, so after a password changed in place
// it would report redis_up 0 until restarted; deleting the pod would restart Redis as well.
// The only field of a running container Kubernetes lets change is its image, and a changed
// image restarts that container alone: the operator alternates the image between the
// reference the template names and the same image pinned to the digest the container runs
// (from its status), so the exporter comes back on exactly the image it ran. The pod's
// revision label is untouched, so rollouts do not see it as outdated.
type exporterRestart struct {
	client   client.Client
	recorder recorder.EventRecorder
}

// restart reports whether a restart was asked for: false for a pod without an exporter, or
// whose exporter image the kubelet reports no digest for (then a Warning says what to do).
func (e exporterRestart) restart(ctx context.Context, owner client.Object, pod *corev1.Pod) (bool, error) {
	i := containerIndex(pod.Spec.Containers, builder.ExporterContainerName)
	if i < 0 {
		return false, nil
	}
	current := pod.Spec.Containers[i].Image
	target, original := "", ""
	if templated, ok := pod.Annotations[AnnotationExporterImage]; ok && templated != current {
		target = templated
	} else {
		target, original = pinnedImage(pod), current
	}
	patched := pod.DeepCopy()
	// Done with, restarted or not: a mark left would warn again at every reconcile.
	delete(patched.Annotations, AnnotationExporterStale)
	if target == "" || target == current {
		e.recorder.Eventf(owner, pod, corev1.EventTypeWarning, "ExporterNotRestarted", "RestartExporter",
			"the exporter of pod %s still has the old password: no digest is known for its image %s; restart the pod to give it the new one", pod.Name, current)
		if len(patched.Annotations) != len(pod.Annotations) {
			if err := e.client.Patch(ctx, patched, client.MergeFrom(pod)); err != nil {
				return false, fmt.Errorf("unmark the exporter of pod %s: %w", pod.Name, err)
			}
			*pod = *patched
		}
		return false, nil
	}
	patched.Spec.Containers[i].Image = target
	if original != "" {
		if patched.Annotations == nil {
			patched.Annotations = map[string]string{}
		}
		patched.Annotations[AnnotationExporterImage] = original
	} else {
		delete(patched.Annotations, AnnotationExporterImage)
	}
	if err := e.client.Patch(ctx, patched, client.StrategicMergeFrom(pod, client.MergeFromWithOptimisticLock{})); err != nil {
		return false, fmt.Errorf("restart the exporter of pod %s: %w", pod.Name, err)
	}
	log.FromContext(ctx).Info("restarting the exporter for the new password", "pod", pod.Name, "image", target)
	e.recorder.Eventf(owner, pod, corev1.EventTypeNormal, "ExporterRestarted", "RestartExporter",
		"restarting the exporter of pod %s (image %s) so that it reads the new password", pod.Name, target)
	*pod = *patched
	return true, nil
}

// markStale marks the exporter of a pod as holding an old password, for restartStale.
func (e exporterRestart) markStale(ctx context.Context, pod *corev1.Pod) error {
	if containerIndex(pod.Spec.Containers, builder.ExporterContainerName) < 0 || pod.Annotations[AnnotationExporterStale] != "" {
		return nil
	}
	patched := pod.DeepCopy()
	if patched.Annotations == nil {
		patched.Annotations = map[string]string{}
	}
	patched.Annotations[AnnotationExporterStale] = "true"
	if err := e.client.Patch(ctx, patched, client.MergeFrom(pod)); err != nil {
		return fmt.Errorf("mark the exporter of pod %s: %w", pod.Name, err)
	}
	*pod = *patched
	return nil
}

// restartStale restarts the exporter of every marked pod. It must run only after the objects
// phase wrote the auth Secret: the kubelet resolves the exporter's password from it when the
// container starts. (It saw that write before this pod patch, both through the API server's
// watches, in that order.)
func (e exporterRestart) restartStale(ctx context.Context, owner client.Object, pods []corev1.Pod) error {
	for i := range pods {
		if pods[i].Annotations[AnnotationExporterStale] == "" {
			continue
		}
		if _, err := e.restart(ctx, owner, &pods[i]); err != nil {
			return err
		}
	}
	return nil
}

// pinnedImage is the image the pod's exporter runs, pinned to its digest, or "" when the
// kubelet reports no pullable digest for it.
func pinnedImage(pod *corev1.Pod) string {
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name != builder.ExporterContainerName {
			continue
		}
		if m := digestRef.FindStringSubmatch(strings.TrimSpace(s.ImageID)); m != nil {
			return m[1]
		}
	}
	return ""
}

func containerIndex(cs []corev1.Container, name string) int {
	for i := range cs {
		if cs[i].Name == name {
			return i
		}
	}
	return -1
}
