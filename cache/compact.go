package cache

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/convcache/convcache/internal/safefile"
)

// contents is every entry of every scope in one file image, merged: the
// last write of a key wins, and use times include touch frames. It is what
// compaction and the tools work on.
//
// It is built for a file of millions of entries: records sit in one slice
// (their keys and values alias the file image or the decoded snapshot
// chunks; nothing is copied), found through a map from (scope, key hash) to
// the first record with that hash, the rest chained. About 110 bytes per
// entry besides the image, where a map keyed by scope and key strings took
// about 250.
type contents struct {
	names   map[uint64]string // scope hash -> name ("" if never named)
	recs    []mrec
	byHash  map[[2]uint64]int32 // (scope hash, key hash) -> index of the first such record
	live    int                 // records not evicted
	touches map[[2]uint64]int64
	damaged []damage
	frames  int
	end     int64        // offset after the last valid frame
	budget  decodeBudget // what is left to decode
	scratch []byte       // encoding scratch
	zbuf    []byte       // decoding scratch
	chunk   []record     // one chunk's records, before they are merged
}

type mrec struct {
	scope uint64
	khash uint64
	record
	next int32 // next record with the same scope and key hash, or -1
	dead bool  // evicted
}

// newContents returns empty contents that may decode a file of fileBytes
// bytes (see decodeBudget).
func newContents(fileBytes int64) *contents { return newContentsSized(fileBytes, 0) }

// newContentsSized is newContents for about n entries: a slice and map
// that never grow spare no copies in a compaction of millions. n is a hint;
// it is capped by what the file's bytes can hold.
func newContentsSized(fileBytes int64, n int) *contents {
	n = int(min(int64(n), fileBytes*expandFactor/minRecordCost+1024))
	return &contents{
		names:   map[uint64]string{},
		recs:    make([]mrec, 0, n),
		byHash:  make(map[[2]uint64]int32, n),
		touches: map[[2]uint64]int64{},
		budget:  newDecodeBudget(fileBytes),
	}
}

// find returns the index of the record of (scope, key), or -1.
func (c *contents) find(scope, khash uint64, key []byte) int32 {
	i, ok := c.byHash[[2]uint64{scope, khash}]
	for ok && i >= 0 {
		if bytes.Equal(c.recs[i].key, key) {
			return i
		}
		i = c.recs[i].next
	}
	return -1
}

// put records a write. Later writes replace earlier ones. The slices must
// stay valid as long as c.
func (c *contents) put(scope uint64, r record) {
	kh := xxhash.Sum64(r.key)
	r.used = max(r.used, r.inserted)
	if i := c.find(scope, kh, r.key); i >= 0 {
		r.used = max(r.used, c.recs[i].used)
		c.recs[i].record = r
		return
	}
	id := [2]uint64{scope, kh}
	head, ok := c.byHash[id]
	if !ok {
		head = -1
	}
	c.recs = append(c.recs, mrec{scope: scope, khash: kh, record: r, next: head})
	c.byHash[id] = int32(len(c.recs) - 1)
	c.live++
}

// each calls fn for every record that was not evicted.
func (c *contents) each(fn func(e *mrec)) {
	for i := range c.recs {
		if !c.recs[i].dead {
			fn(&c.recs[i])
		}
	}
}

// addFrame folds one frame in.
func (c *contents) addFrame(f frame) {
	c.frames++
	c.end = f.off + frameHeader + int64(len(f.payload))
	switch f.typ {
	case framePut:
		if p, ok := decodePut(f.payload); ok {
			c.put(p.scope, record{key: p.key, value: p.value, inserted: p.time, used: p.time})
		} else {
			c.damaged = append(c.damaged, damage{f.off, int64(len(f.payload)) + frameHeader})
		}
	case frameScope:
		if h, name, ok := decodeScope(f.payload); ok && ScopeHash(name) == h {
			c.names[h] = name
		}
	case frameTouch:
		if len(f.payload) >= 16 {
			scope := binary.LittleEndian.Uint64(f.payload)
			t := int64(binary.LittleEndian.Uint64(f.payload[8:]))
			for p := f.payload[16:]; len(p) >= 8; p = p[8:] {
				k := [2]uint64{scope, binary.LittleEndian.Uint64(p)}
				c.touches[k] = max(c.touches[k], t)
			}
		}
	case frameSnapshot:
		// Keep each chunk's decoded bytes: the records alias them. The
		// budget bounds how many bytes that can be.
		var scope string
		var err error
		scope, c.chunk, c.zbuf, err = decodeSnapshot(f, c.zbuf, c.chunk[:0], true, &c.budget)
		if err != nil {
			c.damaged = append(c.damaged, damage{f.off, int64(len(f.payload)) + frameHeader})
			return
		}
		head, _ := decodeSnapshotHead(f.payload)
		if scope != "" && ScopeHash(scope) == head.scopeHash {
			c.names[head.scopeHash] = scope
		}
		for _, r := range c.chunk {
			c.put(head.scopeHash, r)
		}
		clear(c.chunk)
	}
}

