package controller

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"net"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rediskube/redis-operator/internal/redis"
)

// fakeRedis stands in for the Redis and sentinel nodes of a unit test: the phases dial it
// through Dependencies.RedisNodes and each node, by address ("10.0.0.1:6379"), answers from
// what the test set and records the commands it was sent. An address with no node refuses
// the dial, as a pod whose Redis is not listening.
type fakeRedis map[string]*fakeNode

var _ RedisDialer = fakeRedis{}

// Node is a connection to the node at the endpoint, logged in with the endpoint's password.
func (f fakeRedis) Node(ep redis.Endpoint) (RedisNode, error) {
	n, ok := f[ep.Address()]
	if !ok {
		return nil, fmt.Errorf("dial %s: %w", ep.Address(), errConnectionRefused)
	}
	return &fakeConn{node: n, addr: ep.Address(), password: ep.Auth.Password}, nil
}

// Evict notes that the node's connections were dropped: the next ones log in anew.
func (f fakeRedis) Evict(ep redis.Endpoint) {
	if n, ok := f[ep.Address()]; ok {
		n.evictions++
	}
}

// ServedCertificate is the certificate the node serves, recorded as a "tls handshake".
func (f fakeRedis) ServedCertificate(_ context.Context, ep redis.Endpoint, _ time.Duration) (*x509.Certificate, error) {
	n, ok := f[ep.Address()]
	if !ok {
		return nil, fmt.Errorf("tls handshake with %s: %w", ep.Address(), errConnectionRefused)
	}
	n.sent = append(n.sent, "tls handshake")
	if n.down != nil {
		return nil, n.down
	}
	if n.servedCert == nil {
		return nil, fmt.Errorf("tls handshake with %s: the node serves no TLS", ep.Address())
	}
	return n.servedCert, nil
}

// errConnectionRefused is the fake's dial failure.
var errConnectionRefused = errors.New("connection refused")

// fakeServerError is an error reply of the fake Redis ("-ERR ..."): redis.IsServerError
// tells it from a broken connection, as it does go-redis's.
type fakeServerError string

func (e fakeServerError) Error() string { return string(e) }

// RedisError marks a reply of the server, as go-redis's errors do.
func (fakeServerError) RedisError() {}

// errWrongPass is Redis's refusal of a password.
const errWrongPass = fakeServerError("WRONGPASS invalid username-password pair or user is disabled.")

// fakeNode is one Redis or sentinel. Its zero value requires no password, answers PING and
// holds no config. A node is used by one goroutine at a time (the phases reach distinct
// nodes side by side, never one node twice at once); journal is shared, so is not used by
// tests whose phases run in parallel.
type fakeNode struct {
	// down, when set, is the error of every command: a node that stopped answering.
	down error
	// passwords are those the default user logs in with; none: any login is accepted.
	// CONFIG SET requirepass leaves the one set, ACL SETUSER default >p adds p.
	passwords []string
	// config is what CONFIG GET answers and CONFIG SET changes; refuseSet, the parameters
	// whose CONFIG SET fails with the error given.
	config    map[string]string
	refuseSet map[string]error
	// masters is where the sentinel monitors each group's master ("host:port"); a group
	// absent from it is unknown to the sentinel. masterState is the state it keeps of the
	// group's master (SENTINEL MASTER's fields), replicas that of each replica it knows
	// (SENTINEL REPLICAS's, "ip" first of all). authPass is the password it logs in to each
	// group's pods with.
	masters     map[string]string
	masterState map[string]map[string]string
	replicas    map[string][]map[string]string
	authPass    map[string]string
	// quorum is SENTINEL CKQUORUM's answer.
	quorum error
	// aclUsers are the users the node has loaded, aclFile those ACL LOAD reads from its
	// aclfile (the Secret volume as the kubelet last refreshed it); loadErr, when set, is
	// ACL LOAD's answer.
	aclUsers []string
	aclFile  []string
	loadErr  error
	// evictions counts the times the operator dropped its connections to the node.
	evictions int
	// servedCert is the certificate the node serves, certFiles the one its mounted files hold
	// (the Secret volume as the kubelet last refreshed it), which it serves once it reloads
	// them.
	servedCert *x509.Certificate
	certFiles  *x509.Certificate
	// roles are ROLE's answers in turn, the last one repeated (none: a master at offset 0),
	// as a replica's offset moves on or a failover promotes it. REPLICAOF makes the node a
	// replica of the master named (link "connect") and REPLICAOF NO ONE a master, at the
	// offset it held, as Redis does.
	roles []redis.Role
	// replicationInfo is what INFO replication answers (master_repl_offset,
	// master_link_down_since_seconds, slave0...).
	replicationInfo map[string]string
	// clusterNodes is CLUSTER NODES's answer, as Redis writes it (redis.ParseClusterNodes reads
	// it); clusterInfo CLUSTER INFO's; serverInfo INFO server's text ("": a Redis 7.2.4).
	clusterNodes string
	clusterInfo  redis.ClusterInfo
	serverInfo   string
	// keys is how many keys the node holds in each slot: COUNTKEYSINSLOT answers it and
	// MIGRATE sends them away.
	keys map[int]int64
	// refuse are the commands ("replicaof", "failover", "client pause", "sentinel failover",
	// "cluster meet", "cluster setslot node"...) the node answers with the error given, after
	// recording them; CLUSTER SETSLOT's go by their state, as the phases name what refused.
	refuse map[string]error
	// sent is every command received, lowercase, with its arguments.
	sent []string
	// journal, when set, records every command of the nodes that share it, after the
	// address of the node ("10.0.0.1:6379 ping"): the order across nodes.
	journal *[]string
}

