package controller

import (
	"cmp"
	"context"
	"crypto/tls"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/reconcile"
	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/redis/replicationplan"
	"github.com/rediskube/redis-operator/internal/status"
)

// Compatible status strings of a RedisReplication.
const (
	ReplicationStateInitializing = "Initializing"
	ReplicationStateReady        = "Ready"
	ReplicationStateFailed       = "Failed"
)

// SkipReconcileReplicationAnnotation stops all action on a RedisReplication while "true".
const SkipReconcileReplicationAnnotation = builder.AnnotationSkipReconcileReplication

// sentinelWatchInterval is how often a Ready replication watched by sentinels asks them where
// the master is (reads only).
const sentinelWatchInterval = 5 * time.Second

// DefaultMasterPromotionGrace is how long a RedisReplication without sentinels waits for an
// unreachable master to come back before promoting a replica: a restarting master keeps its
// writes, a promoted replica loses those it had not received.
const DefaultMasterPromotionGrace = 15 * time.Second

// RedisReplicationReconciler runs a RedisReplication: one master, the other pods its replicas.
type RedisReplicationReconciler struct {
	// Dependencies are the clients and memory every kind's reconciler shares.
	Dependencies
	// MasterPromotionGrace overrides DefaultMasterPromotionGrace (tests shorten it).
	MasterPromotionGrace time.Duration
	// OutageAfter and StuckAfter override DefaultOutageAfter and DefaultStuckAfter (tests
	// shorten them); StuckAfter also bounds how long a replica's link may stay down.
	OutageAfter, StuckAfter time.Duration
	// DNSDomain is the cluster's DNS domain, the end of the Service names in
	// status.connectionInfo; "" is DefaultDNSDomain.
	DNSDomain string

	// masterDownSince remembers, per resource, when its master stopped answering. It is memory
	// only: an operator restart restarts the clock, which delays a promotion and never hastens it.
	masterDownSince sync.Map // types.UID -> time.Time
	// countedMaster is the master a change was last counted to, per resource: a reconcile may
	// read a status older than the one last written, and must not count the same change again.
	countedMaster sync.Map // types.UID -> pod name
	// served remembers the resources that have been Ready while this operator runs: a master
	// lost past the outage bound is an outage of a replication that served, although the
	// status meanwhile says Progressing (a clean fail-over is no outage), which the conditions
	// alone could not tell from a replication being created.
	served sync.Map // types.UID -> struct{}
}

type replicationScope struct {
	workloadScope
	// restore is what the restore phase decided of spec.restore.
	restore restoreState
	cr      *v1beta2.RedisReplication
	pods    []corev1.Pod
	members []replicationplan.Member
	plan    replicationplan.Plan
	// sentinels is set when RedisSentinels monitor this replication; monitored is the master
	// address more than half of their answering pods report.
	sentinels bool
	monitored string
	// vote is how the sentinels asked answered: the address most of them name, how many name
	// it, answered, and were asked (running pods). The labels need a majority of those asked.
	vote struct {
		host                       string
		agreeing, answering, asked int
	}
	// embeddedReports are the master hosts the embedded sentinels' pods report, one per pod
	// asked ("" for none); legacySentinels is set while the embedded sentinels an earlier
	// version ran (StatefulSet <name>-sentinel) still exist and must be retired.
	embeddedReports []string
	// silentSentinels are the embedded sentinels' running pods that did not answer.
	silentSentinels []string
	// watched are the endpoints of the replication's running Redis pods, which observePods
	// hands the liveness watcher, and with embedded sentinels observeSentinels with theirs.
	watched         map[string]redis.Endpoint
	legacySentinels bool
	// stuckSentinels says why the sentinels could not fail the master over by themselves and
	// what was asked of them (sentinelUnstick), "" when they can.
	stuckSentinels string
	// hostnames: the sentinels watching the replication name its pods by DNS name
	// (builder.ReplicationNamesHosts); hosts maps its pods between their IPs and names.
	hostnames bool
	hosts     podHosts
}

