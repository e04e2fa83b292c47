package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rediskube/redis-operator/api/v1alpha1"
	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/status"
)

// ConditionRestored tells what became of spec.restore: True once the pod (a replication: its
// master, with every replica linked; a cluster: every slot served, every replica linked) is
// Ready on the restored data, False while it waits for
// its backup or when the restore is refused.
const ConditionRestored = "Restored"

// restoreWarning is the key of a restore's lasting trouble in the Memory's warnings.
const restoreWarning = "restore"

// restoreAction is what the restore phase does with a resource's spec.restore.
type restoreAction int

const (
	// restoreNone: no spec.restore; the StatefulSet keeps the backup it names, if any.
	restoreNone restoreAction = iota
	// restoreBuild: the StatefulSet is built with the restore's init container.
	restoreBuild
	// restoreDone: the StatefulSet was restored and its pod was Ready since; its backup can
	// no longer be read, so the init container (which would do nothing) is left out.
	restoreDone
	// restoreWait: the backup is not there or not Completed yet; nothing is created meanwhile.
	restoreWait
	// restoreRefuse: the backup cannot be restored into the resource; nothing is created.
	restoreRefuse
	// restoreRefuseRunning: the resource runs already, not from this restore: it is never
	// overwritten, and reconciled as if spec.restore were not set.
	restoreRefuseRunning
)

// restoreFacts are what the restore decision reads from the cluster.
type restoreFacts struct {
	// kind is the resource's kind (Redis, ...).
	kind string
	spec *v1beta2.RestoreSpec
	// statefulSetExists, with restoredFrom its AnnotationRestoredFrom ("" when absent).
	statefulSetExists bool
	restoredFrom      string
	// recorded is the restore the StatefulSet was created with (AnnotationRestoreInput).
	recorded *builder.RestoreInput
	// restored: the Restored condition is True (the pod was Ready on the restored data).
	restored bool
	// backup is the RedisBackup spec.restore names; nil when there is none.
	backup *v1alpha1.RedisBackup
	// operatorImage runs the restore (Dependencies.OperatorImage).
	operatorImage string
	// unsupported: the operator cannot restore into this kind yet.
	unsupported bool
	// leaders is a RedisCluster's designed number of leaders (shards).
	leaders int
	// claimStoreDown says why the claim store a backup on a PersistentVolumeClaim is read
	// from serves no pod yet; "" when it does, or for a backup in S3.
	claimStoreDown string
}

// restoreDecision is what the restore phase does, and why.
type restoreDecision struct {
	action          restoreAction
	reason, message string
	// input is the builder's, with restoreBuild.
	input *builder.RestoreInput
	// restoredFrom is the backup the StatefulSet names (AnnotationRestoredFrom).
	restoredFrom string
	// requeue: a restoreWait that no watch ends (the claim store becoming available).
	requeue bool
}

// decideRestore is the restore phase's pure decision. A running resource is never restored
// into, and a refused or waiting restore creates nothing, so that no empty Redis starts in
// the restored one's place.
func decideRestore(f restoreFacts) restoreDecision {
	if f.spec == nil {
		return restoreDecision{action: restoreNone, restoredFrom: f.restoredFrom}
	}
	name := f.spec.BackupName
	if f.unsupported {
		message := fmt.Sprintf("spec.restore names RedisBackup %s, but restoring into a %s is not supported yet", name, f.kind)
		if f.statefulSetExists {
			return restoreDecision{action: restoreRefuseRunning, reason: status.ReasonRestoreUnsupported, restoredFrom: f.restoredFrom,
				message: message + ": the running resource is left as it is; remove spec.restore"}
		}
		return restoreDecision{action: restoreRefuse, reason: status.ReasonRestoreUnsupported,
			message: message + ": nothing is created, so that no empty resource starts in its place; remove spec.restore"}
	}
	if f.statefulSetExists && f.restoredFrom != name {
		return restoreDecision{action: restoreRefuseRunning, reason: status.ReasonRestoreRefused, restoredFrom: f.restoredFrom,
			message: fmt.Sprintf("spec.restore names RedisBackup %s, but the %s runs already and was not created from it: "+
				"a running resource is never overwritten; restore into a new resource", name, f.kind)}
	}
	if f.statefulSetExists && f.recorded != nil && f.recorded.BackupName == name {
		// The pod template keeps the restore it was created with, whatever became of the
		// backup or of the operator's image since: changing it would restart the pod.
		message := fmt.Sprintf("restoring RedisBackup %s (%s/%s, %d bytes)", name, f.recorded.Bucket, f.recorded.Key, f.recorded.Bytes)
		if n := len(f.recorded.Shards); n > 0 {
			message = fmt.Sprintf("restoring RedisBackup %s (%d shards of bucket %s)", name, n, f.recorded.Bucket)
		}
		return restoreDecision{action: restoreBuild, input: f.recorded, restoredFrom: name, message: message}
	}
	d := checkBackup(f)
	if d.action == restoreBuild || !f.statefulSetExists || !f.restored {
		return d
	}
	// Restored, and the backup is gone or changed since: the data is Redis's own now.
	return restoreDecision{action: restoreDone, restoredFrom: name}
}

