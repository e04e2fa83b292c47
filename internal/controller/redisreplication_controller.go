package controller

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/redis/replicationplan"
)

// Compatible status strings of a RedisReplication.
const (
	ReplicationStateInitializing = "Initializing"
	ReplicationStateReady        = "Ready"
	ReplicationStateFailed       = "Failed"
)

// SkipReconcileReplicationAnnotation stops all action on a RedisReplication while "true".
const SkipReconcileReplicationAnnotation = "redisreplication.opstreelabs.in/skip-reconcile"

// sentinelWatchInterval is how often a Ready replication watched by sentinels asks them where
// the master is (reads only).
const sentinelWatchInterval = 5 * time.Second

// DefaultMasterPromotionGrace is how long a RedisReplication without sentinels waits for an
// unreachable master to come back before promoting a replica: a restarting master keeps its
// writes, a promoted replica loses those it had not received.
const DefaultMasterPromotionGrace = 15 * time.Second

// RedisReplicationReconciler runs a RedisReplication: one master, the other pods its replicas.
type RedisReplicationReconciler struct {
	Client   client.Client
	Scheme   *runtime.Scheme
	Recorder recorder.EventRecorder
	Redis    *redis.Pool
	// MasterPromotionGrace overrides DefaultMasterPromotionGrace (tests shorten it).
	MasterPromotionGrace time.Duration

	// masterDownSince remembers, per resource, when its master stopped answering. It is memory
	// only: an operator restart restarts the clock, which delays a promotion and never hastens it.
	masterDownSince sync.Map // types.UID -> time.Time
}

type replicationScope struct {
	scopeBase
	cr       *v1beta2.RedisReplication
	password string
	pods     []corev1.Pod
	members  []replicationplan.Member
	plan     replicationplan.Plan
	// sentinels is set when RedisSentinels monitor this replication; monitored is the master
	// address most of their answering pods report.
	sentinels bool
	monitored string
}

// rotatePassword changes the running pods' password in place when the Secret's changed. Not
// while sentinels watch the replication: they authenticate with the old password until they
// are given the new one, which is still to come (the pods take it when they restart).
func (r *RedisReplicationReconciler) rotatePassword(ctx context.Context, s *replicationScope) (bool, error) {
	if s.cr.Spec.Sentinel != nil {
		return false, nil
	}
	if watching, err := listSentinelsOf(ctx, r.Client, s.cr.Namespace, s.cr.Name); err != nil || len(watching) > 0 {
		return false, err
	}
	pods := func() ([]corev1.Pod, error) { return podsOf(ctx, r.Client, s.cr.Namespace, s.cr.Name) }
	return passwordRotation{r.Client, r.Redis, r.Recorder}.rotate(ctx, s.cr, pods, builder.DefaultRedisPort, s.password, s.conditions,
		func(why string) { s.requeue(ctx, whileBroken, why) })
}

func (r *RedisReplicationReconciler) phases() []phase[*replicationScope] {
	return []phase[*replicationScope]{
		{"deletion", r.reconcileDeletion},
		{"skip-reconcile", r.skipReconcile},
		{"finalizer", func(ctx context.Context, s *replicationScope) (bool, error) {
			return false, addFinalizer(ctx, r.Client, s.cr)
		}},
		{"password", r.resolvePassword},
		{"password-rotation", r.rotatePassword},
		{"hand-over-before-scale-in", r.handOverBeforeScaleIn},
		{"objects", r.applyObjects},
		{"pods", r.observePods},
		{"sentinels", r.observeSentinels},
		{"replication", r.reconcileReplication},
		{"pod-roles", r.labelPodRoles},
		{"dynamic-config", r.applyDynamicConfig},
		{"rolling-update", r.rollPods},
		{"health", r.checkHealth},
	}
}

