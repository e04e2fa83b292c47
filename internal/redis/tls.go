package redis

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"time"
)

// TLSMaterial is what a resource's TLS Secret holds, in PEM: the CA bundle that signs the
// servers' certificates (old and new CA during a CA change) and the certificate and key the
// pods serve, which the operator also presents as its client certificate.
type TLSMaterial struct {
	CA, Cert, Key []byte
}

// Hash is a digest of the CA bundle and the certificate, the public parts: it changes with
// every renewal and CA change, and says nothing of the key.
func (m TLSMaterial) Hash() string {
	h := sha256.New()
	h.Write(m.CA)
	h.Write([]byte{0})
	h.Write(m.Cert)
	return hex.EncodeToString(h.Sum(nil))
}

// Leaf is the first certificate of Cert.
func (m TLSMaterial) Leaf() (*x509.Certificate, error) {
	block, _ := pem.Decode(m.Cert)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("the certificate is not PEM")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse certificate: %w", err)
	}
	return cert, nil
}

// NewTLSConfig is the client TLS configuration for the pods of one resource. The chain the
// server presents is verified against the CA bundle (and must be valid now); the server name
// is not checked, because the operator dials pods by IP address, which changes with every
// restart and which no certificate names. The certificate and key are checked to be a pair
// but not presented: during a CA change a pod that has not reloaded yet would refuse a
// certificate of the new CA, and the operator could not reach it to make it reload. It
// authenticates with the password, as Redis with tls-auth-clients optional allows.
func NewTLSConfig(m TLSMaterial) (*tls.Config, error) {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(m.CA) {
		return nil, errors.New("the CA bundle holds no PEM certificate")
	}
	if _, err := tls.X509KeyPair(m.Cert, m.Key); err != nil {
		return nil, fmt.Errorf("certificate and key: %w", err)
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		// The standard verification checks a host name; VerifyConnection below checks the
		// chain without one.
		InsecureSkipVerify: true, //nolint:gosec // G402: the chain is verified in VerifyConnection
		VerifyConnection: func(cs tls.ConnectionState) error {
			return verifyChain(cs.PeerCertificates, roots)
		},
	}, nil
}

// verifyChain verifies the server's certificate, with the intermediates it sent, against roots.
func verifyChain(peer []*x509.Certificate, roots *x509.CertPool) error {
	if len(peer) == 0 {
		return errors.New("tls: the server sent no certificate")
	}
	intermediates := x509.NewCertPool()
	for _, c := range peer[1:] {
		intermediates.AddCert(c)
	}
	_, err := peer[0].Verify(x509.VerifyOptions{
		Roots:         roots,
		Intermediates: intermediates,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	if err != nil {
		return fmt.Errorf("tls: server certificate: %w", err)
	}
	return nil
}

// ServedCertificate opens a new TLS connection to the endpoint, verified with its TLS
// settings, and returns the certificate the server presents: after a reload it tells whether
// the process serves the new certificate. It sends no command.
func ServedCertificate(ctx context.Context, ep Endpoint, timeout time.Duration) (*x509.Certificate, error) {
	if ep.TLS == nil {
		return nil, fmt.Errorf("redis endpoint %s: no TLS settings", ep.Address())
	}
	if err := ep.validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	d := tls.Dialer{NetDialer: &net.Dialer{}, Config: ep.TLS}
	conn, err := d.DialContext(ctx, "tcp", ep.Address())
	if err != nil {
		return nil, fmt.Errorf("tls handshake with %s: %w", ep.Address(), err)
	}
	// The connection was only for the handshake.
	defer func() { _ = conn.Close() }()
	state := conn.(*tls.Conn).ConnectionState()
	if len(state.PeerCertificates) == 0 {
		return nil, fmt.Errorf("tls handshake with %s: no certificate", ep.Address())
	}
	return state.PeerCertificates[0], nil
}

// ReloadTLS makes Redis read its certificate, key and CA files again, their paths unchanged
// and their content renewed: setting tls-cert-file, even to the same path, rebuilds the whole
// TLS context from the files (Redis 6 and later), which new connections use; connections
// already open keep theirs. Sentinels do not support it.
func (c *Client) ReloadTLS(ctx context.Context, certFile string) error {
	const command = "CONFIG SET tls-cert-file"
	if certFile == "" {
		return c.wrap(command, errors.New("no path"))
	}
	return c.wrap(command, c.rdb.ConfigSet(ctx, "tls-cert-file", certFile).Err())
}
