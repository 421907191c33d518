package main

/*
#include <stdlib.h>
#include "hit.h"
*/
import "C"

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/convcache/convcache/cache"
)

// publisher is the C library's cache.Publisher: handles publish their index
// to the C hit path (hit.c), and what a writer replaces is freed once no C
// reader can hold it, by hit.c's epochs.
type publisher struct {
	mu      sync.Mutex
	retired []retiredMem
	waiting atomic.Int64 // len(retired), read without mu
}

type retiredMem struct {
	epoch uint64
	free  func()
}

var published publisher

// Retire tags free with a new epoch and frees whatever is safe by now.
func (p *publisher) Retire(free func()) {
	e := uint64(C.ccx_retire_epoch())
	p.mu.Lock()
	p.retired = append(p.retired, retiredMem{e, free})
	p.waiting.Store(int64(len(p.retired)))
	p.mu.Unlock()
	p.reclaim()
}

// reclaim frees what no C reader can hold any more. It costs one
// membarrier(2) when something is waiting, nothing otherwise; the library
// calls it on its slow paths (insert, load, save, close), so memory a reader
// held at the time of a Retire is freed by a later call.
func (p *publisher) reclaim() {
	if p.waiting.Load() == 0 {
		return
	}
	p.mu.Lock()
	safe := uint64(C.ccx_safe_epoch())
	var free []func()
	keep := p.retired[:0]
	for _, r := range p.retired {
		if r.epoch <= safe {
			free = append(free, r.free)
		} else {
			keep = append(keep, r)
		}
	}
	clear(p.retired[len(keep):])
	p.retired = keep
	p.waiting.Store(int64(len(keep)))
	p.mu.Unlock()
	for _, f := range free {
		f()
	}
}

// membarrierOnce registers the writer's barrier (hit.c) once per process.
// It takes a kernel grace period (8 ms here), so the first open starts it on
// a goroutine rather than paying it; until it is done nothing retired is
// freed, and a later reclaim frees it.
var (
	membarrierOnce    sync.Once
	membarrierStarted atomic.Bool
)

func registerMembarrier() { membarrierOnce.Do(func() { C.ccx_register_membarrier() }) }

// publishHandle makes a handle's hits answerable in C under its token.
func publishHandle(c *cache.Cache, tok uintptr) {
	if membarrierStarted.CompareAndSwap(false, true) {
		go registerMembarrier()
	}
	if sh := c.Shared(uint64(tok)); sh != nil {
		C.ccx_handle_set(C.uintptr_t(tok), sh) // without memory for it, hits go through Go
	}
}

// unpublishHandle stops C hits under tok, if its slot still holds tok's
// handle (an open may have taken the slot since the token left the handle
// table); the handle's memory is retired by its Close.
func unpublishHandle(tok uintptr) {
	C.ccx_handle_clear(C.uintptr_t(tok))
}

// sharedLayout returns hit.c's view of the shared structures (for tests).
func sharedLayout(name string) uintptr {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	return uintptr(C.ccx_layout(cs))
}

// keyHash is hit.c's key hash (for tests: it must be the Go side's).
func keyHash(b []byte) uint64 {
	if len(b) == 0 {
		return uint64(C.ccx_hash(nil, 0))
	}
	return uint64(C.ccx_hash(unsafe.Pointer(&b[0]), C.size_t(len(b))))
}

// testEnter and testExit hold the calling thread inside a C reader's
// critical section (for tests; lock the goroutine to its thread).
func testEnter() { C.ccx_test_enter() }
func testExit()  { C.ccx_test_exit() }