// Reconcile runs the phases in order and writes the status once, when it changed.
func (r *RedisReplicationReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return kindShell[*v1beta2.RedisReplication, *replicationScope]{
		newObject: func() *v1beta2.RedisReplication { return &v1beta2.RedisReplication{} },
		status:    func(cr *v1beta2.RedisReplication) any { return &cr.Status },
		common:    func(cr *v1beta2.RedisReplication) *v1beta2.CommonStatus { return &cr.Status.CommonStatus },
		newScope: func(cr *v1beta2.RedisReplication, b scopeBase) *replicationScope {
			return &replicationScope{scopeBase: b, cr: cr}
		},
		phases: r.phases(),
	}.reconcile(ctx, r.Client, req)
}

func (r *RedisReplicationReconciler) reconcileDeletion(ctx context.Context, s *replicationScope) (bool, error) {
	if s.cr.DeletionTimestamp != nil {
		r.masterDownSince.Delete(s.cr.UID)
	}
	return finalizeDeleted(ctx, r.Client, r.Recorder, s.cr, "RedisReplication", s.cr.Spec.Storage)
}

func (r *RedisReplicationReconciler) skipReconcile(_ context.Context, s *replicationScope) (bool, error) {
	return skipWhileAnnotated(s.cr, SkipReconcileReplicationAnnotation, "RedisReplication", s.conditions), nil
}

// failed is the compatible status of a replication the user must fix.
func (s *replicationScope) failed(message string) {
	s.cr.Status.State, s.cr.Status.Reason = ReplicationStateFailed, message
}

func (r *RedisReplicationReconciler) resolvePassword(ctx context.Context, s *replicationScope) (stop bool, err error) {
	s.password, stop, err = resolvePasswordOf(ctx, r.Client, r.Recorder, s.cr, s.cr.Spec.KubernetesConfig.ExistingPasswordSecret, s.conditions, s.failed)
	return stop, err
}

func (r *RedisReplicationReconciler) applyObjects(ctx context.Context, s *replicationScope) (bool, error) {
	in := builder.RedisReplicationInput{CR: s.cr, Password: s.password}
	if sn := s.cr.Spec.Sentinel; sn != nil {
		password, stop, err := resolvePasswordOf(ctx, r.Client, r.Recorder, s.cr, sn.ExistingPasswordSecret, s.conditions, s.failed)
		if stop || err != nil {
			return stop, err
		}
		in.SentinelPassword = password
		if in.MasterHost, err = r.sentinelSeed(ctx, s); err != nil {
			return false, err
		}
	}
	objects, err := builder.BuildRedisReplication(in)
	return applyBuilt(ctx, r.Client, r.Recorder, s.cr, objects, err, s.conditions, s.failed)
}

// handOverBeforeScaleIn moves the master role to a pod that stays before the StatefulSet
// shrinks: scaling in removes the highest ordinals, and a master removed that way would take
// with it every write its replicas had not received yet. FAILOVER TO pauses writes until the
// chosen replica has them all, then swaps the roles. Sentinels, where they watch, are left to
// fail over by themselves once the pod goes.
func (r *RedisReplicationReconciler) handOverBeforeScaleIn(ctx context.Context, s *replicationScope) (bool, error) {
	size := int(*s.cr.Spec.Size)
	master := s.cr.Status.MasterNode
	if master == "" || podOrdinal(master) < size || s.cr.Spec.Sentinel != nil {
		return false, nil
	}
	if sentinels, err := listSentinelsOf(ctx, r.Client, s.cr.Namespace, s.cr.Name); err != nil || len(sentinels) > 0 {
		return false, err
	}
	pods, err := podsOf(ctx, r.Client, s.cr.Namespace, s.cr.Name)
	if err != nil {
		return false, err
	}
	roles := map[string]redis.Role{}
	var masterPod *corev1.Pod
	for i := range pods {
		if pods[i].Status.PodIP == "" {
			continue
		}
		c, err := r.client(s, pods[i].Status.PodIP)
		if err != nil {
			return false, err
		}
		if role, err := observeRole(ctx, c); err == nil {
			roles[pods[i].Name] = role
		}
		if pods[i].Name == master {
			masterPod = &pods[i]
		}
	}
	if role, ok := roles[master]; masterPod == nil || !ok || role.Kind != redis.RoleMaster {
		return false, nil // gone, or no longer master: nothing to hand over
	}
	var target *corev1.Pod
	var best int64 = -1
	for i := range pods {
		role, ok := roles[pods[i].Name]
		if podOrdinal(pods[i].Name) < size && ok && role.LinkUp() && role.MasterIP == masterPod.Status.PodIP && role.ReplicationOffset > best {
			target, best = &pods[i], role.ReplicationOffset
		}
	}
	if target == nil {
		wait := fmt.Sprintf("scaling in to %d removes the master %s, and no replica that stays is in sync to take over", size, master)
		r.notReady(s, ReasonConverging, wait)
		s.requeue(ctx, whileConverging, wait)
		return true, nil
	}
	return true, r.handOver(ctx, s, masterPod, target, ReasonConverging, fmt.Sprintf("before scaling in to %d pods", size))
}

