package controller

import (
	"context"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/redis/clusterplan"
	"github.com/rediskube/redis-operator/internal/redis/replicationplan"
)

// apiWrites counts the writes the reconcilers make, by verb and kind: a steady state makes
// none, which dashboards and the benchmark check. (Client-go's own request metrics also count
// the leader-election Lease renewals, which are no reconcile's doing.)
var apiWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "redis_operator_api_writes_total",
	Help: "Writes to the Kubernetes API made by the operator's reconcilers, by verb and kind.",
}, []string{"verb", "kind"})

// The health of each resource as its last reconcile saw it, labelled kind, namespace and
// name, so that "is my Redis healthy?" is one query and an alert per resource.
var (
	resourceLabels = []string{"kind", "namespace", "name"}

	resourceReady = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "redis_operator_resource_ready",
		Help: "1 when the resource's Ready condition is True, else 0.",
	}, resourceLabels)
	resourceMasters = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "redis_operator_masters",
		Help: "Pods answering ROLE as master (for a cluster: masters serving slots).",
	}, resourceLabels)
	resourceReplicasLinked = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "redis_operator_replicas_linked",
		Help: "Replica pods whose link to their master is up.",
	}, resourceLabels)
	resourceReplicasDesired = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "redis_operator_replicas_desired",
		Help: "Replica pods the spec asks for (a cluster's followers, a replication's pods but the master); fewer linked means a master may have no replica to fail over to.",
	}, resourceLabels)
	clusterSlotsServed = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "redis_operator_cluster_slots_served",
		Help: "Hash slots (of 16384) a master of the cluster serves.",
	}, resourceLabels)
	replicationLagBytes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "redis_operator_replication_lag_bytes",
		Help: "The largest gap between the master's replication offset and a replica's, in bytes.",
	}, resourceLabels)
	replicationLagSeconds = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "redis_operator_replication_lag_seconds",
		Help: "The largest replication lag of a replica, in seconds: for a replica its master lists, the seconds since its last acknowledgment " +
			"(INFO replication lag, which min-replicas-max-lag tests; 0 or 1 when healthy); for one whose link is down, how long it has been down.",
	}, resourceLabels)
	failovers = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "redis_operator_failovers_total",
		Help: "Failovers the operator ran (CLUSTER FAILOVER, or a replica promoted).",
	}, resourceLabels)
	slotsMoved = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "redis_operator_cluster_slots_moved_total",
		Help: "Hash slots the operator moved between cluster masters.",
	}, resourceLabels)
	keysMoved = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "redis_operator_cluster_keys_moved_total",
		Help: "Keys moved with the slots the operator moved.",
	}, resourceLabels)
	reconcileErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "redis_operator_reconcile_errors_total",
		Help: "Reconciles that failed, by kind and the phase that failed.",
	}, []string{"kind", "phase"})
)

// Backups, by the namespace, kind and name of their target. The gauges say what the newest
// Completed backup of each target recorded in its status (rebuilt from the statuses when the
// operator starts); the counter counts the ends this operator made, once each. The duration is
// a gauge of the last backup, not a histogram: a histogram's buckets would start empty at each
// restart, and a backup every few hours fills them too slowly to say anything.
var (
	backupLabels = []string{"namespace", "target_kind", "target"}

	backupLastSuccess = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "redis_operator_backup_last_success_timestamp_seconds",
		Help: "Unix time the newest Completed RedisBackup of the target completed.",
	}, backupLabels)
	backupDuration = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "redis_operator_backup_duration_seconds",
		Help: "How long the newest Completed RedisBackup of the target took, from the start of its snapshots to the last object stored.",
	}, backupLabels)
	backupBytes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "redis_operator_backup_bytes",
		Help: "Bytes the newest Completed RedisBackup of the target stored, all shards together.",
	}, backupLabels)
	backupsEnded = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "redis_operator_backups_total",
		Help: "RedisBackups of the target that ended, by result (completed or failed), each counted once when the operator ended it.",
	}, append(slices.Clone(backupLabels), "result"))

	scheduleLabels = []string{"namespace", "schedule", "target_kind", "target"}

	scheduleInterval = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "redis_operator_backup_schedule_interval_seconds",
		Help: "Seconds between the next two runs of a RedisBackupSchedule that is neither suspended nor invalid.",
	}, scheduleLabels)
	scheduleCreated = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "redis_operator_backup_schedule_created_timestamp_seconds",
		Help: "Unix time the RedisBackupSchedule was created, while it is neither suspended nor invalid: since when its target should have backups.",
	}, scheduleLabels)
)

