package store

import (
	"io"
	"sync"
)

// bufferedPipe is an io.Pipe with room for a fixed number of bytes: the writer goes on while
// the reader is busy elsewhere, up to that many bytes ahead. An upload reads a part, then
// sends it; with a plain pipe the snapshot, and the Redis node streaming it, waited for every
// part's round trip to the store.
//
// A writer that closes with an error fails the reader's next read at once, whatever is still
// buffered: an upload must never complete what a failed snapshot left behind.
type bufferedPipe struct {
	mu   sync.Mutex
	cond *sync.Cond
	buf  []byte // a ring: n bytes from start
	// start and n locate the buffered bytes in buf.
	start, n int
	// writeClosed is set once the writer closed, writeErr with why it failed (nil: the end
	// of the data).
	writeClosed bool
	writeErr    error
	// readErr is set once the reader closed: why it stopped reading.
	readErr error
}

func newBufferedPipe(size int) *bufferedPipe {
	p := &bufferedPipe{buf: make([]byte, size)}
	p.cond = sync.NewCond(&p.mu)
	return p
}

// Write copies b into the buffer, waiting for room; it fails once the reader has closed.
func (p *bufferedPipe) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	written := 0
	for len(b) > 0 {
		for p.n == len(p.buf) && p.readErr == nil {
			p.cond.Wait()
		}
		switch {
		case p.readErr != nil:
			return written, p.readErr
		case p.writeClosed:
			return written, io.ErrClosedPipe
		}
		end := (p.start + p.n) % len(p.buf)
		chunk := min(len(p.buf)-p.n, len(b), len(p.buf)-end)
		copy(p.buf[end:end+chunk], b[:chunk])
		p.n += chunk
		b = b[chunk:]
		written += chunk
		p.cond.Broadcast()
	}
	return written, nil
}

// Read returns buffered bytes, waiting for some; io.EOF once the writer closed and all is
// read, the writer's error as soon as it failed.
func (p *bufferedPipe) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.n == 0 && !p.writeClosed && p.readErr == nil {
		p.cond.Wait()
	}
	switch {
	case p.readErr != nil:
		return 0, io.ErrClosedPipe
	case p.writeErr != nil:
		return 0, p.writeErr
	case p.n == 0:
		return 0, io.EOF
	}
	chunk := min(len(b), p.n, len(p.buf)-p.start)
	copy(b, p.buf[p.start:p.start+chunk])
	p.start = (p.start + chunk) % len(p.buf)
	p.n -= chunk
	p.cond.Broadcast()
	return chunk, nil
}

// CloseWrite ends the writer's side: err nil is the end of the data, any other the writer's
// failure, which the reader gets next.
func (p *bufferedPipe) CloseWrite(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.writeClosed {
		p.writeClosed, p.writeErr = true, err
	}
	p.cond.Broadcast()
}

// CloseRead ends the reader's side: the writer's next write fails with err.
func (p *bufferedPipe) CloseRead(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.readErr == nil {
		p.readErr = cmpErr(err, io.ErrClosedPipe)
	}
	p.cond.Broadcast()
}
