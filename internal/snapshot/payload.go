package snapshot

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ErrProtocol is returned when the server's reply is not of the replication protocol's form.
var ErrProtocol = errors.New("protocol error")

// markLen is the length of the end mark of the EOF form: 40 random characters.
const markLen = 40

// ServerError is an error reply of the server ("-NOPERM ...") to one of the commands of the
// handshake.
type ServerError struct {
	// Command is the command refused: AUTH, REPLCONF or SYNC.
	Command string
	// Message is the reply without its "-": its first word is the code (ERR, NOAUTH,
	// WRONGPASS, NOPERM, NOMASTERLINK, ...).
	Message string
}

func (e *ServerError) Error() string { return e.Message }

// Code is the first word of the message: "NOPERM", "ERR".
func (e *ServerError) Code() string {
	code, _, _ := strings.Cut(e.Message, " ")
	return code
}

// readLine reads one CRLF-terminated line of at most the reader's buffer size.
func readLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return "", fmt.Errorf("%w: a reply line longer than %d bytes", ErrProtocol, r.Size())
	}
	if err != nil {
		if errors.Is(err, io.EOF) {
			return "", fmt.Errorf("%w: the connection ended in a reply line", io.ErrUnexpectedEOF)
		}
		return "", err
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return "", fmt.Errorf("%w: a reply line %s not ending in CRLF", ErrProtocol, quote(line))
	}
	return string(line[:len(line)-2]), nil
}

// quote shows at most 64 bytes of a reply in an error.
func quote(b []byte) string {
	if len(b) > 64 {
		return strconv.Quote(string(b[:64])) + "..."
	}
	return strconv.Quote(string(b))
}

// readPayload reads the reply to SYNC from r and writes the payload to w as it arrives:
//
//   - any number of "\n", the keepalives the server sends while it prepares the snapshot;
//   - "$<length>\r\n" and exactly length bytes (the server wrote an RDB file and sends it), or
//     "$EOF:<40-byte mark>\r\n" and the payload followed by the mark (diskless: the server
//     writes the RDB to the socket as it makes it, its length unknown beforehand);
//   - or an error reply "-...\r\n", returned as a *ServerError.
//
// buf is the copy buffer, at least markLen bytes; only it and r's buffer hold payload bytes.
// Bytes after the payload (a server that streams commands next) are left unread.
func readPayload(r *bufio.Reader, w io.Writer, buf []byte) (diskless bool, err error) {
	for {
		b, err := r.ReadByte()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return false, fmt.Errorf("%w: the connection ended before the payload", ErrTruncated)
			}
			return false, err
		}
		if b != '\n' {
			_ = r.UnreadByte() // cannot fail right after ReadByte
			break
		}
	}
	line, err := readLine(r)
	if err != nil {
		return false, err
	}
	if len(buf) < 2*markLen {
		buf = make([]byte, 2*markLen)
	}
	switch {
	case strings.HasPrefix(line, "-"):
		return false, &ServerError{Command: "SYNC", Message: line[1:]}
	case strings.HasPrefix(line, "$EOF:"):
		mark := line[len("$EOF:"):]
		if len(mark) != markLen {
			return true, fmt.Errorf("%w: an end mark of %d bytes, not %d", ErrProtocol, len(mark), markLen)
		}
		return true, copyUntilMark(r, w, []byte(mark), buf)
	case strings.HasPrefix(line, "$"):
		n, err := strconv.ParseInt(line[1:], 10, 64)
		if err != nil || n < 0 {
			return false, fmt.Errorf("%w: a payload length %q", ErrProtocol, line[1:])
		}
		return false, copyLength(r, w, n, buf)
	}
	return false, fmt.Errorf("%w: SYNC answered %s", ErrProtocol, quote([]byte(line)))
}

// copyLength copies exactly n bytes of r to w.
func copyLength(r io.Reader, w io.Writer, n int64, buf []byte) error {
	for left := n; left > 0; {
		chunk := buf
		if int64(len(chunk)) > left {
			chunk = chunk[:left]
		}
		k, err := r.Read(chunk)
		if k > 0 {
			if _, werr := w.Write(chunk[:k]); werr != nil {
				return werr
			}
			left -= int64(k)
		}
		if err != nil && left > 0 {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("%w: the connection ended after %d of %d bytes", ErrTruncated, n-left, n)
			}
			return err
		}
	}
	return nil
}

// copyUntilMark copies r to w up to the first occurrence of mark. (A server's replica instead
// looks for the mark at the end of each read, sure that nothing follows it; the first
// occurrence is the same payload whatever the reads, and the mark, 40 random characters made
// for this transfer, occurs in no payload.) The last len(mark)-1 bytes
// read are held back at the front of buf, so that a mark split across reads is found; the
// rest of every read is written at once.
func copyUntilMark(r io.Reader, w io.Writer, mark, buf []byte) error {
	held := 0
	var written int64
	for {
		k, err := r.Read(buf[held:])
		data := buf[:held+k]
		if i := bytes.Index(data, mark); i >= 0 {
			if _, werr := w.Write(data[:i]); werr != nil {
				return werr
			}
			return nil
		}
		keep := min(len(mark)-1, len(data))
		if out := data[:len(data)-keep]; len(out) > 0 {
			if _, werr := w.Write(out); werr != nil {
				return werr
			}
			written += int64(len(out))
		}
		held = copy(buf, data[len(data)-keep:])
		if err != nil {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("%w: the connection ended after %d bytes, before the end mark", ErrTruncated, written+int64(held))
			}
			return err
		}
	}
}