// rollPods replaces the pods of an OnDelete StatefulSet that run an old revision, one at a time
// and only while every pod is ready and in sync: replicas first (highest ordinal first), then
// the master, after FAILOVER TO has handed its role to the most advanced updated replica. With
// sentinels the old master is simply replaced and they fail over, as they would for any loss.
func (r *RedisReplicationReconciler) rollPods(ctx context.Context, s *replicationScope) (bool, error) {
	var sts appsv1.StatefulSet
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.cr.Namespace, Name: s.cr.Name}, &sts); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	revision := sts.Status.UpdateRevision
	if sts.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType || revision == "" {
		return false, nil
	}
	size := *s.cr.Spec.Size
	var outdated []*corev1.Pod
	answering := 0
	for i := range s.members {
		m := &s.members[i]
		pod, _ := s.podNamed(m.Pod).(*corev1.Pod)
		if pod == nil || podOrdinal(pod.Name) >= int(size) {
			continue
		}
		if m.Role != nil {
			answering++
		}
		if pod.Labels[appsv1.ControllerRevisionHashLabelKey] != revision {
			outdated = append(outdated, pod)
		}
	}
	if len(outdated) == 0 {
		return false, nil
	}
	if s.cr.Status.ReadyReplicas < size || answering < int(size) {
		return false, nil // health reports what is missing; pod events bring us back
	}
	slices.SortFunc(outdated, func(a, b *corev1.Pod) int { return podOrdinal(b.Name) - podOrdinal(a.Name) })
	victim := outdated[0]
	for _, pod := range outdated {
		if pod.Name != s.plan.Master {
			victim = pod
			break
		}
	}
	if victim.Name == s.plan.Master && !s.sentinels {
		return r.handOverForUpdate(ctx, s, victim, revision)
	}
	if err := r.Client.Delete(ctx, victim, client.Preconditions{UID: &victim.UID}); err != nil {
		if apierrors.IsNotFound(err) {
			return true, nil // a cache that lags behind an earlier delete; its events bring us back
		}
		return false, fmt.Errorf("delete pod %s for the rolling update: %w", victim.Name, err)
	}
	r.Recorder.Eventf(s.cr, victim, corev1.EventTypeNormal, "RollingUpdate", "Delete", "replacing pod %s (%s) with revision %s", victim.Name, roleOf(victim, s.plan.Master), revision)
	r.notReady(s, ReasonRollingUpdate, fmt.Sprintf("rolling update to revision %s: replacing %s, %d pod(s) left", revision, victim.Name, len(outdated)-1))
	return true, nil // the pod's events bring us back
}

