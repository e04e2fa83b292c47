package redis

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ErrCommandNotAllowed is returned, without contacting Redis, for a command outside the
// allow-list below.
var ErrCommandNotAllowed = errors.New("command not allowed by the operator's Redis client")

// allowedCommands lists every command the client may send, with the allowed subcommands
// where the command has them. Anything that can erase a node's keys or cluster state is
// absent on purpose; adding a method means adding its command here, in review.
var allowedCommands = map[string][]string{
	// Connection set-up that go-redis performs itself; CLIENT PAUSE of writes only (a hand-over
	// through the sentinels, narrowArguments) and UNPAUSE.
	"hello":  nil,
	"auth":   nil,
	"select": nil,
	"client": {"setname", "setinfo", "pause", "unpause"},
	// Commands of the typed methods.
	"ping":      nil,
	"info":      nil,
	"role":      nil,
	"replicaof": nil,
	"failover":  nil,
	"migrate":   nil,
	"config":    {"get", "set"},
	// ACL LOAD re-reads the aclfile the operator rendered; ACL USERS (names only, no password
	// hashes) confirms which file was read; ACL SETUSER only in the shapes narrowArguments
	// allows: a password (or its hash) added to the default user.
	"acl": {"load", "users", "setuser"},
	"cluster": {
		"nodes", "shards", "info", "myid", "meet", "addslots", "addslotsrange", "replicate", "failover",
		"forget", "countkeysinslot", "getkeysinslot", "setslot", "bumpepoch",
	},
	// Read-only, but for the monitored master's password and its down-after period (set only
	// in the shapes narrowArguments allows), RESET of one group by its exact name, which makes a
	// sentinel forget departed sentinels, and FAILOVER of a group the sentinels hold down but
	// cannot fail over (sentinelUnblock): which replica becomes master stays the sentinels' choice.
	"sentinel": {"get-master-addr-by-name", "master", "ckquorum", "replicas", "sentinels", "set", "failover", sentinelResetSubcommand},
}

// sentinelResetSubcommand is the one place the word may be spelt, for SENTINEL RESET of one
// group by exact name (narrowArguments): the sources test refuses it anywhere else, so that
// no code can build a cluster reset from it.
const sentinelResetSubcommand = "reset"

// narrowArguments holds the subcommands allowed in one shape only, checked argument by
// argument: SENTINEL SET may change a group's auth-pass and nothing else (not its quorum, nor
// what it monitors), ACL SETUSER may add a password (or its SHA-256 hash) to the default user
// and nothing else.
var narrowArguments = map[string]func(args []any) bool{
	"client pause": func(args []any) bool {
		if len(args) != 4 || !argEquals(args[3], "write") {
			return false
		}
		ms, ok := args[2].(string)
		n, err := strconv.ParseInt(ms, 10, 64)
		return ok && err == nil && n > 0
	},
	"client unpause": func(args []any) bool { return len(args) == 2 },
	"sentinel set": func(args []any) bool {
		if len(args) != 5 {
			return false
		}
		if argEquals(args[3], "down-after-milliseconds") {
			ms, ok := args[4].(string)
			n, err := strconv.ParseInt(ms, 10, 64)
			return ok && err == nil && n > 0
		}
		return argEquals(args[3], "auth-pass")
	},
	"sentinel failover": func(args []any) bool {
		group, ok := args[len(args)-1].(string)
		return len(args) == 3 && ok && group != ""
	},
	"sentinel " + sentinelResetSubcommand: func(args []any) bool {
		if len(args) != 3 {
			return false
		}
		group, ok := args[2].(string)
		return ok && group != "" && !strings.ContainsAny(group, "*?[]\\")
	},
	// ACL SETUSER only adds a password to the default user or the operator's own, or makes the
	// operator's own user (on, every key, channel and command).
	"acl setuser": func(args []any) bool {
		switch {
		case len(args) == 4 && (argEquals(args[2], DefaultUser) || argEquals(args[2], OperatorUser)):
			return isPasswordRule(args[3])
		case len(args) == 8 && argEquals(args[2], OperatorUser):
			return argEquals(args[3], "on") && isPasswordRule(args[4]) && slices.EqualFunc(args[5:], operatorUserRights, argEquals)
		}
		return false
	},
}

// operatorUserRights are the rights of the operator's own ACL user.
var operatorUserRights = []string{"~*", "&*", "+@all"}

// isPasswordRule: ">password" or "#<sha256 hex>".
func isPasswordRule(arg any) bool {
	password, ok := arg.(string)
	return ok && len(password) > 1 && (password[0] == '>' || password[0] == '#' && isPasswordHash(password[1:]))
}

func argEquals(arg any, want string) bool {
	s, ok := arg.(string)
	return ok && strings.EqualFold(s, want)
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
		if s != sub {
			continue
		}
		if narrow, ok := narrowArguments[name+" "+sub]; ok && !narrow(args) {
			return fmt.Errorf("%w: %q in this form", ErrCommandNotAllowed, name+" "+sub)
		}
		return nil
	}
	return fmt.Errorf("%w: %q", ErrCommandNotAllowed, name+" "+sub)
}
