package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The kinds a backup can be taken of.
const (
	TargetRedis            = "Redis"
	TargetRedisReplication = "RedisReplication"
	TargetRedisCluster     = "RedisCluster"
)

// BackupSource says which node of a shard the snapshot is read from.
// +kubebuilder:validation:Enum=PreferReplica;Master
type BackupSource string

const (
	// SourcePreferReplica reads from a replica in sync when there is one, else the master:
	// the master's memory then pays nothing for the snapshot's fork.
	SourcePreferReplica BackupSource = "PreferReplica"
	// SourceMaster always reads from the master.
	SourceMaster BackupSource = "Master"
)

// BackupPhase is where a backup is in its life. Completed and Failed are final: a backup is
// taken once.
// +kubebuilder:validation:Enum=Pending;Running;Completed;Failed
type BackupPhase string

const (
	BackupPending   BackupPhase = "Pending"
	BackupRunning   BackupPhase = "Running"
	BackupCompleted BackupPhase = "Completed"
	BackupFailed    BackupPhase = "Failed"
)

// BackupTarget is the resource to back up, in the backup's namespace.
type BackupTarget struct {
	// Kind is Redis, RedisReplication or RedisCluster (group redis.redis.opstreelabs.in).
	// +kubebuilder:validation:Enum=Redis;RedisReplication;RedisCluster
	Kind string `json:"kind"`
	// Name is the resource's name.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// SecretReference names a Secret in the backup's namespace.
type SecretReference struct {
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// S3Storage is a bucket of an S3-compatible object store (AWS S3, MinIO, SeaweedFS, ...).
type S3Storage struct {
	// Endpoint is the store's URL, "https://host[:port]" or "http://host[:port]"; a bare
	// "host[:port]" is taken as HTTPS.
	// +kubebuilder:validation:MinLength=1
	Endpoint string `json:"endpoint"`
	// Bucket is an existing bucket.
	// +kubebuilder:validation:MinLength=3
	Bucket string `json:"bucket"`
	// Prefix is put before the objects' keys: <prefix>/<namespace>/<backup>/<pod>.rdb.
	// +optional
	Prefix string `json:"prefix,omitempty"`
	// Region is the bucket's region; empty lets the store say.
	// +optional
	Region string `json:"region,omitempty"`
	// ForcePathStyle addresses the bucket in the URL's path rather than its host name, as most
	// self-hosted stores need.
	// +optional
	ForcePathStyle bool `json:"forcePathStyle,omitempty"`
	// CredentialsSecret holds the keys AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.
	CredentialsSecret SecretReference `json:"credentialsSecret"`
	// CASecret, when set, holds ca.crt, the PEM bundle the store's certificate is verified
	// against instead of the system's roots.
	// +optional
	CASecret *SecretReference `json:"caSecret,omitempty"`
}

// PVCStorage is a PersistentVolumeClaim in the backup's namespace.
type PVCStorage struct {
	// +kubebuilder:validation:MinLength=1
	ClaimName string `json:"claimName"`
	// SubPath is the folder of the volume the backups go under.
	// +optional
	SubPath string `json:"subPath,omitempty"`
}

// BackupStorage is where the snapshots go: exactly one of s3 and persistentVolumeClaim.
// +kubebuilder:validation:XValidation:rule="has(self.s3) != has(self.persistentVolumeClaim)",message="storage takes exactly one of s3 and persistentVolumeClaim"
type BackupStorage struct {
	// +optional
	S3 *S3Storage `json:"s3,omitempty"`
	// +optional
	PersistentVolumeClaim *PVCStorage `json:"persistentVolumeClaim,omitempty"`
}

// RedisBackupSpec is one backup of a resource, taken once.
type RedisBackupSpec struct {
	Target  BackupTarget  `json:"target"`
	Storage BackupStorage `json:"storage"`
	// Source is the node each shard is read from: PreferReplica (default) or Master.
	// +kubebuilder:default=PreferReplica
	// +optional
	Source BackupSource `json:"source,omitempty"`
}

// ShardBackup is the snapshot of one shard (the whole data set outside a cluster).
type ShardBackup struct {
	// SlotRanges are the cluster slots the shard served, "0-5460"; empty outside a cluster.
	// +optional
	SlotRanges []string `json:"slotRanges,omitempty"`
	// Node is the pod the snapshot was read from.
	Node string `json:"node"`
	// Role is the node's role when it was read: master or replica.
	// +optional
	Role string `json:"role,omitempty"`
	// ReplicationOffset is the node's replication offset just before the snapshot was taken:
	// the snapshot holds every write up to it at least.
	// +optional
	ReplicationOffset int64 `json:"replicationOffset,omitempty"`
	// Location is the object, s3://bucket/key.
	Location string `json:"location"`
	// Bytes is the snapshot's size.
	Bytes int64 `json:"bytes"`
	// SHA256 is the snapshot's digest, lower-case hexadecimal.
	SHA256 string `json:"sha256"`
	// RDBVersion is the version in the snapshot's header.
	// +optional
	RDBVersion int `json:"rdbVersion,omitempty"`
}

// RedisBackupStatus is what became of the backup.
type RedisBackupStatus struct {
	// Phase is Pending, Running, Completed or Failed.
	// +optional
	Phase BackupPhase `json:"phase,omitempty"`
	// StartedAt is when the operator began reading the snapshot, at the backup's first attempt.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// Attempts is how many times the operator began streaming the backup into its store. A
	// store that cannot be reached for a moment (connection refused, timeout, 5xx) is tried
	// again, a bounded number of times, while the backup stays Running.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Attempts int32 `json:"attempts,omitempty"`
	// NextAttemptAt is when the backup is tried again after a store failure that may pass;
	// unset otherwise.
	// +optional
	NextAttemptAt *metav1.Time `json:"nextAttemptAt,omitempty"`
	// CompletedAt is when the backup ended, Completed or Failed.
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`
	// Location is where the backup's objects are: s3://bucket/<prefix>/<namespace>/<name>/.
	// +optional
	Location string `json:"location,omitempty"`
	// TotalBytes is the sum of the shards' bytes.
	// +optional
	TotalBytes int64 `json:"totalBytes,omitempty"`
	// Size is TotalBytes for people ("1.5 MiB"), for kubectl get.
	// +optional
	Size string `json:"size,omitempty"`
	// Shards are the snapshots taken, one per shard, once Completed.
	// +optional
	Shards []ShardBackup `json:"shards,omitempty"`
	// ObservedGeneration is the metadata.generation that the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready (the backup is Completed and stored) and Progressing.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// RedisBackup is one snapshot of a Redis, RedisReplication or RedisCluster, streamed over the
// network (as a replica syncs) into an object store. A backup is taken once: a Completed or
// Failed one is never taken again; make a new RedisBackup for another.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:resource:shortName=rb
// +kubebuilder:validation:XValidation:rule="self.spec == oldSelf.spec",message="a RedisBackup's spec cannot change: make a new RedisBackup"
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.target.name`
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.target.kind`,priority=1
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Size",type=string,JSONPath=`.status.size`
// +kubebuilder:printcolumn:name="Attempts",type=integer,JSONPath=`.status.attempts`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type RedisBackup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   RedisBackupSpec   `json:"spec"`
	Status RedisBackupStatus `json:"status,omitempty"`
}

// Finished reports whether the backup reached a final phase.
func (b *RedisBackup) Finished() bool {
	return b.Status.Phase == BackupCompleted || b.Status.Phase == BackupFailed
}

// RedisBackupList is a list of RedisBackup.
//
// +kubebuilder:object:root=true
type RedisBackupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RedisBackup `json:"items"`
}
