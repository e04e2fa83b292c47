package kubectlredis

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	corev1 "k8s.io/api/core/v1"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/redis"
)

// redisConn sends any command to one Redis (or sentinel) process. The operator's own client
// (internal/redis) refuses every command outside its allow-list, by design; report and cli
// send what the person at the keyboard asks for, with the rights the password gives, so they
// use go-redis directly.
type redisConn interface {
	Do(ctx context.Context, args ...any) *goredis.Cmd
	Close() error
}

// podConn is a go-redis client over a port-forward; closing it ends the forward too.
type podConn struct {
	*goredis.Client
	stop func()
}

func (c podConn) Close() error {
	err := c.Client.Close()
	c.stop()
	return err
}

// connectPod reaches Redis on the pod, as status does: through the API server's
// port-forward, with the resource's password (the sentinels' own for a replication's
// sentinels) and its TLS settings.
func (p Plugin) connectPod(ctx context.Context, res *resource, pod *corev1.Pod) (redisConn, error) {
	if p.dial != nil {
		return p.dial(ctx, res, pod)
	}
	return p.dialPod(ctx, res, pod)
}

func (p Plugin) dialPod(ctx context.Context, res *resource, pod *corev1.Pod) (redisConn, error) {
	if pod.Status.Phase != corev1.PodRunning {
		return nil, fmt.Errorf("pod %s is %s", pod.Name, dash(string(pod.Status.Phase)))
	}
	port, secret, sentinel := podPort(res, pod)
	password, err := p.password(ctx, secret)
	if err != nil {
		return nil, err
	}
	tlsConfig, err := p.tlsConfig(ctx, res.tls)
	if err != nil {
		return nil, err
	}
	local, stop, err := forwarder{config: p.Config, kube: p.Kube}.forward(ctx, pod.Namespace, pod.Name, port)
	if err != nil {
		return nil, err
	}
	c, err := dialRedis(ctx, net.JoinHostPort("127.0.0.1", strconv.Itoa(local)), password, !sentinel, tlsConfig)
	if err != nil {
		stop()
		return nil, fmt.Errorf("pod %s: %w", pod.Name, err)
	}
	return podConn{Client: c, stop: stop}, nil
}

// podPort is the port a pod's process listens on, and the password Secret it requires.
func podPort(res *resource, pod *corev1.Pod) (port int, secret *v1beta2.ExistingPasswordSecret, sentinel bool) {
	if pod.Labels[builder.LabelSetupType] != builder.SetupSentinel {
		return builder.DefaultRedisPort, res.secret, false
	}
	if res.kind == "RedisReplication" {
		return builder.DefaultSentinelPort, res.sentinelSecret, true
	}
	return builder.DefaultSentinelPort, res.secret, true
}

// dialRedis connects to addr and checks the login with PING. With a password, a Redis whose
// ACL file turns the default user off is logged in to as the operator's own user, as status
// does (orOperatorUser; sentinels have no ACL users).
func dialRedis(ctx context.Context, addr, password string, orOperatorUser bool, tlsConfig *tls.Config) (*goredis.Client, error) {
	c := goredis.NewClient(cliOptions(addr, "", password, tlsConfig))
	err := ping(ctx, c)
	if err != nil && password != "" && orOperatorUser && redis.IsAuthError(err) {
		_ = c.Close()
		c = goredis.NewClient(cliOptions(addr, redis.OperatorUser, password, tlsConfig))
		err = ping(ctx, c)
	}
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

func ping(ctx context.Context, c *goredis.Client) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return c.Ping(ctx).Err()
}

// cliOptions: RESP2, as redis-cli speaks by default, so that replies print as it prints them;
// one connection, no retry (a command sent twice may not be idempotent), no client identity.
func cliOptions(addr, username, password string, tlsConfig *tls.Config) *goredis.Options {
	return &goredis.Options{
		Addr:                     addr,
		Username:                 username,
		Password:                 password,
		Protocol:                 2,
		PoolSize:                 1,
		MaxRetries:               -1,
		DialTimeout:              10 * time.Second,
		ReadTimeout:              time.Minute,
		ContextTimeoutEnabled:    true,
		TLSConfig:                tlsConfig,
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	}
}