// readContents parses a whole file image. The header must already be valid.
func readContents(buf []byte) *contents { return readContentsSized(buf, 0) }

// readContentsSized is readContents with a hint of the entries: n.
func readContentsSized(buf []byte, n int) *contents {
	c := newContentsSized(int64(len(buf)), n)
	scanFrames(buf[headerSize:], headerSize, true, c.addFrame, func(d damage) {
		c.damaged = append(c.damaged, d)
	})
	c.applyTouches()
	return c
}

func (c *contents) applyTouches() {
	if len(c.touches) == 0 {
		return
	}
	c.each(func(e *mrec) {
		if t, ok := c.touches[[2]uint64{e.scope, e.khash}]; ok {
			e.used = max(e.used, t)
		}
	})
	clear(c.touches)
}

func recBytes(e *mrec) int64 { return int64(len(e.key) + len(e.value) + 16) }

// evict removes the least recently used entries until the contents are
// below 90% of each bound that is exceeded. It returns how many it removed.
func (c *contents) evict(maxEntries, maxBytes int64) int {
	n := int64(c.live)
	var size int64
	c.each(func(e *mrec) { size += recBytes(e) })
	if (maxEntries <= 0 || n <= maxEntries) && (maxBytes <= 0 || size <= maxBytes) {
		return 0
	}
	targetN, targetB := n, size
	if maxEntries > 0 && n > maxEntries {
		targetN = maxEntries * 9 / 10
	}
	if maxBytes > 0 && size > maxBytes {
		targetB = maxBytes * 9 / 10
	}
	order := make([]int32, 0, c.live)
	for i := range c.recs {
		if !c.recs[i].dead {
			order = append(order, int32(i))
		}
	}
	slices.SortFunc(order, func(a, b int32) int {
		ea, eb := &c.recs[a], &c.recs[b]
		return cmp.Or(cmp.Compare(ea.used, eb.used), cmp.Compare(ea.inserted, eb.inserted),
			cmp.Compare(ea.scope, eb.scope), bytes.Compare(ea.key, eb.key))
	})
	evicted := 0
	for _, i := range order {
		if n <= targetN && size <= targetB {
			break
		}
		e := &c.recs[i]
		size -= recBytes(e)
		n--
		e.dead = true
		c.live--
		evicted++
	}
	return evicted
}

// encode writes a complete file image: a header and one run of snapshot
// chunks per scope, keys sorted so that similar keys compress together.
//
// If the chunks would cost a reader more than expandFactor times the
// image's size (values that compress extremely well), pad frames follow
// them: a reader's decodeBudget then always covers a file this package
// wrote, and the budget stays a bound on what a hostile file can cost.
func (c *contents) encode(created time.Time) []byte {
	byScope := map[uint64][]*mrec{}
	c.each(func(e *mrec) { byScope[e.scope] = append(byScope[e.scope], e) })
	scopes := make([]uint64, 0, len(byScope))
	for s := range byScope {
		scopes = append(scopes, s)
	}
	slices.Sort(scopes)
	out := encodeHeader(created, headerCompacted)
	var recs []record
	var cost int64
	for _, s := range scopes {
		es := byScope[s]
		slices.SortFunc(es, func(a, b *mrec) int { return bytes.Compare(a.key, b.key) })
		recs = recs[:0]
		for _, e := range es {
			recs = append(recs, e.record)
		}
		var n int64
		out, c.scratch, n = appendSnapshotFrames(out, s, c.names[s], recs, c.scratch)
		cost += n
	}
	return appendPadding(out, (cost+expandFactor-1)/expandFactor)
}

