// Package v1alpha1 holds the v1alpha1 API of the group redis.redis.opstreelabs.in: kinds new to
// this operator, whose shape may still change (RedisBackup, RedisBackupSchedule).
//
// +kubebuilder:object:generate=true
// +groupName=redis.redis.opstreelabs.in
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "redis.redis.opstreelabs.in", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds of this package with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the kinds of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion,
		&RedisBackup{}, &RedisBackupList{},
		&RedisBackupSchedule{}, &RedisBackupScheduleList{},
	)
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
