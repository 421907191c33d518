package cache

import (
	"errors"
	"io"
	"sync/atomic"

	"github.com/convcache/convcache/internal/format"
	"github.com/convcache/convcache/internal/vfs"
)

// Lazy open. A compacted file starts with a snapshot index (internal/format:
// the chunks of every scope, each one's length and first key). Open then
// reads the header, the index and the journal, not the snapshot: the handle's
// index starts with the journal's entries. A find that misses in memory
// decodes the one chunk of this scope that can hold its key, and adds the
// entries of that chunk that the index does not hold (what it holds is newer:
// the journal's records, this handle's inserts). So a cold process's first
// answer costs one chunk, whatever the file's size, and a process that asks
// for every key decodes each chunk once, as a full load does.
//
// The answers are a full load's. A chunk is used only if it is a valid
// frame of this scope that holds exactly what the index says: as many
// entries, sorted, from its first key up to the next chunk's (so a key can
// be in no other chunk of the scope). Anything else (a damaged chunk, an
// index that does not match it, a read error, a chunk beyond the decode
// budget) makes the handle read the whole file as Open did before the index
// existed, and answer from that. Files without an index (written before it,
// or never compacted) are read whole at Open, as before.
//
// What lazy loading cannot check before it decodes a chunk is that chunk.
// Until then, an index forged with valid checksums can hide the keys of a
// chunk it misdescribes, or that a later chunk repeats a key: the answer is
// then a miss, or another value the file holds for that key in that scope,
// never another key's or another scope's. Whoever can forge checksums could
// as well have written those keys and values. Stats, a reload after a
// compaction, and the fallback above read the file whole, and answer
// exactly as a full load.

// lazySnapshot is what a lazily opened handle still has to decode. Guarded
// by mu.
type lazySnapshot struct {
	run    []format.IndexedChunk // this scope's chunks, in key order
	loaded []bool
	left   int // chunks of run not loaded yet
	hint   int // entries of this scope in the snapshot (a bounded hint)
	added  int // keys the chunks added to the index

	buf  []byte          // one chunk's frame, as read
	zbuf []byte          // decompression scratch
	recs []format.Record // one chunk's records

	damaged uint64 // the handle's damage count before Open read the journal
}

// firstRead is how much of a file Open reads first: the header and, in
// most files, the whole index (about 120 bytes per 1,000 entries).
const firstRead = 64 << 10

// firstTable is how many entries the index's table holds at Open, before
// it grows to what the whole snapshot needs (see decodeChunk).
const firstTable = 2048

// chunkDecodes counts the snapshot chunks decoded lazily, for tests.
var chunkDecodes atomic.Int64

// openEager makes Open read every file whole, as before the index: tests
// compare the two.
var openEager = false

// openLazy opens f through its snapshot index, if it has a usable one; it
// reports false (having changed nothing) if it has not, and the caller reads
// the file whole. Header errors are adopt's. Caller holds mu; the handle has
// no file yet.
func (c *Cache) openLazy(f vfs.File) (bool, error) {
	if c.f != nil || openEager {
		return false, nil
	}
	fi, err := f.Stat()
	if err != nil {
		return false, nil // adopt reports it
	}
	size := fi.Size()
	head := make([]byte, min(size, firstRead))
	if n, err := f.ReadAt(head, 0); n < len(head) && !errors.Is(err, io.EOF) {
		return false, nil
	} else {
		head = head[:n]
	}
	h, err := c.checkHeader(head)
	if err != nil {
		return false, err
	}
	x, ok := readIndex(f, head, size)
	if !ok {
		return false, nil
	}
	run := x.Run(c.scopeHash)
	var hint int64
	scopes := map[uint64]bool{}
	snapEntries := int64(0)
	for _, ch := range x.Chunks {
		scopes[ch.Scope] = true // as indexer.Chunk notes every chunk's scope
		n := format.ChunkEntries(ch.Count, int(ch.Len-format.FrameHeaderSize))
		snapEntries += n
		if ch.Scope == c.scopeHash {
			hint += n
		}
	}
	c.f, c.dirty = f, false
	c.off, c.snapEnd, c.created, c.scopes = x.End, x.End, h.Created, scopes
	c.compacted = true
	c.snapEntries, c.journalPuts = snapEntries, 0
	c.budget, c.budgetEnd, c.tailMark = format.NewBudget(size), size, tailMark{}
	c.setIndex(newIndex(int(min(hint, firstTable))))
	c.lazy = &lazySnapshot{run: run, loaded: make([]bool, len(run)), left: len(run), hint: int(hint), damaged: c.st.damaged.Load()}
	// The journal, read as a refresh reads what was appended.
	return true, c.refresh(false)
}

// readIndex returns f's snapshot index, if it has one that is well formed,
// followed only by valid snapshot chunks and pad frames up to the journal
// (the chunks are checked when they are decoded, the padding here). head
// holds the start of the file.
func readIndex(f vfs.File, head []byte, size int64) (format.SnapshotIndex, bool) {
	n := format.FrameLen(head[min(len(head), format.HeaderSize):])
	if n == 0 || format.HeaderSize+n > size {
		return format.SnapshotIndex{}, false
	}
	b := head[format.HeaderSize:min(int64(len(head)), format.HeaderSize+n)]
	if int64(len(b)) < n {
		b = make([]byte, n)
		if got, _ := f.ReadAt(b, format.HeaderSize); int64(got) != n {
			return format.SnapshotIndex{}, false
		}
	}
	fr, ok := format.ParseFrame(b, format.HeaderSize)
	if !ok {
		return format.SnapshotIndex{}, false
	}
	x, ok := format.DecodeSnapshotIndex(fr, size)
	if !ok || len(x.Chunks) == 0 {
		return format.SnapshotIndex{}, false
	}
	// Pad frames between the last chunk and the journal: all valid, so
	// that a full scan of the file finds the journal where the index says.
	last := x.Chunks[len(x.Chunks)-1]
	if from := last.Off + last.Len; from < x.End {
		pad := make([]byte, x.End-from)
		if got, _ := f.ReadAt(pad, from); got != len(pad) {
			return format.SnapshotIndex{}, false
		}
		ok := true
		next := from
		format.Scan(pad, from, true, func(fr format.Frame) {
			ok = ok && fr.Type == format.TypePad && fr.Off == next
			next = fr.End()
		}, func(format.Damage) { ok = false })
		if !ok || next != x.End {
			return format.SnapshotIndex{}, false
		}
	}
	return x, true
}

