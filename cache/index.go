package cache

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/zeebo/xxh3"
)

// index maps the keys of one scope to their values.
//
// Reads take no lock. The table is open addressing with linear probing over
// atomic 64-bit slots; a slot holds the top 24 bits of the key's hash (a tag
// that rejects most mismatches without touching the entry) and a 40-bit
// reference into an append-only arena of byte chunks that holds the entries:
//
//	slot:  | tag: hash>>40 (24 bits) | ref: chunk<<22 | offset (40 bits) |
//	entry: | klen u32 | vlen u32 | used u32 | flags u32 | key | value | pad to 8 |
//
// A key's first slot is the top bits of its hash times a random odd
// multiplier chosen per index (multiplicative hashing). Keys come from
// files other users may write; with positions they cannot predict, they
// cannot pick keys that all land in one run of slots and make every insert
// and find walk it (a 1 MiB file of such keys took 0.2 s to load and made
// finds 100 times slower when the position was the hash's low bits).
//
// A writer (one at a time; the owner serialises them) fills an entry, then
// publishes it with an atomic store of its slot, so a reader that sees the
// slot sees the bytes. Entries are never modified after publication except
// the used word, which is atomic. Replacing a value writes a new entry and
// swaps the slot. Nothing is ever removed or moved: space is reclaimed by
// building a new index and swapping the owner's pointer, so a reader holding
// an old index keeps reading valid memory.
//
// The arena holds no Go pointers, so the garbage collector never scans it.
//
// A published index (shared.go) is also read from C. Its chunks, tables and
// chunk address arrays are then pinned, and what a writer replaces (a table
// outgrown, an address array outgrown, the whole index) is retired through
// the Publisher rather than left to the collector alone.
type index struct {
	tab    atomic.Pointer[table]
	chunks atomic.Pointer[[][]byte]
	mult   uint64 // odd, random: see first

	// Set by publish (index_shared.go), guarded by the owner.
	pub       Publisher         // nil: not published, or retired
	dropped   func(int64)       // told of freed chunks (Options.Memory), or nil
	sh        *sharedIndex      // what C reads
	shPin     runtime.Pinner    // sh
	chunkPins []*runtime.Pinner // by chunk number; nil: not pinned, or freed
	addrs     []uintptr         // chunk addresses, by number; C reads &addrs[0]
	addrsPin  *runtime.Pinner
	freed     int64 // bytes of chunks freed and not yet reported to dropped

	// Writer state, guarded by the owner.
	cs         [][]byte // nil for a chunk freed (every entry in it replaced)
	live       []int32  // entries in use, by chunk
	cold       []bool   // by chunk: holds entries loaded from the file
	coldLeft   int      // chunks with cold set, not yet freed
	cur        [2]int   // the chunk each stream fills (index_shared.go: hot 0, cold 1); 0: none yet
	fill       [2]int   // bytes used in it
	n          int      // keys
	liveBytes  int64    // key+value bytes of current entries
	arenaBytes int64
}

// A table's first three fields are read from C (shared.go): keep them first.
type table struct {
	base  uintptr // &slots[0], for C
	mask  uint64
	shift uint64 // 64 - log2(len(slots))
	slots []atomic.Uint64
	pin   runtime.Pinner // the table and its slots, while published
}

func newTable(n int) *table {
	t := &table{slots: make([]atomic.Uint64, n), mask: uint64(n - 1), shift: uint64(64 - bits.Len(uint(n-1)))}
	t.base = uintptr(unsafe.Pointer(&t.slots[0]))
	// Every find reads one slot at random: with 4 KiB pages, most are TLB
	// misses once the table outgrows the TLB's reach (a few MiB).
	hugePages(unsafe.Slice((*byte)(unsafe.Pointer(&t.slots[0])), 8*n))
	return t
}

// first returns the slot where the search for hash h starts.
func (t *table) first(h, mult uint64) uint64 { return (h * mult) >> t.shift }

