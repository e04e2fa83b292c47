// Package v1beta2 holds the v1beta2 API of the group redis.redis.opstreelabs.in: the kinds
// Redis, RedisCluster, RedisReplication and RedisSentinel. The field names and JSON types are
// the compatibility contract with existing users' manifests (see test/compat).
//
// +kubebuilder:object:generate=true
// +groupName=redis.redis.opstreelabs.in
package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "redis.redis.opstreelabs.in", Version: "v1beta2"}

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
