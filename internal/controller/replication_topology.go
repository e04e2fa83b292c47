package controller

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/redis/replicationplan"
	"github.com/rediskube/redis-operator/internal/status"
)

// observePods observes the pods (observeMembers) and reports when there is none yet.
func (r *RedisReplicationReconciler) observePods(ctx context.Context, s *replicationScope) (bool, error) {
	if err := r.observeMembers(ctx, s); err != nil {
		return false, err
	}
	s.watched = livenessEndpoints(s.pods, func(pod *corev1.Pod) redis.Endpoint {
		return redis.NewEndpoint(pod.Status.PodIP, builder.DefaultRedisPort, s.acl.auth(s.password)).WithTLS(s.tls.clientConfig())
	})
	if s.cr.Spec.Sentinel == nil {
		r.Liveness.Watch(livenessOwner(s.cr), s.watched)
	} // else observeSentinels adds the sentinels' pods: one Watch per reconcile keeps what each last answered
	observeReplicationMembers(s.cr, s.members)
	observeReplicationPods(s.cr, s.pods)
	r.observeLagSeconds(ctx, s)
	s.cr.Status.ReadyReplicas = countReady(s.pods)
	if len(s.members) == 0 {
		r.notReady(s, status.ReasonPodsNotReady, "waiting for pods of StatefulSet "+s.cr.Name)
		r.reportPodTrouble(ctx, s.cr, s.Conditions, s.pods, s.Requeuer(ctx))
		return true, nil // the pod watch brings us back
	}
	return false, nil
}

// observeLagSeconds records redis_operator_replication_lag_seconds: the master's INFO
// replication gives each linked replica's lag, and a replica it does not list tells how long
// its link has been down. Without a master there is no lag to tell and the series is dropped.
// A failure to read is logged, never an error: it only costs a sample.
func (r *RedisReplicationReconciler) observeLagSeconds(ctx context.Context, s *replicationScope) {
	labels := resourceLabelValues(s.cr)
	var master *replicationplan.Member
	for i := range s.members {
		m := &s.members[i]
		if m.Role != nil && m.Role.Kind == redis.RoleMaster && (master == nil || len(m.Role.Replicas) > len(master.Role.Replicas)) {
			master = m
		}
	}
	if master == nil {
		replicationLagSeconds.Delete(labels)
		return
	}
	info, err := r.info(ctx, s, master.IP)
	if err != nil {
		log.FromContext(ctx).V(1).Info("no replication lag in seconds", "pod", master.Pod, "error", err.Error())
		return
	}
	lags := acknowledgmentLags(info)
	var worst int64
	for _, m := range s.members {
		if m.Role == nil || m.Role.Kind != redis.RoleSlave {
			continue
		}
		// The master lists each replica by what it announces: its IP, or its DNS name.
		lag, ok := lags[redis.NewEndpoint(s.hosts.address(m.IP), m.Port, redis.Auth{}).Address()]
		if !ok {
			lag, ok = lags[redis.NewEndpoint(m.IP, m.Port, redis.Auth{}).Address()]
		}
		if ok {
			worst = max(worst, lag)
			continue
		}
		replicaInfo, err := r.info(ctx, s, m.IP)
		if err != nil {
			log.FromContext(ctx).V(1).Info("no replication lag in seconds", "pod", m.Pod, "error", err.Error())
			continue
		}
		if down, err := strconv.ParseInt(replicaInfo["master_link_down_since_seconds"], 10, 64); err == nil {
			worst = max(worst, down)
		}
	}
	replicationLagSeconds.With(labels).Set(float64(worst))
}

func (r *RedisReplicationReconciler) info(ctx context.Context, s *replicationScope, ip string) (map[string]string, error) {
	c, err := r.node(s, ip)
	if err != nil {
		return nil, err
	}
	return c.Info(ctx, "replication")
}

// observeMembers lists the pods and asks each running one for ROLE; a pod that does not
// answer is a member without a role, which the plans treat as down.
func (r *RedisReplicationReconciler) observeMembers(ctx context.Context, s *replicationScope) error {
	pods, err := podsOf(ctx, r.Client, s.cr.Namespace, s.cr.Name)
	if err != nil {
		return err
	}
	return r.observePodMembers(ctx, s, pods)
}

