package format

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"sync"
	"sync/atomic"
)

// Resynchronising after damage must cost time linear in the bytes scanned,
// whatever the damage holds. A candidate frame header claims a payload of
// up to MaxFramePayload bytes; checking each candidate's checksum over its
// whole claim, as a plain scan does, costs the square of the region when
// the region is full of fake headers (one every 12 bytes can each claim the
// rest of the file).
//
// So a scanner checks candidates through checkpoints: the CRC-32C of the
// buffer from a base up to every crcStride-th byte, extended lazily and
// never recomputed. The checksum of any byte range then follows from two
// checkpoints, at most 2*crcStride bytes of direct CRC and one
// multiplication by x^(8n) in GF(2) (zlib's crc32_combine). Every candidate
// is still checked exactly, so recovery finds exactly the frames a plain
// scan finds: one flipped byte still costs one record.

// crcStride is the distance between checkpoints: 1/16 of the region in
// memory, and less than 2*crcStride bytes of direct CRC per candidate.
const crcStride = 64

// castagnoliReflected is the CRC-32C polynomial, bit-reversed.
const castagnoliReflected = 0x82F63B78

// x2n[k] is x^(2^k) mod p for the CRC-32C polynomial p, in the reflected
// representation.
var x2n = func() (t [shiftBits + 3]uint32) {
	t[0] = 1 << 30 // x^1
	for k := 1; k < len(t); k++ {
		t[k] = multModP(t[k-1], t[k-1])
	}
	return t
}()

// multModP returns a*b mod p in GF(2), reflected (zlib's multmodp).
func multModP(a, b uint32) uint32 {
	m := uint32(1) << 31
	var p uint32
	for {
		if a&m != 0 {
			p ^= b
			if a&(m-1) == 0 {
				return p
			}
		}
		m >>= 1
		if b&1 != 0 {
			b = b>>1 ^ castagnoliReflected
		} else {
			b >>= 1
		}
	}
}

// shiftBits is how many bits a shift length may have: a frame payload is
// at most MaxFramePayload bytes.
const shiftBits = 27

// shiftTables[b] multiplies by x^(8*2^b) a byte at a time: multiplication
// by a constant is linear, so the product of a CRC is the XOR of the
// products of its four bytes. Built on first use (about a millisecond): a
// file without damage never needs them.
var (
	shiftOnce   sync.Once
	shiftTables *[shiftBits][4][256]uint32
)

func buildShiftTables() {
	t := new([shiftBits][4][256]uint32)
	for b := range t {
		k := x2n[b+3]
		for j := range t[b] {
			for v := range t[b][j] {
				t[b][j][v] = multModP(k, uint32(v)<<(8*j))
			}
		}
	}
	shiftTables = t
}

// crcShift returns crc multiplied by x^(8n): the term a CRC contributes to
// the CRC of itself followed by n more bytes. n < 2^shiftBits.
func crcShift(crc uint32, n int) uint32 {
	shiftOnce.Do(buildShiftTables)
	for b := 0; n != 0; b, n = b+1, n>>1 {
		if n&1 != 0 {
			t := &shiftTables[b]
			crc = t[0][crc&0xff] ^ t[1][crc>>8&0xff] ^ t[2][crc>>16&0xff] ^ t[3][crc>>24]
		}
	}
	return crc
}

// crcWork counts the bytes scans have passed through CRC-32C, for tests
// that check the work is linear without timing anything.
var crcWork atomic.Int64

// CRCWork returns the bytes every scan so far has passed through CRC-32C:
// the measure of a scan's work, for tests (of this package and of the
// engine's reads) that bound it without timing anything.
func CRCWork() int64 { return crcWork.Load() }

// scanner checks frames in one buffer. The zero value checks directly; the
// checkpoints are built on first use.
type scanner struct {
	b    []byte
	base int      // checkpoints cover b[base:]
	cp   []uint32 // cp[i] = CRC-32C of b[base : base+i*crcStride]
	work int64    // bytes passed through CRC-32C
}

// prefix returns the CRC-32C of b[s.base:i], extending the checkpoints as
// far as i needs. i >= s.base.
func (s *scanner) prefix(i int) uint32 {
	for k := (i - s.base) / crcStride; len(s.cp) <= k; {
		n := len(s.cp)
		from := s.base + (n-1)*crcStride
		s.cp = append(s.cp, crc32.Update(s.cp[n-1], castagnoli, s.b[from:from+crcStride]))
		s.work += crcStride
	}
	k := (i - s.base) / crcStride
	from := s.base + k*crcStride
	s.work += int64(i - from)
	return crc32.Update(s.cp[k], castagnoli, s.b[from:i])
}

// frameCRC returns the checksum of the frame at b[p:] whose payload ends at
// end, from the checkpoints, starting them at the payload if there are none
// yet (a scan only moves forward, so no later position is before it).
//
// With Q(i) the CRC of b[base:i] and h the CRC of the header's checked
// bytes, CRC(b[i:j]) = Q(j) ^ shift(Q(i), j-i) and CRC(h || payload) =
// shift(h, len) ^ CRC(payload), so the frame's checksum is
// shift(h ^ Q(payload start), len) ^ Q(end): one shift.
func (s *scanner) frameCRC(p, end int) uint32 {
	start := p + FrameHeaderSize
	if s.cp == nil {
		s.base = start
		s.cp = []uint32{0}
	}
	h := crc32.Update(0, castagnoli, s.b[p+4:p+12])
	s.work += 8
	return crcShift(h^s.prefix(start), end-start) ^ s.prefix(end)
}

// frameLen returns the length of the complete, valid frame at b[p:], or 0.
// A claimed payload larger than direct bytes is checked through the
// checkpoints.
func (s *scanner) frameLen(p int, direct uint32) int {
	b := s.b[p:]
	if len(b) < FrameHeaderSize || binary.LittleEndian.Uint32(b) != frameSync {
		return 0
	}
	plen := binary.LittleEndian.Uint32(b[8:])
	if plen > MaxFramePayload || binary.LittleEndian.Uint16(b[6:]) != 0 {
		return 0
	}
	end := FrameHeaderSize + int(plen)
	if end > len(b) {
		return 0
	}
	var crc uint32
	if plen <= direct {
		crc = crc32.Update(0, castagnoli, b[4:12])
		crc = crc32.Update(crc, castagnoli, b[FrameHeaderSize:end])
		s.work += int64(8 + plen)
	} else {
		crc = s.frameCRC(p, p+end)
	}
	if crc != binary.LittleEndian.Uint32(b[12:]) {
		return 0
	}
	return end
}

// next returns the position of the next complete, valid frame at or after
// from, or -1. Every candidate but a tiny one is checked through the
// checkpoints, so a candidate costs at most a few hundred bytes of CRC
// whatever it claims.
func (s *scanner) next(from int) int {
	for from < len(s.b) {
		i := bytes.Index(s.b[from:], syncBytes)
		if i < 0 {
			return -1
		}
		if s.frameLen(from+i, crcStride) > 0 {
			return from + i
		}
		from += i + 1
	}
	return -1
}
