package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/rediskube/redis-operator/api/v1alpha1"
	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/apply"
	"github.com/rediskube/redis-operator/internal/backup/store"
	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/reconcile"
	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/snapshot"
	"github.com/rediskube/redis-operator/internal/status"
)

// Events and condition reasons of a RedisBackup.
const (
	ReasonBackupStarted   = "BackupStarted"
	ReasonBackupCompleted = "BackupCompleted"
	ReasonBackupFailed    = "BackupFailed"
	// ReasonBackupWaiting: the backup cannot start yet (its target, a Secret or a ready pod
	// is missing); it is tried again.
	ReasonBackupWaiting = "Waiting"
	// ReasonBackupNotSupported: this version of the operator cannot take the backup asked for.
	ReasonBackupNotSupported = "NotSupported"
	// ReasonBackupRetrying: an attempt failed because the store could not be reached for now;
	// the backup stays Running and is tried again.
	ReasonBackupRetrying = "Retrying"
)

// Secret keys of a backup's S3 credentials and CA, as the issue and AWS tools name them.
const (
	S3AccessKeyIDKey     = "AWS_ACCESS_KEY_ID"
	S3SecretAccessKeyKey = "AWS_SECRET_ACCESS_KEY" //nolint:gosec // the name of a Secret key, not a credential
	S3CAKey              = "ca.crt"
)

// BackupFinalizer keeps a RedisBackup until the operator has deleted the objects it stored.
const BackupFinalizer = "redis.opstreelabs.in/backup-objects"

// Events of a deleted RedisBackup.
const (
	// ReasonBackupObjectsDeleted: the backup's objects were deleted with it.
	ReasonBackupObjectsDeleted = "ObjectsDeleted"
	// ReasonBackupObjectsNotDeleted: the store could not be reached to delete them; tried again.
	ReasonBackupObjectsNotDeleted = "ObjectsNotDeleted"
	// ReasonBackupObjectsLeft: the store's settings are gone (its Secret): the backup is let go
	// and its objects stay where they are.
	ReasonBackupObjectsLeft = "ObjectsLeft"
)

// backupRetry is how soon a waiting backup (no target, Secret or ready pod yet) is tried again.
const backupRetry = 10 * time.Second

// DefaultStoreRetries are the waits before the attempts that follow a transient store failure:
// four attempts in all, the last starting 105s after the first failed. What this covers is a
// store that is only not reachable yet or for a moment: a new Service whose endpoints,
// kube-proxy rules and DNS record (and a resolver's negative cache, 30s in CoreDNS's default)
// take seconds to tens of seconds, a store restarting, a 503 SlowDown. Doubling waits spread
// the attempts over that span; a store still down after about two minutes is taken as down,
// and the backup fails rather than keep a schedule's next backup waiting. Each attempt's
// requests are themselves retried by the S3 client for a few seconds.
var DefaultStoreRetries = []time.Duration{15 * time.Second, 30 * time.Second, 60 * time.Second}

// BackupStore is where a backup's snapshots go: an object store's bucket.
type BackupStore interface {
	// PutFrom stores what write writes under key, or nothing when either side fails.
	PutFrom(ctx context.Context, key string, write func(io.Writer) error) (store.ObjectInfo, error)
	Stat(ctx context.Context, key string) (store.ObjectInfo, error)
	Delete(ctx context.Context, key string) error
	// AbortIncomplete aborts the uploads under key that a failed attempt left unfinished.
	AbortIncomplete(ctx context.Context, key string) error
	// Location names an object for statuses: s3://bucket/key.
	Location(key string) string
}

// BackupStores makes the store of a backup's resolved settings; each backup may name
// another endpoint and credentials.
type BackupStores func(store.S3Config) (BackupStore, error)

// S3Stores is the BackupStores of main: minio-go clients of S3-compatible stores.
func S3Stores(cfg store.S3Config) (BackupStore, error) { return store.NewS3(cfg) }

// RedisBackupReconciler takes each RedisBackup once: it reads a snapshot of the target's
// node over the network (as a replica syncs) and streams it into the backup's store.
type RedisBackupReconciler struct {
	Client   client.Client
	Scheme   *runtime.Scheme
	Recorder recorder.EventRecorder
	// Redis asks the target's pods their role before the snapshot.
	Redis *redis.Pool
	// Stores makes the backups' object stores.
	Stores BackupStores
	// Memory holds the TLS client configurations the other reconcilers share.
	Memory *Memory
	// Snapshot tunes the snapshot streams (tests shorten the idle timeout).
	Snapshot snapshot.Options
	// StoreRetries are the waits before each attempt that follows a transient store failure
	// (attempts in all: one more than its length); nil: DefaultStoreRetries.
	StoreRetries []time.Duration
	// Applier writes the claim stores of backups on a PersistentVolumeClaim.
	Applier *apply.Applier
	// APIReader reads, uncached, an object whose name a claim store needs when the cache
	// does not show it (nil: Client).
	APIReader client.Reader
	// ClaimStoreImage and ClaimStoreInitImage run the claim stores (--claim-store-image,
	// --claim-store-init-image); empty: builder.DefaultClaimStoreImage and
	// builder.DefaultClaimStoreInitImage.
	ClaimStoreImage, ClaimStoreInitImage string
}