// observePodMembers asks each of the pods for its ROLE into s.members (and s.pods).
func (r *RedisReplicationReconciler) observePodMembers(ctx context.Context, s *replicationScope, pods []corev1.Pod) error {
	s.pods, s.members = pods, nil
	s.hosts = newPodHosts(pods, s.cr.Name, s.cr.Namespace, r.DNSDomain, s.hostnames)
	for i := range pods {
		pod := &pods[i]
		m := replicationplan.Member{Pod: pod.Name, Ordinal: podOrdinal(pod.Name), IP: pod.Status.PodIP, Port: builder.DefaultRedisPort, Ready: podReady(pod),
			Terminating: pod.DeletionTimestamp != nil}
		if pod.Status.PodIP != "" && pod.Status.Phase == corev1.PodRunning {
			c, err := r.node(s, m.IP)
			if err != nil {
				return err
			}
			readCtx, cancel := r.Liveness.ReadContext(ctx, livenessOwner(s.cr), pod.Name)
			role, linkDown, err := observeRole(readCtx, c)
			cancel()
			if err == nil {
				// A replica following the master by its DNS name is following that pod's IP.
				role.MasterIP = s.hosts.ip(role.MasterIP)
				m.Role, m.LinkDown = &role, linkDown
			} else {
				log.FromContext(ctx).Info("ROLE failed", "pod", pod.Name, "error", err.Error())
			}
		}
		s.members = append(s.members, m)
	}
	return nil
}

// roleReader is a node asked its ROLE: what it is, its offset, its master and replicas.
type roleReader interface {
	Role(ctx context.Context) (redis.Role, error)
}

// replicationInfoReader is a node asked an INFO section ("replication": the offset it holds,
// how long its link has been down, the replicas it lists with their lag).
type replicationInfoReader interface {
	Info(ctx context.Context, section string) (map[string]string, error)
}

// roleObserver is a pod asked for its role and offset (observeRole).
type roleObserver interface {
	roleReader
	replicationInfoReader
}

// replicaOfRunner is a pod the plan re-points at a master, or promotes (runStep).
type replicaOfRunner interface {
	ReplicaOf(ctx context.Context, host string, port int) error
	ReplicaOfNoOne(ctx context.Context) error
}

// observeRole is ROLE with the offset of the stream the node holds. ROLE reports -1 for a
// replica whose link is down, exactly when the planner compares what replicas hold, so the
// offset comes from INFO replication (master_repl_offset), which a replica keeps while
// disconnected. It also returns how long a replica's link has been down
// (master_link_down_since_seconds; 0 when up, or -1 as Redis says of a link never up since
// the replica started).
func observeRole(ctx context.Context, c roleObserver) (redis.Role, time.Duration, error) {
	role, err := c.Role(ctx)
	if err != nil {
		return role, 0, err
	}
	info, err := c.Info(ctx, "replication")
	if err != nil {
		return role, 0, err
	}
	offset, err := strconv.ParseInt(info["master_repl_offset"], 10, 64)
	if err != nil {
		return role, 0, fmt.Errorf("INFO replication: master_repl_offset %q: %w", info["master_repl_offset"], err)
	}
	role.ReplicationOffset = offset
	var linkDown time.Duration
	if seconds, err := strconv.ParseInt(info["master_link_down_since_seconds"], 10, 64); err == nil && seconds > 0 {
		linkDown = time.Duration(seconds) * time.Second
	}
	return role, linkDown, nil
}

