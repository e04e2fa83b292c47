package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/redis/clusterplan"
)

// recordAddressHolders keeps the ConfigMap of a NodePort cluster's address gate current: which
// node holds each pod's address (clusterplan.AddressHolders, builder's address gate). It runs
// before the reconcile waits for pods that do not run, since a pod waiting at the gate is one
// of them: the entry that holds it is cleared from the pods that answer.
func (r *RedisClusterReconciler) recordAddressHolders(ctx context.Context, s *clusterScope) error {
	if !builder.ClusterNodePorts(s.cr) {
		return nil
	}
	var current corev1.ConfigMap
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.cr.Namespace, Name: builder.ClusterAddressHoldersName(s.cr.Name)}, &current)
	exists := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("read ConfigMap %s: %w", builder.ClusterAddressHoldersName(s.cr.Name), err)
	}
	members := r.observeMembers(ctx, s.withPods(runningPods(s.leaders), runningPods(s.followers)))
	holders := clusterplan.AddressHolders(members, current.Data)
	// A pod held at the gate starts no event of its own, nor does the election that frees
	// it: the reconcile looks again until it does.
	var held []string
	for _, pod := range slices.Sorted(maps.Keys(holders)) {
		if m := memberByPod(members, pod); m == nil || m.View == nil {
			held = append(held, pod)
		}
	}
	s.gateHeld = held
	if len(held) > 0 {
		s.Requeue(ctx, whileOutage, fmt.Sprintf("the address of pods %s is held by a master serving slots until its replica takes them over",
			strings.Join(held, ", ")))
	}
	if exists && maps.Equal(holders, current.Data) || !exists && len(holders) == 0 {
		return nil
	}
	written, err := r.Applier.Owned(ctx, r.Client, s.cr, builder.ClusterAddressHolders(s.cr, holders))
	if err != nil {
		return fmt.Errorf("write the address holders: %w", err)
	}
	if written {
		log.FromContext(ctx).Info("address holders", "pods", holders)
	}
	return nil
}

// addressGateNote tells, after a status message about pods that do not run, which of them wait
// at their address gate and for what: without it the status would only count them.
func addressGateNote(held []string) string {
	switch len(held) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("; pod %s cannot start until the replica of the master its address belonged to takes over that master's slots (address gate)", held[0])
	default:
		return fmt.Sprintf("; pods %s cannot start until the replicas of the masters their addresses belonged to take over those masters' slots (address gate)",
			strings.Join(held, ", "))
	}
}
