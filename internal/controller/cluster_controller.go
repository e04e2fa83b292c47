package controller

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/reconcile"
	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/redis/clusterplan"
	"github.com/rediskube/redis-operator/internal/status"
)

// SkipReconcileClusterAnnotation stops all action on a RedisCluster while "true".
const SkipReconcileClusterAnnotation = builder.AnnotationSkipReconcileCluster

// RedisClusterReconciler makes a RedisCluster's objects and Redis topology match its spec.
type RedisClusterReconciler struct {
	// Dependencies are the clients and memory every kind's reconciler shares.
	Dependencies
	// DNSDomain is the cluster's DNS domain, in the names the nodes announce; "" is
	// cluster.local.
	DNSDomain string
	// StuckMasterGrace overrides DefaultMasterPromotionGrace as how long a master answers BUSY
	// before its replica is asked to take over (tests shorten it).
	StuckMasterGrace time.Duration
	// failovers are the CLUSTER FAILOVERs asked recently, not to be asked again meanwhile.
	failovers failoverLog
}

// clusterScope is what the phases of one reconcile share.
type clusterScope struct {
	workloadScope
	// restore is what the restore phase decided of spec.restore.
	restore restoreState
	cr      *v1beta2.RedisCluster
	// clusterStage is which pods a RedisCluster on its way waits for (see status.StateFacts).
	clusterStage string
	leaders      []corev1.Pod
	followers    []corev1.Pod
	members      []clusterplan.Member
	// outages is what the cluster does not serve as it should (clusterplan.Outages).
	outages []string
	// infos are the pods' CLUSTER INFO read with their views, by pod name.
	infos map[string]redis.ClusterInfo
	// pods are the pod counts the StatefulSets get: the spec's, or more while a scale-in drains.
	pods builder.ClusterPods
	// nodePorts (serviceType NodePort) are the node ports of the per-pod Services, by pod, and
	// servicePods the pod counts that keep such a Service (rediscluster_nodeports.go).
	nodePorts   map[string]builder.NodePorts
	servicePods builder.ClusterPods
	// podsReady: every pod passed its readiness probe, which Ready also requires.
	podsReady bool
	// revisions are the update revisions of the StatefulSets the operator rolls itself
	// (OnDelete), by StatefulSet name; durable: the leaders' data survives a pod's replacement.
	revisions map[string]string
	durable   bool
	// rollingUpdate: the operator is replacing pods for a new template (rollingUpdateOn).
	rollingUpdate bool
	// handMade are the follower pods kept as masters after a failover made by hand.
	handMade []string
	// gateHeld are the NodePort pods their address gate holds (recordAddressHolders).
	gateHeld []string
}

func (r *RedisClusterReconciler) phases() []reconcile.Phase[*clusterScope] {
	return []reconcile.Phase[*clusterScope]{
		sharedPhase[*clusterScope]("deletion", r.finalizeIfDeleted),
		sharedPhase[*clusterScope]("skip-reconcile", r.skipIfAnnotated),
		sharedPhase[*clusterScope]("finalizer", r.ensureFinalizer),
		sharedPhase[*clusterScope]("password", r.resolvePassword),
		sharedPhase[*clusterScope]("tls", r.resolveTLS),
		sharedPhase[*clusterScope]("acl", r.resolveACL),
		{Name: "node-ports", Run: r.readNodePorts},
		{Name: "hand-over-terminating", Run: r.handOverTerminating},
		sharedPhase[*clusterScope]("password-rotation", r.rotatePassword),
		{Name: "scale-in", Run: r.holdScaleIn},
		{Name: "node-port-services", Run: r.ensureNodePortServices},
		{Name: "restore", Run: r.resolveRestoreOf},
		{Name: "build", Run: r.buildObjects},
		sharedPhase[*clusterScope]("storage", r.growStorage),
		sharedPhase[*clusterScope]("objects", r.applyObjects),
		sharedPhase[*clusterScope]("exporter-password", r.restartStaleExporters),
		sharedPhase[*clusterScope]("storage-wait", r.waitForStorage),
		{Name: "pods", Run: r.observePods},
		{Name: "tls-reload", Run: r.reloadTLS},
		{Name: "acl-reload", Run: r.reloadACL},
		{Name: "topology", Run: r.reconcileTopology},
		{Name: "pod-roles", Run: r.labelPodRoles},
		{Name: "dynamic-config", Run: r.applyDynamicConfig},
		{Name: "health", Run: r.checkHealth},
		{Name: "restored", Run: r.markRestoredOf},
		{Name: "requested-failover", Run: r.failoverOnRequest},
		{Name: "rolling-update", Run: r.rollPods},
	}
}