// reconcileReplication chooses the master and points every other pod at it. An established
// replication whose master stays silent, or whose replicas stay unlinked, past OutageAfter is
// in an outage; a replica whose link to the master's current address stays down past
// StuckAfter is stuck. Both are Degraded with one Warning event each.
func (r *RedisReplicationReconciler) reconcileReplication(ctx context.Context, s *replicationScope) (bool, error) {
	design := replicationplan.Design{Current: s.cr.Status.MasterNode, Sentinels: s.sentinels, Monitored: s.monitored,
		LinkDownBound: cmp.Or(r.StuckAfter, DefaultStuckAfter), FirstMaster: restoreFirstMaster(s)}
	since, down := r.masterDownSince.Load(s.cr.UID)
	grace := r.MasterPromotionGrace
	if grace == 0 {
		grace = DefaultMasterPromotionGrace
	}
	if down {
		design.MayPromote = time.Since(since.(time.Time)) >= grace
	}
	r.clockLinks(s)
	s.plan = replicationplan.Compute(design, s.members)
	switch {
	case !s.plan.MasterDown:
		r.masterDownSince.Delete(s.cr.UID)
	case !down:
		r.masterDownSince.Store(s.cr.UID, time.Now())
	}
	if s.plan.Master != "" && s.plan.Master != s.cr.Status.MasterNode {
		if s.cr.Status.MasterNode != "" {
			r.Recorder.Eventf(s.cr, s.podNamed(s.plan.Master), corev1.EventTypeNormal, "MasterChanged", "Observe", "the master is now %s (was %s)", s.plan.Master, s.cr.Status.MasterNode)
		}
		r.observeMasterChange(s.cr, s.cr.Status.MasterNode, s.plan.Master)
		s.cr.Status.MasterNode = s.plan.Master
	}
	if err := r.labelPodRoles(ctx, s); err != nil {
		return false, err
	}
	for _, step := range s.plan.Steps {
		if err := r.runStep(ctx, s, step); err != nil {
			return false, err
		}
	}
	outageAfter := cmp.Or(r.OutageAfter, DefaultOutageAfter)
	if outages := r.outages(ctx, s, outageAfter); len(outages) > 0 {
		if s.stuckSentinels != "" {
			outages = append(outages, s.stuckSentinels)
		}
		r.outage(s, strings.Join(outages, "; "))
		s.Requeue(ctx, whileConverging, "an outage: the master or a replica may come back")
		return true, nil
	}
	s.memory.warned.Cleared(s.cr.UID, status.ReasonOutage)
	switch {
	case len(s.plan.Steps) > 0:
		s.Conditions.Progressing(status.ReasonBootstrapping, fmt.Sprintf("running %d step(s): %s", len(s.plan.Steps), s.plan.Steps[0].Reason))
		s.Requeue(ctx, afterRedisCommands, "waiting for replicas to connect")
		return true, nil
	case s.plan.Stuck != "":
		boundedWait(r.Recorder, s.memory, s.cr, s.Conditions, "replica-link", 0, s.plan.Stuck, nil)
		s.Requeue(ctx, whileConverging, s.plan.Stuck)
		return true, nil
	case s.plan.MasterDown:
		// Within the promotion grace (or while sentinels fail over) and the outage bound, a
		// silent master of a replication that served is Degraded, naming the master, as every
		// kind says of a pod that stops answering; past the bound it is an outage (above), with
		// its Warning event. One being created is progress; a pod that cannot start says why.
		message := s.plan.Wait
		if s.stuckSentinels != "" {
			message += "; " + s.stuckSentinels
		}
		r.notReady(s, status.ReasonRedisUnreachable, message)
		r.reportPodTrouble(ctx, s.cr, s.Conditions, s.pods, s.Requeuer(ctx))
		wait := min(whileConverging, outageAfter)
		if !down {
			wait = min(grace, outageAfter) // the promotion clock starts now
		}
		s.Requeue(ctx, wait, s.plan.Wait)
		return true, nil
	case s.plan.Wait != "":
		r.boundedWait(ctx, s, "plan", s.plan.Wait, func(m string) { r.notReady(s, status.ReasonConverging, m) })
		// A pod that cannot start (no volume, no image) is why no Redis answers: say so.
		r.reportPodTrouble(ctx, s.cr, s.Conditions, s.pods, s.Requeuer(ctx))
		s.Requeue(ctx, whileConverging, s.plan.Wait)
		return true, nil
	}
	return false, nil
}

// clockLinks sets how long each replica's link has been down: what the replica says
// (master_link_down_since_seconds, which survives an operator restart) or, when it cannot say
// (a replica never linked since it started reports -1), how long the operator has seen it down.
func (r *RedisReplicationReconciler) clockLinks(s *replicationScope) {
	now := time.Now()
	for i := range s.members {
		m := &s.members[i]
		down := m.Role != nil && m.Role.Kind == redis.RoleSlave && !m.Role.LinkUp()
		m.LinkDown = max(m.LinkDown, s.memory.waits.Lasted(s.cr.UID, "link/"+m.Pod, down, now))
	}
}

// outages is what an established replication (one that was Ready) has not served for at least
// the bound: its master silent, or no replica linked to it. A replication being created has
// none.
// While one is shorter than the bound, it comes back when the bound is reached: no pod event
// need come by then.
func (r *RedisReplicationReconciler) outages(ctx context.Context, s *replicationScope, bound time.Duration) []string {
	health := replicationplan.Assess(s.plan, s.cr.Status.MasterNode, s.members, int(*s.cr.Spec.Size))
	now := time.Now()
	silent := s.memory.waits.Lasted(s.cr.UID, "master-silent", health.MasterSilent != "", now)
	unlinked := s.memory.waits.Lasted(s.cr.UID, "unlinked", health.Unlinked != "", now)
	if _, served := r.served.Load(s.cr.UID); !served && !s.Conditions.HasServed() {
		return nil
	}
	outages := health.Outages(silent, unlinked, bound)
	if len(outages) == 0 && (health.MasterSilent != "" || health.Unlinked != "") {
		s.Requeue(ctx, bound-max(silent, unlinked), "a silent master or unlinked replicas become an outage at the bound")
	}
	return outages
}

