package redis

import (
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ACLUser is one line of a Redis ACL file: "user <name> <rule>...".
type ACLUser struct {
	// Line is the 1-based line number in the file.
	Line  int
	Name  string
	Rules []string
}

// Enabled tells whether the rules leave the user on. Redis resets a user before applying a
// file's line, so a user is off unless "on" comes after the last "off" or "reset".
func (u ACLUser) Enabled() bool {
	on := false
	for _, r := range u.Rules {
		switch r = strings.ToLower(r); {
		case r == "on":
			on = true
		case slices.Contains(aclWords["turn-off"], r):
			on = false
		}
	}
	return on
}

// ACLError is a refused ACL file, with the line Redis would refuse.
type ACLError struct {
	Line    int
	Message string
}

func (e *ACLError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Message) }

// ParseACLFile checks an ACL file the way redis-server does when it loads one (at start or on
// ACL LOAD), so that a file Redis would refuse (and a pod would not start with) is refused
// before it reaches a pod. It returns the users in file order. Quoted arguments are refused:
// rules that need spaces are rare and are easy to get wrong.
func ParseACLFile(content string) ([]ACLUser, error) {
	var users []ACLUser
	seen := map[string]bool{}
	for i, raw := range strings.Split(content, "\n") {
		line := i + 1
		fields := strings.Fields(raw)
		if len(fields) == 0 {
			continue
		}
		if strings.ContainsAny(raw, "\"'") {
			return nil, &ACLError{line, "quoted arguments are not supported"}
		}
		if fields[0] != "user" || len(fields) < 2 {
			return nil, &ACLError{line, "a line must start with \"user <name>\""}
		}
		name := fields[1]
		if seen[name] {
			return nil, &ACLError{line, fmt.Sprintf("user %q is defined twice", name)}
		}
		seen[name] = true
		rules, err := mergeSelectors(fields[2:])
		if err != nil {
			return nil, &ACLError{line, err.Error()}
		}
		for j, r := range rules {
			if err := checkACLRule(r, true); err != nil {
				return nil, &ACLError{line, fmt.Sprintf("user %q, rule %d: %v", name, j+1, err)}
			}
		}
		users = append(users, ACLUser{Line: line, Name: name, Rules: rules})
	}
	return users, nil
}

// mergeSelectors joins the words of a selector "(~k* +get)" into one rule, as Redis does.
func mergeSelectors(words []string) ([]string, error) {
	var out []string
	var open []string
	for _, w := range words {
		switch {
		case open != nil:
			open = append(open, w)
			if strings.HasSuffix(w, ")") {
				out = append(out, strings.Join(open, " "))
				open = nil
			}
		case strings.HasPrefix(w, "(") && !strings.HasSuffix(w, ")"):
			open = []string{w}
		default:
			out = append(out, w)
		}
	}
	if open != nil {
		// Not quoted back: the words may hold a password (messages reach events and status).
		return nil, fmt.Errorf("unmatched parenthesis in a selector of %d words", len(open))
	}
	return out, nil
}

