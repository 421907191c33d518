/*
 * The public C API. Each function checks its arguments and the fork state
 * here, in C, before it enters Go: NULL checks cost nothing, and a child
 * forked after the Go runtime started must never enter it (its other threads
 * are gone; a Go call there can hang). The Go side is in exports.go, under
 * other names that the version script hides.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "capi_internal.h"
#include "hit.h"
#include "_cgo_export.h"

/* ---- fork detection ---------------------------------------------------- */

static volatile int cc_forked;

static void cc_atfork_child(void) { cc_forked = 1; }

/* A handle was opened in this process, so that exit may have a remote tier
 * to flush (ccgo_at_exit); never set in a forked child, which opens none. */
static int cc_opened; /* written and read with __atomic builtins */

/* At exit, the builds this process leads finish and the remote tier sends
 * what they queued (bounded by its build deadline): another node may be
 * waiting for that value and that lock. Never in a forked child. */
static void cc_at_exit(void) {
    if (__atomic_load_n(&cc_opened, __ATOMIC_RELAXED) && !cc_forked) ccgo_at_exit();
}

__attribute__((constructor)) static void cc_init(void) {
    pthread_atfork(NULL, NULL, cc_atfork_child);
    atexit(cc_at_exit);
}

/* ---- errors ------------------------------------------------------------ */

static __thread char cc_errbuf[1024];

void ccx_set_error(const char *msg, size_t len) {
    if (len >= sizeof cc_errbuf) len = sizeof cc_errbuf - 1;
    memcpy(cc_errbuf, msg, len);
    cc_errbuf[len] = 0;
}

static int cc_fail(int code, const char *msg) {
    snprintf(cc_errbuf, sizeof cc_errbuf, "convcache: %s", msg);
    return code;
}

int ccx_fail(int code, const char *msg) { return cc_fail(code, msg); }

int ccx_forked(void) { return cc_forked; }

const char *ccx_getenv(const char *name) {
    if (getauxval(AT_SECURE)) return NULL;
    return getenv(name);
}

/* ---- struct sizes ------------------------------------------------------ */

/* A caller's struct_size must end on a whole field of the struct (a prefix
 * of this version's fields, as an older header had, or the whole struct):
 * a size that cuts a field, a pointer above all, is refused, never copied. */
#define CC_END(type, field) (offsetof(type, field) + sizeof(((type *)0)->field))

static const size_t cc_options_ends[] = {
    CC_END(convcache_options, struct_size),       CC_END(convcache_options, path),
    CC_END(convcache_options, scope),             CC_END(convcache_options, mode),
    CC_END(convcache_options, lock_timeout_ms),   CC_END(convcache_options, build_timeout_ms),
    CC_END(convcache_options, reserved0),         CC_END(convcache_options, max_bytes),
    CC_END(convcache_options, max_entries),       CC_END(convcache_options, system_path),
    CC_END(convcache_options, remote),            CC_END(convcache_options, remote_timeout_ms),
    CC_END(convcache_options, reserved1),         sizeof(convcache_options),
};

#define CC_STATS_END(field) CC_END(struct convcache_stats, field)
static const size_t cc_stats_ends[] = {
    CC_STATS_END(struct_size),    CC_STATS_END(hits),            CC_STATS_END(hits_memory),
    CC_STATS_END(hits_file),      CC_STATS_END(misses),          CC_STATS_END(inserts),
    CC_STATS_END(builds),         CC_STATS_END(entries),         CC_STATS_END(pending),
    CC_STATS_END(mem_bytes),      CC_STATS_END(file_bytes),      CC_STATS_END(journal_bytes),
    CC_STATS_END(snapshot_bytes), CC_STATS_END(lock_waits),      CC_STATS_END(lock_wait_ns),
    CC_STATS_END(compactions),    CC_STATS_END(evictions),       CC_STATS_END(damaged_bytes),
    CC_STATS_END(last_compaction_ms), CC_STATS_END(read_only),   CC_STATS_END(network_fs),
    CC_STATS_END(hits_system),    CC_STATS_END(remote_hits),     CC_STATS_END(remote_misses),
    CC_STATS_END(remote_errors),  CC_STATS_END(remote_rejected), CC_STATS_END(remote_writes),
    CC_STATS_END(remote_dropped), sizeof(struct convcache_stats),
};

/* The largest field end at or below n (0 if none). */
static size_t cc_whole_fields(size_t n, const size_t *ends, size_t count) {
    size_t best = 0;
    for (size_t i = 0; i < count; i++)
        if (ends[i] <= n && ends[i] > best) best = ends[i];
    return best;
}

#define CC_COUNT(a) (sizeof(a) / sizeof((a)[0]))

