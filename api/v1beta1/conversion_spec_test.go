package v1beta1

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/utils/ptr"
)

// The v1beta2 fields each kind keeps in the v1beta2-fields annotation: exactly those v1beta1
// has no field for. A field missing here would be lost on a round trip through v1beta1; one
// too many would let an annotation override a field v1beta1 carries itself.
func TestHubOnlyFieldsAreThoseV1beta1CannotExpress(t *testing.T) {
	for _, tc := range []struct {
		kind string
		got  []string
		want []string
	}{
		{"Redis", redisSpecs.hubOnly, []string{"hostPort", "securityContext", "acl", "initContainer", "terminationGracePeriodSeconds", "env", "restore"}},
		{"RedisCluster", redisClusterSpecs.hubOnly, []string{"hostNetwork", "hostPort", "port", "redisConfig", "podManagementPolicy", "acl", "initContainer", "env", "restore"}},
		{"RedisReplication", redisReplicationSpecs.hubOnly, []string{"hostPort", "securityContext", "acl", "initContainer", "terminationGracePeriodSeconds", "env", "restore",
			"pdb", "podManagementPolicy", "sentinel", "topologySpreadConstraints"}},
		{"RedisSentinel", redisSentinelSpecs.hubOnly, []string{"hostPort", "securityContext", "initContainer", "terminationGracePeriodSeconds", "env",
			"podManagementPolicy", "redisExporter", "topologySpreadConstraints", "volumeMount"}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			got, want := slices.Sorted(slices.Values(tc.got)), slices.Sorted(slices.Values(tc.want))
			if !slices.Equal(got, want) {
				t.Errorf("hub-only fields = %v, want %v", got, want)
			}
		})
	}
}

// Specs of the shapes mapSpec meets: a shared field, a renamed one, one only the spoke has and
// one only the hub has.
type (
	testSpoke struct {
		Size             *int32                     `json:"size"`
		KubernetesConfig map[string]string          `json:"kubernetesConfig"`
		SecurityContext  *corev1.PodSecurityContext `json:"securityContext,omitempty"`
		Legacy           string                     `json:"legacy,omitempty"`
	}
	testHub struct {
		KubernetesConfig   map[string]string          `json:"kubernetesConfig"`
		Size               *int32                     `json:"size"`
		PodSecurityContext *corev1.PodSecurityContext `json:"podSecurityContext,omitempty"`
		SecurityContext    *corev1.SecurityContext    `json:"securityContext,omitempty"`
		Untagged           bool
	}
	spokeWithStrayField struct {
		Size  *int32 `json:"size"`
		Stray string `json:"stray"`
	}
	spokeWithOtherType struct {
		Size *int64 `json:"size"`
	}
)

func TestSpecMappingCopiesSharedFieldsBothWays(t *testing.T) {
	m, err := mapSpec[testSpoke, testHub]("Legacy")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"securityContext", "Untagged"}; !slices.Equal(m.hubOnly, want) {
		t.Errorf("hubOnly = %v, want %v", m.hubOnly, want)
	}
	for _, tc := range []struct {
		name  string
		spoke testSpoke
		hub   testHub
	}{
		{name: "empty"},
		{
			name: "every shared field",
			spoke: testSpoke{
				Size: ptr.To[int32](3), KubernetesConfig: map[string]string{"image": "redis:7"},
				SecurityContext: &corev1.PodSecurityContext{FSGroup: ptr.To[int64](1000)},
			},
			hub: testHub{
				Size: ptr.To[int32](3), KubernetesConfig: map[string]string{"image": "redis:7"},
				PodSecurityContext: &corev1.PodSecurityContext{FSGroup: ptr.To[int64](1000)},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// What the destination held before is overwritten, the unpaired fields too.
			hub := testHub{Size: ptr.To[int32](9), SecurityContext: &corev1.SecurityContext{}, Untagged: true}
			m.toHub(&tc.spoke, &hub)
			if !equality.Semantic.DeepEqual(tc.hub, hub) {
				t.Errorf("toHub:\n%s", diff.Diff(tc.hub, hub))
			}
			spoke := testSpoke{Size: ptr.To[int32](9), Legacy: "old"}
			m.fromHub(&tc.hub, &spoke)
			if !equality.Semantic.DeepEqual(tc.spoke, spoke) {
				t.Errorf("fromHub:\n%s", diff.Diff(tc.spoke, spoke))
			}
		})
	}
}

func TestSpecMappingRefusesAFieldWithoutCounterpart(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mapSpec func() error
		want    string
	}{
		{"no field of that name", func() error { _, err := mapSpec[spokeWithStrayField, testHub](); return err }, "spokeWithStrayField.Stray"},
		{"a field of another type", func() error { _, err := mapSpec[spokeWithOtherType, testHub](); return err }, "spokeWithOtherType.Size"},
		{"no spoke-only name given", func() error { _, err := mapSpec[testSpoke, testHub](); return err }, "testSpoke.Legacy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.mapSpec()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("mapSpec error = %v, want one naming %s", err, tc.want)
			}
		})
	}
}
