package redis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Client talks to one Redis node over a small connection pool. Get it from a Pool.
// All methods are safe for concurrent use.
type Client struct {
	addr      string
	auth      Auth
	rdb       *goredis.Client
	opts      Options
	slowMu    sync.Mutex
	slow      *goredis.Client // for MIGRATE, whose duration depends on the data moved
	closed    bool
	commands  atomic.Uint64
	poolTotal *atomic.Uint64
	lastUsed  atomic.Int64 // Unix nanoseconds
	// orUser: new connections log in as auth.OrUsername, the other user having been refused.
	orUser atomic.Bool
}

func newClient(addr string, auth Auth, opts Options, poolTotal *atomic.Uint64) *Client {
	c := &Client{addr: addr, auth: auth, opts: opts, poolTotal: poolTotal}
	c.rdb = goredis.NewClient(c.goRedisOptions())
	c.rdb.AddHook(commandHook{c})
	c.touch()
	return c
}

// goRedisOptions are the options of this client's connections: with a second user to log in
// as, each new connection asks which user is current.
func (c *Client) goRedisOptions() *goredis.Options {
	o := newGoRedisOptions(c.addr, c.auth, c.opts)
	if c.auth.OrUsername != "" {
		o.Username, o.Password = "", ""
		o.CredentialsProviderContext = func(ctx context.Context) (string, string, error) {
			orUser := c.orUser.Load()
			if a := loginAttemptOf(ctx, c); a != nil {
				a.asOrUser = orUser
			}
			if orUser {
				return c.auth.OrUsername, c.auth.Password, nil
			}
			return c.auth.Username, c.auth.Password, nil
		}
	}
	return o
}

// loginAttempt follows, through the context of one command (or pipeline), the login of the
// connection it waits for: go-redis logs a new connection in (HELLO, then AUTH if HELLO
// failed) with the command's context before writing the command, and a refused login
// fails the command unsent, the connection discarded.
type loginAttempt struct {
	client *Client
	// asOrUser: the last login tried auth.OrUsername.
	asOrUser bool
	// refused is the last login's refusal, nil when it was not refused.
	refused error
}

type loginAttemptKey struct{}

func (c *Client) withLoginAttempt(ctx context.Context) (context.Context, *loginAttempt) {
	a := &loginAttempt{client: c}
	return context.WithValue(ctx, loginAttemptKey{}, a), a
}

func loginAttemptOf(ctx context.Context, c *Client) *loginAttempt {
	if a, ok := ctx.Value(loginAttemptKey{}).(*loginAttempt); ok && a.client == c {
		return a
	}
	return nil
}

// loggedIn records the outcome of a connection's login (its HELLO or AUTH). A refusal
// switches new connections to the other user: the pod has not loaded (or no longer has) the
// user tried. Away from the user tried rather than a toggle, so that concurrent refusals of
// one user, or HELLO and AUTH both refused, switch once. Connections already logged in stay
// as they are.
func (c *Client) loggedIn(ctx context.Context, err error) {
	a := loginAttemptOf(ctx, c)
	if a == nil {
		return
	}
	if !IsAuthError(err) {
		a.refused = nil
		return
	}
	a.refused = err
	if c.auth.OrUsername != "" {
		c.orUser.CompareAndSwap(a.asOrUser, !a.asOrUser)
	}
}

// loginRefused reports whether err is the refusal of the login of the connection the command
// waited for, which means the command was never sent. A refusal Redis replied to the command
// itself (NOAUTH on a connection logged in earlier) is another error value.
func (a *loginAttempt) loginRefused(err error) bool {
	return a.refused != nil && errors.Is(err, a.refused)
}

// retriesRefusedLogin reports whether a command whose login was refused is worth sending once
// more: the refusal switched new connections to the second user.
func (a *loginAttempt) retriesRefusedLogin(err error) bool {
	return a.client.auth.OrUsername != "" && a.loginRefused(err)
}

// Addr is the "host:port" this client talks to.
func (c *Client) Addr() string { return c.addr }

// CommandCount is the number of commands this client sent, connection set-up included.
func (c *Client) CommandCount() uint64 { return c.commands.Load() }

