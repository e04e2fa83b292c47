package controller

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/reconcile"
	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/redis/replicationplan"
	"github.com/rediskube/redis-operator/internal/status"
)

// Compatible status strings of a RedisSentinel.
const (
	SentinelStateInitializing = "Initializing"
	SentinelStateReady        = "Ready"
	SentinelStateFailed       = "Failed"
)

// ReasonNoMasterToMonitor: the sentinels run, but the spec names no RedisReplication whose
// master they should monitor.
const ReasonNoMasterToMonitor = "NoMasterToMonitor"

// SkipReconcileSentinelAnnotation stops all action on a RedisSentinel while "true".
const SkipReconcileSentinelAnnotation = builder.AnnotationSkipReconcileSentinel

// RedisSentinelReconciler runs the sentinels of a RedisSentinel, monitoring the master of the
// RedisReplication it names (or nothing while it names none). The sentinels fail the master
// over; the RedisReplication controller follows their choice.
type RedisSentinelReconciler struct {
	// Dependencies are the clients and memory every kind's reconciler shares.
	Dependencies
	// StuckAfter overrides DefaultStuckAfter, the bound of every wait (tests shorten it).
	StuckAfter time.Duration
	// DNSDomain is the cluster's DNS domain, the end of the pod names sentinels that name
	// hosts monitor the master by; "" is DefaultDNSDomain.
	DNSDomain string
}

// boundedWait reports a wait as not ready until it has lasted StuckAfter, then as stuck, and
// comes back at the bound to say so: nothing else may.
func (r *RedisSentinelReconciler) boundedWait(ctx context.Context, s *sentinelScope, key, reason, message string) {
	bound := cmp.Or(r.StuckAfter, DefaultStuckAfter)
	boundedWait(r.Recorder, s.memory, s.cr, s.Conditions, key, bound, message, func(m string) { s.notReady(reason, m) })
	s.Requeue(ctx, bound, "a wait that lasts past its bound is reported as stuck")
}

// endpoint is how to reach the sentinel of the pod: its port, password and TLS.
func (s *sentinelScope) endpoint(pod *corev1.Pod) redis.Endpoint {
	return s.endpointOf(pod.Status.PodIP)
}

type sentinelScope struct {
	workloadScope
	cr             *v1beta2.RedisSentinel
	masterPassword string
	// masterHost is the address the sentinels should monitor the master by: its pod IP, or
	// its DNS name when they name hosts (namesHosts).
	masterHost string
	namesHosts bool
	pods       []corev1.Pod
}

func (r *RedisSentinelReconciler) phases() []reconcile.Phase[*sentinelScope] {
	return []reconcile.Phase[*sentinelScope]{
		sharedPhase[*sentinelScope]("deletion", r.finalizeIfDeleted),
		sharedPhase[*sentinelScope]("skip-reconcile", r.skipIfAnnotated),
		sharedPhase[*sentinelScope]("finalizer", r.ensureFinalizer),
		sharedPhase[*sentinelScope]("password", r.resolvePassword),
		sharedPhase[*sentinelScope]("tls", r.resolveTLS),
		{Name: "monitored-master", Run: r.resolveMaster},
		{Name: "build", Run: r.buildObjects},
		sharedPhase[*sentinelScope]("objects", r.applyObjects),
		{Name: "pods", Run: r.observePods},
		{Name: "tls-roll", Run: r.rollForTLS},
		{Name: "health", Run: r.checkHealth},
	}
}

// Reconcile runs the phases in order and writes the status once, when it changed.
func (r *RedisSentinelReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return kindShell[*v1beta2.RedisSentinel, *sentinelScope]{
		newObject: func() *v1beta2.RedisSentinel { return &v1beta2.RedisSentinel{} },
		newScope: func(cr *v1beta2.RedisSentinel, b workloadScope) *sentinelScope {
			// Sentinels keep no data (no storage) and take no ACL file.
			b.spec = workloadSpec{owner: cr, kind: "RedisSentinel", skipAnnotation: SkipReconcileSentinelAnnotation, skipWhat: "RedisSentinel",
				passwordSecret: cr.Spec.KubernetesConfig.ExistingPasswordSecret, tls: cr.Spec.TLS, port: builder.DefaultSentinelPort}
			return &sentinelScope{workloadScope: b, cr: cr}
		},
		phases:   r.phases(),
		liveness: r.Liveness,
		memory:   r.Memory,
	}.reconcile(ctx, r.Client, req)
}

// notReady reports what is missing: sentinels that were never Ready are initializing, ones
// that were are degraded.
func (s *sentinelScope) notReady(reason, message string) {
	if s.Conditions.HasServed() {
		s.Conditions.Degraded(reason, message)
		return
	}
	s.Conditions.Progressing(reason, message)
}