// handOverForUpdate moves the master role off an outdated master to the most advanced updated
// replica, without losing a write; the master is replaced once it is a replica.
func (r *RedisReplicationReconciler) handOverForUpdate(ctx context.Context, s *replicationScope, master *corev1.Pod, revision string) (bool, error) {
	var target *corev1.Pod
	var best int64 = -1
	for i := range s.members {
		m := &s.members[i]
		pod, _ := s.podNamed(m.Pod).(*corev1.Pod)
		if pod == nil || m.Role == nil || !m.Role.LinkUp() || pod.Labels[appsv1.ControllerRevisionHashLabelKey] != revision {
			continue
		}
		if m.Role.ReplicationOffset > best {
			target, best = pod, m.Role.ReplicationOffset
		}
	}
	if target == nil {
		return false, nil // no updated replica in sync yet
	}
	return true, r.handOver(ctx, s, master, target, ReasonRollingUpdate, "for the rolling update to revision "+revision)
}

// handOver runs FAILOVER TO on the master towards target (a FAILOVER already in progress is
// waited for, not repeated), says so in an event and the conditions, and comes back once Redis
// has swapped the roles.
func (r *RedisReplicationReconciler) handOver(ctx context.Context, s *replicationScope, master, target *corev1.Pod, reason, why string) error {
	c, err := r.client(s, master.Status.PodIP)
	if err != nil {
		return err
	}
	err = c.FailoverTo(ctx, target.Status.PodIP, builder.DefaultRedisPort, 5*time.Second)
	inProgress := redis.IsServerError(err) && strings.Contains(err.Error(), "already in progress")
	if err != nil && !inProgress {
		r.Recorder.Eventf(s.cr, master, corev1.EventTypeWarning, "HandOverFailed", "Failover", "FAILOVER TO %s failed: %v", target.Name, err)
		return fmt.Errorf("hand the master role from %s to %s: %w", master.Name, target.Name, err)
	}
	message := fmt.Sprintf("handing the master role from %s to %s %s", master.Name, target.Name, why)
	if err == nil {
		r.Recorder.Eventf(s.cr, master, corev1.EventTypeNormal, "HandOver", "Failover", "%s", message)
	}
	r.notReady(s, reason, message)
	s.requeue(ctx, afterRedisCommands, "waiting for FAILOVER TO to complete")
	return nil
}

func roleOf(pod *corev1.Pod, master string) string {
	if pod.Name == master {
		return "the master, which the sentinels fail over"
	}
	return "a replica"
}

// sentinelSeed is the master address new embedded sentinel pods start monitoring: the current
// master's pod IP, or, while that pod has none (it is being replaced), the address the sentinels
// were last seeded with, so that they are never pruned in the middle of a failover. It is ""
// only before the first master is chosen; the sentinels are created after that.
func (r *RedisReplicationReconciler) sentinelSeed(ctx context.Context, s *replicationScope) (string, error) {
	if master := s.cr.Status.MasterNode; master != "" {
		var pod corev1.Pod
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.cr.Namespace, Name: master}, &pod)
		if client.IgnoreNotFound(err) != nil {
			return "", fmt.Errorf("get master pod %s: %w", master, err)
		}
		if err == nil && pod.DeletionTimestamp == nil && pod.Status.PodIP != "" {
			return pod.Status.PodIP, nil
		}
	}
	var cm corev1.ConfigMap
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.cr.Namespace, Name: builder.ConfigMapName(builder.SentinelStatefulSetName(s.cr.Name))}, &cm)
	if err != nil {
		return "", client.IgnoreNotFound(err)
	}
	return seededMaster(cm.Data[builder.SentinelConfKey]), nil
}

// seededMaster reads the master address of the "sentinel monitor <group> <host> <port>
// <quorum>" line of a rendered sentinel.conf.
func seededMaster(conf string) string {
	for _, line := range strings.Split(conf, "\n") {
		if f := strings.Fields(line); len(f) == 6 && f[0] == "sentinel" && f[1] == "monitor" {
			return f[3]
		}
	}
	return ""
}

