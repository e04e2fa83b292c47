package redis

import (
	"errors"
	"strings"
	"testing"
)

const sha256OfPassword = "5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8"

func TestParseACLFile(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		users      []string // names, in order
		errLine    int      // 0: accepted
		errHas     string
	}{
		{name: "empty", file: ""},
		{name: "blank lines and CRLF", file: "\r\n  \nuser alice on >pw ~a:* +get\r\n\n", users: []string{"alice"}},
		{name: "typical", file: "user default on nopass ~* &* +@all\nuser reader on >r %R~app:* +@read -keys\nuser writer on #" + sha256OfPassword + " ~app:* resetchannels -@all +set +get +client|setname\n",
			users: []string{"default", "reader", "writer"}},
		{name: "selector", file: "user s on >x ~a* +get (~b* +set allchannels)\n", users: []string{"s"}},
		{name: "module command and categories", file: "user m on >x allkeys +json.get +@search -@dangerous +select|0\n", users: []string{"m"}},
		{name: "not a user line", file: "user a on >x\nrequirepass x\n", errLine: 2, errHas: "must start"},
		{name: "no name", file: "user\n", errLine: 1, errHas: "must start"},
		{name: "duplicate", file: "user a on\n\nuser a off\n", errLine: 3, errHas: "twice"},
		{name: "unknown rule", file: "user a on >x ~* +@all\nuser b on >y allkey\n", errLine: 2, errHas: `user "b", rule 3: unknown rule`},
		{name: "unknown command", file: "user a on +gett\n", errLine: 1, errHas: `unknown command "gett"`},
		{name: "unknown category", file: "user a on +@reads\n", errLine: 1, errHas: "category"},
		{name: "bad hash", file: "user a on #abc\n", errLine: 1, errHas: "64"},
		{name: "upper-case hash", file: "user a on #" + strings.ToUpper(sha256OfPassword) + "\n", errLine: 1, errHas: "64"},
		{name: "bad key permission", file: "user a on %X~k\n", errLine: 1, errHas: "%R~"},
		{name: "unclosed selector", file: "user a on (~a* +get\n", errLine: 1, errHas: "parenthesis"},
		{name: "password in selector", file: "user a on (>x ~a*)\n", errLine: 1, errHas: "password is not allowed in a selector"},
		{name: "quotes", file: "user a on \">pass word\"\n", errLine: 1, errHas: "quoted"},
		{name: "empty command", file: "user a on +\n", errLine: 1, errHas: "names a command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			users, err := ParseACLFile(tc.file)
			if tc.errLine != 0 {
				var aclErr *ACLError
				if !errors.As(err, &aclErr) {
					t.Fatalf("want an ACLError at line %d, got %v", tc.errLine, err)
				}
				if aclErr.Line != tc.errLine || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("want line %d containing %q, got %v", tc.errLine, tc.errHas, err)
				}
				if !strings.HasPrefix(err.Error(), "line ") {
					t.Fatalf("the message must name the line: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, u := range users {
				names = append(names, u.Name)
			}
			if strings.Join(names, ",") != strings.Join(tc.users, ",") {
				t.Fatalf("users %v, want %v", names, tc.users)
			}
		})
	}
}

// TestACLErrorsKeepPasswordsOut: a refused file's message goes into events and the status, so
// it never quotes a word that may be a password (a clear text missing its '>', a mistyped
// hash, a password inside a selector).
func TestACLErrorsKeepPasswordsOut(t *testing.T) {
	const secret = "s3cret-Pa55"
	for _, file := range []string{
		"user a on " + secret + " ~* +@all\n",
		"user a on #" + secret + "\n",
		"user a on (>" + secret + " ~a*)\n",
		"user a on (~a* " + secret + ")\n",
		"user a on (~a* >" + secret + "\n",
	} {
		_, err := ParseACLFile(file)
		if err == nil {
			t.Fatalf("%q accepted", file)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("%q: the error quotes the password: %v", file, err)
		}
	}
}

func TestCheckOperatorUser(t *testing.T) {
	for file, ok := range map[string]bool{
		"":                                  true,
		"user alice on >x\n":                true,
		"user default off\n":                true,
		"user redis-operator on >x +@all\n": false,
		"user redis-operator off\n":         false,
	} {
		users, err := ParseACLFile(file)
		if err != nil {
			t.Fatalf("%q: %v", file, err)
		}
		err = CheckOperatorUser(users)
		if (err == nil) != ok {
			t.Errorf("%q: got %v, want ok=%v", file, err, ok)
		}
	}
}

func TestDefaultUserOff(t *testing.T) {
	for file, off := range map[string]bool{
		"":                                   false,
		"user alice on >x\n":                 false,
		"user default on >x ~* +@all\n":      false,
		"user default off\n":                 true,
		"user default >x ~* +@all\n":         true, // a file's line starts from reset: off
		"user default on >x reset ~*\n":      true,
		"user default off on nopass +@all\n": false,
	} {
		users, err := ParseACLFile(file)
		if err != nil {
			t.Fatalf("%q: %v", file, err)
		}
		if got := DefaultUserOff(users); got != off {
			t.Errorf("%q: default off = %v, want %v", file, got, off)
		}
	}
}

func FuzzParseACLFile(f *testing.F) {
	f.Add("user default on nopass ~* &* +@all\nuser a on >x %R~k* (~b* +set) -@dangerous\n")
	f.Add("user a on\nuser a off\n")
	f.Add("user b on (~a* +get\n")
	f.Add("\r\n\tuser c #" + sha256OfPassword + " +client|setname\n")
	f.Fuzz(func(t *testing.T, file string) {
		users, err := ParseACLFile(file)
		if err != nil {
			var aclErr *ACLError
			if !errors.As(err, &aclErr) || aclErr.Line < 1 || aclErr.Line > strings.Count(file, "\n")+1 {
				t.Fatalf("error without a valid line: %v", err)
			}
			return
		}
		// An accepted file, written back line by line, is accepted again with the same users.
		var b strings.Builder
		seen := map[string]bool{}
		for _, u := range users {
			if u.Name == "" || seen[u.Name] || strings.ContainsAny(u.Name, " \t\r\n") {
				t.Fatalf("bad user name %q", u.Name)
			}
			seen[u.Name] = true
			b.WriteString("user " + u.Name + " " + strings.Join(u.Rules, " ") + "\n")
		}
		again, err := ParseACLFile(b.String())
		if err != nil || len(again) != len(users) {
			t.Fatalf("re-rendered file refused or changed: %v\n%s", err, b.String())
		}
		_ = CheckOperatorUser(users)
		_ = DefaultUserOff(users)
	})
}
