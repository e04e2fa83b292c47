package snapshot

import (
	"encoding/binary"
	"math/bits"
)

// The RDB's CRC-64 computed 16 bytes at a time (slicing-by-16). hash/crc64 keeps ready
// slicing tables only for its ECMA and ISO polynomials: for any other table it builds (and
// allocates) a fresh slicing-by-8 table on every call of 2 KiB or more, and compares the
// table against both of its own first, which cost a snapshot's stream about a sixth of its
// CPU. The tables here are built once; the results are hash/crc64's, which the tests check.

// jonesReflected is CRC-64/Jones's polynomial 0xad93d23594c935a9, bit-reversed for the
// reflected (least significant bit first) form the RDB uses.
var jonesReflected = bits.Reverse64(0xad93d23594c935a9)

// crcSlices[0] is the byte-at-a-time table; crcSlices[k][b] is the CRC of the byte b followed
// by k zero bytes, so that 16 input bytes fold in with 16 independent look-ups.
var crcSlices = makeCRCSlices(jonesReflected)

func makeCRCSlices(poly uint64) *[16][256]uint64 {
	t := new([16][256]uint64)
	for b := range 256 {
		crc := uint64(b)
		for range 8 {
			if crc&1 == 1 {
				crc = crc>>1 ^ poly
			} else {
				crc >>= 1
			}
		}
		t[0][b] = crc
	}
	for b := range 256 {
		crc := t[0][b]
		for k := 1; k < 16; k++ {
			crc = t[0][crc&0xff] ^ crc>>8
			t[k][b] = crc
		}
	}
	return t
}

// crcUpdate continues an RDB CRC-64 (initial value 0, no final XOR) over p.
func crcUpdate(crc uint64, p []byte) uint64 {
	t := crcSlices
	for len(p) >= 16 {
		a := crc ^ binary.LittleEndian.Uint64(p)
		b := binary.LittleEndian.Uint64(p[8:16])
		crc = t[15][a&0xff] ^ t[14][(a>>8)&0xff] ^ t[13][(a>>16)&0xff] ^ t[12][(a>>24)&0xff] ^
			t[11][(a>>32)&0xff] ^ t[10][(a>>40)&0xff] ^ t[9][(a>>48)&0xff] ^ t[8][a>>56] ^
			t[7][b&0xff] ^ t[6][(b>>8)&0xff] ^ t[5][(b>>16)&0xff] ^ t[4][(b>>24)&0xff] ^
			t[3][(b>>32)&0xff] ^ t[2][(b>>40)&0xff] ^ t[1][(b>>48)&0xff] ^ t[0][b>>56]
		p = p[16:]
	}
	for _, c := range p {
		crc = t[0][(crc^uint64(c))&0xff] ^ crc>>8
	}
	return crc
}