func (c *Client) count(args []any) {
	c.commands.Add(1)
	if c.poolTotal != nil {
		c.poolTotal.Add(1)
	}
	c.touch()
	if c.opts.OnCommand != nil {
		name, sub := commandName(args)
		switch {
		case name == "cluster" || name == "config" || name == "client" || name == "sentinel":
			name += " " + sub
		case name == "replicaof" && sub == "no":
			name = "replicaof no one" // a promotion, told apart from re-pointing a replica
		}
		c.opts.OnCommand(c.addr, name)
	}
}

func (c *Client) touch()                  { c.lastUsed.Store(time.Now().UnixNano()) }
func (c *Client) lastUsedTime() time.Time { return time.Unix(0, c.lastUsed.Load()) }

func (c *Client) close() error {
	c.slowMu.Lock()
	c.closed = true
	slow := c.slow
	c.slowMu.Unlock()
	err := c.rdb.Close()
	if slow != nil {
		err = errors.Join(err, slow.Close())
	}
	return err
}

// slowClient is a one-connection client, created on first use, whose reads are bounded
// by the caller's context rather than the read timeout.
func (c *Client) slowClient() (*goredis.Client, error) {
	c.slowMu.Lock()
	defer c.slowMu.Unlock()
	if c.closed {
		return nil, goredis.ErrClosed
	}
	if c.slow == nil {
		opts := c.goRedisOptions()
		opts.ReadTimeout = slowCommandCap
		opts.PoolSize = 1
		opts.PipelineReadBufferSize = migrationBufferSize
		opts.PipelineWriteBufferSize = migrationBufferSize
		c.slow = goredis.NewClient(opts)
		c.slow.AddHook(commandHook{c})
	}
	return c.slow, nil
}

// slowCommandCap bounds a slow command even when its context has no deadline.
const slowCommandCap = 10 * time.Minute

// Error is a failed command: the node's address, the command, and the cause, which
// errors.Is/As see through.
type Error struct {
	Addr    string
	Command string
	Err     error
}

func (e *Error) Error() string { return "redis " + e.Addr + ": " + e.Command + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

func (c *Client) wrap(command string, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Addr: c.addr, Command: command, Err: err}
}

// IsServerError reports whether err is an error reply from Redis ("ERR ...", "MOVED ..."),
// as opposed to a network failure or timeout.
func IsServerError(err error) bool {
	var re goredis.Error
	return errors.As(err, &re) && !errors.Is(err, goredis.Nil)
}

// IsBusyError reports whether err is Redis's BUSY reply: the server runs a script, a function
// or a module command past its busy-reply-threshold and answers every other command with it
// (SCRIPT KILL and SHUTDOWN NOSAVE aside) until that ends.
func IsBusyError(err error) bool {
	var re goredis.Error
	return errors.As(err, &re) && strings.HasPrefix(re.Error(), "BUSY ")
}

// IsAuthError reports whether err is Redis refusing the credentials: a wrong password, none
// given where one is required, or one given where none is configured.
func IsAuthError(err error) bool {
	var re goredis.Error
	if !errors.As(err, &re) {
		return false
	}
	msg := re.Error()
	for _, prefix := range []string{"NOAUTH", "WRONGPASS", "ERR invalid password", "ERR AUTH <password> called without any password", "ERR Client sent AUTH, but no password is set"} {
		if strings.HasPrefix(msg, prefix) {
			return true
		}
	}
	return false
}

// Ping checks that the node answers.
func (c *Client) Ping(ctx context.Context) error {
	return c.wrap("PING", c.rdb.Ping(ctx).Err())
}

// ClusterNodes returns the node's view of the cluster.
func (c *Client) ClusterNodes(ctx context.Context) (Topology, error) {
	text, err := c.rdb.ClusterNodes(ctx).Result()
	if err != nil {
		return Topology{}, c.wrap("CLUSTER NODES", err)
	}
	topo, err := ParseClusterNodes(text)
	return topo, c.wrap("CLUSTER NODES", err)
}

// ClusterShards returns the node's view of the cluster's shards (Redis 7.0+).
func (c *Client) ClusterShards(ctx context.Context) ([]Shard, error) {
	reply, err := c.rdb.Do(ctx, "cluster", "shards").Result()
	if err != nil {
		return nil, c.wrap("CLUSTER SHARDS", err)
	}
	shards, err := ParseClusterShards(reply)
	return shards, c.wrap("CLUSTER SHARDS", err)
}