#define CC_FORK_GUARD()                                                        \
    do {                                                                       \
        if (__builtin_expect(cc_forked, 0))                                    \
            return cc_fail(CONVCACHE_E_FORKED,                                 \
                           "called in a forked child: the parent's cache "     \
                           "cannot be used here; exec, or open after exec");   \
    } while (0)

const char *convcache_last_error(void) { return cc_errbuf; }

/* The names come from convcache.h's lists, as convcache_dynamic.h's do. */
const char *convcache_strerror(int code) {
#define CC_STATUS_CASE(name, message) case CONVCACHE_##name: return message;
#define CC_ERROR_CASE(name, message, cxx_class, cxx_group) case CONVCACHE_E_##name: return message;
    switch (code) {
    CONVCACHE_STATUS_LIST(CC_STATUS_CASE)
    CONVCACHE_ERROR_LIST(CC_ERROR_CASE)
    }
#undef CC_STATUS_CASE
#undef CC_ERROR_CASE
    return code <= CONVCACHE_E_USER ? CONVCACHE_STRERROR_USER : CONVCACHE_STRERROR_UNKNOWN;
}

const char *convcache_version(void) { return CONVCACHE_VERSION_STRING; }

int convcache_version_number(void) { return CONVCACHE_VERSION_NUMBER; }

/* ---- handles ----------------------------------------------------------- */

void convcache_options_init(convcache_options *o) {
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->struct_size = sizeof *o;
}

static int cc_open(convcache_options *o, convcache **out) {
    if (o->scope && strnlen(o->scope, CONVCACHE_SCOPE_MAX + 1) > CONVCACHE_SCOPE_MAX)
        return cc_fail(CONVCACHE_E_SIZE, "scope is longer than CONVCACHE_SCOPE_MAX bytes");
    if (o->mode < CONVCACHE_MODE_DEFAULT || o->mode > CONVCACHE_MODE_STRICT)
        return cc_fail(CONVCACHE_E_INVALID, "unknown mode");
    if (o->lock_timeout_ms < 0 || o->build_timeout_ms < 0 || o->remote_timeout_ms < 0 ||
        o->max_bytes < 0 || o->max_entries < 0)
        return cc_fail(CONVCACHE_E_INVALID, "negative timeout or bound");
    uintptr_t h = 0;
    int rc = ccgo_open(o, &h);
    if (rc == CONVCACHE_OK) {
        *out = (convcache *)h;
        __atomic_store_n(&cc_opened, 1, __ATOMIC_RELAXED);
    }
    return rc;
}

int convcache_open(const char *path, const char *scope, convcache **out) {
    if (!out) return cc_fail(CONVCACHE_E_INVALID, "convcache_open: out is NULL");
    *out = NULL;
    CC_FORK_GUARD();
    convcache_options o;
    convcache_options_init(&o);
    o.path = path;
    o.scope = scope;
    return cc_open(&o, out);
}

int convcache_open_ex(const convcache_options *opts, convcache **out) {
    if (!out) return cc_fail(CONVCACHE_E_INVALID, "convcache_open_ex: out is NULL");
    *out = NULL;
    CC_FORK_GUARD();
    if (!opts) return cc_fail(CONVCACHE_E_INVALID, "convcache_open_ex: opts is NULL");
    if (opts->struct_size == 0 || opts->struct_size > sizeof(convcache_options))
        return cc_fail(CONVCACHE_E_INVALID,
                       "convcache_open_ex: opts->struct_size is 0 or newer than this library; "
                       "call convcache_options_init");
    if (cc_whole_fields(opts->struct_size, cc_options_ends, CC_COUNT(cc_options_ends)) !=
        opts->struct_size)
        return cc_fail(CONVCACHE_E_INVALID,
                       "convcache_open_ex: opts->struct_size does not end on a field of "
                       "convcache_options; call convcache_options_init");
    convcache_options o;
    memset(&o, 0, sizeof o);
    memcpy(&o, opts, opts->struct_size);
    o.struct_size = sizeof o;
    return cc_open(&o, out);
}

void convcache_close(convcache *c) {
    if (!c || cc_forked) return;
    ccgo_close((uintptr_t)c);
}