// checkACLRule checks one rule; top is false inside a selector, where user-level rules
// (passwords, on/off, nested selectors) are not allowed.
func checkACLRule(rule string, top bool) error {
	lower := strings.ToLower(rule)
	if slices.Contains(aclSelectorFlags, lower) || (top && slices.Contains(aclFlags, lower)) {
		return nil
	}
	switch {
	case strings.HasPrefix(rule, "(") && strings.HasSuffix(rule, ")"):
		if !top {
			return errors.New("nested selector")
		}
		for j, r := range strings.Fields(rule[1 : len(rule)-1]) {
			if err := checkACLRule(r, false); err != nil {
				return fmt.Errorf("in the selector, rule %d: %w", j+1, err)
			}
		}
		return nil
	case top && (rule[0] == '>' || rule[0] == '<'):
		return nil // a clear-text password to add or remove; any bytes
	case top && (rule[0] == '#' || rule[0] == '!'):
		if !isPasswordHash(rule[1:]) {
			// The rule is not quoted back: a mistyped hash may be a clear-text password.
			return errors.New("a password hash (#...) is 64 lower-case hex digits (SHA-256)")
		}
		return nil
	case rule[0] == '~' || rule[0] == '&':
		return nil
	case rule[0] == '%':
		// %R~pattern, %W~pattern, %RW~pattern
		flags, _, ok := strings.Cut(rule[1:], "~")
		if !ok || flags == "" || strings.Trim(strings.ToUpper(flags), "RW") != "" {
			return fmt.Errorf("%q: a key permission is %%R~, %%W~ or %%RW~ followed by a pattern", rule)
		}
		return nil
	case rule[0] == '+' || rule[0] == '-':
		return checkACLCommand(rule)
	}
	if !top && (rule[0] == '>' || rule[0] == '<' || rule[0] == '#' || rule[0] == '!') {
		return errors.New("a password is not allowed in a selector")
	}
	// Not quoted back: an unknown word is as likely a password missing its '>' as a typo, and
	// the message reaches events and the status.
	return errors.New("unknown rule (a clear-text password starts with '>')")
}

func isPasswordHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// checkACLCommand checks +cmd, -cmd, +cmd|sub, +@category and -@category.
func checkACLCommand(rule string) error {
	name := strings.ToLower(rule[1:])
	if cat, ok := strings.CutPrefix(name, "@"); ok {
		if !slices.Contains(aclCategories, cat) {
			return fmt.Errorf("%q: unknown command category %q", rule, cat)
		}
		return nil
	}
	cmd, sub, hasSub := strings.Cut(name, "|")
	if cmd == "" || (hasSub && sub == "") {
		return fmt.Errorf("%q: a command rule names a command", rule)
	}
	// Module commands (module.command) depend on the modules loaded; Redis checks them.
	if strings.Contains(cmd, ".") || slices.Contains(aclCommands, cmd) {
		return nil
	}
	return fmt.Errorf("%q: unknown command %q", rule, cmd)
}

// The words of the ACL file grammar live in a data file: some are also names of commands
// this package must never send, and its sources are checked for those (allow_test.go).
//
//go:embed acl_words.txt
var aclWordsFile string

// aclWords maps each section of acl_words.txt to its words: "flags" (rules without an
// argument), "selector-flags" (those allowed inside a selector), "categories" (command
// categories, with those of the modules Redis 8 bundles) and "commands" (the commands of
// Redis 7.0 to 8.2, which a rule may name), and "turn-off" (the flags that leave a user off).
var aclWords = func() map[string][]string {
	out := map[string][]string{}
	section := ""
	for _, line := range strings.Split(aclWordsFile, "\n") {
		if name, ok := strings.CutPrefix(strings.TrimSpace(line), "["); ok {
			section = strings.TrimSuffix(name, "]")
			continue
		}
		out[section] = append(out[section], strings.Fields(line)...)
	}
	return out
}()

var (
	aclFlags         = aclWords["flags"]
	aclSelectorFlags = aclWords["selector-flags"]
	aclCategories    = aclWords["categories"]
	aclCommands      = aclWords["commands"]
)

// OperatorUser is the ACL user the operator adds to a file that turns the default user off:
// the operator, replicas (masteruser) and the pods' own hooks then log in as it.
const OperatorUser = "redis-operator"

// CheckOperatorUser refuses a file that defines the operator's own user.
func CheckOperatorUser(users []ACLUser) error {
	for _, u := range users {
		if u.Name == OperatorUser {
			return &ACLError{u.Line, "the user " + OperatorUser + " is the operator's own (it is added when the default user is off); give yours another name"}
		}
	}
	return nil
}

// DefaultUserOff tells whether the file turns the default user off (no "on" after its last
// "off" or "reset"); a file without a default line leaves it as the operator makes it.
func DefaultUserOff(users []ACLUser) bool {
	for _, u := range users {
		if u.Name == DefaultUser {
			return !u.Enabled()
		}
	}
	return false
}