// observePods lists the pods and asks each running one for ROLE; a pod that does not answer is
// a member without a role, which the plan treats as down.
func (r *RedisReplicationReconciler) observePods(ctx context.Context, s *replicationScope) (bool, error) {
	pods, err := podsOf(ctx, r.Client, s.cr.Namespace, s.cr.Name)
	if err != nil {
		return false, err
	}
	s.pods = pods
	s.cr.Status.ReadyReplicas = countReady(pods)
	for i := range pods {
		pod := &pods[i]
		m := replicationplan.Member{Pod: pod.Name, Ordinal: podOrdinal(pod.Name), IP: pod.Status.PodIP, Port: builder.DefaultRedisPort}
		if pod.Status.PodIP != "" && pod.Status.Phase == corev1.PodRunning {
			c, err := r.client(s, m.IP)
			if err != nil {
				return false, err
			}
			if role, err := observeRole(ctx, c); err == nil {
				m.Role = &role
			} else {
				log.FromContext(ctx).Info("ROLE failed", "pod", pod.Name, "error", err.Error())
			}
		}
		s.members = append(s.members, m)
	}
	if len(s.members) == 0 {
		r.notReady(s, ReasonPodsNotReady, "waiting for pods of StatefulSet "+s.cr.Name)
		return true, nil // the pod watch brings us back
	}
	return false, nil
}

// observeRole is ROLE with the offset of the stream the node holds. ROLE reports -1 for a
// replica whose link is down, exactly when the planner compares what replicas hold, so the
// offset comes from INFO replication (master_repl_offset), which a replica keeps while
// disconnected.
func observeRole(ctx context.Context, c *redis.Client) (redis.Role, error) {
	role, err := c.Role(ctx)
	if err != nil {
		return role, err
	}
	info, err := c.Info(ctx, "replication")
	if err != nil {
		return role, err
	}
	offset, err := strconv.ParseInt(info["master_repl_offset"], 10, 64)
	if err != nil {
		return role, fmt.Errorf("INFO replication: master_repl_offset %q: %w", info["master_repl_offset"], err)
	}
	role.ReplicationOffset = offset
	return role, nil
}

// observeSentinels asks the pods of every RedisSentinel monitoring this replication where the
// master is: with sentinels, they fail over and the operator follows the address most of them
// report. Sentinels that do not answer leave monitored empty, which the plan treats as "do not
// assume a master".
func (r *RedisReplicationReconciler) observeSentinels(ctx context.Context, s *replicationScope) (bool, error) {
	sentinels, err := listSentinelsOf(ctx, r.Client, s.cr.Namespace, s.cr.Name)
	if err != nil {
		return false, err
	}
	// Each group of sentinels: its StatefulSet, its own password Secret and its master group.
	type group struct {
		name, statefulSet, masterGroup string
		secret                         *v1beta2.ExistingPasswordSecret
	}
	var groups []group
	if sn := s.cr.Spec.Sentinel; sn != nil {
		groups = append(groups, group{"embedded", builder.SentinelStatefulSetName(s.cr.Name), builder.DefaultMasterGroupName, sn.ExistingPasswordSecret})
	}
	for i := range sentinels {
		sn := &sentinels[i]
		groups = append(groups, group{sn.Name, builder.SentinelStatefulSetName(sn.Name), builder.MasterGroupName(sn), sn.Spec.KubernetesConfig.ExistingPasswordSecret})
	}
	if len(groups) == 0 {
		return false, nil
	}
	s.sentinels = true
	votes, answers := map[string]int{}, 0
	for _, g := range groups {
		password, err := readPassword(ctx, r.Client, s.cr.Namespace, g.secret)
		if err != nil {
			log.FromContext(ctx).Info("cannot ask sentinels without their password", "sentinels", g.name, "error", err.Error())
			continue
		}
		pods, err := podsOf(ctx, r.Client, s.cr.Namespace, g.statefulSet)
		if err != nil {
			return false, err
		}
		for j := range pods {
			if pods[j].Status.PodIP == "" || pods[j].Status.Phase != corev1.PodRunning {
				continue
			}
			c, err := r.Redis.Client(podEndpoint(&pods[j], builder.DefaultSentinelPort, redis.Auth{Password: password}))
			if err != nil {
				return false, err
			}
			host, _, known, err := c.SentinelMasterAddr(ctx, g.masterGroup)
			if err != nil || !known {
				continue
			}
			answers++
			votes[host]++
		}
	}
	for host, n := range votes {
		if 2*n > answers {
			s.monitored = host
		}
	}
	return false, nil
}

