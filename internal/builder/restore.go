package builder

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const (
	// AnnotationRestoredFrom on a StatefulSet names the RedisBackup its pods' data was
	// restored from when the StatefulSet was created: a StatefulSet without it was not
	// created by a restore, and is never restored into.
	AnnotationRestoredFrom = "redis.opstreelabs.in/restored-from"
	// AnnotationRestoreInput on a StatefulSet records the restore it was created with
	// (RestoreInput as JSON): the controller builds the same init container from it for as long
	// as the StatefulSet lives, so that neither the backup's deletion nor a new operator image
	// changes the pod template, which would restart a Redis whose data is its own by then.
	AnnotationRestoreInput = "redis.opstreelabs.in/restore"

	// restoreInitName is the init container that restores the data before Redis starts.
	restoreInitName = "restore"
	// restoreCAVolume holds the store's CA bundle for the restore init container.
	restoreCAVolume = "restore-ca"
	restoreCADir    = "/etc/restore-ca"
	// restoreStateVolume mounts RestoreStateConfigMapName into the restore init container.
	restoreStateVolume = "restore-state"
	restoreStateDir    = "/etc/restore-state"
	// RestoreDoneKey is the key of RestoreStateConfigMapName that says the restore is done
	// (its value names the backup); the init container skips while its file exists.
	RestoreDoneKey = "restored"
	// envPodName gives the restore init container its pod's name (downward API).
	envPodName = "POD_NAME"
	// RestoreCAKey is the key of the CA Secret that holds the PEM bundle, as for backups.
	RestoreCAKey = "ca.crt"
	// RestoreAccessKeyIDKey and RestoreSecretAccessKeyKey are the keys of the credentials
	// Secret, as for backups, and the variables the restore reads them from.
	RestoreAccessKeyIDKey     = "AWS_ACCESS_KEY_ID"
	RestoreSecretAccessKeyKey = "AWS_SECRET_ACCESS_KEY" //nolint:gosec // a key's name, not a credential
	// operatorBinary is the operator's executable in its image.
	operatorBinary = "/redis-operator"
)

// RestoreInput is a restore the controller resolved from spec.restore and its RedisBackup:
// where the snapshot is, what it must be, and the image that restores it.
type RestoreInput struct {
	// BackupName is the RedisBackup's name, kept on the StatefulSet (AnnotationRestoredFrom).
	BackupName string
	// Image is the operator's image, whose binary runs the restore subcommand.
	Image           string
	ImagePullPolicy corev1.PullPolicy
	// The object: the store's endpoint, bucket, region, addressing and key.
	Endpoint, Bucket, Region, Key string
	ForcePathStyle                bool
	// SHA256 and Bytes are the snapshot's, as the backup recorded them.
	SHA256 string
	Bytes  int64
	// CredentialsSecret holds AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; CASecret, when
	// set, ca.crt.
	CredentialsSecret, CASecret string
	// Shards, set for a RedisCluster instead of Key, SHA256 and Bytes, are the snapshots of its
	// shards by leader ordinal: leader pod i restores Shards[i]. Absent from the annotation of
	// a Redis or a RedisReplication, whose record keeps its form.
	Shards []RestoreObject `json:",omitempty"`
}

// RestoreObject is one shard's snapshot: its key in the bucket, its SHA-256 and its size.
type RestoreObject struct {
	Key    string
	SHA256 string
	Bytes  int64
}

// RecordedRestore reads the restore a StatefulSet's annotations record; nil when they record
// none.
func RecordedRestore(annotations map[string]string) (*RestoreInput, error) {
	raw, ok := annotations[AnnotationRestoreInput]
	if !ok {
		return nil, nil
	}
	var in RestoreInput
	if err := json.Unmarshal([]byte(raw), &in); err != nil {
		return nil, fmt.Errorf("annotation %s: %w", AnnotationRestoreInput, err)
	}
	if err := in.check(); err != nil {
		return nil, fmt.Errorf("annotation %s: %w", AnnotationRestoreInput, err)
	}
	return &in, nil
}

// record is the restore as AnnotationRestoreInput holds it.
func (in *RestoreInput) record() string {
	raw, err := json.Marshal(in)
	if err != nil {
		panic(fmt.Sprintf("RestoreInput cannot fail to marshal: %v", err)) // strings, a bool and an int
	}
	return string(raw)
}

// restoreArgs are the subcommand's arguments: every setting but the credentials, which come
// from the environment (a process's arguments are visible to anyone on the node).
func (in *RestoreInput) restoreArgs(appendOnly, firstMaster bool) []string {
	args := []string{"restore", "--endpoint", in.Endpoint, "--bucket", in.Bucket}
	if len(in.Shards) == 0 {
		args = append(args, "--key", in.Key, "--sha256", in.SHA256, "--bytes", strconv.FormatInt(in.Bytes, 10))
	}
	for i, o := range in.Shards {
		// The key last: it is the one part that may hold the separator.
		args = append(args, "--ordinal-object", strings.Join([]string{strconv.Itoa(i), o.SHA256, strconv.FormatInt(o.Bytes, 10), o.Key}, ":"))
	}
	args = append(args, "--data-dir", dataDir)
	if in.Region != "" {
		args = append(args, "--region", in.Region)
	}
	if in.ForcePathStyle {
		args = append(args, "--force-path-style")
	}
	if in.CASecret != "" {
		args = append(args, "--ca-file", restoreCADir+"/"+RestoreCAKey)
	}
	if appendOnly {
		args = append(args, "--appendonly")
	}
	if firstMaster {
		args = append(args, "--only-ordinal", "0")
	}
	if in.tracked(firstMaster) {
		args = append(args, "--skip-file", restoreStateDir+"/"+RestoreDoneKey)
	}
	return args
}