func (r *RedisReplicationReconciler) phases() []reconcile.Phase[*replicationScope] {
	return []reconcile.Phase[*replicationScope]{
		{Name: "deletion", Run: r.reconcileDeletion},
		sharedPhase[*replicationScope]("skip-reconcile", r.skipIfAnnotated),
		sharedPhase[*replicationScope]("finalizer", r.ensureFinalizer),
		sharedPhase[*replicationScope]("password", r.resolvePassword),
		sharedPhase[*replicationScope]("tls", r.resolveTLS),
		sharedPhase[*replicationScope]("acl", r.resolveACL),
		{Name: "hostnames", Run: r.resolveHostnames},
		sharedPhase[*replicationScope]("password-rotation", r.rotatePassword),
		{Name: "hand-over-terminating", Run: r.handOverTerminating},
		{Name: "hand-over-before-scale-in", Run: r.handOverBeforeScaleIn},
		{Name: "restore", Run: r.resolveRestoreOf},
		{Name: "build", Run: r.buildObjects},
		sharedPhase[*replicationScope]("storage", r.growStorage),
		sharedPhase[*replicationScope]("objects", r.applyObjects),
		sharedPhase[*replicationScope]("exporter-password", r.restartStaleExporters),
		sharedPhase[*replicationScope]("storage-wait", r.waitForStorage),
		{Name: "pods", Run: r.observePods},
		{Name: "tls-reload", Run: r.reloadTLS},
		{Name: "acl-reload", Run: r.reloadACL},
		{Name: "sentinels", Run: r.observeSentinels},
		{Name: "sentinel-tls-roll", Run: r.rollSentinelsForTLS},
		{Name: "replication", Run: r.reconcileReplication},
		{Name: "dynamic-config", Run: r.applyDynamicConfig},
		{Name: "requested-failover", Run: r.failoverOnRequest},
		{Name: "rolling-update", Run: r.rollPods},
		{Name: "sentinel-migration", Run: r.retireLegacySentinels},
		{Name: "health", Run: r.checkHealth},
		{Name: "restored", Run: r.markRestoredOf},
	}
}

// Reconcile runs the phases in order and writes the status once, when it changed.
func (r *RedisReplicationReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return kindShell[*v1beta2.RedisReplication, *replicationScope]{
		newObject: func() *v1beta2.RedisReplication { return &v1beta2.RedisReplication{} },
		newScope: func(cr *v1beta2.RedisReplication, b workloadScope) *replicationScope {
			b.spec = workloadSpec{owner: cr, kind: "RedisReplication", skipAnnotation: SkipReconcileReplicationAnnotation, skipWhat: "RedisReplication",
				passwordSecret: cr.Spec.KubernetesConfig.ExistingPasswordSecret, tls: cr.Spec.TLS, acl: cr.Spec.ACL,
				aclForSentinels: cr.Spec.Sentinel != nil, storage: cr.Spec.Storage, port: builder.DefaultRedisPort,
				pods: func(ctx context.Context) ([]corev1.Pod, error) { return podsOf(ctx, r.Client, cr.Namespace, cr.Name) }}
			s := &replicationScope{workloadScope: b, cr: cr}
			// Embedded sentinels and RedisSentinels alike take a new password in step with the pods.
			s.spec.sentinels = func(ctx context.Context) ([]watchingSentinels, error) { return r.watchingSentinels(ctx, s) }
			return s
		},
		phases:   r.phases(),
		liveness: r.Liveness,
		finish: func(ctx context.Context, s *replicationScope) {
			r.degradeWhileSilent(ctx, s)
			finishRestore(&s.workloadScope, &s.restore)
		},
		memory: r.Memory,
	}.reconcile(ctx, r.Client, req)
}

func (r *RedisReplicationReconciler) reconcileDeletion(ctx context.Context, s *replicationScope) (bool, error) {
	if s.cr.DeletionTimestamp != nil {
		r.masterDownSince.Delete(s.cr.UID)
		r.countedMaster.Delete(s.cr.UID)
		r.served.Delete(s.cr.UID)
	}
	return r.finalizeIfDeleted(ctx, &s.workloadScope)
}

