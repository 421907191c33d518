package main

/*
#cgo CFLAGS: -I${SRCDIR}/../include -O2
#include <stdlib.h>
#include "capi_internal.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime/debug"
	"unsafe"

	"github.com/convcache/convcache/cache"
	"github.com/convcache/convcache/internal/config"
	"github.com/convcache/convcache/internal/secenv"
)

// setError records msg as the calling thread's last error. A C->Go call runs
// on the calling C thread, so the C side's thread-local buffer is the right
// one.
func setError(msg string) {
	if msg == "" {
		return
	}
	C.ccx_set_error((*C.char)(unsafe.Pointer(unsafe.StringData(msg))), C.size_t(len(msg)))
}

// code maps an engine error to its fixed C code and records its message.
func code(err error) C.int {
	if err == nil {
		return C.CONVCACHE_OK
	}
	setError(err.Error())
	var be builderError
	switch {
	case errors.As(err, &be):
		if be.code < 0 {
			return C.int(be.code)
		}
		return C.CONVCACHE_E_BUILDER
	case errors.Is(err, cache.ErrPending):
		return C.CONVCACHE_PENDING
	case errors.Is(err, cache.ErrRange):
		return C.CONVCACHE_E_RANGE
	case errors.Is(err, cache.ErrSize):
		return C.CONVCACHE_E_SIZE
	case errors.Is(err, cache.ErrInvalid):
		return C.CONVCACHE_E_INVALID
	case errors.Is(err, cache.ErrClosed):
		return C.CONVCACHE_E_HANDLE
	case errors.Is(err, cache.ErrFormat):
		return C.CONVCACHE_E_FORMAT
	case errors.Is(err, cache.ErrCorrupt):
		return C.CONVCACHE_E_CORRUPT
	case errors.Is(err, cache.ErrLock):
		return C.CONVCACHE_E_LOCK
	case errors.Is(err, cache.ErrReadOnly):
		return C.CONVCACHE_E_READONLY
	case errors.Is(err, cache.ErrNoSpace):
		return C.CONVCACHE_E_NOSPC
	case errors.Is(err, cache.ErrAccess):
		return C.CONVCACHE_E_ACCESS
	case errors.Is(err, cache.ErrMiss):
		return C.CONVCACHE_E_MISS
	case errors.Is(err, cache.ErrIO):
		return C.CONVCACHE_E_IO
	}
	return C.CONVCACHE_E_INTERNAL
}

// guard turns a panic into CONVCACHE_E_INTERNAL: the host process is not
// ours to crash.
func guard(rc *C.int) {
	if r := recover(); r != nil {
		setError(fmt.Sprintf("convcache: internal error (please report): %v\n%s", r, debug.Stack()))
		*rc = C.CONVCACHE_E_INTERNAL
	}
}

func errHandle() C.int {
	setError("convcache: not an open handle (closed, or never returned by convcache_open)")
	return C.CONVCACHE_E_HANDLE
}

// The library reads the live C environment, through ccx_getenv, which
// returns nothing in a privileged process (AT_SECURE).
func init() {
	secenv.SetSource(func(name string) (string, bool) {
		cs := C.CString(name)
		defer C.free(unsafe.Pointer(cs))
		v := C.ccx_getenv(cs)
		if v == nil {
			return "", false
		}
		return C.GoString(v), true
	})
}

func goString(p *C.char) string {
	if p == nil {
		return ""
	}
	return C.GoString(p)
}

//export ccgo_open
func ccgo_open(o *C.convcache_options, out *C.uintptr_t) (rc C.int) {
	defer guard(&rc)
	cfg, err := config.Resolve(openRequest(o), secenv.Lookup)
	if err != nil {
		return code(err)
	}
	opts := cfg.Cache
	opts.Remote = openRemote(cfg.Remote) // capi/remote.go; nil if none or unusable
	opts.Memory = &memory                // capi/memory.go
	opts.Publish = &published            // capi/publish.go
	c, err := cache.Open(cfg.Path, &opts)
	if err != nil {
		return code(err)
	}
	tok, ok := openHandle(c)
	if !ok {
		c.Close()
		setError("convcache: too many open handles")
		return C.CONVCACHE_E_INVALID
	}
	*out = C.uintptr_t(tok)
	return C.CONVCACHE_OK
}

// ccgo_at_exit lets each open handle's builds finish and its remote tier
// send what they queued, bounded by the tier's build deadline
// (cache.Cache.AtExit), at process exit.
//
//export ccgo_at_exit
func ccgo_at_exit() {
	var rc C.int
	defer guard(&rc)
	handles.each(func(c *cache.Cache) { c.AtExit() })
}

//export ccgo_close
func ccgo_close(tok C.uintptr_t) {
	var rc C.int
	defer guard(&rc)
	if err := closeHandle(uintptr(tok)); err != nil {
		setError(err.Error())
	}
	published.reclaim()
}

// cbytes views C memory as a byte slice without copying. The C side has
// bounded n (keys by CONVCACHE_KEY_MAX; value capacities are clamped to
// CONVCACHE_VALUE_MAX), so it fits an int.
func cbytes(p unsafe.Pointer, n C.size_t) []byte {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(p), int(n))
}

//export ccgo_find
func ccgo_find(tok C.uintptr_t, key unsafe.Pointer, klen C.size_t, val unsafe.Pointer, vcap C.size_t, vlen *C.size_t) (rc C.int) {
	defer guard(&rc)
	c := handles.get(uintptr(tok))
	if c == nil {
		return errHandle()
	}
	n, found, err := c.Find(cbytes(key, klen), cbytes(val, vcap))
	if found {
		*vlen = C.size_t(n)
	}
	if err != nil {
		return code(err)
	}
	if found {
		return C.CONVCACHE_HIT
	}
	return 0
}

//export ccgo_insert
func ccgo_insert(tok C.uintptr_t, key unsafe.Pointer, klen C.size_t, val unsafe.Pointer, vlen C.size_t) (rc C.int) {
	defer guard(&rc)
	defer published.reclaim()
	c := handles.get(uintptr(tok))
	if c == nil {
		return errHandle()
	}
	return code(c.Insert(cbytes(key, klen), cbytes(val, vlen)))
}

//export ccgo_load
func ccgo_load(tok C.uintptr_t) (rc C.int) {
	defer guard(&rc)
	defer published.reclaim()
	c := handles.get(uintptr(tok))
	if c == nil {
		return errHandle()
	}
	return code(c.Load())
}

//export ccgo_save
func ccgo_save(tok C.uintptr_t) (rc C.int) {
	defer guard(&rc)
	defer published.reclaim()
	c := handles.get(uintptr(tok))
	if c == nil {
		return errHandle()
	}
	return code(c.Save())
}

// builderError carries a C builder's nonzero return code.
type builderError struct{ code int }

func (e builderError) Error() string {
	return fmt.Sprintf("convcache: builder failed with code %d", e.code)
}

//export ccgo_get_or_create
func ccgo_get_or_create(tok C.uintptr_t, key unsafe.Pointer, klen C.size_t, b C.convcache_builder, user unsafe.Pointer, val unsafe.Pointer, vcap C.size_t, vlen *C.size_t) (rc C.int) {
	defer guard(&rc)
	c := handles.get(uintptr(tok))
	if c == nil {
		return errHandle()
	}
	var needed C.size_t
	build := func(dst []byte) (int, error) {
		var n C.size_t
		r := C.ccx_call_builder(b, user, key, klen, val, vcap, &n)
		if r == C.CONVCACHE_E_RANGE {
			needed = n
			return 0, cache.ErrRange
		}
		if r != 0 {
			return 0, builderError{int(r)}
		}
		if n > vcap {
			return 0, builderError{int(C.CONVCACHE_E_BUILDER)}
		}
		return int(n), nil
	}
	n, built, err := c.GetOrCreate(cbytes(key, klen), cbytes(val, vcap), build)
	if errors.Is(err, cache.ErrRange) {
		if needed == 0 {
			needed = C.size_t(n)
		}
		*vlen = needed
		return code(err)
	}
	if err != nil {
		return code(err)
	}
	*vlen = C.size_t(n)
	if built {
		return C.CONVCACHE_OK
	}
	return C.CONVCACHE_HIT
}

func b2i(b bool) C.int32_t {
	if b {
		return 1
	}
	return 0
}

//export ccgo_stats
func ccgo_stats(tok C.uintptr_t, out *C.struct_convcache_stats) (rc C.int) {
	defer guard(&rc)
	c := handles.get(uintptr(tok))
	if c == nil {
		return errHandle()
	}
	s := c.Stats()
	out.hits = C.uint64_t(s.Hits)
	out.hits_memory = C.uint64_t(s.HitsMemory)
	out.hits_file = C.uint64_t(s.HitsFile)
	out.misses = C.uint64_t(s.Misses)
	out.inserts = C.uint64_t(s.Inserts)
	out.builds = C.uint64_t(s.Builds)
	out.entries = C.uint64_t(s.Entries)
	out.pending = C.uint64_t(s.Pending)
	out.mem_bytes = C.uint64_t(s.MemBytes)
	out.file_bytes = C.uint64_t(s.FileBytes)
	out.journal_bytes = C.uint64_t(s.Journal)
	out.snapshot_bytes = C.uint64_t(s.Snapshot)
	out.lock_waits = C.uint64_t(s.LockWaits)
	out.lock_wait_ns = C.uint64_t(s.LockWaitTime)
	out.compactions = C.uint64_t(s.Compactions)
	out.evictions = C.uint64_t(s.Evictions)
	out.damaged_bytes = C.uint64_t(s.DamagedBytes)
	if !s.LastCompaction.IsZero() {
		out.last_compaction_ms = C.int64_t(s.LastCompaction.UnixMilli())
	}
	out.hits_system = C.uint64_t(s.HitsSystem)
	out.remote_hits = C.uint64_t(s.Remote.Hits)
	out.remote_misses = C.uint64_t(s.Remote.Misses)
	out.remote_errors = C.uint64_t(s.Remote.Errors)
	out.remote_rejected = C.uint64_t(s.Remote.Rejected)
	out.remote_writes = C.uint64_t(s.Remote.Writes)
	out.remote_dropped = C.uint64_t(s.Remote.Dropped)
	out.read_only = b2i(s.ReadOnly)
	out.network_fs = b2i(s.NetworkFS)
	return C.CONVCACHE_OK
}