// ClusterInfo returns the node's CLUSTER INFO.
func (c *Client) ClusterInfo(ctx context.Context) (ClusterInfo, error) {
	text, err := c.rdb.ClusterInfo(ctx).Result()
	if err != nil {
		return ClusterInfo{}, c.wrap("CLUSTER INFO", err)
	}
	info, err := ParseClusterInfo(text)
	return info, c.wrap("CLUSTER INFO", err)
}

// ClusterMyID returns the node's cluster ID.
func (c *Client) ClusterMyID(ctx context.Context) (string, error) {
	id, err := c.rdb.ClusterMyID(ctx).Result()
	if err != nil {
		return "", c.wrap("CLUSTER MYID", err)
	}
	id, err = parseNodeID(id)
	return id, c.wrap("CLUSTER MYID", err)
}

// ClusterMeet introduces the node at ip:port to this node's cluster. busPort 0 lets Redis
// assume port+10000.
func (c *Client) ClusterMeet(ctx context.Context, ip string, port, busPort int) error {
	const command = "CLUSTER MEET"
	if ip == "" || port <= 0 || port > 65535 || busPort < 0 || busPort > 65535 {
		return c.wrap(command, fmt.Errorf("invalid address %q port %d bus port %d", ip, port, busPort))
	}
	args := []any{"cluster", "meet", ip, port}
	if busPort != 0 {
		args = append(args, busPort)
	}
	return c.wrap(command, c.rdb.Do(ctx, args...).Err())
}

// ClusterAddSlotsRange assigns the slot ranges to this node (Redis 7.0+). Slots already
// assigned anywhere make the whole command fail.
func (c *Client) ClusterAddSlotsRange(ctx context.Context, ranges ...SlotRange) error {
	const command = "CLUSTER ADDSLOTSRANGE"
	if len(ranges) == 0 {
		return nil
	}
	args := []any{"cluster", "addslotsrange"}
	for _, r := range ranges {
		if !r.Valid() {
			return c.wrap(command, fmt.Errorf("invalid slot range %d-%d", r.Start, r.End))
		}
		args = append(args, r.Start, r.End)
	}
	return c.wrap(command, c.rdb.Do(ctx, args...).Err())
}

// ClusterAddSlots assigns the slot ranges to this node slot by slot (CLUSTER ADDSLOTS, every
// version; CLUSTER ADDSLOTSRANGE needs Redis 7.0). Slots already assigned anywhere make the
// whole command fail.
func (c *Client) ClusterAddSlots(ctx context.Context, ranges ...SlotRange) error {
	const command = "CLUSTER ADDSLOTS"
	if len(ranges) == 0 {
		return nil
	}
	args := []any{"cluster", "addslots"}
	for _, r := range ranges {
		if !r.Valid() {
			return c.wrap(command, fmt.Errorf("invalid slot range %d-%d", r.Start, r.End))
		}
		for slot := r.Start; slot <= r.End; slot++ {
			args = append(args, slot)
		}
	}
	return c.wrap(command, c.rdb.Do(ctx, args...).Err())
}

// ClusterReplicate makes this node a replica of masterID.
func (c *Client) ClusterReplicate(ctx context.Context, masterID string) error {
	const command = "CLUSTER REPLICATE"
	if _, err := parseNodeID(masterID); err != nil {
		return c.wrap(command, err)
	}
	return c.wrap(command, c.rdb.ClusterReplicate(ctx, masterID).Err())
}

// FailoverMode selects how CLUSTER FAILOVER proceeds.
type FailoverMode string

// Failover modes.
const (
	// FailoverDefault coordinates with the master and loses no acknowledged write.
	FailoverDefault FailoverMode = ""
	// FailoverForce does not wait for the master, for when it is unreachable; needs a majority of masters.
	FailoverForce FailoverMode = "force"
	// FailoverTakeover needs no agreement at all; last resort when most masters are gone.
	FailoverTakeover FailoverMode = "takeover"
)

