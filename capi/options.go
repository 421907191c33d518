package main

/*
#include "capi_internal.h"
*/
import "C"

import (
	"time"

	"github.com/convcache/convcache/cache"
	"github.com/convcache/convcache/internal/config"
)

var cModes = map[C.int]cache.Mode{
	C.CONVCACHE_MODE_RW:      cache.ModeReadWrite,
	C.CONVCACHE_MODE_RO:      cache.ModeReadOnly,
	C.CONVCACHE_MODE_OFF:     cache.ModeOff,
	C.CONVCACHE_MODE_RECACHE: cache.ModeRecache,
	C.CONVCACHE_MODE_STRICT:  cache.ModeStrict,
}

// openRequest turns convcache_options into what config.Resolve takes: the
// same fields, zero (or NULL) meaning "the environment's, else the
// default". capi.c has refused negative numbers and unknown modes.
func openRequest(o *C.convcache_options) config.Request {
	r := config.Request{
		Path:          goString(o.path),
		Scope:         goString(o.scope),
		LockTimeout:   time.Duration(o.lock_timeout_ms) * time.Millisecond,
		BuildTimeout:  time.Duration(o.build_timeout_ms) * time.Millisecond,
		MaxBytes:      int64(o.max_bytes),
		MaxEntries:    int64(o.max_entries),
		SystemPath:    goString(o.system_path),
		RemoteTimeout: time.Duration(o.remote_timeout_ms) * time.Millisecond,
	}
	if o.mode != C.CONVCACHE_MODE_DEFAULT {
		m := cModes[o.mode]
		r.Mode = &m
	}
	if o.remote != nil {
		url := C.GoString(o.remote)
		r.Remote = &url
	}
	return r
}