// The replaced operator's metrics, under its names, types and labels (namespace, and instance:
// the resource's name), so that the alerts and dashboards of users who switch keep working.
// Ours above say more; these are only kept in step with what the operator observes.
var (
	compatLabels = []string{"namespace", "instance"}

	clusterSkipReconcile = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "rediscluster_skipreconcile",
		Help: "1 while the RedisCluster's skip-reconcile annotation is \"true\", else 0.",
	}, compatLabels)
	clusterHealthy = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "rediscluster_healthy",
		Help: "1 while the RedisCluster's Ready condition is True, else 0.",
	}, compatLabels)
	clusterPodsDesired = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "rediscluster_replicas_size_desired",
		Help: "Pods the RedisCluster's spec asks for, leaders and followers.",
	}, compatLabels)
	clusterRebalances = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rediscluster_rebalance_total",
		Help: "Runs of slot moves onto masters that stay (a scale-out's rebalance), each counted once however many reconciles it takes.",
	}, compatLabels)
	clusterReshards = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rediscluster_reshard_total",
		Help: "Runs of slot moves off departing masters (a scale-in), each counted once however many reconciles it takes.",
	}, compatLabels)
	clusterRemoveFollowerAttempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rediscluster_remove_follower_attempt",
		Help: "Follower pods the operator let a scale-in remove (the follower StatefulSet shrunk by one), each counted once.",
	}, compatLabels)
	clusterAddNodeAttempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rediscluster_adding_node_attempt",
		Help: "CLUSTER MEETs the operator sent to bring a node into a cluster that serves every slot (a scale-out, a pod back empty, a follower joining after the leaders formed it).",
	}, compatLabels)

	replicationSkipReconcile = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "redisreplication_skipreconcile",
		Help: "1 while the RedisReplication's skip-reconcile annotation is \"true\", else 0.",
	}, compatLabels)
	replicationPodsDesired = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "redisreplication_replicas_size_desired",
		Help: "Pods the RedisReplication's spec asks for (spec.clusterSize).",
	}, compatLabels)
	replicationPodsCurrent = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "redisreplication_replicas_size_current",
		Help: "Pods of the RedisReplication that are running.",
	}, compatLabels)
	replicationPodsMismatch = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "redisreplication_replicas_size_mismatch",
		Help: "Reconciles that found fewer or more running pods than the spec asks for.",
	}, compatLabels)
	replicationHasMaster = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "redisreplication_has_master",
		Help: "1 while a pod of the RedisReplication answers ROLE as master, else 0.",
	}, compatLabels)
	replicationMasterChanges = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "redisreplication_master_role_changes_total",
		Help: "Times the master of the RedisReplication moved to another pod.",
	}, compatLabels)
	replicationConnectedReplicas = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "redisreplication_connected_slaves_total",
		Help: "Replicas connected to the master, as its ROLE lists them.",
	}, compatLabels)

	compatClusterSeries = []interface{ Delete(prometheus.Labels) bool }{clusterSkipReconcile, clusterHealthy, clusterPodsDesired,
		clusterRebalances, clusterReshards, clusterRemoveFollowerAttempts, clusterAddNodeAttempts}
	compatReplicationSeries = []interface{ Delete(prometheus.Labels) bool }{replicationSkipReconcile, replicationPodsDesired,
		replicationPodsCurrent, replicationPodsMismatch, replicationHasMaster, replicationMasterChanges, replicationConnectedReplicas}
)

func init() {
	metrics.Registry.MustRegister(apiWrites, resourceReady, resourceMasters, resourceReplicasLinked, resourceReplicasDesired,
		clusterSlotsServed, replicationLagBytes, replicationLagSeconds, failovers, slotsMoved, keysMoved, reconcileErrors)
	metrics.Registry.MustRegister(backupLastSuccess, backupDuration, backupBytes, backupsEnded, scheduleInterval, scheduleCreated)
	metrics.Registry.MustRegister(clusterSkipReconcile, clusterHealthy, clusterPodsDesired, clusterRebalances, clusterReshards,
		clusterRemoveFollowerAttempts, clusterAddNodeAttempts, replicationSkipReconcile, replicationPodsDesired,
		replicationPodsCurrent, replicationPodsMismatch, replicationHasMaster, replicationMasterChanges, replicationConnectedReplicas)
}