// client returns the pooled connection to a pod.
func (r *RedisReplicationReconciler) client(s *replicationScope, ip string) (*redis.Client, error) {
	return r.Redis.Client(redis.NewEndpoint(ip, builder.DefaultRedisPort, redis.Auth{Password: s.password}))
}

// reconcileReplication chooses the master and points every other pod at it.
func (r *RedisReplicationReconciler) reconcileReplication(ctx context.Context, s *replicationScope) (bool, error) {
	design := replicationplan.Design{Current: s.cr.Status.MasterNode, Sentinels: s.sentinels, Monitored: s.monitored}
	since, down := r.masterDownSince.Load(s.cr.UID)
	grace := r.MasterPromotionGrace
	if grace == 0 {
		grace = DefaultMasterPromotionGrace
	}
	if down {
		design.MayPromote = time.Since(since.(time.Time)) >= grace
	}
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
		s.cr.Status.MasterNode = s.plan.Master
	}
	for _, step := range s.plan.Steps {
		if err := r.runStep(ctx, s, step); err != nil {
			return false, err
		}
	}
	switch {
	case len(s.plan.Steps) > 0:
		s.cr.Status.State, s.cr.Status.Reason = ReplicationStateInitializing, "configuring replication"
		s.conditions.progressing(ReasonBootstrapping, fmt.Sprintf("running %d step(s): %s", len(s.plan.Steps), s.plan.Steps[0].Reason))
		s.requeue(ctx, afterRedisCommands, "waiting for replicas to connect")
		return true, nil
	case s.plan.MasterDown:
		r.notReady(s, ReasonTopologyProblem, s.plan.Wait)
		wait := whileConverging
		if !down {
			wait = grace // the promotion clock starts now
		}
		s.requeue(ctx, wait, s.plan.Wait)
		return true, nil
	case s.plan.Wait != "":
		r.notReady(s, ReasonConverging, s.plan.Wait)
		s.requeue(ctx, whileConverging, s.plan.Wait)
		return true, nil
	}
	return false, nil
}

func (r *RedisReplicationReconciler) runStep(ctx context.Context, s *replicationScope, step replicationplan.Step) error {
	var target *replicationplan.Member
	for i := range s.members {
		if s.members[i].Pod == step.On {
			target = &s.members[i]
		}
	}
	if target == nil {
		return fmt.Errorf("step %s names unknown pod %s", step.Kind, step.On)
	}
	c, err := r.client(s, target.IP)
	if err != nil {
		return err
	}
	switch step.Kind {
	case replicationplan.StepReplicaOf:
		err = c.ReplicaOf(ctx, step.Host, step.Port)
	case replicationplan.StepPromote:
		err = c.ReplicaOfNoOne(ctx)
	default:
		err = fmt.Errorf("unknown step %s", step.Kind)
	}
	pod := s.podNamed(step.On)
	if err != nil {
		r.Recorder.Eventf(s.cr, pod, corev1.EventTypeWarning, string(step.Kind)+"Failed", string(step.Kind), "%s failed: %v", step, err)
		return fmt.Errorf("%s: %w", step, err)
	}
	log.FromContext(ctx).Info("ran replication step", "step", step.String(), "reason", step.Reason)
	r.Recorder.Eventf(s.cr, pod, corev1.EventTypeNormal, string(step.Kind), string(step.Kind), "%s: %s", step, step.Reason)
	return nil
}

// notReady reports what is missing: a replication that was never Ready is initializing, one
// that was is degraded.
func (r *RedisReplicationReconciler) notReady(s *replicationScope, reason, message string) {
	if s.cr.Status.State == ReplicationStateReady || s.cr.Status.State == ReplicationStateFailed {
		s.cr.Status.State, s.cr.Status.Reason = ReplicationStateFailed, message
		s.conditions.degraded(reason, message)
		return
	}
	s.cr.Status.State, s.cr.Status.Reason = ReplicationStateInitializing, message
	s.conditions.progressing(reason, message)
}

