package snapshot

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rediskube/redis-operator/internal/redis"
)

// fakeServer answers the commands of one connection from a script: for each command it
// expects (space-joined), the raw reply to send. After the script it sends tail, then
// keeps the connection open until the test ends.
type fakeServer struct {
	t      *testing.T
	script [][2]string
	tail   []byte
	got    chan []string
}

// dial is an Options.Dial that connects to the fake server over a pipe.
func (f *fakeServer) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	f.got = make(chan []string, 16)
	done := make(chan struct{})
	f.t.Cleanup(func() { close(done); _ = server.Close() })
	go func() {
		defer close(f.got)
		r := bufio.NewReader(server)
		for _, step := range f.script {
			cmd, err := readCommand(r)
			if err != nil {
				return
			}
			f.got <- cmd
			if strings.Join(cmd, " ") != step[0] {
				_, _ = io.WriteString(server, "-ERR unexpected "+strings.Join(cmd, " ")+"\r\n")
				return
			}
			if _, err := io.WriteString(server, step[1]); err != nil {
				return
			}
		}
		_, _ = server.Write(f.tail)
		<-done
	}()
	return client, ctx.Err()
}

// commands are the commands received so far: each is in before its reply is sent.
func (f *fakeServer) commands() []string {
	var all []string
	for {
		select {
		case cmd, ok := <-f.got:
			if !ok {
				return all
			}
			all = append(all, strings.Join(cmd, " "))
		default:
			return all
		}
	}
}

// readCommand reads one RESP array of bulk strings.
func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := readLine(r)
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(strings.TrimPrefix(line, "*"))
	if err != nil {
		return nil, err
	}
	args := make([]string, n)
	for i := range args {
		if _, err := readLine(r); err != nil {
			return nil, err
		}
		if args[i], err = readLine(r); err != nil {
			return nil, err
		}
	}
	return args, nil
}

var fakeEndpoint = redis.NewEndpoint("10.0.0.1", 6379, redis.Auth{})

func handshake(syncReply string) [][2]string {
	return [][2]string{
		{"REPLCONF capa eof", "+OK\r\n"},
		{"REPLCONF rdb-only 1", "+OK\r\n"},
		{"SYNC", syncReply},
	}
}

func TestStreamHandshake(t *testing.T) {
	payload := makeRDB(11, body(1000), true)
	f := &fakeServer{t: t, script: append([][2]string{
		{"AUTH backup s3 cret", "-WRONGPASS invalid username-password pair or user is disabled.\r\n"},
		{"AUTH default s3 cret", "+OK\r\n"},
	}, handshake("\n\n")...), tail: eofForm(0, payload)}
	ep := fakeEndpoint
	ep.Auth = redis.Auth{Username: "backup", Password: "s3 cret", OrUsername: redis.DefaultUser}
	var out bytes.Buffer
	info, err := Stream(context.Background(), ep, &out, Options{Dial: f.dial})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), payload) || !info.Diskless || info.Checksum != ChecksumVerified || info.Bytes != int64(len(payload)) {
		t.Fatalf("info %+v, %d bytes", info, out.Len())
	}
	want := []string{"AUTH backup s3 cret", "AUTH default s3 cret", "REPLCONF capa eof", "REPLCONF rdb-only 1", "SYNC"}
	if got := f.commands(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("commands %q, want %q", got, want)
	}
}

// A server older than Redis 7.0 does not know rdb-only: the snapshot is taken all the same,
// and what it streams after the payload is not read.
func TestStreamServerWithoutRDBOnly(t *testing.T) {
	payload := makeRDB(9, body(100), true)
	script := handshake("")
	script[1][1] = "-ERR Unrecognized REPLCONF option: rdb-only\r\n"
	tail := append(lengthForm(1, payload), "*1\r\n$4\r\nPING\r\n"...)
	f := &fakeServer{t: t, script: script, tail: tail}
	var out bytes.Buffer
	info, err := Stream(context.Background(), fakeEndpoint, &out, Options{Dial: f.dial})
	if err != nil || info.Diskless || !bytes.Equal(out.Bytes(), payload) {
		t.Fatalf("err %v, info %+v", err, info)
	}
}

func TestStreamRefusals(t *testing.T) {
	cases := []struct {
		name   string
		script [][2]string
		code   string
		cmd    string
	}{
		{"no password given", [][2]string{{"REPLCONF capa eof", "-NOAUTH Authentication required.\r\n"}}, "NOAUTH", "REPLCONF"},
		{"no replconf permission", [][2]string{{"REPLCONF capa eof", "-NOPERM User backup has no permissions to run the 'replconf' command\r\n"}}, "NOPERM", "REPLCONF"},
		{"no sync permission", handshake("-NOPERM User backup has no permissions to run the 'sync' command\r\n"), "NOPERM", "SYNC"},
		{"replica not synced", handshake("\n-NOMASTERLINK Can't SYNC while not connected with my master\r\n"), "NOMASTERLINK", "SYNC"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeServer{t: t, script: c.script}
			var out bytes.Buffer
			_, err := Stream(context.Background(), fakeEndpoint, &out, Options{Dial: f.dial})
			var serr *ServerError
			if !errors.As(err, &serr) || serr.Code() != c.code || serr.Command != c.cmd {
				t.Fatalf("err %v", err)
			}
			if !strings.Contains(err.Error(), "snapshot of 10.0.0.1:6379: "+c.cmd+": "+c.code) {
				t.Fatalf("message %q", err)
			}
			if out.Len() != 0 {
				t.Fatalf("%d bytes written", out.Len())
			}
		})
	}
}

// A server that stops sending (keepalives included) is given up after the idle timeout; a
// context that ends stops the transfer at once, whatever the idle timeout.
func TestStreamTimeouts(t *testing.T) {
	stall := makeRDB(11, body(100), true)[:50]
	t.Run("idle", func(t *testing.T) {
		f := &fakeServer{t: t, script: handshake("$100\r\n"), tail: stall}
		start := time.Now()
		_, err := Stream(context.Background(), fakeEndpoint, io.Discard, Options{Dial: f.dial, IdleTimeout: 200 * time.Millisecond})
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("err %v", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("gave up after %v", d)
		}
	})
	t.Run("context", func(t *testing.T) {
		f := &fakeServer{t: t, script: handshake("$100\r\n"), tail: stall}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := Stream(ctx, fakeEndpoint, io.Discard, Options{Dial: f.dial})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err %v", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("gave up after %v", d)
		}
	})
}

func TestStreamRefusesBadEndpoint(t *testing.T) {
	if _, err := Stream(context.Background(), redis.Endpoint{Port: 6379}, io.Discard, Options{}); err == nil {
		t.Fatal("no error without a host")
	}
}