// backupScope is one reconcile of a RedisBackup.
type backupScope struct {
	backup *v1alpha1.RedisBackup
	// before is the backup as its status was last written.
	before *v1alpha1.RedisBackup
	result ctrl.Result

	// What the target phase found: how to log in to its pods and which pods it has.
	statefulSets []string
	port         int
	cluster      bool
	password     string
	acl          aclState
	tls          *tlsSettings
	// The store, its host[:port] to name it, and the node to read of each shard (one outside
	// a cluster).
	store     BackupStore
	storeHost string
	sources   []backupSource
}

// backupSource is the node a shard's snapshot is read from.
type backupSource struct {
	pod  *corev1.Pod
	role redis.Role
	ep   redis.Endpoint
	// For a cluster node: its ID, its master's (a replica's), and the slots its shard serves.
	id, masterID string
	slots        []redis.SlotRange
}

func (r *RedisBackupReconciler) phases() []reconcile.Phase[*backupScope] {
	return []reconcile.Phase[*backupScope]{
		{Name: "finished", Run: r.skipFinished},
		{Name: "supported", Run: r.refuseUnsupported},
		{Name: "backoff", Run: r.awaitNextAttempt},
		{Name: "target", Run: r.resolveTarget},
		{Name: "claim store", Run: r.ensureClaimStore},
		{Name: "store", Run: r.resolveStore},
		{Name: "source", Run: r.chooseSource},
		{Name: "stream", Run: r.stream},
	}
}

// Reconcile runs the phases in order; each writes the status it reaches.
func (r *RedisBackupReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var b v1alpha1.RedisBackup
	if err := r.Client.Get(ctx, req.NamespacedName, &b); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if b.DeletionTimestamp != nil {
		return r.releaseObjects(ctx, &b)
	}
	// Before the status changes, so that the status patch starts from what is stored.
	if !controllerutil.ContainsFinalizer(&b, BackupFinalizer) {
		if err := patchFinalizers(ctx, r.Client, &b, func() { controllerutil.AddFinalizer(&b, BackupFinalizer) }); err != nil {
			return ctrl.Result{}, fmt.Errorf("add finalizer: %w", err)
		}
	}
	s := &backupScope{backup: &b, before: b.DeepCopy()}
	if err := reconcile.Run(ctx, "RedisBackup", r.phases(), s, reconcileErrors); err != nil {
		return ctrl.Result{}, err
	}
	return s.result, nil
}

// skipFinished stops at a backup that is Completed or Failed: a backup is taken once. A
// Completed one newer than what the target's backup gauges show (the operator restarted) sets
// them, while its target is there: the series of a target that is gone stay gone.
func (r *RedisBackupReconciler) skipFinished(ctx context.Context, s *backupScope) (bool, error) {
	b := s.backup
	if !b.Finished() {
		return false, nil
	}
	if b.Status.Phase != v1alpha1.BackupCompleted || b.Status.CompletedAt == nil ||
		r.Memory.backups.shown(backupTargetKey(b.Namespace, b.Spec.Target.Kind, b.Spec.Target.Name), b.Status.CompletedAt.Time) {
		return true, nil
	}
	target, ok := backupTargetObject(b.Spec.Target.Kind)
	if !ok {
		return true, nil
	}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: b.Spec.Target.Name}, target); err != nil {
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return true, fmt.Errorf("read %s %s: %w", b.Spec.Target.Kind, b.Spec.Target.Name, err)
	}
	observeBackupCompleted(r.Memory.backups, b)
	return true, nil
}

// backupTargetObject is an empty object of a backup's target kind, if it is one the operator
// can back up.
func backupTargetObject(kind string) (client.Object, bool) {
	switch kind {
	case v1alpha1.TargetRedis:
		return &v1beta2.Redis{}, true
	case v1alpha1.TargetRedisReplication:
		return &v1beta2.RedisReplication{}, true
	case v1alpha1.TargetRedisCluster:
		return &v1beta2.RedisCluster{}, true
	}
	return nil, false
}

// refuseUnsupported fails, once and for good, a backup this version cannot take.
func (r *RedisBackupReconciler) refuseUnsupported(ctx context.Context, s *backupScope) (bool, error) {
	spec := s.backup.Spec
	var why string
	switch {
	case spec.Target.Kind != v1alpha1.TargetRedis && spec.Target.Kind != v1alpha1.TargetRedisReplication &&
		spec.Target.Kind != v1alpha1.TargetRedisCluster:
		why = fmt.Sprintf("target kind %q is not one of Redis, RedisReplication, RedisCluster", spec.Target.Kind)
	case spec.Storage.S3 == nil && spec.Storage.PersistentVolumeClaim == nil:
		why = "storage names neither s3 nor persistentVolumeClaim"
	default:
		return false, nil
	}
	return true, r.fail(ctx, s, ReasonBackupNotSupported, why)
}

