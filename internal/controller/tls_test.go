package controller

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/redis/redistest"
)

// readTLS takes a cert-manager Secret unchanged, keeps one client configuration while the
// content is unchanged, and gives a new one for a renewal; what the user must fix is a
// TLSSecretError naming the Secret and the key.
func TestReadTLSFromSecret(t *testing.T) {
	ca := redistest.NewCA(t, "ca")
	first := ca.Issue(t, "redis")
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "redis-tls"},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{"ca.crt": ca.CertPEM, "tls.crt": first.CertPEM, "tls.key": first.KeyPEM},
	}
	c := fake.NewClientBuilder().WithObjects(secret).Build()
	spec := &v1beta2.TLSConfig{Secret: corev1.SecretVolumeSource{SecretName: "redis-tls"}}
	cache := NewMemory().tls

	got, err := readTLS(t.Context(), c, cache, nil, "ns", spec)
	if err != nil {
		t.Fatal(err)
	}
	if got.certPath != "/tls/tls.crt" || got.config == nil || got.config.RootCAs != nil || got.config.VerifyConnection == nil {
		t.Fatalf("settings: cert path %q, config %v", got.certPath, got.config)
	}
	again, err := readTLS(t.Context(), c, cache, nil, "ns", spec)
	if err != nil {
		t.Fatal(err)
	}
	if again.config != got.config {
		t.Fatal("the same Secret content gave a new client configuration")
	}

	renewed := ca.Issue(t, "redis")
	secret.Data["tls.crt"], secret.Data["tls.key"] = renewed.CertPEM, renewed.KeyPEM
	if err := c.Update(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
	next, err := readTLS(t.Context(), c, cache, nil, "ns", spec)
	if err != nil {
		t.Fatal(err)
	}
	if next.config == got.config || next.hash == got.hash {
		t.Fatal("a renewed certificate kept the old client configuration")
	}
	leaf, err := next.material.Leaf()
	if err != nil || leaf.SerialNumber.Cmp(renewed.Cert.SerialNumber) != 0 {
		t.Fatalf("leaf %v, %v; want serial %s", leaf, err, renewed.Cert.SerialNumber)
	}

	// Keys named by the spec.
	custom := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "custom"},
		Data:       map[string][]byte{"root.pem": ca.CertPEM, "server.pem": first.CertPEM, "server-key.pem": first.KeyPEM},
	}
	if err := c.Create(t.Context(), custom); err != nil {
		t.Fatal(err)
	}
	named := &v1beta2.TLSConfig{CaKeyFile: "root.pem", CertKeyFile: "server.pem", KeyFile: "server-key.pem",
		Secret: corev1.SecretVolumeSource{SecretName: "custom"}}
	if s, err := readTLS(t.Context(), c, cache, nil, "ns", named); err != nil || s.certPath != "/tls/server.pem" {
		t.Fatalf("named keys: %v, %v", s, err)
	}

	for name, tc := range map[string]struct {
		spec *v1beta2.TLSConfig
		edit func(*corev1.Secret)
	}{
		"missing Secret": {spec: &v1beta2.TLSConfig{Secret: corev1.SecretVolumeSource{SecretName: "nope"}}},
		"missing key":    {spec: spec, edit: func(s *corev1.Secret) { delete(s.Data, "ca.crt") }},
		"not a CA":       {spec: spec, edit: func(s *corev1.Secret) { s.Data["ca.crt"] = []byte("junk") }},
		"key mismatch":   {spec: spec, edit: func(s *corev1.Secret) { s.Data["tls.key"] = first.KeyPEM }},
	} {
		t.Run(name, func(t *testing.T) {
			if tc.edit != nil {
				var s corev1.Secret
				if err := c.Get(t.Context(), client.ObjectKeyFromObject(secret), &s); err != nil {
					t.Fatal(err)
				}
				tc.edit(&s)
				if err := c.Update(t.Context(), &s); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					var cur corev1.Secret
					_ = c.Get(context.Background(), client.ObjectKeyFromObject(secret), &cur)
					cur.Data = map[string][]byte{"ca.crt": ca.CertPEM, "tls.crt": renewed.CertPEM, "tls.key": renewed.KeyPEM}
					_ = c.Update(context.Background(), &cur)
				})
			}
			_, err := readTLS(t.Context(), c, cache, nil, "ns", tc.spec)
			var invalid *TLSSecretError
			if !errors.As(err, &invalid) {
				t.Fatalf("got %v, want a TLSSecretError", err)
			}
		})
	}
	if readTLSNil, err := readTLS(t.Context(), c, cache, nil, "ns", nil); readTLSNil != nil || err != nil || readTLSNil.clientConfig() != nil {
		t.Fatalf("no TLS: %v, %v", readTLSNil, err)
	}
}
