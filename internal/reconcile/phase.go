package reconcile

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Phase is one named step of a reconcile; stop ends the reconcile early, with a reason the
// phase has written into the status.
type Phase[S any] struct {
	Name string
	Run  func(context.Context, S) (stop bool, err error)
}

// Failures counts the phases that fail, by kind and phase name, in that order: a
// *prometheus.CounterVec with those two labels.
type Failures interface {
	WithLabelValues(lvs ...string) prometheus.Counter
}

// Run runs the phases in order until one stops or fails, and returns the failure, named by the
// phase. failures, when not nil, counts it.
func Run[S any](ctx context.Context, kind string, phases []Phase[S], s S, failures Failures) error {
	for _, p := range phases {
		// Made before it is needed, so that the series exists at 0 and rate() sees the first error.
		var phaseErrors prometheus.Counter
		if failures != nil {
			phaseErrors = failures.WithLabelValues(kind, p.Name)
		}
		stop, err := p.Run(ctx, s)
		if err != nil {
			if phaseErrors != nil {
				phaseErrors.Inc()
			}
			log.FromContext(ctx).Error(err, "reconcile phase failed", "phase", p.Name)
			return fmt.Errorf("%s: %w", p.Name, err)
		}
		if stop {
			return nil
		}
	}
	return nil
}
