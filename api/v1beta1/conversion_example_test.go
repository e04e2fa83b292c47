package v1beta1

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

// A RedisCluster as the first v1beta1 shape wrote it: the pod security context under
// securityContext, nodeSelector and tolerations at the top.
const firstShapeCluster = `
apiVersion: redis.redis.opstreelabs.in/v1beta1
kind: RedisCluster
metadata:
  name: redis-cluster
spec:
  clusterSize: 3
  persistenceEnabled: true
  securityContext:
    runAsUser: 1000
    fsGroup: 1000
  nodeSelector:
    disk: ssd
  tolerations:
  - key: dedicated
    operator: Equal
    value: redis
    effect: NoSchedule
  kubernetesConfig:
    image: redis:7
    redisSecret:
      name: redis-secret
      key: password
  redisLeader:
    replicas: 3
    nodeSelector:
      zone: a
    pdb:
      enabled: true
      minAvailable: 1
  redisFollower:
    replicas: 3
`

func TestFirstShapeClusterConvertsToItsV1beta2Homes(t *testing.T) {
	var old RedisCluster
	if err := yaml.UnmarshalStrict([]byte(firstShapeCluster), &old); err != nil {
		t.Fatal(err)
	}
	var hub v1beta2.RedisCluster
	if err := old.ConvertTo(&hub); err != nil {
		t.Fatal(err)
	}
	if got := hub.Spec.PodSecurityContext; got == nil || ptr.Deref(got.RunAsUser, 0) != 1000 || ptr.Deref(got.FSGroup, 0) != 1000 {
		t.Errorf("podSecurityContext = %+v, want runAsUser and fsGroup 1000", got)
	}
	if sc := hub.Spec.RedisLeader.SecurityContext; sc != nil {
		t.Errorf("a role's container securityContext was set from the pod's: %+v", sc)
	}
	if got := hub.Spec.RedisLeader.NodeSelector; !equality.Semantic.DeepEqual(got, map[string]string{"zone": "a"}) {
		t.Errorf("leader nodeSelector = %v, want its own {zone: a}", got)
	}
	if got := hub.Spec.RedisFollower.NodeSelector; !equality.Semantic.DeepEqual(got, map[string]string{"disk": "ssd"}) {
		t.Errorf("follower nodeSelector = %v, want the top-level {disk: ssd}", got)
	}
	wantTolerations := []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "redis", Effect: corev1.TaintEffectNoSchedule}}
	for role, got := range map[string]*[]corev1.Toleration{"leader": hub.Spec.RedisLeader.Tolerations, "follower": hub.Spec.RedisFollower.Tolerations} {
		if got == nil || !equality.Semantic.DeepEqual(*got, wantTolerations) {
			t.Errorf("%s tolerations = %v, want the top-level ones", role, got)
		}
	}
	if !ptr.Deref(hub.Spec.PersistenceEnabled, false) || hub.Spec.KubernetesConfig.ExistingPasswordSecret == nil ||
		hub.Spec.RedisLeader.PodDisruptionBudget == nil || !hub.Spec.RedisLeader.PodDisruptionBudget.Enabled {
		t.Errorf("persistenceEnabled, redisSecret or pdb lost: %+v", hub.Spec)
	}

	var back RedisCluster
	if err := back.ConvertFrom(&hub); err != nil {
		t.Fatal(err)
	}
	back.TypeMeta = old.TypeMeta // the caller sets the kind, not the conversion
	if !equality.Semantic.DeepEqual(old, back) {
		t.Errorf("v1beta1 → v1beta2 → v1beta1 changed the object:\n%s", diff.Diff(old, back))
	}
}

func TestV1beta2OnlyFieldsTravelInTheAnnotation(t *testing.T) {
	hub := v1beta2.Redis{Spec: v1beta2.RedisSpec{
		KubernetesConfig:              v1beta2.KubernetesConfig{Image: "redis:7"},
		SecurityContext:               &corev1.SecurityContext{ReadOnlyRootFilesystem: ptr.To(true)},
		PodSecurityContext:            &corev1.PodSecurityContext{FSGroup: ptr.To[int64](1000)},
		TerminationGracePeriodSeconds: ptr.To[int64](60),
		Restore:                       &v1beta2.RestoreSpec{BackupName: "nightly-1"},
	}}
	var old Redis
	if err := old.ConvertFrom(&hub); err != nil {
		t.Fatal(err)
	}
	if got := old.Spec.SecurityContext; got == nil || ptr.Deref(got.FSGroup, 0) != 1000 {
		t.Errorf("v1beta1 securityContext = %+v, want the pod security context", got)
	}
	const want = `{"restore":{"backupName":"nightly-1"},"securityContext":{"readOnlyRootFilesystem":true},"terminationGracePeriodSeconds":60}`
	if got := old.Annotations[V1beta2FieldsAnnotation]; got != want {
		t.Errorf("annotation %s = %s, want %s", V1beta2FieldsAnnotation, got, want)
	}
	var back v1beta2.Redis
	if err := old.ConvertTo(&back); err != nil {
		t.Fatal(err)
	}
	if back.Annotations != nil {
		t.Errorf("the v1beta2 object kept annotations: %v", back.Annotations)
	}
	if !equality.Semantic.DeepEqual(hub, back) {
		t.Errorf("v1beta2 → v1beta1 → v1beta2 changed the object:\n%s", diff.Diff(hub, back))
	}
}
