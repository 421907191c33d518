package hostile

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/cespare/xxhash/v2"
	"github.com/zeebo/xxh3"
)

// Class is one kind of hostile file.
type Class struct {
	Name string
	Doc  string
	// Size is the file size the harness uses by default: large enough that
	// a reader that is not linear, or not bounded, shows it.
	Size int
	// Build writes the class at about size bytes (some classes are a fixed
	// size). Entries meant for the reader's own scope use scope.
	Build func(size int, scope string) []byte
}

// OtherScope names the scope of entries the reader must never return.
const OtherScope = "hostile-other"

// Named returns the class called name, and whether there is one.
func Named(name string) (Class, bool) {
	for _, c := range Classes() {
		if c.Name == name {
			return c, true
		}
	}
	return Class{}, false
}

// Classes returns every class, in a fixed order.
func Classes() []Class {
	return []Class{
		{"count-own", "a snapshot frame of the reader's scope claiming 2^32-1 entries (under 100 bytes)", 0, countOwn},
		{"count-other", "leading snapshot chunks of another scope, each claiming 2^32-1 entries, then a journal", 64 << 10, countOther},
		{"bomb-big", "one chunk decoding to 127 MiB: 127 records of 1 MiB values, a few kilobytes on disk", 0, bombBig},
		{"bomb-many", "chunks that each decode to the per-chunk maximum (a 4 KiB key, a 1 MiB value), both scopes", 256 << 10, bombMany},
		{"bomb-tiny", "chunks of tiny records: the most entries per byte", 256 << 10, bombTiny},
		{"repeat-puts", "one key written again and again with new values, in puts and in chunks", 256 << 10, repeatPuts},
		{"sync-storm", "a fake frame header every 16 bytes, each claiming a payload to the end, then valid frames", 2 << 20, syncStorm},
		{"sync-storm-tail", "a fake frame header every 16 bytes, each claiming a payload to the end, as the file's tail", 2 << 20, syncStormTail},
		{"sync-alternate", "valid small frames, each followed by a fake header claiming a payload to the end", 1 << 20, syncAlternate},
		{"damage-flood", "valid puts alternating with frames whose checksum is wrong", 1 << 20, damageFlood},
		{"oversized", "headers claiming 64 MiB, 64 MiB + 1 and 4 GiB payloads; an 8 MiB touch frame", 9 << 20, oversized},
		{"tiny-frames", "16-byte frames of unknown types and empty payloads", 1 << 20, tinyFrames},
		{"scope-flood", "scope frames naming many scopes with 4 KiB names, and puts in each", 1 << 20, scopeFlood},
		{"touch-flood", "touch frames listing many key hashes", 1 << 20, touchFlood},
		{"max-kv", "puts and chunks with 4 KiB keys and 1 MiB values, and some one byte over each limit", 4 << 20, maxKV},
		{"zstd-odd", "chunks with no content size, lying sizes, skippable and concatenated frames, huge windows, dictionaries", 256 << 10, zstdOdd},
		{"varint-garbage", "uncompressed chunks and puts whose lengths are huge or overlong varints", 64 << 10, varintGarbage},
		{"hash-flood", "keys whose index hashes (XXH3) share their low 12 bits", 128 << 10, hashFlood},
		{"scope-mislabel", "another scope's entries under the reader's scope name (a name that does not hash to its scope)", 0, scopeMislabel},
	}
}

func key(prefix string, i int) []byte { return []byte(fmt.Sprintf("%s-%08d", prefix, i)) }

func countOwn(_ int, scope string) []byte {
	body := Compress(Chunk(scope, []Rec{{Key: []byte("k"), Value: []byte("v")}}))
	return Snapshot(Header(), ScopeHash(scope), math.MaxUint32, FlagZstd, body)
}

func countOther(size int, scope string) []byte {
	b := Header()
	other := ScopeHash(OtherScope)
	for i := 0; len(b) < size*3/4; i++ {
		recs := []Rec{{Key: key("other", i), Value: []byte("value")}}
		b = Snapshot(b, other, math.MaxUint32, FlagZstd, Compress(Chunk(OtherScope, recs)))
	}
	b = Scope(b, ScopeHash(scope), scope)
	for i := 0; len(b) < size; i++ {
		b = Put(b, ScopeHash(scope), key("own", i), []byte("value"))
	}
	return b
}

