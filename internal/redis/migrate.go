package redis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// ClusterSetSlotEach runs CLUSTER SETSLOT slot state nodeID for every slot in one round trip
// (pipelined). The errors are per slot, in the order of slots; a failure to send fails all.
func (c *Client) ClusterSetSlotEach(ctx context.Context, slots []int, state SlotState, nodeID string) []error {
	errs := make([]error, len(slots))
	if len(slots) == 0 {
		return errs
	}
	command := "CLUSTER SETSLOT " + strings.ToUpper(string(state))
	if state != SlotImporting && state != SlotMigrating && state != SlotNode {
		return fill(errs, c.wrap(command, fmt.Errorf("state %q takes no pipeline", state)))
	}
	if _, err := parseNodeID(nodeID); err != nil {
		return fill(errs, c.wrap(command, err))
	}
	pipe := c.rdb.Pipeline()
	cmds := make([]*goredis.Cmd, len(slots))
	for i, slot := range slots {
		if slot < 0 || slot > MaxSlot {
			return fill(errs, c.wrap(command, fmt.Errorf("slot %d out of range", slot)))
		}
		cmds[i] = pipe.Do(ctx, "cluster", "setslot", slot, string(state), nodeID)
	}
	_, _ = pipe.Exec(ctx) // each command carries its own error
	for i, cmd := range cmds {
		errs[i] = c.wrap(fmt.Sprintf("%s slot %d", command, slots[i]), cmd.Err())
	}
	return errs
}

func fill(errs []error, err error) []error {
	for i := range errs {
		errs[i] = err
	}
	return errs
}

// clusterGetKeysInSlots runs CLUSTER GETKEYSINSLOT for every slot in one round trip.
func (c *Client) clusterGetKeysInSlots(ctx context.Context, slots []int, count int) ([][]string, error) {
	const command = "CLUSTER GETKEYSINSLOT"
	pipe := c.rdb.Pipeline()
	cmds := make([]*goredis.StringSliceCmd, len(slots))
	for i, slot := range slots {
		cmds[i] = pipe.ClusterGetKeysInSlot(ctx, slot, count)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, c.wrap(command, err)
	}
	out := make([][]string, len(slots))
	for i, cmd := range cmds {
		out[i] = cmd.Val()
	}
	return out, nil
}

// MigrateSlots moves every key of the slots from this node to the node at host:port, the
// slots together: each round asks for up to BatchSize keys of every slot that may still hold
// some in one round trip, then sends one MIGRATE ... KEYS per slot in one more (MIGRATE takes
// keys of one slot only). A slot that gave fewer keys than BatchSize is done once they are
// sent: no key can appear in a slot that is MIGRATING (Redis redirects writes of keys it does
// not hold with ASK), and SETSLOT NODE refuses to give away a slot that still holds some, so
// nothing is left behind unnoticed. A MIGRATE that times out
// (values too large for its timeout) is retried for its slot alone with half the keys and
// twice the time, down to one key. Set the slots MIGRATING here and IMPORTING on the target
// first, and assign them with SETSLOT NODE afterwards. It returns the number of keys moved,
// also when it fails midway.
func (c *Client) MigrateSlots(ctx context.Context, slots []int, host string, port int, opts MigrateOptions) (int, error) {
	const command = "MIGRATE"
	for _, slot := range slots {
		if slot < 0 || slot > MaxSlot {
			return 0, c.wrap(command, fmt.Errorf("slot %d out of range", slot))
		}
	}
	if host == "" || port <= 0 || port > 65535 {
		return 0, c.wrap(command, fmt.Errorf("invalid target %q port %d", host, port))
	}
	opts = opts.withDefaults()
	moved := 0
	pending := append([]int(nil), slots...)
	for len(pending) > 0 {
		if err := ctx.Err(); err != nil {
			return moved, c.wrap(command, err)
		}
		keys, err := c.clusterGetKeysInSlots(ctx, pending, opts.BatchSize)
		if err != nil {
			return moved, err
		}
		var next []int
		var batches [][]string
		var sent []int
		for i, k := range keys {
			if len(k) > 0 {
				sent = append(sent, pending[i])
				batches = append(batches, k)
			}
			if len(k) >= opts.BatchSize {
				next = append(next, pending[i])
			}
		}
		errs := c.migrateEach(ctx, host, port, batches, opts)
		for i, err := range errs {
			if err != nil && isMigrateTimeout(err) {
				err = c.migrateSmaller(ctx, host, port, batches[i], opts)
			}
			if err != nil {
				return moved, c.wrap(fmt.Sprintf("MIGRATE slot %d to %s", sent[i], net.JoinHostPort(host, strconv.Itoa(port))), err)
			}
			moved += len(batches[i])
		}
		pending = next
	}
	return moved, nil
}