// resolveMaster finds the address of the monitored RedisReplication's master and the password
// the sentinels need for it. Both wait for the user or the replication: its watch brings us back.
// A spec that names no replication leaves both empty: its sentinels start monitoring nothing.
func (r *RedisSentinelReconciler) resolveMaster(ctx context.Context, s *sentinelScope) (bool, error) {
	if !builder.SentinelMonitors(s.cr) {
		return false, nil
	}
	cfg := s.cr.Spec.RedisSentinelConfig
	if ref := cfg.RedisReplicationPassword; ref != nil {
		if ref.SecretKeyRef == nil {
			r.invalidSpec(s, "redisSentinelConfig.redisReplicationPassword must be a secretKeyRef")
			return true, nil
		}
		name, key := ref.SecretKeyRef.Name, ref.SecretKeyRef.Key
		password, stop, err := resolvePasswordOf(ctx, r.Client, r.Recorder, s.cr, &v1beta2.ExistingPasswordSecret{Name: &name, Key: &key}, s.Conditions)
		if stop || err != nil {
			return stop, err
		}
		s.masterPassword = password
	}
	var replication v1beta2.RedisReplication
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.cr.Namespace, Name: cfg.RedisReplicationName}, &replication)
	if apierrors.IsNotFound(err) {
		r.boundedWait(ctx, s, "replication", status.ReasonMasterUnknown, fmt.Sprintf("RedisReplication %s does not exist", cfg.RedisReplicationName))
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("get RedisReplication %s: %w", cfg.RedisReplicationName, err)
	}
	masterPod := replication.Status.MasterNode
	if masterPod != "" {
		var pod corev1.Pod
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.cr.Namespace, Name: masterPod}, &pod); client.IgnoreNotFound(err) != nil {
			return false, fmt.Errorf("get master pod %s: %w", masterPod, err)
		}
		s.namesHosts = builder.RedisSentinelNamesHosts(s.cr) && builder.ReplicationPodsResolve(&replication)
		switch {
		case pod.Status.PodIP == "":
			// No address yet: the pod is being replaced.
		case s.namesHosts:
			s.masterHost = builder.ReplicationPodFQDN(pod.Name, replication.Name, s.cr.Namespace, r.DNSDomain)
		default:
			s.masterHost = pod.Status.PodIP
		}
	}
	if s.masterHost == "" {
		r.boundedWait(ctx, s, "master", status.ReasonMasterUnknown, fmt.Sprintf("waiting for RedisReplication %s to have a master with an address", cfg.RedisReplicationName))
		return true, nil
	}
	return false, nil
}

// invalidSpec reports a spec the user must change, in the status and as an event.
func (r *RedisSentinelReconciler) invalidSpec(s *sentinelScope, message string) {
	s.Conditions.Degraded(status.ReasonInvalidSpec, message)
	r.Recorder.Eventf(s.cr, nil, corev1.EventTypeWarning, status.ReasonInvalidSpec, "Validate", "%s", message)
}

func (r *RedisSentinelReconciler) buildObjects(_ context.Context, s *sentinelScope) (bool, error) {
	s.objects, s.buildErr = builder.BuildRedisSentinel(builder.RedisSentinelInput{CR: s.cr, Password: s.password,
		MasterPassword: s.masterPassword, MasterHost: s.masterHost})
	if s.buildErr == nil {
		reportQuorum(r.Recorder, s.memory.warned, s.cr, builder.RedisSentinelQuorum(s.cr), builder.SentinelMonitors(s.cr), s.Conditions)
	}
	return false, nil
}

func (r *RedisSentinelReconciler) observePods(ctx context.Context, s *sentinelScope) (bool, error) {
	pods, err := podsOf(ctx, r.Client, s.cr.Namespace, builder.SentinelStatefulSetName(s.cr.Name))
	if err != nil {
		return false, err
	}
	s.pods = pods
	watchLiveness(r.Liveness, s.cr, pods, func(pod *corev1.Pod) redis.Endpoint { return s.endpoint(pod) })
	s.cr.Status.ReadyReplicas = countReady(pods)
	if want := builder.SentinelReplicas(s.cr); s.cr.Status.ReadyReplicas < want {
		s.notReady(status.ReasonPodsNotReady, fmt.Sprintf("%d of %d sentinel pods ready", s.cr.Status.ReadyReplicas, want))
		r.reportPodTrouble(ctx, s.cr, s.Conditions, pods, s.Requeuer(ctx))
		return true, nil // pod events bring us back
	}
	return false, nil
}

