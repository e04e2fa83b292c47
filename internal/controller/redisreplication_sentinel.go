package controller

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/redis/replicationplan"
)

// observeSentinels asks the pods of every RedisSentinel monitoring this replication where the
// master is: with sentinels, they fail over and the operator follows the address more than
// half of the answers report (replicationplan.AgreedMaster). Sentinels that do not answer
// leave monitored empty, which the plan treats as "do not assume a master".
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
	var reports []string // one per sentinel pod asked: the master host it reports, "" for none
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
			c, err := r.dial(pods[j].Status.PodIP, builder.DefaultSentinelPort, password)
			if err != nil {
				return false, err
			}
			host, _, known, err := c.SentinelMasterAddr(ctx, g.masterGroup)
			if err != nil || !known {
				host = ""
			}
			reports = append(reports, host)
		}
	}
	s.monitored = replicationplan.AgreedMaster(reports)
	return false, nil
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
