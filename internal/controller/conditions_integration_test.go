//go:build integration

package controller

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// wantSpecUnwritten checks that the operator never wrote obj's spec: its generation is still
// the one the user's create gave it. (An Update of the whole object to add the finalizer wrote
// the Go types' empty structs into the spec and counted a second generation.)
func wantSpecUnwritten(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	got := obj.DeepCopyObject().(client.Object)
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), got); err != nil {
		t.Fatal(err)
	}
	if got.GetGeneration() != 1 || len(got.GetFinalizers()) == 0 {
		t.Errorf("%s: generation %d with finalizers %v, want 1 with the finalizer: the operator wrote the spec",
			got.GetName(), got.GetGeneration(), got.GetFinalizers())
	}
}
