package cache

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/convcache/convcache/internal/safefile"
	"github.com/convcache/convcache/lock"
)

// Cache is a handle on one cache file, seen through one scope. It is safe for
// concurrent use by many goroutines; any number of Caches, in one process or
// many, may share a file.
type Cache struct {
	path      string // resolved path of the data file ("" in ModeOff)
	scope     string
	scopeHash uint64
	mode      Mode
	opts      Options
	fs        fileSystem
	lk        *lock.File

	idx    atomic.Pointer[index] // this scope's entries; read without locks
	gen    atomic.Uint32         // touch generation: entries used since the last touch frame carry it
	closed atomic.Bool
	st     counters

	wsem chan struct{} // one writer of this handle at a time, before the file lock

	mu          sync.Mutex // guards the fields below; never held while waiting for the file lock
	f           file       // current data file; nil when none exists yet
	off         int64      // file offset up to which frames have been applied
	snapEnd     int64      // end of the leading snapshot frames: the journal starts here
	snapEntries int64      // entries in the snapshot, all scopes
	journalPuts int64      // put records in the journal, all scopes
	created     time.Time
	compacted   bool              // the file was written by compaction: created is the last one
	scopes      map[uint64]bool   // scope hashes named in the current file
	pending     map[string][]byte // entries kept in memory, not yet in the file
	dirty       bool              // appended since the last fsync
	unsynced    []file            // replaced files holding appends not yet synced
	readOnly    bool              // never write the file
	roReason    string
	detached    bool // the file at the path may not be used: it is never read again
	fsType      string
	networkFS   bool
	stallUntil  time.Time    // after a lock timeout, inserts try the lock once until then
	buf         []byte       // read scratch
	zbuf        []byte       // decompression scratch
	recs        []record     // decoded snapshot scratch
	budget      decodeBudget // what is left to decode of the current file
	budgetEnd   int64        // the file size budget has been granted for
	tailMark    tailMark     // the file as a scan that left a tail saw it
	warnedBroke bool         // a reload failure was reported
	flights     flightGroup

	compactMu   sync.Mutex  // one compaction of this handle at a time
	compactBusy atomic.Bool // a background compaction is running
	compactOff  atomic.Bool // a compaction panicked: this handle compacts no more

	system *Cache    // read-only system tier, or nil
	vlevel int       // verbose log level; 0 = off
	log    *eventLog // verbose log, when vlevel > 0
}

// Open opens the cache file at path, creating it and its directory (mode
// 0700) if missing. An empty path means DefaultPath. A nil o means the zero
// Options.
//
// Open reads the whole file. A damaged record is skipped; a file that is not
// a convcache file (ErrFormat) or whose header is damaged (ErrCorrupt) is
// refused and left untouched.
func Open(path string, o *Options) (*Cache, error) {
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.Scope == "" {
		opts.Scope = DefaultScope
	}
	if len(opts.Scope) > MaxScopeSize {
		return nil, fmt.Errorf("%w: scope is %d bytes, the limit is %d", ErrSize, len(opts.Scope), MaxScopeSize)
	}
	if opts.Mode < ModeReadWrite || opts.Mode > ModeStrict {
		return nil, fmt.Errorf("%w: unknown mode %d", ErrInvalid, opts.Mode)
	}
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = DefaultLockTimeout
	}
	if opts.BuildTimeout <= 0 {
		opts.BuildTimeout = DefaultBuildTimeout
	}
	if opts.CompactJournal <= 0 {
		opts.CompactJournal = DefaultCompactJournal
	}
	if opts.Warn == nil {
		opts.Warn = os.Stderr
	}
	c := &Cache{
		scope:     opts.Scope,
		scopeHash: xxhash.Sum64String(opts.Scope),
		mode:      opts.Mode,
		opts:      opts,
		fs:        opts.fs,
		wsem:      make(chan struct{}, 1),
		scopes:    map[uint64]bool{},
		pending:   map[string][]byte{},
	}
	if c.fs == nil {
		c.fs = osFS{}
	}
	c.idx.Store(newIndex(0))
	c.gen.Store(1)
	if opts.Verbose > 0 {
		c.vlevel = opts.Verbose
		w := opts.Log
		if w == nil {
			w = os.Stderr
		}
		c.log = &eventLog{w: w}
	}
	if c.mode == ModeOff {
		return c, nil
	}
	if err := c.openPath(path); err != nil {
		return nil, err
	}
	if opts.SystemPath != "" {
		// The system tier is checked as the user's own file is: root's (as
		// in an image), the user's, or trusted with TrustShared.
		sys, err := Open(opts.SystemPath, &Options{Scope: opts.Scope, Mode: ModeReadOnly, TrustShared: opts.TrustShared, Warn: opts.Warn})
		if err == nil && sys.detached {
			sys.Close() // not trusted: it said why
			sys = nil
		} else if err == nil && sys.Path() != "" && sys.f == nil {
			sys.Close()
			sys, err = nil, fmt.Errorf("%s does not exist (check CONVCACHE_SYSTEM_PATH)", opts.SystemPath)
		}
		if err != nil {
			c.warnf("system tier %s not used: %v", opts.SystemPath, err)
		} else if sys != nil {
			c.system = sys
		}
	}
	return c, nil
}