// awaitNextAttempt holds a backup whose last attempt met a transient store failure until the
// time its status names: the wait is in the status, so that a restarted operator keeps it.
func (r *RedisBackupReconciler) awaitNextAttempt(ctx context.Context, s *backupScope) (bool, error) {
	next := s.backup.Status.NextAttemptAt
	if next == nil {
		return false, nil
	}
	d := time.Until(next.Time)
	if d <= 0 {
		return false, nil
	}
	s.result.RequeueAfter = d
	log.FromContext(ctx).Info("requeue", "after", d.Round(time.Second), "reason",
		fmt.Sprintf("attempt %d of the backup waits for its store", attemptsOf(s.backup)+1))
	return true, nil
}

// storeRetries is the waits between attempts this reconciler uses.
func (r *RedisBackupReconciler) storeRetries() []time.Duration {
	if r.StoreRetries != nil {
		return r.StoreRetries
	}
	return DefaultStoreRetries
}

// nextAttempt decides, after attempt (counted from 1) failed with f, whether the backup is
// tried again and after how long: only a transient failure, and only while attempts remain.
func nextAttempt(f store.Failure, attempt int32, retries []time.Duration) (time.Duration, bool) {
	if !f.Transient || attempt < 1 || int(attempt) > len(retries) {
		return 0, false
	}
	return retries[attempt-1], true
}

// resolveTarget reads the target and how the operator logs in to its pods, as its own
// reconciler does: the password Secret, the ACL users, the TLS Secret.
func (r *RedisBackupReconciler) resolveTarget(ctx context.Context, s *backupScope) (bool, error) {
	t := s.backup.Spec.Target
	key := client.ObjectKey{Namespace: s.backup.Namespace, Name: t.Name}
	target, ok := backupTargetObject(t.Kind)
	if !ok {
		return false, fmt.Errorf("target kind %q cannot be backed up", t.Kind) // refuseUnsupported failed it
	}
	if err := r.Client.Get(ctx, key, target); err != nil {
		if apierrors.IsNotFound(err) {
			return true, r.wait(ctx, s, fmt.Sprintf("%s %s does not exist", t.Kind, t.Name))
		}
		return false, fmt.Errorf("read %s %s: %w", t.Kind, t.Name, err)
	}
	// The target is there: its backup counters exist from now, at 0 until a backup ends.
	observeBackupCounters(backupTargetLabels(s.backup))
	// The fields the two kinds share: how the operator logs in to their pods.
	var kc *v1beta2.KubernetesConfig
	var tlsSpec *v1beta2.TLSConfig
	var aclSpec *v1beta2.ACLConfig
	s.statefulSets, s.port = []string{t.Name}, builder.DefaultRedisPort
	switch cr := target.(type) {
	case *v1beta2.Redis:
		kc, tlsSpec, aclSpec = &cr.Spec.KubernetesConfig, cr.Spec.TLS, cr.Spec.ACL
	case *v1beta2.RedisReplication:
		kc, tlsSpec, aclSpec = &cr.Spec.KubernetesConfig, cr.Spec.TLS, cr.Spec.ACL
	case *v1beta2.RedisCluster:
		kc, tlsSpec, aclSpec = &cr.Spec.KubernetesConfig, cr.Spec.TLS, cr.Spec.ACL
		s.cluster, s.port = true, int(builder.ClusterPort(cr))
		s.statefulSets = []string{builder.ClusterStatefulSetName(t.Name, builder.RoleLeader), builder.ClusterStatefulSetName(t.Name, builder.RoleFollower)}
	}
	var err error
	s.password, err = readPassword(ctx, r.Client, s.backup.Namespace, kc.ExistingPasswordSecret)
	var missing *SecretKeyError
	if errors.As(err, &missing) {
		return true, r.wait(ctx, s, fmt.Sprintf("%s %s: %s", t.Kind, t.Name, missing.Error()))
	}
	if err != nil {
		return false, err
	}
	// The ACL check writes conditions of the target's kind; the backup keeps only its verdict.
	var scratch []metav1.Condition
	acl, stop, err := resolveACLOf(ctx, r.Client, discardEvents{}, target, aclSpec, s.password, false,
		status.NewConditions(&scratch, 0))
	if err != nil {
		return false, err
	}
	if stop {
		return true, r.wait(ctx, s, fmt.Sprintf("%s %s: %s", t.Kind, t.Name, acl.refused))
	}
	s.acl = acl
	s.tls, err = readTLS(ctx, r.Client, r.Memory.tls, r.Redis, s.backup.Namespace, tlsSpec)
	var invalid *TLSSecretError
	if errors.As(err, &invalid) {
		return true, r.wait(ctx, s, fmt.Sprintf("%s %s: %s", t.Kind, t.Name, invalid.Error()))
	}
	return false, err
}

