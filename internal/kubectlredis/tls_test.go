//go:build integration

package kubectlredis

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/redis/redistest"
)

// The plugin reaches pods that serve TLS only with the CA bundle of the resource's TLS Secret
// (cert-manager's keys by default), and refuses a server its CA did not sign.
func TestPluginSpeaksTLSWithTheResourcesSecret(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ca := redistest.NewCA(t, "redis-ca")
	issued := ca.Issue(t, "redis")
	files := redistest.WriteTLSFiles(t, ca.CertPEM, issued)
	server := redistest.StartServer(t, redistest.ServerOptions{Password: "pw", TLS: &files})

	other := redistest.NewCA(t, "other-ca")
	kube := fake.NewClientset(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "redis-tls", Namespace: "shop"}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{"ca.crt": ca.CertPEM, "tls.crt": issued.CertPEM, "tls.key": issued.KeyPEM}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "other-tls", Namespace: "shop"},
			Data: map[string][]byte{"ca.pem": other.CertPEM, "tls.crt": issued.CertPEM, "tls.key": issued.KeyPEM}},
	)
	p := Plugin{Kube: kube, Namespace: "shop"}
	pool := redis.NewPool(redis.Options{})
	defer func() { _ = pool.Close() }()

	if cfg, err := p.tlsConfig(ctx, nil); cfg != nil || err != nil {
		t.Errorf("without TLS: %v, %v", cfg, err)
	}
	cfg, err := p.tlsConfig(ctx, &v1beta2.TLSConfig{Secret: corev1.SecretVolumeSource{SecretName: "redis-tls"}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := pool.Client(redis.NewEndpoint(server.Host, server.Port, redis.Auth{Password: "pw"}).WithTLS(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(ctx); err != nil {
		t.Errorf("PING over TLS with the Secret's CA: %v", err)
	}

	wrong, err := p.tlsConfig(ctx, &v1beta2.TLSConfig{CaKeyFile: "ca.pem", Secret: corev1.SecretVolumeSource{SecretName: "other-tls"}})
	if err != nil {
		t.Fatal(err)
	}
	c, err = pool.Client(redis.NewEndpoint(server.Host, server.Port, redis.Auth{Password: "pw"}).WithTLS(wrong))
	if err == nil {
		err = c.Ping(ctx)
	}
	if err == nil {
		t.Error("a server another CA signed was trusted")
	}
	if _, err := p.tlsConfig(ctx, &v1beta2.TLSConfig{Secret: corev1.SecretVolumeSource{SecretName: "missing"}}); err == nil {
		t.Error("a missing TLS Secret gave no error")
	}
}