// ClusterFailover asks this replica to take over its master. Redis replies at once; the
// switch completes asynchronously and shows in ClusterNodes.
func (c *Client) ClusterFailover(ctx context.Context, mode FailoverMode) error {
	command := "CLUSTER FAILOVER"
	args := []any{"cluster", "failover"}
	switch mode {
	case FailoverDefault:
	case FailoverForce, FailoverTakeover:
		command += " " + strings.ToUpper(string(mode))
		args = append(args, string(mode))
	default:
		return c.wrap(command, fmt.Errorf("unknown failover mode %q", mode))
	}
	return c.wrap(command, c.rdb.Do(ctx, args...).Err())
}

// ClusterForget removes nodeID from this node's table for 60 seconds; send it to every
// node to drop a node for good.
func (c *Client) ClusterForget(ctx context.Context, nodeID string) error {
	const command = "CLUSTER FORGET"
	if _, err := parseNodeID(nodeID); err != nil {
		return c.wrap(command, err)
	}
	return c.wrap(command, c.rdb.ClusterForget(ctx, nodeID).Err())
}

// ClusterBumpEpoch gives the node a config epoch greater than any it knows of, unless its
// own already is the greatest (bumped false): what it claims then wins over older claims in
// every other node's gossip, so a node that still maps one of its slots to the previous owner
// takes the new one.
func (c *Client) ClusterBumpEpoch(ctx context.Context) (bumped bool, err error) {
	const command = "CLUSTER BUMPEPOCH"
	reply, err := c.rdb.Do(ctx, "cluster", "bumpepoch").Text()
	if err != nil {
		return false, c.wrap(command, err)
	}
	return strings.HasPrefix(reply, "BUMPED"), nil
}

// ClusterCountKeysInSlot is the number of keys this node holds in slot.
func (c *Client) ClusterCountKeysInSlot(ctx context.Context, slot int) (int64, error) {
	const command = "CLUSTER COUNTKEYSINSLOT"
	if slot < 0 || slot > MaxSlot {
		return 0, c.wrap(command, fmt.Errorf("slot %d out of range", slot))
	}
	n, err := c.rdb.ClusterCountKeysInSlot(ctx, slot).Result()
	return n, c.wrap(command, err)
}

// ClusterGetKeysInSlot returns up to count keys this node holds in slot.
func (c *Client) ClusterGetKeysInSlot(ctx context.Context, slot, count int) ([]string, error) {
	const command = "CLUSTER GETKEYSINSLOT"
	if slot < 0 || slot > MaxSlot || count <= 0 {
		return nil, c.wrap(command, fmt.Errorf("slot %d out of range or count %d not positive", slot, count))
	}
	keys, err := c.rdb.ClusterGetKeysInSlot(ctx, slot, count).Result()
	return keys, c.wrap(command, err)
}

// SlotState is the subcommand of CLUSTER SETSLOT.
type SlotState string

// Slot states for ClusterSetSlot.
const (
	// SlotImporting: this node receives the slot from the given node.
	SlotImporting SlotState = "importing"
	// SlotMigrating: this node moves the slot to the given node.
	SlotMigrating SlotState = "migrating"
	// SlotNode: the slot belongs to the given node; ends a move.
	SlotNode SlotState = "node"
	// SlotStable: clear importing/migrating state; takes no node.
	SlotStable SlotState = "stable"
)

// ClusterSetSlot changes the state of slot on this node. nodeID is required except for
// SlotStable, where it must be empty.
func (c *Client) ClusterSetSlot(ctx context.Context, slot int, state SlotState, nodeID string) error {
	command := "CLUSTER SETSLOT " + strings.ToUpper(string(state))
	if slot < 0 || slot > MaxSlot {
		return c.wrap(command, fmt.Errorf("slot %d out of range", slot))
	}
	args := []any{"cluster", "setslot", slot, string(state)}
	switch state {
	case SlotImporting, SlotMigrating, SlotNode:
		if _, err := parseNodeID(nodeID); err != nil {
			return c.wrap(command, err)
		}
		args = append(args, nodeID)
	case SlotStable:
		if nodeID != "" {
			return c.wrap(command, fmt.Errorf("STABLE takes no node ID, got %q", nodeID))
		}
	default:
		return c.wrap(command, fmt.Errorf("unknown slot state %q", state))
	}
	return c.wrap(command, c.rdb.Do(ctx, args...).Err())
}