// compatLabelValues are the labels of the replaced operator's metrics for the resource.
func compatLabelValues(obj client.Object) prometheus.Labels {
	return prometheus.Labels{"namespace": obj.GetNamespace(), "instance": obj.GetName()}
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func resourceLabelValues(obj client.Object) prometheus.Labels {
	return prometheus.Labels{"kind": kindName(obj), "namespace": obj.GetNamespace(), "name": obj.GetName()}
}

// kindName is the kind of one of the four resources the operator reconciles (RedisCluster,
// ...), the value of their metrics' kind label and of the liveness watcher's owners. Another
// object gives the kind its TypeMeta carries, if any.
func kindName(obj client.Object) string {
	switch obj.(type) {
	case *v1beta2.Redis:
		return "Redis"
	case *v1beta2.RedisCluster:
		return "RedisCluster"
	case *v1beta2.RedisReplication:
		return "RedisReplication"
	case *v1beta2.RedisSentinel:
		return "RedisSentinel"
	default:
		return obj.GetObjectKind().GroupVersionKind().Kind
	}
}

// kindOf is the kind of an object the reconcilers write, as the scheme knows its type (or as
// its TypeMeta says, for an object of no registered type): the kind label of apiWrites.
func kindOf(scheme *runtime.Scheme, obj client.Object) string {
	if gvk, err := apiutil.GVKForObject(obj, scheme); err == nil {
		return gvk.Kind
	}
	return obj.GetObjectKind().GroupVersionKind().Kind
}

// observeReady records the resource's Ready condition after a reconcile.
func observeReady(obj statusHolder) {
	ready := 0.0
	if meta.IsStatusConditionTrue(obj.GetCommonStatus().Conditions, v1beta2.ConditionReady) {
		ready = 1
	}
	l := resourceLabelValues(obj)
	resourceReady.With(l).Set(ready)
	// Counters of what the operator does exist at 0 from the start, so that rate() and
	// increase() see the first one.
	compat := compatLabelValues(obj)
	switch cr := obj.(type) {
	case *v1beta2.RedisCluster:
		failovers.With(l)
		slotsMoved.With(l)
		keysMoved.With(l)
		clusterHealthy.With(compat).Set(ready)
		clusterSkipReconcile.With(compat).Set(boolGauge(cr.Annotations[SkipReconcileClusterAnnotation] == "true"))
		clusterPodsDesired.With(compat).Set(float64(builder.LeaderReplicas(cr) + builder.FollowerReplicas(cr)))
		clusterRebalances.With(compat)
		clusterReshards.With(compat)
		clusterRemoveFollowerAttempts.With(compat)
		clusterAddNodeAttempts.With(compat)
	case *v1beta2.RedisReplication:
		failovers.With(l)
		replicationSkipReconcile.With(compat).Set(boolGauge(cr.Annotations[SkipReconcileReplicationAnnotation] == "true"))
		if cr.Spec.Size != nil {
			replicationPodsDesired.With(compat).Set(float64(*cr.Spec.Size))
		}
		replicationPodsMismatch.With(compat)
		replicationMasterChanges.With(compat)
	}
}

// forgetResource drops the series of a resource that is gone (those of its backups too), and
// what memory remembers of it for them.
func forgetResource(memory *Memory, kind, namespace, name string) {
	counted := memory.counted
	l := prometheus.Labels{"kind": kind, "namespace": namespace, "name": name}
	for _, v := range []interface{ DeletePartialMatch(prometheus.Labels) int }{
		resourceReady, resourceMasters, resourceReplicasLinked, resourceReplicasDesired, clusterSlotsServed, replicationLagBytes,
		replicationLagSeconds, failovers, slotsMoved, keysMoved,
	} {
		v.DeletePartialMatch(l)
	}
	compat := prometheus.Labels{"namespace": namespace, "instance": name}
	var series []interface{ Delete(prometheus.Labels) bool }
	switch kind {
	case "RedisCluster":
		series = compatClusterSeries
		counted.forget(namespace, name, "")
	case "RedisReplication":
		series = compatReplicationSeries
	}
	for _, v := range series {
		v.Delete(compat)
	}
	forgetBackupTarget(memory.backups, kind, namespace, name)
}

// onceMemory remembers what a counter of the replaced operator's has counted (Memory.counted),
// by namespace/name/what, for what lasts several reconciles but counts once: a run of slot
// moves (a slice of moves each reconcile; a rebalance onto masters that stay, a reshard off
// departing ones), a follower pod let go (a stale cache may show its StatefulSet unshrunk once
// more). An operator restarted meanwhile counts what it resumes once more.
type onceMemory struct {
	mu   sync.Mutex
	seen map[string]bool
}

// first reports whether what was not counted for the resource yet, and notes it counted.
func (m *onceMemory) first(obj client.Object, what string) bool {
	key := obj.GetNamespace() + "/" + obj.GetName() + "/" + what
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seen[key] {
		return false
	}
	m.seen[key] = true
	return true
}

// forget ends what the resource's entries starting with prefix were counted for; "" forgets
// them all (the resource is gone).
func (m *onceMemory) forget(namespace, name, prefix string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for key := range m.seen {
		if strings.HasPrefix(key, namespace+"/"+name+"/"+prefix) {
			delete(m.seen, key)
		}
	}
}

// Entries of onceMemory.
const (
	onceRebalance      = "rebalance"
	onceReshard        = "reshard"
	onceFollowerRemove = "remove-follower/"
)

// observeSlotsMoved counts a run of slot moves, a reshard when they leave a departing master,
// else a rebalance, once per run (see onceMemory).
func observeSlotsMoved(counted *onceMemory, cr *v1beta2.RedisCluster, offDeparting bool) {
	counter, what := clusterRebalances, onceRebalance
	if offDeparting {
		counter, what = clusterReshards, onceReshard
	}
	if counted.first(cr, what) {
		counter.With(compatLabelValues(cr)).Inc()
	}
}

// observeFollowersRemoved counts each follower ordinal in [from, to) let go by a scale-in once.
func observeFollowersRemoved(counted *onceMemory, cr *v1beta2.RedisCluster, from, to int32) {
	for ordinal := from; ordinal < to; ordinal++ {
		if counted.first(cr, onceFollowerRemove+strconv.Itoa(int(ordinal))) {
			clusterRemoveFollowerAttempts.With(compatLabelValues(cr)).Inc()
		}
	}
}

// observeClusterMembers records the masters serving slots, the linked replicas and the slots
// served, as the members answered.
func observeClusterMembers(cr *v1beta2.RedisCluster, members []clusterplan.Member) {
	var masters, linked float64
	served := map[int]bool{}
	for i := range members {
		m := &members[i]
		switch m.Replication.Kind {
		case redis.RoleMaster:
			me, ok := myselfOf(m)
			if !ok || len(me.Slots) == 0 {
				continue
			}
			masters++
			for _, r := range me.Slots {
				for slot := r.Start; slot <= r.End; slot++ {
					served[slot] = true
				}
			}
		case redis.RoleSlave:
			if m.Replication.ReplicationState == "connected" {
				linked++
			}
		}
	}
	l := resourceLabelValues(cr)
	resourceMasters.With(l).Set(masters)
	resourceReplicasLinked.With(l).Set(linked)
	resourceReplicasDesired.With(l).Set(float64(builder.FollowerReplicas(cr)))
	clusterSlotsServed.With(l).Set(float64(len(served)))
}

// observeReplicationMembers records the masters, the linked replicas and the largest lag.
func observeReplicationMembers(cr *v1beta2.RedisReplication, members []replicationplan.Member) {
	var masters, linked float64
	var masterOffset int64 = -1
	connected := 0 // to the master with the most replicas, should there be two
	for _, m := range members {
		if m.Role != nil && m.Role.Kind == redis.RoleMaster {
			masters++
			masterOffset = max(masterOffset, m.Role.ReplicationOffset)
			connected = max(connected, len(m.Role.Replicas))
		}
	}
	var lag int64
	for _, m := range members {
		if m.Role == nil || m.Role.Kind != redis.RoleSlave {
			continue
		}
		if m.Role.ReplicationState == "connected" {
			linked++
		}
		if masterOffset >= 0 {
			lag = max(lag, masterOffset-m.Role.ReplicationOffset)
		}
	}
	l := resourceLabelValues(cr)
	resourceMasters.With(l).Set(masters)
	resourceReplicasLinked.With(l).Set(linked)
	if cr.Spec.Size != nil {
		resourceReplicasDesired.With(l).Set(float64(max(*cr.Spec.Size-1, 0)))
	}
	replicationLagBytes.With(l).Set(float64(lag))
	compat := compatLabelValues(cr)
	replicationHasMaster.With(compat).Set(boolGauge(masters > 0))
	replicationConnectedReplicas.With(compat).Set(float64(connected))
}

// observeReplicationPods records the running pods of a replication, and counts a reconcile
// that found a number other than the spec's.
func observeReplicationPods(cr *v1beta2.RedisReplication, pods []corev1.Pod) {
	running := 0
	for i := range pods {
		if pods[i].Status.Phase == corev1.PodRunning && pods[i].DeletionTimestamp == nil {
			running++
		}
	}
	compat := compatLabelValues(cr)
	replicationPodsCurrent.With(compat).Set(float64(running))
	if cr.Spec.Size != nil && int(*cr.Spec.Size) != running {
		replicationPodsMismatch.With(compat).Inc()
	}
}

// observeMasterChange counts the master of a replication moving from one pod to another
// (not the first master found), once per change: from is the recorded master as this
// reconcile read it, replaced by the one last counted when there is one.
func (r *RedisReplicationReconciler) observeMasterChange(cr *v1beta2.RedisReplication, from, to string) {
	if counted, ok := r.countedMaster.Load(cr.UID); ok {
		from = counted.(string)
	}
	if to == "" {
		return
	}
	r.countedMaster.Store(cr.UID, to)
	if from != "" && to != from {
		replicationMasterChanges.With(compatLabelValues(cr)).Inc()
	}
}

// acknowledgmentLags are the lags, in seconds since their last acknowledgment, of the replicas
// a master lists in INFO replication ("slave0:ip=10.0.0.2,port=6379,state=online,offset=8148,lag=0"),
// by address.
func acknowledgmentLags(masterInfo map[string]string) map[string]int64 {
	lags := map[string]int64{}
	for key, value := range masterInfo {
		if !strings.HasPrefix(key, "slave") || strings.TrimLeft(key[len("slave"):], "0123456789") != "" || len(key) == len("slave") {
			continue
		}
		fields := map[string]string{}
		for _, kv := range strings.Split(value, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				fields[k] = v
			}
		}
		lag, err := strconv.ParseInt(fields["lag"], 10, 64)
		if err != nil || fields["ip"] == "" || fields["port"] == "" {
			continue
		}
		lags[net.JoinHostPort(fields["ip"], fields["port"])] = lag
	}
	return lags
}

