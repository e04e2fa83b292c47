package v1beta1

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/conversion"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

// Conversion is lossless both ways. What v1beta2 has and v1beta1 has no place for travels in
// an annotation of the v1beta1 object, and what only v1beta1 can say (the top-level
// nodeSelector and tolerations of a RedisCluster) travels in an annotation of the v1beta2
// object; each is removed again on the way back, so that a client reading and writing either
// version keeps every field the other version set.
const (
	// V1beta2FieldsAnnotation holds, on a v1beta1 object, the JSON of the v1beta2 spec fields
	// v1beta1 cannot express.
	V1beta2FieldsAnnotation = "redis.redis.opstreelabs.in/v1beta2-fields"
	// V1beta1FieldsAnnotation holds, on a v1beta2 object, the v1beta1 shapes that v1beta2
	// expresses differently, so that they read back as they were written.
	V1beta1FieldsAnnotation = "redis.redis.opstreelabs.in/v1beta1-fields"
)

// The spec of each kind converts field by field through one specMapping: a v1beta1 field
// converts to the v1beta2 field of the same name and type, so the parts the kinds share
// (kubernetesConfig, storage, redisExporter, TLS, probes, placement, ...) convert by one
// rule for all four kinds. The v1beta2 fields left unpaired are those v1beta1 cannot express.
var (
	redisSpecs            = mustMapSpec[RedisSpec, v1beta2.RedisSpec]()
	redisClusterSpecs     = mustMapSpec[RedisClusterSpec, v1beta2.RedisClusterSpec]("NodeSelector", "Tolerations")
	redisReplicationSpecs = mustMapSpec[RedisReplicationSpec, v1beta2.RedisReplicationSpec]()
	redisSentinelSpecs    = mustMapSpec[RedisSentinelSpec, v1beta2.RedisSentinelSpec]()
)

// spokeRenames names the v1beta1 spec fields whose v1beta2 counterpart is named otherwise.
// v1beta1's securityContext is the pod's, v1beta2's podSecurityContext; v1beta2's
// securityContext is the container's and has no v1beta1 counterpart.
var spokeRenames = map[string]string{"SecurityContext": "PodSecurityContext"}

var (
	_ conversion.Convertible = &Redis{}
	_ conversion.Convertible = &RedisCluster{}
	_ conversion.Convertible = &RedisReplication{}
	_ conversion.Convertible = &RedisSentinel{}
)

// ConvertTo converts this Redis to the hub version.
func (src *Redis) ConvertTo(dstRaw conversion.Hub) error {
	dst, ok := dstRaw.(*v1beta2.Redis)
	if !ok {
		return fmt.Errorf("convert Redis to %T: not the hub", dstRaw)
	}
	dst.ObjectMeta, dst.Status = *src.ObjectMeta.DeepCopy(), src.Status
	redisSpecs.toHub(&src.Spec, &dst.Spec)
	return restoreHubFields(&dst.ObjectMeta, &dst.Spec)
}

// ConvertFrom converts the hub version to this Redis.
func (dst *Redis) ConvertFrom(srcRaw conversion.Hub) error {
	src, ok := srcRaw.(*v1beta2.Redis)
	if !ok {
		return fmt.Errorf("convert %T to Redis: not the hub", srcRaw)
	}
	dst.ObjectMeta, dst.Status = *src.ObjectMeta.DeepCopy(), src.Status
	redisSpecs.fromHub(&src.Spec, &dst.Spec)
	return keepHubFields(&dst.ObjectMeta, &src.Spec, redisSpecs.hubOnly)
}

