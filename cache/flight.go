package cache

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"
)

// BuildFunc produces the value for a missing key. It writes the value into
// dst and returns its length. If dst is too small it returns the length
// needed with ErrRange (GetOrCreate then fails with ErrRange too). Any other
// error fails the build: nothing is stored and the error is returned to the
// caller.
type BuildFunc func(dst []byte) (int, error)

// flight is one build in progress within this process.
type flight struct {
	done  chan struct{}
	value []byte
	err   error
}

type flightGroup struct {
	mu sync.Mutex
	m  map[string]*flight
}

// join returns the flight for key, and whether the caller leads it.
func (g *flightGroup) join(key []byte) (*flight, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if f, ok := g.m[string(key)]; ok {
		return f, false
	}
	if g.m == nil {
		g.m = map[string]*flight{}
	}
	f := &flight{done: make(chan struct{})}
	g.m[string(key)] = f
	return f, true
}

// busy reports whether a build is in progress.
func (g *flightGroup) busy() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.m) > 0
}

func (g *flightGroup) finish(key []byte, f *flight, value []byte, err error) {
	g.mu.Lock()
	delete(g.m, string(key))
	g.mu.Unlock()
	f.value, f.err = value, err
	close(f.done)
}

// GetOrCreate returns key's value, running build to produce it on a miss,
// and reports whether this call ran the builder.
//
// Builds are single-flight. Within a process, concurrent callers for one key
// wait for one builder and share its value. Across processes, the builder
// holds a per-key lock on the sidecar lock file; callers in other processes
// wait for it and then read the value from the cache file. A builder process
// that dies releases the lock at once. No caller waits longer than the build
// timeout: after it, a waiter builds the value itself.
//
// A build that fails stores nothing; its error is returned to the caller
// whose builder failed, and a waiting caller tries again with its own
// builder. In ModeStrict a miss returns ErrMiss without building; in ModeOff
// every call builds.
func (c *Cache) GetOrCreate(key, dst []byte, build BuildFunc) (n int, built bool, err error) {
	if len(key) == 0 || len(key) > MaxKeySize {
		return 0, false, ErrSize
	}
	if build == nil {
		return 0, false, fmt.Errorf("%w: nil builder", ErrInvalid)
	}
	if err := c.live(); err != nil {
		return 0, false, err
	}
	if c.mode == ModeOff {
		n, err := c.runBuild(build, dst)
		return n, err == nil, err
	}
	if n, found, err := c.find(key, dst, true); found || err != nil {
		return n, false, err
	}
	deadline := time.Now().Add(c.opts.BuildTimeout)
	for {
		f, leader := c.flights.join(key)
		if leader {
			n, built, err := c.lead(key, dst, build, deadline)
			var v []byte
			if err == nil {
				v = append([]byte(nil), dst[:n]...)
			}
			c.flights.finish(key, f, v, err)
			return n, built, err
		}
		t := time.NewTimer(time.Until(deadline))
		select {
		case <-f.done:
			t.Stop()
		case <-t.C:
			// The leader is too slow: build without waiting any longer.
			return c.buildAndInsert(key, dst, build)
		}
		if f.err == nil {
			if len(f.value) > len(dst) {
				return len(f.value), false, ErrRange
			}
			return copy(dst, f.value), false, nil
		}
		// The leader failed: look again, then try with our own builder.
		if n, found, err := c.recheck(key, dst); found || err != nil {
			return n, false, err
		}
	}
}

