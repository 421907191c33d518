package format

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"
	"time"
)

// indexedContents returns contents of three scopes, one of them large
// enough for several chunks.
func indexedContents(n int) *Contents {
	c := NewContents(1<<30, 0)
	for i := 0; i < n; i++ {
		c.Put(ScopeHash("big"), Record{Key: []byte(fmt.Sprintf("key-%07d-%s", i, bytes.Repeat([]byte("k"), 60))),
			Value: bytes.Repeat([]byte{byte(i), byte(i >> 8), byte(i >> 16)}, 16), Inserted: 1, Used: 2})
	}
	c.Put(ScopeHash("small"), Record{Key: []byte("only"), Value: []byte("v"), Inserted: 1, Used: 1})
	c.Put(7, Record{Key: []byte("unnamed"), Value: []byte("v"), Inserted: 1, Used: 1})
	c.Names[ScopeHash("big")] = "big"
	c.Names[ScopeHash("small")] = "small"
	return c
}

func firstFrame(t *testing.T, img []byte) Frame {
	t.Helper()
	n := FrameLen(img[HeaderSize:])
	f, ok := ParseFrame(img[HeaderSize:HeaderSize+n], HeaderSize)
	if !ok {
		t.Fatal("no valid frame after the header")
	}
	return f
}

// Encode writes the index first; it lists exactly the snapshot frames that
// follow it, and where the snapshot ends, as a full scan finds them.
func TestSnapshotIndexMatchesFrames(t *testing.T) {
	img := indexedContents(20000).Encode(time.Unix(1700000000, 0))
	x, ok := DecodeSnapshotIndex(firstFrame(t, img), int64(len(img)))
	if !ok {
		t.Fatal("the index does not decode")
	}
	var snaps []Frame
	end := int64(HeaderSize)
	budget := NewBudget(int64(len(img)))
	Scan(img[HeaderSize:], HeaderSize, true, func(f Frame) {
		if ExtendsSnapshot(f, end) {
			end = f.End()
		}
		if f.Type == TypeSnapshot {
			snaps = append(snaps, f)
		}
	}, func(d Damage) { t.Fatalf("damage %+v", d) })
	if x.End != end || end != int64(len(img)) {
		t.Fatalf("index says the snapshot ends at %d; it ends at %d of %d", x.End, end, len(img))
	}
	if len(snaps) != len(x.Chunks) || len(snaps) < 4 {
		t.Fatalf("%d chunks indexed, %d in the file", len(x.Chunks), len(snaps))
	}
	for i, ch := range x.Chunks {
		f := snaps[i]
		head, _ := DecodeSnapshotHead(f.Payload)
		if ch.Off != f.Off || ch.Len != f.End()-f.Off || ch.Scope != head.Scope || ch.Count != head.Count {
			t.Fatalf("chunk %d: index %+v, frame at %d of %d bytes, scope %x, %d entries", i, ch, f.Off, f.End()-f.Off, head.Scope, head.Count)
		}
		_, recs, _, err := DecodeSnapshot(f, nil, nil, true, &budget)
		if err != nil {
			t.Fatal(err)
		}
		run := x.Run(ch.Scope)
		var next []byte
		j := ChunkFor(run, ch.First)
		if j+1 < len(run) {
			next = run[j+1].First
		}
		if run[j].Off != ch.Off || !ch.Holds(recs, next) {
			t.Fatalf("chunk %d does not hold what its index says", i)
		}
		// Every key of the chunk is found in it.
		for _, r := range recs {
			if k := ChunkFor(run, r.Key); run[k].Off != ch.Off {
				t.Fatalf("%q: index names chunk at %d, it is in %d", r.Key, run[k].Off, ch.Off)
			}
		}
	}
	if r := x.Run(ScopeHash("nowhere")); len(r) != 0 {
		t.Fatalf("a scope with no chunks has %d", len(r))
	}
	if big := x.Run(ScopeHash("big")); ChunkFor(big, []byte("a")) != -1 || ChunkFor(big, []byte("zzz")) != len(big)-1 {
		t.Fatal("keys before and after the run")
	}
	// An empty snapshot has no index.
	if img := NewContents(0, 0).Encode(time.Now()); len(img) != HeaderSize {
		t.Fatalf("an empty file is %d bytes", len(img))
	}
	t.Logf("%d entries: %d bytes, index %d bytes for %d chunks", 20002, len(img), x.Chunks[0].Off-HeaderSize, len(x.Chunks))
}

