package redis_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rediskube/redis-operator/internal/redis"
)

// A refusal Redis replies to the command itself, on a connection that logged in, means the
// command was executed: it is not sent again, and new connections keep their user.
func TestClientDoesNotRetryACommandRefusedAfterLogin(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	server := startNoAuthServer(t)
	// Idle connections expire at once, so that each PING logs a new connection in.
	pool := newPool(t, redis.Options{ConnMaxIdleTime: time.Millisecond})
	c, err := pool.Client(redis.NewEndpoint("127.0.0.1", server.port, redis.Auth{Username: "redis-operator", Password: "s3cret", OrUsername: redis.DefaultUser}))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := c.Ping(ctx); err == nil || !redis.IsAuthError(err) {
			t.Fatalf("PING answered NOAUTH = %v, want an authentication error", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	pings, users := server.seen()
	if pings != 2 || len(users) != 2 || users[0] != "redis-operator" || users[1] != "redis-operator" {
		t.Errorf("2 PINGs answered NOAUTH: server saw %d PINGs and logins as %v, want 2 PINGs, both logins as redis-operator", pings, users)
	}
}

// noAuthServer speaks just enough RESP2 to accept AUTH (refusing HELLO, as a server before
// Redis 6 does) and to answer every PING NOAUTH.
type noAuthServer struct {
	port  int
	mu    sync.Mutex
	pings int
	users []string
}

func startNoAuthServer(t *testing.T) *noAuthServer {
	t.Helper()
	l, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &noAuthServer{port: l.Addr().(*net.TCPAddr).Port}
	var wg sync.WaitGroup
	var conns []net.Conn
	var connsMu sync.Mutex
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			connsMu.Lock()
			conns = append(conns, conn)
			connsMu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.serve(conn)
			}()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		connsMu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		connsMu.Unlock()
		wg.Wait()
	})
	return s
}

func (s *noAuthServer) serve(conn net.Conn) {
	rd := bufio.NewReader(conn)
	for {
		args, err := readCommand(rd)
		if err != nil {
			return
		}
		var reply string
		switch strings.ToLower(args[0]) {
		case "auth":
			s.mu.Lock()
			s.users = append(s.users, args[1])
			s.mu.Unlock()
			reply = "+OK\r\n"
		case "ping":
			s.mu.Lock()
			s.pings++
			s.mu.Unlock()
			reply = "-NOAUTH Authentication required.\r\n"
		default:
			reply = "-ERR unknown command '" + args[0] + "'\r\n"
		}
		if _, err := io.WriteString(conn, reply); err != nil {
			return
		}
	}
}

func (s *noAuthServer) seen() (pings int, users []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pings, append([]string(nil), s.users...)
}

// readCommand reads one command, an array of bulk strings, as clients send them.
func readCommand(rd *bufio.Reader) ([]string, error) {
	header, err := readLine(rd, '*')
	if err != nil {
		return nil, err
	}
	args := make([]string, header)
	for i := range args {
		size, err := readLine(rd, '$')
		if err != nil {
			return nil, err
		}
		buf := make([]byte, size+2)
		if _, err := io.ReadFull(rd, buf); err != nil {
			return nil, err
		}
		args[i] = string(buf[:size])
	}
	if len(args) == 0 {
		return nil, fmt.Errorf("empty command")
	}
	return args, nil
}

func readLine(rd *bufio.Reader, kind byte) (int, error) {
	line, err := rd.ReadString('\n')
	if err != nil {
		return 0, err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" || line[0] != kind {
		return 0, fmt.Errorf("want %q, got %q", kind, line)
	}
	return strconv.Atoi(line[1:])
}