// ConvertTo converts this RedisCluster to the hub version. The top-level nodeSelector and
// tolerations of the first v1beta1 shape apply to each role that does not set its own.
func (src *RedisCluster) ConvertTo(dstRaw conversion.Hub) error {
	dst, ok := dstRaw.(*v1beta2.RedisCluster)
	if !ok {
		return fmt.Errorf("convert RedisCluster to %T: not the hub", dstRaw)
	}
	s := src.Spec
	dst.ObjectMeta, dst.Status = *src.ObjectMeta.DeepCopy(), src.Status
	redisClusterSpecs.toHub(&src.Spec, &dst.Spec)
	// The roles are copies of their own, not shared with src: their placement is rewritten below.
	dst.Spec.RedisLeader, dst.Spec.RedisFollower = *s.RedisLeader.DeepCopy(), *s.RedisFollower.DeepCopy()
	if err := restoreHubFields(&dst.ObjectMeta, &dst.Spec); err != nil {
		return err
	}
	removeAnnotation(&dst.ObjectMeta, V1beta1FieldsAnnotation)
	if s.NodeSelector == nil && s.Tolerations == nil {
		return nil
	}
	placement := clusterPlacement{NodeSelector: s.NodeSelector, Tolerations: s.Tolerations}
	for _, role := range []struct {
		name string
		r    *v1beta2.RedisClusterRole
	}{{"redisLeader", &dst.Spec.RedisLeader.RedisClusterRole}, {"redisFollower", &dst.Spec.RedisFollower.RedisClusterRole}} {
		if s.NodeSelector != nil && role.r.NodeSelector == nil {
			role.r.NodeSelector = copyMap(s.NodeSelector)
			placement.Inherited = append(placement.Inherited, role.name+".nodeSelector")
		}
		if s.Tolerations != nil && role.r.Tolerations == nil {
			tolerations := append([]corev1.Toleration{}, *s.Tolerations...)
			role.r.Tolerations = &tolerations
			placement.Inherited = append(placement.Inherited, role.name+".tolerations")
		}
	}
	return setAnnotationJSON(&dst.ObjectMeta, V1beta1FieldsAnnotation, placement)
}

// ConvertFrom converts the hub version to this RedisCluster.
func (dst *RedisCluster) ConvertFrom(srcRaw conversion.Hub) error {
	src, ok := srcRaw.(*v1beta2.RedisCluster)
	if !ok {
		return fmt.Errorf("convert %T to RedisCluster: not the hub", srcRaw)
	}
	dst.ObjectMeta, dst.Status = *src.ObjectMeta.DeepCopy(), src.Status
	redisClusterSpecs.fromHub(&src.Spec, &dst.Spec)
	// The roles are copies of their own, not shared with src: their placement is rewritten below.
	dst.Spec.RedisLeader, dst.Spec.RedisFollower = *src.Spec.RedisLeader.DeepCopy(), *src.Spec.RedisFollower.DeepCopy()
	if raw, ok := dst.Annotations[V1beta1FieldsAnnotation]; ok {
		var placement clusterPlacement
		if err := json.Unmarshal([]byte(raw), &placement); err != nil {
			return fmt.Errorf("read annotation %s: %w", V1beta1FieldsAnnotation, err)
		}
		removeAnnotation(&dst.ObjectMeta, V1beta1FieldsAnnotation)
		dst.Spec.NodeSelector = placement.NodeSelector
		dst.Spec.Tolerations = placement.Tolerations
		roles := map[string]*v1beta2.RedisClusterRole{
			"redisLeader": &dst.Spec.RedisLeader.RedisClusterRole, "redisFollower": &dst.Spec.RedisFollower.RedisClusterRole,
		}
		// A role's placement that only copied the top-level one (and was not changed since)
		// goes back to being unset.
		for _, path := range placement.Inherited {
			switch role := roles[roleOf(path)]; {
			case role == nil:
			case path == roleOf(path)+".nodeSelector" && equality.Semantic.DeepEqual(role.NodeSelector, placement.NodeSelector):
				role.NodeSelector = nil
			case path == roleOf(path)+".tolerations" && equality.Semantic.DeepEqual(role.Tolerations, placement.Tolerations):
				role.Tolerations = nil
			}
		}
	}
	return keepHubFields(&dst.ObjectMeta, &src.Spec, redisClusterSpecs.hubOnly)
}