// rollForTLS restarts, one at a time and keeping quorum, the sentinel pods that do not run with
// the TLS Secret's current content: sentinels cannot reload TLS files in place.
func (r *RedisSentinelReconciler) rollForTLS(ctx context.Context, s *sentinelScope) (bool, error) {
	group := ""
	if builder.SentinelMonitors(s.cr) {
		group = builder.MasterGroupName(s.cr)
	}
	set := sentinelSet{statefulSet: builder.SentinelStatefulSetName(s.cr.Name), pods: s.pods, replicas: builder.SentinelReplicas(s.cr), group: group, auth: redis.Auth{Password: s.password}}
	return sentinelTLSRoll{&r.Dependencies}.roll(ctx, s.cr, s.tls, set, s.Requeuer(ctx))
}

// checkHealth is Ready when every sentinel monitors the replication's current master and the
// sentinels together can authorize a failover (SENTINEL CKQUORUM).
func (r *RedisSentinelReconciler) checkHealth(ctx context.Context, s *sentinelScope) (bool, error) {
	if !builder.SentinelMonitors(s.cr) {
		return r.checkIdle(ctx, s)
	}
	group := builder.MasterGroupName(s.cr)
	replication := s.cr.Spec.RedisSentinelConfig.RedisReplicationName
	monitored, err := podsOf(ctx, r.Client, s.cr.Namespace, replication)
	if err != nil {
		return false, err
	}
	hosts := newPodHosts(monitored, replication, s.cr.Namespace, r.DNSDomain, s.namesHosts)
	views := make([]replicationplan.SentinelView, 0, len(s.pods))
	var first quorumChecker
	for i := range s.pods {
		pod := &s.pods[i]
		c, err := r.redisNode(s.endpoint(pod))
		if err != nil {
			return false, err
		}
		view, err := r.sentinelView(ctx, s, c, pod, group, hosts.canonical)
		if err != nil {
			r.boundedWait(ctx, s, "unreachable", status.ReasonRedisUnreachable, fmt.Sprintf("sentinel pod %s does not answer: %v", pod.Name, err))
			s.Requeue(ctx, whileConverging, "a sentinel does not answer")
			return true, nil
		}
		views = append(views, view)
		if i == 0 {
			first = c
		}
	}
	reseed, err := sentinelReseed{c: r.Client, rec: r.Recorder, waits: s.memory.waits}.restart(ctx, s.cr, views, s.pods, monitored, s.masterHost)
	if err != nil || reseed.restarted {
		s.Requeue(ctx, whileConverging, "a blind sentinel's pod starts again from the seed")
		return true, err
	}
	for _, v := range views {
		if v.Master != s.masterHost {
			message := fmt.Sprintf("sentinel %s monitors %q, the master is at %s", v.Pod, v.Master, s.masterHost)
			if v.Pod == reseed.blind {
				message += "; it cannot learn the master: " + reseed.held
			}
			r.boundedWait(ctx, s, "monitor", status.ReasonConverging, message)
			s.Requeue(ctx, whileConverging, "sentinels and the replication disagree on the master while a failover completes")
			return true, nil
		}
	}
	var quorumErr error
	if first != nil {
		quorumErr = first.SentinelCkQuorum(ctx, group)
	}
	if quorumErr != nil {
		if !redis.IsServerError(quorumErr) {
			return false, quorumErr
		}
		// Sentinels find each other through the master within seconds of starting.
		r.boundedWait(ctx, s, "quorum", status.ReasonConverging, fmt.Sprintf("sentinels cannot authorize a failover yet: %v", quorumErr))
		s.Requeue(ctx, whileBroken, "waiting for the sentinels to discover each other")
		return true, nil
	}
	if s.cr.Status.State != SentinelStateReady && s.Conditions.FirstReady() {
		r.Recorder.Eventf(s.cr, nil, corev1.EventTypeNormal, "SentinelsReady", "Observe", "%d sentinels monitor %s at %s with quorum", len(s.pods), group, s.masterHost)
	}
	s.Conditions.Ready(fmt.Sprintf("%d sentinels monitor %s at %s and can authorize a failover", len(s.pods), group, s.masterHost))
	s.memory.waitsOver(s.cr.UID)
	s.Requeue(ctx, healthCheckInterval, "periodic health check: sentinels change the master without any Kubernetes event")
	log.FromContext(ctx).V(1).Info("sentinels ready", "group", group, "master", s.masterHost)
	return false, nil
}

// sentinelView asks one sentinel what it sees of group (sentinelViewOf), within the liveness
// watcher's read deadline.
func (r *RedisSentinelReconciler) sentinelView(ctx context.Context, s *sentinelScope, c sentinelWatcher, pod *corev1.Pod, group string,
	canonical func(string) string) (replicationplan.SentinelView, error) {
	readCtx, cancel := r.Liveness.ReadContext(ctx, livenessOwner(s.cr), pod.Name)
	defer cancel()
	return sentinelViewOf(readCtx, c, pod.Name, group, s.masterHost, canonical)
}