// checkBackup decides from the backup alone.
func checkBackup(f restoreFacts) restoreDecision {
	name := f.spec.BackupName
	b := f.backup
	if b == nil {
		return restoreDecision{action: restoreWait, reason: status.ReasonRestoreBackupNotFound,
			message: fmt.Sprintf("waiting for RedisBackup %s to restore from: there is none in this namespace", name)}
	}
	refuse := func(reason, format string, args ...any) restoreDecision {
		return restoreDecision{action: restoreRefuse, reason: reason, message: fmt.Sprintf(format, args...)}
	}
	switch b.Status.Phase {
	case v1alpha1.BackupCompleted:
	case v1alpha1.BackupFailed:
		return refuse(status.ReasonRestoreBackupFailed, "RedisBackup %s failed: there is nothing to restore; name a Completed backup", name)
	default:
		return restoreDecision{action: restoreWait, reason: status.ReasonRestoreBackupNotReady,
			message: fmt.Sprintf("waiting for RedisBackup %s to complete (phase %s) before restoring it", name, phaseOrPending(b.Status.Phase))}
	}
	if b.Spec.Target.Kind != f.kind {
		return refuse(status.ReasonRestoreMismatch, "RedisBackup %s is of a %s, not of a %s: it cannot be restored into this one",
			name, b.Spec.Target.Kind, f.kind)
	}
	cluster := f.kind == "RedisCluster"
	var order []int // a cluster's: the shard each leader ordinal restores
	switch {
	case !cluster && len(b.Status.Shards) != 1:
		return refuse(status.ReasonRestoreMismatch, "RedisBackup %s holds %d snapshots, a %s restores exactly one", name, len(b.Status.Shards), f.kind)
	case cluster && len(b.Status.Shards) != f.leaders:
		return refuse(status.ReasonRestoreMismatch, "RedisBackup %s holds %d shards and this RedisCluster has %d leaders: "+
			"a cluster restores with as many leaders as its backup had shards (set clusterSize to %d)", name, len(b.Status.Shards), f.leaders, len(b.Status.Shards))
	case cluster:
		var err error
		if order, err = shardOrdinals(b.Status.Shards, f.leaders); err != nil {
			return refuse(status.ReasonRestoreMismatch, "RedisBackup %s cannot be restored into this RedisCluster: %v", name, err)
		}
	}
	// A backup on a claim is read through the claim's store, which the backup keeps (it is
	// one of its owners) in the restored resource's namespace.
	s3 := backupS3(b)
	if s3 == nil {
		return refuse(status.ReasonRestoreUnsupported, "RedisBackup %s names no storage the operator can read", name)
	}
	var objects []builder.RestoreObject
	prefix := locationPrefix(b)
	for _, shard := range b.Status.Shards {
		key, ok := strings.CutPrefix(shard.Location, prefix)
		if !ok || key == "" || shard.SHA256 == "" || shard.Bytes <= 0 {
			return refuse(status.ReasonRestoreMismatch, "RedisBackup %s records no object under %s with its size and SHA-256 (%s)", name, prefix, shard.Location)
		}
		objects = append(objects, builder.RestoreObject{Key: key, SHA256: shard.SHA256, Bytes: shard.Bytes})
	}
	if f.operatorImage == "" {
		return refuse(status.ReasonRestoreUnsupported, "the operator does not know its own image (--operator-image, OPERATOR_IMAGE), which runs the restore")
	}
	in := &builder.RestoreInput{
		BackupName: name, Image: f.operatorImage,
		Endpoint: s3.Endpoint, Bucket: s3.Bucket, Region: s3.Region, ForcePathStyle: s3.ForcePathStyle,
		CredentialsSecret: s3.CredentialsSecret.Name,
	}
	if s3.CASecret != nil {
		in.CASecret = s3.CASecret.Name
	}
	if f.claimStoreDown != "" {
		// The init container would only fail until the store answers: nothing is created
		// before it does.
		return restoreDecision{action: restoreWait, reason: status.ReasonRestoreBackupNotReady, requeue: true,
			message: fmt.Sprintf("waiting for the store of PersistentVolumeClaim %s that RedisBackup %s is read from: %s",
				b.Spec.Storage.PersistentVolumeClaim.ClaimName, name, f.claimStoreDown)}
	}
	if cluster {
		for _, shard := range order {
			in.Shards = append(in.Shards, objects[shard])
		}
		return restoreDecision{action: restoreBuild, input: in, restoredFrom: name,
			message: fmt.Sprintf("restoring RedisBackup %s (%d shards, %d bytes)", name, len(objects), b.Status.TotalBytes)}
	}
	shard := b.Status.Shards[0]
	in.Key, in.SHA256, in.Bytes = objects[0].Key, objects[0].SHA256, objects[0].Bytes
	return restoreDecision{action: restoreBuild, input: in, restoredFrom: name,
		message: fmt.Sprintf("restoring RedisBackup %s (%s, %d bytes)", name, shard.Location, shard.Bytes)}
}