const (
	entryHeader  = 16
	refBits      = 40
	refMask      = 1<<refBits - 1
	chunkOffBits = 22
	maxChunk     = 1 << chunkOffBits // 4 MiB: the largest offset a ref holds
	// Chunks double up to this size, and an entry larger than it gets a
	// chunk of its own. The last chunk's unused part is memory the process
	// holds (the collector hands out zeroed, so touched, pages), so it is
	// kept small: at most 1 MiB, 10 bytes per entry at 100k entries.
	growChunk     = 1 << 20
	firstChunk    = 64 << 10
	minTableSlots = 16

	// Entry flags.
	entryFromFile   = 1 // read from the file rather than inserted by this handle
	entryFromSystem = 2 // from the read-only system tier, not in this handle's file
	entryCold       = 8 // where the file load put it, not yet used (index_shared.go)
)

// keyHash is the hash the index places and tags keys by: XXH3-64, seed 0.
// The C hit path computes the same (capi/hit.c; capi's tests check it). It
// is the index's alone: what the file stores (touch frames) and the lock
// bytes of single flight hash keys with XXH64, as the format says.
func keyHash(key []byte) uint64 { return xxh3.Hash(key) }

// indexSeed returns the multiplier's bits for a new index (a test makes it
// fixed).
var indexSeed = rand.Uint64

func newIndex(sizeHint int) *index {
	ix := &index{mult: indexSeed() | 1}
	slots := minTableSlots
	for slots*4 < sizeHint*5 { // load at most 0.8
		slots *= 2
	}
	ix.tab.Store(newTable(slots))
	// Chunk 0 is a placeholder that holds no entry: ref 0 marks an empty
	// slot, and cur 0 a stream without a chunk yet.
	ix.addChunk(8)
	return ix
}

// addChunk appends a chunk of size bytes and returns its number.
func (ix *index) addChunk(size int) int {
	c := make([]byte, size)
	hugePages(c)
	ix.cs = append(ix.cs, c)
	ix.live = append(ix.live, 0)
	ix.cold = append(ix.cold, false)
	ix.chunkPins = append(ix.chunkPins, nil)
	cs := ix.cs // a new slice header; the old one stays valid for readers
	ix.chunks.Store(&cs)
	ix.arenaBytes += int64(size)
	if ix.pub != nil {
		ix.pinChunk(len(ix.cs) - 1)
	}
	return len(ix.cs) - 1
}

// lookup returns the chunk and offset of key's entry.
func (ix *index) lookup(key []byte, h uint64) (c []byte, off int, ok bool) {
again:
	t := ix.tab.Load()
	tag := h >> refBits
	for i := t.first(h, ix.mult); ; i = (i + 1) & t.mask {
		s := t.slots[i].Load()
		if s == 0 {
			return nil, 0, false
		}
		if s>>refBits != tag {
			continue
		}
		ref := s & refMask
		c = (*ix.chunks.Load())[ref>>chunkOffBits]
		if c == nil {
			// Its entry was replaced or moved, and its chunk freed
			// (index_shared.go), after this slot was read: the slot has
			// changed since, so look again.
			goto again
		}
		off = int(ref & (maxChunk - 1))
		klen := int(binary.LittleEndian.Uint32(c[off:]))
		if klen == len(key) && bytes.Equal(c[off+entryHeader:off+entryHeader+klen], key) {
			return c, off, true
		}
	}
}

// entryValue returns the value of the entry at c[off:].
func entryValue(c []byte, off int) []byte {
	klen := int(binary.LittleEndian.Uint32(c[off:]))
	vlen := int(binary.LittleEndian.Uint32(c[off+4:]))
	v := off + entryHeader + klen
	return c[v : v+vlen : v+vlen]
}

func entryKey(c []byte, off int) []byte {
	klen := int(binary.LittleEndian.Uint32(c[off:]))
	return c[off+entryHeader : off+entryHeader+klen]
}

func entryFlags(c []byte, off int) uint32 {
	return binary.LittleEndian.Uint32(c[off+12:])
}