// checkIdle reports sentinels that monitor nothing because the spec names no RedisReplication:
// healthy when each answers PING, yet not Ready (they could fail nothing over) and not
// progressing (only the user can give them a master), with what to set.
func (r *RedisSentinelReconciler) checkIdle(ctx context.Context, s *sentinelScope) (bool, error) {
	for i := range s.pods {
		pod := &s.pods[i]
		c, err := r.redisNode(s.endpoint(pod))
		if err != nil {
			return false, err
		}
		readCtx, cancel := r.Liveness.ReadContext(ctx, livenessOwner(s.cr), pod.Name)
		err = c.Ping(readCtx)
		cancel()
		if err != nil {
			r.boundedWait(ctx, s, "unreachable", status.ReasonRedisUnreachable, fmt.Sprintf("sentinel pod %s does not answer: %v", pod.Name, err))
			s.Requeue(ctx, whileConverging, "a sentinel does not answer")
			return true, nil
		}
	}
	message := fmt.Sprintf("%d sentinels run and answer, monitoring no master: set spec.redisSentinelConfig.redisReplicationName "+
		"to the RedisReplication (in this namespace) whose master they should monitor, with redisReplicationPassword if it has a password",
		len(s.pods))
	if ready := meta.FindStatusCondition(s.cr.Status.Conditions, v1beta2.ConditionReady); ready == nil || ready.Reason != ReasonNoMasterToMonitor {
		r.Recorder.Eventf(s.cr, nil, corev1.EventTypeNormal, ReasonNoMasterToMonitor, "Observe", "%s", message)
	}
	s.Conditions.Idle(ReasonNoMasterToMonitor, message)
	s.Requeue(ctx, healthCheckInterval, "periodic health check of sentinels that monitor nothing")
	return false, nil
}

// SetupWithManager registers the RedisSentinel controller; a change of the monitored
// RedisReplication (its master) reaches the sentinels that monitor it.
func (r *RedisSentinelReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := requireShared(r.Memory, r.Applier, "RedisSentinelReconciler"); err != nil {
		return err
	}
	b, err := watchKind(mgr, r.SecretWatch, r.Liveness, "redissentinel", &v1beta2.RedisSentinel{}, &v1beta2.RedisSentinelList{}, builder.SetupSentinel,
		func(obj client.Object) []string {
			spec := obj.(*v1beta2.RedisSentinel).Spec
			names := secretNames(spec.KubernetesConfig.ExistingPasswordSecret, spec.TLS, nil)
			// The monitored Redis' password: a rotation reaches the auth Secret new sentinel pods start from.
			if cfg := spec.RedisSentinelConfig; cfg != nil && cfg.RedisReplicationPassword != nil {
				if ref := cfg.RedisReplicationPassword.SecretKeyRef; ref != nil && ref.Name != "" && !slices.Contains(names, ref.Name) {
					names = append(names, ref.Name)
				}
			}
			return names
		})
	if err != nil {
		return err
	}
	return b.Watches(&v1beta2.RedisReplication{}, handler.EnqueueRequestsFromMapFunc(
		func(ctx context.Context, obj client.Object) []ctrl.Request {
			return sentinelsMonitoring(ctx, mgr.GetClient(), obj.GetNamespace(), obj.GetName())
		})).Complete(r)
}

// sentinelsMonitoring lists the RedisSentinels that monitor a RedisReplication, as requests.
func sentinelsMonitoring(ctx context.Context, c client.Client, namespace, replication string) []ctrl.Request {
	sentinels, err := listSentinelsOf(ctx, c, namespace, replication)
	if err != nil {
		log.FromContext(ctx).Error(err, "list RedisSentinels", "replication", replication)
		return nil
	}
	out := make([]ctrl.Request, 0, len(sentinels))
	for i := range sentinels {
		out = append(out, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&sentinels[i])})
	}
	return out
}

// listSentinelsOf returns the RedisSentinels that monitor a RedisReplication. A namespace holds
// few of them, and the list comes from the cache.
func listSentinelsOf(ctx context.Context, c client.Client, namespace, replication string) ([]v1beta2.RedisSentinel, error) {
	var list v1beta2.RedisSentinelList
	if err := c.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("list RedisSentinels: %w", err)
	}
	var out []v1beta2.RedisSentinel
	for _, item := range list.Items {
		if cfg := item.Spec.RedisSentinelConfig; cfg != nil && cfg.RedisReplicationName == replication && item.DeletionTimestamp == nil {
			out = append(out, item)
		}
	}
	return out, nil
}
