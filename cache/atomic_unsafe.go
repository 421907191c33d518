package cache

import (
	"sync/atomic"
	"unsafe"
)

// The used word of an index entry lives inside a byte chunk. Entries start at
// 8-byte aligned offsets of 8-byte aligned chunks, so the word at off+8 is
// aligned for 32-bit atomics. This file is the only use of unsafe in the
// package.

func atomicLoad32(c []byte, off int) uint32 {
	_ = c[off+3]
	return atomic.LoadUint32((*uint32)(unsafe.Pointer(&c[off])))
}

func atomicStore32(c []byte, off int, v uint32) {
	_ = c[off+3]
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&c[off])), v)
}