// CountWrites wraps the client the reconcilers use so that each write is counted.
func CountWrites(c client.Client) client.Client { return &countingClient{Client: c} }

type countingClient struct{ client.Client }

func (c *countingClient) count(verb string, obj client.Object) {
	apiWrites.WithLabelValues(verb, kindOf(c.Scheme(), obj)).Inc()
}

func (c *countingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	c.count("create", obj)
	return c.Client.Create(ctx, obj, opts...)
}

func (c *countingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	c.count("update", obj)
	return c.Client.Update(ctx, obj, opts...)
}

func (c *countingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	c.count("patch", obj)
	return c.Client.Patch(ctx, obj, patch, opts...)
}

func (c *countingClient) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	kind := "unknown"
	if k, ok := obj.(interface{ GetKind() string }); ok {
		kind = k.GetKind()
	}
	apiWrites.WithLabelValues("apply", kind).Inc()
	return c.Client.Apply(ctx, obj, opts...)
}

func (c *countingClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	c.count("delete", obj)
	return c.Client.Delete(ctx, obj, opts...)
}

func (c *countingClient) Status() client.SubResourceWriter {
	return &countingStatusWriter{SubResourceWriter: c.Client.Status(), count: c.count}
}

type countingStatusWriter struct {
	client.SubResourceWriter
	count func(string, client.Object)
}

func (w *countingStatusWriter) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	w.count("update-status", obj)
	return w.SubResourceWriter.Update(ctx, obj, opts...)
}

func (w *countingStatusWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	w.count("patch-status", obj)
	return w.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}
