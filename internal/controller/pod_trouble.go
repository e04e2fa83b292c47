package controller

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

// stuckWaitingReasons are the reasons a container waits that do not pass by themselves: the
// image, the command or the configuration has to change.
var stuckWaitingReasons = map[string]bool{
	"ImagePullBackOff":           true,
	"ErrImagePull":               true,
	"InvalidImageName":           true,
	"CrashLoopBackOff":           true,
	"CreateContainerConfigError": true,
	"CreateContainerError":       true,
}

// podTrouble is why a pod of the resource cannot run, as the pod itself reports it.
type podTrouble struct {
	pod, reason, message string
}

func (t podTrouble) String() string {
	return fmt.Sprintf("pod %s: %s: %s", t.pod, t.reason, t.message)
}

// troubleOf finds the first pod (by name) that no node will take (an unbound claim, a request
// no node has, a selector no node matches) or whose container waits for something that will
// not come by itself.
func troubleOf(pods []corev1.Pod) *podTrouble {
	sorted := slices.Clone(pods)
	slices.SortFunc(sorted, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	for i := range sorted {
		pod := &sorted[i]
		if pod.DeletionTimestamp != nil {
			continue
		}
		for _, cond := range pod.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable {
				return &podTrouble{pod: pod.Name, reason: corev1.PodReasonUnschedulable, message: cond.Message}
			}
		}
		statuses := append(slices.Clone(pod.Status.InitContainerStatuses), pod.Status.ContainerStatuses...)
		for _, cs := range statuses {
			if w := cs.State.Waiting; w != nil && stuckWaitingReasons[w.Reason] {
				return &podTrouble{pod: pod.Name, reason: w.Reason, message: fmt.Sprintf("container %s: %s", cs.Name, w.Message)}
			}
		}
	}
	return nil
}

// reportPodTrouble puts the first stuck pod's own reason on the resource (Degraded, with the
// pod and its message) and reports whether there was one. The Warning event is sent when the
// trouble is new, not on every reconcile while it lasts.
func reportPodTrouble(rec recorder.EventRecorder, obj client.Object, conditions conditionSet, pods []corev1.Pod) bool {
	trouble := troubleOf(pods)
	if trouble == nil {
		warnedTroubles.cleared(obj.GetUID(), "pod")
		return false
	}
	previous := meta.FindStatusCondition(*conditions.conditions, v1beta2.ConditionDegraded)
	alreadyReported := previous != nil && previous.Status == metav1.ConditionTrue && previous.Reason == trouble.reason &&
		strings.HasPrefix(previous.Message, fmt.Sprintf("pod %s: ", trouble.pod))
	if warnedTroubles.firstWarning(obj.GetUID(), "pod", trouble.pod+"/"+trouble.reason) && !alreadyReported {
		rec.Eventf(obj, nil, corev1.EventTypeWarning, trouble.reason, "ObservePod", "%s", trouble.String())
	}
	conditions.degraded(trouble.reason, trouble.String())
	return true
}