// shardOrdinals maps a cluster backup's shards onto the leaders of a cluster of that many
// (the caller checks the counts): leader i restores shard order[i], the shard whose slots
// overlap most with i's designed range (redis.SplitSlots), which the restored leader then
// serves, its keys with it. Shards that do not map one to one (two on one range, a shard
// without slots) are an error: the cluster would start with keys on a node that does not
// serve them, or without some.
func shardOrdinals(shards []v1alpha1.ShardBackup, leaders int) ([]int, error) {
	designed := redis.SplitSlots(leaders)
	order := make([]int, leaders)
	for i := range order {
		order[i] = -1
	}
	for s, shard := range shards {
		if len(shard.SlotRanges) == 0 {
			return nil, fmt.Errorf("shard %s records no slot range", shard.Node)
		}
		overlaps := make([]int, len(designed))
		for _, text := range shard.SlotRanges {
			r, err := redis.ParseSlotRange(text)
			if err != nil {
				return nil, fmt.Errorf("shard %s: %w", shard.Node, err)
			}
			for i, want := range designed {
				if lo, hi := max(r.Start, want.Start), min(r.End, want.End); lo <= hi {
					overlaps[i] += hi - lo + 1
				}
			}
		}
		best := 0
		for i := range overlaps {
			if overlaps[i] > overlaps[best] {
				best = i
			}
		}
		if prev := order[best]; prev >= 0 {
			return nil, fmt.Errorf("shards %s and %s both serve most of leader %d's slots %s: the backup's slot map does not fit %d leaders",
				shards[prev].Node, shard.Node, best, designed[best], leaders)
		}
		order[best] = s
	}
	for i, s := range order {
		if s < 0 {
			return nil, fmt.Errorf("no shard serves leader %d's slots %s", i, designed[i])
		}
	}
	return order, nil
}

func phaseOrPending(p v1alpha1.BackupPhase) v1alpha1.BackupPhase {
	if p == "" {
		return v1alpha1.BackupPending
	}
	return p
}

// restoreState is what the restore phase resolved for the build and the later phases.
type restoreState struct {
	decision restoreDecision
}