// fakeConn is a connection to a fakeNode, logged in with a password.
type fakeConn struct {
	node     *fakeNode
	addr     string
	password string
}

var _ RedisNode = (*fakeConn)(nil)

// receive records a command and answers whether the node runs it: not when it is down or
// refuses the connection's password.
func (c *fakeConn) receive(command ...string) error {
	n := c.node
	line := strings.Join(command, " ")
	n.sent = append(n.sent, line)
	if n.journal != nil {
		*n.journal = append(*n.journal, c.addr+" "+line)
	}
	if n.down != nil {
		return n.down
	}
	if len(n.passwords) > 0 && !slices.Contains(n.passwords, c.password) {
		return errWrongPass
	}
	return nil
}

func (c *fakeConn) Ping(context.Context) error { return c.receive("ping") }

func (c *fakeConn) ConfigGet(_ context.Context, pattern string) (map[string]string, error) {
	if err := c.receive("config get", pattern); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for name, value := range c.node.config {
		if ok, _ := path.Match(pattern, name); ok {
			out[name] = value
		}
	}
	return out, nil
}

func (c *fakeConn) ConfigSet(_ context.Context, parameter, value string) error {
	if err := c.receive("config set", parameter, value); err != nil {
		return err
	}
	n := c.node
	if err := n.refuseSet[parameter]; err != nil {
		return err
	}
	if n.config == nil {
		n.config = map[string]string{}
	}
	n.config[parameter] = value
	if parameter == "requirepass" {
		n.passwords = nil
		if value != "" {
			n.passwords = []string{value}
		}
	}
	return nil
}

func (c *fakeConn) AddUserPassword(_ context.Context, user, password string) error {
	if err := c.receive("acl setuser", user, ">"+password); err != nil {
		return err
	}
	if user == redis.DefaultUser && !slices.Contains(c.node.passwords, password) {
		c.node.passwords = append(c.node.passwords, password)
	}
	return nil
}

