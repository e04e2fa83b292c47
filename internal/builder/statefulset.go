package builder

import (
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

func (w *workload) statefulSet() *appsv1.StatefulSet {
	sts := &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: w.meta(w.name, w.labels(), w.workloadAnnotations()),
		Spec: appsv1.StatefulSetSpec{
			Replicas:                             ptrTo(w.replicas),
			Selector:                             &metav1.LabelSelector{MatchLabels: w.selectorLabels()},
			ServiceName:                          w.headlessServiceName(),
			Template:                             w.podTemplate(),
			PodManagementPolicy:                  w.podManagementPolicy,
			UpdateStrategy:                       w.updateStrategy,
			MinReadySeconds:                      w.minReadySeconds,
			PersistentVolumeClaimRetentionPolicy: w.pvcRetention.DeepCopy(),
		},
	}
	if w.restoredFrom != "" {
		if sts.Annotations == nil {
			sts.Annotations = map[string]string{}
		}
		sts.Annotations[AnnotationRestoredFrom] = w.restoredFrom
		if w.restore != nil {
			sts.Annotations[AnnotationRestoreInput] = w.restore.record()
		}
	}
	if w.dataClaim != nil {
		sts.Spec.VolumeClaimTemplates = append(sts.Spec.VolumeClaimTemplates, w.claimTemplate(w.name, w.dataClaim))
	}
	if w.nodeConfClaim != nil {
		sts.Spec.VolumeClaimTemplates = append(sts.Spec.VolumeClaimTemplates, w.claimTemplate(nodeConfVolume, w.nodeConfClaim))
	}
	return sts
}

// claimTemplate names the template (the PVC names users depend on derive from it), adds our
// labels so the controller can find the claims, and defaults the access mode.
func (w *workload) claimTemplate(name string, in *corev1.PersistentVolumeClaim) corev1.PersistentVolumeClaim {
	labels := maps.Clone(in.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, w.labels())
	out := corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      labels,
			Annotations: nonEmpty(maps.Clone(in.Annotations)),
		},
		Spec: *in.Spec.DeepCopy(),
	}
	if len(out.Spec.AccessModes) == 0 {
		out.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	}
	return out
}

// nodeConfClaim is the node-conf claim: the user's template, or 1Gi ReadWriteOnce on the data
// volume's storage class.
func nodeConfClaim(s *v1beta2.ClusterStorage) *corev1.PersistentVolumeClaim {
	c := s.NodeConfVolumeClaimTemplate.DeepCopy()
	if _, ok := c.Spec.Resources.Requests[corev1.ResourceStorage]; !ok {
		if c.Spec.Resources.Requests == nil {
			c.Spec.Resources.Requests = corev1.ResourceList{}
		}
		c.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse(defaultNodeConfVolumeSize)
		if c.Spec.StorageClassName == nil {
			c.Spec.StorageClassName = copyPtr(s.VolumeClaimTemplate.Spec.StorageClassName)
		}
	}
	return c
}

// dataClaim is the data claim template, or nil when the spec asks for no storage size (a PVC
// needs one): then /data is an emptyDir.
func dataClaim(s *v1beta2.Storage) *corev1.PersistentVolumeClaim {
	if s == nil {
		return nil
	}
	if _, ok := s.VolumeClaimTemplate.Spec.Resources.Requests[corev1.ResourceStorage]; !ok {
		return nil
	}
	return s.VolumeClaimTemplate.DeepCopy()
}
