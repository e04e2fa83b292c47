// Package controller holds the reconcilers of the operator, one file per concern.
package controller

// The operator's permissions, least privilege: controller-gen turns these markers into
// config/rbac/role.yaml.
//
// +kubebuilder:rbac:groups=redis.redis.opstreelabs.in,resources=redis;redisclusters;redisreplications;redissentinels,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=redis.redis.opstreelabs.in,resources=redis/status;redisclusters/status;redisreplications/status;redissentinels/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=redis.redis.opstreelabs.in,resources=redis/finalizers;redisclusters/finalizers;redisreplications/finalizers;redissentinels/finalizers,verbs=update
// Backups: read them, write their status and their finalizer (which deletes their objects);
// schedules create the backups of their runs and delete those their retention lets go.
// +kubebuilder:rbac:groups=redis.redis.opstreelabs.in,resources=redisbackups,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=redis.redis.opstreelabs.in,resources=redisbackups/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=redis.redis.opstreelabs.in,resources=redisbackups/finalizers,verbs=update
// +kubebuilder:rbac:groups=redis.redis.opstreelabs.in,resources=redisbackupschedules,verbs=get;list;watch
// +kubebuilder:rbac:groups=redis.redis.opstreelabs.in,resources=redisbackupschedules/status,verbs=get;update;patch
// Owner references that block the owner's deletion need update on the owner's finalizers.
// +kubebuilder:rbac:groups=redis.redis.opstreelabs.in,resources=redisbackupschedules/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch;create;update;patch;delete
// Deployments: the claim stores of backups on a PersistentVolumeClaim, made and kept by
// apply; they go with their last RedisBackup (owner references), never deleted by the operator.
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=services;configmaps,verbs=get;list;watch;create;update;patch;delete
// Pods: label their redis-role; delete them one by one for a role-aware rolling update.
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;patch;delete
// Secrets: read the users' password Secrets, own the rendered auth Secrets.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch;delete
// PVCs: delete them with their resource; grow their storage request in place.
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;patch;update;delete
// StorageClasses: read, uncached, whether a claim's class allows expansion.
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses,verbs=get
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="";events.k8s.io,resources=events,verbs=create;patch
// The metrics endpoint (HTTPS) asks the API server who a caller is and whether it may get
// /metrics.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
// Leader election needs Leases and Events only in the operator's own namespace.
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete,namespace=redis-operator-system
