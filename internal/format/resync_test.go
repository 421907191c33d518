package format

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math/rand/v2"
	"testing"

	"github.com/convcache/convcache/internal/hostile"
)

// The checkpointed checksum of a frame equals the direct one, for every
// payload length and checkpoint alignment.
func TestFrameCRCFromCheckpoints(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, 5000)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	for trial := 0; trial < 2000; trial++ {
		p := r.IntN(len(b) - FrameHeaderSize)
		end := p + FrameHeaderSize + r.IntN(len(b)-p-FrameHeaderSize+1)
		want := crc32.Update(crc32.Checksum(b[p+4:p+12], castagnoli), castagnoli, b[p+FrameHeaderSize:end])
		s := scanner{b: b}
		if base := r.IntN(p + FrameHeaderSize + 1); trial%2 == 0 {
			s.base, s.cp = base, []uint32{0} // checkpoints started earlier
		}
		if got := s.frameCRC(p, end); got != want {
			t.Fatalf("frame at %d ending %d: %08x, want %08x", p, end, got, want)
		}
	}
}

// naiveScan is the scan before checkpoints: every candidate checked
// directly over its whole claim. It is the reference for what a scan finds.
func naiveScan(b []byte, final bool) (frames [][2]int, dmg [][2]int, used int) {
	valid := func(p int) int {
		c := b[p:]
		if len(c) < FrameHeaderSize || binary.LittleEndian.Uint32(c) != frameSync {
			return 0
		}
		plen := binary.LittleEndian.Uint32(c[8:])
		if plen > MaxFramePayload || binary.LittleEndian.Uint16(c[6:]) != 0 || FrameHeaderSize+int(plen) > len(c) {
			return 0
		}
		end := FrameHeaderSize + int(plen)
		crc := crc32.Update(crc32.Checksum(c[4:12], castagnoli), castagnoli, c[FrameHeaderSize:end])
		if crc != binary.LittleEndian.Uint32(c[12:]) {
			return 0
		}
		return end
	}
	p := 0
	for p < len(b) {
		if n := valid(p); n > 0 {
			frames = append(frames, [2]int{p, n})
			p += n
			continue
		}
		q := -1
		for i := p + 1; i < len(b); i++ {
			if bytes.HasPrefix(b[i:], syncBytes) && valid(i) > 0 {
				q = i
				break
			}
		}
		if q < 0 {
			if !final {
				return frames, dmg, p
			}
			q = len(b)
		}
		dmg = append(dmg, [2]int{p, q - p})
		p = q
	}
	return frames, dmg, p
}

func scanAll(b []byte, final bool) (frames [][2]int, dmg [][2]int, used int) {
	u := Scan(b, 0, final, func(f Frame) {
		frames = append(frames, [2]int{int(f.Off), FrameHeaderSize + len(f.Payload)})
	}, func(d Damage) { dmg = append(dmg, [2]int{int(d.Off), int(d.Len)}) })
	return frames, dmg, int(u)
}

func sameScan(t *testing.T, name string, b []byte) {
	t.Helper()
	for _, final := range []bool{false, true} {
		f1, d1, u1 := naiveScan(b, final)
		f2, d2, u2 := scanAll(b, final)
		if u1 != u2 || len(f1) != len(f2) || len(d1) != len(d2) {
			t.Fatalf("%s (final %v): naive %d frames %d damage used %d; scan %d frames %d damage used %d",
				name, final, len(f1), len(d1), u1, len(f2), len(d2), u2)
		}
		for i := range f1 {
			if f1[i] != f2[i] {
				t.Fatalf("%s: frame %d: %v vs %v", name, i, f1[i], f2[i])
			}
		}
		for i := range d1 {
			if d1[i] != d2[i] {
				t.Fatalf("%s: damage %d: %v vs %v", name, i, d1[i], d2[i])
			}
		}
	}
}

// The linear scan finds exactly what the naive one finds: on damaged
// journals, on every hostile class (small builds), and on frames nested in
// other frames' payloads.
func TestScanMatchesNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	base, _ := testFrames(40)
	for trial := 0; trial < 300; trial++ {
		b := bytes.Clone(base)
		for n := r.IntN(4); n >= 0; n-- {
			switch r.IntN(3) {
			case 0:
				b[r.IntN(len(b))] ^= byte(1 + r.IntN(255))
			case 1: // a fake header claiming some length
				p := r.IntN(len(b) - FrameHeaderSize)
				copy(b[p:], syncBytes)
				binary.LittleEndian.PutUint32(b[p+4:], 1)
				binary.LittleEndian.PutUint32(b[p+8:], uint32(r.IntN(len(b))))
			case 2:
				b = b[:r.IntN(len(b))]
			}
		}
		sameScan(t, "damaged journal", b)
	}
	for _, c := range hostile.Classes() {
		sameScan(t, c.Name, c.Build(min(c.Size, 64<<10), "s")[HeaderSize:])
	}
	// A valid frame inside another's payload, the outer one damaged: the
	// inner one is found.
	inner := AppendPutFrame(nil, 1, 2, []byte("inner"), []byte("v"))
	outer := AppendFrame(nil, TypePut, 0, append(bytes.Repeat([]byte{1}, 100), inner...))
	outer[20] ^= 1
	sameScan(t, "nested", append(outer, inner...))
}

// A scan costs CRC work linear in the bytes scanned, whatever they hold:
// a fake header every 16 bytes claiming the rest of the file cost the
// square of the file before.
func TestScanWorkIsLinear(t *testing.T) {
	for _, name := range []string{"sync-storm", "sync-storm-tail", "sync-alternate", "damage-flood"} {
		c := classNamed(t, name)
		b := c.Build(1<<20, "s")[HeaderSize:]
		for _, final := range []bool{false, true} {
			before := crcWork.Load()
			Scan(b, 0, final, func(Frame) {}, nil)
			work := crcWork.Load() - before
			if limit := int64(InitialCredit + 8*len(b)); work > limit {
				t.Errorf("%s (final %v): %d bytes of CRC for %d bytes, limit %d", name, final, work, len(b), limit)
			}
		}
	}
}

func classNamed(t testing.TB, name string) hostile.Class {
	c, ok := hostile.Named(name)
	if !ok {
		t.Fatalf("no hostile class %q", name)
	}
	return c
}