// A snapshot whose values compress more than ExpandFactor is padded after
// its chunks; the index's end covers the padding.
func TestSnapshotIndexEndCoversPadding(t *testing.T) {
	c := NewContents(1<<30, 0)
	for i := 0; i < 8; i++ {
		c.Put(1, Record{Key: []byte{byte('a' + i)}, Value: make([]byte, MaxValueSize)})
	}
	img := c.Encode(time.Now())
	x, ok := DecodeSnapshotIndex(firstFrame(t, img), int64(len(img)))
	last := x.Chunks[len(x.Chunks)-1]
	if !ok || x.End != int64(len(img)) || last.Off+last.Len >= x.End {
		t.Fatalf("ok %v, end %d, chunks end %d, file %d", ok, x.End, last.Off+last.Len, len(img))
	}
}

// indexPayload builds an index payload by hand: layout, end, count, then
// each chunk's fields.
type rawChunk struct {
	scope          uint64
	flen, count, k uint64 // k: the key's length as written
	key            string
}

func indexFrame(layout byte, end uint64, count uint64, chunks []rawChunk) Frame {
	p := []byte{layout}
	p = binary.LittleEndian.AppendUint64(p, end)
	p = binary.AppendUvarint(p, count)
	for _, c := range chunks {
		p = binary.LittleEndian.AppendUint64(p, c.scope)
		p = binary.AppendUvarint(p, c.flen)
		p = binary.AppendUvarint(p, c.count)
		p = binary.AppendUvarint(p, c.k)
		p = append(p, c.key...)
	}
	return Frame{Off: HeaderSize, Type: TypePad, Flags: PadIndex, Payload: p}
}

// Every count and length in an index is a hint: a malformed, implausible
// or inconsistent one is refused, never trusted further than its bytes.
func TestSnapshotIndexRefused(t *testing.T) {
	const size = 1 << 20
	ok := func(k string) rawChunk { return rawChunk{1, 1000, 10, uint64(len(k)), k} }
	good := indexFrame(1, 48+100+2000, 2, []rawChunk{ok("a"), ok("b")})
	fix := func(f Frame) Frame {
		// The chunks start after the frame: make end exactly their end.
		x := append([]byte(nil), f.Payload...)
		binary.LittleEndian.PutUint64(x[1:], uint64(HeaderSize+FrameHeaderSize+len(x)+2000))
		f.Payload = x
		return f
	}
	if _, valid := DecodeSnapshotIndex(fix(good), size); !valid {
		t.Fatal("the good index is refused")
	}
	cases := map[string]Frame{
		"layout 2":            fix(indexFrame(2, 0, 2, []rawChunk{ok("a"), ok("b")})),
		"huge count":          fix(indexFrame(1, 0, 1<<40, []rawChunk{ok("a"), ok("b")})),
		"count beyond bytes":  fix(indexFrame(1, 0, 3, []rawChunk{ok("a"), ok("b")})),
		"fewer than counted":  fix(indexFrame(1, 0, 1, []rawChunk{ok("a"), ok("b")})),
		"chunk past EOF":      fix(indexFrame(1, 0, 2, []rawChunk{ok("a"), {1, size, 10, 1, "b"}})),
		"frame too short":     fix(indexFrame(1, 0, 2, []rawChunk{ok("a"), {1, 27, 10, 1, "b"}})),
		"frame too long":      fix(indexFrame(1, 0, 2, []rawChunk{ok("a"), {1, 1 << 40, 10, 1, "b"}})),
		"count over u32":      fix(indexFrame(1, 0, 2, []rawChunk{ok("a"), {1, 1000, 1 << 33, 1, "b"}})),
		"empty key":           fix(indexFrame(1, 0, 2, []rawChunk{ok("a"), {1, 1000, 10, 0, ""}})),
		"key past payload":    fix(indexFrame(1, 0, 2, []rawChunk{ok("a"), {1, 1000, 10, 9, "b"}})),
		"key too long":        fix(indexFrame(1, 0, 1, []rawChunk{{1, 1000, 10, MaxKeySize + 1, string(make([]byte, MaxKeySize+1))}})),
		"keys out of order":   fix(indexFrame(1, 0, 2, []rawChunk{ok("b"), ok("a")})),
		"same key twice":      fix(indexFrame(1, 0, 2, []rawChunk{ok("a"), ok("a")})),
		"scopes out of order": fix(indexFrame(1, 0, 2, []rawChunk{{2, 1000, 10, 1, "a"}, {1, 1000, 10, 1, "b"}})),
		"truncated":           {Off: HeaderSize, Type: TypePad, Flags: PadIndex, Payload: fix(good).Payload[:20]},
		"trailing bytes":      {Off: HeaderSize, Type: TypePad, Flags: PadIndex, Payload: append(fix(good).Payload, 0)},
		"plain pad":           {Off: HeaderSize, Type: TypePad, Payload: fix(good).Payload},
		"not first":           {Off: HeaderSize + 16, Type: TypePad, Flags: PadIndex, Payload: fix(good).Payload},
		"snapshot type":       {Off: HeaderSize, Type: TypeSnapshot, Flags: PadIndex, Payload: fix(good).Payload},
	}
	for name, f := range cases {
		if _, valid := DecodeSnapshotIndex(f, size); valid {
			t.Errorf("%s: accepted", name)
		}
	}
	// The end: before the chunks' end, or past the file.
	for _, end := range []uint64{0, HeaderSize + FrameHeaderSize + uint64(len(good.Payload)) + 1999, size + 1, 1 << 63, 1<<64 - 1} {
		f := fix(good)
		binary.LittleEndian.PutUint64(f.Payload[1:], end)
		if _, valid := DecodeSnapshotIndex(f, size); valid {
			t.Errorf("end %d: accepted", end)
		}
	}
}