// compact rewrites the file as a snapshot of every scope's current entries,
// evicting the least recently used beyond the bounds. The caller holds
// neither the file lock nor mu; compact takes the lock itself, twice and
// briefly, so that a compaction of millions of entries, which takes
// seconds, does not make other writers wait for it:
//
//  1. Under the lock: note which file is there and read it.
//  2. Without the lock: merge every scope's records, evict, encode.
//  3. Under the lock: if the file is still the same one, copy the valid
//     records other processes appended since step 1 after the new
//     snapshot, and publish the result. If another process compacted
//     meanwhile, the work is dropped: its file already holds everything.
//
// The new file is written beside the old one, synced, renamed over it and
// the directory synced: a crash at any point leaves either the old file or
// the new one, never a mix. The old file is never truncated or rewritten.
func (c *Cache) compact() error {
	c.compactMu.Lock()
	defer c.compactMu.Unlock()
	c.mu.Lock()
	needed := c.needCompact()
	c.mu.Unlock()
	if !needed || c.closed.Load() {
		return nil // another compaction has just done it, or the handle is closing
	}
	// One compaction across processes at a time: a process that finds one
	// running leaves the work to it.
	if busy, err := c.lk.TryLockCompaction(); err != nil || busy == nil {
		return nil
	} else {
		defer busy.Unlock()
	}
	start := time.Now()
	defer lowGC()()

	// 1. Read the file as it is. (Locks are released by defer throughout,
	// so that even a panic, recovered by compactSoon, leaves none held.)
	lk, err := c.lk.Lock(c.opts.LockTimeout)
	if err != nil {
		return fmt.Errorf("%w: compaction of %s postponed", ErrLock, c.path)
	}
	buf, id, err := func() ([]byte, fileID, error) {
		defer lk.Unlock()
		return c.readWhole()
	}()
	if err != nil {
		return err
	}
	var size int64
	c.locked(func() { size = c.snapEntries + c.journalPuts }) // about the entries, as last seen (bounded hints)
	all := readContentsSized(buf, int(min(size+size/8+1024, 1<<27)))
	end := all.end // records appended after this are copied in step 3
	if compactHook != nil {
		compactHook()
	}

	// 2. Fold in this handle's recent hits and unwritten entries, evict,
	// encode.
	ms := start.UnixMilli()
	var written map[string][]byte
	c.locked(func() { written = c.foldInto(all, ms) })
	evicted := all.evict(c.opts.MaxEntries, c.opts.MaxBytes)
	entries, oldSize := all.live, len(buf)
	image := all.encode(start)
	all, buf = nil, nil // garbage from here
	if oldSize > 16<<20 {
		runtime.GC() // free the old image before the new index is built
	}

	// 3. Publish, with what was appended meanwhile.
	lk, err = c.lk.Lock(c.opts.LockTimeout)
	if err != nil {
		return fmt.Errorf("%w: compaction of %s postponed", ErrLock, c.path)
	}
	image, same, err := func() ([]byte, bool, error) {
		defer lk.Unlock()
		if c.closed.Load() {
			return image, false, nil
		}
		image, same, err := c.appendTail(image, id, end)
		if err == nil && same {
			err = replaceFile(c.fs, c.path, image)
		}
		return image, same, err
	}()
	if err != nil || !same {
		return err
	}
	c.st.compactions.Add(1)
	c.st.evictions.Add(uint64(evicted))
	if c.vlevel >= LogAll {
		c.logEvent("compact", nil, time.Since(start), fmt.Sprintf("entries=%d bytes=%d->%d", entries, oldSize, len(image)))
		if evicted > 0 {
			c.logEvent("evict", nil, 0, fmt.Sprintf("entries=%d", evicted))
		}
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	for k, v := range written {
		if cur, ok := c.pending[k]; ok && bytes.Equal(cur, v) {
			delete(c.pending, k)
		}
	}
	// What this handle appended is in the new, synced file.
	for _, uf := range c.unsynced {
		uf.Close()
	}
	c.unsynced, c.dirty = nil, false
	return c.reopen(false)
}

// compactHook, when set by a test, runs in every compaction after the file
// is read, with no lock held but the compaction's own.
var compactHook func()

// locked runs fn holding mu, releasing it even if fn panics.
func (c *Cache) locked(fn func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fn()
}

// foldInto adds this handle's recent hits (as uses at ms) and its entries
// not yet written to all, and returns the latter. Caller holds mu.
func (c *Cache) foldInto(all *contents, ms int64) (written map[string][]byte) {
	g := c.gen.Load()
	c.idx.Load().each(func(ch []byte, off int) {
		if atomicLoad32(ch, off+8) == g {
			k := entryKey(ch, off)
			if i := all.find(c.scopeHash, xxhash.Sum64(k), k); i >= 0 {
				all.recs[i].used = max(all.recs[i].used, ms)
			}
		}
	})
	c.gen.Store(g + 1)
	written = make(map[string][]byte, len(c.pending))
	for k, v := range c.pending {
		written[k] = v
		all.put(c.scopeHash, record{key: []byte(k), value: v, inserted: ms, used: ms})
	}
	if all.names[c.scopeHash] == "" {
		all.names[c.scopeHash] = c.scope
	}
	return written
}

// readWhole reads the whole file at the path and identifies it. A file
// that is not a convcache file is never read further, or replaced.
func (c *Cache) readWhole() ([]byte, fileID, error) {
	f, err := c.openChecked(os.O_RDONLY) // a file that may not be used is not compacted either
	if errors.Is(err, safefile.ErrRefused) {
		return nil, fileID{}, err
	}
	if err != nil {
		return nil, fileID{}, ioErr(err, "open", c.path, "")
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fileID{}, ioErr(err, "stat", c.path, "")
	}
	id, _ := idOf(fi)
	buf := make([]byte, fi.Size())
	if _, err := f.ReadAt(buf, 0); err != nil {
		return nil, fileID{}, ioErr(err, "read", c.path, "")
	}
	if _, err := decodeHeader(buf[:min(len(buf), headerSize)]); err != nil {
		return nil, fileID{}, err
	}
	return buf, id, nil
}

// appendTail appends to image the valid frames the file at the path holds
// after offset from, if it is still the file id. Caller holds the file lock.
func (c *Cache) appendTail(image []byte, id fileID, from int64) ([]byte, bool, error) {
	f, err := c.openChecked(os.O_RDONLY)
	if err != nil {
		return image, false, nil // gone: nothing to publish over
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return image, false, ioErr(err, "stat", c.path, "")
	}
	if now, _ := idOf(fi); now != id || fi.Size() < from {
		return image, false, nil // another process compacted meanwhile
	}
	tail := make([]byte, fi.Size()-from)
	if _, err := f.ReadAt(tail, from); err != nil {
		return image, false, ioErr(err, "read", c.path, "")
	}
	scanFrames(tail, from, true, func(fr frame) {
		n := frameHeader + len(fr.payload)
		image = append(image, tail[fr.off-from:fr.off-from+int64(n)]...)
	}, nil)
	return image, true, nil
}

// compactSoon starts a compaction in the background unless one is running.
// Inserts use it: they return as soon as their record is appended.
//
// The goroutine recovers a panic, as the exported functions do at the C
// boundary: it warns once and turns compaction off for this handle, which
// keeps working without it (another process, or a new handle, compacts).
// Compaction releases every lock by defer, so none is left held.
func (c *Cache) compactSoon() {
	if c.compactOff.Load() || !c.compactBusy.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer c.compactBusy.Store(false)
		defer func() {
			if r := recover(); r != nil && !c.compactOff.Swap(true) {
				c.warnf("compaction of %s failed with a panic (%v); background compaction is off for this handle. Please report this line.", c.path, r)
			}
		}()
		// Inserts that came while this one ran did not start another: go on
		// while the file still needs it (a few rounds at most).
		for round := 0; round < 4 && !c.closed.Load(); round++ {
			c.mu.Lock()
			needed := c.needCompact()
			c.mu.Unlock()
			if !needed {
				return
			}
			if err := c.compact(); err != nil {
				if !errors.Is(err, ErrLock) {
					c.warnf("compaction of %s failed: %v", c.path, err)
				}
				return
			}
		}
	}()
}

// The garbage collector lets the heap grow to twice what it held after the
// last collection. A compaction holds the file image and the merged records
// beside the live index, so with that headroom a compaction of a million
// entries would take the process to over a gigabyte. While one runs, the
// headroom is a fifth instead. (The library is the only Go code in its host
// process, so the setting is ours; it is restored when the last compaction
// ends.)
var (
	gcMu     sync.Mutex
	gcUsers  int
	gcBefore int
)

func lowGC() (restore func()) {
	gcMu.Lock()
	if gcUsers == 0 {
		gcBefore = debug.SetGCPercent(20)
	}
	gcUsers++
	gcMu.Unlock()
	return func() {
		gcMu.Lock()
		if gcUsers--; gcUsers == 0 {
			debug.SetGCPercent(gcBefore)
		}
		gcMu.Unlock()
	}
}