func (c *Cache) warnf(format string, args ...any) {
	fmt.Fprintf(c.opts.Warn, "convcache: "+format+"\n", args...)
}

func (c *Cache) openPath(path string) error {
	if path == "" {
		p, err := DefaultPath()
		if err != nil {
			return err
		}
		path = p
	}
	// Compaction renames over the file itself, never over a symlink to it;
	// a link another user planted is not followed at all.
	path, refused, err := resolve(path)
	if err != nil {
		return err
	}
	c.path = path
	if c.opts.TrustShared {
		c.lk = lock.NewShared(path + ".lock")
	} else {
		c.lk = lock.New(path + ".lock")
	}
	c.readOnly = c.mode == ModeReadOnly
	if c.readOnly {
		c.roReason = "mode ro"
	}
	if refused != nil {
		c.mu.Lock()
		c.detach(refused)
		c.mu.Unlock()
		return nil
	}
	if !c.readOnly {
		if err := c.fs.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return ioErr(err, "create the cache directory", filepath.Dir(path), "set CONVCACHE_PATH to a writable location")
		}
	}
	c.fsType, c.networkFS = fsTypeOf(filepath.Dir(path))
	if _, seen := warnedFS.LoadOrStore(path, true); c.networkFS && !seen {
		c.warnf("%s is on a network file system (%s): locks and rename are weaker there; prefer a local disk", path, c.fsType)
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	f, err := c.openData()
	if errors.Is(err, fs.ErrNotExist) && !c.readOnly {
		// Create it now, under the file lock. If the lock is held by a
		// stalled process, carry on without a file: the first insert that
		// gets the lock creates it.
		c.mu.Unlock()
		lk, lerr := c.lk.Lock(c.opts.LockTimeout)
		c.mu.Lock()
		if lerr != nil {
			if errors.Is(lerr, lock.ErrTimeout) {
				c.warnf("%s: lock busy; the file will be created by a later insert", path)
				return nil
			}
			if errors.Is(lerr, lock.ErrRefused) {
				c.lockRefused(lerr) // no file, and none will be made: finds miss
				return nil
			}
			return ioErr(lerr, "create the lock file", c.lk.Path(), "make the directory writable or set CONVCACHE_PATH")
		}
		defer lk.Unlock()
		if err = c.createFile(); err != nil {
			return err
		}
		f, err = c.openData()
	}
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, safefile.ErrRefused) {
		return nil // no file yet, or one we may not use: every find misses
	}
	if err != nil {
		return err
	}
	// Not final: without the lock, a writer may be appending right now.
	if err := c.adopt(f, false); err != nil {
		f.Close()
		return err
	}
	return nil
}

