package kubectlredis

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/internal/builder"
)

// FailoverAnnotation asks the operator for a safe failover of the resource: its value is the
// pod that should become master (RedisReplication), a replica that should take its master's
// shard over or a master whose best replica should (RedisCluster), or AnyReplica to let the
// operator pick the most up-to-date replica (RedisReplication). The request goes through the
// resource so that the operator, which knows the topology and what it is doing, decides how
// and when; the plugin never sends a command to Redis itself. The operator removes the
// annotation once done, and says in the Failover condition and a Warning event why it refuses
// a failover that is not safe.
const FailoverAnnotation = builder.AnnotationFailover

// AnyReplica lets the operator choose the replica to promote.
const AnyReplica = "*"

// Failover sets FailoverAnnotation on the resource.
func (p Plugin) Failover(ctx context.Context, name, kind, pod string) error {
	res, err := findResource(ctx, p.Client, p.Namespace, name, kind)
	if err != nil {
		return err
	}
	if pod == "" {
		pod = AnyReplica
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{FailoverAnnotation: pod}}})
	if err != nil {
		return err
	}
	if err := p.Client.Patch(ctx, res.obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("annotate %s %s: %w", res.kind, name, err)
	}
	_, err = fmt.Fprintf(p.Out, "%s %s annotated %s=%s: the operator fails over once it is safe and then removes the annotation; "+
		"the Failover condition and the events (kubectl redis status %s) tell how it went.\n",
		res.kind, name, FailoverAnnotation, pod, name)
	return err
}
