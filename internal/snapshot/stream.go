package snapshot

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/rediskube/redis-operator/internal/redis"
)

// DefaultIdleTimeout is how long Stream waits for the next byte unless Options say otherwise.
// A server sends a keepalive newline every second while it prepares the snapshot.
const DefaultIdleTimeout = time.Minute

// bufferSize is the size of the connection's read buffer and of the copy buffer: the memory a
// snapshot takes, whatever its size.
const bufferSize = 64 << 10

// Options tune Stream. The zero value dials with a net.Dialer and waits DefaultIdleTimeout.
type Options struct {
	// Dial opens the TCP connection; nil: a net.Dialer. TLS, when the endpoint has settings,
	// is spoken on top of what it returns.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	// IdleTimeout bounds each wait for the server: a reply to a command of the handshake, the
	// next keepalive or byte of the payload. 0: DefaultIdleTimeout. The whole transfer is
	// bounded by the context only.
	IdleTimeout time.Duration
}

// Info describes a snapshot that arrived whole and checked.
type Info struct {
	// Bytes is the size of the RDB written.
	Bytes int64
	// SHA256 is the digest of the bytes written.
	SHA256 [sha256.Size]byte
	// RDBVersion is the version in the RDB's header (10 for Redis 7.0, 11 for Redis 7.2 and
	// Valkey 8.0, 80 for Valkey 9).
	RDBVersion int
	// Checksum says whether the RDB's own CRC-64 was verified.
	Checksum Checksum
	// Diskless is true when the server wrote the RDB to the connection as it made it (the
	// EOF-mark form, repl-diskless-sync yes), false when it wrote an RDB file first and sent it.
	Diskless bool
}

// SHA256Hex is the SHA-256 digest in lower-case hexadecimal.
func (i Info) SHA256Hex() string { return hex.EncodeToString(i.SHA256[:]) }

// Stream reads a snapshot of the Redis or Valkey server at ep, the way a replica's first sync
// does, and writes it to w as it arrives: an RDB file, byte for byte. It authenticates with
// ep.Auth (a password, or a user and password; Auth.OrUsername is tried when Username is
// refused) and speaks TLS when ep.TLS is set (nil: plain TCP; Stream has no pool whose
// settings it could take).
//
// It returns once the whole RDB is written and checked (header, end-of-file opcode, CRC-64
// unless the server does not write one), or on the first error: a *ServerError for a
// refusal, ErrBadMagic, ErrTruncated, ErrChecksum, ErrProtocol, the context's error, a
// timeout, or w's error. On an error, whatever w received is not a snapshot and must be
// discarded; with ErrBadMagic it received nothing. Info is filled as far as the payload went.
func Stream(ctx context.Context, ep redis.Endpoint, w io.Writer, opts Options) (Info, error) {
	var info Info
	if ep.Host == "" || ep.Port <= 0 || ep.Port > 65535 {
		return info, fmt.Errorf("snapshot of %s: no host or port", ep.Address())
	}
	if err := ctx.Err(); err != nil {
		return info, fmt.Errorf("snapshot of %s: %w", ep.Address(), err)
	}
	idle := opts.IdleTimeout
	if idle <= 0 {
		idle = DefaultIdleTimeout
	}
	raw, conn, err := dial(ctx, ep, opts.Dial, idle)
	if err != nil {
		return info, fmt.Errorf("snapshot of %s: %w", ep.Address(), err)
	}
	// Closing the raw connection unblocks any read or write, TLS or not, at once.
	stop := context.AfterFunc(ctx, func() { _ = raw.Close() })
	defer func() {
		stop()
		// The server drops the "replica" when the connection ends; nothing to flush.
		_ = conn.Close()
	}()

	s := &session{conn: conn, idle: idle}
	s.r = bufio.NewReaderSize(idleReader{s}, bufferSize)
	err = s.run(ep.Auth, w, &info)
	if err != nil && ctx.Err() != nil {
		// The read or write failed because the context ended and closed the connection.
		err = fmt.Errorf("%w (%w)", context.Cause(ctx), err)
	}
	if err != nil {
		return info, fmt.Errorf("snapshot of %s: %w", ep.Address(), err)
	}
	return info, nil
}