// tracked: the restore is done in some pods only (a replication's pod 0, a cluster's leaders)
// and, once the resource is restored, in none: the state ConfigMap says so to pods started
// later, which get their data from a master instead.
func (in *RestoreInput) tracked(firstMaster bool) bool {
	return firstMaster || len(in.Shards) > 0
}

// restoreContainer is the init container that fills the data volume from the backup before
// Redis first starts; a pod that restarts finds the data restored and leaves it alone.
func (w *workload) restoreContainer() corev1.Container {
	in := w.restore
	// Optional: a pod that restarts after the credentials Secret was deleted finds its data
	// restored (the marker) and needs none; a first restore without them fails and says so.
	secretEnv := func(key string) corev1.EnvVar {
		return corev1.EnvVar{Name: key, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: in.CredentialsSecret}, Key: key, Optional: ptr.To(true),
		}}}
	}
	mounts := []corev1.VolumeMount{{Name: w.name, MountPath: dataDir}}
	if in.CASecret != "" {
		mounts = append(mounts, corev1.VolumeMount{Name: restoreCAVolume, MountPath: restoreCADir, ReadOnly: true})
	}
	env := []corev1.EnvVar{secretEnv(RestoreAccessKeyIDKey), secretEnv(RestoreSecretAccessKeyKey)}
	if in.tracked(w.restoreFirstMaster) {
		// A replication's pods share this template: the subcommand restores only in pod 0,
		// which the controller makes the first master; a cluster's leaders each restore the
		// shard of their ordinal. Every pod skips once the state ConfigMap, mounted as a
		// volume (its content is read when a pod starts, and changing it changes no
		// template), says the resource was restored.
		mounts = append(mounts, corev1.VolumeMount{Name: restoreStateVolume, MountPath: restoreStateDir, ReadOnly: true})
		env = append(env, corev1.EnvVar{Name: envPodName, ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}})
	}
	return corev1.Container{
		Name:            restoreInitName,
		Image:           in.Image,
		ImagePullPolicy: pullPolicy(in.ImagePullPolicy, in.Image),
		Command:         append([]string{operatorBinary}, in.restoreArgs(w.persistence, w.restoreFirstMaster)...),
		Env:             env,
		Resources:       derefResources(w.resources),
		SecurityContext: w.ownSecurityContext(w.securityContext),
		VolumeMounts:    mounts,
	}
}

// restoreVolumes is the CA bundle's volume, when the store has one, and a replication's
// restore state.
func (w *workload) restoreVolumes() []corev1.Volume {
	if w.restore == nil {
		return nil
	}
	var out []corev1.Volume
	if w.restore.CASecret != "" {
		out = append(out, corev1.Volume{Name: restoreCAVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName:  w.restore.CASecret,
			Optional:    ptr.To(true), // as the credentials: a restored pod needs it no more
			DefaultMode: w.secretFileMode(),
			Items:       []corev1.KeyToPath{{Key: RestoreCAKey, Path: RestoreCAKey}},
		}}})
	}
	if w.restore.tracked(w.restoreFirstMaster) {
		// Every key, not listed items: the key appears once the restore is done.
		out = append(out, corev1.Volume{Name: restoreStateVolume, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: RestoreStateConfigMapName(w.name)},
			Optional:             ptr.To(true),
		}}})
	}
	return out
}

// restoreStateConfigMap is a replication's restore state: RestoreDoneKey, naming the backup,
// once done (the controller says so: the replication was Ready on the restored data), else
// nothing.
func (w *workload) restoreStateConfigMap(done bool) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: w.meta(RestoreStateConfigMapName(w.name), w.labels(), nil),
		Data:       map[string]string{},
	}
	if done {
		cm.Data[RestoreDoneKey] = w.restore.BackupName
	}
	return cm
}

// check refuses a restore the pod could not run.
func (in *RestoreInput) check() error {
	switch {
	case in.BackupName == "":
		return errors.New("restore: no backup name")
	case in.Image == "":
		return errors.New("restore: the operator's image is unknown (set --operator-image or OPERATOR_IMAGE)")
	case in.Endpoint == "" || in.Bucket == "":
		return errors.New("restore: no endpoint or bucket")
	case in.CredentialsSecret == "":
		return errors.New("restore: no credentials Secret")
	}
	if len(in.Shards) == 0 {
		return RestoreObject{Key: in.Key, SHA256: in.SHA256, Bytes: in.Bytes}.check()
	}
	if in.Key != "" || in.SHA256 != "" || in.Bytes != 0 {
		return errors.New("restore: both one object and shards")
	}
	for i, o := range in.Shards {
		if err := o.check(); err != nil {
			return fmt.Errorf("shard of leader %d: %w", i, err)
		}
	}
	return nil
}

func (o RestoreObject) check() error {
	switch {
	case o.Key == "":
		return errors.New("restore: no key")
	case o.SHA256 == "" || o.Bytes <= 0:
		return errors.New("restore: no checksum or size")
	}
	return nil
}