// resolveStore reads the S3 credentials (and CA) Secrets and makes the store's client.
func (r *RedisBackupReconciler) resolveStore(ctx context.Context, s *backupScope) (bool, error) {
	cfg, problem, err := r.storeConfig(ctx, s.backup)
	if err != nil || problem != "" {
		return problem != "", errors.Join(err, r.waitIf(ctx, s, problem))
	}
	s.store, err = r.Stores(cfg)
	if err == nil {
		s.store = located(s.store, s.backup)
	}
	s.storeHost = store.EndpointHost(cfg.Endpoint)
	if err != nil {
		// The settings themselves are wrong (an endpoint with a path, a CA without PEM): the
		// spec cannot change, so the backup cannot succeed.
		return true, r.fail(ctx, s, ReasonBackupFailed, err.Error())
	}
	return false, nil
}

// storeConfig resolves the backup's S3 settings (a claim's: its store's) with its
// credentials (and CA) Secrets; problem says what is missing.
func (r *RedisBackupReconciler) storeConfig(ctx context.Context, b *v1alpha1.RedisBackup) (cfg store.S3Config, problem string, err error) {
	spec := backupS3(b)
	creds, problem, err := r.secretKeys(ctx, b.Namespace, spec.CredentialsSecret.Name, S3AccessKeyIDKey, S3SecretAccessKeyKey)
	if err != nil || problem != "" {
		return cfg, problem, err
	}
	cfg = store.S3Config{
		Endpoint: store.InNamespace(spec.Endpoint, b.Namespace), Bucket: spec.Bucket, Region: spec.Region, ForcePathStyle: spec.ForcePathStyle,
		AccessKeyID: creds[0], SecretAccessKey: creds[1],
	}
	if spec.CASecret != nil {
		ca, problem, err := r.secretKeys(ctx, b.Namespace, spec.CASecret.Name, S3CAKey)
		if err != nil || problem != "" {
			return cfg, problem, err
		}
		cfg.CAPEM = []byte(ca[0])
	}
	return cfg, "", nil
}

// secretKeys reads keys of a Secret; problem says what is missing.
func (r *RedisBackupReconciler) secretKeys(ctx context.Context, namespace, name string, keys ...string) (values []string, problem string, err error) {
	var secret corev1.Secret
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Sprintf("Secret %s does not exist", name), nil
		}
		return nil, "", fmt.Errorf("read Secret %s: %w", name, err)
	}
	for _, k := range keys {
		v := strings.TrimSpace(string(secret.Data[k]))
		if v == "" {
			return nil, fmt.Sprintf("Secret %s has no key %s", name, k), nil
		}
		values = append(values, v)
	}
	return values, "", nil
}

// chooseSource picks the node to read of each shard: with PreferReplica a replica whose link
// to its master is up, else (or with Master) the master. A cluster's shards must together
// serve every slot, or the backup waits.
func (r *RedisBackupReconciler) chooseSource(ctx context.Context, s *backupScope) (bool, error) {
	nodes, problems, err := r.readyNodes(ctx, s)
	if err != nil {
		return false, err
	}
	// Each shard by its master's ID ("" outside a cluster: one shard).
	masters := map[string]*backupSource{}
	replicas := map[string]*backupSource{}
	var order []string
	for i := range nodes {
		n := &nodes[i]
		switch {
		case n.role.Kind == redis.RoleMaster && (!s.cluster || len(n.slots) > 0):
			if masters[n.id] == nil {
				masters[n.id] = n
				order = append(order, n.id)
			}
		case n.role.LinkUp() && replicas[n.masterID] == nil:
			replicas[n.masterID] = n
		}
	}
	var chosen []backupSource
	slots := 0
	for _, id := range order {
		c := masters[id]
		if rep := replicas[id]; rep != nil && s.backup.Spec.Source != v1alpha1.SourceMaster {
			rep.slots = c.slots
			c = rep
		}
		chosen = append(chosen, *c)
		slots += redis.CountSlots(c.slots)
		if !s.cluster {
			break
		}
	}
	var why string
	switch {
	case len(chosen) == 0:
		why = fmt.Sprintf("no ready master of %s %s to read", s.backup.Spec.Target.Kind, s.backup.Spec.Target.Name)
	case s.cluster && slots != redis.SlotCount:
		why = fmt.Sprintf("the ready masters of RedisCluster %s serve %d of the %d slots", s.backup.Spec.Target.Name, slots, redis.SlotCount)
	}
	if why != "" {
		if len(problems) > 0 {
			why += ": " + strings.Join(problems, "; ")
		}
		return true, r.wait(ctx, s, why)
	}
	s.sources = chosen
	return false, nil
}

