package format

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// tailImage is a compacted file as Encode writes it (header, index, two
// scopes' chunks), its index's end, and the same file with a journal of
// three frames after it.
func tailImage(t *testing.T) (snap []byte, end int64, journal []byte) {
	t.Helper()
	c := NewContents(1<<20, 0)
	r := rand.New(rand.NewPCG(3, 4))
	for s, name := range []string{"a", "b"} {
		h := ScopeHash(name)
		c.Names[h] = name
		for i := 0; i < 50+s*20; i++ {
			v := make([]byte, 40)
			for j := range v {
				v[j] = byte(r.Uint32())
			}
			c.Put(h, Record{Key: []byte(fmt.Sprintf("key-%d-%04d", s, i)), Value: v, Inserted: 1, Used: 2})
		}
	}
	snap = c.Encode(time.Unix(1700000000, 0))
	end, ok := IndexedEnd(snap)
	if !ok || end != int64(len(snap)) {
		t.Fatalf("index end %d %v, file %d bytes", end, ok, len(snap))
	}
	h := ScopeHash("a")
	journal = AppendScopeFrame(bytes.Clone(snap), h, "a")
	journal = AppendPutFrame(journal, h, 5, []byte("key-0-0001"), []byte("newer"))
	journal = AppendPutFrame(journal, h, 6, []byte("journal-key"), []byte("journal-value"))
	return snap, end, journal
}

// lastDamage scans a whole image as a final reader does and returns the
// last damaged region.
func lastDamage(img []byte, snapEnd int64) (last Damage, all []Damage) {
	last = Damage{Off: -1}
	ScanFile(img[HeaderSize:], HeaderSize, snapEnd, true, func(Frame) {}, func(d Damage) {
		last = d
		all = append(all, d)
	})
	return last, all
}

// Every strict prefix of a journal frame appended after the snapshot is a
// torn tail; the complete frame with any one bit flipped is not, nor is any
// prefix of a snapshot frame, nor anything before the snapshot's end.
func TestTornTailIsOnlyAnAppendCutShort(t *testing.T) {
	snap, end, journal := tailImage(t)
	for _, typ := range []byte{TypePut, TypeScope, TypeTouch, 9} {
		frame := AppendFrame(nil, typ, 0, []byte("scope hash, time, key and value bytes"))
		full := append(bytes.Clone(snap), frame...)
		for n := 1; n < len(frame); n++ {
			img := full[:len(snap)+n]
			d, _ := lastDamage(img, end)
			if d.Off != int64(len(snap)) || !TornTail(d, end, img[d.Off:]) {
				t.Fatalf("type %d, %d of %d bytes: damage %+v is not a torn tail", typ, n, len(frame), d)
			}
			if TornTail(d, d.Off+1, img[d.Off:]) {
				t.Fatalf("type %d, %d bytes: a torn tail inside the snapshot", typ, n)
			}
		}
		for bit := 0; bit < 8*len(frame); bit++ {
			img := bytes.Clone(full)
			img[len(snap)+bit/8] ^= 1 << (bit % 8)
			d, _ := lastDamage(img, end)
			if d.Off < 0 || TornTail(d, end, img[d.Off:]) {
				t.Fatalf("type %d, bit %d flipped: %+v called a torn tail", typ, bit, d)
			}
		}
	}
	// The last frame of a journal, flipped: never torn.
	for bit := 0; bit < 8*(len(journal)-len(snap)); bit++ {
		img := bytes.Clone(journal)
		img[len(snap)+bit/8] ^= 1 << (bit % 8)
		if d, _ := lastDamage(img, end); d.Off+d.Len == int64(len(img)) && TornTail(d, end, img[d.Off:]) {
			t.Fatalf("journal bit %d flipped: %+v called a torn tail", bit, d)
		}
	}
	// A snapshot frame cut short (a file without an index, whose end the
	// reader does not know) is not torn either.
	chunk := AppendFrame(nil, TypeSnapshot, FrameZstd, bytes.Repeat([]byte{7}, 100))
	for n := 5; n < len(chunk); n++ {
		if tornFrame(chunk[:n]) {
			t.Fatalf("a snapshot frame cut to %d bytes is a torn tail", n)
		}
	}
}

// One bit flipped anywhere in a compacted file's snapshot, with or without
// a journal after it: the damage is never a torn tail, never crosses the
// snapshot's end, and a reader that does not hold the lock declares it too
// (nothing in a snapshot is being written).
func TestSnapshotDamageIsNeverATail(t *testing.T) {
	snap, end, journal := tailImage(t)
	for _, img := range [][]byte{snap, journal} {
		for off := int(HeaderSize); off < len(snap); off++ {
			d := bytes.Clone(img)
			d[off] ^= 0x08
			c := ReadContents(d, 0)
			// A damaged index leaves the end to the frames: none here.
			known := off >= HeaderSize+int(FrameLen(snap[HeaderSize:]))
			if c.Torn.Len != 0 || len(c.Corrupt()) == 0 || (known && c.SnapEnd != end) {
				t.Fatalf("flip at %d of %d: torn %+v, damage %+v, snapshot end %d", off, len(d), c.Torn, c.Damaged, c.SnapEnd)
			}
			for _, g := range c.Damaged {
				if g.Off < end && g.Off+g.Len > end {
					t.Fatalf("flip at %d: damage %+v crosses the snapshot's end %d", off, g, end)
				}
			}
			var dmg []Damage
			n := ScanFile(d[HeaderSize:], HeaderSize, end, false, func(Frame) {}, func(g Damage) { dmg = append(dmg, g) })
			if HeaderSize+n < end || len(dmg) == 0 || dmg[0].Off > int64(off) {
				t.Fatalf("flip at %d, not final: consumed to %d, damage %+v", off, HeaderSize+n, dmg)
			}
		}
	}
}

// A damaged last chunk followed by the first append, cut short: one
// damaged region to the end of the file, reported as the chunk's damage
// and the journal's torn tail, apart.
func TestDamageSplitAtSnapshotEnd(t *testing.T) {
	snap, end, journal := tailImage(t)
	img := bytes.Clone(journal[:len(snap)+20])
	img[len(snap)-60] ^= 0x01
	last, all := lastDamage(img, end)
	if len(all) != 2 || all[0].Off+all[0].Len != end || last.Off != end || !TornTail(last, end, img[last.Off:]) {
		t.Fatalf("damage %+v, last %+v, snapshot end %d", all, last, end)
	}
	c := ReadContents(img, 0)
	if c.Torn != last || len(c.Corrupt()) != 1 || c.Corrupt()[0] != all[0] {
		t.Fatalf("torn %+v, corrupt %+v", c.Torn, c.Corrupt())
	}
	// Without the flip the cut append is the torn tail, and nothing else.
	c = ReadContents(journal[:len(snap)+20], 0)
	if c.Torn.Len == 0 || len(c.Corrupt()) != 0 {
		t.Fatalf("torn %+v, corrupt %+v", c.Torn, c.Corrupt())
	}
}