// resolveRestore is the restore phase of a kind: it reads the StatefulSet (statefulSet, the
// first the kind creates) and the backup, decides, writes the conditions and events, and
// stops the reconcile when nothing may be created yet. A kind the operator cannot restore
// into yet (supported false) refuses spec.restore the same way.
func (d *Dependencies) resolveRestore(ctx context.Context, w *workloadScope, kind, statefulSet string, supported bool,
	spec *v1beta2.RestoreSpec, state *restoreState,
) (bool, error) {
	owner := w.spec.owner
	facts := restoreFacts{kind: kind, spec: spec, operatorImage: d.OperatorImage, unsupported: !supported,
		restored: meta.IsStatusConditionTrue(w.Conditions.List(), ConditionRestored)}
	if cr, ok := owner.(*v1beta2.RedisCluster); ok {
		facts.leaders = int(builder.LeaderReplicas(cr))
	}
	var sts appsv1.StatefulSet
	err := d.Client.Get(ctx, types.NamespacedName{Namespace: owner.GetNamespace(), Name: statefulSet}, &sts)
	switch {
	case err == nil:
		facts.statefulSetExists, facts.restoredFrom = true, sts.Annotations[builder.AnnotationRestoredFrom]
		if facts.recorded, err = builder.RecordedRestore(sts.Annotations); err != nil {
			// Edited by hand: the backup, if still there, gives the restore again.
			log.FromContext(ctx).Info("the StatefulSet's recorded restore cannot be read; resolving it from the backup", "error", err.Error())
			facts.recorded = nil
		}
	case !apierrors.IsNotFound(err):
		return false, fmt.Errorf("read StatefulSet %s: %w", statefulSet, err)
	}
	if spec != nil && supported {
		var b v1alpha1.RedisBackup
		err := d.Client.Get(ctx, types.NamespacedName{Namespace: owner.GetNamespace(), Name: spec.BackupName}, &b)
		switch {
		case err == nil:
			facts.backup = &b
			if facts.claimStoreDown, err = d.claimStoreDown(ctx, &b); err != nil {
				return false, err
			}
		case !apierrors.IsNotFound(err):
			return false, fmt.Errorf("read RedisBackup %s: %w", spec.BackupName, err)
		}
	}
	state.decision = decideRestore(facts)
	dec := state.decision
	warned := w.memory.warned
	switch dec.action {
	case restoreNone:
		w.Conditions.Remove(ConditionRestored)
		warned.Cleared(owner.GetUID(), restoreWarning)
	case restoreBuild, restoreDone:
		warned.Cleared(owner.GetUID(), restoreWarning)
		if !facts.restored {
			w.Conditions.Set(ConditionRestored, metav1.ConditionFalse, status.ReasonRestoring, dec.message)
		}
	case restoreWait:
		w.Conditions.Set(ConditionRestored, metav1.ConditionFalse, dec.reason, dec.message)
		w.Conditions.Progressing(dec.reason, dec.message)
		if dec.requeue {
			w.Requeue(ctx, backupRetry, dec.message)
		}
		return true, nil // the RedisBackup watch (or the requeue) brings us back
	case restoreRefuse, restoreRefuseRunning:
		w.Conditions.Set(ConditionRestored, metav1.ConditionFalse, dec.reason, dec.message)
		if warned.FirstWarning(owner.GetUID(), restoreWarning, dec.message) {
			d.Recorder.Eventf(owner, nil, corev1.EventTypeWarning, dec.reason, "Restore", "%s", dec.message)
		}
		if dec.action == restoreRefuse {
			w.Conditions.Degraded(dec.reason, dec.message)
			return true, nil
		}
		// The running resource is reconciled as usual; finishRestore keeps it Degraded.
	}
	return false, nil
}

// claimStoreDown says why the claim store of a backup on a PersistentVolumeClaim serves no
// pod; "" when it does, or for a backup in S3.
func (d *Dependencies) claimStoreDown(ctx context.Context, b *v1alpha1.RedisBackup) (string, error) {
	pvc := b.Spec.Storage.PersistentVolumeClaim
	if pvc == nil {
		return "", nil
	}
	name := builder.ClaimStoreName(pvc.ClaimName)
	var store appsv1.Deployment
	if err := d.Client.Get(ctx, types.NamespacedName{Namespace: b.Namespace, Name: name}, &store); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Sprintf("Deployment %s does not exist", name), nil
		}
		return "", fmt.Errorf("read Deployment %s: %w", name, err)
	}
	if why := deploymentUnavailable(&store); why != "" {
		return fmt.Sprintf("Deployment %s is not available: %s", name, why), nil
	}
	return "", nil
}

// finishRestore keeps a refused restore of a running resource Degraded whatever the later
// phases said, until spec.restore is removed or names the backup it was created from.
func finishRestore(w *workloadScope, state *restoreState) {
	if dec := state.decision; dec.action == restoreRefuseRunning {
		// Set one by one, not with Degraded, which would also forget that the pod said it was
		// Ready: the health phase would then tell RedisReady again at every reconcile.
		w.Conditions.Set(v1beta2.ConditionReady, metav1.ConditionFalse, dec.reason, dec.message)
		w.Conditions.Set(v1beta2.ConditionProgressing, metav1.ConditionFalse, dec.reason, dec.message)
		w.Conditions.Set(v1beta2.ConditionDegraded, metav1.ConditionTrue, dec.reason, dec.message)
	}
}

// markRestored says Restored, once, when the pod is Ready on restored data.
func (d *Dependencies) markRestored(w *workloadScope, state *restoreState) {
	dec := state.decision
	if dec.action != restoreBuild || meta.IsStatusConditionTrue(w.Conditions.List(), ConditionRestored) {
		return
	}
	message := fmt.Sprintf("the data of RedisBackup %s was restored and Redis is Ready on it", dec.input.BackupName)
	w.Conditions.Set(ConditionRestored, metav1.ConditionTrue, status.ReasonRestored, message)
	// A reconcile that read an older status from the cache tells it no second time.
	if !w.memory.told.FirstTelling(w.spec.owner.GetUID(), message, time.Now()) {
		return
	}
	d.Recorder.Eventf(w.spec.owner, nil, corev1.EventTypeNormal, status.ReasonRestored, "Restore", "%s", message)
}