func (r *RedisReplicationReconciler) buildObjects(ctx context.Context, s *replicationScope) (bool, error) {
	in := builder.RedisReplicationInput{CR: s.cr, Password: s.password, ACL: s.acl.content, ACLOperatorUser: s.acl.operatorUser,
		AnnounceHostnames: s.hostnames, DNSDomain: r.DNSDomain,
		Restore: s.restore.decision.input, RestoredFrom: s.restore.decision.restoredFrom,
		// Once Ready on the restored data, the state ConfigMap tells pods started later (pod 0
		// recreated without its volume too) to skip the restore and sync from the master.
		Restored: meta.IsStatusConditionTrue(s.Conditions.List(), ConditionRestored)}
	if sn := s.cr.Spec.Sentinel; sn != nil {
		password, stop, err := resolvePasswordOf(ctx, r.Client, r.Recorder, s.cr, sn.ExistingPasswordSecret, s.Conditions)
		if stop || err != nil {
			return stop, err
		}
		in.SentinelPassword = password
		if s.legacySentinels, err = r.hasLegacySentinels(ctx, s); err != nil {
			return false, err
		}
		in.RetainLegacySentinels = s.legacySentinels
		if in.MasterHost, err = r.sentinelSeed(ctx, s); err != nil {
			return false, err
		}
	}
	s.objects, s.buildErr = builder.BuildRedisReplication(in)
	if s.buildErr == nil {
		reportQuorum(r.Recorder, s.memory.warned, s.cr, builder.EmbeddedSentinelQuorum(s.cr), s.cr.Spec.Sentinel != nil, s.Conditions)
	}
	s.acl.keepIn(s.objects, s.cr.Name)
	return false, nil
}

// boundedWait reports a wait (report) until it has lasted StuckAfter, then as stuck, and
// comes back at the bound to say so: nothing else may.
func (r *RedisReplicationReconciler) boundedWait(ctx context.Context, s *replicationScope, key, message string, report func(string)) {
	bound := cmp.Or(r.StuckAfter, DefaultStuckAfter)
	boundedWait(r.Recorder, s.memory, s.cr, s.Conditions, key, bound, message, report)
	s.Requeue(ctx, bound, "a wait that lasts past its bound is reported as stuck")
}

// node returns the Redis of a pod of the replication (Dependencies.redisNode: the pooled
// connection, or the fake of a unit test).
func (r *RedisReplicationReconciler) node(s *replicationScope, ip string) (RedisNode, error) {
	return r.redisNode(s.endpointOf(ip))
}

// dial returns the node at a port of a pod, logged in and with TLS as given: the sentinels
// watching the replication, whose login is their own.
func (r *RedisReplicationReconciler) dial(ip string, port int, auth redis.Auth, tlsConfig *tls.Config) (RedisNode, error) {
	return r.redisNode(redis.NewEndpoint(ip, port, auth).WithTLS(tlsConfig))
}

// resolveHostnames finds whether the sentinels watching the replication name instances by DNS
// name, before anything tells Redis or the sentinels of a pod.
func (r *RedisReplicationReconciler) resolveHostnames(ctx context.Context, s *replicationScope) (bool, error) {
	sentinels, err := listSentinelsOf(ctx, r.Client, s.cr.Namespace, s.cr.Name)
	if err != nil {
		return false, err
	}
	s.hostnames = builder.ReplicationNamesHosts(s.cr, sentinels)
	return false, nil
}

// reloadACL brings an edit of the ACL Secret into the running Redis pods, without restarts.
func (r *RedisReplicationReconciler) reloadACL(ctx context.Context, s *replicationScope) (bool, error) {
	return false, r.reloadACLOn(ctx, &s.workloadScope, s.pods)
}

// reloadTLS brings a renewed TLS Secret into the running Redis pods, without restarts.
func (r *RedisReplicationReconciler) reloadTLS(ctx context.Context, s *replicationScope) (bool, error) {
	return false, r.reloadTLSOn(ctx, &s.workloadScope, s.pods)
}

// notReady reports what is missing: a replication that was never Ready is initializing, one
// that was is degraded.
func (r *RedisReplicationReconciler) notReady(s *replicationScope, reason, message string) {
	if r.hasServed(s) {
		s.Conditions.Degraded(reason, message)
		return
	}
	s.Conditions.Progressing(reason, message)
}

// hasServed tells whether the replication served: the status says so, or this operator saw it
// Ready (the status may say Progressing meanwhile, as while a replica is re-pointed after a
// failover, which must not hide a pod that stopped answering).
func (r *RedisReplicationReconciler) hasServed(s *replicationScope) bool {
	_, served := r.served.Load(s.cr.UID)
	return served || s.Conditions.HasServed()
}

