package controller

import (
	"cmp"
	"context"
	"crypto/tls"
	"fmt"
	"maps"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/redis/replicationplan"
)

// ReasonSentinelMigration: the embedded sentinels of an earlier version are being replaced by
// the ones this version names (<name>-s, group mymaster).
const ReasonSentinelMigration = "SentinelMigration"

// sentinelGroup is one set of sentinels that watches a replication: its StatefulSet, its own
// password Secret and the master group it monitors.
type sentinelGroup struct {
	name, statefulSet, masterGroup string
	secret                         *v1beta2.ExistingPasswordSecret
	tls                            *v1beta2.TLSConfig
	embedded                       bool
}

// sentinelGroupsOf lists every set of sentinels watching the replication: the embedded ones,
// those of an earlier version being retired, and each RedisSentinel naming it.
func sentinelGroupsOf(cr *v1beta2.RedisReplication, legacy bool, sentinels []v1beta2.RedisSentinel) []sentinelGroup {
	var groups []sentinelGroup
	if sn := cr.Spec.Sentinel; sn != nil {
		groups = append(groups, sentinelGroup{"embedded", builder.EmbeddedSentinelStatefulSetName(cr.Name),
			builder.EmbeddedMasterGroupName, sn.ExistingPasswordSecret, cr.Spec.TLS, true})
		if legacy {
			groups = append(groups, sentinelGroup{"embedded (earlier version)", builder.LegacyEmbeddedSentinelStatefulSetName(cr.Name),
				builder.LegacyEmbeddedMasterGroupName, sn.ExistingPasswordSecret, cr.Spec.TLS, false})
		}
	}
	for i := range sentinels {
		sn := &sentinels[i]
		groups = append(groups, sentinelGroup{sn.Name, builder.SentinelStatefulSetName(sn.Name), builder.MasterGroupName(sn),
			sn.Spec.KubernetesConfig.ExistingPasswordSecret, sn.Spec.TLS, false})
	}
	return groups
}

// observeSentinels asks the pods of every set of sentinels monitoring this replication where
// the master is: with sentinels, they fail over and the operator follows the address more
// than half of the answers report (replicationplan.AgreedMaster). Sentinels that do not
// answer leave monitored empty, which the plan treats as "do not assume a master".
func (r *RedisReplicationReconciler) observeSentinels(ctx context.Context, s *replicationScope) (bool, error) {
	sentinels, err := listSentinelsOf(ctx, r.Client, s.cr.Namespace, s.cr.Name)
	if err != nil {
		return false, err
	}
	groups := sentinelGroupsOf(s.cr, s.legacySentinels, sentinels)
	if len(groups) == 0 {
		return false, nil
	}
	s.sentinels = true
	var reports []string // one per sentinel pod asked: the master host it reports, "" for none
	for _, g := range groups {
		password, err := readPassword(ctx, r.Client, s.cr.Namespace, g.secret)
		if err != nil {
			log.FromContext(ctx).Info("cannot ask sentinels without their password", "sentinels", g.name, "error", err.Error())
			continue
		}
		tlsSettings, err := readTLS(ctx, r.Client, s.memory.tls, r.Redis, s.cr.Namespace, g.tls)
		if err != nil {
			log.FromContext(ctx).Info("cannot ask sentinels without their TLS settings", "sentinels", g.name, "error", err.Error())
			continue
		}
		answers, err := r.askSentinels(ctx, s.cr, g, password, tlsSettings.clientConfig())
		if err != nil {
			return false, err
		}
		asked := answers.reports
		if g.embedded {
			s.silentSentinels = answers.silent
			if s.watched == nil {
				s.watched = map[string]redis.Endpoint{}
			}
			maps.Copy(s.watched, answers.endpoints)
		}
		stuck, err := sentinelUnstick{rec: r.Recorder, waits: s.memory.waits}.unstick(ctx, s.cr, g.masterGroup, answers.peers)
		if err != nil {
			return false, err
		}
		if stuck != "" {
			s.stuckSentinels = stuck
		}
		// A sentinel naming the master by DNS name names the pod's IP for the planner.
		for i := range asked {
			asked[i] = s.hosts.ip(asked[i])
		}
		reports = append(reports, asked...)
		if g.embedded {
			s.embeddedReports = asked
		}
	}
	if s.cr.Spec.Sentinel != nil {
		// The replication's pods with its sentinels' (observePods leaves them to this phase).
		r.Liveness.Watch(livenessOwner(s.cr), s.watched)
	}
	s.monitored = replicationplan.AgreedMaster(reports)
	s.vote.host, s.vote.agreeing, s.vote.answering = replicationplan.SentinelVote(reports)
	s.vote.asked = len(reports)
	return false, nil
}

