package cache

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/convcache/convcache/internal/errs"
	"github.com/convcache/convcache/internal/format"
	"github.com/convcache/convcache/lock"
)

func checkEntry(key, value []byte) error {
	if len(key) == 0 || len(key) > MaxKeySize {
		return fmt.Errorf("%w: key is %d bytes; keys are 1 to %d bytes", ErrSize, len(key), MaxKeySize)
	}
	if len(value) > MaxValueSize {
		return fmt.Errorf("%w: value is %d bytes; the limit is %d", ErrSize, len(value), MaxValueSize)
	}
	return nil
}

// Insert sets key's value, replacing any earlier one, and appends it to the
// file before returning: a process killed right after loses nothing. It does
// not fsync; Save does.
//
// If the file lock cannot be had within the lock timeout, the entry is kept
// in memory, ErrPending is returned, and the next Insert or Save that gets
// the lock writes it. On a read-only handle the entry is kept in memory and
// ErrReadOnly returned.
func (c *Cache) Insert(key, value []byte) error {
	if c.vlevel == 0 {
		return c.insert(key, value, true)
	}
	t0 := time.Now()
	err := c.insert(key, value, true)
	switch {
	case err == nil:
		c.logEvent("insert", key, time.Since(t0), "")
	case errors.Is(err, ErrPending):
		c.logEvent("pending", key, time.Since(t0), "lock busy: kept in memory")
	default:
		c.logEvent("error", key, time.Since(t0), logDetail(err))
	}
	return err
}

// insert is Insert; toRemote also queues the entry for the remote tier.
func (c *Cache) insert(key, value []byte, toRemote bool) error {
	if err := checkEntry(key, value); err != nil {
		return err
	}
	if err := c.live(); err != nil {
		return err
	}
	if c.mode == ModeOff {
		c.st.inserts.Add(1)
		return nil
	}
	h := keyHash(key)
	c.st.inserts.Add(1)
	if toRemote && c.opts.Remote != nil && c.mode != ModeReadOnly {
		c.opts.Remote.Put(c.scope, key, value) // write-behind: never blocks
	}
	if err := c.lockLive(); err != nil {
		return err
	}
	if c.readOnly {
		c.idx.Load().put(key, value, h, 0, c.gen.Load())
		c.pending[string(key)] = bytes.Clone(value)
		reason := c.roReason
		c.mu.Unlock()
		return fmt.Errorf("%w (%s): %s", ErrReadOnly, reason, c.path)
	}
	c.mu.Unlock()
	// An identical value already in the file needs no second record.
	if ch, off, ok := c.idx.Load().lookup(key, h); ok && entryFlags(ch, off)&entryNotInFile == 0 &&
		bytes.Equal(entryValue(ch, off), value) {
		c.mu.Lock()
		_, isPending := c.pending[string(key)]
		c.mu.Unlock()
		if !isPending {
			return nil
		}
	}
	rec := format.AppendPutFrame(nil, c.scopeHash, time.Now().UnixMilli(), key, value)
	lk, err := c.lockForWrite(false)
	if err != nil {
		if err := c.lockLive(); err != nil {
			return err // closed meanwhile: nothing would write it
		}
		c.idx.Load().put(key, value, h, 0, c.gen.Load())
		c.pending[string(key)] = bytes.Clone(value)
		c.mu.Unlock()
		if errors.Is(err, ErrLock) {
			return fmt.Errorf("%w: %v", ErrPending, err)
		}
		return err
	}
	defer c.unlockWrite(lk)
	c.mu.Lock()
	ix := c.idx.Load()
	ix.put(key, value, h, 0, c.gen.Load())
	delete(c.pending, string(key))
	err = c.appendLocked(rec, nil)
	if cur := c.idx.Load(); cur != ix {
		// appendLocked reloaded first (a peer's compaction replaced the
		// file) into an index without this entry, then appended it past
		// what the index has read.
		cur.put(key, value, h, 0, c.gen.Load())
	}
	if err != nil {
		c.pending[string(key)] = bytes.Clone(value)
	}
	compact := err == nil && c.needCompact()
	c.mu.Unlock()
	if compact {
		c.compactSoon()
	}
	return err
}