func (o MigrateOptions) withDefaults() MigrateOptions {
	if o.BatchSize <= 0 {
		o.BatchSize = 100
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Second
	}
	if o.BatchTimeout <= 0 {
		o.BatchTimeout = time.Minute
	}
	return o
}

// migrateEach sends one MIGRATE ... KEYS per batch in one round trip, over the connection
// whose reads wait as long as the copy takes.
func (c *Client) migrateEach(ctx context.Context, host string, port int, batches [][]string, opts MigrateOptions) []error {
	errs := make([]error, len(batches))
	if len(batches) == 0 {
		return errs
	}
	slow, err := c.slowClient()
	if err != nil {
		return fill(errs, err)
	}
	batchCtx, cancel := context.WithTimeout(ctx, opts.BatchTimeout)
	defer cancel()
	pipe := slow.Pipeline()
	cmds := make([]*goredis.Cmd, len(batches))
	for i, keys := range batches {
		cmds[i] = pipe.Do(batchCtx, migrateArgs(host, port, keys, opts)...)
	}
	_, _ = pipe.Exec(batchCtx)
	for i, cmd := range cmds {
		errs[i] = cmd.Err()
	}
	return errs
}

// migrateSmaller retries the keys of one slot in halves with twice the timeout each time.
func (c *Client) migrateSmaller(ctx context.Context, host string, port int, keys []string, opts MigrateOptions) error {
	if len(keys) <= 1 {
		return c.migrateEach(ctx, host, port, [][]string{keys}, opts)[0]
	}
	opts.Timeout *= 2
	half := len(keys) / 2
	for _, part := range [][]string{keys[:half], keys[half:]} {
		err := c.migrateEach(ctx, host, port, [][]string{part}, opts)[0]
		if err != nil && isMigrateTimeout(err) {
			err = c.migrateSmaller(ctx, host, port, part, opts)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// isMigrateTimeout: Redis gave up talking to the target within MIGRATE's timeout; the keys
// stay on this node, so sending them again is safe.
func isMigrateTimeout(err error) bool {
	var re goredis.Error
	return errors.As(err, &re) && strings.HasPrefix(re.Error(), "IOERR")
}

func migrateArgs(host string, port int, keys []string, opts MigrateOptions) []any {
	args := make([]any, 0, 10+len(keys))
	args = append(args, "migrate", host, port, "", 0, opts.Timeout.Milliseconds())
	if opts.Replace {
		args = append(args, "replace")
	}
	switch {
	case opts.Auth.Username != "":
		args = append(args, "auth2", opts.Auth.Username, opts.Auth.Password)
	case opts.Auth.Password != "":
		args = append(args, "auth", opts.Auth.Password)
	}
	args = append(args, "keys")
	for _, k := range keys {
		args = append(args, k)
	}
	return args
}

// ClusterCountKeysInSlots runs CLUSTER COUNTKEYSINSLOT for every slot in one round trip: the
// keys this node holds in each, whether or not it serves the slot.
func (c *Client) ClusterCountKeysInSlots(ctx context.Context, slots []int) ([]int64, error) {
	const command = "CLUSTER COUNTKEYSINSLOT"
	if len(slots) == 0 {
		return nil, nil
	}
	pipe := c.rdb.Pipeline()
	cmds := make([]*goredis.IntCmd, len(slots))
	for i, slot := range slots {
		if slot < 0 || slot > MaxSlot {
			return nil, c.wrap(command, fmt.Errorf("slot %d out of range", slot))
		}
		cmds[i] = pipe.ClusterCountKeysInSlot(ctx, slot)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, c.wrap(command, err)
	}
	out := make([]int64, len(slots))
	for i, cmd := range cmds {
		out[i] = cmd.Val()
	}
	return out, nil
}
