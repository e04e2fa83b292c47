package builder

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

// TestRestartAnnotationRollsEveryStatefulSet: a resource's restarted-at annotation (kubectl
// redis restart) lands, with its value, in the pod template of each of its StatefulSets and
// nowhere else, so that a new value is a new template revision of every one of them (which is
// what the rolling update and the StatefulSet controller act on). It is never left out, not
// even when the spec lists it among the annotations to ignore, and without it the template
// has no such key.
func TestRestartAnnotationRollsEveryStatefulSet(t *testing.T) {
	replicationWithSentinels := func() *v1beta2.RedisReplication {
		cr := minimalReplication()
		cr.Spec.Sentinel = &v1beta2.Sentinel{Size: 3, Image: "redis:7.4.2"}
		return cr
	}
	for _, tc := range []struct {
		name string
		// build builds the resource with the given annotations and annotation keys to ignore.
		build   func(annotations map[string]string, ignore []string) (*Objects, error)
		wantSTS []string
	}{
		{"Redis", func(a map[string]string, ignore []string) (*Objects, error) {
			cr := minimalRedis()
			cr.Annotations, cr.Spec.KubernetesConfig.IgnoreAnnotations = a, ignore
			return BuildRedis(RedisInput{CR: cr})
		}, []string{"cache"}},
		{"RedisCluster", func(a map[string]string, ignore []string) (*Objects, error) {
			cr := minimalCluster()
			cr.Annotations, cr.Spec.KubernetesConfig.IgnoreAnnotations = a, ignore
			return BuildRedisCluster(RedisClusterInput{CR: cr})
		}, []string{"shards-leader", "shards-follower"}},
		{"RedisReplication", func(a map[string]string, ignore []string) (*Objects, error) {
			cr := replicationWithSentinels()
			cr.Annotations, cr.Spec.KubernetesConfig.IgnoreAnnotations = a, ignore
			cr.Spec.Sentinel.IgnoreAnnotations = ignore
			return BuildRedisReplication(RedisReplicationInput{CR: cr, MasterHost: testMasterHost})
		}, []string{"repl", EmbeddedSentinelStatefulSetName("repl")}},
		{"RedisSentinel", func(a map[string]string, ignore []string) (*Objects, error) {
			cr := minimalSentinel()
			cr.Annotations, cr.Spec.KubernetesConfig.IgnoreAnnotations = a, ignore
			return BuildRedisSentinel(RedisSentinelInput{CR: cr, MasterHost: testMasterHost})
		}, []string{"watch-sentinel"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plain := mustBuild(t)(tc.build(nil, nil))
			first := mustBuild(t)(tc.build(map[string]string{AnnotationRestartedAt: "2026-12-06T09:00:00Z", "team": "payments"}, nil))
			again := mustBuild(t)(tc.build(map[string]string{AnnotationRestartedAt: "2026-12-06T10:30:00Z"}, nil))
			ignored := mustBuild(t)(tc.build(map[string]string{AnnotationRestartedAt: "2026-12-06T09:00:00Z"}, []string{AnnotationRestartedAt}))
			wantNames(t, "StatefulSets", first.StatefulSets, tc.wantSTS...)
			for i, sts := range first.StatefulSets {
				if _, ok := plain.StatefulSets[i].Spec.Template.Annotations[AnnotationRestartedAt]; ok {
					t.Errorf("%s: template has %s without a restart request", sts.Name, AnnotationRestartedAt)
				}
				wantEqual(t, sts.Name+" template annotation", sts.Spec.Template.Annotations[AnnotationRestartedAt], "2026-12-06T09:00:00Z")
				wantEqual(t, sts.Name+" template annotation after a second restart",
					again.StatefulSets[i].Spec.Template.Annotations[AnnotationRestartedAt], "2026-12-06T10:30:00Z")
				wantEqual(t, sts.Name+" template annotation when ignored",
					ignored.StatefulSets[i].Spec.Template.Annotations[AnnotationRestartedAt], "2026-12-06T09:00:00Z")
				if _, ok := sts.Annotations[AnnotationRestartedAt]; ok {
					t.Errorf("%s: the StatefulSet's own metadata carries %s", sts.Name, AnnotationRestartedAt)
				}
				if _, ok := sts.Spec.Template.Annotations["team"]; ok {
					t.Errorf("%s: another annotation of the resource was copied into the template", sts.Name)
				}
				// Only the template's annotations differ: the rest of the StatefulSet stays.
				restarted := sts.DeepCopy()
				delete(restarted.Spec.Template.Annotations, AnnotationRestartedAt)
				wantEqual(t, sts.Name+" without the annotation", restarted, plain.StatefulSets[i])
			}
			wantEqual(t, "Services", first.Services, plain.Services)
			wantEqual(t, "ConfigMaps", first.ConfigMaps, plain.ConfigMaps)
		})
	}
}

// TestRestartedAtReadsTheResourcesAnnotation: the value is the annotation's, "" without one.
func TestRestartedAtReadsTheResourcesAnnotation(t *testing.T) {
	for _, tc := range []struct {
		annotations map[string]string
		want        string
	}{
		{nil, ""},
		{map[string]string{"other": "x"}, ""},
		{map[string]string{AnnotationRestartedAt: "2026-12-06T09:00:00Z"}, "2026-12-06T09:00:00Z"},
	} {
		if got := restartedAt(&metav1.ObjectMeta{Annotations: tc.annotations}); got != tc.want {
			t.Errorf("restartedAt(%v) = %q, want %q", tc.annotations, got, tc.want)
		}
	}
}