// Reconcile runs the phases in order; the status is written once, at the end, and only when
// it changed.
func (r *RedisClusterReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return kindShell[*v1beta2.RedisCluster, *clusterScope]{
		newObject: func() *v1beta2.RedisCluster { return &v1beta2.RedisCluster{} },
		newScope: func(cr *v1beta2.RedisCluster, b workloadScope) *clusterScope {
			s := &clusterScope{workloadScope: b, cr: cr}
			var storage *v1beta2.Storage
			if cr.Spec.Storage != nil {
				storage = &cr.Spec.Storage.Storage
			}
			s.spec = workloadSpec{owner: cr, kind: "RedisCluster", skipAnnotation: SkipReconcileClusterAnnotation, skipWhat: "cluster",
				passwordSecret: cr.Spec.KubernetesConfig.ExistingPasswordSecret, tls: cr.Spec.TLS, acl: cr.Spec.ACL,
				storage: storage, port: int(builder.ClusterPort(cr)),
				pods: func(ctx context.Context) ([]corev1.Pod, error) { return r.allPods(ctx, s)() }}
			return s
		},
		phases:   r.phases(),
		liveness: r.Liveness,
		stage:    func(s *clusterScope) string { return s.clusterStage },
		finish:   func(_ context.Context, s *clusterScope) { finishRestore(&s.workloadScope, &s.restore) },
		memory:   r.Memory,
	}.reconcile(ctx, r.Client, req)
}

// allPods lists the pods of both StatefulSets, leaders first.
func (r *RedisClusterReconciler) allPods(ctx context.Context, s *clusterScope) func() ([]corev1.Pod, error) {
	return func() ([]corev1.Pod, error) {
		if err := r.listPods(ctx, s); err != nil {
			return nil, err
		}
		return append(append([]corev1.Pod{}, s.leaders...), s.followers...), nil
	}
}

func (r *RedisClusterReconciler) buildObjects(_ context.Context, s *clusterScope) (bool, error) {
	s.objects, s.buildErr = builder.BuildRedisCluster(builder.RedisClusterInput{CR: s.cr, Password: s.password, ACL: s.acl.content, ACLOperatorUser: s.acl.operatorUser, Pods: &s.pods,
		NodePorts: s.nodePorts, ServicePods: &s.servicePods, DNSDomain: r.DNSDomain,
		Restore: s.restore.decision.input, RestoredFrom: s.restore.decision.restoredFrom,
		// Once Ready on the restored data, the state ConfigMap tells leader pods started later
		// (one recreated without its volume, a scale-out's) to skip the restore.
		Restored: meta.IsStatusConditionTrue(s.Conditions.List(), ConditionRestored)})
	s.acl.keepIn(s.objects, s.cr.Name)
	return false, nil
}