// readyNodes asks each ready pod of the target its role (and, in a cluster, its node ID, its
// master and its slots); problems lists the pods that did not answer.
func (r *RedisBackupReconciler) readyNodes(ctx context.Context, s *backupScope) (nodes []backupSource, problems []string, err error) {
	auth := s.acl.auth(s.password)
	for _, sts := range s.statefulSets {
		pods, err := podsOf(ctx, r.Client, s.backup.Namespace, sts)
		if err != nil {
			return nil, nil, err
		}
		for i := range pods {
			pod := &pods[i]
			if !podReady(pod) {
				continue
			}
			n := backupSource{pod: pod, ep: podEndpoint(pod, s.port, auth).WithTLS(s.tls.clientConfig())}
			if err := r.describeNode(ctx, &n, s.cluster); err != nil {
				problems = append(problems, fmt.Sprintf("%s: %v", pod.Name, err))
				continue
			}
			nodes = append(nodes, n)
		}
	}
	return nodes, problems, nil
}

// describeNode fills the node's role, and in a cluster its ID, master and slots.
func (r *RedisBackupReconciler) describeNode(ctx context.Context, n *backupSource, cluster bool) error {
	c, err := r.Redis.Client(n.ep)
	if err != nil {
		return err
	}
	if n.role, err = c.Role(ctx); err != nil {
		return err
	}
	if !cluster {
		return nil
	}
	topology, err := c.ClusterNodes(ctx)
	if err != nil {
		return err
	}
	me, ok := topology.Myself()
	if !ok {
		return errors.New("CLUSTER NODES lists no myself")
	}
	n.id, n.masterID, n.slots = me.ID, me.MasterID, me.Slots
	return nil
}

// objectDir is the "folder" of a backup's objects: <prefix>/<namespace>/<backup>/.
func objectDir(prefix, namespace, backup string) string {
	return strings.TrimPrefix(path.Join(strings.Trim(prefix, "/"), namespace, backup), "/") + "/"
}

// objectKey is where a pod's snapshot goes: <prefix>/<namespace>/<backup>/<pod>.rdb.
func objectKey(prefix, namespace, backup, pod string) string {
	return objectDir(prefix, namespace, backup) + pod + ".rdb"
}

