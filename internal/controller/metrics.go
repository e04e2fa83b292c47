package controller

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// apiWrites counts the writes the reconcilers make, by verb and kind: a steady state makes
// none, which dashboards and the benchmark check. (Client-go's own request metrics also count
// the leader-election Lease renewals, which are no reconcile's doing.)
var apiWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "redis_operator_api_writes_total",
	Help: "Writes to the Kubernetes API made by the operator's reconcilers, by verb and kind.",
}, []string{"verb", "kind"})

func init() {
	metrics.Registry.MustRegister(apiWrites)
}

// CountWrites wraps the client the reconcilers use so that each write is counted.
func CountWrites(c client.Client) client.Client { return &countingClient{Client: c} }

type countingClient struct{ client.Client }

func (c *countingClient) count(verb string, obj client.Object) {
	apiWrites.WithLabelValues(verb, kindOf(obj)).Inc()
}

func (c *countingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	c.count("create", obj)
	return c.Client.Create(ctx, obj, opts...)
}

func (c *countingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	c.count("update", obj)
	return c.Client.Update(ctx, obj, opts...)
}

func (c *countingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	c.count("patch", obj)
	return c.Client.Patch(ctx, obj, patch, opts...)
}

func (c *countingClient) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	kind := "unknown"
	if k, ok := obj.(interface{ GetKind() string }); ok {
		kind = k.GetKind()
	}
	apiWrites.WithLabelValues("apply", kind).Inc()
	return c.Client.Apply(ctx, obj, opts...)
}

func (c *countingClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	c.count("delete", obj)
	return c.Client.Delete(ctx, obj, opts...)
}

func (c *countingClient) Status() client.SubResourceWriter {
	return &countingStatusWriter{SubResourceWriter: c.Client.Status(), count: c.count}
}

type countingStatusWriter struct {
	client.SubResourceWriter
	count func(string, client.Object)
}

func (w *countingStatusWriter) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	w.count("update-status", obj)
	return w.SubResourceWriter.Update(ctx, obj, opts...)
}

func (w *countingStatusWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	w.count("patch-status", obj)
	return w.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}
