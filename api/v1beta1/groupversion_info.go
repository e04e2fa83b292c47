// Package v1beta1 holds the older v1beta1 API of the group redis.redis.opstreelabs.in, served
// so that manifests and stored objects written for it keep working. Its schema accepts what
// both published v1beta1 shapes accepted (test/compat checks them); v1beta2 is the storage
// version and the hub: every v1beta1 object converts to and from it without loss
// (conversion.go).
//
// The building blocks (kubernetesConfig, storage, redisExporter, ...) are the v1beta2 types:
// their v1beta1 shape is a subset of v1beta2's, so sharing them keeps the two versions from
// drifting and makes their fields convert as they are.
//
// +kubebuilder:object:generate=true
// +groupName=redis.redis.opstreelabs.in
package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "redis.redis.opstreelabs.in", Version: "v1beta1"}

	// SchemeBuilder registers the kinds of this package with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the kinds of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion,
		&Redis{}, &RedisList{},
		&RedisCluster{}, &RedisClusterList{},
		&RedisReplication{}, &RedisReplicationList{},
		&RedisSentinel{}, &RedisSentinelList{},
	)
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
