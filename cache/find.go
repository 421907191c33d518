package cache

import (
	"bytes"
	"errors"
	"time"
)

// Find copies key's value into dst and returns its length. found is false on
// a miss. If dst is too short, Find copies nothing and returns the length
// needed with ErrRange. A hit reads memory only; a miss first checks the file
// for entries other processes appended. Find never waits for the file lock.
//
// Hits are counted in the calling goroutine's stripe of the counters
// (goroutineStripe). Each C thread that calls in runs on a goroutine, and a
// stack, of its own, so C threads count in stripes of their own too.
func (c *Cache) Find(key, dst []byte) (n int, found bool, err error) {
	return c.find(key, dst, false)
}

// find is Find; build says the caller builds key on a miss, so that the
// remote tier is asked with its build deadline (BuildRemote).
func (c *Cache) find(key, dst []byte, build bool) (n int, found bool, err error) {
	if len(key) == 0 || len(key) > MaxKeySize {
		return 0, false, ErrSize
	}
	if err := c.live(); err != nil {
		return 0, false, err
	}
	h := keyHash(key)
	stripe := goroutineStripe()
	var t0 time.Time
	if c.vlevel > 0 {
		t0 = time.Now()
	}
	if c.mode == ModeRecache { // every find misses: not counted as a hit too
		return c.findSlow(key, dst, h, stripe, t0, build)
	}
	if n, flags, found, err := c.lookup(key, dst, h, stripe); found {
		if c.vlevel > 0 && err == nil {
			c.logEvent(hitEvent(flags), key, time.Since(t0), "")
		}
		return n, found, err
	}
	return c.findSlow(key, dst, h, stripe, t0, build)
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
	n := copy(dst, v)
	c.st.hit(stripe, flags)
	if flags&entryCold != 0 && c.opts.Publish != nil {
		// The C hit path answers it from now on. (Called last: the chunk it
		// leaves may be freed, and nothing here refers to it any more.)
		c.promote(key, h)
	}
	return n, flags, true, nil
}

// findSlow handles a miss in memory: it reads what other processes
// appended, then asks the system tier, then the remote tier (for a build
// when build is set).
func (c *Cache) findSlow(key, dst []byte, h uint64, stripe int, t0 time.Time, build bool) (int, bool, error) {
	if c.mode == ModeOff || c.mode == ModeRecache {
		c.st.misses.Add(1)
		if c.vlevel > 0 {
			c.logEvent("miss", key, time.Since(t0), "")
		}
		return 0, false, nil
	}
	if err := c.lockLive(); err != nil {
		return 0, false, err
	}
	err := c.refresh(false)
	c.loadChunkOf(key) // a handle opened lazily decodes the snapshot chunk that can hold key (lazy.go)
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
		n, found, err = c.remoteGet(key, dst, build)
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
			if c.lockLive() != nil {
				return nil, false // closed: the system tier's handle closes with its user's
			}
			err := c.refresh(false)
			c.mu.Unlock()
			if err != nil {
				c.reportOnce(err)
			}
		}
	}
	return nil, false
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