func bombBig(_ int, scope string) []byte {
	z := &Zstd{}
	z.Raw(ChunkHead(scope))
	const n = 127
	for i := 0; i < n; i++ {
		k := key("bomb", i)
		z.Raw(append(RecHead(len(k), MaxValue), k...)).Run(byte(i), MaxValue)
	}
	z.FCS = z.Size()
	return Snapshot(Header(), ScopeHash(scope), n, FlagZstd, z.Bytes())
}

// maxChunk is a chunk of one record with a maximal key and value.
func maxChunk(scope string, i int) []byte {
	k := key("max", i)
	z := &Zstd{}
	z.Raw(ChunkHead(scope)).Raw(append(RecHead(MaxKey, MaxValue), k...))
	z.Run('k', int64(MaxKey-len(k))).Run(byte(i), MaxValue)
	z.FCS = z.Size()
	return z.Bytes()
}

func bombMany(size int, scope string) []byte {
	b := Header()
	for i := 0; len(b) < size; i++ {
		s := scope
		if i%2 == 1 {
			s = OtherScope
		}
		b = Snapshot(b, ScopeHash(s), 1, FlagZstd, maxChunk(s, i))
	}
	return b
}

func bombTiny(size int, scope string) []byte {
	b := Header()
	for c := 0; len(b) < size; c++ {
		s := scope
		if c%2 == 1 {
			s = OtherScope
		}
		raw := ChunkHead(s)
		n := 0
		for ; len(raw) < ChunkRaw; n++ {
			k := []byte{byte(n), byte(n >> 8), byte(n >> 16), byte(c)}
			raw = append(append(raw, RecHead(len(k), 0)...), k...)
		}
		b = Snapshot(b, ScopeHash(s), uint32(n), FlagZstd, Compress(raw))
	}
	return b
}

func repeatPuts(size int, scope string) []byte {
	b := Scope(Header(), ScopeHash(scope), scope)
	h := ScopeHash(scope)
	// Chunks of one key with 16 different 64 KiB values each.
	for i := 0; len(b) < size/2; i++ {
		z := &Zstd{}
		z.Raw(ChunkHead(scope))
		for j := 0; j < 16; j++ {
			z.Raw(append(RecHead(1, 64<<10), 'k')).Run(byte(i*16+j), 64<<10)
		}
		z.FCS = z.Size()
		b = Snapshot(b, h, 16, FlagZstd, z.Bytes())
	}
	v := make([]byte, 1024)
	for i := 0; len(b) < size; i++ {
		binary.LittleEndian.PutUint64(v, uint64(i))
		b = Put(b, h, []byte("k"), v)
	}
	return b
}

// fakeHeaders appends fake put headers every 16 bytes up to end, each
// claiming a payload that runs exactly to end.
func fakeHeaders(b []byte, end int) []byte {
	b = append(b, make([]byte, max(end-len(b), 0)%FrameHeader)...)
	for len(b)+FrameHeader <= end {
		claim := uint32(end - len(b) - FrameHeader)
		b = append(b, syncWord...)
		b = append(b, TypePut, 0, 0, 0)
		b = binary.LittleEndian.AppendUint32(b, claim)
		b = binary.LittleEndian.AppendUint32(b, 0xDEADBEEF)
	}
	return b
}

func syncStorm(size int, scope string) []byte {
	h := ScopeHash(scope)
	b := Scope(Header(), h, scope)
	b = Put(b, h, []byte("before"), []byte("value"))
	var tail []byte
	tail = Put(tail, h, []byte("after"), []byte("value"))
	b = fakeHeaders(b, size-len(tail))
	return append(b, tail...)
}

func syncStormTail(size int, scope string) []byte {
	h := ScopeHash(scope)
	b := Scope(Header(), h, scope)
	b = Put(b, h, []byte("before"), []byte("value"))
	return fakeHeaders(b, size)
}

func syncAlternate(size int, scope string) []byte {
	h := ScopeHash(scope)
	b := Scope(Header(), h, scope)
	for i := 0; len(b)+64 < size; i++ {
		b = Put(b, h, key("k", i), nil)
		b = append(b, syncWord...)
		b = append(b, TypePut, 0, 0, 0)
		b = binary.LittleEndian.AppendUint32(b, uint32(size-len(b)-8))
		b = binary.LittleEndian.AppendUint32(b, 0xDEADBEEF)
	}
	return append(b, make([]byte, max(size-len(b), 0))...) // the claims end here
}

