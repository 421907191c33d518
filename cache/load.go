package cache

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"syscall"
	"time"

	"github.com/convcache/convcache/internal/errs"
	"github.com/convcache/convcache/internal/format"
	"github.com/convcache/convcache/internal/safefile"
	"github.com/convcache/convcache/internal/vfs"
)

// adopt makes f the current data file: it validates the header, reads every
// frame and swaps in a freshly built index (Open reads a file with a
// snapshot index lazily instead: lazy.go). Caller holds mu. With final, a
// damaged tail is consumed (the caller holds the file lock, or is opening).
func (c *Cache) adopt(f vfs.File, final bool) error {
	fi, err := f.Stat()
	if err != nil {
		return errs.IO(err, "stat", c.path, "")
	}
	size := fi.Size()
	buf, err := c.read(f, 0, size)
	if err != nil {
		return err
	}
	h, err := c.checkHeader(buf)
	if err != nil {
		return err
	}
	budget := format.NewBudget(size)
	ix, scopes, lay := c.build(buf, final, &budget)
	defer c.releaseScratch(size)
	// Entries kept in memory survive the swap.
	for k, v := range c.pending {
		ix.put([]byte(k), v, keyHash([]byte(k)), 0, 0)
	}
	if old := c.idx.Load(); old != nil {
		carryMarks(old, ix, c.gen.Load())
	}
	if c.f != nil {
		if c.dirty {
			c.unsynced = append(c.unsynced, c.f)
		} else {
			c.f.Close()
		}
	}
	c.f, c.dirty = f, false
	c.off, c.snapEnd, c.created, c.scopes = lay.end, lay.snapEnd, h.Created, scopes
	c.compacted = h.Flags&format.HeaderCompacted != 0 || lay.snapEnd > format.HeaderSize
	c.snapEntries, c.journalPuts = lay.snapEntries, lay.journalPuts
	c.budget, c.budgetEnd, c.tailMark = budget, size, tailMark{}
	c.lazy = nil // the index holds the whole file
	if lay.end < size {
		c.tailMark = markOf(fi) // a tail left for later: see refresh
	}
	c.setIndex(ix)
	return nil
}

// checkHeader decodes the header at the start of b. A file this library
// does not read (ErrFormat) or whose header is damaged (ErrCorrupt) is
// refused, and left untouched.
func (c *Cache) checkHeader(b []byte) (format.Header, error) {
	h, err := format.DecodeHeader(b[:min(len(b), format.HeaderSize)])
	if err != nil {
		if errors.Is(err, format.ErrNewer) {
			return h, fmt.Errorf("%s: %w (version %d; this library reads up to %d): upgrade convcache or use another CONVCACHE_PATH", c.path, err, h.Version, format.Version)
		}
		return h, fmt.Errorf("%s: %w: the file was left untouched; move it aside or set CONVCACHE_PATH to another file", c.path, err)
	}
	return h, nil
}

// tailMark identifies a file's state by its size and times: a scan that
// left an unfinished tail need not be redone until the file changes.
type tailMark struct {
	size         int64
	mtime, ctime syscall.Timespec
}

// markSettle is how long a file's data must have been left alone for its
// times to tell its state: file times tick coarsely (a few milliseconds),
// so a truncation and an append within one tick could leave the size and
// times as they were. A file modified more recently (or whose time is that
// close ahead) is not marked, and is scanned again (as git treats a
// "racily clean" file). A variable for tests.
var markSettle = 100 * time.Millisecond

func markOf(fi fs.FileInfo) tailMark {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return markOfStat(st)
	}
	return tailMark{}
}

func markOfStat(st *syscall.Stat_t) tailMark {
	if d := time.Since(time.Unix(st.Mtim.Unix())); d < markSettle && d > -markSettle {
		return tailMark{} // no mark (refresh never matches one of size 0)
	}
	return tailMark{size: st.Size, mtime: st.Mtim, ctime: st.Ctim}
}

// releaseScratch drops the buffers a full read of a large file used, and
// tells the memory policy, which may return the memory to the operating
// system: the index keeps what it needs in its own arena, and a long-lived
// host should not carry a file image.
func (c *Cache) releaseScratch(size int64) {
	if cap(c.buf) > 1<<20 {
		c.buf = nil
	}
	c.dec.Release(1 << 20)
	if c.opts.Memory != nil {
		c.opts.Memory.Dropped(size)
	}
}

