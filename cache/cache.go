package cache

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/convcache/convcache/internal/format"
	"github.com/convcache/convcache/internal/vfs"
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
	fs        vfs.FS
	lk        *lock.File

	idx    atomic.Pointer[index] // this scope's entries; read without locks
	gen    *atomic.Uint32        // touch generation: entries used since the last touch frame carry it (in sh)
	sh     *sharedHandle         // what the C hit path reads (shared.go)
	shPin  runtime.Pinner        // sh, while a Publisher may hand it out
	closed atomic.Bool
	st     counters

	wsem chan struct{} // one writer of this handle at a time, before the file lock

	mu          sync.Mutex // guards the fields below; never held while waiting for the file lock
	shut        bool       // Close has let go of the file: nothing opens, reads or publishes again (lifecycle.go)
	f           vfs.File   // current data file; nil when none exists yet
	off         int64      // file offset up to which frames have been applied
	snapEnd     int64      // end of the leading snapshot frames: the journal starts here
	snapEntries int64      // entries in the snapshot, all scopes
	journalPuts int64      // put records in the journal, all scopes
	created     time.Time
	compacted   bool              // the file was written by compaction: created is the last one
	scopes      map[uint64]bool   // scope hashes named in the current file
	pending     map[string][]byte // entries kept in memory, not yet in the file
	dirty       bool              // appended since the last fsync
	unsynced    []vfs.File        // replaced files holding appends not yet synced
	readOnly    bool              // never write the file
	roReason    string
	detached    bool // the file at the path may not be used: it is never read again
	fsType      string
	networkFS   bool
	stallUntil  time.Time      // after a lock timeout, inserts try the lock once until then
	buf         []byte         // read scratch
	dec         format.Decoder // decodes frames into the index (load.go)
	budget      format.Budget  // what is left to decode of the current file
	budgetEnd   int64          // the file size budget has been granted for
	lazy        *lazySnapshot  // snapshot chunks not decoded yet (lazy.go); nil once the index holds the whole file
	tailMark    tailMark       // the file as a scan that left a tail saw it
	warnedBroke bool           // a reload failure was reported
	flights     flightGroup

	compactMu   sync.Mutex  // one compaction of this handle at a time
	compactBusy atomic.Bool // a background compaction is running
	compactOff  atomic.Bool // a compaction panicked: this handle compacts no more

	system *Cache    // read-only system tier, or nil
	vlevel int       // verbose log level; 0 = off
	log    *eventLog // verbose log, when vlevel > 0
}

func (c *Cache) warnf(format string, args ...any) {
	fmt.Fprintf(c.opts.Warn, "convcache: "+format+"\n", args...)
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
