package store

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"testing/iotest"
)

// Whatever the sizes of writes and reads, the reader gets the writer's bytes in order, then
// io.EOF.
func TestBufferedPipeCarriesTheBytesInOrder(t *testing.T) {
	random := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(random.Uint32())
	}
	for _, size := range []int{1, 7, 4096, 1 << 20, 2 << 20} {
		p := newBufferedPipe(size)
		go func() {
			rest := data
			for len(rest) > 0 {
				n := min(len(rest), 1+random.IntN(9000))
				if _, err := p.Write(rest[:n]); err != nil {
					p.CloseWrite(err)
					return
				}
				rest = rest[n:]
			}
			p.CloseWrite(nil)
		}()
		got, err := io.ReadAll(iotest.OneByteReader(io.LimitReader(p, 1000)))
		if err != nil {
			t.Fatal(err)
		}
		rest, err := io.ReadAll(p)
		if err != nil {
			t.Fatalf("buffer %d: %v", size, err)
		}
		if got = append(got, rest...); !bytes.Equal(got, data) {
			t.Fatalf("buffer %d: read %d bytes, not the %d written in order", size, len(got), len(data))
		}
	}
}

// A writer's failure reaches the reader at its next read, even with bytes still buffered: an
// upload must not complete what a failed snapshot left.
func TestBufferedPipeFailsTheReaderAtOnce(t *testing.T) {
	p := newBufferedPipe(100)
	if _, err := p.Write([]byte("some bytes")); err != nil {
		t.Fatal(err)
	}
	cut := errors.New("snapshot cut short")
	p.CloseWrite(cut)
	if n, err := p.Read(make([]byte, 10)); n != 0 || !errors.Is(err, cut) {
		t.Fatalf("read %d, %v; want 0 and the writer's error", n, err)
	}
}

// A reader that stops (the upload failed) fails the writer, also one waiting for room.
func TestBufferedPipeFailsAWaitingWriter(t *testing.T) {
	p := newBufferedPipe(4)
	done := make(chan error, 1)
	go func() {
		_, err := p.Write([]byte("more than four bytes"))
		done <- err
	}()
	if _, err := io.ReadFull(p, make([]byte, 2)); err != nil {
		t.Fatal(err)
	}
	gone := errors.New("upload failed")
	p.CloseRead(gone)
	if err := <-done; !errors.Is(err, gone) {
		t.Fatalf("the writer got %v, want the reader's error", err)
	}
	if _, err := p.Write([]byte("x")); !errors.Is(err, gone) {
		t.Fatalf("a later write got %v", err)
	}
}
