package cache

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/convcache/convcache/internal/errs"
	"github.com/convcache/convcache/internal/format"
	"github.com/convcache/convcache/internal/safefile"
	"github.com/convcache/convcache/internal/vfs"
)

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
	if c.opts.Memory != nil {
		defer c.opts.Memory.Compacting()()
	}

	// 1. Read the file as it is. (Locks are released by defer throughout,
	// so that even a panic, recovered by compactSoon, leaves none held.)
	lk, err := c.lk.Lock(c.opts.LockTimeout)
	if err != nil {
		return fmt.Errorf("%w: compaction of %s postponed", ErrLock, c.path)
	}
	buf, id, err := func() ([]byte, vfs.FileID, error) {
		defer lk.Unlock()
		return c.readWhole()
	}()
	if err != nil {
		return err
	}
	var size int64
	c.locked(func() { size = c.snapEntries + c.journalPuts }) // about the entries, as last seen (bounded hints)
	all := format.ReadContents(buf, int(min(size+size/8+1024, 1<<27)))
	end := all.End // records appended after this are copied in step 3
	damaged := damagedPieces(buf, all.Corrupt())
	if compactHook != nil {
		compactHook()
	}

	// 2. Fold in this handle's recent hits and unwritten entries, evict,
	// encode.
	ms := start.UnixMilli()
	var written map[string][]byte
	c.locked(func() { written = c.foldInto(all, ms) })
	evicted := all.Evict(c.opts.MaxEntries, c.opts.MaxBytes)
	entries, oldSize := all.Live(), len(buf)
	image := all.Encode(start)
	all, buf = nil, nil // garbage from here
	if c.opts.Memory != nil {
		c.opts.Memory.Dropped(int64(oldSize)) // before the new index is built
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
		if err == nil && same && len(damaged) > 0 {
			err = c.keepDamaged(damaged)
		}
		if err == nil && same {
			err = vfs.Replace(c.fs, c.path, image)
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

// damagedPieces copies the ranges of buf that hold damage, for
// keepDamaged.
func damagedPieces(buf []byte, ranges []format.Damage) []vfs.Piece {
	var out []vfs.Piece
	for _, d := range ranges {
		out = append(out, vfs.Piece{Off: d.Off, Bytes: bytes.Clone(buf[d.Off : d.Off+d.Len])})
	}
	return out
}

// keepDamaged saves the damaged bytes a compaction is about to drop beside
// the file (vfs.SaveDamaged), with the file's mode and group, and says so.
// If they cannot be saved, the compaction is not published: damage is
// dropped only once it is kept. Caller holds the file lock.
func (c *Cache) keepDamaged(pieces []vfs.Piece) error {
	attrs := safefile.Private
	if fi, err := c.fs.Stat(c.path); err == nil && fi.Mode().IsRegular() {
		attrs = safefile.AttrsOf(fi)
	}
	name, err := vfs.SaveDamaged(c.fs, c.path, attrs, pieces)
	if err != nil {
		return fmt.Errorf("compaction of %s postponed: keeping its damaged records: %w", c.path, err)
	}
	var n int64
	for _, p := range pieces {
		n += int64(len(p.Bytes))
	}
	c.warnf("%s: compaction dropped %d bytes of damaged records; they are kept in %s for inspection (the newest %d such files are kept)",
		c.path, n, name, vfs.KeepDamaged)
	return nil
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
func (c *Cache) foldInto(all *format.Contents, ms int64) (written map[string][]byte) {
	g := c.gen.Load()
	c.idx.Load().each(func(ch []byte, off int) {
		if atomicLoad32(ch, off+8) == g {
			k := entryKey(ch, off)
			if e := all.Find(c.scopeHash, xxhash.Sum64(k), k); e != nil {
				e.Used = max(e.Used, ms)
			}
		}
	})
	c.gen.Store(g + 1)
	written = make(map[string][]byte, len(c.pending))
	for k, v := range c.pending {
		written[k] = v
		all.Put(c.scopeHash, format.Record{Key: []byte(k), Value: v, Inserted: ms, Used: ms})
	}
	if all.Names[c.scopeHash] == "" {
		all.Names[c.scopeHash] = c.scope
	}
	return written
}

// readWhole reads the whole file at the path and identifies it. A file
// that is not a convcache file is never read further, or replaced.
func (c *Cache) readWhole() ([]byte, vfs.FileID, error) {
	f, err := c.openChecked(os.O_RDONLY) // a file that may not be used is not compacted either
	if errors.Is(err, safefile.ErrRefused) {
		return nil, vfs.FileID{}, err
	}
	if err != nil {
		return nil, vfs.FileID{}, errs.IO(err, "open", c.path, "")
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, vfs.FileID{}, errs.IO(err, "stat", c.path, "")
	}
	id := vfs.IDOf(fi)
	buf := make([]byte, fi.Size())
	if _, err := f.ReadAt(buf, 0); err != nil {
		return nil, vfs.FileID{}, errs.IO(err, "read", c.path, "")
	}
	if _, err := format.DecodeHeader(buf[:min(len(buf), format.HeaderSize)]); err != nil {
		return nil, vfs.FileID{}, err
	}
	return buf, id, nil
}

// appendTail appends to image the valid frames the file at the path holds
// after offset from, if it is still the file id. Caller holds the file lock.
func (c *Cache) appendTail(image []byte, id vfs.FileID, from int64) ([]byte, bool, error) {
	f, err := c.openChecked(os.O_RDONLY)
	if err != nil {
		return image, false, nil // gone: nothing to publish over
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return image, false, errs.IO(err, "stat", c.path, "")
	}
	if now := vfs.IDOf(fi); now != id || fi.Size() < from {
		return image, false, nil // another process compacted meanwhile
	}
	tail := make([]byte, fi.Size()-from)
	if _, err := f.ReadAt(tail, from); err != nil {
		return image, false, errs.IO(err, "read", c.path, "")
	}
	format.Scan(tail, from, true, func(fr format.Frame) {
		n := format.FrameHeaderSize + len(fr.Payload)
		image = append(image, tail[fr.Off-from:fr.Off-from+int64(n)]...)
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