// stream marks the backup Running, streams each shard's snapshot into the store (a
// cluster's in parallel) and records the outcome. The backup is Completed only once the store
// holds every object whole: PutFrom aborts an upload whose stream fails, each stored size must
// be its snapshot's, and when one shard fails the objects of the others are removed.
func (r *RedisBackupReconciler) stream(ctx context.Context, s *backupScope) (bool, error) {
	b := s.backup
	dir := objectDir(backupS3(b).Prefix, b.Namespace, b.Name)
	now := metav1.Now()
	// The attempt is counted before it starts: one an operator restart cut short counts too,
	// so that the bound holds however often the operator stops.
	attempt := attemptsOf(b) + 1
	maxAttempts := len(r.storeRetries()) + 1
	b.Status.Phase = v1alpha1.BackupRunning
	if b.Status.StartedAt == nil {
		b.Status.StartedAt = &now
	}
	b.Status.CompletedAt = nil
	b.Status.Attempts = &attempt
	b.Status.NextAttemptAt = nil
	b.Status.Location = s.store.Location(dir)
	nodes := make([]string, len(s.sources))
	for i, src := range s.sources {
		nodes[i] = fmt.Sprintf("%s (%s)", src.pod.Name, roleName(src.role))
	}
	what := "reading a snapshot of " + strings.Join(nodes, ", ")
	if attempt > 1 {
		what += fmt.Sprintf(" (attempt %d of %d)", attempt, max(maxAttempts, int(attempt)))
	}
	r.condition(b, metav1.ConditionFalse, string(v1alpha1.BackupRunning), what)
	if err := r.writeStatus(ctx, s); err != nil {
		if apierrors.IsConflict(err) {
			// The backup read was stale (the cache behind our own last write, which may have
			// finished it): look again rather than take it twice.
			s.result.RequeueAfter = time.Second
			return true, nil
		}
		return false, err
	}
	r.Recorder.Eventf(b, nil, corev1.EventTypeNormal, ReasonBackupStarted, "Backup", "%s into %s", what, b.Status.Location)
	log.FromContext(ctx).Info("backup started", "nodes", nodes, "location", b.Status.Location, "attempt", attempt)
	if attempt > 1 {
		r.abortIncomplete(ctx, s)
	}

	shards := make([]v1alpha1.ShardBackup, len(s.sources))
	errs := make([]error, len(s.sources))
	var wg sync.WaitGroup
	for i, src := range s.sources {
		wg.Add(1)
		go func() {
			defer wg.Done()
			shards[i], errs[i] = r.streamShard(ctx, s.store, objectKey(backupS3(b).Prefix, b.Namespace, b.Name, src.pod.Name), src)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		if ctx.Err() != nil {
			// The operator is stopping: the backup stays Running and is taken again by the next.
			return false, fmt.Errorf("backup interrupted: %w", err)
		}
		cleanup := r.removeShards(ctx, s.store, shards, errs)
		f := classifyAttempt(s.storeHost, errs)
		if delay, again := nextAttempt(f, attempt, r.storeRetries()); again {
			// The objects a shard stored are overwritten by the next attempt, or removed
			// when the backup fails: a cleanup that failed here changes nothing.
			return true, r.retry(ctx, s, f, maxAttempts, delay, err)
		}
		why := f.Cause
		if f.Transient {
			why += fmt.Sprintf(" at each of %d attempts", attempt)
		}
		why += ": " + err.Error()
		if cleanup != nil {
			why += "; and the objects of the shards that were stored could not be removed: " + cleanup.Error()
		}
		return true, r.fail(ctx, s, ReasonBackupFailed, why)
	}
	done := metav1.Now()
	b.Status.Phase = v1alpha1.BackupCompleted
	b.Status.NextAttemptAt = nil
	b.Status.CompletedAt = &done
	b.Status.Shards = shards
	b.Status.TotalBytes = 0
	for _, sh := range shards {
		b.Status.TotalBytes += sh.Bytes
	}
	b.Status.Size = humanBytes(b.Status.TotalBytes)
	message := fmt.Sprintf("%s of %s in %s", b.Status.Size, strings.Join(nodes, ", "), b.Status.Location)
	r.condition(b, metav1.ConditionTrue, string(v1alpha1.BackupCompleted), message)
	if err := r.writeStatus(ctx, s); err != nil {
		return false, err
	}
	countBackupEnded(b)
	observeBackupCompleted(r.Memory.backups, b)
	r.Recorder.Eventf(b, nil, corev1.EventTypeNormal, ReasonBackupCompleted, "Backup", "%s", message)
	log.FromContext(ctx).Info("backup completed", "shards", len(shards), "bytes", b.Status.TotalBytes, "location", b.Status.Location)
	return false, nil
}

// classifyAttempt classifies the failure of an attempt by its shards' errors: permanent when
// one shard's is (retrying could not change that shard's fate), else the first shard's
// transient failure.
func classifyAttempt(host string, errs []error) store.Failure {
	var first *store.Failure
	for _, err := range errs {
		if err == nil {
			continue
		}
		f := store.Classify(host, err)
		if !f.Transient {
			return f
		}
		if first == nil {
			first = &f
		}
	}
	if first == nil {
		return store.Failure{Cause: "the store failed"}
	}
	return *first
}

// retry keeps the backup Running after an attempt that a transient store failure ended, and
// says in its Ready condition, an event and the log what failed and when it is tried again.
// One event per failed attempt: a few per backup at most.
func (r *RedisBackupReconciler) retry(ctx context.Context, s *backupScope, f store.Failure, maxAttempts int, delay time.Duration, cause error) error {
	b := s.backup
	next := metav1.NewTime(time.Now().Add(delay))
	b.Status.NextAttemptAt = &next
	why := fmt.Sprintf("%s (attempt %d of %d); retrying in %s", f.Cause, attemptsOf(b), maxAttempts, delay)
	r.condition(b, metav1.ConditionFalse, ReasonBackupRetrying, why)
	if err := r.writeStatus(ctx, s); err != nil {
		return err
	}
	r.Recorder.Eventf(b, nil, corev1.EventTypeWarning, ReasonBackupRetrying, "Backup", "%s", why)
	s.result.RequeueAfter = delay
	log.FromContext(ctx).Info("requeue", "after", delay, "reason", why, "error", cause.Error())
	return nil
}

// abortIncomplete aborts the uploads an earlier attempt left unfinished under this attempt's
// keys (its store went away before the upload could be aborted). Their parts were never an
// object; this only frees their space, so a failure is logged and the attempt goes on.
func (r *RedisBackupReconciler) abortIncomplete(ctx context.Context, s *backupScope) {
	b := s.backup
	for _, src := range s.sources {
		key := objectKey(backupS3(b).Prefix, b.Namespace, b.Name, src.pod.Name)
		if err := s.store.AbortIncomplete(ctx, key); err != nil {
			log.FromContext(ctx).Info("the incomplete uploads of an earlier attempt were not aborted", "key", key, "error", err.Error())
		}
	}
}

// streamShard streams one node's snapshot under key and checks the stored object.
func (r *RedisBackupReconciler) streamShard(ctx context.Context, st BackupStore, key string, src backupSource) (v1alpha1.ShardBackup, error) {
	shard := v1alpha1.ShardBackup{Node: src.pod.Name, Role: roleName(src.role), ReplicationOffset: src.role.ReplicationOffset,
		Location: st.Location(key)}
	for _, sr := range src.slots {
		shard.SlotRanges = append(shard.SlotRanges, fmt.Sprintf("%d-%d", sr.Start, sr.End))
	}
	var info snapshot.Info
	obj, err := st.PutFrom(ctx, key, func(w io.Writer) error {
		var err error
		info, err = snapshot.Stream(ctx, src.ep, w, r.Snapshot)
		return err
	})
	if err == nil && obj.Size != info.Bytes {
		err = fmt.Errorf("the store holds %d bytes, the snapshot was %d", obj.Size, info.Bytes)
	}
	if err == nil {
		var stored store.ObjectInfo
		if stored, err = st.Stat(ctx, key); err == nil && stored.Size != info.Bytes {
			err = fmt.Errorf("the store holds %d bytes, the snapshot was %d", stored.Size, info.Bytes)
		}
	}
	if err != nil {
		return shard, fmt.Errorf("snapshot of %s into %s: %w", src.pod.Name, shard.Location, err)
	}
	shard.Bytes, shard.SHA256, shard.RDBVersion = info.Bytes, info.SHA256Hex(), info.RDBVersion
	return shard, nil
}

// removeShards deletes the objects of the shards that were stored when another failed: a
// failed backup leaves no object that could be taken for a whole one.
func (r *RedisBackupReconciler) removeShards(ctx context.Context, st BackupStore, shards []v1alpha1.ShardBackup, errs []error) error {
	var failures []error
	for i, sh := range shards {
		if errs[i] != nil {
			continue
		}
		key := strings.TrimPrefix(sh.Location, st.Location(""))
		if err := st.Delete(ctx, key); err != nil {
			failures = append(failures, err)
		}
	}
	return errors.Join(failures...)
}

func roleName(role redis.Role) string {
	if role.Kind == redis.RoleSlave {
		return "replica"
	}
	return string(role.Kind)
}

// wait leaves the backup Pending with why, and comes back shortly.
func (r *RedisBackupReconciler) wait(ctx context.Context, s *backupScope, why string) error {
	b := s.backup
	if b.Status.Phase == "" {
		b.Status.Phase = v1alpha1.BackupPending
	}
	if old := meta.FindStatusCondition(b.Status.Conditions, v1beta2.ConditionReady); old == nil || old.Message != why {
		r.Recorder.Eventf(b, nil, corev1.EventTypeWarning, ReasonBackupWaiting, "Backup", "%s", why)
	}
	r.condition(b, metav1.ConditionFalse, ReasonBackupWaiting, why)
	s.result.RequeueAfter = backupRetry
	log.FromContext(ctx).V(1).Info("requeue", "after", backupRetry, "reason", why)
	return r.writeStatus(ctx, s)
}

// waitIf waits when there is a problem.
func (r *RedisBackupReconciler) waitIf(ctx context.Context, s *backupScope, problem string) error {
	if problem == "" {
		return nil
	}
	return r.wait(ctx, s, problem)
}

// fail ends the backup Failed with why, for good.
func (r *RedisBackupReconciler) fail(ctx context.Context, s *backupScope, reason, why string) error {
	b := s.backup
	now := metav1.Now()
	b.Status.Phase = v1alpha1.BackupFailed
	b.Status.CompletedAt = &now
	b.Status.NextAttemptAt = nil
	r.condition(b, metav1.ConditionFalse, reason, why)
	if err := r.writeStatus(ctx, s); err != nil {
		return err
	}
	countBackupEnded(b)
	r.Recorder.Eventf(b, nil, corev1.EventTypeWarning, ReasonBackupFailed, "Backup", "%s", why)
	log.FromContext(ctx).Info("backup failed", "reason", reason, "cause", why)
	return nil
}

// condition sets the backup's Ready condition.
func (r *RedisBackupReconciler) condition(b *v1alpha1.RedisBackup, st metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&b.Status.Conditions, metav1.Condition{
		Type: v1beta2.ConditionReady, Status: st, Reason: reason, Message: message, ObservedGeneration: b.Generation,
	})
	b.Status.ObservedGeneration = b.Generation
}

