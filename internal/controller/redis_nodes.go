package controller

import (
	"context"
	"crypto/x509"
	"fmt"
	"time"

	"github.com/rediskube/redis-operator/internal/redis"
)

// The seam between the phases and Redis. A phase takes the smallest interface that has the
// commands it sends, declared beside it (those below are shared by several phases; a
// feature's own, such as passwordHolder or aclFileLoader, sit in its file), so its unit tests
// hand it a fake that answers per endpoint and records what it was sent (redis_nodes_test.go),
// with no redis-server. *redis.Client has every one of them; the phases get it through
// Dependencies.redisNode, which tests redirect with Dependencies.RedisNodes.

// pinger is a node asked whether it answers: the health checks of standalone Redis and of
// sentinels that monitor nothing.
type pinger interface {
	Ping(ctx context.Context) error
}

// configEditor is a node whose run-time configuration is read and set (dynamic_config.go).
type configEditor interface {
	ConfigGet(ctx context.Context, pattern string) (map[string]string, error)
	ConfigSet(ctx context.Context, parameter, value string) error
}

// sentinelWatcher is a sentinel asked where it monitors a group's master and which replicas
// it knows (sentinelViewOf).
type sentinelWatcher interface {
	SentinelMasterAddr(ctx context.Context, group string) (host string, port int, known bool, err error)
	SentinelReplicaHosts(ctx context.Context, group string) ([]string, error)
}

// quorumChecker is a sentinel asked whether the sentinels together could authorize a failover.
type quorumChecker interface {
	SentinelCkQuorum(ctx context.Context, group string) error
}

// RedisNode is every command the phases that go through the seam send to one Redis or
// sentinel node: the union of their interfaces.
type RedisNode interface {
	pinger
	configEditor
	sentinelWatcher
	quorumChecker
	passwordHolder
	authPassHolder
	aclFileLoader
	tlsFilesReloader
	// The replication kind's (replication_*.go, sentinel_unstick.go).
	roleObserver
	replicaOfRunner
	failoverToRunner
	writePauser
	sentinelStateReader
	sentinelFailoverAsker
	downAfterSetter
	// The sentinels' TLS roll's (sentinel_tls.go).
	sentinelResetter
	// The cluster kind's (cluster_*.go).
	clusterObserver
	clusterInfoReader
	clusterStepRunner
	slotMigrator
	slotImporter
	slotKeyCounter
	clusterFailoverAsker
}

// The operator's nodes are the pool's clients: each must have every command of the seam.
var _ RedisNode = (*redis.Client)(nil)

// RedisDialer hands out the node at an endpoint. The operator's is the Redis pool
// (Dependencies.Redis); tests inject a fake through Dependencies.RedisNodes.
type RedisDialer interface {
	Node(ep redis.Endpoint) (RedisNode, error)
	// Evict drops the connections to the endpoint's address, whatever their login, so that
	// the next Node logs in anew (after an ACL LOAD changed the users).
	Evict(ep redis.Endpoint)
	// ServedCertificate is the certificate the endpoint shows in a TLS handshake of its own,
	// outside any connection Node hands out (redis.ServedCertificate).
	ServedCertificate(ctx context.Context, ep redis.Endpoint, timeout time.Duration) (*x509.Certificate, error)
}

// redisNode is the node at ep, from RedisNodes when set, from the Redis pool otherwise.
func (d *Dependencies) redisNode(ep redis.Endpoint) (RedisNode, error) {
	if d.RedisNodes != nil {
		node, err := d.RedisNodes.Node(ep)
		if err != nil {
			return nil, fmt.Errorf("redis node %s: %w", ep.Address(), err)
		}
		return node, nil
	}
	c, err := d.Redis.Client(ep)
	if err != nil {
		return nil, err // the pool names the address
	}
	return c, nil
}

// evictRedisNode drops the connections to ep's address, in RedisNodes when set, in the Redis
// pool otherwise.
func (d *Dependencies) evictRedisNode(ep redis.Endpoint) {
	if d.RedisNodes != nil {
		d.RedisNodes.Evict(ep)
		return
	}
	d.Redis.Evict(ep)
}

// servedCertificate is the certificate ep shows in a TLS handshake, from RedisNodes when set,
// from a handshake of its own otherwise.
func (d *Dependencies) servedCertificate(ctx context.Context, ep redis.Endpoint, timeout time.Duration) (*x509.Certificate, error) {
	if d.RedisNodes != nil {
		return d.RedisNodes.ServedCertificate(ctx, ep, timeout)
	}
	return redis.ServedCertificate(ctx, ep, timeout)
}