// Holds checks what a decoded chunk holds against its entry.
func TestIndexedChunkHolds(t *testing.T) {
	recs := func(keys ...string) []Record {
		var r []Record
		for _, k := range keys {
			r = append(r, Record{Key: []byte(k)})
		}
		return r
	}
	ch := IndexedChunk{Count: 3, First: []byte("b")}
	for _, c := range []struct {
		recs []Record
		next string
		want bool
	}{
		{recs("b", "c", "d"), "e", true},
		{recs("b", "c", "d"), "", true},
		{recs("b", "c", "e"), "e", false}, // reaches the next chunk's first key
		{recs("a", "c", "d"), "e", false}, // not the first key indexed
		{recs("b", "d", "c"), "", false},  // not sorted
		{recs("b", "c", "c"), "", false},  // a key twice
		{recs("b", "c"), "", false},       // fewer than indexed
		{nil, "", false},
	} {
		var next []byte
		if c.next != "" {
			next = []byte(c.next)
		}
		if got := ch.Holds(c.recs, next); got != c.want {
			t.Errorf("%d records, next %q: %v, want %v", len(c.recs), c.next, got, c.want)
		}
	}
}

// ParseFrame accepts exactly one whole, valid frame.
func TestParseFrame(t *testing.T) {
	f := AppendPutFrame(nil, 1, 2, []byte("k"), []byte("v"))
	if got, ok := ParseFrame(f, 100); !ok || got.Off != 100 || got.Type != TypePut || got.End() != 100+int64(len(f)) {
		t.Fatalf("%+v %v", got, ok)
	}
	if FrameLen(f) != int64(len(f)) || FrameLen(f[:10]) != 0 {
		t.Fatal("FrameLen")
	}
	bad := bytes.Clone(f)
	bad[len(bad)-1] ^= 1
	for _, b := range [][]byte{nil, f[:10], f[:len(f)-1], append(bytes.Clone(f), 0), bad} {
		if _, ok := ParseFrame(b, 0); ok {
			t.Errorf("%d bytes accepted", len(b))
		}
	}
}
