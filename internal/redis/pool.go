package redis

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Options configure every client a Pool hands out. Zero values take the defaults below.
type Options struct {
	// DialTimeout bounds connecting (default 3s); dials are not retried, a reconcile retries.
	DialTimeout time.Duration
	// ReadTimeout and WriteTimeout bound each command (default 5s each). A context deadline
	// shortens them.
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
	// PoolSize is the number of connections kept per address (default 4).
	PoolSize int
	// ConnMaxIdleTime closes pooled connections unused this long (default 5m).
	ConnMaxIdleTime time.Duration
	// IdleClientTimeout closes a whole per-address client unused this long, so addresses of
	// deleted pods do not pile up (default 30m; negative disables).
	IdleClientTimeout time.Duration
	// Protocol is the RESP version, 2 or 3 (default 3).
	Protocol int
	// TLSConfig, when set, makes every connection use TLS.
	TLSConfig *tls.Config
	// OnCommand, when set, is called for every command sent, with the address and the
	// command name ("cluster nodes", "ping", "replicaof no one"...), e.g. to feed metrics.
	OnCommand func(addr, command string)
}

func (o Options) withDefaults() Options {
	if o.DialTimeout <= 0 {
		o.DialTimeout = 3 * time.Second
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = 5 * time.Second
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 5 * time.Second
	}
	if o.PoolSize <= 0 {
		o.PoolSize = 4
	}
	if o.ConnMaxIdleTime <= 0 {
		o.ConnMaxIdleTime = 5 * time.Minute
	}
	if o.IdleClientTimeout == 0 {
		o.IdleClientTimeout = 30 * time.Minute
	}
	if o.Protocol != 2 {
		o.Protocol = 3
	}
	return o
}

// Auth are the credentials of a Redis node; an empty Username means the default user.
type Auth struct {
	Username string
	Password string
	// OrUsername is a second user the same password logs in as, tried once Username is
	// refused: a pod that has not yet loaded the ACL file adding (or turning off) Username.
	// "" for none; DefaultUser names the default user.
	OrUsername string
}

// DefaultUser is the name of Redis's default user, for AUTH with a user name.
const DefaultUser = "default"

// ErrPoolClosed is returned by Pool.Client after Pool.Close.
var ErrPoolClosed = errors.New("redis client pool is closed")

type poolKey struct {
	addr string
	auth Auth
	tls  *tls.Config
}

// Pool hands out one Client per address and credentials and reuses it, so each Redis node
// gets one small connection pool however many reconciles talk to it. Build one in main and
// inject it. It is safe for concurrent use.
type Pool struct {
	opts     Options
	commands atomic.Uint64

	mu      sync.Mutex
	clients map[poolKey]*Client
	closed  bool
}

// NewPool returns an empty pool; clients are created on first use.
func NewPool(opts Options) *Pool {
	return &Pool{opts: opts.withDefaults(), clients: map[poolKey]*Client{}}
}

// Client returns the client for the endpoint, creating it on first use.
func (p *Pool) Client(ep Endpoint) (*Client, error) {
	if err := ep.validate(); err != nil {
		return nil, err
	}
	addr := ep.Address()
	key := poolKey{addr: addr, auth: ep.Auth, tls: ep.TLS}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, fmt.Errorf("redis client for %s: %w", addr, ErrPoolClosed)
	}
	stale := p.takeIdleLocked(time.Now(), p.opts.IdleClientTimeout, key)
	c, ok := p.clients[key]
	if !ok {
		opts := p.opts
		if ep.TLS != nil {
			opts.TLSConfig = ep.TLS
		}
		c = newClient(addr, ep.Auth, opts, &p.commands)
		p.clients[key] = c
	}
	c.touch()
	p.mu.Unlock()
	closeAll(stale)
	return c, nil
}

// Evict closes and forgets every client of the endpoint's address, whatever its credentials:
// call it when a pod is gone or its address was reused. It returns how many clients were closed.
func (p *Pool) Evict(ep Endpoint) int {
	addr := ep.Address()
	p.mu.Lock()
	var gone []*Client
	for k, c := range p.clients {
		if k.addr == addr {
			gone = append(gone, c)
			delete(p.clients, k)
		}
	}
	p.mu.Unlock()
	closeAll(gone)
	return len(gone)
}

// EvictTLS closes and forgets every client dialled with the TLS settings cfg: call it when a
// resource's certificates changed and cfg was replaced, so that no connection lingers on
// material no longer trusted. It returns how many clients were closed.
func (p *Pool) EvictTLS(cfg *tls.Config) int {
	if cfg == nil {
		return 0
	}
	p.mu.Lock()
	var gone []*Client
	for k, c := range p.clients {
		if k.tls == cfg {
			gone = append(gone, c)
			delete(p.clients, k)
		}
	}
	p.mu.Unlock()
	closeAll(gone)
	return len(gone)
}

// EvictIdle closes and forgets the clients not used for idleFor, and returns how many.
func (p *Pool) EvictIdle(idleFor time.Duration) int {
	p.mu.Lock()
	gone := p.takeIdleLocked(time.Now(), idleFor, poolKey{})
	p.mu.Unlock()
	closeAll(gone)
	return len(gone)
}

