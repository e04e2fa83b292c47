package redis

import (
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
)

// Endpoint is how to reach one Redis or sentinel process: where it listens, who to
// authenticate as, and with which TLS settings. Every connection the operator makes goes
// through one, so that addresses are joined in one place (IPv6 needs brackets) and the TLS
// settings of a resource travel with its addresses.
type Endpoint struct {
	// Host is an IP address (IPv6 without brackets) or a DNS name.
	Host string
	Port int
	Auth Auth
	// TLS, when set, overrides the pool's TLS settings for this endpoint; nil takes the pool's.
	TLS *tls.Config
}

// NewEndpoint is the endpoint of host:port with the given credentials and no TLS of its own.
func NewEndpoint(host string, port int, auth Auth) Endpoint {
	return Endpoint{Host: host, Port: port, Auth: auth}
}

// WithTLS is the same endpoint dialled with TLS settings cfg (nil: the pool's).
func (e Endpoint) WithTLS(cfg *tls.Config) Endpoint {
	e.TLS = cfg
	return e
}

// Address is "host:port", with an IPv6 host in brackets.
func (e Endpoint) Address() string { return net.JoinHostPort(e.Host, strconv.Itoa(e.Port)) }

// String is the address; credentials are never printed.
func (e Endpoint) String() string { return e.Address() }

// WithPort is the same process's endpoint on another port (a sentinel beside its Redis).
func (e Endpoint) WithPort(port int) Endpoint {
	e.Port = port
	return e
}

func (e Endpoint) validate() error {
	if e.Host == "" {
		return fmt.Errorf("redis endpoint %q: no host", e.Address())
	}
	if e.Port <= 0 || e.Port > 65535 {
		return fmt.Errorf("redis endpoint %q: port %d out of range", e.Address(), e.Port)
	}
	return nil
}
