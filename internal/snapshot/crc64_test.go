package snapshot

import (
	"bytes"
	"hash/crc64"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// referenceTable is hash/crc64's table of the same polynomial: the reference crcUpdate is
// checked against.
var referenceTable = crc64.MakeTable(bits.Reverse64(0xad93d23594c935a9))

// referenceUpdate is the RDB's CRC-64 by hash/crc64, which complements the value before and
// after (initial value and final XOR all ones); complementing around it cancels both.
func referenceUpdate(crc uint64, p []byte) uint64 { return ^crc64.Update(^crc, referenceTable, p) }

func TestCRCUpdateMatchesHashCRC64(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	tests := []struct {
		name string
		crc  uint64
		data []byte
	}{
		{"empty", 0, nil},
		{"empty, a running value", 0x0123456789abcdef, nil},
		{"one byte", 0, []byte{0xff}},
		{"check string", 0, []byte("123456789")},
		{"15 bytes, under one slice", 0, random(15)},
		{"16 bytes, one slice", 0, random(16)},
		{"17 bytes, a slice and one", 0x8000000000000001, random(17)},
		{"all ones", ^uint64(0), bytes.Repeat([]byte{0xff}, 100)},
		{"zeros", 0, make([]byte, 4096)},
		{"2 KiB, where hash/crc64 slices", 42, random(2048)},
		{"64 KiB and 3", 7, random(64<<10 + 3)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := referenceUpdate(tc.crc, tc.data)
			if got := crcUpdate(tc.crc, tc.data); got != want {
				t.Fatalf("crcUpdate = %016x, hash/crc64 says %016x", got, want)
			}
			// In two pieces, split anywhere, the same.
			for _, cut := range []int{0, len(tc.data) / 3, len(tc.data)} {
				if got := crcUpdate(crcUpdate(tc.crc, tc.data[:cut]), tc.data[cut:]); got != want {
					t.Fatalf("split at %d: %016x, want %016x", cut, got, want)
				}
			}
		})
	}
}

func TestCRCSlicesFirstIsTheBytewiseTable(t *testing.T) {
	if *referenceTable != crcSlices[0] {
		t.Fatal("crcSlices[0] differs from hash/crc64's table of the polynomial")
	}
}

// FuzzCRCUpdate: crcUpdate is hash/crc64's CRC-64/Jones, whatever the data, running value and
// split.
func FuzzCRCUpdate(f *testing.F) {
	f.Add(uint64(0), []byte("123456789"), uint16(4))
	f.Add(uint64(1<<63), bytes.Repeat([]byte{0xa5}, 300), uint16(17))
	f.Add(^uint64(0), []byte{}, uint16(0))
	f.Fuzz(func(t *testing.T, crc uint64, data []byte, cut uint16) {
		want := referenceUpdate(crc, data)
		if got := crcUpdate(crc, data); got != want {
			t.Fatalf("crcUpdate(%016x, %d bytes) = %016x, hash/crc64 says %016x", crc, len(data), got, want)
		}
		c := min(int(cut), len(data))
		if got := crcUpdate(crcUpdate(crc, data[:c]), data[c:]); got != want {
			t.Fatalf("split at %d: %016x, want %016x", c, got, want)
		}
	})
}

// BenchmarkCRCUpdate compares crcUpdate with hash/crc64 on the writes a snapshot makes.
func BenchmarkCRCUpdate(b *testing.B) {
	data := make([]byte, 64<<10)
	for i := range data {
		data[i] = byte(i * 7)
	}
	for _, bc := range []struct {
		name string
		fn   func(uint64, []byte) uint64
	}{{"ours", crcUpdate}, {"hash-crc64", referenceUpdate}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			var crc uint64
			for b.Loop() {
				crc = bc.fn(crc, data)
			}
			_ = crc
		})
	}
}
