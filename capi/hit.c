/*
 * The C hit path. convcache_find answers a hit here, from the index the Go
 * side publishes (cache/shared.go), without entering Go; a miss, and
 * everything else, goes on into Go as before.
 *
 * Reading. The Go side is the only writer. It fills memory, then publishes
 * it with one atomic store of a pointer or a slot, so a reader that loads
 * the pointer (acquire) sees complete memory: the same protocol Go's own
 * readers follow (cache/index.go). Nothing here takes a lock or executes a
 * locked instruction: a hit is plain loads, one memcpy and, at most, two
 * plain stores (the entry's use mark, and this thread's own hit counter).
 *
 * Reclaiming. What a writer replaces (a table outgrown, the whole index
 * after a reload, a closed handle) may still be in a reader's hands. Each
 * reading thread has a record whose active word holds the epoch it entered
 * at (0 when it is outside). A writer that unpublished something starts a
 * new epoch and tags it; it is freed once no record holds an older epoch.
 * Readers publish their word with a plain store and no fence; the writer
 * pays for the order instead, with membarrier(2), which runs a full barrier
 * on every thread of the process before it returns (the scheme of
 * userspace RCU's "memb" flavour). Where membarrier is unavailable, readers
 * fence themselves (slower, same guarantee).
 *
 * Forked children. A child forked after the library started has one thread
 * and no Go runtime: nothing changes the index it inherited, so it may read
 * it without epochs. convcache_find still refuses in a child (its contract);
 * convcache_peek answers there from what the parent had.
 */
#define _GNU_SOURCE
#include <linux/membarrier.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "capi_internal.h"
#include "hit.h"

#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

/* ---- XXH64 (seed 0) ----------------------------------------------------- */

#define P1 0x9E3779B185EBCA87ULL
#define P2 0xC2B2AE3D27D4EB4FULL
#define P3 0x165667B19E3779F9ULL
#define P4 0x85EBCA77C2B2AE63ULL
#define P5 0x27D4EB2F165667C5ULL

static inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
static inline uint64_t rd64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static inline uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint64_t xround(uint64_t acc, uint64_t in) { return rotl(acc + in * P2, 31) * P1; }
static inline uint64_t xmerge(uint64_t h, uint64_t v) { return (h ^ xround(0, v)) * P1 + P4; }

uint64_t ccx_xxh64(const void *data, size_t len) {
    const uint8_t *p = data, *end = p + len;
    uint64_t h;
    if (len >= 32) {
        uint64_t v1 = P1 + P2, v2 = P2, v3 = 0, v4 = -P1;
        const uint8_t *limit = end - 32;
        do {
            v1 = xround(v1, rd64(p));
            v2 = xround(v2, rd64(p + 8));
            v3 = xround(v3, rd64(p + 16));
            v4 = xround(v4, rd64(p + 24));
            p += 32;
        } while (p <= limit);
        h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
        h = xmerge(h, v1);
        h = xmerge(h, v2);
        h = xmerge(h, v3);
        h = xmerge(h, v4);
    } else {
        h = P5;
    }
    h += (uint64_t)len;
    for (; p + 8 <= end; p += 8) h = rotl(h ^ xround(0, rd64(p)), 27) * P1 + P4;
    if (p + 4 <= end) {
        h = rotl(h ^ ((uint64_t)rd32(p) * P1), 23) * P2 + P3;
        p += 4;
    }
    for (; p < end; p++) h = rotl(h ^ (*p * P5), 11) * P1;
    h ^= h >> 33;
    h *= P2;
    h ^= h >> 29;
    h *= P3;
    h ^= h >> 32;
    return h;
}

/* ---- readers and epochs ------------------------------------------------- */

struct ccx_reader {
    uint64_t active;          /* the epoch it entered at; 0 outside */
    uint32_t id;              /* its hit-counter stripe (below 64: its own) */
    int used;                 /* a live thread owns it; guarded by ccx_rmu */
    struct ccx_reader *next;  /* records are never freed, only reused */
} __attribute__((aligned(64)));

static uint64_t ccx_epoch = 1;
static struct ccx_reader *ccx_readers; /* list head; written under ccx_rmu */
static uint32_t ccx_nreaders;
static pthread_mutex_t ccx_rmu = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t ccx_rkey;
static int ccx_rkey_ok;
static int ccx_fence; /* membarrier unavailable: readers fence */
static __thread struct ccx_reader *ccx_me __attribute__((tls_model("initial-exec")));

static int membarrier(int cmd) { return (int)syscall(__NR_membarrier, cmd, 0, 0); }

static void ccx_release(void *p) {
    struct ccx_reader *r = p;
    __atomic_store_n(&r->active, 0, __ATOMIC_RELEASE);
    pthread_mutex_lock(&ccx_rmu);
    r->used = 0;
    pthread_mutex_unlock(&ccx_rmu);
}