// read returns size-off bytes of f from off, in the reusable read buffer.
func (c *Cache) read(f vfs.File, off, size int64) ([]byte, error) {
	n := int(size - off)
	if cap(c.buf) < n {
		c.buf = make([]byte, n)
	}
	buf := c.buf[:n]
	got, err := f.ReadAt(buf, off)
	if err != nil && !(errors.Is(err, io.EOF) && got == n) {
		if errors.Is(err, io.EOF) { // the file shrank under us
			return buf[:got], nil
		}
		return nil, errs.IO(err, "read", c.path, "")
	}
	return buf, nil
}

// layout is where a file image's parts are, as build finds them.
type layout struct {
	end         int64 // offset after the last frame accounted for
	snapEnd     int64 // end of the leading snapshot frames
	snapEntries int64 // entries in those frames, all scopes
	journalPuts int64 // put frames after them, all scopes
}

// build parses a whole file image into a new index of this scope, decoding
// no more than budget allows.
//
// A snapshot chunk's entry count is only a hint, bounded by the chunk's
// bytes (format.ChunkEntries): it sizes the index and counts the snapshot for
// needCompact, so a forged count can neither make the index huge nor keep
// the journal from being compacted.
func (c *Cache) build(buf []byte, final bool, budget *format.Budget) (ix *index, scopes map[uint64]bool, lay layout) {
	scopes = map[uint64]bool{}
	var frames []format.Frame
	var hint int64
	// The snapshot ends where its index says, if it has one: damage before
	// that is never a tail, nor left for later (format.ScanFile). Without
	// an index, its end is the run of snapshot and pad frames.
	indexEnd, indexed := format.IndexedEnd(buf)
	if !indexed {
		indexEnd = format.HeaderSize
	}
	lay.snapEnd = format.HeaderSize
	lay.end = format.HeaderSize + format.ScanFile(buf[format.HeaderSize:], format.HeaderSize, indexEnd, final, func(f format.Frame) {
		head, isSnap := format.DecodeSnapshotHead(f.Payload)
		isSnap = isSnap && f.Type == format.TypeSnapshot
		entries := format.ChunkEntries(head.Count, len(f.Payload))
		if format.ExtendsSnapshot(f, lay.snapEnd) {
			lay.snapEnd = f.End()
			if isSnap {
				lay.snapEntries += entries
			}
		}
		if f.Type == format.TypePut {
			lay.journalPuts++
		}
		if isSnap && head.Scope == c.scopeHash {
			hint += entries
		} else if f.Type == format.TypePut {
			hint++
		}
		frames = append(frames, f)
	}, c.noteDamage)
	if indexed {
		lay.snapEnd = indexEnd
	}
	ix = newIndex(int(hint))
	c.dec.Budget = budget
	v := &indexer{c, ix, scopes}
	for _, f := range frames {
		c.dec.Frame(f, v)
	}
	return ix, scopes, lay
}

func (c *Cache) noteDamage(d format.Damage) {
	c.st.damaged.Add(uint64(d.Len))
}

// indexer is the engine's format.Visitor: it adds the entries of this
// handle's scope to an index, notes every scope the file names, and counts
// damage. Caller holds mu.
type indexer struct {
	c      *Cache
	ix     *index
	scopes map[uint64]bool
}

func (v *indexer) Put(scope uint64, r format.Record) {
	if scope == v.c.scopeHash {
		v.ix.put(r.Key, r.Value, keyHash(r.Key), entryFromFile|entryCold, 0)
	}
}

func (v *indexer) Scope(h uint64, name string) {
	v.scopes[h] = true
	if c := v.c; h == c.scopeHash && name != c.scope && !c.warnedBroke {
		c.warnedBroke = true
		c.warnf("%s: scope %q collides with %q (64-bit hash); results may mix", c.path, c.scope, name)
	}
}

func (v *indexer) Touch(uint64, int64, uint64) {} // use times matter to compaction only

// Chunk decodes this scope's snapshot chunks only: another scope's is not
// even decompressed.
func (v *indexer) Chunk(scope uint64) bool {
	v.scopes[scope] = true
	return scope == v.c.scopeHash
}

func (v *indexer) Damaged(d format.Damage) { v.c.noteDamage(d) }

