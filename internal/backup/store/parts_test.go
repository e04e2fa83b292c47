package store

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

// drain takes every part as an uploader does, giving each buffer back, and returns them
// (copied, as the buffers are filled again).
func drain(q *partQueue) []part {
	var got []part
	for {
		p, ok := q.Next()
		if !ok {
			return got
		}
		got = append(got, part{data: bytes.Clone(p.data), sha256: p.sha256})
		q.Sent(p.data)
	}
}

// Whatever the sizes of the writes, the parts are the bytes in order, cut at the part size,
// the last one shorter (an empty object: one empty part), each with its SHA-256 when hashed.
func TestPartQueueCutsTheBytesIntoParts(t *testing.T) {
	random := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 10_000)
	for i := range data {
		data[i] = byte(random.Uint32())
	}
	tests := []struct {
		name      string
		size, n   int
		maxWrite  int
		hashed    bool
		wantParts int
	}{
		{"nothing written", 100, 0, 10, true, 1},
		{"less than a part", 100, 99, 7, true, 1},
		{"exactly a part", 100, 100, 100, false, 1},
		{"a part and a byte", 100, 101, 1000, true, 2},
		{"many parts, small writes", 64, 10_000, 5, true, 157},
		{"many parts, writes larger than a part", 1000, 10_000, 3000, false, 10},
		{"a part of one byte", 1, 5, 2, true, 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := newPartQueue(tc.size, tc.hashed)
			go func() {
				rest := data[:tc.n]
				for len(rest) > 0 {
					k := min(len(rest), 1+random.IntN(tc.maxWrite))
					if n, err := q.Write(rest[:k]); err != nil || n != k {
						q.CloseWrite(err)
						return
					}
					rest = rest[k:]
				}
				q.CloseWrite(nil)
			}()
			parts := drain(q)
			if err := q.WriteErr(); err != nil {
				t.Fatal(err)
			}
			if len(parts) != tc.wantParts {
				t.Fatalf("%d parts, want %d", len(parts), tc.wantParts)
			}
			var joined []byte
			for i, p := range parts {
				if i < len(parts)-1 && len(p.data) != tc.size {
					t.Fatalf("part %d of %d bytes, want %d", i+1, len(p.data), tc.size)
				}
				sum := sha256.Sum256(p.data)
				if tc.hashed && !bytes.Equal(p.sha256, sum[:]) || !tc.hashed && p.sha256 != nil {
					t.Fatalf("part %d: SHA-256 %x, want %x (hashed %v)", i+1, p.sha256, sum, tc.hashed)
				}
				joined = append(joined, p.data...)
			}
			if !bytes.Equal(joined, data[:tc.n]) {
				t.Fatalf("the parts hold %d bytes, not the %d written in order", len(joined), tc.n)
			}
		})
	}
}

// A writer that fails hands over nothing more, not even what it had written of a part: the
// uploader finds its error and must not complete the upload.
func TestPartQueueWriterFailureHandsNoMore(t *testing.T) {
	q := newPartQueue(100, true)
	boom := errors.New("the source went away")
	go func() {
		_, _ = q.Write(make([]byte, 250)) // two parts, and half of a third
		q.CloseWrite(boom)
	}()
	parts := drain(q)
	if len(parts) != 2 || !errors.Is(q.WriteErr(), boom) {
		t.Fatalf("%d parts, writer's error %v; want the 2 full parts and %v", len(parts), q.WriteErr(), boom)
	}
}

// Once the uploader stops, the writer's writes fail with its error, whether it waits to hand
// a part over or for a buffer, and a write after CloseWrite fails.
func TestPartQueueStoppedUploadFailsTheWriter(t *testing.T) {
	stopped := errors.New("the store went away")
	q := newPartQueue(10, false)
	done := make(chan error, 1)
	go func() {
		_, err := q.Write(make([]byte, 1000)) // more than the two buffers hold
		done <- err
	}()
	if _, ok := q.Next(); !ok { // one part taken, and never given back
		t.Fatal("no part")
	}
	q.Stop(stopped)
	if err := <-done; !errors.Is(err, stopped) {
		t.Fatalf("write after the upload stopped: %v; want %v", err, stopped)
	}
	if _, err := q.Write([]byte("x")); !errors.Is(err, stopped) {
		t.Fatalf("next write: %v; want %v", err, stopped)
	}
	q.CloseWrite(nil) // hands nothing: the uploader is gone
	if !errors.Is(q.WriteErr(), stopped) {
		t.Fatalf("WriteErr %v, want %v", q.WriteErr(), stopped)
	}

	c := newPartQueue(10, false)
	go func() { drain(c) }()
	c.CloseWrite(nil)
	if _, err := c.Write([]byte("x")); !errors.Is(err, errWriteClosed) {
		t.Fatalf("write after CloseWrite: %v; want %v", err, errWriteClosed)
	}
}

// The writer runs at most one part ahead of the upload: with one part taken and not given
// back, it fills the second buffer and waits; never a third.
func TestPartQueueHoldsTwoBuffers(t *testing.T) {
	q := newPartQueue(10, false)
	wrote := make(chan int, 1)
	go func() {
		n, _ := q.Write(make([]byte, 35))
		wrote <- n
	}()
	first, _ := q.Next()
	second, _ := q.Next()
	time.Sleep(10 * time.Millisecond) // for a writer that would go on to return
	// Both buffers are out: the writer has 15 more bytes and no buffer for them.
	select {
	case n := <-wrote:
		t.Fatalf("the writer wrote %d bytes with both buffers taken", n)
	default:
	}
	q.Sent(first.data)
	third, _ := q.Next()
	if &third.data[0] != &first.data[0] || q.made != 2 {
		t.Fatalf("the third part is not in the first's buffer (%d buffers made)", q.made)
	}
	q.Sent(second.data)
	q.Sent(third.data)
	if n := <-wrote; n != 35 {
		t.Fatalf("wrote %d of 35", n)
	}
	go q.CloseWrite(nil) // the writer's goroutine closes, once its writes returned
	last, ok := q.Next()
	if !ok || len(last.data) != 5 {
		t.Fatalf("last part %d bytes (%v), want 5", len(last.data), ok)
	}
}