// rollSentinelsForTLS restarts, one at a time and keeping quorum, the embedded sentinel pods that
// do not run with the TLS Secret's current content: sentinels cannot reload TLS files in place.
// (A RedisSentinel's own controller rolls its pods.)
func (r *RedisReplicationReconciler) rollSentinelsForTLS(ctx context.Context, s *replicationScope) (bool, error) {
	sn := s.cr.Spec.Sentinel
	if sn == nil || s.tls == nil {
		return false, nil
	}
	password, err := readPassword(ctx, r.Client, s.cr.Namespace, sn.ExistingPasswordSecret)
	if err != nil {
		// As when asking them where the master is: the replication goes on without them.
		log.FromContext(ctx).Info("cannot restart sentinels for TLS without their password", "error", err.Error())
		return false, nil
	}
	sts := builder.EmbeddedSentinelStatefulSetName(s.cr.Name)
	pods, err := podsOf(ctx, r.Client, s.cr.Namespace, sts)
	if err != nil {
		return false, err
	}
	set := sentinelSet{statefulSet: sts, pods: pods, replicas: sn.Size, group: builder.EmbeddedMasterGroupName, auth: redis.Auth{Password: password}}
	return sentinelTLSRoll{&r.Dependencies}.roll(ctx, s.cr, s.tls, set, s.Requeuer(ctx))
}

// reseedEmbeddedSentinel asks each embedded sentinel what it sees of the master group and
// restarts the one that can no longer learn the master (sentinelReseed, the rule RedisSentinels
// follow too). The embedded sentinels run in StatefulSet <name>-s, apart from the Redis pods:
// deleting one of their pods restarts a sentinel only, never the master or a replica. It
// returns what holds the replication back, "" when no embedded sentinel is blind. A sentinel
// that does not answer counts as not following the master, which only makes a restart rarer.
func (r *RedisReplicationReconciler) reseedEmbeddedSentinel(ctx context.Context, s *replicationScope, pods []corev1.Pod, masterHost string) (string, error) {
	password, err := readPassword(ctx, r.Client, s.cr.Namespace, s.cr.Spec.Sentinel.ExistingPasswordSecret)
	if err != nil {
		// As when asking them where the master is: the replication goes on without them.
		log.FromContext(ctx).Info("cannot check the sentinels' view without their password", "error", err.Error())
		return "", nil
	}
	group := builder.EmbeddedMasterGroupName
	views := make([]replicationplan.SentinelView, 0, len(pods))
	for i := range pods {
		view := replicationplan.SentinelView{Pod: pods[i].Name}
		if ip := pods[i].Status.PodIP; ip != "" && pods[i].Status.Phase == corev1.PodRunning {
			c, err := r.dial(ip, builder.DefaultSentinelPort, redis.Auth{Password: password}, s.tls.clientConfig())
			if err != nil {
				return "", err
			}
			if view, err = sentinelViewOf(ctx, c, pods[i].Name, group, masterHost, s.embeddedHosts().canonical); err != nil {
				log.FromContext(ctx).V(1).Info("an embedded sentinel does not say what it sees", "pod", pods[i].Name, "error", err.Error())
				view = replicationplan.SentinelView{Pod: pods[i].Name}
			}
		}
		views = append(views, view)
	}
	reseed, err := sentinelReseed{c: r.Client, rec: r.Recorder, waits: s.memory.waits}.restart(ctx, s.cr, views, pods, s.pods, masterHost)
	if err != nil || reseed.blind == "" {
		return "", err
	}
	if reseed.restarted {
		return fmt.Sprintf("sentinel %s could not learn where the master is: its pod starts again from the seed", reseed.blind), nil
	}
	return fmt.Sprintf("sentinel %s cannot learn where the master is (at %s): %s", reseed.blind, masterHost, reseed.held), nil
}