// openData opens the data file, read-write unless the handle is read-only,
// through the checked open. A file this user may not write is opened
// read-only with a warning. A file that may not be used at all (a link
// another user planted, not a regular file, another owner, writable by
// group or others: see package internal/safefile) detaches the handle and
// returns an error wrapping safefile.ErrRefused. Caller holds mu.
func (c *Cache) openData() (file, error) {
	if c.detached {
		return nil, &safefile.RefusedError{Path: c.path, Reason: c.roReason}
	}
	if !c.readOnly {
		f, err := c.openChecked(os.O_RDWR | os.O_APPEND)
		switch {
		case err == nil:
			return f, nil
		case errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS):
			c.readOnly, c.roReason = true, "not writable"
			c.warnf("%s is not writable (%v): opening it read-only", c.path, errors.Unwrap(err))
		case errors.Is(err, fs.ErrNotExist):
			return nil, err
		case errors.Is(err, safefile.ErrRefused):
			c.detach(err)
			return nil, err
		default:
			return nil, ioErr(err, "open", c.path, "check the path")
		}
	}
	f, err := c.openChecked(os.O_RDONLY)
	switch {
	case err == nil:
		return f, nil
	case errors.Is(err, fs.ErrNotExist):
		return nil, err
	case errors.Is(err, safefile.ErrRefused):
		c.detach(err)
		return nil, err
	}
	return nil, ioErr(err, "open", c.path, "check the path and its permissions")
}

