/* The C hit path: what convcache_find reads without entering Go, and the
 * epochs that say when memory it may hold can be reclaimed. The layout is
 * the Go side's (cache/shared.go); capi's tests check the offsets. Not
 * installed. */
#ifndef CONVCACHE_HIT_H
#define CONVCACHE_HIT_H

#include <stddef.h>
#include <stdint.h>

#define CCX_STRIPES 64
#define CCX_REF_BITS 40
#define CCX_CHUNK_OFF_BITS 22
#define CCX_ENTRY_HEADER 16
#define CCX_FLAG_HITS 1u     /* handle flags: hits may be served here */
#define CCX_ENTRY_FILE 1u    /* entry flags: read from the file */
#define CCX_ENTRY_SYSTEM 2u  /* entry flags: from the system tier */
#define CCX_ENTRY_COLD 8u    /* entry flags: not yet used (cache/index_shared.go) */

struct ccx_table {
    const uint64_t *slots;
    uint64_t mask;
    uint64_t shift;
};

struct ccx_index {
    uint64_t mult;
    const struct ccx_table *tab;
    uint8_t *const *chunks;
};

struct ccx_stripe {
    uint64_t mem, file, sys;
    char pad[104];
};

struct ccx_handle {
    const struct ccx_index *idx;
    uint64_t token;
    uint32_t gen;
    uint32_t flags;
    char pad[104];
    struct ccx_stripe hits[CCX_STRIPES];
};

/* Answers a hit from the handle's published index: CONVCACHE_HIT with the
 * value copied, or 0 when Go must answer (a miss here, an entry not yet used
 * since the load, which Go then moves (cache/index_shared.go), a value
 * longer than value_cap, a handle that serves no hits here, or no handle at
 * all). The arguments are checked, and the process has not forked. */
int ccx_hit(uintptr_t token, const void *key, size_t key_len, void *value, size_t value_cap,
            size_t *value_len);

/* convcache_peek's lookup: as ccx_hit, but entries not yet used are
 * answered too, and in a forked child (forked nonzero) without epochs. */
int ccx_peek(uintptr_t token, const void *key, size_t key_len, void *value, size_t value_cap,
             size_t *value_len, int forked);

/* The handle table: token -> shared handle. ccx_handle_clear clears the
 * token's slot only if it holds that token's handle. */
void ccx_handle_set(uintptr_t token, void *handle);
void ccx_handle_clear(uintptr_t token);

/* Epochs. ccx_retire_epoch starts a new epoch and returns it: memory
 * unpublished before the call is tagged with it. ccx_safe_epoch returns an
 * epoch E such that everything tagged E or lower can be freed (0: nothing,
 * before the registration has said how readers are ordered, or when a
 * barrier that registered fails). */
uint64_t ccx_retire_epoch(void);
uint64_t ccx_safe_epoch(void);

/* Registers the writer's membarrier(2) (slow: a kernel grace period), or,
 * where it is refused, makes readers fence for good. Until it returns,
 * readers fence and ccx_safe_epoch says nothing is safe. Once per process. */
void ccx_register_membarrier(void);

/* For the tests: the calling thread enters a reader's critical section and
 * stays until ccx_test_exit. */
void ccx_test_enter(void);
void ccx_test_exit(void);

/* For the tests: membarrier refuses every command but the query from now
 * on; how readers and the writer are ordered now (0 pending, 1 readers
 * fence, 2 and 3 membarrier); 1 if the calling thread holds a reader
 * record, 0 if it has none, -1 if the one it would read with went back. */
void ccx_test_refuse_membarrier(void);
int ccx_test_mode(void);
int ccx_test_reader_state(void);

/* Layout facts for the tests (publish.go: sharedLayout). */
size_t ccx_layout(const char *name);

/* The index's key hash: XXH3-64 with seed 0, as the Go side's
 * github.com/zeebo/xxh3 (cache/index.go: keyHash). */
uint64_t ccx_hash(const void *p, size_t len);

#endif