// alloc copies an entry into the arena and returns its reference. Entries
// loaded from the file (cold) and the rest are kept in chunks of their own,
// two streams (index_shared.go), so that a chunk of cold entries is freed
// once they have all moved.
func (ix *index) alloc(key, value []byte, flags, used uint32) uint64 {
	size := (entryHeader + len(key) + len(value) + 7) &^ 7
	st := 0
	if flags&entryCold != 0 {
		st = 1
	}
	n := ix.cur[st]
	if n == 0 || ix.fill[st]+size > len(ix.cs[n]) {
		next := firstChunk
		if n != 0 {
			next = min(2*len(ix.cs[n]), growChunk)
		}
		for next < size {
			next *= 2
		}
		n = ix.addChunk(next)
		ix.cur[st], ix.fill[st] = n, 0
		if st == 1 {
			ix.cold[n] = true
			ix.coldLeft++
		}
	}
	c, off := ix.cs[n], ix.fill[st]
	binary.LittleEndian.PutUint32(c[off:], uint32(len(key)))
	binary.LittleEndian.PutUint32(c[off+4:], uint32(len(value)))
	binary.LittleEndian.PutUint32(c[off+8:], used)
	binary.LittleEndian.PutUint32(c[off+12:], flags)
	copy(c[off+entryHeader:], key)
	copy(c[off+entryHeader+len(key):], value)
	ix.fill[st] += size
	ix.live[n]++
	return uint64(n)<<chunkOffBits | uint64(off)
}

// slot finds key's slot in the current table: its number and the entry's
// reference, or, when the key is absent, the empty slot where the search
// ended and ok false. Writers only.
func (ix *index) slot(key []byte, h uint64) (t *table, i, ref uint64, ok bool) {
	t = ix.tab.Load()
	tag := h >> refBits
	for i = t.first(h, ix.mult); ; i = (i + 1) & t.mask {
		s := t.slots[i].Load()
		if s == 0 {
			return t, i, 0, false
		}
		if s>>refBits != tag {
			continue
		}
		ref = s & refMask
		if bytes.Equal(entryKey(ix.cs[ref>>chunkOffBits], int(ref&(maxChunk-1))), key) {
			return t, i, ref, true
		}
	}
}

// put sets key's value. It reports whether the index changed (false when the
// key already had exactly this value). Writers only.
func (ix *index) put(key, value []byte, h uint64, flags, used uint32) bool {
	tag := h >> refBits
	t, i, ref, ok := ix.slot(key, h)
	if ok {
		c, off := ix.cs[ref>>chunkOffBits], int(ref&(maxChunk-1))
		old := entryValue(c, off)
		if bytes.Equal(old, value) {
			return false
		}
		ix.liveBytes += int64(len(value) - len(old))
		t.slots[i].Store(tag<<refBits | ix.alloc(key, value, flags, atomicLoad32(c, off+8)))
		ix.release(ref)
		return true
	}
	if (ix.n+1)*5 > len(t.slots)*4 { // load at most 0.8: probes stay short (tags reject most without touching an entry)
		t = ix.grow()
		for i = t.first(h, ix.mult); t.slots[i].Load() != 0; i = (i + 1) & t.mask {
		}
	}
	t.slots[i].Store(tag<<refBits | ix.alloc(key, value, flags, used))
	ix.n++
	ix.liveBytes += int64(len(key) + len(value))
	return true
}

// grow publishes a table twice the size. Readers of the old table still find
// every entry that was published in it.
func (ix *index) grow() *table {
	old := ix.tab.Load()
	t := newTable(2 * len(old.slots))
	for i := range old.slots {
		s := old.slots[i].Load()
		if s == 0 {
			continue
		}
		ref := s & refMask
		h := keyHash(entryKey(ix.cs[ref>>chunkOffBits], int(ref&(maxChunk-1))))
		j := t.first(h, ix.mult)
		for t.slots[j].Load() != 0 {
			j = (j + 1) & t.mask
		}
		t.slots[j].Store(s)
	}
	ix.tab.Store(t)
	if ix.pub != nil {
		ix.publishTable(t)
		ix.pub.Retire(func() { unpin(&old.pin) })
	}
	return t
}

// each calls fn for every current entry. Writers only (or a quiescent index).
func (ix *index) each(fn func(c []byte, off int)) {
	t := ix.tab.Load()
	for i := range t.slots {
		if s := t.slots[i].Load(); s != 0 {
			ref := s & refMask
			fn(ix.cs[ref>>chunkOffBits], int(ref&(maxChunk-1)))
		}
	}
}

// memBytes is the memory the index holds: arena chunks and table.
func (ix *index) memBytes() int64 {
	return ix.arenaBytes + int64(len(ix.tab.Load().slots))*8
}