// clusterPlacement is the v1beta1-only placement of a RedisCluster, kept on the v1beta2 object.
type clusterPlacement struct {
	NodeSelector map[string]string    `json:"nodeSelector,omitempty"`
	Tolerations  *[]corev1.Toleration `json:"tolerations,omitempty"`
	// Inherited names the role fields ("redisLeader.nodeSelector", ...) that were copied from
	// the top-level ones.
	Inherited []string `json:"inherited,omitempty"`
}

func roleOf(path string) string {
	for i := range path {
		if path[i] == '.' {
			return path[:i]
		}
	}
	return path
}

// ConvertTo converts this RedisReplication to the hub version.
func (src *RedisReplication) ConvertTo(dstRaw conversion.Hub) error {
	dst, ok := dstRaw.(*v1beta2.RedisReplication)
	if !ok {
		return fmt.Errorf("convert RedisReplication to %T: not the hub", dstRaw)
	}
	dst.ObjectMeta, dst.Status = *src.ObjectMeta.DeepCopy(), src.Status
	redisReplicationSpecs.toHub(&src.Spec, &dst.Spec)
	return restoreHubFields(&dst.ObjectMeta, &dst.Spec)
}

// ConvertFrom converts the hub version to this RedisReplication.
func (dst *RedisReplication) ConvertFrom(srcRaw conversion.Hub) error {
	src, ok := srcRaw.(*v1beta2.RedisReplication)
	if !ok {
		return fmt.Errorf("convert %T to RedisReplication: not the hub", srcRaw)
	}
	dst.ObjectMeta, dst.Status = *src.ObjectMeta.DeepCopy(), src.Status
	redisReplicationSpecs.fromHub(&src.Spec, &dst.Spec)
	return keepHubFields(&dst.ObjectMeta, &src.Spec, redisReplicationSpecs.hubOnly)
}

// ConvertTo converts this RedisSentinel to the hub version.
func (src *RedisSentinel) ConvertTo(dstRaw conversion.Hub) error {
	dst, ok := dstRaw.(*v1beta2.RedisSentinel)
	if !ok {
		return fmt.Errorf("convert RedisSentinel to %T: not the hub", dstRaw)
	}
	dst.ObjectMeta, dst.Status = *src.ObjectMeta.DeepCopy(), src.Status
	redisSentinelSpecs.toHub(&src.Spec, &dst.Spec)
	return restoreHubFields(&dst.ObjectMeta, &dst.Spec)
}

// ConvertFrom converts the hub version to this RedisSentinel.
func (dst *RedisSentinel) ConvertFrom(srcRaw conversion.Hub) error {
	src, ok := srcRaw.(*v1beta2.RedisSentinel)
	if !ok {
		return fmt.Errorf("convert %T to RedisSentinel: not the hub", srcRaw)
	}
	dst.ObjectMeta, dst.Status = *src.ObjectMeta.DeepCopy(), src.Status
	redisSentinelSpecs.fromHub(&src.Spec, &dst.Spec)
	return keepHubFields(&dst.ObjectMeta, &src.Spec, redisSentinelSpecs.hubOnly)
}

// specMapping pairs the fields of a v1beta1 spec S with the fields of the v1beta2 spec H
// they convert to.
type specMapping[S, H any] struct {
	pairs [][2]int // index of the field in S, index of its counterpart in H
	// hubOnly are the JSON names of the fields of H that no field of S converts to.
	hubOnly []string
}

// mustMapSpec is mapSpec for the package's own kinds, whose specs are fixed at compile time:
// a v1beta1 field without a v1beta2 counterpart stops the operator (and every test) at start.
func mustMapSpec[S, H any](spokeOnly ...string) specMapping[S, H] {
	m, err := mapSpec[S, H](spokeOnly...)
	if err != nil {
		panic(err)
	}
	return m
}