__attribute__((constructor)) static void ccx_init(void) {
    ccx_rkey_ok = pthread_key_create(&ccx_rkey, ccx_release) == 0;
    int q = membarrier(MEMBARRIER_CMD_QUERY);
    ccx_fence = !(q > 0 && (q & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
                  membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0);
}

/* The calling thread's record, made on its first hit. NULL if none can be
 * made (no memory): the caller then goes into Go. */
static __attribute__((noinline)) struct ccx_reader *ccx_register(void) {
    if (!ccx_rkey_ok) return NULL;
    pthread_mutex_lock(&ccx_rmu);
    struct ccx_reader *r = ccx_readers;
    while (r && r->used) r = r->next;
    if (!r) {
        r = aligned_alloc(64, sizeof *r);
        if (r) {
            memset(r, 0, sizeof *r);
            r->id = ccx_nreaders++;
            r->next = ccx_readers;
            __atomic_store_n(&ccx_readers, r, __ATOMIC_RELEASE);
        }
    }
    if (r) r->used = 1;
    pthread_mutex_unlock(&ccx_rmu);
    if (r && pthread_setspecific(ccx_rkey, r) != 0) {
        ccx_release(r);
        r = NULL;
    }
    ccx_me = r;
    return r;
}

uint64_t ccx_retire_epoch(void) { return __atomic_add_fetch(&ccx_epoch, 1, __ATOMIC_SEQ_CST); }

uint64_t ccx_safe_epoch(void) {
    if (!ccx_fence && membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0) return 0;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    uint64_t safe = UINT64_MAX;
    for (struct ccx_reader *r = __atomic_load_n(&ccx_readers, __ATOMIC_ACQUIRE); r; r = r->next) {
        uint64_t a = __atomic_load_n(&r->active, __ATOMIC_ACQUIRE);
        if (a && a < safe) safe = a;
    }
    return safe == UINT64_MAX ? safe : safe - 1;
}

/* ---- the handle table --------------------------------------------------- */

/* Tokens are gen<<24 | slot (capi/handles.go). Slots map to shared handles
 * through blocks that are allocated once and never freed, so a reader needs
 * no epoch to read the table itself; a handle it finds is checked against
 * the whole token and protected by the reader's epoch. */
#define CCX_SLOT_BITS 24
#define CCX_BLOCK_BITS 12
#define CCX_BLOCKS (1u << (CCX_SLOT_BITS - CCX_BLOCK_BITS))
#define CCX_BLOCK_SIZE (1u << CCX_BLOCK_BITS)

static struct ccx_handle **ccx_blocks[CCX_BLOCKS];
static pthread_mutex_t ccx_hmu = PTHREAD_MUTEX_INITIALIZER;

int ccx_handle_set(uintptr_t token, void *handle) {
    uint32_t slot = token & ((1u << CCX_SLOT_BITS) - 1);
    pthread_mutex_lock(&ccx_hmu);
    struct ccx_handle **b = ccx_blocks[slot >> CCX_BLOCK_BITS];
    if (!b) {
        b = calloc(CCX_BLOCK_SIZE, sizeof *b);
        if (b) __atomic_store_n(&ccx_blocks[slot >> CCX_BLOCK_BITS], b, __ATOMIC_RELEASE);
    }
    if (b) __atomic_store_n(&b[slot & (CCX_BLOCK_SIZE - 1)], handle, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&ccx_hmu);
    return b != NULL;
}

void ccx_handle_clear(uintptr_t token) {
    uint32_t slot = token & ((1u << CCX_SLOT_BITS) - 1);
    struct ccx_handle **b = __atomic_load_n(&ccx_blocks[slot >> CCX_BLOCK_BITS], __ATOMIC_ACQUIRE);
    if (b) __atomic_store_n(&b[slot & (CCX_BLOCK_SIZE - 1)], NULL, __ATOMIC_RELEASE);
}

/* ---- the hit ------------------------------------------------------------ */

static inline void ccx_count(struct ccx_handle *hd, const struct ccx_reader *me, uint32_t flags) {
    uint32_t id = me ? me->id : 0;
    struct ccx_stripe *s = &hd->hits[id & (CCX_STRIPES - 1)];
    uint64_t *n = (flags & CCX_ENTRY_SYSTEM) ? &s->sys : (flags & CCX_ENTRY_FILE) ? &s->file : &s->mem;
    if (LIKELY(me && id < CCX_STRIPES)) /* this thread's own stripe: no locked add */
        __atomic_store_n(n, __atomic_load_n(n, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
    else
        __atomic_fetch_add(n, 1, __ATOMIC_RELAXED);
}

static inline int ccx_lookup(uintptr_t token, const uint8_t *key, size_t key_len, void *value,
                             size_t value_cap, size_t *value_len, int serve_cold,
                             const struct ccx_reader *me) {
    uint32_t slot = token & ((1u << CCX_SLOT_BITS) - 1);
    struct ccx_handle **b = __atomic_load_n(&ccx_blocks[slot >> CCX_BLOCK_BITS], __ATOMIC_ACQUIRE);
    if (UNLIKELY(!b)) return 0;
    struct ccx_handle *hd = __atomic_load_n(&b[slot & (CCX_BLOCK_SIZE - 1)], __ATOMIC_ACQUIRE);
    if (UNLIKELY(!hd || __atomic_load_n(&hd->token, __ATOMIC_RELAXED) != token)) return 0;
    if (UNLIKELY(!(__atomic_load_n(&hd->flags, __ATOMIC_RELAXED) & CCX_FLAG_HITS))) return 0;
    const struct ccx_index *ix = __atomic_load_n(&hd->idx, __ATOMIC_ACQUIRE);
    if (UNLIKELY(!ix)) return 0;
    uint64_t h = ccx_xxh64(key, key_len);
    const struct ccx_table *t = __atomic_load_n(&ix->tab, __ATOMIC_ACQUIRE);
    uint64_t tag = h >> CCX_REF_BITS, mask = t->mask;
    for (uint64_t i = (h * ix->mult) >> t->shift;; i = (i + 1) & mask) {
        uint64_t s = __atomic_load_n(&t->slots[i], __ATOMIC_ACQUIRE);
        if (!s) return 0;
        if ((s >> CCX_REF_BITS) != tag) continue;
        uint64_t ref = s & ((1ULL << CCX_REF_BITS) - 1);
        uint8_t *const *chunks = __atomic_load_n(&ix->chunks, __ATOMIC_ACQUIRE);
        uint8_t *e = chunks[ref >> CCX_CHUNK_OFF_BITS] + (ref & ((1u << CCX_CHUNK_OFF_BITS) - 1));
        uint32_t klen = rd32(e), vlen = rd32(e + 4);
        if (klen != key_len || memcmp(e + CCX_ENTRY_HEADER, key, key_len) != 0) continue;
        uint32_t flags = rd32(e + 12);
        if (UNLIKELY(flags & CCX_ENTRY_COLD) && !serve_cold) return 0; /* Go moves it */
        if (UNLIKELY(vlen > value_cap)) return 0; /* Go says how long: CONVCACHE_E_RANGE */
        memcpy(value, e + CCX_ENTRY_HEADER + klen, vlen);
        *value_len = vlen;
        uint32_t g = __atomic_load_n(&hd->gen, __ATOMIC_RELAXED), *used = (uint32_t *)(e + 8);
        if (__atomic_load_n(used, __ATOMIC_RELAXED) != g) __atomic_store_n(used, g, __ATOMIC_RELAXED);
        ccx_count(hd, me, flags);
        return CONVCACHE_HIT;
    }
}

int ccx_hit(uintptr_t token, const void *key, size_t key_len, void *value, size_t value_cap,
            size_t *value_len, int serve_cold) {
    if (UNLIKELY(ccx_forked())) /* one thread, no writer: no epochs needed */
        return ccx_lookup(token, key, key_len, value, value_cap, value_len, serve_cold, NULL);
    struct ccx_reader *me = ccx_me;
    if (UNLIKELY(!me) && !(me = ccx_register())) return 0;
    __atomic_store_n(&me->active, __atomic_load_n(&ccx_epoch, __ATOMIC_ACQUIRE), __ATOMIC_RELAXED);
    if (UNLIKELY(ccx_fence))
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
    else
        __atomic_signal_fence(__ATOMIC_SEQ_CST); /* the writer's membarrier orders the rest */
    int rc = ccx_lookup(token, key, key_len, value, value_cap, value_len, serve_cold, me);
    __atomic_store_n(&me->active, 0, __ATOMIC_RELEASE);
    return rc;
}

/* ---- layout facts for the tests ---------------------------------------- */

size_t ccx_layout(const char *n) {
#define L(name, v) if (strcmp(n, name) == 0) return (size_t)(v)
    L("handle.idx", offsetof(struct ccx_handle, idx));
    L("handle.token", offsetof(struct ccx_handle, token));
    L("handle.gen", offsetof(struct ccx_handle, gen));
    L("handle.flags", offsetof(struct ccx_handle, flags));
    L("handle.hits", offsetof(struct ccx_handle, hits));
    L("stripe.size", sizeof(struct ccx_stripe));
    L("stripe.mem", offsetof(struct ccx_stripe, mem));
    L("stripe.file", offsetof(struct ccx_stripe, file));
    L("stripe.sys", offsetof(struct ccx_stripe, sys));
    L("index.mult", offsetof(struct ccx_index, mult));
    L("index.tab", offsetof(struct ccx_index, tab));
    L("index.chunks", offsetof(struct ccx_index, chunks));
    L("table.base", offsetof(struct ccx_table, slots));
    L("table.mask", offsetof(struct ccx_table, mask));
    L("table.shift", offsetof(struct ccx_table, shift));
    L("entry.header", CCX_ENTRY_HEADER);
    L("ref.bits", CCX_REF_BITS);
    L("chunk.offbits", CCX_CHUNK_OFF_BITS);
    L("flags.hits", CCX_FLAG_HITS);
    L("entry.system", CCX_ENTRY_SYSTEM);
    L("entry.file", CCX_ENTRY_FILE);
    L("entry.cold", CCX_ENTRY_COLD);
#undef L
    return (size_t)-1;
}