// degradeWhileSilent runs after the phases, whichever stopped them: a replication that served
// is Degraded whenever one of its running pods does not answer, whatever else the reconcile
// reported (a fail-over in progress, replicas being re-pointed), naming the silent pods.
func (r *RedisReplicationReconciler) degradeWhileSilent(_ context.Context, s *replicationScope) {
	var silent []string
	for i, m := range s.members {
		if m.Role == nil && m.IP != "" && !m.Terminating && s.pods[i].Status.Phase == corev1.PodRunning {
			silent = append(silent, m.Pod)
		}
	}
	silent = append(silent, s.silentSentinels...)
	if len(silent) == 0 || !r.hasServed(s) {
		return
	}
	if degraded := meta.FindStatusCondition(s.cr.Status.Conditions, v1beta2.ConditionDegraded); degraded != nil &&
		degraded.Status == metav1.ConditionTrue {
		return // already says what is wrong (an outage, the master unreachable, these pods)
	}
	message := silentPods(silent)
	if ready := meta.FindStatusCondition(s.cr.Status.Conditions, v1beta2.ConditionReady); ready != nil &&
		ready.Status != metav1.ConditionTrue && ready.Message != "" {
		message += "; " + ready.Message
	}
	s.Conditions.Degraded(status.ReasonRedisUnreachable, message)
}

func (s *replicationScope) podNamed(name string) runtime.Object {
	for i := range s.pods {
		if s.pods[i].Name == name {
			return &s.pods[i]
		}
	}
	return nil
}

// member returns the observed member of a pod, nil when the pod was not observed.
func (s *replicationScope) member(pod string) *replicationplan.Member {
	for i := range s.members {
		if s.members[i].Pod == pod {
			return &s.members[i]
		}
	}
	return nil
}

func (r *RedisReplicationReconciler) applyDynamicConfig(ctx context.Context, s *replicationScope) (bool, error) {
	if s.cr.Spec.RedisConfig == nil || len(s.cr.Spec.RedisConfig.DynamicConfig) == 0 {
		return false, nil
	}
	for _, m := range s.members {
		if m.Role == nil {
			continue
		}
		c, err := r.node(s, m.IP)
		if err != nil {
			return false, err
		}
		changed, err := setDynamicConfig(ctx, c, s.cr.Spec.RedisConfig.DynamicConfig)
		if err != nil {
			r.Recorder.Eventf(s.cr, nil, corev1.EventTypeWarning, "DynamicConfigFailed", "ConfigSet", "pod %s: %v", m.Pod, err)
			return false, fmt.Errorf("pod %s: %w", m.Pod, err)
		}
		if len(changed) > 0 {
			r.Recorder.Eventf(s.cr, nil, corev1.EventTypeNormal, "DynamicConfig", "ConfigSet", "pod %s: set %v", m.Pod, changed)
		}
	}
	return false, nil
}

// checkHealth is Ready when every designed pod is ready, answers, and follows the master with
// its link up (the plan has waited for syncing replicas already).
func (r *RedisReplicationReconciler) checkHealth(ctx context.Context, s *replicationScope) (bool, error) {
	size := *s.cr.Spec.Size
	answering, readySilent := 0, ""
	var silent []string
	for i, m := range s.members {
		switch {
		case m.Role != nil:
			answering++
			continue
		case podReady(&s.pods[i]) && readySilent == "":
			readySilent = m.Pod
		}
		if m.IP != "" && s.pods[i].Status.Phase == corev1.PodRunning {
			silent = append(silent, m.Pod)
		}
	}
	if s.cr.Status.ReadyReplicas < size || int32(answering) < size {
		message := fmt.Sprintf("%d of %d pods ready, %d answer", s.cr.Status.ReadyReplicas, size, answering)
		if len(silent) > 0 {
			message += "; " + silentPods(silent)
		}
		r.notReady(s, status.ReasonPodsNotReady, message)
		r.reportPodTrouble(ctx, s.cr, s.Conditions, s.pods, s.Requeuer(ctx))
		if readySilent != "" {
			// A pod cut off the network for less than its probes' threshold stays ready, so
			// no pod event marks its return: only asking again finds it (a master to demote).
			s.Requeue(ctx, silentPodRetry, "pod "+readySilent+" is ready but Redis does not answer")
		}
		return true, nil // pod events bring us back when a pod turns ready
	}
	master, ok := s.podNamed(s.plan.Master).(*corev1.Pod)
	if !ok {
		r.boundedWait(ctx, s, "master", "no master chosen yet", func(m string) { r.notReady(s, status.ReasonConverging, m) })
		return true, nil
	}
	if held, err := r.embeddedSentinelsHold(ctx, s, master); held || err != nil {
		return held, err
	}
	s.cr.Status.ConnectionInfo = connectionInfo(s.cr, r.DNSDomain)
	if s.cr.Status.State != ReplicationStateReady && s.Conditions.FirstReady() {
		r.Recorder.Eventf(s.cr, master, corev1.EventTypeNormal, "ReplicationReady", "Observe", "master %s with %d replicas in sync", s.plan.Master, size-1)
	}
	s.Conditions.Ready(fmt.Sprintf("master %s, %d replicas with their link up", s.plan.Master, size-1))
	s.memory.waitsOver(s.cr.UID)
	r.served.Store(s.cr.UID, struct{}{})
	if s.sentinels {
		// Sentinels move the master without any Kubernetes event (a hung master, a partition):
		// the -master Service label must follow within seconds, not at the next health check.
		s.Requeue(ctx, sentinelWatchInterval, "sentinels may fail over without any Kubernetes event")
	} else {
		s.Requeue(ctx, healthCheckInterval, "periodic health check: Redis failures need not change any pod")
	}
	return false, nil
}

