package kubectlredis

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/internal/builder"
)

// Pause sets the kind's skip-reconcile annotation to "true", which stops every action of the
// operator on the resource (the Progressing condition says so); Resume removes it.
func (p Plugin) Pause(ctx context.Context, name, kind string) error {
	return p.setSkipReconcile(ctx, name, kind, true)
}

// Resume removes the skip-reconcile annotation: the operator acts on the resource again.
func (p Plugin) Resume(ctx context.Context, name, kind string) error {
	return p.setSkipReconcile(ctx, name, kind, false)
}

func (p Plugin) setSkipReconcile(ctx context.Context, name, kind string, pause bool) error {
	res, err := findResource(ctx, p.Client, p.Namespace, name, kind)
	if err != nil {
		return err
	}
	key := builder.SkipReconcileAnnotationOf(res.kind)
	var value any // null removes the annotation in a merge patch
	if pause {
		value = "true"
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: value}}})
	if err != nil {
		return fmt.Errorf("patch: %w", err)
	}
	if err := p.Client.Patch(ctx, res.obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("annotate %s %s: %w", res.kind, name, err)
	}
	if pause {
		_, err = fmt.Fprintf(p.Out, "%s %s paused (%s=true): the operator leaves it alone until kubectl redis resume %s.\n",
			res.kind, name, key, name)
	} else {
		_, err = fmt.Fprintf(p.Out, "%s %s resumed (%s removed): the operator reconciles it again.\n", res.kind, name, key)
	}
	if err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}
