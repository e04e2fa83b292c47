package controller

import (
	"context"
	"net"
	"reflect"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
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

func init() {
	metrics.Registry.MustRegister(apiWrites, resourceReady, resourceMasters, resourceReplicasLinked, resourceReplicasDesired,
		clusterSlotsServed, replicationLagBytes, replicationLagSeconds, failovers, slotsMoved, keysMoved, reconcileErrors)
}

func resourceLabelValues(obj client.Object) prometheus.Labels {
	return prometheus.Labels{"kind": kindName(obj), "namespace": obj.GetNamespace(), "name": obj.GetName()}
}

// kindName is the Go type's name, which is the kind's (RedisCluster, ...).
func kindName(obj client.Object) string { return reflect.TypeOf(obj).Elem().Name() }

// observeReady records the resource's Ready condition after a reconcile.
func observeReady(obj client.Object) {
	ready := 0.0
	if meta.IsStatusConditionTrue(commonStatusOf(obj).Conditions, v1beta2.ConditionReady) {
		ready = 1
	}
	l := resourceLabelValues(obj)
	resourceReady.With(l).Set(ready)
	// Counters of what the operator does exist at 0 from the start, so that rate() and
	// increase() see the first one.
	switch obj.(type) {
	case *v1beta2.RedisCluster:
		failovers.With(l)
		slotsMoved.With(l)
		keysMoved.With(l)
	case *v1beta2.RedisReplication:
		failovers.With(l)
	}
}

// forgetResource drops the series of a resource that is gone.
func forgetResource(kind, namespace, name string) {
	l := prometheus.Labels{"kind": kind, "namespace": namespace, "name": name}
	for _, v := range []interface{ DeletePartialMatch(prometheus.Labels) int }{
		resourceReady, resourceMasters, resourceReplicasLinked, resourceReplicasDesired, clusterSlotsServed, replicationLagBytes,
		replicationLagSeconds, failovers, slotsMoved, keysMoved,
	} {
		v.DeletePartialMatch(l)
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
	for _, m := range members {
		if m.Role != nil && m.Role.Kind == redis.RoleMaster {
			masters++
			masterOffset = max(masterOffset, m.Role.ReplicationOffset)
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
	apiWrites.WithLabelValues(verb, kindOf(obj)).Inc()
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