// writeStatus patches the status from what was last written, only if the backup is still as
// it was read: a stale read must not move a finished backup back, or start it again.
func (r *RedisBackupReconciler) writeStatus(ctx context.Context, s *backupScope) error {
	if equality.Semantic.DeepEqual(s.before.Status, s.backup.Status) {
		return nil // a backup waiting for the same reason: nothing to write
	}
	patch := client.MergeFromWithOptions(s.before, client.MergeFromWithOptimisticLock{})
	if err := r.Client.Status().Patch(ctx, s.backup, patch); err != nil {
		return fmt.Errorf("write the status of RedisBackup %s: %w", s.backup.Name, err)
	}
	s.before = s.backup.DeepCopy()
	return nil
}

// releaseObjects deletes the objects a deleted backup lists (its shards'), then lets the
// backup go. A store that cannot be reached keeps the backup, said in its Ready condition and
// an event, and is tried again; a store whose Secret is gone can never be reached, so the
// backup is let go with a Warning event naming what stays behind.
func (r *RedisBackupReconciler) releaseObjects(ctx context.Context, b *v1alpha1.RedisBackup) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(b, BackupFinalizer) {
		return ctrl.Result{}, nil
	}
	if len(b.Status.Shards) > 0 {
		if result, err := r.deleteObjects(ctx, b); err != nil || !result.IsZero() {
			return result, err
		}
	}
	if err := patchFinalizers(ctx, r.Client, b, func() { controllerutil.RemoveFinalizer(b, BackupFinalizer) }); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("remove finalizer: %w", err)
	}
	return ctrl.Result{}, nil
}

