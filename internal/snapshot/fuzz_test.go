package snapshot

import (
	"bufio"
	"bytes"
	"testing"
)

// countingWriter counts and keeps what it is given.
type countingWriter struct{ bytes.Buffer }

// FuzzReadPayload feeds the framing parser arbitrary replies and framed payloads read in
// chunks of arbitrary size: it never panics, never writes more bytes than it read, and in
// either form writes exactly the payload.
func FuzzReadPayload(f *testing.F) {
	f.Add([]byte("\n\n$5\r\nhello"), []byte("REDIS0011\xff"), uint8(1), uint8(80))
	f.Add([]byte("$EOF:"+testMark+"\r\nabc"+testMark), []byte(testMark[:39]), uint8(3), uint8(0))
	f.Add([]byte("-ERR no\r\n"), []byte{}, uint8(200), uint8(255))
	f.Add([]byte("$-1\r\n"), []byte("\n\n\n"), uint8(0), uint8(1))
	f.Fuzz(func(t *testing.T, raw, payload []byte, chunk, bufLen uint8) {
		sizes := []int{int(chunk%64) + 1, int(chunk/4) + 1}
		buf := make([]byte, int(bufLen)) // under 2*markLen the parser takes its own

		// Arbitrary input: no panic, no more out than in.
		var out countingWriter
		r := bufio.NewReaderSize(&chunkReader{data: raw, sizes: sizes}, 64)
		_, _ = readPayload(r, &out, buf)
		if out.Len() > len(raw) {
			t.Fatalf("%d bytes out of %d in", out.Len(), len(raw))
		}

		// Framed: the payload comes out exactly, whichever the form; the EOF form ends at the
		// first mark, should the payload hold one or end with a beginning of it that the mark
		// completes (a real mark is 40 random characters: neither happens).
		withMark := append(bytes.Clone(payload), testMark...)
		eofWant, _, _ := bytes.Cut(withMark, []byte(testMark))
		forms := []struct{ reply, want []byte }{
			{lengthForm(int(chunk%3), payload), payload},
			{eofForm(int(chunk%3), payload), eofWant},
		}
		for _, form := range forms {
			var out countingWriter
			r := bufio.NewReaderSize(&chunkReader{data: form.reply, sizes: sizes}, 64)
			if _, err := readPayload(r, &out, buf); err != nil {
				t.Fatalf("%q: %v", form.reply, err)
			}
			if !bytes.Equal(out.Bytes(), form.want) {
				t.Fatalf("%q: got %q, want %q", form.reply, out.Bytes(), form.want)
			}
		}
	})
}