// embeddedSentinelsHold tells whether the replication's own sentinels (spec.sentinel) hold it
// back from Ready, and reports why: they are part of the replication, and Ready needs every
// one of them to answer and monitor this master.
func (r *RedisReplicationReconciler) embeddedSentinelsHold(ctx context.Context, s *replicationScope, master *corev1.Pod) (bool, error) {
	sn := s.cr.Spec.Sentinel
	if sn == nil {
		return false, nil
	}
	sentinelPods, err := podsOf(ctx, r.Client, s.cr.Namespace, builder.EmbeddedSentinelStatefulSetName(s.cr.Name))
	if err != nil {
		return false, err
	}
	// A sentinel that does not answer would miss the next failover, and the others
	// need it for their quorum: the replication is not Ready (Degraded once it served).
	if len(s.silentSentinels) > 0 {
		message := "sentinel " + silentPods(s.silentSentinels)
		r.notReady(s, status.ReasonRedisUnreachable, message)
		s.Requeue(ctx, sentinelWatchInterval, message)
		return true, nil
	}
	// A sentinel that cannot learn the master is restarted (replicationplan.Reseed: while
	// most follow the master, or while the others do or are blind too, as after every pod
	// came back at a new address), and until it follows the replication is not Ready: that
	// sentinel would miss the next failover.
	blind, err := r.reseedEmbeddedSentinel(ctx, s, sentinelPods, r.embeddedSeedHost(s, master))
	if err != nil {
		return false, err
	}
	if blind != "" {
		r.boundedWait(ctx, s, "sentinel-reseed", blind, func(m string) { r.notReady(s, status.ReasonConverging, m) })
		s.Requeue(ctx, time.Second, "a blind embedded sentinel is restarted after its grace") // sentinel pods are not watched
		return true, nil
	}
	if ready := countReady(sentinelPods); ready < sn.Size || s.monitored != master.Status.PodIP {
		wait := fmt.Sprintf("%d of %d sentinels ready; they report the master at %q, it is at %s", ready, sn.Size, s.monitored, master.Status.PodIP)
		r.boundedWait(ctx, s, "sentinels", wait, func(m string) { r.notReady(s, status.ReasonConverging, m) })
		s.Requeue(ctx, time.Second, wait) // sentinel pods are not watched by this controller
		return true, nil
	}
	return false, nil
}

// resolveRestoreOf decides what becomes of spec.restore before the build. A replication is
// restored through pod 0 alone (builder.RedisReplicationInput.Restore), which the plan then
// makes the first master (restoreFirstMaster); the other pods sync from it.
func (r *RedisReplicationReconciler) resolveRestoreOf(ctx context.Context, s *replicationScope) (bool, error) {
	return r.resolveRestore(ctx, &s.workloadScope, "RedisReplication", s.cr.Name, true, s.cr.Spec.Restore, &s.restore)
}

// markRestoredOf says Restored once the replication is Ready on the restored data: the health
// phase, which runs before, stops the reconcile until the master serves and every replica
// follows it with its link up.
func (r *RedisReplicationReconciler) markRestoredOf(_ context.Context, s *replicationScope) (bool, error) {
	r.markRestored(&s.workloadScope, &s.restore)
	return false, nil
}

// restoreFirstMaster is the pod the plan must make the first master: pod 0, which alone
// restores the backup (the restore subcommand's --only-ordinal), while the StatefulSet created
// by a restore is not Restored yet; "" otherwise. The plan heeds it only until a master is
// recorded, and once Restored the replication's data is its own: the usual rules choose.
func restoreFirstMaster(s *replicationScope) string {
	if s.restore.decision.action != restoreBuild || meta.IsStatusConditionTrue(s.Conditions.List(), ConditionRestored) {
		return ""
	}
	return builder.PodName(s.cr.Name, 0)
}
