// Package metricsauth guards the operator's /metrics: a caller must present a bearer token the
// API server authenticates (TokenReview) and be allowed "get" on the request's non-resource
// path (SubjectAccessReview), as for any Kubernetes component's metrics. It does what
// controller-runtime's metrics filters do with client-go alone: those pull in k8s.io/apiserver,
// which would nearly double the operator's binary.
package metricsauth

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// How long a decision about a token is remembered, so that a scrape every few seconds costs
// no API call: a revoked permission takes effect within allowTTL, a granted one within denyTTL.
const (
	allowTTL = time.Minute
	denyTTL  = 10 * time.Second
)

// reviewTimeout bounds the TokenReview and SubjectAccessReview of one request.
const reviewTimeout = 10 * time.Second

// Filter is a metricsserver.Options.FilterProvider: every request needs an authenticated
// and authorized bearer token.
func Filter(cfg *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
	cs, err := kubernetes.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("metrics authentication client: %w", err)
	}
	g := &guard{reviewer: apiReviewer{cs}, decisions: map[decisionKey]decision{}, now: time.Now}
	return g.wrap, nil
}

// reviewer asks the API server about a token.
type reviewer interface {
	// authenticate returns the user of a token; ok false when the token is not valid.
	authenticate(ctx context.Context, token string) (user authenticationv1.UserInfo, ok bool, err error)
	// authorize tells whether user may do verb on the non-resource path.
	authorize(ctx context.Context, user authenticationv1.UserInfo, verb, path string) (bool, error)
}

type decisionKey struct {
	token      [sha256.Size]byte // never the token itself
	verb, path string
}

type decision struct {
	status  int // 0: allowed; otherwise the HTTP status of the refusal
	user    string
	expires time.Time
}

type guard struct {
	reviewer reviewer
	now      func() time.Time

	mu        sync.Mutex
	decisions map[decisionKey]decision
}

func (g *guard) wrap(log logr.Logger, next http.Handler) (http.Handler, error) {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		token, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
		if !ok || strings.TrimSpace(token) == "" {
			http.Error(w, "Unauthorized: a bearer token is required", http.StatusUnauthorized)
			return
		}
		d, err := g.decide(req.Context(), strings.TrimSpace(token), strings.ToLower(req.Method), req.URL.Path)
		if err != nil {
			log.Error(err, "cannot review a metrics request")
			http.Error(w, "cannot review the request", http.StatusInternalServerError)
			return
		}
		switch d.status {
		case 0:
			next.ServeHTTP(w, req)
		case http.StatusUnauthorized:
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
		default:
			log.V(1).Info("metrics request denied", "user", d.user, "path", req.URL.Path)
			http.Error(w, "Forbidden: user "+d.user+" may not get "+req.URL.Path, http.StatusForbidden)
		}
	}), nil
}

// decide authenticates and authorizes a request, from the remembered decision when fresh.
func (g *guard) decide(ctx context.Context, token, verb, path string) (decision, error) {
	key := decisionKey{token: sha256.Sum256([]byte(token)), verb: verb, path: path}
	now := g.now()
	g.mu.Lock()
	d, ok := g.decisions[key]
	if len(g.decisions) > 1000 { // many callers or tokens: start over rather than grow
		clear(g.decisions)
	}
	g.mu.Unlock()
	if ok && now.Before(d.expires) {
		return d, nil
	}
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	user, valid, err := g.reviewer.authenticate(ctx, token)
	if err != nil {
		return decision{}, err
	}
	d = decision{user: user.Username, expires: now.Add(allowTTL)}
	if !valid {
		d.status = http.StatusUnauthorized
	} else if allowed, err := g.reviewer.authorize(ctx, user, verb, path); err != nil {
		return decision{}, err
	} else if !allowed {
		d.status = http.StatusForbidden
	}
	if d.status != 0 {
		d.expires = now.Add(denyTTL)
	}
	g.mu.Lock()
	g.decisions[key] = d
	g.mu.Unlock()
	return d, nil
}

type apiReviewer struct{ cs kubernetes.Interface }

func (r apiReviewer) authenticate(ctx context.Context, token string) (authenticationv1.UserInfo, bool, error) {
	review, err := r.cs.AuthenticationV1().TokenReviews().Create(ctx,
		&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return authenticationv1.UserInfo{}, false, fmt.Errorf("TokenReview: %w", err)
	}
	return review.Status.User, review.Status.Authenticated, nil
}

func (r apiReviewer) authorize(ctx context.Context, user authenticationv1.UserInfo, verb, path string) (bool, error) {
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	review, err := r.cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra,
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("SubjectAccessReview: %w", err)
	}
	return review.Status.Allowed, nil
}