func damageFlood(size int, scope string) []byte {
	h := ScopeHash(scope)
	b := Scope(Header(), h, scope)
	for i := 0; len(b) < size; i++ {
		b = Put(b, h, key("k", i), []byte("value"))
		start := len(b)
		b = Put(b, h, key("bad", i), []byte("value"))
		b[start+12] ^= 1 // the checksum
	}
	return b
}

func oversized(size int, scope string) []byte {
	h := ScopeHash(scope)
	b := Scope(Header(), h, scope)
	b = Put(b, h, []byte("before"), []byte("value"))
	for _, claim := range []uint32{MaxPayload, MaxPayload + 1, math.MaxUint32, MaxPayload - 1} {
		b = FrameClaiming(b, TypePut, 0, claim, nil)
	}
	n := max(size-len(b)-2*FrameHeader-64, 0) / 8
	hashes := make([]uint64, n)
	for i := range hashes {
		hashes[i] = uint64(i) * 0x9E3779B97F4A7C15
	}
	b = Touch(b, h, hashes)
	return Put(b, h, []byte("after"), []byte("value"))
}

func tinyFrames(size int, scope string) []byte {
	h := ScopeHash(scope)
	b := Scope(Header(), h, scope)
	for i := 0; len(b) < size; i++ {
		typ := byte(5 + i%251)
		switch i % 4 {
		case 1:
			typ = TypePut
		case 2:
			typ = TypeScope
		case 3:
			typ = TypeSnapshot
		}
		b = Frame(b, typ, byte(i), nil)
	}
	return b
}

func scopeFlood(size int, scope string) []byte {
	b := Header()
	name := make([]byte, MaxScope)
	for i := 0; len(b) < size; i++ {
		copy(name, fmt.Sprintf("flood-%08d-", i))
		for j := len("flood-00000000-"); j < len(name); j++ {
			name[j] = 'a' + byte(i+j)%26
		}
		hs := xxhash.Sum64(name)
		b = Scope(b, hs, string(name))
		b = Put(b, hs, []byte("k"), []byte("v"))
	}
	return Put(Scope(b, ScopeHash(scope), scope), ScopeHash(scope), []byte("own"), []byte("v"))
}

func touchFlood(size int, scope string) []byte {
	h := ScopeHash(scope)
	b := Scope(Header(), h, scope)
	b = Put(b, h, []byte("k"), []byte("v"))
	hashes := make([]uint64, 8192)
	for i := 0; len(b) < size; i++ {
		for j := range hashes {
			hashes[j] = uint64(i*len(hashes)+j) * 0x9E3779B97F4A7C15
		}
		s := h
		if i%2 == 1 {
			s = ScopeHash(OtherScope)
		}
		b = Touch(b, s, hashes)
	}
	return b
}

func maxKV(size int, scope string) []byte {
	h := ScopeHash(scope)
	b := Header()
	b = Snapshot(b, h, 1, FlagZstd, maxChunk(scope, 0))
	b = Scope(b, h, scope)
	k := make([]byte, MaxKey+1)
	v := make([]byte, MaxValue+1)
	b = Put(b, h, k, []byte("key one byte over"))
	b = Put(b, h, []byte("value one byte over"), v)
	for i := 0; len(b) < size; i++ {
		copy(k, key("max", i))
		v[0] = byte(i)
		b = Put(b, h, k[:MaxKey], v[:MaxValue])
	}
	return b
}

