package kubectlredis

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	goredis "github.com/redis/go-redis/v9"
)

// splitCommandLine splits a line typed at the cli prompt into a command's arguments, as
// redis-cli does: arguments are separated by blanks; "double quotes" hold blanks and the
// escapes \" \\ \n \r \t \a \b and \xHH (any other escaped character stands for itself);
// 'single quotes' hold blanks and \' only. A closing quote must end the argument. A blank
// line has no arguments.
func splitCommandLine(line string) ([]string, error) {
	var args []string
	i := 0
	for {
		for i < len(line) && isBlank(line[i]) {
			i++
		}
		if i == len(line) {
			return args, nil
		}
		var arg []byte
		var err error
		arg, i, err = nextArgument(line, i)
		if err != nil {
			return nil, err
		}
		args = append(args, string(arg))
	}
}

func isBlank(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// nextArgument reads the argument starting at line[i], returning it and where it ended.
func nextArgument(line string, i int) ([]byte, int, error) {
	arg := []byte{}
	for i < len(line) && !isBlank(line[i]) {
		switch line[i] {
		case '"':
			part, end, err := doubleQuoted(line, i+1)
			if err != nil {
				return nil, 0, err
			}
			arg, i = append(arg, part...), end
		case '\'':
			part, end, err := singleQuoted(line, i+1)
			if err != nil {
				return nil, 0, err
			}
			arg, i = append(arg, part...), end
		default:
			arg = append(arg, line[i])
			i++
			continue
		}
		if i < len(line) && !isBlank(line[i]) {
			return nil, 0, errors.New("a closing quote must be followed by a blank or the end of the line")
		}
	}
	return arg, i, nil
}

// doubleQuoted reads from just after an opening double quote to just after the closing one.
func doubleQuoted(line string, i int) ([]byte, int, error) {
	var out []byte
	for i < len(line) {
		c := line[i]
		switch {
		case c == '"':
			return out, i + 1, nil
		case c == '\\' && i+3 < len(line) && line[i+1] == 'x' && isHex(line[i+2]) && isHex(line[i+3]):
			b, _ := strconv.ParseUint(line[i+2:i+4], 16, 8)
			out = append(out, byte(b))
			i += 4
		case c == '\\' && i+1 < len(line):
			out = append(out, unescape(line[i+1]))
			i += 2
		default:
			out = append(out, c)
			i++
		}
	}
	return nil, 0, errors.New("unbalanced double quotes")
}

// singleQuoted reads from just after an opening single quote to just after the closing one.
func singleQuoted(line string, i int) ([]byte, int, error) {
	var out []byte
	for i < len(line) {
		c := line[i]
		switch {
		case c == '\\' && i+1 < len(line) && line[i+1] == '\'':
			out = append(out, '\'')
			i += 2
		case c == '\'':
			return out, i + 1, nil
		default:
			out = append(out, c)
			i++
		}
	}
	return nil, 0, errors.New("unbalanced single quotes")
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

func unescape(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'b':
		return '\b'
	case 'a':
		return '\a'
	}
	return c
}

// quoteString is a string as redis-cli shows it: in double quotes, with \\ \" \n \r \t \a \b
// escaped and any other byte outside printable ASCII as \xHH. splitCommandLine reads it back.
func quoteString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\', '"':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\a':
			b.WriteString(`\a`)
		case '\b':
			b.WriteString(`\b`)
		default:
			if c >= 0x20 && c < 0x7f {
				b.WriteByte(c)
			} else {
				fmt.Fprintf(&b, `\x%02x`, c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// textCommands reply with text meant to be read as is (redis-cli prints them raw).
var textCommands = []string{"info", "cluster nodes", "cluster info", "client list", "client info", "memory doctor",
	"latency doctor", "lolwut"}

// printsAsText reports whether the command's string reply prints as text rather than quoted.
func printsAsText(args []string) bool {
	if len(args) == 0 {
		return false
	}
	name := strings.ToLower(args[0])
	if len(args) > 1 && slices.Contains(textCommands, name+" "+strings.ToLower(args[1])) {
		return true
	}
	return slices.Contains(textCommands, name)
}

// formatReply prints a reply of go-redis's Do as redis-cli prints it: strings quoted (as text
// when asText), (integer) N, (nil), numbered arrays (nested ones indented under their
// number), (empty array), and (error) MESSAGE for an error, whether Redis replied with it or
// the connection failed. RESP3 types, which a RESP2 connection does not see, print as
// redis-cli prints them too. The text ends without a newline.
func formatReply(v any, err error, asText bool) string {
	if errors.Is(err, goredis.Nil) {
		return "(nil)"
	}
	if err != nil {
		return "(error) " + err.Error()
	}
	return formatValue(v, asText)
}

func formatValue(v any, asText bool) string {
	switch x := v.(type) {
	case nil:
		return "(nil)"
	case string:
		if asText {
			return strings.TrimRight(strings.ReplaceAll(x, "\r\n", "\n"), "\n")
		}
		return quoteString(x)
	case []byte:
		return formatValue(string(x), asText)
	case int64:
		return "(integer) " + strconv.FormatInt(x, 10)
	case float64:
		return "(double) " + strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		return "(" + strconv.FormatBool(x) + ")"
	case error:
		return "(error) " + x.Error()
	case []any:
		return formatArray(x, asText)
	case map[any]any:
		return formatMap(x, asText)
	case map[string]any:
		m := make(map[any]any, len(x))
		for k, val := range x {
			m[k] = val
		}
		return formatMap(m, asText)
	}
	return fmt.Sprint(v)
}

// formatArray numbers the elements from 1, the numbers right-aligned; an element over several
// lines has its next lines indented under its first.
func formatArray(items []any, asText bool) string {
	if len(items) == 0 {
		return "(empty array)"
	}
	width := len(strconv.Itoa(len(items)))
	var b strings.Builder
	for i, item := range items {
		if i > 0 {
			b.WriteByte('\n')
		}
		prefix := fmt.Sprintf("%*d) ", width, i+1)
		b.WriteString(prefix)
		b.WriteString(indentRest(formatValue(item, asText), len(prefix)))
	}
	return b.String()
}

// formatMap prints a RESP3 map as redis-cli does ("1# key => value"), in key order so that the
// output is stable.
func formatMap(m map[any]any, asText bool) string {
	if len(m) == 0 {
		return "(empty hash)"
	}
	keys := slices.SortedFunc(maps.Keys(m), func(a, b any) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
	width := len(strconv.Itoa(len(keys)))
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte('\n')
		}
		prefix := fmt.Sprintf("%*d# ", width, i+1)
		key := formatValue(k, false) + " => "
		b.WriteString(prefix + key)
		b.WriteString(indentRest(formatValue(m[k], asText), len(prefix)+len(key)))
	}
	return b.String()
}

func indentRest(s string, n int) string {
	return strings.ReplaceAll(s, "\n", "\n"+strings.Repeat(" ", n))
}