// outage reports that an established replication does not serve as it should, with one
// Warning event when the outage starts (its details change while it lasts; the condition
// follows them, the events would only repeat).
func (r *RedisReplicationReconciler) outage(s *replicationScope, message string) {
	if s.memory.warned.FirstWarning(s.cr.UID, status.ReasonOutage, status.ReasonOutage) {
		r.Recorder.Eventf(s.cr, nil, corev1.EventTypeWarning, status.ReasonOutage, "Observe", "%s", message)
	}
	s.Conditions.Degraded(status.ReasonOutage, message)
}

func (r *RedisReplicationReconciler) runStep(ctx context.Context, s *replicationScope, step replicationplan.Step) error {
	target := s.member(step.On)
	if target == nil {
		return fmt.Errorf("step %s names unknown pod %s", step.Kind, step.On)
	}
	c, err := r.node(s, target.IP)
	if err != nil {
		return err
	}
	switch step.Kind {
	case replicationplan.StepReplicaOf:
		// The planner names the master by IP; Redis is told the form its sentinels use.
		step.Host = s.hosts.address(step.Host)
		err = c.ReplicaOf(ctx, step.Host, step.Port)
	case replicationplan.StepPromote, replicationplan.StepLead:
		err = c.ReplicaOfNoOne(ctx)
	default:
		err = fmt.Errorf("unknown step %s", step.Kind)
	}
	pod := s.podNamed(step.On)
	if err != nil {
		r.Recorder.Eventf(s.cr, pod, corev1.EventTypeWarning, string(step.Kind)+"Failed", string(step.Kind), "%s failed: %v", step, err)
		return fmt.Errorf("%s: %w", step, err)
	}
	if step.Kind == replicationplan.StepPromote {
		failovers.With(resourceLabelValues(s.cr)).Inc()
	}
	log.FromContext(ctx).Info("ran replication step", "step", step.String(), "reason", step.Reason)
	r.Recorder.Eventf(s.cr, pod, corev1.EventTypeNormal, string(step.Kind), string(step.Kind), "%s: %s", step, step.Reason)
	return nil
}

// labelPodRoles keeps redis-role on the pods for the -master and -replica Services and users'
// selectors, as replicationplan.RoleLabels decides from this very observation: at most one
// master, one that answers as master and that the sentinels' majority (or the plan) names.
// It runs in the reconcile that observes a change, before any step or wait, so a master
// that stops answering or is replaced leaves the -master Service at once.
func (r *RedisReplicationReconciler) labelPodRoles(ctx context.Context, s *replicationScope) error {
	view := replicationplan.LabelView{Sentinels: s.sentinels, SentinelMaster: s.vote.host, Agreeing: s.vote.agreeing,
		Answering: s.vote.answering, Quorum: s.vote.asked/2 + 1, Planned: s.plan.Master, Current: s.cr.Status.MasterNode}
	for _, m := range s.members {
		pod, _ := s.podNamed(m.Pod).(*corev1.Pod)
		if pod == nil {
			continue
		}
		view.Pods = append(view.Pods, replicationplan.PodView{Pod: m.Pod, IP: m.IP, Answered: m.Role != nil,
			ReportsMaster: m.Role != nil && m.Role.Kind == redis.RoleMaster, LabelledMaster: pod.Labels[builder.LabelRedisRole] == builder.RedisRoleMaster})
	}
	labels := replicationplan.RoleLabels(view)
	// Labels leave before the new master gets its own, so that the -master Service never
	// selects two pods, whatever their ordinals.
	for _, p := range slices.Concat(pickPods(view.Pods, labels, false), pickPods(view.Pods, labels, true)) {
		want := builder.RedisRoleSlave
		if labels[p.Pod] == replicationplan.LabelMaster {
			want = builder.RedisRoleMaster
		}
		// A silent pod keeps what it has unless that is master: it is not vouched for either way.
		if !p.Answered && !p.LabelledMaster {
			continue
		}
		pod, _ := s.podNamed(p.Pod).(*corev1.Pod)
		if p.LabelledMaster && want != builder.RedisRoleMaster {
			log.FromContext(ctx).Info("the master label leaves a pod", "pod", p.Pod, "answers", p.Answered,
				"sentinelsName", s.vote.host, "agreeing", s.vote.agreeing, "plan", s.plan.Master)
		}
		if err := setPodRoleLabel(ctx, r.Client, pod, want); err != nil {
			return err
		}
	}
	return nil
}

// pickPods returns the pods that get the master label (master), or those that do not.
func pickPods(pods []replicationplan.PodView, labels map[string]replicationplan.Label, master bool) []replicationplan.PodView {
	var out []replicationplan.PodView
	for _, p := range pods {
		if (labels[p.Pod] == replicationplan.LabelMaster) == master {
			out = append(out, p)
		}
	}
	return out
}