func zstdOdd(size int, scope string) []byte {
	h := ScopeHash(scope)
	b := Header()
	rec := func(i int) []byte {
		k := key("odd", i)
		return append(append(ChunkHead(scope), RecHead(len(k), 1)...), append(k, 'v')...)
	}
	for i := 0; len(b) < size; i++ {
		var body []byte
		switch i % 10 {
		case 0: // no content size, a 1 MiB run after a valid record's start
			z := &Zstd{FCS: -1}
			k := key("odd", i)
			z.Raw(append(append(ChunkHead(scope), RecHead(len(k), MaxValue)...), k...)).Run('x', MaxValue)
			body = z.Bytes()
		case 1: // declares 16 bytes, decodes to 1 MiB
			z := &Zstd{}
			z.Raw(rec(i)).Run('x', MaxValue)
			z.FCS = 16
			body = z.Bytes()
		case 2: // a valid frame, then skippable frames
			z := &Zstd{}
			z.Raw(rec(i))
			z.FCS = z.Size()
			body = z.Bytes()
			for j := 0; j < 64; j++ {
				body = append(body, 0x50, 0x2A, 0x4D, 0x18, 0, 0, 0, 0)
			}
		case 3: // two frames: the second adds a record
			z := &Zstd{}
			z.Raw(rec(i))
			z.FCS = z.Size()
			body = append(z.Bytes(), z.Bytes()...)
		case 4: // a window of 2^41 bytes
			z := &Zstd{FCS: -1, Window: 31 << 3}
			body = z.Raw(rec(i)).Bytes()
		case 5: // a dictionary
			z := &Zstd{DictID: 7}
			z.Raw(rec(i))
			z.FCS = z.Size()
			body = z.Bytes()
		case 6: // a checksum flag (with a wrong checksum)
			z := &Zstd{Checksum: true}
			z.Raw(rec(i))
			z.FCS = z.Size()
			body = z.Bytes()
		case 7: // a reserved block type
			z := &Zstd{}
			z.Raw(rec(i))
			z.FCS = z.Size()
			body = z.Bytes()
			body[13] |= 3 << 1
		case 8: // a block claiming more bytes than follow
			z := &Zstd{}
			z.Raw(rec(i))
			z.FCS = z.Size()
			body = z.Bytes()
			body = body[:len(body)-3]
		case 9: // declares 2^60 bytes
			z := &Zstd{FCS: 1 << 60}
			body = z.Raw(rec(i)).Run(0, 1<<20).Bytes()
		}
		b = Snapshot(b, h, 1, FlagZstd, body)
	}
	return b
}

func varintGarbage(size int, scope string) []byte {
	h := ScopeHash(scope)
	b := Scope(Header(), h, scope)
	huge := binary.AppendUvarint(nil, math.MaxUint64)
	overlong := []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}
	for i := 0; len(b) < size; i++ {
		raw := ChunkHead(scope)
		switch i % 5 {
		case 0:
			raw = append(append(raw, huge...), 1, 0, 0, 'k')
		case 1:
			raw = append(append(append(raw, 1), huge...), 0, 0, 'k')
		case 2:
			raw = append(raw, 0, 0, 0, 0)
		case 3:
			raw = append(append(raw, overlong...), 0, 0, 0, 'k')
		case 4:
			raw = append(binary.AppendUvarint(nil, math.MaxUint64), scope...)
		}
		b = Snapshot(b, h, uint32(i), 0, raw)
		p := binary.LittleEndian.AppendUint64(nil, h)
		p = binary.LittleEndian.AppendUint64(p, 0)
		p = append(p, huge...)
		b = Frame(b, TypePut, 0, append(p, 'k'))
	}
	return b
}

func hashFlood(size int, scope string) []byte {
	h := ScopeHash(scope)
	b := Scope(Header(), h, scope)
	const mask = 1<<12 - 1
	k := make([]byte, 16)
	for i := uint64(0); len(b) < size; i++ {
		binary.LittleEndian.PutUint64(k, i)
		if xxh3.Hash(k)&mask == 0 { // the index's key hash (cache/index.go)
			b = Put(b, h, k, nil)
		}
	}
	return b
}

// MislabelledKey is the key scopeMislabel stores in another scope, named
// as the reader's: a reader (or a tool that rewrites the file) that trusts
// the name over the hash would serve it.
const MislabelledKey = "mislabelled"

func scopeMislabel(_ int, scope string) []byte {
	other := ScopeHash(OtherScope)
	b := Header()
	body := Compress(Chunk(scope, []Rec{{Key: []byte(MislabelledKey), Value: []byte("chunk")}}))
	b = Snapshot(b, other, 1, FlagZstd, body)
	b = Scope(b, other, scope)
	b = Put(b, other, []byte(MislabelledKey+"-put"), []byte("put"))
	return b
}
