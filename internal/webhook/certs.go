package webhook

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"time"
)

// Keys of the certificate Secret: the usual TLS Secret keys, plus the CA's key, which only a
// Secret the operator made itself holds.
const (
	keyCACert  = "ca.crt"
	keyCAKey   = "ca.key"
	keyTLSCert = "tls.crt"
	keyTLSKey  = "tls.key"
)

// renewAtRemaining is the part of a certificate's lifetime left when it is renewed: early
// enough that every replica has loaded the new one long before the old one expires.
const renewAtRemaining = 3

// caLifetimes is how many serving-certificate lifetimes the CA lives: the CA bundle in the
// CRDs then changes rarely, while the serving certificate, cheap to swap, renews often.
const caLifetimes = 10

// keyPair is a certificate with its private key, both PEM.
type keyPair struct {
	certPEM []byte
	keyPEM  []byte
}

// certSet is what the certificate Secret holds. caBundle may hold, after the CA's own
// certificate, the certificate of the CA before it, still trusted while serving certificates
// it signed may be in use.
type certSet struct {
	caBundle []byte
	caKey    []byte
	serving  keyPair
}

func (s certSet) data() map[string][]byte {
	return map[string][]byte{keyCACert: s.caBundle, keyCAKey: s.caKey, keyTLSCert: s.serving.certPEM, keyTLSKey: s.serving.keyPEM}
}

func certSetFrom(data map[string][]byte) certSet {
	return certSet{caBundle: data[keyCACert], caKey: data[keyCAKey], serving: keyPair{certPEM: data[keyTLSCert], keyPEM: data[keyTLSKey]}}
}

// newCA makes a self-signed CA valid for validity from now.
func newCA(now time.Time, validity time.Duration) (keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return keyPair{}, fmt.Errorf("generate CA key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return keyPair{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: fmt.Sprintf("redis-operator-webhook-ca@%d", now.Unix())},
		NotBefore:             now.Add(-backdate(validity)),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return keyPair{}, fmt.Errorf("sign CA certificate: %w", err)
	}
	return encodePair(der, key)
}

// newServingCert makes a serving certificate for hosts (DNS names or IPs) signed by ca.
func newServingCert(ca keyPair, hosts []string, now time.Time, validity time.Duration) (keyPair, error) {
	caCert, caKey, err := parsePair(ca)
	if err != nil {
		return keyPair{}, fmt.Errorf("read CA: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return keyPair{}, fmt.Errorf("generate serving key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return keyPair{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: hosts[0]},
		NotBefore:    now.Add(-backdate(validity)),
		NotAfter:     now.Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return keyPair{}, fmt.Errorf("sign serving certificate: %w", err)
	}
	return encodePair(der, key)
}

// backdate is how long before its issue a certificate is valid from, for clocks a little
// behind the operator's: a twentieth of its validity, at most five minutes.
func backdate(validity time.Duration) time.Duration {
	return min(validity/20, 5*time.Minute)
}

func newSerial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("generate serial number: %w", err)
	}
	return serial, nil
}

func encodePair(der []byte, key *ecdsa.PrivateKey) (keyPair, error) {
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return keyPair{}, fmt.Errorf("encode key: %w", err)
	}
	return keyPair{
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

func parsePair(p keyPair) (*x509.Certificate, any, error) {
	pair, err := tls.X509KeyPair(p.certPEM, p.keyPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("parse key pair: %w", err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, nil, fmt.Errorf("parse certificate: %w", err)
	}
	return cert, pair.PrivateKey, nil
}

// parseCerts reads every certificate of a PEM bundle.
func parseCerts(bundle []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for rest := bundle; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse certificate: %w", err)
		}
		certs = append(certs, cert)
	}
	if len(certs) == 0 {
		return nil, errors.New("no certificate in PEM data")
	}
	return certs, nil
}

// dueForRenewal tells whether a certificate has less than a third of its lifetime left.
func dueForRenewal(cert *x509.Certificate, now time.Time) bool {
	lifetime := cert.NotAfter.Sub(cert.NotBefore)
	return cert.NotAfter.Sub(now) < lifetime/renewAtRemaining
}

// renewalTime is when dueForRenewal turns true.
func renewalTime(cert *x509.Certificate) time.Time {
	return cert.NotAfter.Add(-cert.NotAfter.Sub(cert.NotBefore) / renewAtRemaining)
}

// problem says why a certificate set cannot serve hosts at now (or must be renewed), or ""
// when it is good. caRenew is true when the CA itself must be replaced.
func (s certSet) problem(hosts []string, now time.Time) (reason string, caRenew bool) {
	cas, err := parseCerts(s.caBundle)
	if err != nil {
		return "no CA certificate: " + err.Error(), true
	}
	ca := keyPair{certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cas[0].Raw}), keyPEM: s.caKey}
	if _, _, err := parsePair(ca); err != nil {
		return "CA key unusable: " + err.Error(), true
	}
	if dueForRenewal(cas[0], now) {
		return "CA certificate due for renewal", true
	}
	serving, _, err := parsePair(s.serving)
	if err != nil {
		return "serving certificate unusable: " + err.Error(), false
	}
	if dueForRenewal(serving, now) {
		return "serving certificate due for renewal", false
	}
	if err := serving.CheckSignatureFrom(cas[0]); err != nil {
		return "serving certificate not signed by the CA", false
	}
	for _, h := range hosts {
		if serving.VerifyHostname(h) != nil {
			return "serving certificate does not name " + h, false
		}
	}
	return "", false
}

// renew makes the next certificate set: a new serving certificate, signed by a new CA when
// caRenew (or when the old one is unusable). The bundle keeps the previous CA while it is
// valid, so that the serving certificate still in use stays trusted until replaced.
func (s certSet) renew(hosts []string, caRenew bool, now time.Time, validity time.Duration) (certSet, error) {
	next := certSet{caBundle: s.caBundle, caKey: s.caKey}
	if caRenew {
		ca, err := newCA(now, caLifetimes*validity)
		if err != nil {
			return certSet{}, err
		}
		next.caBundle, next.caKey = ca.certPEM, ca.keyPEM
		if old, err := parseCerts(s.caBundle); err == nil && now.Before(old[0].NotAfter) {
			next.caBundle = append(slices.Clone(ca.certPEM), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: old[0].Raw})...)
		}
	}
	cas, err := parseCerts(next.caBundle)
	if err != nil {
		return certSet{}, err
	}
	signer := keyPair{certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cas[0].Raw}), keyPEM: next.caKey}
	if next.serving, err = newServingCert(signer, hosts, now, validity); err != nil {
		return certSet{}, err
	}
	// Drop CAs of the bundle that have expired: nothing they signed can be served any more.
	var kept []byte
	for _, c := range cas {
		if now.Before(c.NotAfter) {
			kept = append(kept, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
		}
	}
	next.caBundle = kept
	return next, nil
}
