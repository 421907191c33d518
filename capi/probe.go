package main

/*
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "capi_internal.h"
#include "hit.h"

// A thread that reads with ccx_peek, then exits with a pthread key of its
// own whose destructor peeks again: the library's key is older, so its
// destructor, which gives the thread's reader record back, runs first.
struct probe_exit {
	uintptr_t tok;
	const void *key;
	size_t klen;
	int first, last, state;
};

static pthread_key_t probe_key;
static pthread_once_t probe_once = PTHREAD_ONCE_INIT;

static void probe_dtor(void *p) {
	struct probe_exit *a = p;
	char buf[256];
	size_t n = 0;
	a->last = ccx_peek(a->tok, a->key, a->klen, buf, sizeof buf, &n, 0);
	a->state = ccx_test_reader_state();
}

static void probe_key_init(void) {
	if (pthread_key_create(&probe_key, probe_dtor) != 0) abort();
}

static void *probe_thread(void *p) {
	struct probe_exit *a = p;
	char buf[256];
	size_t n = 0;
	a->first = ccx_peek(a->tok, a->key, a->klen, buf, sizeof buf, &n, 0);
	pthread_setspecific(probe_key, a);
	return NULL;
}

static int probe_exit_peek(uintptr_t tok, const void *key, size_t klen, int *first, int *last, int *state) {
	pthread_once(&probe_once, probe_key_init);
	struct probe_exit a = {tok, key, klen, -100, -100, -100};
	pthread_t t;
	if (pthread_create(&t, NULL, probe_thread, &a) != 0) return -1;
	pthread_join(t, NULL);
	*first = a.first, *last = a.last, *state = a.state;
	return 0;
}

// convcache_find of nkeys keys of klen bytes each, laid end to end, over
// and over, iters finds in all: the hit path's cost without cgo's.
static uint64_t probe_find_loop(uintptr_t tok, const unsigned char *keys, size_t klen, size_t nkeys, uint64_t iters) {
	unsigned char buf[256];
	uint64_t hits = 0;
	size_t i = 0;
	for (uint64_t n = 0; n < iters; n++) {
		size_t vlen = 0;
		hits += convcache_find((convcache *)tok, keys + i * klen, klen, buf, sizeof buf, &vlen) == CONVCACHE_HIT;
		if (++i == nkeys) i = 0;
	}
	return hits;
}
*/
import "C"

import "unsafe"

// Probes for capi's tests, which cannot use cgo themselves: Go wrappers of
// hit.c's lookups and test hooks, and of small C drivers.

// peek is convcache_peek's lookup (ccx_peek) under tok, in this process.
func peek(tok uintptr, key, dst []byte) (rc, n int) {
	var vlen C.size_t
	rc = int(C.ccx_peek(C.uintptr_t(tok), unsafe.Pointer(&key[0]), C.size_t(len(key)),
		unsafe.Pointer(&dst[0]), C.size_t(len(dst)), &vlen, 0))
	return rc, int(vlen)
}

// exitPeek runs a C thread that peeks key under tok, then peeks it again
// from a pthread key destructor that runs after the library's own. It
// returns both answers and, from the destructor, ccx_test_reader_state.
func exitPeek(tok uintptr, key []byte) (first, last, state int) {
	k := C.CBytes(key)
	defer C.free(k)
	var f, l, s C.int
	if C.probe_exit_peek(C.uintptr_t(tok), k, C.size_t(len(key)), &f, &l, &s) != 0 {
		panic("pthread_create")
	}
	return int(f), int(l), int(s)
}

// refuseMembarrier makes membarrier refuse all but its query from now on.
func refuseMembarrier() { C.ccx_test_refuse_membarrier() }

// readerMode is how hit.c's readers and writer are ordered (hit.c: ccx_mode).
func readerMode() int { return int(C.ccx_test_mode()) }

// findLoop calls convcache_find iters times in C, over keys (all of one
// length, end to end), and returns the hits.
func findLoop(tok uintptr, keys []byte, klen int, iters uint64) uint64 {
	k := C.CBytes(keys)
	defer C.free(k)
	return uint64(C.probe_find_loop(C.uintptr_t(tok), (*C.uchar)(k), C.size_t(klen), C.size_t(len(keys)/klen), C.uint64_t(iters)))
}
