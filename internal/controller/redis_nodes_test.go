package controller

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/rediskube/redis-operator/internal/redis"
)

// fakeRedis stands in for the Redis and sentinel nodes of a unit test: the phases dial it
// through Dependencies.RedisNodes and each node, by address ("10.0.0.1:6379"), answers from
// what the test set and records the commands it was sent. An address with no node refuses
// the dial, as a pod whose Redis is not listening.
type fakeRedis map[string]*fakeNode

var _ RedisDialer = fakeRedis{}

func (f fakeRedis) Node(ep redis.Endpoint) (RedisNode, error) {
	n, ok := f[ep.Address()]
	if !ok {
		return nil, fmt.Errorf("dial %s: %w", ep.Address(), errConnectionRefused)
	}
	return n, nil
}

// errConnectionRefused is the fake's dial failure.
var errConnectionRefused = errors.New("connection refused")

// fakeServerError is an error reply of the fake Redis ("-ERR ..."): redis.IsServerError
// tells it from a broken connection, as it does go-redis's.
type fakeServerError string

func (e fakeServerError) Error() string { return string(e) }

// RedisError marks a reply of the server, as go-redis's errors do.
func (fakeServerError) RedisError() {}

// fakeNode is one Redis or sentinel. Its zero value answers PING and holds no config.
type fakeNode struct {
	// down, when set, is the error of every command: a node that stopped answering.
	down error
	// config is what CONFIG GET answers and CONFIG SET changes; refuseSet, the parameters
	// whose CONFIG SET fails with the error given.
	config    map[string]string
	refuseSet map[string]error
	// masters is where the sentinel monitors each group's master ("host:port"), replicas the
	// hosts of the replicas it knows; a group absent from masters is unknown to it.
	masters  map[string]string
	replicas map[string][]string
	// quorum is SENTINEL CKQUORUM's answer.
	quorum error
	// sent is every command received, lowercase, with its arguments.
	sent []string
}

var _ RedisNode = (*fakeNode)(nil)

func (n *fakeNode) receive(command ...string) error {
	n.sent = append(n.sent, strings.Join(command, " "))
	return n.down
}

func (n *fakeNode) Ping(context.Context) error { return n.receive("ping") }

func (n *fakeNode) ConfigGet(_ context.Context, pattern string) (map[string]string, error) {
	if err := n.receive("config get", pattern); err != nil {
		return nil, err
	}
	out := map[string]string{}
	if value, ok := n.config[pattern]; ok {
		out[pattern] = value
	}
	return out, nil
}

func (n *fakeNode) ConfigSet(_ context.Context, parameter, value string) error {
	if err := n.receive("config set", parameter, value); err != nil {
		return err
	}
	if err := n.refuseSet[parameter]; err != nil {
		return err
	}
	if n.config == nil {
		n.config = map[string]string{}
	}
	n.config[parameter] = value
	return nil
}

func (n *fakeNode) SentinelMasterAddr(_ context.Context, group string) (string, int, bool, error) {
	if err := n.receive("sentinel get-master-addr-by-name", group); err != nil {
		return "", 0, false, err
	}
	addr, ok := n.masters[group]
	if !ok {
		return "", 0, false, nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, false, fmt.Errorf("fake master address %q: %w", addr, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return "", 0, false, fmt.Errorf("fake master port %q: %w", port, err)
	}
	return host, p, true, nil
}

func (n *fakeNode) SentinelReplicaHosts(_ context.Context, group string) ([]string, error) {
	if err := n.receive("sentinel replicas", group); err != nil {
		return nil, err
	}
	return n.replicas[group], nil
}

func (n *fakeNode) SentinelCkQuorum(_ context.Context, group string) error {
	if err := n.receive("sentinel ckquorum", group); err != nil {
		return err
	}
	return n.quorum
}
