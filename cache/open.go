package cache

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/convcache/convcache/internal/errs"
	"github.com/convcache/convcache/internal/format"
	"github.com/convcache/convcache/internal/safefile"
	"github.com/convcache/convcache/internal/vfs"
	"github.com/convcache/convcache/lock"
)

// Open opens the cache file at path, creating it and its directory (mode
// 0700) if missing. An empty path means DefaultPath. A nil o means the zero
// Options.
//
// Open reads the header, the snapshot index and the journal of a compacted
// file; the snapshot's chunks are decoded when a find first needs them, so
// that the first answer costs about the same whatever the file's size. A
// file without an index (written by an older version, or never compacted)
// is read whole. A damaged record is skipped; a file that is not a
// convcache file (ErrFormat) or whose header is damaged (ErrCorrupt) is
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
		c.fs = vfs.OS{}
	}
	if opts.Verbose > 0 {
		c.vlevel = opts.Verbose
		w := opts.Log
		if w == nil {
			w = os.Stderr
		}
		c.log = &eventLog{w: w}
	}
	c.newShared()
	c.gen.Store(1)
	c.setIndex(newIndex(0))
	if c.mode == ModeOff {
		return c, nil
	}
	if err := c.openPath(path); err != nil {
		c.unpublish()
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
			sys.loadRest() // the system tier answers from memory only (value)
			c.system = sys
		}
	}
	return c, nil
}

// warnedFS remembers the files whose file system was already warned about,
// so a process that opens several handles on one file warns once.
var warnedFS sync.Map

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
	path, refused, err := vfs.Resolve(path)
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
			return errs.IO(err, "create the cache directory", filepath.Dir(path), "set CONVCACHE_PATH to a writable location")
		}
	}
	c.fsType, c.networkFS = vfs.TypeOf(c.fs, filepath.Dir(path))
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
			return errs.IO(lerr, "create the lock file", c.lk.Path(), "make the directory writable or set CONVCACHE_PATH")
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
	lazy, err := c.openLazy(f)
	if err == nil && !lazy {
		err = c.adopt(f, false)
	}
	if err != nil {
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
func (c *Cache) openData() (vfs.File, error) {
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
			return nil, errs.IO(err, "open", c.path, "check the path")
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
	return nil, errs.IO(err, "open", c.path, "check the path and its permissions")
}

// openChecked opens the data file without following a link at the path,
// and checks the file it opened (never the path again) against the trust
// rules. Compaction's reads and every re-open go through it.
func (c *Cache) openChecked(flag int) (vfs.File, error) {
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
	tmp, err := vfs.WriteTemp(c.fs, c.path, format.EncodeHeader(time.Now(), 0), attrs)
	if err != nil {
		return err
	}
	defer c.fs.Remove(tmp)
	// link fails if the file appeared meanwhile (a writer that does not
	// take the lock): use theirs, never replace it.
	if err := c.fs.Link(tmp, c.path); err != nil && !errors.Is(err, fs.ErrExist) {
		return errs.IO(err, "create", c.path, "make the directory writable or set CONVCACHE_PATH")
	}
	if err := vfs.SyncDir(c.fs, filepath.Dir(c.path)); err != nil {
		return errs.IO(err, "sync directory of", c.path, "")
	}
	return nil
}