/* A hit is answered in C (hit.c); everything else enters Go. */
int convcache_find(convcache *c, const void *key, size_t key_len, void *value,
                   size_t value_cap, size_t *value_len) {
    CC_FORK_GUARD();
    if (__builtin_expect(!c || !key || !value_len || (!value && value_cap), 0))
        return cc_fail(CONVCACHE_E_INVALID, "convcache_find: NULL handle, key, value or value_len");
    if (__builtin_expect(key_len - 1 >= CONVCACHE_KEY_MAX, 0))
        return cc_fail(CONVCACHE_E_SIZE, "convcache_find: key_len must be 1..CONVCACHE_KEY_MAX");
    if (value_cap > CONVCACHE_VALUE_MAX) value_cap = CONVCACHE_VALUE_MAX; /* every value fits */
    if (ccx_hit((uintptr_t)c, key, key_len, value, value_cap, value_len) == CONVCACHE_HIT)
        return CONVCACHE_HIT;
    return ccgo_find((uintptr_t)c, (void *)key, key_len, value, value_cap, value_len);
}

int convcache_peek(convcache *c, const void *key, size_t key_len, void *value,
                   size_t value_cap, size_t *value_len) {
    if (!c || !key || !value_len || (!value && value_cap))
        return cc_fail(CONVCACHE_E_INVALID, "convcache_peek: NULL handle, key, value or value_len");
    if (key_len - 1 >= CONVCACHE_KEY_MAX)
        return cc_fail(CONVCACHE_E_SIZE, "convcache_peek: key_len must be 1..CONVCACHE_KEY_MAX");
    if (value_cap > CONVCACHE_VALUE_MAX) value_cap = CONVCACHE_VALUE_MAX;
    return ccx_peek((uintptr_t)c, key, key_len, value, value_cap, value_len, cc_forked);
}

int convcache_insert(convcache *c, const void *key, size_t key_len, const void *value,
                     size_t value_len) {
    CC_FORK_GUARD();
    if (!c || !key || (!value && value_len))
        return cc_fail(CONVCACHE_E_INVALID, "convcache_insert: NULL handle, key or value");
    if (key_len - 1 >= CONVCACHE_KEY_MAX)
        return cc_fail(CONVCACHE_E_SIZE, "convcache_insert: key_len must be 1..CONVCACHE_KEY_MAX");
    if (value_len > CONVCACHE_VALUE_MAX)
        return cc_fail(CONVCACHE_E_SIZE, "convcache_insert: value_len exceeds CONVCACHE_VALUE_MAX");
    return ccgo_insert((uintptr_t)c, (void *)key, key_len, (void *)value, value_len);
}

int convcache_load(convcache *c) {
    CC_FORK_GUARD();
    if (!c) return cc_fail(CONVCACHE_E_INVALID, "convcache_load: NULL handle");
    return ccgo_load((uintptr_t)c);
}

int convcache_save(convcache *c) {
    CC_FORK_GUARD();
    if (!c) return cc_fail(CONVCACHE_E_INVALID, "convcache_save: NULL handle");
    return ccgo_save((uintptr_t)c);
}

int ccx_call_builder(convcache_builder b, void *user, const void *key, size_t key_len,
                     void *value, size_t value_cap, size_t *value_len) {
    return b(user, key, key_len, value, value_cap, value_len);
}

int convcache_get_or_create(convcache *c, const void *key, size_t key_len,
                            convcache_builder build, void *user, void *value,
                            size_t value_cap, size_t *value_len) {
    CC_FORK_GUARD();
    if (!c || !key || !build || !value_len || (!value && value_cap))
        return cc_fail(CONVCACHE_E_INVALID,
                       "convcache_get_or_create: NULL handle, key, builder, value or value_len");
    if (key_len - 1 >= CONVCACHE_KEY_MAX)
        return cc_fail(CONVCACHE_E_SIZE,
                       "convcache_get_or_create: key_len must be 1..CONVCACHE_KEY_MAX");
    if (value_cap > CONVCACHE_VALUE_MAX) value_cap = CONVCACHE_VALUE_MAX; /* every value fits */
    if (ccx_hit((uintptr_t)c, key, key_len, value, value_cap, value_len) == CONVCACHE_HIT)
        return CONVCACHE_HIT;
    return ccgo_get_or_create((uintptr_t)c, (void *)key, key_len, build, user, value,
                              value_cap, value_len);
}

int convcache_stats(convcache *c, struct convcache_stats *out) {
    CC_FORK_GUARD();
    if (!c || !out) return cc_fail(CONVCACHE_E_INVALID, "convcache_stats: NULL handle or out");
    size_t want = out->struct_size;
    if (want < sizeof(size_t))
        return cc_fail(CONVCACHE_E_INVALID, "convcache_stats: set out->struct_size first");
    struct convcache_stats full;
    memset(&full, 0, sizeof full);
    int rc = ccgo_stats((uintptr_t)c, &full);
    if (rc != CONVCACHE_OK) return rc;
    want = cc_whole_fields(want, cc_stats_ends, CC_COUNT(cc_stats_ends)); /* never half a field */
    full.struct_size = want;
    memcpy(out, &full, want);
    return CONVCACHE_OK;
}