// lead builds key for this process, holding the key's cross-process lock
// while it does, unless another process finishes first.
func (c *Cache) lead(key, dst []byte, build BuildFunc, deadline time.Time) (int, bool, error) {
	c.mu.Lock()
	ro := c.readOnly
	c.mu.Unlock()
	if ro || c.mode == ModeRecache {
		// Read-only handles cannot publish a result, and recache must measure
		// again: no point in waiting for another process.
		return c.buildAndInsert(key, dst, build)
	}
	h := xxhash.Sum64(key) ^ c.scopeHash*0x9E3779B97F4A7C15
	backoff := 500 * time.Microsecond
	for {
		lk, err := c.lk.TryLockKey(h)
		if err != nil {
			return c.buildAndInsert(key, dst, build) // no lock file: build alone
		}
		if lk != nil {
			defer lk.Unlock()
			// The previous holder may have just published it.
			if n, found, err := c.recheck(key, dst); found || err != nil {
				return n, false, err
			}
			return c.leadCluster(key, dst, build, deadline)
		}
		// Another process is building it. Its insert lands in the file;
		// a miss re-reads the file's new tail.
		if n, found, err := c.recheck(key, dst); found || err != nil {
			return n, false, err
		}
		if !time.Now().Before(deadline) {
			return c.buildAndInsert(key, dst, build)
		}
		time.Sleep(min(backoff, time.Until(deadline)))
		backoff = min(2*backoff, 5*time.Millisecond)
	}
}

func (c *Cache) runBuild(build BuildFunc, dst []byte) (n int, err error) {
	c.st.builds.Add(1)
	if c.vlevel > 0 {
		t0 := time.Now()
		defer func() {
			detail := ""
			if err != nil {
				detail = logDetail(err)
			}
			c.logEvent("build", nil, time.Since(t0), detail)
		}()
	}
	n, err = build(dst)
	if err == nil && (n < 0 || n > len(dst)) {
		err = fmt.Errorf("%w: builder returned length %d for a %d-byte buffer", ErrInvalid, n, len(dst))
	}
	return n, err
}

// buildAndInsert runs the builder and stores its value. A value that could
// only be kept in memory (lock timeout, read-only, full disk) is still
// returned: the caller has its result.
func (c *Cache) buildAndInsert(key, dst []byte, build BuildFunc) (int, bool, error) {
	n, err := c.runBuild(build, dst)
	if err != nil {
		return n, true, err
	}
	if err := c.Insert(key, dst[:n]); err != nil &&
		!errors.Is(err, ErrPending) && !errors.Is(err, ErrReadOnly) && !errors.Is(err, ErrNoSpace) && !errors.Is(err, ErrIO) {
		return 0, true, err
	}
	return n, true, nil
}

// leadCluster builds key as this machine's builder. With a remote tier it
// first takes the cluster-wide lock, so one node measures a new key while
// the others wait (bounded) for its result. Its calls to the tier are a
// build's (BuildRemote): they may wait longer than a plain lookup.
func (c *Cache) leadCluster(key, dst []byte, build BuildFunc, deadline time.Time) (int, bool, error) {
	r := c.opts.Remote
	if r == nil {
		return c.buildAndInsert(key, dst, build)
	}
	// The caller's Find has just asked the remote tier: take the lock first,
	// and look again only once holding it or after waiting.
	backoff := 2 * time.Millisecond
	for {
		if unlock, ok := c.remoteLock(key); ok {
			defer unlock()
			// Another node may have published it since our last look.
			if n, found, err := c.remoteGet(key, dst, true); found {
				return n, false, err
			}
			return c.buildAndInsert(key, dst, build)
		}
		if !time.Now().Before(deadline) {
			return c.buildAndInsert(key, dst, build)
		}
		time.Sleep(min(backoff, time.Until(deadline)))
		backoff = min(2*backoff, 50*time.Millisecond)
		if n, found, err := c.remoteGet(key, dst, true); found {
			return n, false, err
		}
	}
}

// recheck looks for key in memory, then in what other processes appended,
// without counting a miss: waiting callers poll with it.
func (c *Cache) recheck(key, dst []byte) (int, bool, error) {
	h := keyHash(key)
	if n, _, found, err := c.lookup(key, dst, h, -1); found {
		return n, found, err
	}
	if err := c.lockLive(); err != nil {
		return 0, false, err
	}
	err := c.refresh(false)
	c.mu.Unlock()
	if err != nil {
		c.reportOnce(err)
	}
	if n, _, found, err := c.lookup(key, dst, h, -1); found {
		return n, found, err
	}
	return c.systemGet(key, dst, h, -1)
}