func (p *Pool) takeIdleLocked(now time.Time, idleFor time.Duration, keep poolKey) []*Client {
	if idleFor < 0 {
		return nil
	}
	var gone []*Client
	for k, c := range p.clients {
		if k != keep && now.Sub(c.lastUsedTime()) >= idleFor {
			gone = append(gone, c)
			delete(p.clients, k)
		}
	}
	return gone
}

// Addrs lists the addresses that have a client, for diagnostics and tests.
func (p *Pool) Addrs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for k := range p.clients {
		if !seen[k.addr] {
			seen[k.addr] = true
			out = append(out, k.addr)
		}
	}
	return out
}

// CommandCount is the number of commands sent through every client this pool ever
// created, evicted ones included. Benchmarks diff it around a reconcile.
func (p *Pool) CommandCount() uint64 { return p.commands.Load() }

// Close closes every client; Client fails afterwards.
func (p *Pool) Close() error {
	p.mu.Lock()
	p.closed = true
	var gone []*Client
	for k, c := range p.clients {
		gone = append(gone, c)
		delete(p.clients, k)
	}
	p.mu.Unlock()
	var errs []error
	for _, c := range gone {
		if err := c.close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func closeAll(clients []*Client) {
	for _, c := range clients {
		// A close error only means the connections were already broken; nothing to do.
		_ = c.close()
	}
}

// commandBufferSize is each connection's read and write buffer: a topology read's replies
// fit in a few of them.
const commandBufferSize = 4 << 10

// migrationBufferSize is the buffers of the connection that moves keys, whose pipelined
// MIGRATE batches carry up to thousands of key names.
const migrationBufferSize = 64 << 10

func newGoRedisOptions(addr string, auth Auth, o Options) *goredis.Options {
	return &goredis.Options{
		Addr:                  addr,
		Username:              auth.Username,
		Password:              auth.Password,
		Protocol:              o.Protocol,
		DialTimeout:           o.DialTimeout,
		ReadTimeout:           o.ReadTimeout,
		WriteTimeout:          o.WriteTimeout,
		ContextTimeoutEnabled: true,
		// Cluster commands are not all idempotent (FAILOVER, ADDSLOTSRANGE): fail fast and
		// let the next reconcile decide from a fresh topology.
		MaxRetries:      -1,
		DialerRetries:   1,
		PoolSize:        o.PoolSize,
		ConnMaxIdleTime: o.ConnMaxIdleTime,
		// The operator keeps a connection to every pod it manages, plus one for pipelines:
		// go-redis's default buffers (32 KiB, 128 KiB for pipelines, each way) would hold
		// ~320 KiB per pod, most of the operator's memory at a few hundred pods. Replies
		// longer than a buffer are still read whole; the slot-moving client asks for more.
		ReadBufferSize:          commandBufferSize,
		WriteBufferSize:         commandBufferSize,
		PipelineReadBufferSize:  commandBufferSize,
		PipelineWriteBufferSize: commandBufferSize,
		TLSConfig:               o.TLSConfig,
		// Plain Redis: no client library identity or vendor maintenance handshakes.
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	}
}

// commandHook counts commands and refuses, before anything is sent, any command that is
// not on the allow-list. It also sees the logins of new connections (HELLO, AUTH), which
// go-redis sends through the same hooks, and sends a command once more, as the second user,
// when its connection's login was refused.
type commandHook struct{ c *Client }

func (h commandHook) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h commandHook) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		if err := checkAllowed(cmd.Args()); err != nil {
			cmd.SetErr(err)
			return err
		}
		h.c.count(cmd.Args())
		if name, _ := commandName(cmd.Args()); name == "hello" || name == "auth" {
			err := next(ctx, cmd)
			h.c.loggedIn(ctx, err)
			return err
		}
		if h.c.auth.OrUsername == "" {
			return next(ctx, cmd) // one user: no one else to retry as
		}
		ctx, login := h.c.withLoginAttempt(ctx)
		err := next(ctx, cmd)
		if login.retriesRefusedLogin(err) {
			// Unsent, so sending it again is its first execution; once only, so that
			// credentials neither user accepts fail rather than loop.
			login.refused = nil
			h.c.count(cmd.Args())
			err = next(ctx, cmd)
		}
		return err
	}
}

func (h commandHook) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		for _, cmd := range cmds {
			if err := checkAllowed(cmd.Args()); err != nil {
				cmd.SetErr(err)
				return err
			}
		}
		for _, cmd := range cmds {
			h.c.count(cmd.Args())
		}
		ctx, login := h.c.withLoginAttempt(ctx)
		err := next(ctx, cmds)
		if login.retriesRefusedLogin(err) {
			login.refused = nil
			for _, cmd := range cmds {
				h.c.count(cmd.Args())
			}
			err = next(ctx, cmds)
		}
		if login.loginRefused(err) {
			// go-redis gives a pipeline's commands only errors that are not Redis replies, so
			// after a refused login they would read as empty successes.
			for _, cmd := range cmds {
				if cmd.Err() == nil {
					cmd.SetErr(err)
				}
			}
		}
		return err
	}
}