// lockForWrite takes this handle's writer slot and the file lock. Save waits
// the full lock timeout; Insert, after a recent timeout, tries only once so
// that a stalled lock holder costs one timeout, not one per insert.
func (c *Cache) lockForWrite(full bool) (*lock.Lock, error) {
	timeout := c.opts.LockTimeout
	c.mu.Lock()
	if !full && time.Now().Before(c.stallUntil) {
		timeout = 0
	}
	c.mu.Unlock()
	start := time.Now()
	select {
	case c.wsem <- struct{}{}:
	default:
		t := time.NewTimer(timeout)
		select {
		case c.wsem <- struct{}{}:
			t.Stop()
		case <-t.C:
			c.st.lockWait(time.Since(start))
			return nil, fmt.Errorf("%w: another thread of this process holds %s", ErrLock, c.lk.Path())
		}
	}
	lk, err := c.lk.Lock(timeout - time.Since(start))
	if waited := time.Since(start); waited > 50*time.Microsecond {
		c.st.lockWait(waited)
		if c.vlevel >= LogAll {
			c.logEvent("lock_wait", nil, waited, "")
		}
	}
	if err != nil {
		<-c.wsem
		if errors.Is(err, lock.ErrTimeout) {
			c.mu.Lock()
			c.stallUntil = time.Now().Add(max(c.opts.LockTimeout, time.Second))
			c.mu.Unlock()
			return nil, fmt.Errorf("%w after %v: %s is held by a stalled or slow process (CONVCACHE_LOCK_TIMEOUT_MS sets the wait)", ErrLock, timeout, c.lk.Path())
		}
		if errors.Is(err, lock.ErrRefused) {
			c.mu.Lock()
			c.lockRefused(err)
			reason := c.roReason
			c.mu.Unlock()
			return nil, fmt.Errorf("%w (%s): %s", ErrReadOnly, reason, c.path)
		}
		return nil, errs.IO(err, "lock", c.lk.Path(), "make the cache directory writable")
	}
	c.mu.Lock()
	c.stallUntil = time.Time{}
	c.mu.Unlock()
	return lk, nil
}

func (c *Cache) unlockWrite(lk *lock.Lock) {
	lk.Unlock()
	<-c.wsem
}

// appendLocked appends the pending entries, the put frame rec and the
// frames extra (either may be nil) to the file. Caller holds the file lock
// and mu. On failure the file is cut back to where it was, so a failed
// append leaves no torn record.
func (c *Cache) appendLocked(rec, extra []byte) error {
	if err := c.refresh(true); err != nil {
		return err
	}
	if c.readOnly {
		return fmt.Errorf("%w (%s): %s", ErrReadOnly, c.roReason, c.path)
	}
	puts := len(rec) > 0 || len(c.pending) > 0
	if !puts && len(extra) == 0 {
		return nil
	}
	var buf []byte
	if puts && !c.scopes[c.scopeHash] {
		buf = format.AppendScopeFrame(buf, c.scopeHash, c.scope) // name the scope before its first put
	}
	now := time.Now().UnixMilli()
	for k, v := range c.pending {
		buf = format.AppendPutFrame(buf, c.scopeHash, now, []byte(k), v)
	}
	buf = append(buf, rec...)
	buf = append(buf, extra...)
	n, err := c.f.Write(buf)
	if err != nil || n != len(buf) {
		if n > 0 {
			c.f.Truncate(c.off) // remove our torn record; nobody else writes while we hold the lock
		}
		if err == nil {
			err = io.ErrShortWrite
		}
		return errs.IO(err, "append to", c.path, "free some disk space")
	}
	c.off += int64(n)
	c.journalPuts += int64(len(c.pending))
	if len(rec) > 0 {
		c.journalPuts++
	}
	if puts {
		c.scopes[c.scopeHash] = true
	}
	c.dirty = true
	clear(c.pending)
	return nil
}

