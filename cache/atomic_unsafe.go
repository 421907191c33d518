package cache

import (
	"sync/atomic"
	"unsafe"
)

// This file holds the index's uses of unsafe: atomic access to words inside
// byte chunks, and the stack address that picks a goroutine's counter
// stripe. (hugepage_linux.go takes an arena's address for madvise.)
//
// The used word of an index entry lives inside a byte chunk. Entries start
// at 8-byte aligned offsets of 8-byte aligned chunks, so the word at off+8 is
// aligned for 32-bit atomics.

// The bounds are checked by slicing, which reads nothing: `_ = c[off+3]`
// is a plain read of that byte to the race detector, racing with the atomic
// stores to the same word.

func atomicLoad32(c []byte, off int) uint32 {
	w := c[off : off+4 : off+4]
	return atomic.LoadUint32((*uint32)(unsafe.Pointer(&w[0])))
}

func atomicStore32(c []byte, off int, v uint32) {
	w := c[off : off+4 : off+4]
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&w[0])), v)
}

// goroutineStripe picks a hit-counter stripe for a Go caller. Go exposes no
// goroutine or processor id, but every goroutine runs on its own stack, so
// the address of a local variable tells concurrent goroutines apart: each
// then counts in its own cache line. A C thread that calls in runs on a
// goroutine of its own, so the same holds for C threads. (A stack that
// moves only changes the stripe.)
func goroutineStripe() int {
	var here byte
	return int(uintptr(unsafe.Pointer(&here)) >> 13)
}
