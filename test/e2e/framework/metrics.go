package framework

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MetricsReaderRole is the ClusterRole, of config/rbac and of the operator chart (default
// name), that may get the operator's /metrics.
const MetricsReaderRole = "redis-operator-metrics-reader"

// metricsScraper is the ServiceAccount (in "default") whose token scrapes the operator.
const metricsScraper = "metrics-scraper"

// MetricsToken returns a token of a ServiceAccount bound to MetricsReaderRole, made on first
// use, as Prometheus would scrape the operator's HTTPS /metrics with.
func (s *Sandbox) MetricsToken(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: metricsScraper, Namespace: "default"}}
	if _, err := s.Kube.CoreV1().ServiceAccounts("default").Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: metricsScraper},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: MetricsReaderRole},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: metricsScraper, Namespace: "default"}}}
	if _, err := s.Kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	tr, err := s.Kube.CoreV1().ServiceAccounts("default").CreateToken(ctx, metricsScraper, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// OperatorMetrics returns the body of the operator's /metrics at the pod address ip (port
// 8080, HTTPS with its self-signed certificate), fetched with token (MetricsToken).
func OperatorMetrics(ctx context.Context, ip, token string) (string, error) {
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // the operator serves a self-signed certificate: the test checks its metrics, not its identity
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+net.JoinHostPort(ip, "8080")+"/metrics", nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("operator /metrics: %s: %s", resp.Status, body)
	}
	return string(body), err
}
