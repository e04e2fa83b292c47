package operator

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// assertOperatorLogIsStructured reads every operator pod's log and fails on any line that is
// not one JSON object with a level, a time and a message: the libraries the operator uses
// (go-redis, client-go) print through its logger, not raw text. wantLogger names a logger
// that must have printed at least once, so the check covers the lines it is about.
func assertOperatorLogIsStructured(t *testing.T, ctx context.Context, wantLogger string) {
	t.Helper()
	var operators corev1.PodList
	if err := sb.Client.List(ctx, &operators, client.InNamespace("redis-operator-system")); err != nil || len(operators.Items) == 0 {
		t.Fatalf("operator pods: %d, %v", len(operators.Items), err)
	}
	lines, fromWanted := 0, 0
	for _, p := range operators.Items {
		for _, c := range p.Spec.Containers {
			logs, err := sb.Logs(ctx, p.Namespace, p.Name, c.Name, false)
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(logs, "\n") {
				if strings.TrimSpace(line) == "" {
					continue
				}
				lines++
				var entry struct {
					Level  string          `json:"level"`
					TS     json.RawMessage `json:"ts"` // a number or a time string, by the encoder flag
					Msg    string          `json:"msg"`
					Logger string          `json:"logger"`
				}
				if err := json.Unmarshal([]byte(line), &entry); err != nil || entry.Level == "" || len(entry.TS) == 0 || entry.Msg == "" {
					t.Errorf("%s/%s printed a line that is not a structured entry (%v): %s", p.Name, c.Name, err, line)
					continue
				}
				if strings.Contains(entry.Logger, wantLogger) {
					fromWanted++
				}
			}
		}
	}
	if lines == 0 {
		t.Fatal("the operator printed nothing: the check would find nothing")
	}
	if fromWanted == 0 {
		t.Errorf("none of the operator's %d log lines came from logger %q: the check did not cover it", lines, wantLogger)
	}
	t.Logf("%d operator log lines, all structured; %d from %s", lines, fromWanted, wantLogger)
}
