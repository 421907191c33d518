// Command capi is built with -buildmode=c-shared into libconvcache.so, the
// C ABI of convcache. It is not run as a program.
//
// The contract is the hand-written include/convcache.h. capi.c defines the
// public convcache_* functions: each checks its arguments and whether the
// process has forked, then calls a Go export of another name (ccgo_*) in
// exports.go. The linker version script exports.map keeps every name but
// convcache_* out of the library's dynamic symbol table, the Go runtime's
// included.
//
// A hit never enters Go. hit.c answers it in C from the index the engine
// publishes (cache/shared.go): pinned Go memory that C reads with the same
// ordering as Go's lock-free readers, found through a table of handle slots
// that hit.c keeps. What the engine replaces is retired through publish.go
// and freed by hit.c's epochs once no C reader can hold it: readers mark
// their epoch with plain stores, and the writer pays for the ordering with
// membarrier(2). A miss, an entry not yet used since the load (which Go then
// moves; cache/index_shared.go), and every other call enter Go through the
// ccgo_* exports.
//
// Handles are opaque tokens, a slot number and a generation, never pointers:
// a closed, stale or garbage handle is rejected with CONVCACHE_E_HANDLE
// instead of being dereferenced (the C hit path checks the whole token
// against the shared handle it finds, and otherwise leaves the call to Go).
// A close takes the token out of the table, clears the C hit path's slot if
// it still holds that handle (an open may have taken the slot meanwhile),
// then closes the engine's handle, which any call that got it before races
// safely (cache/lifecycle.go).
// No Go pointer is handed to C but the pinned ones above, nothing panics
// across the boundary (each export recovers and returns
// CONVCACHE_E_INTERNAL), and errors are described in a per-thread buffer
// that convcache_last_error returns.
//
// Arguments are bounded in C before Go sees them: struct sizes must end on
// a whole field (open_ex) or are cut to whole fields (stats), value
// capacities above CONVCACHE_VALUE_MAX count as CONVCACHE_VALUE_MAX, so no
// size from the caller becomes a Go slice length it cannot be.
//
// The environment is read only through ccx_getenv (capi.c), installed as
// secenv's source: the live C environment (a setenv() by the host counts),
// and nothing at all in a privileged process (AT_SECURE), as secure_getenv.
package main
