// Package v1beta2 holds the v1beta2 API of the group redis.redis.opstreelabs.in: the kinds
// Redis, RedisCluster, RedisReplication and RedisSentinel. The field names and JSON types are
// the compatibility contract with existing users' manifests; see shared reference schemas.
//
// +kubebuilder:object:generate=true
// +groupName=redis.redis.opstreelabs.in
package v1beta2

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "redis.redis.opstreelabs.in", Version: "v1beta2"}

	// SchemeBuilder registers the kinds of this package with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the kinds of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
