package cache

import "time"

// Remote is a tier that many machines share behind the local file, such as
// Redis (package remote). The engine asks it on a local miss, writes to it
// after a local insert, and uses its lock so that one node of a cluster
// builds a new key.
//
// Implementations must be safe for concurrent use, must fail open (an
// unreachable or slow server is a miss, a dropped write, a granted lock),
// and must never make a call wait longer than their own deadline.
type Remote interface {
	// Get returns the value stored for (scope, key), or false. A value that
	// fails its checks is a miss, never returned.
	Get(scope string, key []byte) ([]byte, bool)
	// Put queues (scope, key, value) for a background write. It never blocks.
	Put(scope string, key, value []byte)
	// TryLock takes the cluster-wide build lock of (scope, key). It returns
	// false while another node holds it. When the server cannot be reached
	// it grants the lock: building locally is the safe fallback.
	TryLock(scope string, key []byte) (unlock func(), ok bool)
	// Flush waits, within the implementation's deadline, until the queued
	// writes are sent.
	Flush() error
	// Close flushes briefly and releases the connection.
	Close() error
	// Stats returns the tier's counters.
	Stats() RemoteStats
	// Authenticated reports whether every hit is authenticated, such as by
	// a MAC under a key that only the cluster's jobs hold. The engine writes
	// authenticated hits to the local file; it keeps other hits in this
	// handle's memory only, so that whoever can write to the shared tier
	// cannot make a value permanent in every node's file.
	Authenticated() bool
}

// BuildRemote is a Remote whose calls for a key about to be built may wait
// longer than its plain ones: a miss there starts a benchmark that costs
// far more than the wait. GetOrCreate uses these, when the tier has them,
// for its remote lookup, the build lock and the lookups of a caller waiting
// for another node's build. They must fail open as the plain calls do, and
// never wait longer than their own (longer) deadline.
type BuildRemote interface {
	Remote
	// GetBuild is Get, for a key the caller builds on a miss.
	GetBuild(scope string, key []byte) ([]byte, bool)
	// TryLockBuild is TryLock, for the caller about to build.
	TryLockBuild(scope string, key []byte) (unlock func(), ok bool)
	// BuildTimeout is the build calls' deadline.
	BuildTimeout() time.Duration
	// FlushUntil waits until the writes queued before the call are sent,
	// or deadline passes, or the server is found unreachable.
	FlushUntil(deadline time.Time)
}

// RemoteStats are a Remote's counters.
type RemoteStats struct {
	Hits     uint64 // lookups that returned a value
	Misses   uint64 // lookups that found nothing
	Errors   uint64 // calls that failed or timed out
	Rejected uint64 // values ignored: bad checksum, key, scope or MAC
	Writes   uint64 // entries written
	Dropped  uint64 // queued writes dropped (queue full, server down)
}

// AtExit is for the process's exit: with a remote tier that has build
// calls, it waits until the builds this handle leads finish and the tier
// has sent what they queued (the values and lock releases other nodes may
// be waiting for), at most the tier's build deadline in all. A build the
// host leads on another thread (the interposer's backend-API lease) may
// still be storing its value when the host's main thread exits.
func (c *Cache) AtExit() {
	br, ok := c.opts.Remote.(BuildRemote)
	if !ok {
		return
	}
	deadline := time.Now().Add(br.BuildTimeout())
	for c.flights.busy() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	br.FlushUntil(deadline)
}

// Index flags of entries that this handle holds but its file does not (see
// index.go for the others).
const (
	entryFromRemote = 4 // an unauthenticated remote hit, kept in memory only
	entryNotInFile  = entryFromSystem | entryFromRemote
)

// remoteGet asks the remote tier after a local miss and copies a hit to
// dst; build says the caller builds key on a miss (BuildRemote). An
// authenticated hit is stored in the local file (without writing it back to
// the remote); any other is kept in memory only, for this handle.
func (c *Cache) remoteGet(key, dst []byte, build bool) (int, bool, error) {
	if c.opts.Remote == nil || c.mode == ModeRecache {
		return 0, false, nil
	}
	var v []byte
	var ok bool
	if br, isBuild := c.opts.Remote.(BuildRemote); build && isBuild {
		v, ok = br.GetBuild(c.scope, key)
	} else {
		v, ok = c.opts.Remote.Get(c.scope, key)
	}
	if !ok || len(v) > MaxValueSize {
		return 0, false, nil
	}
	if c.opts.Remote.Authenticated() {
		c.insert(key, v, false)
	} else if !c.closed.Load() {
		c.mu.Lock()
		c.idx.Load().put(key, v, keyHash(key), entryFromRemote, c.gen.Load())
		c.mu.Unlock()
	}
	if len(v) > len(dst) {
		return len(v), true, ErrRange
	}
	return copy(dst, v), true, nil
}

// remoteLock takes the cluster build lock of key for a caller about to
// build it (BuildRemote's when the tier has it).
func (c *Cache) remoteLock(key []byte) (unlock func(), ok bool) {
	if br, isBuild := c.opts.Remote.(BuildRemote); isBuild {
		return br.TryLockBuild(c.scope, key)
	}
	return c.opts.Remote.TryLock(c.scope, key)
}
