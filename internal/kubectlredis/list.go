package kubectlredis

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
)

// ListItem is one resource as `kubectl redis list` shows it.
type ListItem struct {
	Namespace string    `json:"namespace"`
	Kind      string    `json:"kind"`
	Name      string    `json:"name"`
	Health    string    `json:"health"`
	State     string    `json:"state,omitempty"`
	Ready     string    `json:"ready"`
	Cause     string    `json:"cause,omitempty"`
	Message   string    `json:"message,omitempty"`
	Created   time.Time `json:"created"`
}

// Health values, most alarming first in what an on-call engineer reads.
const (
	HealthDegraded = "Degraded"
	HealthNotReady = "NotReady"
	HealthPaused   = "Paused"
	HealthReady    = "Ready"
	HealthUnknown  = "Unknown"
)

func newList(kind string) client.ObjectList {
	switch kind {
	case "RedisCluster":
		return &v1beta2.RedisClusterList{}
	case "RedisReplication":
		return &v1beta2.RedisReplicationList{}
	case "RedisSentinel":
		return &v1beta2.RedisSentinelList{}
	case "Redis":
		return &v1beta2.RedisList{}
	}
	return nil
}

// List prints every resource of the four kinds (or of kind) in the namespace, or in every
// namespace, with its health.
func (p Plugin) List(ctx context.Context, kind string, allNamespaces bool, output string) error {
	candidates := kinds
	if kind != "" {
		k, err := normalizeKind(kind)
		if err != nil {
			return err
		}
		candidates = []string{k}
	}
	var opts []client.ListOption
	if !allNamespaces {
		opts = append(opts, client.InNamespace(p.Namespace))
	}
	var items []ListItem
	for _, k := range candidates {
		list := newList(k)
		if err := p.Client.List(ctx, list, opts...); err != nil {
			return fmt.Errorf("list %s: %w", k, err)
		}
		if err := meta.EachListItem(list, func(o runtime.Object) error {
			obj, ok := o.(client.Object)
			if !ok {
				return fmt.Errorf("list %s: item %T is not an object", k, o)
			}
			items = append(items, listItem(describe(obj)))
			return nil
		}); err != nil {
			return fmt.Errorf("list %s: %w", k, err)
		}
	}
	sort.SliceStable(items, func(i, j int) bool {
		a, b := items[i], items[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.Name < b.Name
	})
	return RenderList(p.Out, items, allNamespaces, output)
}

// listItem reads a resource's health from its skip-reconcile annotation and its Ready and
// Degraded conditions: a paused resource is not being looked after, whatever its conditions
// last said.
func listItem(r *resource) ListItem {
	item := ListItem{Namespace: r.obj.GetNamespace(), Kind: r.kind, Name: r.obj.GetName(), State: r.state,
		Ready: "-", Created: r.obj.GetCreationTimestamp().Time}
	ready := meta.FindStatusCondition(r.conditions, v1beta2.ConditionReady)
	if ready != nil {
		item.Ready, item.Cause, item.Message = string(ready.Status), ready.Reason, ready.Message
	}
	degraded := meta.IsStatusConditionTrue(r.conditions, v1beta2.ConditionDegraded)
	switch {
	case r.obj.GetAnnotations()[builder.SkipReconcileAnnotationOf(r.kind)] == "true":
		item.Health = HealthPaused
	case degraded:
		item.Health = HealthDegraded
	case ready == nil:
		item.Health = HealthUnknown
	case ready.Status == metav1.ConditionTrue:
		item.Health = HealthReady
	default:
		item.Health = HealthNotReady
	}
	return item
}

// RenderList prints the items as a table, or as one JSON or YAML document.
func RenderList(out io.Writer, items []ListItem, allNamespaces bool, output string) error {
	if items == nil {
		items = []ListItem{}
	}
	switch output {
	case "json", "yaml":
		return writeDocument(out, map[string]any{"items": items}, output)
	}
	if len(items) == 0 {
		_, err := fmt.Fprintln(out, "No Redis resources found.")
		return err
	}
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	header := "KIND\tNAME\tHEALTH\tSTATE\tREADY\tCAUSE\tAGE"
	if allNamespaces {
		header = "NAMESPACE\t" + header
	}
	_, _ = fmt.Fprintln(tw, header)
	for _, it := range items {
		if allNamespaces {
			_, _ = fmt.Fprintf(tw, "%s\t", it.Namespace)
		}
		_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", it.Kind, it.Name, it.Health, dash(it.State), it.Ready, dash(it.Cause), age(it.Created))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

// writeDocument prints v as indented JSON or as YAML.
func writeDocument(out io.Writer, v any, format string) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	if format == "yaml" {
		if data, err = yaml.JSONToYAML(data); err != nil {
			return fmt.Errorf("encode: %w", err)
		}
	} else {
		data = append(data, '\n')
	}
	if _, err := out.Write(data); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

func checkOutput(inv invocation) error {
	switch inv.value("output") {
	case "", "table", "json", "yaml":
		return nil
	}
	return fmt.Errorf("unknown output format %q (table, json or yaml)", inv.value("output"))
}