func (r *RedisClusterReconciler) observePods(ctx context.Context, s *clusterScope) (bool, error) {
	cr := s.cr
	if err := r.listPods(ctx, s); err != nil {
		return false, err
	}
	port := int(builder.ClusterPort(cr))
	watchLiveness(r.Liveness, cr, append(slices.Clone(s.leaders), s.followers...), func(pod *corev1.Pod) redis.Endpoint {
		return s.endpoint(pod.Status.PodIP, port) // members are dialled at their pod IP, NodePorts or not
	})
	if err := r.readRevisions(ctx, s); err != nil {
		return false, err
	}
	if err := r.recordAddressHolders(ctx, s); err != nil {
		return false, err
	}
	s.rollingUpdate = s.rollingUpdateOn(time.Now())
	readyLeaders, readyFollowers := countReady(s.leaders), countReady(s.followers)
	cr.Status.ReadyLeaderReplicas, cr.Status.ReadyFollowerReplicas = readyLeaders, readyFollowers

	// The topology is worked on as soon as every pod runs with an address: the operator asks
	// Redis itself whether it answers, rather than waiting for the kubelet's readiness probe.
	wantLeaders, wantFollowers := builder.LeaderReplicas(cr), builder.FollowerReplicas(cr)
	runningLeaders, runningFollowers := countRunning(s.leaders), countRunning(s.followers)
	switch {
	case runningLeaders < wantLeaders:
		r.podsNotRunning(ctx, s, status.ClusterReasonInitializingLeaders, fmt.Sprintf("%d of %d leader pods are running", runningLeaders, wantLeaders))
		return true, r.assignSlotsEarly(ctx, s) // pod events bring us back
	case runningFollowers < wantFollowers:
		r.podsNotRunning(ctx, s, status.ClusterReasonInitializingFollowers, fmt.Sprintf("%d of %d follower pods are running", runningFollowers, wantFollowers))
		return true, r.assignSlotsEarly(ctx, s)
	}
	s.podsReady = readyLeaders >= wantLeaders && readyFollowers >= wantFollowers
	return false, nil
}

// assignSlotsEarly gives the running leaders of a cluster that was never bootstrapped their
// slots while the other pods start (see clusterplan.EarlySlots for why).
func (r *RedisClusterReconciler) assignSlotsEarly(ctx context.Context, s *clusterScope) error {
	if s.cr.Status.State != "" && s.cr.Status.State != status.ClusterStateInitializing {
		return r.meetEarly(ctx, s)
	}
	if restoring(s) {
		// Each restored leader claims the slots it holds keys of as Redis starts; the slots
		// of a leader not running yet are unknown, and given early to another they would be
		// taken from the keys. The plan gives the keyless rest once every pod runs.
		return nil
	}
	s.members = r.observeMembers(ctx, s.withPods(runningPods(s.leaders), nil))
	design := clusterplan.Design{Leaders: int(builder.LeaderReplicas(s.cr)), Followers: int(builder.FollowerReplicas(s.cr))}
	for _, step := range clusterplan.EarlySlots(design, s.members) {
		if err := r.runStep(ctx, s, step); err != nil {
			return err
		}
	}
	for _, m := range s.members {
		if m.View == nil {
			s.Requeue(ctx, afterRedisCommands, "a new leader runs but does not answer yet")
			break
		}
	}
	return nil
}

// listPods reads the live pods of both StatefulSets into the scope.
func (r *RedisClusterReconciler) listPods(ctx context.Context, s *clusterScope) error {
	var err error
	if s.leaders, err = podsOf(ctx, r.Client, s.cr.Namespace, builder.ClusterStatefulSetName(s.cr.Name, builder.RoleLeader)); err != nil {
		return err
	}
	s.followers, err = podsOf(ctx, r.Client, s.cr.Namespace, builder.ClusterStatefulSetName(s.cr.Name, builder.RoleFollower))
	return err
}

// podsNotRunning reports pods that do not run yet, in the reference's stage (leaders, then
// followers). Pods that are not yet members (a new cluster, a scale-out) are progress; a
// member the cluster misses is an outage (Degraded, never Failed: its pod comes back or Redis
// fails over). A pod stuck for a reason of its own says so (reportPodTrouble).
func (r *RedisClusterReconciler) podsNotRunning(ctx context.Context, s *clusterScope, stage, message string) {
	s.clusterStage = stage
	message += addressGateNote(s.gateHeld)
	running := runningPods(append(slices.Clone(s.leaders), s.followers...))
	design := clusterplan.Design{Leaders: int(builder.LeaderReplicas(s.cr)), Followers: int(builder.FollowerReplicas(s.cr)),
		RollingUpdate: s.rollingUpdate}
	view := s.withPods(running, nil)
	var outages []string
	if s.Conditions.HasServed() { // a cluster still being created has no outage to report
		outages = clusterplan.Outages(design, r.observeMembers(ctx, view))
		if len(running) == 0 {
			outages = append(outages, "no pod of the cluster runs")
		}
	}
	if len(outages) > 0 {
		s.clusterStage = ""
		r.outage(s, message+"; "+clusterplan.OutageSummary(outages))
		s.Requeue(ctx, whileOutage, "the cluster serves less than it should while pods do not run: an election may change that")
	} else {
		reason := status.ReasonPodsNotReady
		if s.cr.Status.State != "" && s.cr.Status.State != status.ClusterStateInitializing {
			reason = ReasonScalingOut
		}
		s.Conditions.Progressing(reason, message)
	}
	r.reportPodTrouble(ctx, s.cr, s.Conditions, append(slices.Clone(s.leaders), s.followers...), s.Requeuer(ctx))
}