// dial opens the connection, TLS when ep asks for it, and returns the raw connection with the
// one to speak on (the same without TLS).
func dial(ctx context.Context, ep redis.Endpoint, dialFn func(context.Context, string, string) (net.Conn, error), idle time.Duration) (raw, conn net.Conn, err error) {
	if dialFn == nil {
		dialFn = (&net.Dialer{KeepAlive: 15 * time.Second}).DialContext
	}
	raw, err = dialFn(ctx, "tcp", ep.Address())
	if err != nil {
		return nil, nil, fmt.Errorf("dial: %w", err)
	}
	if ep.TLS == nil {
		return raw, raw, nil
	}
	cfg := ep.TLS
	if cfg.ServerName == "" && !cfg.InsecureSkipVerify {
		cfg = cfg.Clone()
		cfg.ServerName = ep.Host
	}
	tc := tls.Client(raw, cfg)
	_ = raw.SetDeadline(time.Now().Add(idle))
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = raw.Close()
		return nil, nil, fmt.Errorf("tls handshake: %w", err)
	}
	_ = raw.SetDeadline(time.Time{})
	return raw, tc, nil
}

// session is one connection speaking the replication handshake.
type session struct {
	conn net.Conn
	r    *bufio.Reader
	idle time.Duration
}

// idleReader reads from the connection with a deadline of one idle timeout per read.
type idleReader struct{ s *session }

func (ir idleReader) Read(p []byte) (int, error) {
	if err := ir.s.conn.SetReadDeadline(time.Now().Add(ir.s.idle)); err != nil {
		return 0, err
	}
	return ir.s.conn.Read(p)
}

func (s *session) run(auth redis.Auth, w io.Writer, info *Info) error {
	if err := s.login(auth); err != nil {
		return err
	}
	// Ask for the diskless form a replica may receive, and (Redis 7.0 and later, Valkey) for
	// the RDB alone: the server then neither keeps the connection as a replica nor streams
	// its writes after the payload. Older servers do not know rdb-only; they stream writes
	// after the payload, which Stream never reads.
	if err := s.command(true, "REPLCONF", "capa", "eof"); err != nil {
		return err
	}
	if err := s.command(true, "REPLCONF", "rdb-only", "1"); err != nil {
		return err
	}
	if err := s.send("SYNC"); err != nil {
		return err
	}
	d := newDigest(w)
	diskless, err := readPayload(s.r, d, make([]byte, bufferSize))
	info.Diskless = diskless
	if err != nil {
		_ = d.finish(info) // what arrived, for the caller's log
		var serr *ServerError
		if errors.As(err, &serr) {
			return fmt.Errorf("SYNC: %w", err)
		}
		return err
	}
	return d.finish(info)
}

// login authenticates, as Auth.OrUsername once when Username is refused.
func (s *session) login(auth redis.Auth) error {
	if auth.Password == "" {
		return nil
	}
	err := s.auth(auth.Username, auth.Password)
	var serr *ServerError
	if auth.OrUsername != "" && errors.As(err, &serr) && serr.Code() == "WRONGPASS" {
		err = s.auth(auth.OrUsername, auth.Password)
	}
	return err
}

func (s *session) auth(user, password string) error {
	if user == "" {
		return s.command(false, "AUTH", password)
	}
	return s.command(false, "AUTH", user, password)
}

// command sends a command and reads its simple reply; with optionUnknownOK, an error saying
// the option is not recognised (a server older than the option) counts as success.
func (s *session) command(optionUnknownOK bool, args ...string) error {
	if err := s.send(args...); err != nil {
		return err
	}
	line, err := readLine(s.r)
	if err != nil {
		return fmt.Errorf("%s: %w", args[0], err)
	}
	switch {
	case strings.HasPrefix(line, "+"):
		return nil
	case strings.HasPrefix(line, "-"):
		serr := &ServerError{Command: args[0], Message: line[1:]}
		if optionUnknownOK && serr.Code() == "ERR" && strings.Contains(serr.Message, "Unrecognized REPLCONF option") {
			return nil
		}
		return fmt.Errorf("%s: %w", args[0], serr)
	}
	return fmt.Errorf("%s: %w: reply %s", args[0], ErrProtocol, quote([]byte(line)))
}

// send writes one command as a RESP array of bulk strings.
func (s *session) send(args ...string) error {
	var b []byte
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, '\r', '\n')
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	if err := s.conn.SetWriteDeadline(time.Now().Add(s.idle)); err != nil {
		return fmt.Errorf("%s: %w", args[0], err)
	}
	if _, err := s.conn.Write(b); err != nil {
		return fmt.Errorf("%s: %w", args[0], err)
	}
	return nil
}
