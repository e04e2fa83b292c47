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
	// kind is Redis, RedisReplication or RedisCluster (group redis.redis.opstreelabs.in).
	// +kubebuilder:validation:Enum=Redis;RedisReplication;RedisCluster
	// +required
	Kind string `json:"kind"`
	// name is the resource's name.
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`
}

// SecretReference names a Secret in the backup's namespace.
type SecretReference struct {
	// name is the Secret's name.
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`
}

// S3Storage is a bucket of an S3-compatible object store (AWS S3, MinIO, SeaweedFS, ...).
type S3Storage struct {
	// endpoint is the store's URL, "https://host[:port]" or "http://host[:port]"; a bare
	// "host[:port]" is taken as HTTPS.
	// +kubebuilder:validation:MinLength=1
	// +required
	Endpoint string `json:"endpoint"`
	// bucket is an existing bucket.
	// +kubebuilder:validation:MinLength=3
	// +required
	Bucket string `json:"bucket"`
	// prefix is put before the objects' keys: <prefix>/<namespace>/<backup>/<pod>.rdb.
	// +optional
	Prefix string `json:"prefix,omitempty"`
	// region is the bucket's region; empty lets the store say.
	// +optional
	Region string `json:"region,omitempty"`
	// forcePathStyle addresses the bucket in the URL's path rather than its host name, as most
	// self-hosted stores need.
	// +optional
	ForcePathStyle bool `json:"forcePathStyle,omitempty"`
	// credentialsSecret holds the keys AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.
	// +required
	CredentialsSecret SecretReference `json:"credentialsSecret"`
	// caSecret holds ca.crt, the PEM bundle the store's certificate is verified against
	// instead of the system's roots; unset, the system's roots verify it.
	// +optional
	CASecret *SecretReference `json:"caSecret,omitempty"`
}

// PVCStorage is a PersistentVolumeClaim in the backup's namespace. The operator runs an S3
// gateway over it in that namespace (Deployment, Service and Secret <claim>-backup-store),
// shared by the backups on the claim and gone with the last of them; the snapshots are the
// files <subPath>/backups/<namespace>/<backup>/<pod>.rdb of the claim.
type PVCStorage struct {
	// claimName is the PersistentVolumeClaim's name.
	// +kubebuilder:validation:MinLength=1
	// +required
	ClaimName string `json:"claimName"`
	// subPath is the folder of the volume the backups go under.
	// +optional
	SubPath string `json:"subPath,omitempty"`
}

// BackupStorage is where the snapshots go: exactly one of s3 and persistentVolumeClaim.
// +kubebuilder:validation:XValidation:rule="has(self.s3) != has(self.persistentVolumeClaim)",message="storage takes exactly one of s3 and persistentVolumeClaim"
type BackupStorage struct {
	// s3 is a bucket of an S3-compatible object store (AWS S3, MinIO, SeaweedFS, ...).
	// +optional
	S3 *S3Storage `json:"s3,omitempty"`
	// persistentVolumeClaim is a PersistentVolumeClaim in the backup's namespace.
	// +optional
	PersistentVolumeClaim *PVCStorage `json:"persistentVolumeClaim,omitempty"`
}

// RedisBackupSpec is one backup of a resource, taken once.
type RedisBackupSpec struct {
	// target is the resource to back up, in the backup's namespace.
	// +required
	Target BackupTarget `json:"target"`
	// storage is where the snapshots go: exactly one of s3 and persistentVolumeClaim.
	// +required
	Storage BackupStorage `json:"storage"`
	// source is the node each shard is read from: PreferReplica (default) or Master.
	// +kubebuilder:default=PreferReplica
	// +optional
	Source BackupSource `json:"source,omitempty"`
}

// ShardBackup is the snapshot of one shard (the whole data set outside a cluster).
type ShardBackup struct {
	// slotRanges are the cluster slots the shard served, "0-5460"; empty outside a cluster.
	// +optional
	// +listType=atomic
	SlotRanges []string `json:"slotRanges,omitempty"`
	// node is the pod the snapshot was read from.
	// +required
	Node string `json:"node"`
	// role is the node's role when it was read: master or replica.
	// +optional
	Role string `json:"role,omitempty"`
	// replicationOffset is the node's replication offset just before the snapshot was taken:
	// the snapshot holds every write up to it at least.
	// +optional
	ReplicationOffset int64 `json:"replicationOffset,omitempty"`
	// location is the object, s3://bucket/key, or on a claim pvc://claim/<subPath>/backups/key.
	// +required
	Location string `json:"location"`
	// bytes is the snapshot's size.
	// +required
	Bytes int64 `json:"bytes"`
	// sha256 is the snapshot's digest, lower-case hexadecimal.
	// +required
	SHA256 string `json:"sha256"`
	// rdbVersion is the version in the snapshot's header.
	// +optional
	RDBVersion int `json:"rdbVersion,omitempty"`
}

// RedisBackupStatus is what became of the backup.
type RedisBackupStatus struct {
	// phase is Pending, Running, Completed or Failed.
	// +optional
	Phase BackupPhase `json:"phase,omitempty"`
	// startedAt is when the operator began reading the snapshot, at the backup's first attempt.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// attempts is how many times the operator began streaming the backup into its store. A
	// store that cannot be reached for a moment (connection refused, timeout, 5xx) is tried
	// again, a bounded number of times, while the backup stays Running.
	// +kubebuilder:validation:Minimum=1
	// +optional
	Attempts *int32 `json:"attempts,omitempty"`
	// nextAttemptAt is when the backup is tried again after a store failure that may pass;
	// unset otherwise.
	// +optional
	NextAttemptAt *metav1.Time `json:"nextAttemptAt,omitempty"`
	// completedAt is when the backup ended, Completed or Failed.
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`
	// location is where the backup's objects are: s3://bucket/<prefix>/<namespace>/<name>/, or on
	// a claim pvc://<claim>/<subPath>/backups/<namespace>/<name>/.
	// +optional
	Location string `json:"location,omitempty"`
	// totalBytes is the sum of the shards' bytes.
	// +optional
	TotalBytes int64 `json:"totalBytes,omitempty"`
	// size is TotalBytes for people ("1.5 MiB"), for kubectl get.
	// +optional
	Size string `json:"size,omitempty"`
	// shards are the snapshots taken, one per shard, once Completed.
	// +optional
	// +listType=atomic
	Shards []ShardBackup `json:"shards,omitempty"`
	// observedGeneration is the metadata.generation that the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions are Ready (the backup is Completed and stored) and Progressing.
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
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is one backup of a resource, taken once.
	// +required
	Spec RedisBackupSpec `json:"spec"`
	// status is what became of the backup.
	// +optional
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