// needCompact reports whether the journal or the bounds call for compaction.
// Caller holds mu.
//
// The journal is compacted once it holds more records than the snapshot
// holds entries (and more than CompactJournal bytes): each compaction then
// rewrites at most twice the records appended since the last one, so its
// cost per insert is constant however large the file grows. (Comparing
// bytes would not do: a snapshot entry takes about a tenth of the bytes of
// a journal record, and compactions would come ten times too often.)
func (c *Cache) needCompact() bool {
	if c.f == nil || c.compactOff.Load() {
		return false
	}
	journal := c.off - c.snapEnd
	switch {
	case journal > c.opts.CompactJournal && c.journalPuts > c.snapEntries:
		return true
	case c.opts.MaxBytes > 0 && c.off > c.opts.MaxBytes:
		return true
	case c.opts.MaxEntries > 0 && c.snapEntries+c.journalPuts > c.opts.MaxEntries && c.journalPuts > c.opts.MaxEntries/10:
		// Perhaps over the bound: the journal may rewrite keys the snapshot
		// has. Waiting for a tenth of the bound in the journal keeps a cache
		// that sits exactly at the bound from compacting on every insert.
		return true
	}
	return false
}

// Save writes any entries kept in memory and the record of which entries
// were used, compacts if the journal has grown enough, and fsyncs. It returns
// nil only when everything inserted through this handle is on stable
// storage.
func (c *Cache) Save() error {
	if c.mode == ModeOff {
		return c.live()
	}
	if err := c.lockLive(); err != nil {
		return err
	}
	ro, pending := c.readOnly, len(c.pending)
	c.mu.Unlock()
	if ro {
		if pending > 0 {
			return fmt.Errorf("%w (%s): %d entries are in memory only", ErrReadOnly, c.roReason, pending)
		}
		return nil
	}
	lk, err := c.lockForWrite(true)
	if err != nil {
		return err
	}
	c.mu.Lock()
	err = c.appendLocked(nil, c.touchFrame(nil))
	compact := err == nil && c.needCompact()
	c.mu.Unlock()
	c.unlockWrite(lk)
	if err != nil {
		return err
	}
	if compact {
		if err := c.compact(); err != nil {
			return err
		}
	}
	if c.opts.Remote != nil && c.mode != ModeReadOnly {
		if err := c.opts.Remote.Flush(); err != nil {
			c.warnf("remote flush: %v", err) // the remote tier fails open
		}
	}
	if err := c.lockLive(); err != nil {
		return err // closed meanwhile: Close does not fsync
	}
	defer c.mu.Unlock()
	return c.syncLocked()
}

// syncLocked fsyncs every file this handle appended to. Caller holds mu.
func (c *Cache) syncLocked() error {
	for len(c.unsynced) > 0 {
		f := c.unsynced[0]
		if err := f.Sync(); err != nil {
			return errs.IO(err, "fsync", c.path, "")
		}
		f.Close()
		c.unsynced = c.unsynced[1:]
	}
	if c.dirty && c.f != nil {
		if err := c.f.Sync(); err != nil {
			return errs.IO(err, "fsync", c.path, "")
		}
		c.dirty = false
	}
	return nil
}

// touchFrame appends to dst a frame listing the keys used since the last
// one, and starts a new generation. Caller holds mu.
func (c *Cache) touchFrame(dst []byte) []byte {
	g := c.gen.Load()
	var hashes []byte
	c.idx.Load().each(func(ch []byte, off int) {
		if atomicLoad32(ch, off+8) == g && entryFlags(ch, off)&entryNotInFile == 0 {
			hashes = binary.LittleEndian.AppendUint64(hashes, xxhash.Sum64(entryKey(ch, off)))
		}
	})
	c.gen.Store(g + 1)
	if len(hashes) == 0 {
		return dst
	}
	p := make([]byte, 16, 16+len(hashes))
	binary.LittleEndian.PutUint64(p, c.scopeHash)
	binary.LittleEndian.PutUint64(p[8:], uint64(time.Now().UnixMilli()))
	return format.AppendFrame(dst, format.TypeTouch, 0, append(p, hashes...))
}