// loadChunkOf decodes the snapshot chunk that can hold key, if the handle
// was opened lazily and has not decoded it yet. Find calls it on a miss in
// memory (findSlow), after the refresh. Caller holds mu.
func (c *Cache) loadChunkOf(key []byte) {
	if z := c.lazy; z != nil {
		if i := format.ChunkFor(z.run, key); i >= 0 && !z.loaded[i] {
			c.loadChunk(i)
		}
	}
}

// loadRest makes a lazily opened handle's index a full load's: it reads
// the whole file, as Open does one without an index, which is exact
// whatever the index says (see above). Stats calls it (Entries counts the
// whole file), and Open for the system tier, which answers from memory
// only.
func (c *Cache) loadRest() {
	if c.lockLive() != nil {
		return // closed: Stats counts what the handle held
	}
	defer c.mu.Unlock()
	if c.lazy != nil {
		c.loadWhole()
	}
}

// loadChunk decodes chunk i of the lazy run into the index, or, if it is
// not what the index says, reads the whole file. On return chunk i is
// loaded or the handle is no longer lazy. Caller holds mu.
func (c *Cache) loadChunk(i int) {
	z := c.lazy
	if c.f == nil || c.detached {
		c.lazy = nil // closed, or the file may not be read again
		return
	}
	if !c.decodeChunk(z, i) {
		c.loadWhole()
		return
	}
	z.loaded[i] = true
	if z.left--; z.left == 0 {
		// Every chunk of the scope is in. The handle stays lazy (loadRest
		// still reads the file whole), without its buffers.
		z.buf, z.zbuf, z.recs = nil, nil, nil
	}
}

// decodeChunk reads chunk i, checks it against the index and adds what the
// index lacks of it. It reports false, having added nothing, if the chunk
// is not what the index says. Caller holds mu.
func (c *Cache) decodeChunk(z *lazySnapshot, i int) bool {
	ch := z.run[i]
	if int64(cap(z.buf)) < ch.Len {
		z.buf = make([]byte, ch.Len)
	}
	b := z.buf[:ch.Len]
	if n, _ := c.f.ReadAt(b, ch.Off); n != len(b) {
		return false
	}
	fr, ok := format.ParseFrame(b, ch.Off)
	if !ok || fr.Type != format.TypeSnapshot {
		return false
	}
	if head, ok := format.DecodeSnapshotHead(fr.Payload); !ok || head.Scope != c.scopeHash {
		return false
	}
	chunkDecodes.Add(1)
	name, recs, zbuf, err := format.DecodeSnapshot(fr, z.zbuf, z.recs[:0], false, &c.budget)
	z.zbuf, z.recs = zbuf, recs
	defer clear(recs)
	var next []byte
	if i+1 < len(z.run) {
		next = z.run[i+1].First
	}
	if err != nil || !ch.Holds(recs, next) {
		return false
	}
	v := &indexer{c, c.idx.Load(), c.scopes}
	if name != "" && format.ScopeHash(name) == c.scopeHash {
		v.Scope(c.scopeHash, name) // as a full load's decoder tells it
	}
	// The table starts small: each entry put in a large one that is new
	// touches a page of its own, and the first answer would pay a page
	// fault per entry of its chunk. Once the first chunks outgrow it, it
	// grows to what the whole scope needs, as a full load sizes it.
	if need := v.ix.n + len(recs); need*5 > len(v.ix.tab.Load().slots)*4 {
		for need = max(need, z.hint); need*5 > len(v.ix.tab.Load().slots)*4; {
			v.ix.grow()
		}
	}
	// Keys the index holds from elsewhere (the journal, this handle's
	// inserts) are newer and stay. Other chunks' keys cannot be this
	// chunk's: when the index holds nothing else, none needs looking up.
	foreign := v.ix.n > z.added
	for _, r := range recs {
		h := keyHash(r.Key)
		if foreign {
			if _, _, ok := v.ix.lookup(r.Key, h); ok {
				continue
			}
		}
		if v.ix.put(r.Key, r.Value, h, entryFromFile|entryCold, 0) {
			z.added++
		}
	}
	return true
}

// loadWhole reads the whole current file into a new index, as Open does a
// file without an index: the way back from anything lazy loading did not
// expect. Caller holds mu.
func (c *Cache) loadWhole() {
	if c.f == nil || c.shut {
		c.lazy = nil // closed: there is no file to read (lifecycle.go)
		return
	}
	// The full read counts the file's damage again, journal included.
	c.st.damaged.Store(c.lazy.damaged)
	c.lazy = nil
	f, dirty := c.f, c.dirty
	c.f = nil // adopt replaces the handle's file: here it is the same one
	if err := c.adopt(f, false); err != nil {
		c.f = f
		if !c.warnedBroke {
			c.warnedBroke = true
			c.warnf("%v", err)
		}
	}
	c.dirty = dirty
}
