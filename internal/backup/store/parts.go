package store

import (
	"crypto/sha256"
	"errors"
	"hash"
	"sync"
)

// partQueue hands an upload's parts from the writer, who fills them, to the uploader, who
// sends them: two buffers of a part each, one being sent while the other fills, so that a
// part's upload and the writing of the next overlap (without, the snapshot and the Redis
// node streaming it would wait for every part's round trip to the store). The writer's bytes
// are copied once, into the part that is sent, and the two sides meet once a part: a pipe in
// front of minio-go's own part buffer copied every byte twice and woke the uploader at every
// write.
//
// With hashing on, each part comes with the SHA-256 of its bytes, computed as they are copied
// in, while they are still in the processor's cache; hashed once the part is full, 16 MiB
// later, they would be read back from memory.
//
// A writer that closes with an error hands over no more parts, whatever it had written: an
// upload must never complete what a failed snapshot left behind.
type partQueue struct {
	size int
	// sha hashes the part being filled; nil: parts go without a hash.
	sha hash.Hash
	// spare holds the buffers the uploader has sent, for the writer to fill again.
	spare chan []byte
	// full carries the filled parts, in order; closed once the writer closed.
	full chan part
	// ended is closed once the uploader takes no more parts, endErr saying why.
	ended   chan struct{}
	endOnce sync.Once
	endErr  error
	// writeErr is why the writer closed (nil: the end of the data), set before full is
	// closed.
	writeErr error

	// The writer's side only.
	cur    []byte // the part being filled; nil before its buffer is taken
	made   int    // buffers allocated, at most two
	handed bool   // a part was handed over
	closed bool
}

// part is a filled part, with the SHA-256 of data when the queue hashes.
type part struct {
	data   []byte
	sha256 []byte
}

// newPartQueue makes a queue of parts of size bytes, each with its SHA-256 when hashed.
func newPartQueue(size int, hashed bool) *partQueue {
	q := &partQueue{size: size, spare: make(chan []byte, 2), full: make(chan part), ended: make(chan struct{})}
	if hashed {
		q.sha = sha256.New()
	}
	return q
}

// errWriteClosed is a Write after CloseWrite.
var errWriteClosed = errors.New("write after the end of the data")

// Write copies b into parts, handing each over as it fills; it waits while both buffers are
// taken, and fails once the uploader has stopped.
func (q *partQueue) Write(b []byte) (int, error) {
	if q.closed {
		return 0, errWriteClosed
	}
	select {
	case <-q.ended:
		return 0, q.endErr
	default:
	}
	written := 0
	for len(b) > 0 {
		if q.cur == nil {
			if err := q.take(); err != nil {
				return written, err
			}
		}
		k := copy(q.cur[len(q.cur):cap(q.cur)], b)
		if q.sha != nil {
			q.sha.Write(q.cur[len(q.cur) : len(q.cur)+k])
		}
		q.cur = q.cur[:len(q.cur)+k]
		b = b[k:]
		written += k
		if len(q.cur) == cap(q.cur) {
			if err := q.hand(); err != nil {
				return written, err
			}
		}
	}
	return written, nil
}

// take gets an empty buffer: a spare one, a new one while fewer than two exist, or the first
// the uploader gives back.
func (q *partQueue) take() error {
	select {
	case b := <-q.spare:
		q.cur = b[:0]
		return nil
	default:
	}
	if q.made < 2 {
		q.made++
		q.cur = make([]byte, 0, q.size)
		return nil
	}
	select {
	case b := <-q.spare:
		q.cur = b[:0]
		return nil
	case <-q.ended:
		return q.endErr
	}
}

// hand passes the current part to the uploader, waiting until it takes it.
func (q *partQueue) hand() error {
	p := part{data: q.cur}
	if q.sha != nil {
		p.sha256 = q.sha.Sum(nil)
		q.sha.Reset()
	}
	select {
	case q.full <- p:
		q.cur, q.handed = nil, true
		return nil
	case <-q.ended:
		return q.endErr
	}
}

// CloseWrite ends the writer's side: with err nil it hands over the last part (an empty one
// when nothing was written, so that the object exists, empty), with any other err nothing
// more; the uploader then finds the writer's error in WriteErr.
func (q *partQueue) CloseWrite(err error) {
	if q.closed {
		return
	}
	q.closed = true
	if err == nil && (len(q.cur) > 0 || !q.handed) {
		if q.cur == nil {
			q.cur = []byte{}
		}
		err = q.hand()
	}
	q.writeErr = err
	close(q.full)
}

// Next is the next part to send; false once the writer closed and every part was taken.
func (q *partQueue) Next() (part, bool) {
	p, ok := <-q.full
	return p, ok
}

// Sent gives a part's buffer back once it is sent, for the writer to fill again.
func (q *partQueue) Sent(b []byte) {
	if cap(b) == q.size {
		q.spare <- b // never blocks: at most two buffers exist
	}
}

// WriteErr is the writer's error, once Next has returned false.
func (q *partQueue) WriteErr() error { return q.writeErr }

// Stop ends the uploader's side: the writer's next write fails with err.
func (q *partQueue) Stop(err error) {
	q.endOnce.Do(func() {
		q.endErr = cmpErr(err, errors.New("upload ended"))
		close(q.ended)
	})
}
