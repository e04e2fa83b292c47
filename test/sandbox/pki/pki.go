// Package pki creates the sandbox's certificate authority and every certificate and key the
// control plane, the virtual kubelets and the clients need. Keys are ECDSA P-256: creating
// all of them takes milliseconds.
package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Files names the PEM files in the PKI directory.
type Files struct{ Dir string }

// CACert is the CA every component trusts.
func (f Files) CACert() string { return filepath.Join(f.Dir, "ca.crt") }

// CAKey is the CA's key.
func (f Files) CAKey() string { return filepath.Join(f.Dir, "ca.key") }

// Cert is the certificate of name.
func (f Files) Cert(name string) string { return filepath.Join(f.Dir, name+".crt") }

// Key is the private key of name.
func (f Files) Key(name string) string { return filepath.Join(f.Dir, name+".key") }

// ServiceAccountKey signs service-account tokens; ServiceAccountPub verifies them.
func (f Files) ServiceAccountKey() string { return filepath.Join(f.Dir, "sa.key") }

// ServiceAccountPub is the public half of ServiceAccountKey.
func (f Files) ServiceAccountPub() string { return filepath.Join(f.Dir, "sa.pub") }

// Names of the certificates Generate creates.
const (
	APIServer           = "apiserver"
	APIServerKubeletCli = "apiserver-kubelet-client"
	Admin               = "admin"
	Kubelet             = "kubelet"
	// KubeProxy is kube-proxy's client identity, system:kube-proxy, which the API server's
	// bootstrap policy binds to the system:node-proxier role.
	KubeProxy = "kube-proxy"
)

// Options are the addresses and names certificates are valid for.
type Options struct {
	APIServerIPs   []net.IP
	APIServerNames []string
	KubeletIPs     []net.IP
	KubeletNames   []string
}

type signer struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// Generate writes a fresh CA and all certificates into f.Dir.
func Generate(f Files, o Options) error {
	if err := os.MkdirAll(f.Dir, 0o700); err != nil {
		return fmt.Errorf("create pki dir: %w", err)
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now().Add(-time.Hour)
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "rediskube-sandbox-ca"},
		NotBefore:             now,
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("create CA: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	if err := writeCert(f.CACert(), caDER); err != nil {
		return err
	}
	if err := writeKey(f.CAKey(), caKey); err != nil {
		return err
	}
	ca := signer{cert: caCert, key: caKey}

	issue := []struct {
		name   string
		cn     string
		orgs   []string
		usage  []x509.ExtKeyUsage
		ips    []net.IP
		dnsSAN []string
	}{
		{APIServer, "kube-apiserver", nil, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, o.APIServerIPs, o.APIServerNames},
		{APIServerKubeletCli, "kube-apiserver-kubelet-client", []string{"system:masters"}, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, nil, nil},
		{Admin, "sandbox-admin", []string{"system:masters"}, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, nil, nil},
		{Kubelet, "sandbox-kubelet", nil, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, o.KubeletIPs, o.KubeletNames},
		{KubeProxy, "system:kube-proxy", nil, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, nil, nil},
	}
	for _, c := range issue {
		if err := ca.issue(f, c.name, c.cn, c.orgs, c.usage, c.ips, c.dnsSAN); err != nil {
			return fmt.Errorf("issue %s certificate: %w", c.name, err)
		}
	}

	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	if err := writeKey(f.ServiceAccountKey(), saKey); err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return err
	}
	return os.WriteFile(f.ServiceAccountPub(), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o600)
}

func (s signer) issue(f Files, name, cn string, orgs []string, usage []x509.ExtKeyUsage, ips []net.IP, names []string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now().Add(-time.Hour)
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore:    now,
		NotAfter:     now.Add(5 * 365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  usage,
		IPAddresses:  ips,
		DNSNames:     names,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, s.cert, &key.PublicKey, s.key)
	if err != nil {
		return err
	}
	if err := writeCert(f.Cert(name), der); err != nil {
		return err
	}
	return writeKey(f.Key(name), key)
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	return n
}

func writeCert(path string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600)
}
