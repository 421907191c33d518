package cache

import (
	"runtime"
	"slices"
	"sync/atomic"
	"unsafe"
)

// This file is the index's life outside Go (shared.go): pinning what C
// reads and retiring what a writer replaces; and the layout of entries by
// first use.
//
// # Entries by first use
//
// A load puts the file's entries into the arena in file order (keys sorted
// per scope), marked cold, in chunks of their own: the arena is filled by
// two streams, cold entries and the rest (alloc). The first find of a cold entry moves it: the hit
// path in C does not answer cold entries, so that find enters Go, which
// copies the entry to the end of the arena and points its slot there. The
// arena so fills in the order the process first asks for its keys, which is
// the order it asks them again (a network's layers, every iteration): later
// hits walk memory forward, which the processor prefetches, instead of
// jumping through the file's order. A chunk whose entries have all moved
// (or been replaced) is freed, so once a process has used every entry, it
// holds each once, as before; a chunk that keeps unused entries stays.
// Handles with no Publisher (Go programs, the tools) have no C hit path,
// and their entries never move.

// publish pins the index and builds what C reads; dropped, if set, is told
// of the arena memory freed by moves. Writers only.
func (ix *index) publish(p Publisher, dropped func(int64)) {
	if ix.pub != nil {
		return
	}
	ix.pub, ix.dropped = p, dropped
	ix.sh = &sharedIndex{mult: ix.mult}
	pin(&ix.shPin, ix.sh)
	liveIndexes.Add(1)
	for n := range ix.cs {
		if ix.cs[n] != nil {
			ix.pinChunk(n)
		} else {
			ix.addAddr(0)
		}
	}
	ix.publishTable(ix.tab.Load())
}

func (ix *index) publishTable(t *table) {
	pin(&t.pin, t, &t.slots[0])
	ix.sh.tab.Store(uintptr(unsafe.Pointer(t)))
}

// pinChunk pins chunk n and gives C its address.
func (ix *index) pinChunk(n int) {
	c := ix.cs[n]
	p := new(runtime.Pinner)
	pin(p, &c[0])
	ix.chunkPins[n] = p
	ix.addAddr(uintptr(unsafe.Pointer(&c[0])))
}

// addAddr records a chunk's address for C, moving the array to a larger one
// (and retiring the old) when it is full. The address is stored before any
// slot refers to the chunk, so a reader that loads the array after a slot
// finds it.
func (ix *index) addAddr(a uintptr) {
	if len(ix.addrs) < cap(ix.addrs) {
		ix.addrs = ix.addrs[:len(ix.addrs)+1]
		atomic.StoreUintptr(&ix.addrs[len(ix.addrs)-1], a)
		return
	}
	grown := make([]uintptr, len(ix.addrs)+1, max(16, 2*cap(ix.addrs)))
	copy(grown, ix.addrs)
	grown[len(ix.addrs)] = a
	p := new(runtime.Pinner)
	pin(p, &grown[0])
	old := ix.addrsPin
	ix.addrs, ix.addrsPin = grown, p
	ix.sh.chunks.Store(uintptr(unsafe.Pointer(&grown[0])))
	if old != nil {
		ix.pub.Retire(func() { unpin(old) })
	}
}

// retire hands everything C may read of the index to its Publisher, and
// stops publishing: a writer that still puts into it (write.go's insert
// racing a reload) pins nothing more. Writers only.
func (ix *index) retire() {
	p := ix.pub
	if p == nil {
		return
	}
	ix.pub = nil
	t, addrs, pins := ix.tab.Load(), ix.addrsPin, slices.Clone(ix.chunkPins)
	clear(ix.chunkPins)
	p.Retire(func() {
		unpin(&ix.shPin)
		unpin(&t.pin)
		if addrs != nil {
			unpin(addrs)
		}
		for _, p := range pins {
			if p != nil {
				unpin(p)
			}
		}
		liveIndexes.Add(-1)
	})
}

// release notes that the entry at ref is no longer referenced, and frees
// its chunk once no entry in it is (a stream filling it starts a new one).
func (ix *index) release(ref uint64) {
	n := int(ref >> chunkOffBits)
	if ix.live[n]--; ix.live[n] > 0 {
		return
	}
	for st := range ix.cur {
		if ix.cur[st] == n {
			ix.cur[st], ix.fill[st] = 0, 0
		}
	}
	size := int64(len(ix.cs[n]))
	cs := slices.Clone(ix.cs) // readers may hold the old slice
	cs[n] = nil
	ix.cs = cs
	ix.chunks.Store(&cs)
	ix.arenaBytes -= size
	if ix.cold[n] {
		ix.cold[n] = false
		ix.coldLeft--
	}
	p := ix.chunkPins[n]
	ix.chunkPins[n] = nil
	if ix.pub == nil || p == nil {
		return
	}
	// The collector takes the chunk once C cannot hold it; the memory
	// policy is told in batches, and when the last cold chunk has gone.
	ix.freed += size
	report := int64(0)
	if ix.coldLeft == 0 || ix.freed >= max(4<<20, ix.arenaBytes/4) {
		report, ix.freed = ix.freed, 0
	}
	dropped := ix.dropped
	ix.pub.Retire(func() {
		unpin(p)
		if report > 0 && dropped != nil {
			dropped(report)
		}
	})
}

// promote moves key's entry, if it is cold, to the end of the arena (see
// the top of this file). Writers only.
func (ix *index) promote(key []byte, h uint64) {
	t, i, ref, ok := ix.slot(key, h)
	if !ok {
		return
	}
	c, off := ix.cs[ref>>chunkOffBits], int(ref&(maxChunk-1))
	flags := entryFlags(c, off)
	if flags&entryCold == 0 {
		return
	}
	t.slots[i].Store(h>>refBits<<refBits | ix.alloc(key, entryValue(c, off), flags&^entryCold, atomicLoad32(c, off+8)))
	ix.release(ref)
}
