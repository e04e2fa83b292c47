package kubectlredis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"
)

func TestSplitCommandLine(t *testing.T) {
	for _, tc := range []struct {
		line    string
		want    []string
		wantErr string
	}{
		{"", nil, ""},
		{"   \t ", nil, ""},
		{"PING", []string{"PING"}, ""},
		{"  set  key   value ", []string{"set", "key", "value"}, ""},
		{`set greeting "hello world"`, []string{"set", "greeting", "hello world"}, ""},
		{`set q "say \"hi\""`, []string{"set", "q", `say "hi"`}, ""},
		{`set e ""`, []string{"set", "e", ""}, ""},
		{`echo "a\\b\n\r\t\x41\x7a\q"`, []string{"echo", "a\\b\n\r\tAzq"}, ""},
		{`echo "\x4"`, []string{"echo", "x4"}, ""}, // not a \xHH escape: the x stands for itself
		{`echo 'it''s'`, nil, "closing quote"},
		{`echo 'it\'s here' "x"`, []string{"echo", "it's here", "x"}, ""},
		{`echo 'no \n escape'`, []string{"echo", `no \n escape`}, ""},
		{`echo pre"quoted part"`, []string{"echo", "prequoted part"}, ""},
		{`echo "open`, nil, "unbalanced double quotes"},
		{`echo 'open`, nil, "unbalanced single quotes"},
		{`echo "a"b`, nil, "closing quote"},
		{`echo "ends with backslash\`, nil, "unbalanced double quotes"},
		{"héllo wörld", []string{"héllo", "wörld"}, ""},
	} {
		got, err := splitCommandLine(tc.line)
		switch {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: %q, %v; want error %q", tc.line, got, err, tc.wantErr)
			}
		case err != nil || !slices.Equal(got, tc.want):
			t.Errorf("%q: %q, %v; want %q", tc.line, got, err, tc.want)
		}
	}
}

// FuzzSplitCommandLine: the parser never panics, and what it returns survives quoting: each
// argument quoted as redis-cli shows it and the line split again gives the same arguments.
func FuzzSplitCommandLine(f *testing.F) {
	for _, seed := range []string{"", "GET k", `set "a b" 'c d'`, `"\x00\xff\"\\"`, `'\''`, `"unterminated`, "a\tb\r\nc"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, line string) {
		args, err := splitCommandLine(line)
		if err != nil {
			return
		}
		quoted := make([]string, len(args))
		for i, a := range args {
			quoted[i] = quoteString(a)
		}
		again, err := splitCommandLine(strings.Join(quoted, " "))
		if err != nil || !slices.Equal(again, args) {
			t.Errorf("%q split to %q, quoted %q, split again to %q (%v)", line, args, quoted, again, err)
		}
	})
}

func TestFormatReply(t *testing.T) {
	for _, tc := range []struct {
		name   string
		v      any
		err    error
		asText bool
		want   string
	}{
		{"string", "OK", nil, false, `"OK"`},
		{"escaped string", "a\"b\\c\n\x01é", nil, false, `"a\"b\\c\n\x01\xc3\xa9"`},
		{"empty string", "", nil, false, `""`},
		{"integer", int64(42), nil, false, "(integer) 42"},
		{"negative integer", int64(-2), nil, false, "(integer) -2"},
		{"nil", nil, goredis.Nil, false, "(nil)"},
		{"nil element", nil, nil, false, "(nil)"},
		{"error reply", nil, errors.New("ERR unknown command 'FOO'"), false, "(error) ERR unknown command 'FOO'"},
		{"empty array", []any{}, nil, false, "(empty array)"},
		{"array", []any{"a", int64(1), nil}, nil, false, "1) \"a\"\n2) (integer) 1\n3) (nil)"},
		{"nested array", []any{"master", int64(3129), []any{[]any{"10.0.0.2", "6379", "3129"}}}, nil, false,
			"1) \"master\"\n2) (integer) 3129\n3) 1) 1) \"10.0.0.2\"\n      2) \"6379\"\n      3) \"3129\""},
		{"ten elements", []any{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10"}, nil, false,
			" 1) \"1\"\n 2) \"2\"\n 3) \"3\"\n 4) \"4\"\n 5) \"5\"\n 6) \"6\"\n 7) \"7\"\n 8) \"8\"\n 9) \"9\"\n10) \"10\""},
		{"text", "# Server\r\nredis_version:7.4.2\r\n", nil, true, "# Server\nredis_version:7.4.2"},
		{"double", 1.5, nil, false, "(double) 1.5"},
		{"boolean", true, nil, false, "(true)"},
		{"map", map[any]any{"b": int64(2), "a": "x"}, nil, false, "1# \"a\" => \"x\"\n2# \"b\" => (integer) 2"},
		{"error element", []any{replyErr("ERR inside")}, nil, false, "1) (error) ERR inside"},
	} {
		if got := formatReply(tc.v, tc.err, tc.asText); got != tc.want {
			t.Errorf("%s: got\n%s\nwant\n%s", tc.name, got, tc.want)
		}
	}
}

func TestPrintsAsText(t *testing.T) {
	for args, want := range map[string]bool{
		"INFO": true, "info replication": true, "CLUSTER NODES": true, "cluster info": true, "client list": true,
		"GET info": false, "CLUSTER SLOTS": false, "": false, "ROLE": false,
	} {
		if got := printsAsText(strings.Fields(args)); got != want {
			t.Errorf("%q: %t, want %t", args, got, want)
		}
	}
}

// fakeConn answers the commands it knows (lower-case words joined by spaces) with fixed
// replies, an error value as an error reply, and any other command with an error.
type fakeConn struct {
	replies map[string]any
	sent    []string
	closed  bool
}

func (f *fakeConn) Do(ctx context.Context, args ...any) *goredis.Cmd {
	words := make([]string, len(args))
	for i, a := range args {
		words[i] = fmt.Sprint(a)
	}
	key := strings.ToLower(strings.Join(words, " "))
	f.sent = append(f.sent, key)
	cmd := goredis.NewCmd(ctx, args...)
	v, ok := f.replies[key]
	switch e, isErr := v.(error); {
	case !ok:
		cmd.SetErr(replyErr("ERR unknown command '" + words[0] + "'"))
	case isErr:
		cmd.SetErr(e)
	default:
		cmd.SetVal(v)
	}
	return cmd
}

func (f *fakeConn) Close() error { f.closed = true; return nil }

// TestSession: one reply per line, blank lines skipped, a line that cannot be split answered
// with an error without ending the session, quit ending it.
func TestSession(t *testing.T) {
	conn := &fakeConn{replies: map[string]any{
		"set greeting hello world": "OK",
		"get greeting":             "hello world",
		"get missing":              goredis.Nil,
		"incr n":                   int64(1),
	}}
	in := strings.NewReader("set greeting \"hello world\"\n\nget greeting\nget missing\necho \"open\nINCR n\nfoo\nquit\nget greeting\n")
	var out strings.Builder
	if err := session(t.Context(), conn, in, &out, ""); err != nil {
		t.Fatal(err)
	}
	want := `"OK"
"hello world"
(nil)
(error) Invalid argument(s): unbalanced double quotes
(integer) 1
(error) ERR unknown command 'foo'
`
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
	if len(conn.sent) != 5 {
		t.Errorf("sent %q: nothing after quit, nothing for a line that cannot be split", conn.sent)
	}
}

// replyErr is an error reply of Redis, as go-redis gives it (goredis.Error).
type replyErr string

func (e replyErr) Error() string { return string(e) }

func (replyErr) RedisError() {}
