package redis

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestAllowListRefusesDestructiveCommands(t *testing.T) {
	for _, args := range [][]any{
		{"FLUSH" + "ALL"}, {"flush" + "all", "async"}, {"flushdb"}, {"CLUSTER", "RE" + "SET", "HARD"},
		{"cluster", "re" + "set"}, {"cluster", "delslots", 1}, {"config", "resetstat"}, {"del", "k"},
		{"shutdown"}, {"debug", "segfault"}, {}, {42},
		// Sentinel commands that change what the sentinels monitor or force a failover.
		{"sentinel", "re" + "set", "*"}, {"SENTINEL", "FAILOVER"}, {"SENTINEL", "FAILOVER", "g", "h"}, {"sentinel", "failover", ""},
		{"sentinel", "remove", "g"},
		{"sentinel", "monitor", "g", "h", 1, 2}, {"sentinel", "set", "g", "quorum", 1},
		{"sentinel", "flushconfig"}, {"sentinel", "config", "set", "x", "y"}, {"sentinel"},
		{"sentinel", "set", "g", "auth-pass"}, {"sentinel", "set", "g", "auth-pass", "pw", "quorum", 1},
		{"sentinel", "set", "g", "down-after-milliseconds", 1}, {"sentinel", "set", "g", "notification-script", "/x"},
		{"sentinel", "set", "g", "down-after-milliseconds", "0"}, {"sentinel", "set", "g", "down-after-milliseconds", "-5"},
		{"sentinel", "set", "g", "down-after-milliseconds", "1s"}, {"sentinel", "set", "g", "down-after-milliseconds", "5", "quorum"},
		{"sentinel", "set", "g", "auth-user", "u"}, {"sentinel", "set", "g", "auth-pass", "pw", "auth-pass"},
		{"sentinel", "re" + "set", "g*"}, {"sentinel", "re" + "set", "[g]"}, {"sentinel", "re" + "set"}, {"sentinel", "re" + "set", "g", "h"},
		// ACL changes beyond a second password for the default user.
		{"acl", "setuser", "default", "nopass"}, {"acl", "setuser", "default", ">"}, {"acl", "setuser", "default", "on", ">x"},
		{"acl", "setuser", "default", "+@all"}, {"acl", "setuser", "other", ">x"}, {"acl", "setuser", "default", "resetpass"},
		{"acl", "setuser", "default"}, {"acl", "deluser", "default"}, {"acl", "save"},
		{"acl", "setuser", "default", "#not-a-hash"}, {"acl", "setuser", "other", "#" + strings.Repeat("a", 64)},
		{"acl", "setuser", "default", []byte(">x")},
		{"acl", "setuser", "redis-operator", "on", ">x", "~*", "&*", "+@all", "+debug"},
		{"acl", "setuser", "redis-operator", "on", "nopass", "~*", "&*", "+@all"},
		{"acl", "setuser", "redis-operator", "off", ">x", "~*", "&*", "+@all"},
		{"acl", "setuser", "default", "on", ">x", "~*", "&*", "+@all"},
		// A pause of anything but writes, or without a bound.
		{"client", "pause", "1000"}, {"client", "pause", "1000", "all"}, {"client", "pause", "0", "write"},
		{"client", "pause", "-1", "write"}, {"client", "pause", 1000, "write"}, {"client", "unpause", "x"},
		{"client", "kill", "type", "normal"},
	} {
		if err := checkAllowed(args); !errors.Is(err, ErrCommandNotAllowed) {
			t.Errorf("%v allowed", args)
		}
	}
	for _, args := range [][]any{
		{"hello", "3"}, {"ping"}, {"CLUSTER", "NODES"}, {"cluster", "setslot", 1, "node", "x"},
		{"config", "get", "x"}, {"migrate", "h", 1, "", 0, 5, "keys", "k"}, {"client", "setname", "x"},
		{"SENTINEL", "GET-MASTER-ADDR-BY-NAME", "g"}, {"sentinel", "master", "g"}, {"sentinel", "ckquorum", "g"},
		{"sentinel", "replicas", "g"}, {"sentinel", "sentinels", "g"}, {"SENTINEL", "RE" + "SET", "mymaster"},
		{"SENTINEL", "SET", "g", "AUTH-PASS", "pw"}, {"sentinel", "set", "g", "auth-pass", ""},
		{"sentinel", "set", "g", "down-after-milliseconds", "16000"}, {"SENTINEL", "FAILOVER", "mymaster"},
		{"ACL", "SETUSER", "default", ">new pw"}, {"acl", "setuser", "default", "#" + strings.Repeat("0f", 32)},
		{"acl", "setuser", "redis-operator", ">new pw"},
		{"acl", "setuser", "redis-operator", "on", "#" + strings.Repeat("0f", 32), "~*", "&*", "+@all"},
		{"acl", "load"}, {"acl", "users"}, {"client", "pause", "10000", "WRITE"}, {"CLIENT", "UNPAUSE"},
	} {
		if err := checkAllowed(args); err != nil {
			t.Errorf("%v refused: %v", args, err)
		}
	}
}

// The hook refuses a disallowed command before any connection is made: nothing listens on
// port 1, so a command that got through would fail with a dial error instead.
func TestClientRefusesDisallowedSentinelCommands(t *testing.T) {
	c := newClient("127.0.0.1:1", Auth{}, Options{}.withDefaults(), nil)
	t.Cleanup(func() { _ = c.close() })
	for _, args := range [][]any{
		{"sentinel", "failover", "g", "h"}, {"sentinel", "re" + "set", "*"}, {"sentinel", "remove", "g"},
	} {
		if err := c.rdb.Do(context.Background(), args...).Err(); !errors.Is(err, ErrCommandNotAllowed) {
			t.Errorf("%v: err = %v, want ErrCommandNotAllowed", args, err)
		}
	}
	if n := c.CommandCount(); n != 0 {
		t.Errorf("refused commands counted %d sent", n)
	}
}

// The package must never send a command that wipes a node's cluster state or its keys.
// This looks at what code can send: string literals and identifiers (go-redis methods
// included) of every non-test Go file in this directory and below. Comments may mention them.
func TestSourcesNeverSendWipeCommands(t *testing.T) {
	forbidden := regexp.MustCompile(`(?i)flush\s*all|flush\s*db|cluster\s*reset|reset\s*(hard|soft)`)
	files := 0
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		files++
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			var text string
			switch x := n.(type) {
			case *ast.ValueSpec:
				// The one declaration allowed to spell it, for SENTINEL RESET <exact group>.
				if len(x.Names) == 1 && x.Names[0].Name == "sentinelResetSubcommand" && path == "allow.go" {
					return false
				}
				return true
			case *ast.BasicLit:
				if x.Kind != token.STRING {
					return true
				}
				text = x.Value
				if strings.EqualFold(strings.Trim(text, "\"`"), "reset") {
					t.Errorf("%s: string literal %s can build a reset command", fset.Position(x.Pos()), text)
				}
			case *ast.Ident:
				text = x.Name
			default:
				return true
			}
			if forbidden.MatchString(text) {
				t.Errorf("%s: %s", fset.Position(n.Pos()), text)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 5 {
		t.Fatalf("checked only %d files; is the test running in the package directory?", files)
	}
}
