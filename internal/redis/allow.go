package redis

import (
	"errors"
	"fmt"
	"strings"
)

// ErrCommandNotAllowed is returned, without contacting Redis, for a command outside the
// allow-list below.
var ErrCommandNotAllowed = errors.New("command not allowed by the operator's Redis client")

// allowedCommands lists every command the client may send, with the allowed subcommands
// where the command has them. Anything that can erase a node's keys or cluster state is
// absent on purpose; adding a method means adding its command here, in review.
var allowedCommands = map[string][]string{
	// Connection set-up that go-redis performs itself.
	"hello":  nil,
	"auth":   nil,
	"select": nil,
	"client": {"setname", "setinfo"},
	// Commands of the typed methods.
	"ping":      nil,
	"info":      nil,
	"role":      nil,
	"replicaof": nil,
	"failover":  nil,
	"migrate":   nil,
	"config":    {"get", "set"},
	"cluster": {
		"nodes", "shards", "info", "myid", "meet", "addslotsrange", "replicate", "failover",
		"forget", "countkeysinslot", "getkeysinslot", "setslot",
	},
	// Read-only: failover decisions stay with the sentinels.
	"sentinel": {"get-master-addr-by-name", "master", "ckquorum", "replicas", "sentinels"},
}

func commandName(args []any) (name, sub string) {
	if len(args) > 0 {
		if s, ok := args[0].(string); ok {
			name = strings.ToLower(s)
		}
	}
	if len(args) > 1 {
		if s, ok := args[1].(string); ok {
			sub = strings.ToLower(s)
		}
	}
	return name, sub
}

func checkAllowed(args []any) error {
	name, sub := commandName(args)
	subs, ok := allowedCommands[name]
	if !ok {
		return fmt.Errorf("%w: %q", ErrCommandNotAllowed, name)
	}
	if subs == nil {
		return nil
	}
	for _, s := range subs {
		if s == sub {
			return nil
		}
	}
	return fmt.Errorf("%w: %q", ErrCommandNotAllowed, name+" "+sub)
}