// watchingSentinels lists, for a password rotation, every set of sentinels watching the
// replication with their pods and what it takes to ask them.
func (r *RedisReplicationReconciler) watchingSentinels(ctx context.Context, s *replicationScope) ([]watchingSentinels, error) {
	sentinels, err := listSentinelsOf(ctx, r.Client, s.cr.Namespace, s.cr.Name)
	if err != nil {
		return nil, err
	}
	legacy := false
	if s.cr.Spec.Sentinel != nil {
		if legacy, err = r.hasLegacySentinels(ctx, s); err != nil {
			return nil, err
		}
	}
	var out []watchingSentinels
	for _, g := range sentinelGroupsOf(s.cr, legacy, sentinels) {
		password, err := readPassword(ctx, r.Client, s.cr.Namespace, g.secret)
		if err != nil {
			return nil, fmt.Errorf("the password of sentinels %s: %w", g.name, err)
		}
		tlsSettings, err := readTLS(ctx, r.Client, s.memory.tls, r.Redis, s.cr.Namespace, g.tls)
		if err != nil {
			return nil, fmt.Errorf("the TLS settings of sentinels %s: %w", g.name, err)
		}
		pods, err := podsOf(ctx, r.Client, s.cr.Namespace, g.statefulSet)
		if err != nil {
			return nil, err
		}
		out = append(out, watchingSentinels{name: g.name, masterGroup: g.masterGroup, pods: pods, password: password, tls: tlsSettings.clientConfig()})
	}
	return out, nil
}

// sentinelAnswers is what the running pods of one set of sentinels said: the master host each
// reports ("" for none), a client of each that answered, the pods that did not answer, and
// each pod's endpoint (the liveness watcher's, for embedded sentinels).
type sentinelAnswers struct {
	reports   []string
	peers     []sentinelPeer
	silent    []string
	endpoints map[string]redis.Endpoint
}

// askSentinels asks each running pod of one set of sentinels where the master is. A read of
// a pod is bounded as the replication's own pods' are (the liveness watcher's read context),
// so that a frozen sentinel holds the reconcile a second, not a command timeout.
func (r *RedisReplicationReconciler) askSentinels(ctx context.Context, owner client.Object, g sentinelGroup, password string,
	tlsConfig *tls.Config) (sentinelAnswers, error) {
	out := sentinelAnswers{endpoints: map[string]redis.Endpoint{}}
	pods, err := podsOf(ctx, r.Client, owner.GetNamespace(), g.statefulSet)
	if err != nil {
		return out, err
	}
	for j := range pods {
		pod := &pods[j]
		if pod.Status.PodIP == "" || pod.Status.Phase != corev1.PodRunning {
			continue
		}
		ep := redis.NewEndpoint(pod.Status.PodIP, builder.DefaultSentinelPort, redis.Auth{Password: password}).WithTLS(tlsConfig)
		if pod.DeletionTimestamp == nil {
			out.endpoints[pod.Name] = ep
		}
		c, err := r.redisNode(ep)
		if err != nil {
			return out, err
		}
		readCtx, cancel := r.Liveness.ReadContext(ctx, livenessOwner(owner), pod.Name)
		host, _, known, err := c.SentinelMasterAddr(readCtx, g.masterGroup)
		cancel()
		switch {
		case err != nil:
			log.FromContext(ctx).V(1).Info("a sentinel does not answer", "pod", pod.Name, "error", err.Error())
			host = ""
			if pod.DeletionTimestamp == nil {
				out.silent = append(out.silent, pod.Name)
			}
		case !known:
			host = ""
			out.peers = append(out.peers, sentinelPeer{pod: pod.Name, client: c})
		default:
			out.peers = append(out.peers, sentinelPeer{pod: pod.Name, client: c})
		}
		out.reports = append(out.reports, host)
	}
	return out, nil
}

