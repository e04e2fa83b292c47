package controller

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rediskube/redis-operator/internal/apply"
	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/status"
)

// A RedisCluster with serviceType NodePort is reached through one NodePort Service per pod,
// whose node ports the pod announces (builder/cluster_network.go). The Services are created
// before the pods that need them: the API server allocates the node ports, which the
// operator reads back and writes into the file each pod includes when it starts. A scale-out
// therefore creates the new pods' Services first and grows the StatefulSets in a later
// reconcile, once their ports are known; a scale-in removes a pod's Service only once the pod
// is gone, since the other nodes reach it at that address until it stops.

// readNodePorts reads the node ports of the per-pod Services that exist, for the phases that
// observe the pods before the Services are brought to the spec (a terminating master's
// hand-over).
func (r *RedisClusterReconciler) readNodePorts(ctx context.Context, s *clusterScope) (bool, error) {
	if !builder.ClusterNodePorts(s.cr) {
		return false, nil
	}
	var services corev1.ServiceList
	if err := r.Client.List(ctx, &services, client.InNamespace(s.cr.Namespace),
		client.MatchingLabels{builder.LabelInstance: s.cr.Name, builder.LabelManagedBy: builder.ManagedByValue}); err != nil {
		return false, fmt.Errorf("list Services: %w", err)
	}
	s.nodePorts = map[string]builder.NodePorts{}
	for i := range services.Items {
		svc := &services.Items[i]
		if svc.Spec.Type != corev1.ServiceTypeNodePort || svc.Spec.Selector[builder.PodNameLabel] != svc.Name || svc.DeletionTimestamp != nil {
			continue
		}
		if np, ok := builder.NodePortsOf(svc); ok {
			s.nodePorts[svc.Name] = np
		}
	}
	return false, nil
}

// ensureNodePortServices creates or updates the per-pod Services of every pod the cluster has
// or is about to have, and stops the reconcile while a pod the StatefulSets will run has no
// node ports yet (the Service's own event, or the requeue, brings it back).
func (r *RedisClusterReconciler) ensureNodePortServices(ctx context.Context, s *clusterScope) (bool, error) {
	if !builder.ClusterNodePorts(s.cr) {
		return false, nil
	}
	keep, err := r.podsWithServices(ctx, s)
	if err != nil {
		return false, err
	}
	s.servicePods = keep
	for _, svc := range builder.ClusterNodePortServices(s.cr, keep) {
		written, err := r.Applier.Owned(ctx, r.Client, s.cr, svc)
		var notOwned *apply.NotOwnedError
		switch {
		case errors.As(err, &notOwned):
			s.Conditions.Degraded(status.ReasonNotOwned, notOwned.Error())
			r.Recorder.Eventf(s.cr, nil, corev1.EventTypeWarning, status.ReasonNotOwned, "Adopt", "refusing to take over: %s", notOwned.Error())
			return true, nil
		case err != nil:
			s.Conditions.Degraded(status.ReasonApplyFailed, err.Error())
			r.Recorder.Eventf(s.cr, nil, corev1.EventTypeWarning, status.ReasonApplyFailed, "Apply", "%s", err.Error())
			return false, err
		case written:
			log.FromContext(ctx).Info("wrote object", "kind", "Service", "name", svc.Name)
		}
	}
	if _, err := r.readNodePorts(ctx, s); err != nil {
		return false, err
	}
	var missing []string
	for _, role := range []struct {
		name  string
		count int32
	}{{builder.RoleLeader, s.pods.Leaders}, {builder.RoleFollower, s.pods.Followers}} {
		for i := range role.count {
			if pod := builder.PodName(builder.ClusterStatefulSetName(s.cr.Name, role.name), i); s.nodePorts[pod] == (builder.NodePorts{}) {
				missing = append(missing, pod)
			}
		}
	}
	if len(missing) > 0 {
		why := "waiting for the node ports of the Services of pods " + strings.Join(missing, ", ")
		reason := ReasonScalingOut
		if s.newCluster() {
			reason = status.ReasonPodsNotReady
		}
		s.Conditions.Progressing(reason, why)
		s.Requeue(ctx, afterRedisCommands, why)
		return true, nil
	}
	return false, nil
}

// podsWithServices are the pod counts whose Services are wanted: the pods the StatefulSets are
// to run, and every pod that still exists, terminating or not.
func (r *RedisClusterReconciler) podsWithServices(ctx context.Context, s *clusterScope) (builder.ClusterPods, error) {
	keep := s.pods
	for _, role := range []struct {
		name  string
		count *int32
	}{{builder.RoleLeader, &keep.Leaders}, {builder.RoleFollower, &keep.Followers}} {
		sts := builder.ClusterStatefulSetName(s.cr.Name, role.name)
		var pods corev1.PodList
		if err := r.Client.List(ctx, &pods, client.InNamespace(s.cr.Namespace), client.MatchingLabels{builder.LabelApp: sts}); err != nil {
			return keep, fmt.Errorf("list pods of %s: %w", sts, err)
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			if !ownedByStatefulSet(p, sts) {
				continue
			}
			if o := podOrdinal(p.Name); o >= 0 && o < math.MaxInt32 && int32(o) >= *role.count {
				*role.count = int32(o) + 1
			}
		}
	}
	return keep, nil
}
