package metricsauth

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
)

// fakeReviewer knows one valid token per user and the users allowed to get /metrics.
type fakeReviewer struct {
	users   map[string]string // token → user
	allowed map[string]bool   // user → may get /metrics
	calls   int
}

func (f *fakeReviewer) authenticate(_ context.Context, token string) (authenticationv1.UserInfo, bool, error) {
	f.calls++
	u, ok := f.users[token]
	return authenticationv1.UserInfo{Username: u}, ok, nil
}

func (f *fakeReviewer) authorize(_ context.Context, user authenticationv1.UserInfo, verb, path string) (bool, error) {
	f.calls++
	return verb == "get" && path == "/metrics" && f.allowed[user.Username], nil
}

func TestFilterAuthenticatesAuthorizesAndRemembers(t *testing.T) {
	now := time.Now()
	rev := &fakeReviewer{users: map[string]string{"good": "prometheus", "other": "someone"}, allowed: map[string]bool{"prometheus": true}}
	g := &guard{reviewer: rev, decisions: map[decisionKey]decision{}, now: func() time.Time { return now }}
	h, err := g.wrap(logr.Discard(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("metrics")) }))
	if err != nil {
		t.Fatal(err)
	}
	get := func(auth string) int {
		req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/metrics", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	for _, tc := range []struct {
		auth string
		want int
	}{
		{"", http.StatusUnauthorized},
		{"Basic abc", http.StatusUnauthorized},
		{"Bearer ", http.StatusUnauthorized},
		{"Bearer forged", http.StatusUnauthorized},
		{"Bearer other", http.StatusForbidden},
		{"Bearer good", http.StatusOK},
	} {
		if got := get(tc.auth); got != tc.want {
			t.Errorf("Authorization %q: %d, want %d", tc.auth, got, tc.want)
		}
	}
	calls := rev.calls
	if get("Bearer good") != http.StatusOK || get("Bearer other") != http.StatusForbidden || rev.calls != calls {
		t.Errorf("a repeated scrape within %s asked the API server again (%d calls, had %d)", denyTTL, rev.calls, calls)
	}
	// A permission granted counts once the remembered denial expires, a permission taken
	// away once the remembered grant does.
	rev.allowed["someone"] = true
	now = now.Add(denyTTL + time.Second)
	if got := get("Bearer other"); got != http.StatusOK {
		t.Errorf("after the permission was granted and %s passed: %d, want 200", denyTTL, got)
	}
	rev.allowed["prometheus"] = false
	now = now.Add(allowTTL)
	if got := get("Bearer good"); got != http.StatusForbidden {
		t.Errorf("after the permission was revoked and %s passed: %d, want 403", allowTTL, got)
	}
	for k := range g.decisions {
		if string(k.token[:]) == "good" {
			t.Error("a token is kept in clear")
		}
	}
}
