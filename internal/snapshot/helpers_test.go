package snapshot

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"strconv"
)

// testMark is a 40-byte end mark.
const testMark = "0123456789abcdef0123456789abcdef01234567"

// makeRDB is an RDB-shaped payload: a header of the given version, the body, the
// end-of-file opcode and (version 5 and later) the CRC-64 of all that, or zero when !checksum.
func makeRDB(version int, body []byte, checksum bool) []byte {
	b := []byte("REDIS" + pad4(version))
	b = append(b, body...)
	b = append(b, opcodeEOF)
	if version < firstChecksumVersion {
		return b
	}
	var crc uint64
	if checksum {
		crc = crcUpdate(0, b)
	}
	return binary.LittleEndian.AppendUint64(b, crc)
}

func pad4(v int) string {
	s := strconv.Itoa(v)
	for len(s) < 4 {
		s = "0" + s
	}
	return s
}

// body is n bytes of varied content, none of them a newline, deterministic.
func body(n int) []byte {
	b := make([]byte, n)
	x := uint32(2463534242)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

// lengthForm and eofForm frame a payload as a server does, after some keepalives.
func lengthForm(keepalives int, payload []byte) []byte {
	b := bytes.Repeat([]byte("\n"), keepalives)
	b = append(b, "$"+strconv.Itoa(len(payload))+"\r\n"...)
	return append(b, payload...)
}

func eofForm(keepalives int, payload []byte) []byte {
	b := bytes.Repeat([]byte("\n"), keepalives)
	b = append(b, "$EOF:"+testMark+"\r\n"...)
	b = append(b, payload...)
	return append(b, testMark...)
}

// chunkReader returns its data in reads of the given sizes, in turn, then of the last size.
type chunkReader struct {
	data  []byte
	sizes []int
	i     int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := r.sizes[min(r.i, len(r.sizes)-1)]
	r.i++
	n = min(n, len(p), len(r.data))
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

// parse runs the framing parser and the digest over a reply read in chunks of the given sizes.
func parse(reply []byte, sizes []int, bufLen int) (Info, []byte, error) {
	var out bytes.Buffer
	d := newDigest(&out)
	var info Info
	r := bufio.NewReaderSize(&chunkReader{data: reply, sizes: sizes}, 64)
	diskless, err := readPayload(r, d, make([]byte, bufLen))
	info.Diskless = diskless
	if ferr := d.finish(&info); err == nil {
		err = ferr
	}
	return info, out.Bytes(), err
}
