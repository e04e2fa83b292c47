package redistest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rediskube/redis-operator/internal/redis"
)

// CA is a certificate authority made for a test, with crypto/x509.
type CA struct {
	Cert    *x509.Certificate
	CertPEM []byte
	key     *ecdsa.PrivateKey
}

// serials makes every certificate a test issues distinct, so a test can tell them apart.
var serials atomic.Int64

func nextSerial() *big.Int {
	return big.NewInt(time.Now().UnixNano()/1000*1000 + serials.Add(1)%1000)
}

// NewCA makes a self-signed CA valid for a day.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("CA key: %v", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          nextSerial(),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("CA certificate: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("parse CA certificate: %v", err)
	}
	return &CA{Cert: cert, CertPEM: pemBlock("CERTIFICATE", der), key: key}
}

// Issued is a certificate and its key, in PEM, with the parsed certificate.
type Issued struct {
	Cert    *x509.Certificate
	CertPEM []byte
	KeyPEM  []byte
}

// Issue makes a certificate for servers and clients, valid for a day, naming the given DNS
// names and IP addresses.
func (ca *CA) Issue(t testing.TB, names ...string) Issued {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("key: %v", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: nextSerial(),
		Subject:      pkix.Name{CommonName: "redis"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatalf("certificate: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("parse certificate: %v", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatalf("marshal key: %v", err)
	}
	return Issued{Cert: cert, CertPEM: pemBlock("CERTIFICATE", der), KeyPEM: pemBlock("PRIVATE KEY", keyDER)}
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// TLSFiles are the PEM files a TLS redis-server reads, in a directory of their own.
type TLSFiles struct {
	Dir string
}

// CAPath, CertPath and KeyPath are the files' paths.
func (f TLSFiles) CAPath() string   { return filepath.Join(f.Dir, "ca.crt") }
func (f TLSFiles) CertPath() string { return filepath.Join(f.Dir, "tls.crt") }
func (f TLSFiles) KeyPath() string  { return filepath.Join(f.Dir, "tls.key") }

// Material reads the files back.
func (f TLSFiles) Material() (redis.TLSMaterial, error) {
	var m redis.TLSMaterial
	var err error
	if m.CA, err = os.ReadFile(f.CAPath()); err != nil {
		return m, err
	}
	if m.Cert, err = os.ReadFile(f.CertPath()); err != nil {
		return m, err
	}
	m.Key, err = os.ReadFile(f.KeyPath())
	return m, err
}

// ClientConfig is the operator's TLS configuration for the files' current content.
func (f TLSFiles) ClientConfig() (*tls.Config, error) {
	m, err := f.Material()
	if err != nil {
		return nil, err
	}
	return redis.NewTLSConfig(m)
}

// WriteTLSFiles writes a CA bundle, certificate and key into a new temporary directory.
func WriteTLSFiles(t testing.TB, caBundle []byte, issued Issued) TLSFiles {
	t.Helper()
	f := TLSFiles{Dir: t.TempDir()}
	f.Update(t, caBundle, issued)
	return f
}

// Update replaces the files' content, as a kubelet refreshing a Secret volume does.
func (f TLSFiles) Update(t testing.TB, caBundle []byte, issued Issued) {
	t.Helper()
	for path, data := range map[string][]byte{f.CAPath(): caBundle, f.CertPath(): issued.CertPEM, f.KeyPath(): issued.KeyPEM} {
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			t.Fatalf("write %s: %v", tmp, err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatalf("rename %s: %v", tmp, err)
		}
	}
}
