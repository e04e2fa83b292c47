// Package gotestout reads the output of go test -v and tells, at its end, why each failed test
// failed. A CI log is often read only in part (its first failure and its tail); a failed
// test's message comes before its namespace dump, hundreds of lines above its FAIL line, so
// the summary repeats each failed test's own messages where a reader of the tail sees them.
package gotestout

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strings"
)

var (
	header  = regexp.MustCompile(`^=== (?:RUN|CONT|NAME)\s+(\S+)`)
	failed  = regexp.MustCompile(`^\s*--- FAIL: (\S+)`)
	message = regexp.MustCompile(`^( {4,})\S+\.go:\d+: `)
)

// Limits of the summary: it must stay short enough to be read at the end of a log.
const (
	messagesPerTest   = 4
	continuationLines = 2
	lineLength        = 300
)

// dumpMarker starts the namespace dump the e2e framework logs for a failed test: a record of
// what happened, not the reason, so the summary leaves it out.
const dumpMarker = "==== namespace "

type entry struct {
	indent int
	lines  []string
}

// Copy copies go test -v output from r to w line by line and, at the end of r, writes to w a
// summary of every failed test's messages (the last few, dumps left out). It returns the
// names of the failed tests in the order they failed.
func Copy(r io.Reader, w io.Writer) ([]string, error) {
	messages := map[string][]*entry{}
	var failures []string
	current := ""
	var open *entry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if _, err := fmt.Fprintln(w, line); err != nil {
			return nil, fmt.Errorf("copy test output: %w", err)
		}
		switch {
		case header.MatchString(line):
			current, open = header.FindStringSubmatch(line)[1], nil
		case failed.MatchString(line):
			failures = append(failures, failed.FindStringSubmatch(line)[1])
			open = nil
		case message.MatchString(line):
			indent := len(message.FindStringSubmatch(line)[1])
			open = &entry{indent: indent, lines: []string{strings.TrimSpace(line)}}
			if strings.Contains(line, dumpMarker) {
				open.lines = nil // kept open so its continuation lines are skipped
			}
			messages[current] = append(messages[current], open)
		case open != nil && strings.HasPrefix(line, strings.Repeat(" ", open.indent+1)):
			if open.lines != nil && len(open.lines) <= continuationLines {
				open.lines = append(open.lines, strings.TrimSpace(line))
			}
		default:
			open = nil
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read test output: %w", err)
	}
	if len(failures) == 0 {
		return nil, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "==== why %d test(s) failed (their last messages; dumps above) ====\n", len(failures))
	for _, name := range failures {
		fmt.Fprintf(&b, "--- %s\n", name)
		var kept []*entry
		for _, e := range messages[name] {
			if e.lines != nil {
				kept = append(kept, e)
			}
		}
		if len(kept) > messagesPerTest {
			kept = kept[len(kept)-messagesPerTest:]
		}
		if len(kept) == 0 {
			b.WriteString("    (no message of its own: see its subtests, or a panic or timeout above)\n")
		}
		for _, e := range kept {
			for i, l := range e.lines {
				if len(l) > lineLength {
					l = l[:lineLength] + "…"
				}
				indent := "    "
				if i > 0 {
					indent = "        "
				}
				b.WriteString(indent + l + "\n")
			}
		}
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return nil, fmt.Errorf("write the summary: %w", err)
	}
	return failures, nil
}
