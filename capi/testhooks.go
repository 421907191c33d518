//go:build convcache_testhooks

package main

/*
#include <stdint.h>
*/
import "C"

import "github.com/convcache/convcache/cache"

// The test build's one export (mk/core.mk builds it with the tag
// convcache_testhooks; the installed library never has it):
// tests/test_lifecycle.c asks it, once every handle is closed, whether
// anything is still pinned or published.

// convcache_test_live reclaims what it can (after registering the barrier,
// so that retired memory can be freed) and reports the Pinners that still
// hold pins, the indexes still published and the retirements not yet freed.
//
//export convcache_test_live
func convcache_test_live(pinners, indexes, waiting *C.int64_t) {
	registerMembarrier()
	published.reclaim()
	p, x := cache.Pinned()
	*pinners, *indexes = C.int64_t(p), C.int64_t(x)
	*waiting = C.int64_t(published.waiting.Load())
}
