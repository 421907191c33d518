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
 * userspace RCU's "memb" flavour; registering for it takes a kernel grace
 * period, so it is done on a goroutine once a handle opens, not at load).
 * Where membarrier is unavailable, or its registration is refused (a
 * nohz_full kernel, a seccomp filter), readers fence themselves (slower,
 * same guarantee). Until the registration has said which (ccx_mode),
 * readers fence and nothing is reclaimed: a reader that skipped its fence
 * must never meet a writer that did not run the barrier.
 *
 * A thread's record is its own from its first hit until it exits (a
 * pthread key's destructor gives it back). A hit from a destructor that
 * runs after that one (another library's, at thread exit) borrows a free
 * record for the one read: it never uses the record it gave back, which a
 * new thread may hold by then.
 *
 * Forked children. A child forked after the library started has one thread
 * and no Go runtime: nothing changes the index it inherited, so it may read
 * it without epochs. convcache_find still refuses in a child (its contract,
 * checked before ccx_hit, which so never asks again); convcache_peek answers
 * there from what the parent had (ccx_peek, told by its caller).
 */
#define _GNU_SOURCE
#include <errno.h>
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

/* ---- XXH3-64 (seed 0, default secret) ---------------------------------- */

/* The index's key hash, as the Go side's github.com/zeebo/xxh3 computes it
 * (cache/index.go: keyHash). XXH3 rather than XXH64: a hit hashes every key
 * it is asked, and for the 100-odd bytes of a convolution's key XXH3 does
 * eight independent multiplies where XXH64 does a serial chain. */

static const uint8_t kSecret[192] = {
    0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
    0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
    0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
    0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
    0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
    0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
    0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
    0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
    0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
    0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
    0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
    0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
};

#define P32_1 0x9E3779B1ULL
#define P32_2 0x85EBCA77ULL
#define P32_3 0xC2B2AE3DULL
#define P64_1 0x9E3779B185EBCA87ULL
#define P64_2 0xC2B2AE3D27D4EB4FULL
#define P64_3 0x165667B19E3779F9ULL
#define P64_4 0x85EBCA77C2B2AE63ULL
#define P64_5 0x27D4EB2F165667C5ULL

static inline uint64_t rd64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static inline uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static inline uint64_t fold(uint64_t a, uint64_t b) {
    __uint128_t m = (__uint128_t)a * b;
    return (uint64_t)m ^ (uint64_t)(m >> 64);
}

static inline uint64_t mix16(const uint8_t *p, const uint8_t *s) {
    return fold(rd64(p) ^ rd64(s), rd64(p + 8) ^ rd64(s + 8));
}

static inline uint64_t avalanche3(uint64_t h) {
    h ^= h >> 37;
    h *= 0x165667919E3779F9ULL;
    return h ^ (h >> 32);
}

static uint64_t xxh3_small(const uint8_t *p, size_t len) {
    if (len > 8) {
        uint64_t lo = rd64(p) ^ (rd64(kSecret + 24) ^ rd64(kSecret + 32));
        uint64_t hi = rd64(p + len - 8) ^ (rd64(kSecret + 40) ^ rd64(kSecret + 48));
        return avalanche3(len + __builtin_bswap64(lo) + hi + fold(lo, hi));
    }
    if (len >= 4) {
        uint64_t in = rd32(p + len - 4) + ((uint64_t)rd32(p) << 32);
        uint64_t h = in ^ (rd64(kSecret + 8) ^ rd64(kSecret + 16));
        h ^= rotl(h, 49) ^ rotl(h, 24);
        h *= 0x9FB21C651E98DF25ULL;
        h ^= (h >> 35) + len;
        h *= 0x9FB21C651E98DF25ULL;
        return h ^ (h >> 28);
    }
    if (len == 0) return 0x2D06800538D394C2ULL;
    uint32_t c1 = p[0], c2 = p[len >> 1], c3 = p[len - 1];
    uint64_t h = ((c1 << 16) | (c2 << 24) | c3 | ((uint32_t)len << 8)) ^ (uint64_t)(rd32(kSecret) ^ rd32(kSecret + 4));
    h ^= h >> 33;
    h *= P64_2;
    h ^= h >> 29;
    h *= P64_3;
    return h ^ (h >> 32);
}

static void xxh3_stripe(uint64_t acc[8], const uint8_t *p, const uint8_t *s) {
    for (int i = 0; i < 8; i++) {
        uint64_t v = rd64(p + 8 * i), k = v ^ rd64(s + 8 * i);
        acc[i ^ 1] += v;
        acc[i] += (k & 0xFFFFFFFFULL) * (k >> 32);
    }
}

static uint64_t xxh3_long(const uint8_t *p, size_t len) {
    uint64_t acc[8] = {P32_3, P64_1, P64_2, P64_3, P64_4, P32_2, P64_5, P32_1};
    const size_t stripes = (sizeof kSecret - 64) / 8, block = 64 * stripes;
    size_t blocks = (len - 1) / block;
    for (size_t b = 0; b < blocks; b++) {
        for (size_t s = 0; s < stripes; s++) xxh3_stripe(acc, p + b * block + s * 64, kSecret + s * 8);
        for (int i = 0; i < 8; i++) {
            acc[i] ^= acc[i] >> 47;
            acc[i] ^= rd64(kSecret + sizeof kSecret - 64 + 8 * i);
            acc[i] *= P32_1;
        }
    }
    size_t last = ((len - 1) - block * blocks) / 64;
    for (size_t s = 0; s < last; s++) xxh3_stripe(acc, p + blocks * block + s * 64, kSecret + s * 8);
    xxh3_stripe(acc, p + len - 64, kSecret + sizeof kSecret - 64 - 7);
    uint64_t h = len * P64_1;
    for (int i = 0; i < 4; i++) h += fold(acc[2 * i] ^ rd64(kSecret + 11 + 16 * i), acc[2 * i + 1] ^ rd64(kSecret + 19 + 16 * i));
    return avalanche3(h);
}

uint64_t ccx_hash(const void *data, size_t len) {
    const uint8_t *p = data;
    if (len <= 16) return xxh3_small(p, len);
    uint64_t h = len * P64_1;
    if (len <= 128) {
        if (len > 32) {
            if (len > 64) {
                if (len > 96) {
                    h += mix16(p + 48, kSecret + 96);
                    h += mix16(p + len - 64, kSecret + 112);
                }
                h += mix16(p + 32, kSecret + 64);
                h += mix16(p + len - 48, kSecret + 80);
            }
            h += mix16(p + 16, kSecret + 32);
            h += mix16(p + len - 32, kSecret + 48);
        }
        h += mix16(p, kSecret);
        h += mix16(p + len - 16, kSecret + 16);
        return avalanche3(h);
    }
    if (len <= 240) {
        for (size_t i = 0; i < 8; i++) h += mix16(p + 16 * i, kSecret + 16 * i);
        h = avalanche3(h);
        for (size_t i = 8; i < len / 16; i++) h += mix16(p + 16 * i, kSecret + 16 * (i - 8) + 3);
        h += mix16(p + len - 16, kSecret + 136 - 17);
        return avalanche3(h);
    }
    return xxh3_long(p, len);
}

/* ---- readers and epochs ------------------------------------------------- */

struct ccx_reader {
    uint64_t active;          /* the epoch it entered at; 0 outside */
    uint32_t id;              /* its hit-counter stripe (below 64: its own) */
    int used;                 /* a thread holds it; guarded by ccx_rmu */
    struct ccx_reader *next;  /* records are never freed, only reused */
} __attribute__((aligned(64)));

/* How readers and the writer order their accesses. Readers fence in the
 * first two; the writer reclaims in all but the first. The mode starts
 * PENDING (or FENCE, where the kernel offers no barrier) and changes once,
 * when ccx_register_membarrier has tried to register. */
enum {
    CCX_PENDING, /* not registered yet: readers fence, nothing is reclaimed */
    CCX_FENCE,   /* no barrier: readers fence, the writer fences */
    CCX_PRIVATE, /* readers do not fence; the writer runs MEMBARRIER_CMD_PRIVATE_EXPEDITED */
    CCX_GLOBAL,  /* readers do not fence; the writer runs MEMBARRIER_CMD_GLOBAL */
};

static uint64_t ccx_epoch = 1;
static struct ccx_reader *ccx_readers; /* list head; written under ccx_rmu */
static uint32_t ccx_nreaders;
static pthread_mutex_t ccx_rmu = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t ccx_rkey;
static int ccx_rkey_ok;
static int ccx_mode;    /* CCX_*: read by every reader (relaxed), set once by the registration */
static int ccx_query;   /* what MEMBARRIER_CMD_QUERY said */
static int ccx_refuse;  /* tests: membarrier refuses all but the query (ccx_test_refuse_membarrier) */
static __thread struct ccx_reader *ccx_me __attribute__((tls_model("initial-exec")));
static __thread int ccx_gone __attribute__((tls_model("initial-exec"))); /* the thread gave its record back: it is exiting */

static int membarrier(int cmd) {
    if (UNLIKELY(__atomic_load_n(&ccx_refuse, __ATOMIC_RELAXED)) && cmd != MEMBARRIER_CMD_QUERY) {
        errno = EPERM;
        return -1;
    }
    return (int)syscall(__NR_membarrier, cmd, 0, 0);
}

/* A free record, or a new one, marked used; NULL without memory. */
static struct ccx_reader *ccx_take(void) {
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
    return r;
}

static void ccx_put(struct ccx_reader *r) {
    __atomic_store_n(&r->active, 0, __ATOMIC_RELEASE);
    pthread_mutex_lock(&ccx_rmu);
    r->used = 0;
    pthread_mutex_unlock(&ccx_rmu);
}

/* The key's destructor, at thread exit, on the exiting thread: the record
 * goes back, and the thread never uses it again (ccx_read_slow). */
static void ccx_release(void *p) {
    struct ccx_reader *r = p;
    if (ccx_me == r) ccx_me = NULL;
    ccx_gone = 1;
    ccx_put(r);
}

__attribute__((constructor)) static void ccx_init(void) {
    ccx_rkey_ok = pthread_key_create(&ccx_rkey, ccx_release) == 0;
    /* Only the query here: registering takes a grace period of the kernel's
     * (8 ms measured), which every process start would pay. Go registers
     * on a goroutine once a handle opens (ccx_register_membarrier); until
     * then readers fence and nothing is reclaimed. */
    ccx_query = membarrier(MEMBARRIER_CMD_QUERY);
    int offered = ccx_query > 0 && (ccx_query & (MEMBARRIER_CMD_PRIVATE_EXPEDITED | MEMBARRIER_CMD_GLOBAL));
    __atomic_store_n(&ccx_mode, offered ? CCX_PENDING : CCX_FENCE, __ATOMIC_RELEASE);
}

void ccx_register_membarrier(void) {
    if (__atomic_load_n(&ccx_mode, __ATOMIC_ACQUIRE) != CCX_PENDING) return;
    /* Each barrier is tried once here: a filter may refuse the command and
     * not the registration. Where every one fails, readers keep fencing. */
    int mode = CCX_FENCE;
    if ((ccx_query & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
        membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0 &&
        membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0)
        mode = CCX_PRIVATE;
    else if ((ccx_query & MEMBARRIER_CMD_GLOBAL) && membarrier(MEMBARRIER_CMD_GLOBAL) == 0)
        mode = CCX_GLOBAL;
    __atomic_store_n(&ccx_mode, mode, __ATOMIC_SEQ_CST);
}

/* The calling thread's record, made on its first hit. NULL if none can be
 * made (no memory, or the thread is exiting). */
static struct ccx_reader *ccx_register(void) {
    if (!ccx_rkey_ok || ccx_gone) return NULL;
    struct ccx_reader *r = ccx_take();
    if (r && pthread_setspecific(ccx_rkey, r) != 0) {
        ccx_put(r);
        r = NULL;
    }
    ccx_me = r;
    return r;
}

uint64_t ccx_retire_epoch(void) { return __atomic_add_fetch(&ccx_epoch, 1, __ATOMIC_SEQ_CST); }

uint64_t ccx_safe_epoch(void) {
    switch (__atomic_load_n(&ccx_mode, __ATOMIC_ACQUIRE)) {
    case CCX_PENDING: /* a reader may read PRIVATE next, and skip its fence */
        return 0;
    case CCX_PRIVATE:
        if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0) return 0;
        break;
    case CCX_GLOBAL:
        if (membarrier(MEMBARRIER_CMD_GLOBAL) != 0) return 0;
        break;
    default: /* CCX_FENCE: every reader fenced */
        break;
    }
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    uint64_t safe = UINT64_MAX;
    for (struct ccx_reader *r = __atomic_load_n(&ccx_readers, __ATOMIC_ACQUIRE); r; r = r->next) {
        uint64_t a = __atomic_load_n(&r->active, __ATOMIC_ACQUIRE);
        if (a && a < safe) safe = a;
    }
    /* A reader whose word holds E entered after the increment that made E
     * (its acquire load of the epoch saw it), so it cannot hold what was
     * unpublished before that increment: memory tagged E is free to go. */
    return safe;
}

/* For capi's tests: hold the calling thread inside a reader's critical
 * section, as a reader stopped halfway through a hit would be, and let it
 * go. Not exported (exports.map). */
void ccx_test_enter(void) {
    struct ccx_reader *me = ccx_me ? ccx_me : ccx_register();
    if (me) __atomic_store_n(&me->active, __atomic_load_n(&ccx_epoch, __ATOMIC_ACQUIRE), __ATOMIC_SEQ_CST);
}

void ccx_test_exit(void) {
    if (ccx_me) __atomic_store_n(&ccx_me->active, 0, __ATOMIC_RELEASE);
}

/* For capi's tests: make membarrier refuse everything but the query, as a
 * seccomp filter or a nohz_full kernel does, before it registers. */
void ccx_test_refuse_membarrier(void) { __atomic_store_n(&ccx_refuse, 1, __ATOMIC_RELAXED); }

int ccx_test_mode(void) { return __atomic_load_n(&ccx_mode, __ATOMIC_ACQUIRE); }

/* For capi's tests: 1 if the calling thread holds a record, 0 if it has
 * none, -1 if the record it would read with was given back. */
int ccx_test_reader_state(void) {
    if (!ccx_me) return 0;
    pthread_mutex_lock(&ccx_rmu);
    int used = ccx_me->used;
    pthread_mutex_unlock(&ccx_rmu);
    return used ? 1 : -1;
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

void ccx_handle_set(uintptr_t token, void *handle) {
    uint32_t slot = token & ((1u << CCX_SLOT_BITS) - 1);
    pthread_mutex_lock(&ccx_hmu);
    struct ccx_handle **b = ccx_blocks[slot >> CCX_BLOCK_BITS];
    if (!b) {
        b = calloc(CCX_BLOCK_SIZE, sizeof *b);
        if (b) __atomic_store_n(&ccx_blocks[slot >> CCX_BLOCK_BITS], b, __ATOMIC_RELEASE);
    }
    if (b) __atomic_store_n(&b[slot & (CCX_BLOCK_SIZE - 1)], handle, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&ccx_hmu);
}

/* Clears the slot only if it still holds token's handle: once a close has
 * given the slot back (capi/handles.go), an open may take it and publish a
 * handle of its own there before this runs. The handle found is live: each
 * handle is cleared from its slot, here, before its Close retires it. */
void ccx_handle_clear(uintptr_t token) {
    uint32_t slot = token & ((1u << CCX_SLOT_BITS) - 1);
    pthread_mutex_lock(&ccx_hmu);
    struct ccx_handle **b = ccx_blocks[slot >> CCX_BLOCK_BITS];
    if (b) {
        struct ccx_handle **p = &b[slot & (CCX_BLOCK_SIZE - 1)];
        struct ccx_handle *hd = *p;
        if (hd && __atomic_load_n(&hd->token, __ATOMIC_RELAXED) == token)
            __atomic_store_n(p, NULL, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&ccx_hmu);
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
    uint64_t h = ccx_hash(key, key_len);
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
        if (vlen) memcpy(value, e + CCX_ENTRY_HEADER + klen, vlen); /* value may be NULL when 0 */
        *value_len = vlen;
        uint32_t g = __atomic_load_n(&hd->gen, __ATOMIC_RELAXED), *used = (uint32_t *)(e + 8);
        if (__atomic_load_n(used, __ATOMIC_RELAXED) != g) __atomic_store_n(used, g, __ATOMIC_RELAXED);
        ccx_count(hd, me, flags);
        return CONVCACHE_HIT;
    }
}

/* A lookup inside a reader's critical section, on record me (see the top
 * of this file). */
static inline int ccx_read_as(struct ccx_reader *me, uintptr_t token, const void *key,
                              size_t key_len, void *value, size_t value_cap, size_t *value_len,
                              int serve_cold) {
    __atomic_store_n(&me->active, __atomic_load_n(&ccx_epoch, __ATOMIC_ACQUIRE), __ATOMIC_RELAXED);
    if (UNLIKELY(__atomic_load_n(&ccx_mode, __ATOMIC_RELAXED) < CCX_PRIVATE))
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
    else
        __atomic_signal_fence(__ATOMIC_SEQ_CST); /* the writer's membarrier orders the rest */
    int rc = ccx_lookup(token, key, key_len, value, value_cap, value_len, serve_cold, me);
    __atomic_store_n(&me->active, 0, __ATOMIC_RELEASE);
    return rc;
}

/* The first read of a thread: it makes the thread's record. A thread that
 * has none and may not make one (it is exiting: its record went back, and
 * a new thread may hold it now) borrows a free record for this read. 0 when
 * there is no memory for a record: Go answers. */
static __attribute__((noinline)) int ccx_read_slow(uintptr_t token, const void *key, size_t key_len,
                                                   void *value, size_t value_cap, size_t *value_len,
                                                   int serve_cold) {
    struct ccx_reader *me = ccx_register();
    if (me) return ccx_read_as(me, token, key, key_len, value, value_cap, value_len, serve_cold);
    if (!(me = ccx_take())) return 0;
    int rc = ccx_read_as(me, token, key, key_len, value, value_cap, value_len, serve_cold);
    ccx_put(me);
    return rc;
}

static inline int ccx_read(uintptr_t token, const void *key, size_t key_len, void *value,
                           size_t value_cap, size_t *value_len, int serve_cold) {
    struct ccx_reader *me = ccx_me;
    if (UNLIKELY(!me)) return ccx_read_slow(token, key, key_len, value, value_cap, value_len, serve_cold);
    return ccx_read_as(me, token, key, key_len, value, value_cap, value_len, serve_cold);
}

int ccx_hit(uintptr_t token, const void *key, size_t key_len, void *value, size_t value_cap,
            size_t *value_len) {
    return ccx_read(token, key, key_len, value, value_cap, value_len, 0);
}

int ccx_peek(uintptr_t token, const void *key, size_t key_len, void *value, size_t value_cap,
             size_t *value_len, int forked) {
    if (UNLIKELY(forked)) /* one thread, no writer: no epochs needed */
        return ccx_lookup(token, key, key_len, value, value_cap, value_len, 1, NULL);
    return ccx_read(token, key, key_len, value, value_cap, value_len, 1);
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
