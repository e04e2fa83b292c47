package webhook

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func fakeClient(t *testing.T, objs ...client.Object) client.WithWatch {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, name := range CRDNames {
		objs = append(objs, &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
}

func electedNow() <-chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}

func caBundles(t *testing.T, c client.Client) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, name := range CRDNames {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := c.Get(context.Background(), client.ObjectKey{Name: name}, &crd); err != nil {
			t.Fatal(err)
		}
		if conv := crd.Spec.Conversion; conv != nil && conv.Webhook != nil && conv.Webhook.ClientConfig != nil {
			out[name] = string(conv.Webhook.ClientConfig.CABundle)
		}
	}
	return out
}

// A Secret that cert-manager issued (no CA key) is served and its CA injected as it is: the
// operator never replaces it, even when it would have renewed a certificate of its own.
func TestASecretWithoutCAKeyIsUsedAsItIs(t *testing.T) {
	now := time.Now()
	issued := mustRenew(t, certSet{}, true, now.Add(-50*time.Minute), time.Hour) // due for renewal
	external := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "cert"},
		Data:       map[string][]byte{keyCACert: issued.caBundle, keyTLSCert: issued.serving.certPEM, keyTLSKey: issued.serving.keyPEM},
	}
	c := fakeClient(t, external)
	m, err := NewCertManager(c, electedNow(), CertOptions{Namespace: "ops", ServiceName: "hook", ServicePort: 443, SecretName: "cert"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	var after corev1.Secret
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ops", Name: "cert"}, &after); err != nil {
		t.Fatal(err)
	}
	if string(after.Data[keyTLSCert]) != string(issued.serving.certPEM) || len(after.Data[keyCAKey]) != 0 {
		t.Error("the operator rewrote a Secret it did not make")
	}
	if m.Ready() != nil {
		t.Errorf("not ready with the external certificate: %v", m.Ready())
	}
	for name, bundle := range caBundles(t, c) {
		if bundle != string(issued.caBundle) {
			t.Errorf("CRD %s has another CA bundle than the Secret's ca.crt", name)
		}
	}
	if len(caBundles(t, c)) != len(CRDNames) {
		t.Errorf("conversion set on %d CRDs, want %d", len(caBundles(t, c)), len(CRDNames))
	}
}

// With a certificate directory (a mounted cert-manager Secret), the operator makes nothing and
// injects the directory's ca.crt.
func TestACertificateDirectoryProvidesTheCABundle(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, keyCACert), []byte("-----BEGIN CERTIFICATE-----\nZm9v\n-----END CERTIFICATE-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := fakeClient(t)
	m, err := NewCertManager(c, electedNow(), CertOptions{Namespace: "ops", ServiceName: "hook", ServicePort: 443, CertDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	var secrets corev1.SecretList
	if err := c.List(context.Background(), &secrets); err != nil || len(secrets.Items) != 0 {
		t.Errorf("the operator made %d Secrets (%v), want none", len(secrets.Items), err)
	}
	for name, bundle := range caBundles(t, c) {
		if bundle != "-----BEGIN CERTIFICATE-----\nZm9v\n-----END CERTIFICATE-----\n" {
			t.Errorf("CRD %s: CA bundle %q, want the directory's ca.crt", name, bundle)
		}
	}
}

// A replica that is not elected neither makes the Secret nor touches the CRDs; it waits.
func TestAReplicaNotElectedWritesNothing(t *testing.T) {
	c := fakeClient(t)
	m, err := NewCertManager(c, make(chan struct{}), CertOptions{Namespace: "ops", ServiceName: "hook", ServicePort: 443, SecretName: "cert"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	var secrets corev1.SecretList
	if err := c.List(context.Background(), &secrets); err != nil || len(secrets.Items) != 0 {
		t.Errorf("a replica not elected made %d Secrets (%v)", len(secrets.Items), err)
	}
	if got := caBundles(t, c); len(got) != 0 {
		t.Errorf("a replica not elected set conversion on %v", got)
	}
	if m.Ready() == nil {
		t.Error("ready without a certificate")
	}
}

// The Secret the operator makes belongs to the webhook Service: removing the installation
// removes it.
func TestTheCertificateSecretBelongsToTheWebhookService(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "hook", UID: "svc-uid"}}
	c := fakeClient(t, svc)
	m, err := NewCertManager(c, electedNow(), CertOptions{Namespace: "ops", ServiceName: "hook", ServicePort: 443, SecretName: "cert"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	var secret corev1.Secret
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ops", Name: "cert"}, &secret); err != nil {
		t.Fatal(err)
	}
	if refs := secret.OwnerReferences; len(refs) != 1 || refs[0].Kind != "Service" || refs[0].Name != "hook" || refs[0].UID != "svc-uid" {
		t.Errorf("Secret owners %+v, want the Service hook", refs)
	}
	if m.Ready() != nil {
		t.Errorf("not ready after making the certificate: %v", m.Ready())
	}
}

// The serving certificate names the Service in the cluster's DNS domain (SERVICE_DNS_DOMAIN).
func TestHostsEndInTheClusterDomain(t *testing.T) {
	for domain, want := range map[string]string{"": "hook.ops.svc.cluster.local", "corp.example": "hook.ops.svc.corp.example"} {
		m, err := NewCertManager(fakeClient(t), electedNow(), CertOptions{Namespace: "ops", ServiceName: "hook", ServicePort: 443,
			SecretName: "cert", DNSDomain: domain})
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Hosts(); len(got) != 4 || got[1] != want {
			t.Errorf("domain %q: hosts %q, want %s among them", domain, got, want)
		}
	}
}
