package snapshot

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
)

// The RDB file format as far as a snapshot is checked: a header, opaque content, and (from
// RDB version 5 on) an end-of-file opcode followed by a CRC-64 of everything before it.
const (
	headerLen   = 9    // "REDIS0011" (Redis, Valkey 8) or "VALKEY080" (Valkey 9)
	opcodeEOF   = 0xFF // the last opcode of every RDB
	checksumLen = 8    // little-endian CRC-64 after the EOF opcode, RDB version 5 and later
	// firstChecksumVersion is the RDB version that added the trailing CRC-64 (Redis 2.6).
	firstChecksumVersion = 5
)

var (
	// ErrBadMagic is returned when the payload does not start with an RDB header: nothing has
	// been written to the writer then.
	ErrBadMagic = errors.New("the payload is not an RDB file")
	// ErrTruncated is returned when the payload ends before its announced length, before its
	// end mark, or without the RDB's end-of-file opcode.
	ErrTruncated = errors.New("the payload is truncated")
	// ErrChecksum is returned when the RDB's own CRC-64 does not match its content.
	ErrChecksum = errors.New("the RDB checksum does not match")
)

// Checksum is what became of the RDB's own trailing CRC-64.
type Checksum int

const (
	// ChecksumVerified: the CRC-64 the server wrote matches the content received.
	ChecksumVerified Checksum = iota
	// ChecksumOff: the server wrote a zero checksum (rdbchecksum no); nothing to verify.
	ChecksumOff
	// ChecksumAbsent: the RDB version (before 5) predates the checksum.
	ChecksumAbsent
)

func (c Checksum) String() string {
	switch c {
	case ChecksumVerified:
		return "verified"
	case ChecksumOff:
		return "off"
	case ChecksumAbsent:
		return "absent"
	}
	return fmt.Sprintf("Checksum(%d)", int(c))
}

// parseHeader returns the RDB version a header announces.
func parseHeader(h []byte) (int, error) {
	var digits []byte
	switch {
	case string(h[:5]) == "REDIS":
		digits = h[5:]
	case string(h[:6]) == "VALKEY":
		digits = h[6:]
	default:
		return 0, fmt.Errorf("%w: it starts with %q", ErrBadMagic, h)
	}
	version := 0
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%w: it starts with %q", ErrBadMagic, h)
		}
		version = version*10 + int(c-'0')
	}
	if version == 0 {
		return 0, fmt.Errorf("%w: RDB version 0", ErrBadMagic)
	}
	return version, nil
}

// digest is the writer the payload goes through on its way to the caller's: it holds the
// header back until it is known to be an RDB header, then passes every byte on as it comes,
// counting them and hashing them (SHA-256, and the RDB's CRC-64 except for its last 8 bytes,
// which may be the checksum itself). It keeps a few bytes, never the payload.
type digest struct {
	w       io.Writer
	sha     hash.Hash
	n       int64
	head    [headerLen]byte
	headN   int
	version int
	crc     uint64
	lastCRC byte              // the last byte in crc: the EOF opcode once the payload is whole
	tail    [checksumLen]byte // the last bytes written, not in crc yet
	tailN   int
}

func newDigest(w io.Writer) *digest { return &digest{w: w, sha: sha256.New()} }

func (d *digest) Write(p []byte) (int, error) {
	total := len(p)
	if d.headN < headerLen {
		k := copy(d.head[d.headN:], p)
		d.headN += k
		p = p[k:]
		if d.headN < headerLen {
			return total, nil
		}
		version, err := parseHeader(d.head[:])
		if err != nil {
			return 0, err
		}
		d.version = version
		if err := d.pass(d.head[:]); err != nil {
			return 0, err
		}
	}
	if len(p) == 0 {
		return total, nil
	}
	if err := d.pass(p); err != nil {
		return 0, err
	}
	return total, nil
}

func (d *digest) pass(p []byte) error {
	if _, err := d.w.Write(p); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	d.sha.Write(p)
	d.n += int64(len(p))
	if len(p) >= checksumLen {
		d.feedCRC(d.tail[:d.tailN])
		d.feedCRC(p[:len(p)-checksumLen])
		d.tailN = copy(d.tail[:], p[len(p)-checksumLen:])
		return nil
	}
	// A short write: what leaves the window of the last 8 bytes goes into the CRC.
	if over := d.tailN + len(p) - checksumLen; over > 0 {
		d.feedCRC(d.tail[:over])
		d.tailN = copy(d.tail[:], d.tail[over:d.tailN])
	}
	d.tailN += copy(d.tail[d.tailN:], p)
	return nil
}

func (d *digest) feedCRC(p []byte) {
	if len(p) == 0 {
		return
	}
	d.crc = crcUpdate(d.crc, p)
	d.lastCRC = p[len(p)-1]
}

// finish checks the end of a payload that arrived whole and describes it.
func (d *digest) finish(info *Info) error {
	info.Bytes = d.n
	info.RDBVersion = d.version
	copy(info.SHA256[:], d.sha.Sum(nil))
	if d.headN < headerLen {
		return fmt.Errorf("%w: %d bytes, fewer than an RDB header", ErrTruncated, d.headN)
	}
	if d.version == 0 {
		_, err := parseHeader(d.head[:])
		return err
	}
	if d.version < firstChecksumVersion {
		info.Checksum = ChecksumAbsent
		if d.tail[d.tailN-1] != opcodeEOF {
			return fmt.Errorf("%w: the RDB does not end with its end-of-file opcode", ErrTruncated)
		}
		return nil
	}
	if d.n < headerLen+1+checksumLen || d.lastCRC != opcodeEOF {
		return fmt.Errorf("%w: the RDB does not end with its end-of-file opcode and checksum", ErrTruncated)
	}
	stored := binary.LittleEndian.Uint64(d.tail[:])
	switch stored {
	case 0:
		info.Checksum = ChecksumOff
	case d.crc:
		info.Checksum = ChecksumVerified
	default:
		return fmt.Errorf("%w: the RDB says %016x, its content %016x", ErrChecksum, stored, d.crc)
	}
	return nil
}
