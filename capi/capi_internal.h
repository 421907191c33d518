/* Declarations shared by the cgo preamble (exports.go) and capi.c. Not
 * installed: the contract is include/convcache.h. */
#ifndef CONVCACHE_CAPI_INTERNAL_H
#define CONVCACHE_CAPI_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include "convcache.h"

/* Calls a builder function pointer (cgo cannot call one directly). */
int ccx_call_builder(convcache_builder b, void *user, const void *key, size_t key_len,
                     void *value, size_t value_cap, size_t *value_len);

/* Nonzero in a child forked after the library was loaded: such a child
 * must never enter Go. Every public function checks it first. */
int ccx_forked(void);

/* Records a message as the calling thread's last error and returns code. */
int ccx_fail(int code, const char *msg);

/* Records the calling thread's last error message. */
void ccx_set_error(const char *msg, size_t len);

/* getenv with secure_getenv's semantics: NULL for every variable in a
 * privileged process (AT_SECURE: set-user-ID, set-group-ID, file
 * capabilities), whose environment belongs to whoever started it. The only
 * way the library reads its environment. */
const char *ccx_getenv(const char *name);

#endif