func (c *fakeConn) SentinelMasterAddr(_ context.Context, group string) (string, int, bool, error) {
	if err := c.receive("sentinel get-master-addr-by-name", group); err != nil {
		return "", 0, false, err
	}
	addr, ok := c.node.masters[group]
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

func (c *fakeConn) SentinelReplicaHosts(_ context.Context, group string) ([]string, error) {
	if err := c.receive("sentinel replicas", group); err != nil {
		return nil, err
	}
	var hosts []string
	for _, fields := range c.node.replicas[group] {
		hosts = append(hosts, fields["ip"])
	}
	return hosts, nil
}

// errNoSuchMaster is a sentinel's answer about a group it does not monitor.
const errNoSuchMaster = fakeServerError("ERR No such master with that name")

func (c *fakeConn) SentinelMaster(_ context.Context, group string) (map[string]string, error) {
	if err := c.receive("sentinel master", group); err != nil {
		return nil, err
	}
	fields, ok := c.node.masterState[group]
	if !ok {
		return nil, errNoSuchMaster
	}
	return fields, nil
}

func (c *fakeConn) SentinelReplicas(_ context.Context, group string) ([]map[string]string, error) {
	if err := c.receive("sentinel replicas", group); err != nil {
		return nil, err
	}
	if _, ok := c.node.masterState[group]; !ok {
		return nil, errNoSuchMaster
	}
	return c.node.replicas[group], nil
}

func (c *fakeConn) SentinelCkQuorum(_ context.Context, group string) error {
	if err := c.receive("sentinel ckquorum", group); err != nil {
		return err
	}
	return c.node.quorum
}

func (c *fakeConn) SentinelSetAuthPass(_ context.Context, group, password string) error {
	if err := c.receive("sentinel set", group, "auth-pass", password); err != nil {
		return err
	}
	if c.node.authPass == nil {
		c.node.authPass = map[string]string{}
	}
	c.node.authPass[group] = password
	return nil
}

func (c *fakeConn) ACLUsers(context.Context) ([]string, error) {
	if err := c.receive("acl users"); err != nil {
		return nil, err
	}
	return slices.Clone(c.node.aclUsers), nil
}

func (c *fakeConn) ACLLoad(context.Context) error {
	if err := c.receive("acl load"); err != nil {
		return err
	}
	if c.node.loadErr != nil {
		return c.node.loadErr
	}
	c.node.aclUsers = slices.Clone(c.node.aclFile)
	return nil
}

func (c *fakeConn) EnsureOperatorUser(_ context.Context, sha256Hex string) error {
	return c.receive("acl setuser", redis.OperatorUser, "#"+sha256Hex)
}

func (c *fakeConn) ACLAddPasswordHash(_ context.Context, user, sha256Hex string) error {
	return c.receive("acl setuser", user, "#"+sha256Hex)
}

func (c *fakeConn) ReloadTLS(_ context.Context, certFile string) error {
	if err := c.receive("config set tls-cert-file", certFile); err != nil {
		return err
	}
	c.node.servedCert = c.node.certFiles
	return nil
}

// answer records a command as receive does and refuses it when the test said so: name is
// the command without its arguments, as refuse holds it.
func (c *fakeConn) answer(name string, args ...string) error {
	if err := c.receive(append([]string{name}, args...)...); err != nil {
		return err
	}
	return c.node.refuse[name]
}

// role is what ROLE answers now, without taking the answer from the script.
func (n *fakeNode) role() redis.Role {
	if len(n.roles) == 0 {
		return redis.Role{Kind: redis.RoleMaster}
	}
	return n.roles[0]
}

// becomes makes role the node's one answer from now on.
func (n *fakeNode) becomes(role redis.Role) { n.roles = []redis.Role{role} }

func (c *fakeConn) Role(context.Context) (redis.Role, error) {
	if err := c.answer("role"); err != nil {
		return redis.Role{}, err
	}
	n := c.node
	role := n.role()
	if len(n.roles) > 1 {
		n.roles = n.roles[1:]
	}
	return role, nil
}

func (c *fakeConn) Info(_ context.Context, section string) (map[string]string, error) {
	if err := c.answer("info", section); err != nil {
		return nil, err
	}
	if section != "replication" {
		return map[string]string{}, nil
	}
	return maps.Clone(c.node.replicationInfo), nil
}

func (c *fakeConn) ReplicaOf(_ context.Context, host string, port int) error {
	if err := c.answer("replicaof", host, strconv.Itoa(port)); err != nil {
		return err
	}
	n := c.node
	n.becomes(redis.Role{Kind: redis.RoleSlave, ReplicationOffset: n.role().ReplicationOffset, MasterIP: host, MasterPort: port, ReplicationState: "connect"})
	return nil
}

func (c *fakeConn) ReplicaOfNoOne(context.Context) error {
	if err := c.answer("replicaof", "no", "one"); err != nil {
		return err
	}
	n := c.node
	n.becomes(redis.Role{Kind: redis.RoleMaster, ReplicationOffset: n.role().ReplicationOffset})
	return nil
}

func (c *fakeConn) FailoverTo(_ context.Context, host string, port int, timeout time.Duration) error {
	return c.answer("failover", "to", host, strconv.Itoa(port), "timeout", strconv.FormatInt(timeout.Milliseconds(), 10))
}

func (c *fakeConn) PauseWrites(_ context.Context, d time.Duration) error {
	return c.answer("client pause", strconv.FormatInt(d.Milliseconds(), 10), "write")
}

func (c *fakeConn) Unpause(context.Context) error { return c.answer("client unpause") }

func (c *fakeConn) SentinelFailover(_ context.Context, group string) error {
	return c.answer("sentinel failover", group)
}

func (c *fakeConn) SentinelReset(_ context.Context, group string) error {
	return c.answer("sentinel reset", group)
}

func (c *fakeConn) SentinelSetDownAfter(_ context.Context, group string, period time.Duration) error {
	return c.answer("sentinel set", group, "down-after-milliseconds", strconv.FormatInt(period.Milliseconds(), 10))
}

// The cluster's commands. CLUSTER SETSLOT and COUNTKEYSINSLOT are recorded one line per slot,
// as Redis receives them in the pipeline.

// defaultServerInfo is the INFO server of a node the test said nothing of its version.
const defaultServerInfo = "redis_version:7.2.4"

// ObserveCluster answers CLUSTER NODES, ROLE, CLUSTER INFO and INFO server, each with its own
// refusal, as the pipeline of the real client does.
func (c *fakeConn) ObserveCluster(ctx context.Context) redis.ClusterObservation {
	var o redis.ClusterObservation
	if o.NodesErr = c.answer("cluster nodes"); o.NodesErr == nil {
		o.Nodes, o.NodesErr = redis.ParseClusterNodes(c.node.clusterNodes)
	}
	o.Role, o.RoleErr = c.Role(ctx)
	o.Info, o.InfoErr = c.ClusterInfo(ctx)
	if o.ServerErr = c.answer("info", "server"); o.ServerErr == nil {
		text := c.node.serverInfo
		if text == "" {
			text = defaultServerInfo
		}
		o.Server, o.ServerErr = redis.ParseServerInfo(text)
	}
	return o
}

func (c *fakeConn) ClusterNodes(context.Context) (redis.Topology, error) {
	if err := c.answer("cluster nodes"); err != nil {
		return redis.Topology{}, err
	}
	return redis.ParseClusterNodes(c.node.clusterNodes)
}

func (c *fakeConn) ClusterInfo(context.Context) (redis.ClusterInfo, error) {
	if err := c.answer("cluster info"); err != nil {
		return redis.ClusterInfo{}, err
	}
	return c.node.clusterInfo, nil
}

func (c *fakeConn) ClusterMeet(_ context.Context, ip string, port, busPort int) error {
	return c.answer("cluster meet", ip, strconv.Itoa(port), strconv.Itoa(busPort))
}

func (c *fakeConn) ClusterForget(_ context.Context, nodeID string) error {
	return c.answer("cluster forget", nodeID)
}

// rangeArgs are slot ranges as CLUSTER NODES writes them ("0-5460").
func rangeArgs(ranges []redis.SlotRange) []string {
	out := make([]string, len(ranges))
	for i, r := range ranges {
		out[i] = r.String()
	}
	return out
}

func (c *fakeConn) ClusterAddSlotsRange(_ context.Context, ranges ...redis.SlotRange) error {
	return c.answer("cluster addslotsrange", rangeArgs(ranges)...)
}

func (c *fakeConn) ClusterAddSlots(_ context.Context, ranges ...redis.SlotRange) error {
	return c.answer("cluster addslots", rangeArgs(ranges)...)
}

func (c *fakeConn) ClusterReplicate(_ context.Context, masterID string) error {
	return c.answer("cluster replicate", masterID)
}

func (c *fakeConn) ClusterBumpEpoch(context.Context) (bool, error) {
	if err := c.answer("cluster bumpepoch"); err != nil {
		return false, err
	}
	return true, nil
}

func (c *fakeConn) ClusterFailover(_ context.Context, mode redis.FailoverMode) error {
	if mode == redis.FailoverDefault {
		return c.answer("cluster failover")
	}
	return c.answer("cluster failover", string(mode))
}

func (c *fakeConn) ClusterSetSlotEach(_ context.Context, slots []int, state redis.SlotState, nodeID string) []error {
	errs := make([]error, len(slots))
	for i, slot := range slots {
		if err := c.receive("cluster setslot", strconv.Itoa(slot), string(state), nodeID); err != nil {
			errs[i] = err
			continue
		}
		errs[i] = c.node.refuse["cluster setslot "+string(state)]
	}
	return errs
}

func (c *fakeConn) ClusterCountKeysInSlots(_ context.Context, slots []int) ([]int64, error) {
	counts := make([]int64, len(slots))
	for i, slot := range slots {
		if err := c.answer("cluster countkeysinslot", strconv.Itoa(slot)); err != nil {
			return nil, err
		}
		counts[i] = c.node.keys[slot]
	}
	return counts, nil
}

// MigrateSlots sends the keys of the slots to host:port, recorded as one line: the node's keys
// in those slots are gone from it, and their number is returned.
func (c *fakeConn) MigrateSlots(_ context.Context, slots []int, host string, port int, _ redis.MigrateOptions) (int, error) {
	args := []string{net.JoinHostPort(host, strconv.Itoa(port))}
	for _, slot := range slots {
		args = append(args, strconv.Itoa(slot))
	}
	if err := c.answer("migrate", args...); err != nil {
		return 0, err
	}
	moved := 0
	for _, slot := range slots {
		moved += int(c.node.keys[slot])
		delete(c.node.keys, slot)
	}
	return moved, nil
}