// openChecked opens the data file without following a link at the path,
// and checks the file it opened (never the path again) against the trust
// rules. Compaction's reads and every re-open go through it.
func (c *Cache) openChecked(flag int) (file, error) {
	f, err := c.fs.OpenFile(c.path, flag|safefile.OpenFlags, 0)
	if err != nil {
		return nil, safefile.OpenError(c.path, err)
	}
	fi, err := f.Stat()
	if err == nil {
		err = safefile.Check(c.path, fi, c.policy(), false)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func (c *Cache) policy() safefile.Policy { return safefile.Policy{TrustShared: c.opts.TrustShared} }

// detach stops the handle from using the file at its path, for its whole
// life: the file is not read (not even parsed: its bytes may be an
// attacker's), every find misses except on entries inserted through this
// handle, and inserts stay in memory (ErrReadOnly). Entries read earlier,
// from a file that was trusted then, are kept. Caller holds mu.
func (c *Cache) detach(err error) {
	if c.detached {
		return
	}
	hint := "use another path"
	var re *safefile.RefusedError
	if errors.As(err, &re) {
		hint = re.Hint()
		c.roReason = "not used: " + re.Reason
	} else {
		c.roReason = "not used: " + err.Error()
	}
	c.detached, c.readOnly = true, true
	c.warnf("%v: not used (finds miss; inserts stay in memory); %s", err, hint)
}

// lockRefused makes the handle read-only because its lock file may not be
// used: waiting on a lock another user holds could stall every insert.
// Caller holds mu.
func (c *Cache) lockRefused(err error) {
	if c.readOnly {
		return
	}
	var re *safefile.RefusedError
	hint := "remove it if it is not yours to keep"
	if errors.As(err, &re) {
		hint = re.Hint()
	}
	c.readOnly, c.roReason = true, err.Error()
	c.warnf("%v: the cache is read-only (inserts stay in memory); %s", err, hint)
}

// createFile creates an empty cache file atomically. Caller holds the file
// lock and mu.
func (c *Cache) createFile() error {
	attrs := safefile.NewFileAttrs(filepath.Dir(c.path), c.policy())
	tmp, err := writeTemp(c.fs, c.path, encodeHeader(time.Now(), 0), attrs)
	if err != nil {
		return err
	}
	defer c.fs.Remove(tmp)
	// link fails if the file appeared meanwhile (a writer that does not
	// take the lock): use theirs, never replace it.
	if err := c.fs.Link(tmp, c.path); err != nil && !errors.Is(err, fs.ErrExist) {
		return ioErr(err, "create", c.path, "make the directory writable or set CONVCACHE_PATH")
	}
	if err := syncDir(c.fs, filepath.Dir(c.path)); err != nil {
		return ioErr(err, "sync directory of", c.path, "")
	}
	return nil
}

// writeTemp writes data to a new temporary file beside the cache file at
// path, gives it attrs (the mode and group of the file it will replace, or
// of a new file), syncs it and returns its name.
func writeTemp(fsys fileSystem, path string, data []byte, attrs safefile.Attrs) (string, error) {
	dir, base := filepath.Split(path)
	var name string
	var f file
	var err error
	for i := 0; i < 100; i++ {
		name = filepath.Join(dir, fmt.Sprintf(".%s.tmp-%d-%d", base, os.Getpid(), time.Now().UnixNano()+int64(i)))
		f, err = fsys.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, attrs.Perm&0o600)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return "", ioErr(err, "create a temporary file in", dir, "make the directory writable or set CONVCACHE_PATH")
	}
	if err := attrs.Apply(f); err != nil {
		f.Close()
		fsys.Remove(name)
		return "", ioErr(err, "set the mode and group of", name, "")
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		fsys.Remove(name)
		return "", ioErr(err, "write", name, "free some disk space")
	}
	return name, nil
}

// replaceFile atomically replaces path with data: a synced temporary file
// renamed over it, then the directory synced. A crash leaves the old file or
// the new one. The new file keeps the old one's mode and group, so that
// compacting a group-shared cache leaves it shared. Caller holds the file
// lock, so temporary files left by dead compactions are removed too.
func replaceFile(fsys fileSystem, path string, data []byte) error {
	attrs := safefile.Private
	if fi, err := fsys.Stat(path); err == nil && fi.Mode().IsRegular() {
		attrs = safefile.AttrsOf(fi)
	}
	return replaceFileAs(fsys, path, data, attrs)
}

// replaceFileAs is replaceFile giving the new file attrs.
func replaceFileAs(fsys fileSystem, path string, data []byte, attrs safefile.Attrs) error {
	tmp, err := writeTemp(fsys, path, data, attrs)
	if err != nil {
		return err
	}
	if err := fsys.Rename(tmp, path); err != nil {
		fsys.Remove(tmp)
		return ioErr(err, "rename a new file over", path, "")
	}
	if err := syncDir(fsys, filepath.Dir(path)); err != nil {
		return ioErr(err, "sync the directory of", path, "")
	}
	dir, base := filepath.Split(path)
	stale, _ := fsys.Glob(filepath.Join(dir, "."+base+".tmp-*"))
	for _, n := range stale {
		fsys.Remove(n)
	}
	return nil
}

// adopt makes f the current data file: it validates the header, reads every
// frame and swaps in a freshly built index. Caller holds mu. With final, a
// damaged tail is consumed (the caller holds the file lock, or is opening).
func (c *Cache) adopt(f file, final bool) error {
	fi, err := f.Stat()
	if err != nil {
		return ioErr(err, "stat", c.path, "")
	}
	size := fi.Size()
	buf, err := c.read(f, 0, size)
	if err != nil {
		return err
	}
	h, err := decodeHeader(buf[:min(len(buf), headerSize)])
	if err != nil {
		if errors.Is(err, errNewer) {
			return fmt.Errorf("%s: %w (version %d; this library reads up to %d): upgrade convcache or use another CONVCACHE_PATH", c.path, err, h.version, FormatVersion)
		}
		return fmt.Errorf("%s: %w: the file was left untouched; move it aside or set CONVCACHE_PATH to another file", c.path, err)
	}
	budget := newDecodeBudget(size)
	ix, scopes, lay := c.build(buf, final, &budget)
	defer c.releaseScratch(size)
	// Entries kept in memory survive the swap.
	for k, v := range c.pending {
		ix.put([]byte(k), v, xxhash.Sum64String(k), 0, 0)
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
	c.off, c.snapEnd, c.created, c.scopes = lay.end, lay.snapEnd, h.created, scopes
	c.compacted = h.flags&headerCompacted != 0 || lay.snapEnd > headerSize
	c.snapEntries, c.journalPuts = lay.snapEntries, lay.journalPuts
	c.budget, c.budgetEnd, c.tailMark = budget, size, tailMark{}
	if lay.end < size {
		c.tailMark = markOf(fi) // a tail left for later: see refresh
	}
	c.idx.Store(ix)
	return nil
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
// returns the memory to the operating system: the index keeps what it needs
// in its own arena, and a long-lived host should not carry a file image.
func (c *Cache) releaseScratch(size int64) {
	if cap(c.buf) > 1<<20 {
		c.buf = nil
	}
	if cap(c.zbuf) > 1<<20 {
		c.zbuf = nil
	}
	c.recs = nil
	if size > 4<<20 {
		debug.FreeOSMemory()
	}
}

// read returns size-off bytes of f from off, in the reusable read buffer.
func (c *Cache) read(f file, off, size int64) ([]byte, error) {
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
		return nil, ioErr(err, "read", c.path, "")
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
// bytes (chunkEntries): it sizes the index and counts the snapshot for
// needCompact, so a forged count can neither make the index huge nor keep
// the journal from being compacted.
func (c *Cache) build(buf []byte, final bool, budget *decodeBudget) (ix *index, scopes map[uint64]bool, lay layout) {
	scopes = map[uint64]bool{}
	var frames []frame
	var hint int64
	lay.snapEnd = headerSize
	lay.end = headerSize + scanFrames(buf[headerSize:], headerSize, final, func(f frame) {
		head, isSnap := decodeSnapshotHead(f.payload)
		isSnap = isSnap && f.typ == frameSnapshot
		entries := chunkEntries(head.count, len(f.payload))
		if (isSnap || f.typ == framePad) && f.off == lay.snapEnd {
			lay.snapEnd = f.off + frameHeader + int64(len(f.payload))
			if isSnap {
				lay.snapEntries += entries
			}
		}
		if f.typ == framePut {
			lay.journalPuts++
		}
		if isSnap && head.scopeHash == c.scopeHash {
			hint += entries
		} else if f.typ == framePut {
			hint++
		}
		frames = append(frames, f)
	}, c.noteDamage)
	ix = newIndex(int(hint))
	for _, f := range frames {
		c.apply(ix, scopes, f, budget)
	}
	return ix, scopes, lay
}

func (c *Cache) noteDamage(d damage) {
	c.st.damaged.Add(uint64(d.len))
}

// apply adds one frame's entries of this scope to ix, decoding no more
// than budget allows. Caller holds mu.
func (c *Cache) apply(ix *index, scopes map[uint64]bool, f frame, budget *decodeBudget) {
	switch f.typ {
	case framePut:
		p, ok := decodePut(f.payload)
		if !ok {
			c.noteDamage(damage{f.off, int64(len(f.payload))})
			return
		}
		if p.scope == c.scopeHash {
			ix.put(p.key, p.value, xxhash.Sum64(p.key), entryFromFile, 0)
		}
	case frameScope:
		if h, name, ok := decodeScope(f.payload); ok {
			scopes[h] = true
			if h == c.scopeHash && name != c.scope && !c.warnedBroke {
				c.warnedBroke = true
				c.warnf("%s: scope %q collides with %q (64-bit hash); results may mix", c.path, c.scope, name)
			}
		}
	case frameSnapshot:
		head, ok := decodeSnapshotHead(f.payload)
		if !ok {
			return
		}
		scopes[head.scopeHash] = true
		if head.scopeHash != c.scopeHash {
			return // another scope's chunk: not even decompressed
		}
		var err error
		_, c.recs, c.zbuf, err = decodeSnapshot(f, c.zbuf, c.recs[:0], false, budget)
		if err != nil {
			c.noteDamage(damage{f.off, int64(len(f.payload))})
			return
		}
		for _, r := range c.recs {
			ix.put(r.key, r.value, xxhash.Sum64(r.key), entryFromFile, 0)
		}
		clear(c.recs)
	}
}

// carryMarks copies the use marks of the current generation from an old
// index to its replacement, so a reload does not forget recent hits.
func carryMarks(old, ix *index, gen uint32) {
	old.each(func(c []byte, off int) {
		if atomicLoad32(c, off+8) != gen {
			return
		}
		k := entryKey(c, off)
		if nc, noff, ok := ix.lookup(k, xxhash.Sum64(k)); ok {
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
	if c.detached {
		return nil // the file at the path is not ours to read
	}
	if c.f == nil {
		return c.reopen(final)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(c.f.Fd()), &st); err != nil {
		return ioErr(err, "stat", c.path, "")
	}
	if st.Nlink != 1 {
		// 0: unlinked, usually replaced by a compaction's rename. More
		// than 1: hard-linked, so check the path itself.
		pi, err := c.fs.Stat(c.path)
		if err != nil {
			return c.reopen(final)
		}
		if pid, _ := idOf(pi); pid != (fileID{uint64(st.Dev), st.Ino}) {
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
		c.budget.grow(size - c.budgetEnd)
		c.budgetEnd = size
	}
	ix := c.idx.Load()
	tail := damage{off: -1}
	c.off += scanFrames(buf, c.off, final, func(f frame) {
		if f.typ == framePut {
			c.journalPuts++
		}
		c.apply(ix, c.scopes, f, &c.budget)
	}, func(d damage) {
		c.noteDamage(d)
		tail = d
	})
	c.tailMark = tailMark{}
	if c.off < size {
		c.tailMark = markOfStat(&st)
	}
	if final && tail.off >= 0 && tail.off+tail.len == size && !c.readOnly {
		// A torn tail: a writer died mid-append (SIGKILL can cut a write
		// between pages). We hold the lock, so nobody is writing, and no
		// reader has read past an unfinished tail: cut it off before
		// appending, so the journal never holds damage between records.
		if err := c.f.Truncate(tail.off); err == nil {
			c.off = tail.off
		}
	}
	return nil
}

// reopen adopts whatever file is at the path now, if it may be used (else
// the handle detaches, keeping what it has). Caller holds mu.
func (c *Cache) reopen(final bool) error {
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

// Path returns the resolved path of the cache file ("" in ModeOff).
func (c *Cache) Path() string { return c.path }

// Scope returns the handle's scope.
func (c *Cache) Scope() string { return c.scope }

// Mode returns the handle's mode.
func (c *Cache) Mode() Mode { return c.mode }

// ReadOnly reports whether the handle never writes its file, and why.
func (c *Cache) ReadOnly() (bool, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.readOnly, c.roReason
}

// Find copies key's value into dst and returns its length. found is false on
// a miss. If dst is too short, Find copies nothing and returns the length
// needed with ErrRange. A hit reads memory only; a miss first checks the file
// for entries other processes appended. Find never waits for the file lock.
func (c *Cache) Find(key, dst []byte) (n int, found bool, err error) {
	return c.find(key, dst, -1)
}

// find is Find with a counter stripe chosen by the caller (the C layer passes
// one per thread); stripe < 0 picks one from the key's hash.
func (c *Cache) find(key, dst []byte, stripe int) (int, bool, error) {
	if len(key) == 0 || len(key) > MaxKeySize {
		return 0, false, ErrSize
	}
	h := xxhash.Sum64(key)
	if stripe < 0 {
		stripe = goroutineStripe()
	}
	var t0 time.Time
	if c.vlevel > 0 {
		t0 = time.Now()
	}
	if n, flags, found, err := c.lookup(key, dst, h, stripe); found && c.mode != ModeRecache {
		if c.vlevel > 0 && err == nil {
			c.logEvent(hitEvent(flags), key, time.Since(t0), "")
		}
		return n, found, err
	}
	return c.findSlow(key, dst, h, stripe, t0)
}

func hitEvent(flags uint32) string {
	switch {
	case flags&entryFromSystem != 0:
		return "system_hit"
	case flags&entryFromFile != 0:
		return "persistent_hit"
	}
	return "hit"
}

// lookup is the hit path: memory only, no locks, no allocation. It returns
// the entry's flags (where it came from).
func (c *Cache) lookup(key, dst []byte, h uint64, stripe int) (int, uint32, bool, error) {
	ch, off, ok := c.idx.Load().lookup(key, h)
	if !ok {
		return 0, 0, false, nil
	}
	if g := c.gen.Load(); atomicLoad32(ch, off+8) != g {
		atomicStore32(ch, off+8, g)
	}
	v := entryValue(ch, off)
	flags := entryFlags(ch, off)
	if len(v) > len(dst) {
		return len(v), flags, true, ErrRange
	}
	copy(dst, v)
	c.st.hit(stripe, flags)
	return len(v), flags, true, nil
}

// findSlow handles a miss in memory: it reads what other processes
// appended, then asks the system tier, then the remote tier.
func (c *Cache) findSlow(key, dst []byte, h uint64, stripe int, t0 time.Time) (int, bool, error) {
	if c.mode == ModeOff || c.mode == ModeRecache {
		c.st.misses.Add(1)
		if c.vlevel > 0 {
			c.logEvent("miss", key, time.Since(t0), "")
		}
		return 0, false, nil
	}
	if c.closed.Load() {
		return 0, false, ErrClosed
	}
	c.mu.Lock()
	err := c.refresh(false)
	c.mu.Unlock()
	if err != nil {
		c.reportOnce(err)
	}
	event := "persistent_hit"
	n, _, found, err := c.lookup(key, dst, h, stripe)
	if !found {
		event = "system_hit"
		n, found, err = c.systemGet(key, dst, h, stripe)
	}
	if !found {
		event = "remote_hit"
		n, found, err = c.remoteGet(key, dst)
	}
	if found {
		if c.vlevel > 0 && err == nil {
			c.logEvent(event, key, time.Since(t0), "")
		}
		return n, found, err
	}
	c.st.misses.Add(1)
	if c.vlevel > 0 {
		c.logEvent("miss", key, time.Since(t0), "")
	}
	if c.mode == ModeStrict {
		return 0, false, ErrMiss
	}
	return 0, false, nil
}

// systemGet asks the read-only system tier. A hit is kept in this handle's
// memory, and written to its file only with Promote.
func (c *Cache) systemGet(key, dst []byte, h uint64, stripe int) (int, bool, error) {
	if c.system == nil {
		return 0, false, nil
	}
	v, ok := c.system.value(key, h)
	if !ok {
		return 0, false, nil
	}
	if c.opts.Promote {
		c.insert(key, v, false)
	} else {
		c.mu.Lock()
		c.idx.Load().put(key, v, h, entryFromSystem, c.gen.Load())
		c.mu.Unlock()
	}
	c.st.hit(stripe, entryFromSystem)
	if len(v) > len(dst) {
		return len(v), true, ErrRange
	}
	return copy(dst, v), true, nil
}

// value returns a copy of key's value, reading the file's new tail on a
// miss, without counting anything.
func (c *Cache) value(key []byte, h uint64) ([]byte, bool) {
	for try := 0; try < 2; try++ {
		if ch, off, ok := c.idx.Load().lookup(key, h); ok {
			return bytes.Clone(entryValue(ch, off)), true
		}
		if try == 0 {
			c.mu.Lock()
			err := c.refresh(false)
			c.mu.Unlock()
			if err != nil {
				c.reportOnce(err)
			}
		}
	}
	return nil, false
}

// reportOnce warns about a background failure (such as a foreign file
// replacing the cache) once per handle rather than on every miss.
func (c *Cache) reportOnce(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.warnedBroke {
		c.warnedBroke = true
		c.warnf("%v", err)
	}
}

// logDetail makes an error fit the log's last field: one line, no commas.
func logDetail(err error) string {
	return strings.NewReplacer(",", ";", "\n", " ").Replace(err.Error())
}

// Get returns a copy of key's value, for Go callers that do not manage a
// buffer.
func (c *Cache) Get(key []byte) ([]byte, bool, error) {
	var small [256]byte
	n, found, err := c.Find(key, small[:])
	if errors.Is(err, ErrRange) {
		buf := make([]byte, n)
		n, found, err = c.Find(key, buf)
		if err == nil {
			return buf[:n], found, nil
		}
	}
	if err != nil || !found {
		return nil, found, err
	}
	return append([]byte(nil), small[:n]...), true, nil
}

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
	if c.mode == ModeOff {
		c.st.inserts.Add(1)
		return nil
	}
	if c.closed.Load() {
		return ErrClosed
	}
	h := xxhash.Sum64(key)
	c.st.inserts.Add(1)
	if toRemote && c.opts.Remote != nil && c.mode != ModeReadOnly {
		c.opts.Remote.Put(c.scope, key, value) // write-behind: never blocks
	}
	c.mu.Lock()
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
	rec := appendPutFrame(nil, c.scopeHash, time.Now().UnixMilli(), key, value)
	lk, err := c.lockForWrite(false)
	if err != nil {
		c.mu.Lock()
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
	c.idx.Load().put(key, value, h, 0, c.gen.Load())
	delete(c.pending, string(key))
	err = c.appendLocked(rec, nil)
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
		return nil, ioErr(err, "lock", c.lk.Path(), "make the cache directory writable")
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
		buf = encodeScopeFrame(buf, c.scopeHash, c.scope) // name the scope before its first put
	}
	now := time.Now().UnixMilli()
	for k, v := range c.pending {
		buf = appendPutFrame(buf, c.scopeHash, now, []byte(k), v)
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
		return ioErr(err, "append to", c.path, "free some disk space")
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

// Load picks up every entry in the file, including those other processes
// wrote since the last look.
func (c *Cache) Load() error {
	if c.mode == ModeOff {
		return nil
	}
	if c.closed.Load() {
		return ErrClosed
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.refresh(false)
}

// Save writes any entries kept in memory and the record of which entries
// were used, compacts if the journal has grown enough, and fsyncs. It returns
// nil only when everything inserted through this handle is on stable
// storage.
func (c *Cache) Save() error {
	if c.mode == ModeOff {
		return nil
	}
	if c.closed.Load() {
		return ErrClosed
	}
	c.mu.Lock()
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
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.syncLocked()
}

// syncLocked fsyncs every file this handle appended to. Caller holds mu.
func (c *Cache) syncLocked() error {
	for len(c.unsynced) > 0 {
		f := c.unsynced[0]
		if err := f.Sync(); err != nil {
			return ioErr(err, "fsync", c.path, "")
		}
		f.Close()
		c.unsynced = c.unsynced[1:]
	}
	if c.dirty && c.f != nil {
		if err := c.f.Sync(); err != nil {
			return ioErr(err, "fsync", c.path, "")
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
	return appendFrame(dst, frameTouch, 0, append(p, hashes...))
}

// Close writes what it can without waiting long (entries kept in memory and
// the use record), then releases the file. It does not fsync: call Save for
// that. Close is idempotent.
func (c *Cache) Close() error {
	if c.closed.Swap(true) || c.mode == ModeOff {
		return nil
	}
	// Wait for a compaction in flight (one that has not published yet drops
	// its work: it sees closed), and keep any other from starting.
	c.compactMu.Lock()
	defer c.compactMu.Unlock()
	if c.opts.Remote != nil {
		defer c.opts.Remote.Close()
	}
	if c.system != nil {
		defer c.system.Close()
	}
	var err error
	c.mu.Lock()
	ro := c.readOnly || c.f == nil
	c.mu.Unlock()
	if !ro {
		if lk, lerr := c.lk.Lock(min(c.opts.LockTimeout, 100*time.Millisecond)); lerr == nil {
			c.mu.Lock()
			err = c.appendLocked(nil, c.touchFrame(nil))
			c.mu.Unlock()
			lk.Unlock()
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pending) > 0 && err == nil {
		err = fmt.Errorf("%w: %d entries were never written to %s", ErrLock, len(c.pending), c.path)
	}
	for _, f := range c.unsynced {
		f.Close()
	}
	c.unsynced = nil
	if c.f != nil {
		c.f.Close()
		c.f = nil
	}
	return err
}

// ioErr wraps an operating-system error with the file, the operation and
// what to do, mapping a full disk to ErrNoSpace.
func ioErr(err error, op, path, advice string) error {
	var base error = ErrIO
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		base, advice = ErrNoSpace, "free some disk space"
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EROFS):
		base = ErrAccess
	}
	msg := fmt.Sprintf("%s %s: %v", op, path, err)
	if advice != "" {
		msg += "; " + advice
	}
	return &detailErr{base, msg}
}

// FindStriped is Find for the C layer, which counts each thread's hits in
// its own counter stripe so that threads never share a counter's cache line.
func FindStriped(c *Cache, key, dst []byte, stripe int) (int, bool, error) {
	return c.find(key, dst, stripe)
}
