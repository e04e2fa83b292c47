package kubelet

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
)

// Container logs are stored one file per run of a container, in the CRI format:
// "<RFC3339Nano timestamp> <stream> <F|P> <message>".

const maxLogLine = 16 * 1024

type logWriter struct {
	mu sync.Mutex
	f  *os.File
}

func (w *logWriter) copy(stream string, r io.ReadCloser) {
	defer func() { _ = r.Close() }()
	br := bufio.NewReaderSize(r, maxLogLine)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			tag := "F"
			if line[len(line)-1] == '\n' {
				line = line[:len(line)-1]
			} else if errors.Is(err, bufio.ErrBufferFull) {
				tag = "P"
			}
			w.mu.Lock()
			_, _ = fmt.Fprintf(w.f, "%s %s %s %s\n", time.Now().UTC().Format(time.RFC3339Nano), stream, tag, line)
			w.mu.Unlock()
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}

type logLine struct {
	ts      time.Time
	stream  string
	partial bool
	msg     string
}

func parseLogLine(s string) (logLine, bool) {
	parts := strings.SplitN(s, " ", 4)
	if len(parts) < 3 {
		return logLine{}, false
	}
	ts, err := time.Parse(time.RFC3339Nano, parts[0])
	if err != nil {
		return logLine{}, false
	}
	l := logLine{ts: ts, stream: parts[1], partial: parts[2] == "P"}
	if len(parts) == 4 {
		l.msg = parts[3]
	}
	return l, true
}

func readLogLines(path string) []logLine {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out []logLine
	for _, s := range strings.Split(string(b), "\n") {
		if l, ok := parseLogLine(s); ok {
			out = append(out, l)
		}
	}
	return out
}

func formatLogLine(l logLine, timestamps bool) string {
	var b strings.Builder
	if timestamps {
		b.WriteString(l.ts.Format(time.RFC3339Nano))
		b.WriteByte(' ')
	}
	b.WriteString(l.msg)
	if !l.partial {
		b.WriteByte('\n')
	}
	return b.String()
}

// logs serves `kubectl logs` for the current (or previous) run of the container.
func (c *container) logs(ctx context.Context, opts api.ContainerLogOpts) (io.ReadCloser, error) {
	c.sb.mu.Lock()
	attempt := c.attempt
	waiting := c.state.Waiting
	done := c.logsDone[attempt]
	if opts.Previous {
		attempt--
		done = c.logsDone[attempt]
	}
	c.sb.mu.Unlock()
	if opts.Previous && attempt < 1 {
		return nil, errdefs.InvalidInputf("previous terminated container %q in pod %q not found", c.name, c.sb.key)
	}
	if attempt < 1 {
		reason := "ContainerCreating"
		if waiting != nil {
			reason = waiting.Reason
		}
		return nil, errdefs.InvalidInputf("container %q in pod %q is waiting to start: %s", c.name, c.sb.key, reason)
	}
	path := c.logPath(attempt)
	var since time.Time
	switch {
	case !opts.SinceTime.IsZero():
		since = opts.SinceTime
	case opts.SinceSeconds > 0:
		since = time.Now().Add(-time.Duration(opts.SinceSeconds) * time.Second)
	}
	keep := func(l logLine) bool { return since.IsZero() || !l.ts.Before(since) }

	var initial bytes.Buffer
	content, _ := os.ReadFile(path)
	// Only whole lines count; a line being written is picked up by follow.
	if i := bytes.LastIndexByte(content, '\n'); i >= 0 {
		content = content[:i+1]
	} else {
		content = nil
	}
	offset := int64(len(content))
	var lines []logLine
	for _, s := range strings.Split(string(content), "\n") {
		if l, ok := parseLogLine(s); ok && keep(l) {
			lines = append(lines, l)
		}
	}
	if opts.Tail > 0 && len(lines) > opts.Tail {
		lines = lines[len(lines)-opts.Tail:]
	}
	for _, l := range lines {
		initial.WriteString(formatLogLine(l, opts.Timestamps))
	}
	if !opts.Follow {
		b := initial.Bytes()
		if opts.LimitBytes > 0 && len(b) > opts.LimitBytes {
			b = b[:opts.LimitBytes]
		}
		return io.NopCloser(bytes.NewReader(b)), nil
	}
	// Follow: stream what follows the lines already read until the run ends.
	pr, pw := io.Pipe()
	go func() {
		written := 0
		write := func(s string) bool {
			if opts.LimitBytes > 0 && written+len(s) > opts.LimitBytes {
				s = s[:opts.LimitBytes-written]
			}
			n, err := io.WriteString(pw, s)
			written += n
			return err == nil && (opts.LimitBytes == 0 || written < opts.LimitBytes)
		}
		if !write(initial.String()) {
			_ = pw.Close()
			return
		}
		f, err := os.Open(path)
		if err != nil {
			pw.CloseWithError(err)
			return
		}
		defer func() { _ = f.Close() }()
		if _, err := f.Seek(offset, io.SeekStart); err != nil {
			pw.CloseWithError(err)
			return
		}
		br := bufio.NewReader(f)
		var pending string
		for {
			chunk, err := br.ReadString('\n')
			pending += chunk
			if err == nil {
				if l, ok := parseLogLine(strings.TrimSuffix(pending, "\n")); ok && keep(l) && !write(formatLogLine(l, opts.Timestamps)) {
					_ = pw.Close()
					return
				}
				pending = ""
				continue
			}
			finished := false
			if done != nil {
				select {
				case <-done:
					finished = true
				default:
				}
			}
			if finished {
				// One more read catches lines written just before the run ended.
				if rest, _ := io.ReadAll(br); len(rest) > 0 {
					for _, s := range strings.Split(pending+string(rest), "\n") {
						if l, ok := parseLogLine(s); ok && keep(l) {
							write(formatLogLine(l, opts.Timestamps))
						}
					}
				}
				_ = pw.Close()
				return
			}
			select {
			case <-ctx.Done():
				_ = pw.Close()
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return pr, nil
}