// MigrateOptions tune MigrateKeys.
type MigrateOptions struct {
	// BatchSize is the number of keys per MIGRATE (default 100).
	BatchSize int
	// Timeout is MIGRATE's own timeout for talking to the target (default 2s).
	Timeout time.Duration
	// BatchTimeout bounds one whole MIGRATE batch, copying included (default 1 minute).
	BatchTimeout time.Duration
	// Replace overwrites keys that already exist on the target.
	Replace bool
	// Auth are the target's credentials, when it requires some.
	Auth Auth
}

// MigrateKeys moves every key of slot from this node to the node at host:port, in
// batches of CLUSTER GETKEYSINSLOT + MIGRATE ... KEYS, until the slot is empty here. Set
// the slot MIGRATING here and IMPORTING on the target first, and assign it with SETSLOT
// NODE afterwards. It returns the number of keys moved, also when it fails midway.
func (c *Client) MigrateKeys(ctx context.Context, slot int, host string, port int, opts MigrateOptions) (int, error) {
	const command = "MIGRATE"
	if slot < 0 || slot > MaxSlot {
		return 0, c.wrap(command, fmt.Errorf("slot %d out of range", slot))
	}
	if host == "" || port <= 0 || port > 65535 {
		return 0, c.wrap(command, fmt.Errorf("invalid target %q port %d", host, port))
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = 100
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Second
	}
	if opts.BatchTimeout <= 0 {
		opts.BatchTimeout = time.Minute
	}
	moved := 0
	for {
		if err := ctx.Err(); err != nil {
			return moved, c.wrap(command, err)
		}
		keys, err := c.ClusterGetKeysInSlot(ctx, slot, opts.BatchSize)
		if err != nil {
			return moved, err
		}
		if len(keys) == 0 {
			return moved, nil
		}
		args := migrateArgs(host, port, keys, opts)
		// MIGRATE blocks while it copies the batch, longer than a read timeout for big keys.
		// A "NOKEY" reply means the keys expired meanwhile: nothing left to move of them.
		slow, err := c.slowClient()
		if err == nil {
			batchCtx, cancel := context.WithTimeout(ctx, opts.BatchTimeout)
			err = slow.Do(batchCtx, args...).Err()
			cancel()
		}
		if err != nil {
			return moved, c.wrap(fmt.Sprintf("MIGRATE slot %d to %s", slot, net.JoinHostPort(host, strconv.Itoa(port))), err)
		}
		moved += len(keys)
	}
}

// Info returns INFO section ("" for the default sections) as a flat key → value map.
func (c *Client) Info(ctx context.Context, section string) (map[string]string, error) {
	command := "INFO"
	cmd := c.rdb.Info(ctx)
	if section != "" {
		command += " " + section
		cmd = c.rdb.Info(ctx, section)
	}
	text, err := cmd.Result()
	if err != nil {
		return nil, c.wrap(command, err)
	}
	return ParseInfo(text), nil
}

// ConfigGet returns the parameters matching pattern.
func (c *Client) ConfigGet(ctx context.Context, pattern string) (map[string]string, error) {
	values, err := c.rdb.ConfigGet(ctx, pattern).Result()
	return values, c.wrap("CONFIG GET "+pattern, err)
}

// ConfigSet sets one parameter at run time.
func (c *Client) ConfigSet(ctx context.Context, parameter, value string) error {
	return c.wrap("CONFIG SET "+parameter, c.rdb.ConfigSet(ctx, parameter, value).Err())
}

// AddUserPassword lets user (DefaultUser or OperatorUser) authenticate with password too,
// besides the password(s) it has (ACL SETUSER <user> >password): a password rotation has the
// server accept both until the old one is dropped (CONFIG SET requirepass for the default user,
// the re-rendered aclfile for the operator's). The password is in no error this returns.
func (c *Client) AddUserPassword(ctx context.Context, user, password string) error {
	command := "ACL SETUSER " + user
	if password == "" {
		return c.wrap(command, errors.New("empty password"))
	}
	return c.wrap(command, c.rdb.Do(ctx, "acl", "setuser", user, ">"+password).Err())
}

