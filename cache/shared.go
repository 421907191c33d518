package cache

import (
	"sync/atomic"
	"unsafe"
)

// This file is the part of a handle that readers outside Go read: the C
// library's hit path (capi/hit.c) answers a hit from it without entering Go.
//
// What it reads is plain memory at fixed offsets, on the Go heap, pinned
// (runtime.Pinner) while it may be read from C:
//
//	handle  (sharedHandle): | idx *sharedIndex | token u64 | gen u32 | flags u32 | pad to 128 |
//	                        | 64 hit stripes of 128 bytes: | mem u64 | file u64 | sys u64 | pad |
//	index   (sharedIndex):  | mult u64 | tab *table | chunks *[]chunk address |
//	table   (table):        | slots *u64 | mask u64 | shift u64 | ...Go's fields |
//
// The slots and entries are the index's own (index.go): C reads them exactly
// as index.lookup does, with the same ordering. Every pointer above is
// swapped with one atomic store after what it points to is complete; what it
// replaces is given to the Publisher, which frees it (unpins it, and Go's
// collector does the rest) once no C reader can hold it. The C layout is
// declared in capi/hit.h; capi's tests check that the offsets agree.

// A Publisher reclaims memory that readers outside Go may still read: Retire
// calls free once every such reader that could have seen the memory before
// Retire was called has finished (capi's epochs). free may run before Retire
// returns, or later on another goroutine.
type Publisher interface {
	Retire(free func())
}

// Flags of a sharedHandle.
const (
	// sharedHits: hits may be answered outside Go. Clear in ModeRecache
	// (every find misses), with a verbose log (every hit is logged), and
	// once the handle is closed.
	sharedHits = 1
)

type sharedHandle struct {
	idx   atomic.Uintptr // *sharedIndex of the current index; 0 until published
	token atomic.Uint64  // the publisher's name for the handle (capi: its C token)
	gen   atomic.Uint32  // touch generation (Cache.gen)
	flags atomic.Uint32
	_     [104]byte
	hits  [stripes]hitStripe // counted outside Go; Stats adds them
}

type sharedIndex struct {
	mult   uint64
	tab    atomic.Uintptr // *table
	chunks atomic.Uintptr // &addrs[0]: each chunk's address, by chunk number
}

// Shared names the handle's shared part token, the Publisher's name for
// it, and returns its address (nil without a Publisher). The address stays
// valid until Close has retired it.
func (c *Cache) Shared(token uint64) unsafe.Pointer {
	if c.opts.Publish == nil {
		return nil
	}
	c.sh.token.Store(token)
	return unsafe.Pointer(c.sh)
}

// newShared allocates the handle's shared part and pins it if a Publisher
// will hand it out.
func (c *Cache) newShared() {
	c.sh = new(sharedHandle)
	c.gen = &c.sh.gen
	if c.opts.Publish != nil {
		pin(&c.shPin, c.sh)
		if c.mode != ModeRecache && c.vlevel == 0 {
			c.sh.flags.Store(sharedHits)
		}
	}
}

// setIndex makes ix the handle's index, for Go readers and outside ones,
// and retires the index it replaces. Caller holds mu (or is opening).
func (c *Cache) setIndex(ix *index) {
	old := c.idx.Swap(ix)
	if c.opts.Publish == nil {
		return
	}
	var dropped func(int64)
	if c.opts.Memory != nil {
		dropped = c.opts.Memory.Dropped
	}
	ix.publish(c.opts.Publish, dropped)
	c.sh.idx.Store(uintptr(unsafe.Pointer(ix.sh)))
	if old != nil && old != ix {
		old.retire()
	}
}

// unpublish stops outside reads of the handle and retires what they read.
// Close calls it last.
func (c *Cache) unpublish() {
	c.sh.flags.Store(0)
	p := c.opts.Publish
	if p == nil {
		return
	}
	ix := c.idx.Load()
	c.sh.idx.Store(0)
	if ix != nil {
		ix.retire()
	}
	p.Retire(func() { unpin(&c.shPin) })
}

// promote moves key's entry to the end of the arena if it is cold
// (index_shared.go), so that the C hit path answers it from now on.
func (c *Cache) promote(key []byte, h uint64) {
	c.mu.Lock()
	c.idx.Load().promote(key, h)
	c.mu.Unlock()
}

// sharedHits sums the hits counted outside Go.
func (c *Cache) sharedHits() (mem, file, sys uint64) {
	for i := range c.sh.hits {
		mem += c.sh.hits[i].mem.Load()
		file += c.sh.hits[i].file.Load()
		sys += c.sh.hits[i].sys.Load()
	}
	return mem, file, sys
}

// SharedLayout gives the offsets of the shared structures, so capi's tests
// can check them against the C declarations.
func SharedLayout() map[string]uintptr {
	var h sharedHandle
	var x sharedIndex
	var t table
	var s hitStripe
	return map[string]uintptr{
		"handle.idx": unsafe.Offsetof(h.idx), "handle.token": unsafe.Offsetof(h.token),
		"handle.gen": unsafe.Offsetof(h.gen), "handle.flags": unsafe.Offsetof(h.flags),
		"handle.hits": unsafe.Offsetof(h.hits), "stripe.size": unsafe.Sizeof(s),
		"stripe.mem": unsafe.Offsetof(s.mem), "stripe.file": unsafe.Offsetof(s.file),
		"stripe.sys": unsafe.Offsetof(s.sys),
		"index.mult": unsafe.Offsetof(x.mult), "index.tab": unsafe.Offsetof(x.tab),
		"index.chunks": unsafe.Offsetof(x.chunks),
		"table.base":   unsafe.Offsetof(t.base), "table.mask": unsafe.Offsetof(t.mask),
		"table.shift":  unsafe.Offsetof(t.shift),
		"entry.header": entryHeader, "ref.bits": refBits, "chunk.offbits": chunkOffBits,
		"flags.hits": sharedHits, "entry.system": entryFromSystem, "entry.file": entryFromFile,
		"entry.cold": entryCold,
	}
}
