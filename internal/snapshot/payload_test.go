package snapshot

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestCRC64MatchesRedis(t *testing.T) {
	// The check value of CRC-64/Jones as Redis's own crc64 test states it.
	if got := crcUpdate(0, []byte("123456789")); got != 0xe9c6d914c4b8d9ca {
		t.Fatalf("crc64 of 123456789 = %016x, want e9c6d914c4b8d9ca", got)
	}
	// Continued over pieces it is the same.
	if got := crcUpdate(crcUpdate(0, []byte("1234")), []byte("56789")); got != 0xe9c6d914c4b8d9ca {
		t.Fatalf("crc64 in two pieces = %016x", got)
	}
}

// Every form, split at every byte boundary, read one byte at a time and in random chunks,
// with the smallest copy buffer and a large one: the payload comes out whole and checked.
func TestReadPayloadAtEverySplit(t *testing.T) {
	payload := makeRDB(11, body(300), true)
	// A body holding most of the mark must not end the EOF form early.
	tricky := makeRDB(11, append(body(50), testMark[:markLen-1]...), true)
	forms := map[string][]byte{
		"length":               lengthForm(3, payload),
		"eof":                  eofForm(3, payload),
		"eof, near-mark":       eofForm(0, tricky),
		"length, no keepalive": lengthForm(0, payload),
	}
	for name, reply := range forms {
		want := payload
		if strings.Contains(name, "near-mark") {
			want = tricky
		}
		check := func(t *testing.T, sizes []int, bufLen int) {
			t.Helper()
			info, out, err := parse(reply, sizes, bufLen)
			if err != nil {
				t.Fatalf("sizes %v buf %d: %v", sizes, bufLen, err)
			}
			if !bytes.Equal(out, want) {
				t.Fatalf("sizes %v buf %d: got %d bytes, want %d", sizes, bufLen, len(out), len(want))
			}
			if info.Bytes != int64(len(want)) || info.SHA256 != sha256.Sum256(want) ||
				info.RDBVersion != 11 || info.Checksum != ChecksumVerified ||
				info.Diskless != strings.HasPrefix(name, "eof") {
				t.Fatalf("sizes %v buf %d: info %+v", sizes, bufLen, info)
			}
		}
		t.Run(name, func(t *testing.T) {
			for _, bufLen := range []int{2 * markLen, 4096} {
				check(t, []int{1}, bufLen)
				for k := 1; k < len(reply); k++ {
					check(t, []int{k, len(reply)}, bufLen)
					check(t, []int{k, 1, 2, 3}, bufLen)
				}
				rng := rand.New(rand.NewPCG(1, 2))
				for range 200 {
					sizes := make([]int, 20)
					for i := range sizes {
						sizes[i] = 1 + rng.IntN(97)
					}
					check(t, sizes, bufLen)
				}
			}
		})
	}
}

func TestReadPayloadChecks(t *testing.T) {
	good := makeRDB(11, body(100), true)
	badCRC := bytes.Clone(good)
	badCRC[20] ^= 1
	noEOF := bytes.Clone(good)
	noEOF[len(noEOF)-9] = 0x00
	cases := []struct {
		name    string
		reply   []byte
		wantErr error
		check   Checksum
		empty   bool // nothing may reach the writer
	}{
		{"zero checksum", lengthForm(0, makeRDB(11, body(10), false)), nil, ChecksumOff, false},
		{"version 4, no checksum", eofForm(1, makeRDB(4, body(10), false)), nil, ChecksumAbsent, false},
		{"valkey 9 magic", lengthForm(0, append([]byte("VALKEY080"), good[9:]...)), ErrChecksum, 0, false},
		{"bad magic", lengthForm(0, append([]byte("NOTAN0011"), good[9:]...)), ErrBadMagic, 0, true},
		{"version 0", lengthForm(0, append([]byte("REDIS0000"), good[9:]...)), ErrBadMagic, 0, true},
		{"short header", lengthForm(0, []byte("REDI")), ErrTruncated, 0, true},
		{"bad crc", eofForm(0, badCRC), ErrChecksum, 0, false},
		{"no end opcode", lengthForm(0, noEOF), ErrTruncated, 0, false},
		{"length form cut", lengthForm(2, good)[:60], ErrTruncated, 0, false},
		{"eof form without mark", eofForm(2, good)[:len(eofForm(2, good))-1], ErrTruncated, 0, false},
		{"nothing after keepalives", []byte("\n\n\n"), ErrTruncated, 0, true},
		{"header line cut", []byte("\n$12"), nil, 0, true},
		{"simple reply", []byte("+OK\r\n"), ErrProtocol, 0, true},
		{"bad length", []byte("$x1\r\n"), ErrProtocol, 0, true},
		{"negative length", []byte("$-1\r\n"), ErrProtocol, 0, true},
		{"short mark", []byte("$EOF:abc\r\n"), ErrProtocol, 0, true},
		{"no CR", []byte("$12\n"), ErrProtocol, 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			info, out, err := parse(c.reply, []int{7}, 4096)
			switch {
			case c.name == "valkey 9 magic":
				// The header is accepted; the CRC covers the Redis header it was made with.
				if !errors.Is(err, ErrChecksum) || info.RDBVersion != 80 {
					t.Fatalf("err %v, version %d", err, info.RDBVersion)
				}
			case c.name == "header line cut":
				if err == nil {
					t.Fatal("no error")
				}
			case c.wantErr == nil:
				if err != nil || info.Checksum != c.check {
					t.Fatalf("err %v, checksum %v, want %v", err, info.Checksum, c.check)
				}
			default:
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("err %v, want %v", err, c.wantErr)
				}
			}
			if c.empty && len(out) > 0 {
				t.Fatalf("%d bytes reached the writer", len(out))
			}
		})
	}
}

func TestReadPayloadServerError(t *testing.T) {
	r := bufio.NewReader(strings.NewReader("\n\n-NOMASTERLINK Can't SYNC while not connected with my master\r\n"))
	_, err := readPayload(r, &bytes.Buffer{}, make([]byte, 128))
	var serr *ServerError
	if !errors.As(err, &serr) || serr.Code() != "NOMASTERLINK" || serr.Command != "SYNC" {
		t.Fatalf("err %v", err)
	}
}

// Bytes after the payload (commands streamed by a server without rdb-only) stay unread.
func TestReadPayloadLeavesWhatFollows(t *testing.T) {
	payload := makeRDB(9, body(40), true)
	for _, reply := range [][]byte{lengthForm(0, payload), eofForm(0, payload)} {
		reply = append(bytes.Clone(reply), "*1\r\n$4\r\nPING\r\n"...)
		_, out, err := parse(reply, []int{1000}, 4096)
		if err != nil || !bytes.Equal(out, payload) {
			t.Fatalf("err %v, %d bytes", err, len(out))
		}
	}
}

type failingWriter struct{ after int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.after < len(p) {
		return 0, errors.New("disk full")
	}
	w.after -= len(p)
	return len(p), nil
}

func TestWriterErrorStops(t *testing.T) {
	reply := lengthForm(0, makeRDB(11, body(5000), true))
	r := bufio.NewReader(bytes.NewReader(reply))
	_, err := readPayload(r, newDigest(&failingWriter{after: 100}), make([]byte, 512))
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("err %v", err)
	}
}