// carryMarks copies the use marks of the current generation from an old
// index to its replacement, so a reload does not forget recent hits.
func carryMarks(old, ix *index, gen uint32) {
	old.each(func(c []byte, off int) {
		if atomicLoad32(c, off+8) != gen {
			return
		}
		k := entryKey(c, off)
		if nc, noff, ok := ix.lookup(k, keyHash(k)); ok {
			atomicStore32(nc, noff+8, gen)
		}
	})
}

// refresh brings the index up to date with the file: it reloads after the
// file was replaced (compaction) and applies frames appended since the last
// look. Caller holds mu. With final (the caller holds the file lock) a
// damaged tail is consumed and a missing file is created.
//
// With nothing new this costs one fstat.
func (c *Cache) refresh(final bool) error {
	if c.shut {
		return ErrClosed // Close let go of the file (lifecycle.go)
	}
	if c.detached {
		return nil // the file at the path is not ours to read
	}
	if c.f == nil {
		return c.reopen(final)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(c.f.Fd()), &st); err != nil {
		return errs.IO(err, "stat", c.path, "")
	}
	if st.Nlink != 1 {
		// 0: unlinked, usually replaced by a compaction's rename. More
		// than 1: hard-linked, so check the path itself.
		pi, err := c.fs.Stat(c.path)
		if err != nil {
			return c.reopen(final)
		}
		if pid := vfs.IDOf(pi); pid != (vfs.FileID{Dev: uint64(st.Dev), Ino: st.Ino}) {
			return c.reopen(final)
		}
	}
	size := st.Size
	switch {
	case size == c.off:
		return nil
	case size < c.off:
		return c.reopen(final) // truncated by someone else: start over
	case !final && c.tailMark.size > 0 && c.tailMark == markOfStat(&st):
		return nil // the same unfinished tail as last time: nothing to redo
	}
	buf, err := c.read(c.f, c.off, size)
	if err != nil {
		return err
	}
	if size > c.budgetEnd {
		c.budget.Grow(size - c.budgetEnd)
		c.budgetEnd = size
	}
	c.dec.Budget = &c.budget
	v := &indexer{c, c.idx.Load(), c.scopes}
	tail := format.Damage{Off: -1}
	from := c.off
	c.off += format.ScanFile(buf, from, c.snapEnd, final, func(f format.Frame) {
		if f.Type == format.TypePut {
			c.journalPuts++
		}
		c.dec.Frame(f, v)
	}, func(d format.Damage) {
		c.noteDamage(d)
		tail = d
	})
	c.tailMark = tailMark{}
	if c.off < size {
		c.tailMark = markOfStat(&st)
	}
	if final && tail.Off >= 0 && tail.Off+tail.Len == size && !c.readOnly &&
		format.TornTail(tail, c.snapEnd, buf[tail.Off-from:]) {
		// A torn tail: a writer died mid-append (SIGKILL can cut a write
		// between pages). We hold the lock, so nobody is writing, and no
		// reader has read past an unfinished tail: cut it off before
		// appending, so the journal never holds damage between records.
		// Any other damage stays (the snapshot's, a complete record that
		// fails its checksum): only a rewrite drops it (compact.go).
		if err := c.f.Truncate(tail.Off); err == nil {
			c.off = tail.Off
		}
	}
	return nil
}

// reopen adopts whatever file is at the path now, if it may be used (else
// the handle detaches, keeping what it has). Caller holds mu.
func (c *Cache) reopen(final bool) error {
	if c.shut {
		return ErrClosed // Close let go of the file (lifecycle.go)
	}
	f, err := c.openData()
	if errors.Is(err, safefile.ErrRefused) {
		return nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		if !final || c.readOnly {
			return nil
		}
		if err := c.createFile(); err != nil {
			return err
		}
		f, err = c.openData()
	}
	if errors.Is(err, safefile.ErrRefused) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := c.adopt(f, final); err != nil {
		f.Close()
		return err
	}
	return nil
}

// Load picks up every entry in the file, including those other processes
// wrote since the last look.
func (c *Cache) Load() error {
	if c.mode == ModeOff {
		return c.live()
	}
	if err := c.lockLive(); err != nil {
		return err
	}
	defer c.mu.Unlock()
	return c.refresh(false)
}
