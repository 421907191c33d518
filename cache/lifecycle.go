package cache

import (
	"fmt"
	"sync/atomic"
	"time"
)

// A handle's life ends with Close, and any call may race it: a host's
// static destructors close handles at exit while its threads still find.
// The guarantee: a call that races Close either completes as it would have
// before the close, or returns ErrClosed; a call made after Close returns
// ErrClosed (Stats returns the counters as they were). None panics, and
// none opens a file, takes a lock it keeps, or publishes or pins memory
// once Close has let go of the handle's.
//
// Close proceeds in two steps. It first sets closed, which every entry
// point checks before it starts (the fast refusal), and writes what it can.
// Then, holding mu, it sets shut, closes the file and retires what the
// handle published. A call that passed the first check may still be on its
// way to mu: whatever it does under mu after shut must not reopen the file
// (refresh and reopen refuse), decode the snapshot lazily (loadWhole
// refuses) or publish an index (nothing else makes one). Calls that take mu
// to read or open the file go through lockLive, which refuses once shut is
// set; those that only put into the index in memory need not, since the
// retired index publishes nothing more.

// testHookLockLive, when a test sets it, runs in lockLive after the fast
// check and before mu is taken: a test holds a call there while Close runs
// to the end, which is the race this file closes.
var testHookLockLive atomic.Pointer[func(*Cache)]

// live is the fast refusal: ErrClosed once Close has begun.
func (c *Cache) live() error {
	if c.closed.Load() {
		return ErrClosed
	}
	return nil
}

// lockLive takes mu for a call that may read, open or replace the file. It
// returns ErrClosed, holding nothing, once Close has begun (the fast check)
// or has let go of the file (shut, checked under mu).
func (c *Cache) lockLive() error {
	if err := c.live(); err != nil {
		return err
	}
	if hook := testHookLockLive.Load(); hook != nil {
		(*hook)(c)
	}
	c.mu.Lock()
	if c.shut {
		c.mu.Unlock()
		return ErrClosed
	}
	return nil
}

// Close writes what it can without waiting long (entries kept in memory and
// the use record), then releases the file. It does not fsync: call Save for
// that. Close is idempotent; calls racing it complete as before the close
// or return ErrClosed (see above).
func (c *Cache) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	c.sh.flags.Store(0) // no more hits outside Go
	var err error
	if c.mode != ModeOff {
		// Wait for a compaction in flight (one that has not published yet
		// drops its work: it sees closed), and keep any other from
		// starting.
		c.compactMu.Lock()
		defer c.compactMu.Unlock()
		err = c.writeUseRecord()
	}
	c.mu.Lock()
	if len(c.pending) > 0 && err == nil {
		err = fmt.Errorf("%w: %d entries were never written to %s", ErrLock, len(c.pending), c.path)
	}
	c.shut = true
	for _, f := range c.unsynced {
		f.Close()
	}
	c.unsynced = nil
	if c.f != nil {
		c.f.Close()
		c.f = nil
	}
	c.lazy = nil
	c.unpublish()
	c.mu.Unlock()
	if c.opts.Remote != nil {
		c.opts.Remote.Close()
	}
	if c.system != nil {
		c.system.Close()
	}
	return err
}

// writeUseRecord appends the entries kept in memory and the use record, if
// the file lock comes within 100 ms. Close calls it.
func (c *Cache) writeUseRecord() error {
	c.mu.Lock()
	ro := c.readOnly || c.f == nil
	c.mu.Unlock()
	if ro {
		return nil
	}
	lk, err := c.lk.Lock(min(c.opts.LockTimeout, 100*time.Millisecond))
	if err != nil {
		return nil // the entries kept in memory are reported by Close
	}
	defer lk.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.appendLocked(nil, c.touchFrame(nil))
}
