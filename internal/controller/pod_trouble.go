package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/status"
)

// unschedulableGrace is how long a pod may be unschedulable before it is reported: the
// scheduler waits for a new claim to be bound, which takes a moment.
const unschedulableGrace = 20 * time.Second

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
// A pod is briefly unschedulable while its claim is being provisioned: only one that stays so
// for unschedulableGrace is trouble; recheck says when to look again at one that is younger.
func troubleOf(pods []corev1.Pod, now time.Time) (trouble *podTrouble, recheck time.Duration) {
	sorted := slices.Clone(pods)
	slices.SortFunc(sorted, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	for i := range sorted {
		pod := &sorted[i]
		if pod.DeletionTimestamp != nil {
			continue
		}
		for _, cond := range pod.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable {
				if left := unschedulableGrace - now.Sub(cond.LastTransitionTime.Time); left > 0 {
					if recheck == 0 || left < recheck {
						recheck = left
					}
					continue
				}
				return &podTrouble{pod: pod.Name, reason: corev1.PodReasonUnschedulable, message: cond.Message}, 0
			}
		}
		statuses := append(slices.Clone(pod.Status.InitContainerStatuses), pod.Status.ContainerStatuses...)
		for _, cs := range statuses {
			if w := cs.State.Waiting; w != nil && stuckWaitingReasons[w.Reason] {
				return &podTrouble{pod: pod.Name, reason: w.Reason, message: fmt.Sprintf("container %s: %s", cs.Name, w.Message)}, 0
			}
		}
	}
	return nil, recheck
}

// unboundClaim says why a claim of an unschedulable pod is not bound, "" when it is. class is
// the claim's StorageClass, nil when the claim names none or the class does not exist
// (classMissing).
func unboundClaim(claimName string, claim *corev1.PersistentVolumeClaim, class *storagev1.StorageClass, classMissing bool) string {
	switch {
	case claim == nil:
		return fmt.Sprintf("PVC %s does not exist", claimName)
	case claim.Status.Phase == corev1.ClaimBound:
		return ""
	case claim.Spec.StorageClassName == nil || *claim.Spec.StorageClassName == "":
		return fmt.Sprintf("PVC %s is %s: it names no StorageClass and no volume is bound to it", claimName, claim.Status.Phase)
	case classMissing:
		return fmt.Sprintf("PVC %s is %s: its StorageClass %q does not exist", claimName, claim.Status.Phase, *claim.Spec.StorageClassName)
	default:
		return fmt.Sprintf("PVC %s is %s: StorageClass %q (provisioner %s) has not provided a volume", claimName, claim.Status.Phase,
			class.Name, class.Provisioner)
	}
}

// claimsOfTrouble adds to an unschedulable pod's trouble why its claims are not bound (the
// scheduler's message says only that some are not): the claim and its StorageClass, read
// only then, not on every reconcile.
func claimsOfTrouble(ctx context.Context, c client.Reader, namespace string, pod *corev1.Pod) ([]string, error) {
	var why []string
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		name := v.PersistentVolumeClaim.ClaimName
		var claim corev1.PersistentVolumeClaim
		err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &claim)
		if apierrors.IsNotFound(err) {
			why = append(why, unboundClaim(name, nil, nil, false))
			continue
		}
		if err != nil {
			return why, fmt.Errorf("get PVC %s: %w", name, err)
		}
		var class *storagev1.StorageClass
		missing := false
		if claim.Status.Phase != corev1.ClaimBound && claim.Spec.StorageClassName != nil && *claim.Spec.StorageClassName != "" {
			class = &storagev1.StorageClass{}
			err := c.Get(ctx, client.ObjectKey{Name: *claim.Spec.StorageClassName}, class)
			missing = apierrors.IsNotFound(err)
			if err != nil && !missing {
				return why, fmt.Errorf("get StorageClass %s: %w", *claim.Spec.StorageClassName, err)
			}
		}
		if w := unboundClaim(name, &claim, class, missing); w != "" {
			why = append(why, w)
		}
	}
	return why, nil
}

// reportPodTrouble puts the first stuck pod's own reason on the resource (Degraded, with the
// pod and its message, and for an unschedulable pod why its claims are unbound) and reports
// whether there was one. The Warning event is sent when the trouble is new, not on every
// reconcile while it lasts.
func (d *Dependencies) reportPodTrouble(ctx context.Context, obj client.Object, conditions status.Conditions, pods []corev1.Pod, requeue func(time.Duration, string)) bool {
	c, rec, warned := d.Client, d.Recorder, d.Memory.warned
	trouble, recheck := troubleOf(pods, time.Now())
	if recheck > 0 {
		requeue(recheck, "a pod is unschedulable: trouble if it stays so")
	}
	if trouble == nil {
		warned.Cleared(obj.GetUID(), "pod")
		return false
	}
	if trouble.reason == corev1.PodReasonUnschedulable {
		for i := range pods {
			if pods[i].Name != trouble.pod {
				continue
			}
			why, err := claimsOfTrouble(ctx, c, obj.GetNamespace(), &pods[i])
			if err != nil {
				// The scheduler's own message still says what it can.
				log.FromContext(ctx).Error(err, "reading the claims of an unschedulable pod", "pod", trouble.pod)
			}
			if len(why) > 0 {
				trouble.message += "; " + strings.Join(why, "; ")
			}
		}
	}
	previous := meta.FindStatusCondition(conditions.List(), v1beta2.ConditionDegraded)
	alreadyReported := previous != nil && previous.Status == metav1.ConditionTrue && previous.Reason == trouble.reason &&
		strings.HasPrefix(previous.Message, fmt.Sprintf("pod %s: ", trouble.pod))
	if warned.FirstWarning(obj.GetUID(), "pod", trouble.pod+"/"+trouble.reason) && !alreadyReported {
		rec.Eventf(obj, nil, corev1.EventTypeWarning, trouble.reason, "ObservePod", "%s", trouble.String())
	}
	conditions.Degraded(trouble.reason, trouble.String())
	return true
}
