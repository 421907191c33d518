package cache

import (
	"sync/atomic"
	"time"

	"github.com/convcache/convcache/internal/format"
)

// Stats is a snapshot of a handle's counters and state.
type Stats struct {
	Hits       uint64 // finds answered from memory (HitsMemory + HitsFile)
	HitsMemory uint64 // hits on entries inserted through this handle
	HitsFile   uint64 // hits on entries read from the file (persistent hits)
	HitsSystem uint64 // hits served by the read-only system tier
	Misses     uint64
	Inserts    uint64
	Pending    int // entries kept in memory, not yet written

	Entries   int   // entries of this scope in memory
	MemBytes  int64 // memory held by the index
	FileBytes int64 // size of the file as last seen
	Journal   int64 // bytes appended since the last compaction
	Snapshot  int64 // bytes of the compacted snapshot (after the header)

	LockWaits    uint64        // file-lock acquisitions that had to wait
	LockWaitTime time.Duration // total time spent waiting
	Compactions  uint64        // compactions run by this handle
	Evictions    uint64        // entries this handle's compactions evicted
	Builds       uint64        // builder calls run by GetOrCreate
	DamagedBytes uint64        // bytes of damaged records skipped

	Remote RemoteStats // the remote tier's counters, if there is one

	LastCompaction time.Time // when the current file was last compacted; zero if never
	ReadOnly       bool
	ReadOnlyReason string
	FSType         string
	NetworkFS      bool
}

// stripes spreads hit counters over cache lines so threads that hit at the
// same time do not contend. The C layer gives each thread its own stripe.
const stripes = 64

type hitStripe struct {
	mem, file, sys atomic.Uint64
	_              [104]byte // keep stripes on separate 128-byte line pairs
}

type counters struct {
	hits        [stripes]hitStripe
	misses      atomic.Uint64
	inserts     atomic.Uint64
	lockWaits   atomic.Uint64
	lockWaitNs  atomic.Uint64
	compactions atomic.Uint64
	evictions   atomic.Uint64
	builds      atomic.Uint64
	damaged     atomic.Uint64
}

func (s *counters) hit(stripe int, flags uint32) {
	st := &s.hits[stripe&(stripes-1)]
	switch {
	case flags&entryFromSystem != 0:
		st.sys.Add(1)
	case flags&entryFromFile != 0:
		st.file.Add(1)
	default:
		st.mem.Add(1)
	}
}

func (s *counters) lockWait(d time.Duration) {
	s.lockWaits.Add(1)
	s.lockWaitNs.Add(uint64(d))
}

// Stats returns the handle's counters and state.
func (c *Cache) Stats() Stats {
	c.loadRest() // Entries and MemBytes count the whole file (lazy.go)
	var st Stats
	for i := range c.st.hits {
		st.HitsMemory += c.st.hits[i].mem.Load()
		st.HitsFile += c.st.hits[i].file.Load()
		st.HitsSystem += c.st.hits[i].sys.Load()
	}
	mem, file, sys := c.sharedHits()
	st.HitsMemory += mem
	st.HitsFile += file
	st.HitsSystem += sys
	st.Hits = st.HitsMemory + st.HitsFile + st.HitsSystem
	st.Misses = c.st.misses.Load()
	st.Inserts = c.st.inserts.Load()
	st.LockWaits = c.st.lockWaits.Load()
	st.LockWaitTime = time.Duration(c.st.lockWaitNs.Load())
	st.Compactions = c.st.compactions.Load()
	st.Evictions = c.st.evictions.Load()
	st.Builds = c.st.builds.Load()
	st.DamagedBytes = c.st.damaged.Load()
	if c.opts.Remote != nil {
		st.Remote = c.opts.Remote.Stats()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ix := c.idx.Load()
	st.Entries = ix.n
	st.MemBytes = ix.memBytes()
	st.Pending = len(c.pending)
	st.FileBytes = c.off
	if c.f != nil {
		st.Snapshot = c.snapEnd - format.HeaderSize // as File.SnapshotBytes counts it
		st.Journal = c.off - c.snapEnd
	}
	if c.compacted {
		st.LastCompaction = c.created
	}
	st.ReadOnly, st.ReadOnlyReason = c.readOnly, c.roReason
	st.FSType, st.NetworkFS = c.fsType, c.networkFS
	return st
}
