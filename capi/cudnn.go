package main

/*
#include "capi_internal.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/convcache/convcache/cache"
	"github.com/convcache/convcache/cudnn"
)

// ccgo_cudnn_scope backs convcache_cudnn_scope (capi_cudnn.c), which has
// checked the fork state, buf and device already.
//
//export ccgo_cudnn_scope
func ccgo_cudnn_scope(device C.int, buf *C.char, bufCap C.size_t) (rc C.int) {
	defer guard(&rc)
	s, err := cudnn.Scope(int(device))
	if err != nil {
		setError(err.Error())
		switch {
		case errors.Is(err, cache.ErrInvalid):
			return C.CONVCACHE_E_INVALID
		case errors.Is(err, cache.ErrSize):
			return C.CONVCACHE_E_SIZE
		}
		return C.CONVCACHE_E_UNAVAILABLE
	}
	if uint64(len(s)) >= uint64(bufCap) {
		setError(fmt.Sprintf("convcache: convcache_cudnn_scope: the scope is %d bytes; cap must be at least %d", len(s), len(s)+1))
		return C.CONVCACHE_E_RANGE
	}
	dst := unsafe.Slice((*byte)(unsafe.Pointer(buf)), len(s)+1)
	copy(dst, s)
	dst[len(s)] = 0
	return C.int(len(s))
}