// deleteObjects deletes the backup's objects, or says why it leaves them; a result or an
// error means the backup is kept for now.
func (r *RedisBackupReconciler) deleteObjects(ctx context.Context, b *v1alpha1.RedisBackup) (ctrl.Result, error) {
	st, problem, err := r.openStore(ctx, b)
	if err != nil {
		return ctrl.Result{}, err
	}
	if problem != "" {
		r.Recorder.Eventf(b, nil, corev1.EventTypeWarning, ReasonBackupObjectsLeft, "Delete",
			"the objects under %s are left in place: %s", b.Status.Location, problem)
		return ctrl.Result{}, nil
	}
	deleted, err := r.deleteShards(ctx, st, b.Status.Shards)
	if err != nil {
		return r.objectsNotDeleted(ctx, b, err)
	}
	r.Recorder.Eventf(b, nil, corev1.EventTypeNormal, ReasonBackupObjectsDeleted, "Delete",
		"deleted %d objects under %s", deleted, b.Status.Location)
	return ctrl.Result{}, nil
}

// openStore makes the client of a backup's store; problem says why there can be none (its
// Secret is gone, its settings never worked).
func (r *RedisBackupReconciler) openStore(ctx context.Context, b *v1alpha1.RedisBackup) (st BackupStore, problem string, err error) {
	cfg, problem, err := r.storeConfig(ctx, b)
	if err != nil || problem != "" {
		return nil, problem, err
	}
	if st, err = r.Stores(cfg); err != nil {
		return nil, err.Error(), nil // settings that never worked: nothing was stored through them
	}
	return located(st, b), "", nil
}

// deleteShards deletes each shard's object; an object already gone counts as deleted.
func (r *RedisBackupReconciler) deleteShards(ctx context.Context, st BackupStore, shards []v1alpha1.ShardBackup) (int, error) {
	var failures []error
	deleted := 0
	for _, sh := range shards {
		key, ok := strings.CutPrefix(sh.Location, st.Location(""))
		if !ok || key == "" {
			// Not an object of this bucket: the status was not written by this operator.
			continue
		}
		if err := st.Delete(ctx, key); err != nil {
			failures = append(failures, err)
			continue
		}
		deleted++
	}
	return deleted, errors.Join(failures...)
}

// objectsNotDeleted says in the Ready condition and an event why the objects are still there,
// and comes back.
func (r *RedisBackupReconciler) objectsNotDeleted(ctx context.Context, b *v1alpha1.RedisBackup, cause error) (ctrl.Result, error) {
	why := "the objects could not be deleted: " + cause.Error()
	if old := meta.FindStatusCondition(b.Status.Conditions, v1beta2.ConditionReady); old == nil || old.Message != why {
		r.Recorder.Eventf(b, nil, corev1.EventTypeWarning, ReasonBackupObjectsNotDeleted, "Delete", "%s", why)
	}
	s := &backupScope{backup: b, before: b.DeepCopy()}
	r.condition(b, metav1.ConditionFalse, ReasonBackupObjectsNotDeleted, why)
	if err := r.writeStatus(ctx, s); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	log.FromContext(ctx).Info("requeue", "after", backupRetry, "reason", why)
	return ctrl.Result{RequeueAfter: backupRetry}, nil
}

// humanBytes is n in binary units, for kubectl get: "512 B", "1.5 MiB".
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// discardEvents drops the events of checks the backup runs on its target's behalf: the
// target's own reconciler tells them.
type discardEvents struct{}

func (discardEvents) Eventf(runtime.Object, runtime.Object, string, string, string, string, ...any) {}

func (discardEvents) AnnotatedEventf(runtime.Object, runtime.Object, map[string]string, string, string, string, string, ...any) {
}

// SetupWithManager registers the RedisBackup controller. A backup streams for as long as the
// snapshot takes, so two run at once, leaving the other kinds' workers free.
func (r *RedisBackupReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := requireMemory(r.Memory, "RedisBackupReconciler"); err != nil {
		return err
	}
	if r.Stores == nil {
		return errors.New("RedisBackupReconciler has no Stores: give it controller.S3Stores")
	}
	if r.Applier == nil {
		return errors.New("RedisBackupReconciler has no Applier: give it the one apply.NewApplier made")
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.RedisBackup{}).
		// A claim store's Deployment becoming available brings back the backups waiting for
		// it: each is an owner, none the controller.
		Watches(&appsv1.Deployment{}, handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &v1alpha1.RedisBackup{})).
		Named("redisbackup").
		WithOptions(ctrlcontroller.Options{MaxConcurrentReconciles: 2}).
		Complete(r)
}

// attemptsOf is how many attempts the backup began (status.attempts, 0 when unset).
func attemptsOf(b *v1alpha1.RedisBackup) int32 {
	if b.Status.Attempts == nil {
		return 0
	}
	return *b.Status.Attempts
}