// hasLegacySentinels tells whether the embedded sentinels of an earlier version still run: a
// StatefulSet <name>-sentinel this replication controls, not being deleted.
func (r *RedisReplicationReconciler) hasLegacySentinels(ctx context.Context, s *replicationScope) (bool, error) {
	sts, err := r.legacySentinelStatefulSet(ctx, s)
	return sts != nil, err
}

func (r *RedisReplicationReconciler) legacySentinelStatefulSet(ctx context.Context, s *replicationScope) (*appsv1.StatefulSet, error) {
	var sts appsv1.StatefulSet
	key := client.ObjectKey{Namespace: s.cr.Namespace, Name: builder.LegacyEmbeddedSentinelStatefulSetName(s.cr.Name)}
	if err := r.Client.Get(ctx, key, &sts); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if !metav1.IsControlledBy(&sts, s.cr) || sts.DeletionTimestamp != nil || sts.Labels[builder.LabelSetupType] != builder.SetupSentinel {
		return nil, nil
	}
	return &sts, nil
}

// retireLegacySentinels replaces the embedded sentinels of an earlier version: their
// StatefulSet is deleted only once every sentinel of this version is ready and reports the
// master the replication has, so the master is watched throughout and no failover is left
// to a group about to disappear. Their other objects are pruned after it.
func (r *RedisReplicationReconciler) retireLegacySentinels(ctx context.Context, s *replicationScope) (bool, error) {
	if !s.legacySentinels {
		return false, nil
	}
	newName := builder.EmbeddedSentinelStatefulSetName(s.cr.Name)
	pods, err := podsOf(ctx, r.Client, s.cr.Namespace, newName)
	if err != nil {
		return false, err
	}
	master, _ := s.podNamed(s.plan.Master).(*corev1.Pod)
	masterIP := ""
	if master != nil {
		masterIP = master.Status.PodIP
	}
	size := s.cr.Spec.Sentinel.Size
	if why := sentinelsNotYetWatching(countReady(pods), size, s.embeddedReports, masterIP); why != "" {
		msg := fmt.Sprintf("replacing the sentinels %s of an earlier version by %s: %s", builder.LegacyEmbeddedSentinelStatefulSetName(s.cr.Name), newName, why)
		s.Conditions.Progressing(ReasonSentinelMigration, msg)
		s.Requeue(ctx, 2*time.Second, msg) // sentinel pods are not watched by this controller
		return true, nil
	}
	legacy, err := r.legacySentinelStatefulSet(ctx, s)
	if err != nil || legacy == nil {
		return false, err
	}
	if err := r.Client.Delete(ctx, legacy, client.Preconditions{UID: &legacy.UID}, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
		return false, fmt.Errorf("delete the sentinels of an earlier version %s: %w", legacy.Name, err)
	}
	r.Recorder.Eventf(s.cr, legacy, corev1.EventTypeNormal, "SentinelsReplaced", "Delete",
		"%d sentinels %s (group %s) monitor master %s at %s; deleted %s, the sentinels of an earlier version",
		size, newName, builder.EmbeddedMasterGroupName, s.plan.Master, masterIP, legacy.Name)
	s.legacySentinels = false
	return false, nil
}