// outage reports that an established cluster does not serve as it should, with one Warning
// event when the outage starts (its details change as Redis fails over; the condition follows
// them, the events would only repeat).
func (r *RedisClusterReconciler) outage(s *clusterScope, message string) {
	previous := meta.FindStatusCondition(s.cr.Status.Conditions, v1beta2.ConditionDegraded)
	if previous == nil || previous.Status != metav1.ConditionTrue || previous.Reason != status.ReasonOutage {
		r.Recorder.Eventf(s.cr, nil, corev1.EventTypeWarning, status.ReasonOutage, "Observe", "%s", message)
	}
	s.Conditions.Degraded(status.ReasonOutage, message)
}

// reloadACL brings an edit of the ACL Secret into the running pods, without restarts.
func (r *RedisClusterReconciler) reloadACL(ctx context.Context, s *clusterScope) (bool, error) {
	return false, r.reloadACLOn(ctx, &s.workloadScope, append(slices.Clone(s.leaders), s.followers...))
}

// reloadTLS brings a renewed TLS Secret into the running pods, without restarts.
func (r *RedisClusterReconciler) reloadTLS(ctx context.Context, s *clusterScope) (bool, error) {
	return false, r.reloadTLSOn(ctx, &s.workloadScope, append(slices.Clone(s.leaders), s.followers...))
}

// endpoint is how to reach the Redis at ip:port of this cluster: its password, its TLS.
func (s *clusterScope) endpoint(ip string, port int) redis.Endpoint {
	return redis.NewEndpoint(ip, port, s.auth()).WithTLS(s.tls.clientConfig())
}

// memberEndpoint is how to reach the Redis of a member: at its pod's address, whatever it
// announces.
func (s *clusterScope) memberEndpoint(m *clusterplan.Member) redis.Endpoint {
	return s.endpoint(m.Dial())
}

// withPods is a scope that observes only the given pods, with what it takes to reach them.
func (s *clusterScope) withPods(leaders, followers []corev1.Pod) *clusterScope {
	return &clusterScope{workloadScope: s.workloadScope, cr: s.cr, clusterStage: s.clusterStage, nodePorts: s.nodePorts,
		leaders: leaders, followers: followers}
}

// resolveRestoreOf decides what becomes of spec.restore before the build. A cluster is
// restored shard by shard through its leaders (builder.RedisClusterInput.Restore): each
// restores the shard of its slots, and Redis, finding keys of slots nobody serves, claims
// them as it starts; the plan gives the keyless rest to their designed leaders, and the
// followers sync from the restored masters.
func (r *RedisClusterReconciler) resolveRestoreOf(ctx context.Context, s *clusterScope) (bool, error) {
	return r.resolveRestore(ctx, &s.workloadScope, "RedisCluster", builder.ClusterStatefulSetName(s.cr.Name, builder.RoleLeader), true, s.cr.Spec.Restore, &s.restore)
}

// markRestoredOf says Restored once the cluster is Ready on the restored data: the health
// phase, which runs before, stops the reconcile until every slot is served (every key of the
// backup with it) and every replica follows its master.
func (r *RedisClusterReconciler) markRestoredOf(_ context.Context, s *clusterScope) (bool, error) {
	r.markRestored(&s.workloadScope, &s.restore)
	return false, nil
}

// restoring: the cluster was created by a restore that is not done yet.
func restoring(s *clusterScope) bool {
	return s.restore.decision.action == restoreBuild && !meta.IsStatusConditionTrue(s.Conditions.List(), ConditionRestored)
}