func (s *replicationScope) podNamed(name string) runtime.Object {
	for i := range s.pods {
		if s.pods[i].Name == name {
			return &s.pods[i]
		}
	}
	return nil
}

// labelPodRoles keeps redis-role on what Redis says each pod is, for the -master and -replica
// Services and users' selectors.
func (r *RedisReplicationReconciler) labelPodRoles(ctx context.Context, s *replicationScope) (bool, error) {
	for i := range s.members {
		m := &s.members[i]
		pod, _ := s.podNamed(m.Pod).(*corev1.Pod)
		if m.Role == nil || pod == nil {
			continue
		}
		want := builder.RedisRoleSlave
		if m.Role.Kind == redis.RoleMaster {
			want = builder.RedisRoleMaster
		}
		if err := setPodRoleLabel(ctx, r.Client, pod, want); err != nil {
			return false, err
		}
	}
	return false, nil
}

func (r *RedisReplicationReconciler) applyDynamicConfig(ctx context.Context, s *replicationScope) (bool, error) {
	if s.cr.Spec.RedisConfig == nil || len(s.cr.Spec.RedisConfig.DynamicConfig) == 0 {
		return false, nil
	}
	for _, m := range s.members {
		if m.Role == nil {
			continue
		}
		c, err := r.client(s, m.IP)
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
	answering := 0
	for _, m := range s.members {
		if m.Role != nil {
			answering++
		}
	}
	if s.cr.Status.ReadyReplicas < size || int32(answering) < size {
		r.notReady(s, ReasonPodsNotReady, fmt.Sprintf("%d of %d pods ready, %d answer", s.cr.Status.ReadyReplicas, size, answering))
		return true, nil // pod events bring us back
	}
	master, ok := s.podNamed(s.plan.Master).(*corev1.Pod)
	if !ok {
		r.notReady(s, ReasonConverging, "no master chosen yet")
		return true, nil
	}
	if sn := s.cr.Spec.Sentinel; sn != nil {
		// Embedded sentinels are part of the replication: Ready needs them to monitor this master.
		sentinelPods, err := podsOf(ctx, r.Client, s.cr.Namespace, builder.SentinelStatefulSetName(s.cr.Name))
		if err != nil {
			return false, err
		}
		if ready := countReady(sentinelPods); ready < sn.Size || s.monitored != master.Status.PodIP {
			wait := fmt.Sprintf("%d of %d sentinels ready; they report the master at %q, it is at %s", ready, sn.Size, s.monitored, master.Status.PodIP)
			r.notReady(s, ReasonConverging, wait)
			s.requeue(ctx, time.Second, wait) // sentinel pods are not watched by this controller
			return true, nil
		}
	}
	s.cr.Status.ConnectionInfo = &v1beta2.ConnectionInfo{Host: master.Status.PodIP, Port: builder.DefaultRedisPort}
	if s.cr.Status.State != ReplicationStateReady {
		r.Recorder.Eventf(s.cr, master, corev1.EventTypeNormal, "ReplicationReady", "Observe", "master %s with %d replicas in sync", s.plan.Master, size-1)
	}
	s.cr.Status.State, s.cr.Status.Reason = ReplicationStateReady, "RedisReplication is ready"
	s.conditions.ready(fmt.Sprintf("master %s, %d replicas with their link up", s.plan.Master, size-1))
	if s.sentinels {
		// Sentinels move the master without any Kubernetes event (a hung master, a partition):
		// the -master Service label must follow within seconds, not at the next health check.
		s.requeue(ctx, sentinelWatchInterval, "sentinels may fail over without any Kubernetes event")
	} else {
		s.requeue(ctx, healthCheckInterval, "periodic health check: Redis failures need not change any pod")
	}
	return false, nil
}