// sentinelsNotYetWatching says why the new sentinels cannot take over yet, "" when they can:
// all of them ready, and every one asked reporting the master at masterIP.
func sentinelsNotYetWatching(ready, size int32, reports []string, masterIP string) string {
	agreeing := 0
	for _, host := range reports {
		if host != "" && host == masterIP {
			agreeing++
		}
	}
	switch {
	case masterIP == "":
		return "no master known yet"
	case ready < size || int32(agreeing) < size:
		return fmt.Sprintf("%d of %d ready, %d report the master at %s", ready, size, agreeing, masterIP)
	}
	return ""
}

// connectionInfo tells clients where to connect: with embedded sentinels, to the sentinels'
// headless Service and master group (clients follow failovers through them); otherwise to the
// -master Service, whose selector follows the master's redis-role label, so the name stays
// right across failovers (a pod IP would not). Both are the Services' names in the cluster DNS
// domain (DNSDomain), as the replaced operator writes them.
func connectionInfo(cr *v1beta2.RedisReplication, domain string) *v1beta2.ConnectionInfo {
	if cr.Spec.Sentinel != nil {
		return &v1beta2.ConnectionInfo{
			Host:       serviceHost(builder.EmbeddedSentinelHeadlessServiceName(cr.Name), cr.Namespace, domain),
			Port:       builder.DefaultSentinelPort,
			MasterName: builder.EmbeddedMasterGroupName,
		}
	}
	return &v1beta2.ConnectionInfo{Host: serviceHost(builder.MasterServiceName(cr.Name), cr.Namespace, domain), Port: builder.DefaultRedisPort}
}

// DefaultDNSDomain is the cluster DNS domain when none is configured (SERVICE_DNS_DOMAIN).
const DefaultDNSDomain = "cluster.local"

// serviceHost is a Service's DNS name in the cluster domain ("" for DefaultDNSDomain).
func serviceHost(service, namespace, domain string) string {
	return service + "." + namespace + ".svc." + cmp.Or(domain, DefaultDNSDomain)
}

// sentinelSeed is the master address new embedded sentinel pods start monitoring: the current
// master's pod IP (its DNS name when they name hosts, embeddedSeedHost), or, while that pod has none (it is being replaced), the address the sentinels
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
			return r.embeddedSeedHost(s, &pod), nil
		}
	}
	// The seed of this version's sentinels, else that of an earlier version's.
	for _, sts := range []string{builder.EmbeddedSentinelStatefulSetName(s.cr.Name), builder.LegacyEmbeddedSentinelStatefulSetName(s.cr.Name)} {
		var cm corev1.ConfigMap
		name := builder.ConfigMapName(sts)
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.cr.Namespace, Name: name}, &cm)
		if client.IgnoreNotFound(err) != nil {
			return "", fmt.Errorf("read the sentinel seed %s: %w", name, err)
		}
		if seed := seededMaster(cm.Data[builder.SentinelConfKey]); seed != "" {
			return seed, nil
		}
	}
	return "", nil
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

// embeddedNamesHosts tells whether the embedded sentinels monitor the master by its DNS name:
// they name hosts and the pods' names resolve.
func embeddedNamesHosts(cr *v1beta2.RedisReplication) bool {
	return builder.EmbeddedSentinelsNameHosts(cr) && builder.ReplicationPodsResolve(cr)
}

// embeddedSeedHost is the address the embedded sentinels monitor the master pod by: its DNS
// name when they name hosts, else its IP.
func (r *RedisReplicationReconciler) embeddedSeedHost(s *replicationScope, master *corev1.Pod) string {
	if embeddedNamesHosts(s.cr) {
		return builder.ReplicationPodFQDN(master.Name, s.cr.Name, s.cr.Namespace, r.DNSDomain)
	}
	return master.Status.PodIP
}

// embeddedHosts is hosts in the form the embedded sentinels report pods.
func (s *replicationScope) embeddedHosts() podHosts {
	h := s.hosts
	h.names = embeddedNamesHosts(s.cr)
	return h
}