// EnsureOperatorUser makes the operator's own ACL user (OperatorUser) on, with every right,
// accepting the password of SHA-256 sha256Hex besides any it has.
func (c *Client) EnsureOperatorUser(ctx context.Context, sha256Hex string) error {
	if !isPasswordHash(sha256Hex) {
		return errors.New("ACL SETUSER: not a SHA-256 hex digest")
	}
	args := append([]any{"acl", "setuser", OperatorUser, "on", "#" + sha256Hex}, toAny(operatorUserRights)...)
	return c.wrap("ACL SETUSER "+OperatorUser, c.rdb.Do(ctx, args...).Err())
}

func toAny(words []string) []any {
	out := make([]any, len(words))
	for i, w := range words {
		out[i] = w
	}
	return out
}

// Role returns the node's replication role with offsets.
func (c *Client) Role(ctx context.Context) (Role, error) {
	reply, err := c.rdb.Do(ctx, "role").Result()
	if err != nil {
		return Role{}, c.wrap("ROLE", err)
	}
	role, err := ParseRole(reply)
	return role, c.wrap("ROLE", err)
}

// ReplicaOf makes the node (outside cluster mode) replicate host:port.
func (c *Client) ReplicaOf(ctx context.Context, host string, port int) error {
	const command = "REPLICAOF"
	if host == "" || port <= 0 || port > 65535 {
		return c.wrap(command, fmt.Errorf("invalid master %q port %d", host, port))
	}
	return c.wrap(command, c.rdb.ReplicaOf(ctx, host, strconv.Itoa(port)).Err())
}

// ReplicaOfNoOne promotes the node (outside cluster mode) to master, keeping its data.
func (c *Client) ReplicaOfNoOne(ctx context.Context) error {
	return c.wrap("REPLICAOF NO ONE", c.rdb.ReplicaOf(ctx, "no", "one").Err())
}

// PauseWrites holds every client's writes on the node for up to d (CLIENT PAUSE WRITE): reads
// go on, and a write waits, then runs on what the node is by then (a replica refuses it).
func (c *Client) PauseWrites(ctx context.Context, d time.Duration) error {
	const command = "CLIENT PAUSE"
	if d < time.Millisecond {
		return c.wrap(command, fmt.Errorf("invalid pause %s", d))
	}
	return c.wrap(command, c.rdb.Do(ctx, "client", "pause", strconv.FormatInt(d.Milliseconds(), 10), "write").Err())
}

// Unpause ends a CLIENT PAUSE before its time.
func (c *Client) Unpause(ctx context.Context) error {
	return c.wrap("CLIENT UNPAUSE", c.rdb.Do(ctx, "client", "unpause").Err())
}

// FailoverTo hands the master role of this node (outside cluster mode) to its replica at
// host:port without losing a write (FAILOVER TO): the master pauses writes, waits up to timeout
// for the replica to catch up, then the two swap roles. The command returns once the switch has
// started; ROLE on both shows when it is done.
func (c *Client) FailoverTo(ctx context.Context, host string, port int, timeout time.Duration) error {
	const command = "FAILOVER"
	if host == "" || port <= 0 || port > 65535 || timeout <= 0 {
		return c.wrap(command, fmt.Errorf("invalid target %q port %d timeout %s", host, port, timeout))
	}
	return c.wrap(command, c.rdb.Do(ctx, "failover", "to", host, strconv.Itoa(port), "timeout", strconv.FormatInt(timeout.Milliseconds(), 10)).Err())
}

// ACLLoad makes the node re-read its aclfile. Redis applies the whole file or, when it
// refuses a line, nothing, and says which line.
func (c *Client) ACLLoad(ctx context.Context) error {
	return c.wrap("ACL LOAD", c.rdb.Do(ctx, "acl", "load").Err())
}

// ACLUsers returns the names of the node's ACL users.
func (c *Client) ACLUsers(ctx context.Context) ([]string, error) {
	users, err := c.rdb.Do(ctx, "acl", "users").StringSlice()
	return users, c.wrap("ACL USERS", err)
}

// ACLAddPasswordHash adds a password, given as its SHA-256 in hex, to a user, keeping its
// other passwords and rules.
func (c *Client) ACLAddPasswordHash(ctx context.Context, user, sha256Hex string) error {
	if !isPasswordHash(sha256Hex) {
		return errors.New("ACL SETUSER: not a SHA-256 hex digest")
	}
	return c.wrap("ACL SETUSER", c.rdb.Do(ctx, "acl", "setuser", user, "#"+sha256Hex).Err())
}