// mapSpec pairs each field of S, except those named in spokeOnly, with the field of H of the
// same name (or its spokeRenames name) and the same type.
func mapSpec[S, H any](spokeOnly ...string) (specMapping[S, H], error) {
	var m specMapping[S, H]
	spoke, hub := reflect.TypeFor[S](), reflect.TypeFor[H]()
	paired := make([]bool, hub.NumField())
	for i := range spoke.NumField() {
		f := spoke.Field(i)
		if slices.Contains(spokeOnly, f.Name) {
			continue
		}
		name := f.Name
		if renamed, ok := spokeRenames[name]; ok {
			name = renamed
		}
		h, ok := hub.FieldByName(name)
		if !ok || len(h.Index) != 1 || h.Type != f.Type {
			return m, fmt.Errorf("%s.%s has no counterpart %s.%s of type %s", spoke, f.Name, hub, name, f.Type)
		}
		m.pairs = append(m.pairs, [2]int{i, h.Index[0]})
		paired[h.Index[0]] = true
	}
	for i := range hub.NumField() {
		if !paired[i] {
			m.hubOnly = append(m.hubOnly, jsonName(hub.Field(i)))
		}
	}
	return m, nil
}

// toHub sets hub to spoke converted: each paired field copied, the others zero.
func (m specMapping[S, H]) toHub(spoke *S, hub *H) {
	var zero H
	*hub = zero
	s, h := reflect.ValueOf(spoke).Elem(), reflect.ValueOf(hub).Elem()
	for _, p := range m.pairs {
		h.Field(p[1]).Set(s.Field(p[0]))
	}
}

// fromHub sets spoke to hub converted: each paired field copied, the others zero.
func (m specMapping[S, H]) fromHub(hub *H, spoke *S) {
	var zero S
	*spoke = zero
	s, h := reflect.ValueOf(spoke).Elem(), reflect.ValueOf(hub).Elem()
	for _, p := range m.pairs {
		s.Field(p[0]).Set(h.Field(p[1]))
	}
}

func jsonName(f reflect.StructField) string {
	if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" {
		return name
	}
	return f.Name
}

// keepHubFields stores the named fields of a hub spec (those set) in the v1beta2-fields
// annotation of the v1beta1 object, or removes the annotation when there are none.
func keepHubFields(meta *metav1.ObjectMeta, hubSpec any, fields []string) error {
	raw, err := json.Marshal(hubSpec)
	if err != nil {
		return fmt.Errorf("encode the v1beta2 spec: %w", err)
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(raw, &all); err != nil {
		return fmt.Errorf("decode the v1beta2 spec: %w", err)
	}
	kept := map[string]json.RawMessage{}
	for _, f := range fields {
		if v, ok := all[f]; ok {
			kept[f] = v
		}
	}
	if len(kept) == 0 {
		removeAnnotation(meta, V1beta2FieldsAnnotation)
		return nil
	}
	return setAnnotationJSON(meta, V1beta2FieldsAnnotation, kept)
}

// restoreHubFields lays the fields kept by keepHubFields over the converted hub spec and
// removes the annotation, which belongs to v1beta1 objects only.
func restoreHubFields(meta *metav1.ObjectMeta, hubSpec any) error {
	raw, ok := meta.Annotations[V1beta2FieldsAnnotation]
	if !ok {
		return nil
	}
	if err := json.Unmarshal([]byte(raw), hubSpec); err != nil {
		return fmt.Errorf("read annotation %s: %w", V1beta2FieldsAnnotation, err)
	}
	removeAnnotation(meta, V1beta2FieldsAnnotation)
	return nil
}

func setAnnotationJSON(meta *metav1.ObjectMeta, key string, value any) error {
	raw, err := json.Marshal(value)
	if err != nil {
		return fmt.Errorf("encode annotation %s: %w", key, err)
	}
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	meta.Annotations[key] = string(raw)
	return nil
}

func removeAnnotation(meta *metav1.ObjectMeta, key string) {
	delete(meta.Annotations, key)
	if len(meta.Annotations) == 0 {
		meta.Annotations = nil
	}
}

func copyMap(in map[string]string) map[string]string {
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}
