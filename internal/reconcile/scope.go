package reconcile

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rediskube/redis-operator/internal/status"
)

// Scope is what every kind's scope carries: the conditions being written and the result the
// reconcile returns once a phase stops it. A kind's scope embeds it, with what is the kind's.
type Scope struct {
	// Conditions write into the status of the resource being reconciled.
	Conditions status.Conditions
	// Result is what the reconcile returns when no phase fails.
	Result ctrl.Result
	// ShowStatus writes the status as it stands, before a phase that may take long (a slice
	// of slot moves), so that users see what is under way while it runs. The generation is
	// not claimed as acted on: not every phase has run.
	ShowStatus func(context.Context) error
}

// Scoped is a kind's scope, which embeds a Scope.
type Scoped interface {
	Base() *Scope
}

// Base is the Scope a kind's scope embeds, for the Shell.
func (s *Scope) Base() *Scope { return s }

// Requeue asks to come back after d for a reason that raises no Kubernetes event (Redis
// gossip, a replica's sync), keeping the earliest of the requeues asked for.
func (s *Scope) Requeue(ctx context.Context, d time.Duration, reason string) {
	log.FromContext(ctx).V(1).Info("requeue", "after", d, "reason", reason)
	if s.Result.RequeueAfter == 0 || d < s.Result.RequeueAfter {
		s.Result.RequeueAfter = d
	}
}

// Requeuer is Requeue for helpers that know nothing of the scope.
func (s *Scope) Requeuer(ctx context.Context) func(time.Duration, string) {
	return func(d time.Duration, reason string) { s.Requeue(ctx, d, reason) }
}
