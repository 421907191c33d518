/*
 * The shadows: what the interposer knows of each live backend descriptor
 * of the types it tracks, in a hash table keyed by the descriptor's
 * address. A shadow is made when the host creates a descriptor, filled as
 * the host sets attributes (v8_key.c), and freed when the host destroys
 * it, so the table holds no more than the host holds alive, and never more
 * than MAX_LIVE entries (past that, new descriptors are not tracked and
 * graphs made of them pass through). A leaf (tensor, convolution) gets no
 * shadow at its create: a word in its slot, or a shadow where that does
 * not fit, once the host sets one of the few attributes cuDNN does not
 * read back (v8_leaf.c).
 *
 * The table grows with the live shadows (a lookup reads one slot or a few
 * neighbours, whatever the host keeps alive) and shrinks when most are
 * gone. An operation's or a leaf's shadow is the common part of struct
 * v8_shadow only (16 bytes) and its packed attributes, in one 32-byte slot
 * (v8_slab.c; a malloc'ed block once they outgrow it: an operation's
 * leaves, by content); graphs, heuristics, configs and plans carry their
 * own part too.
 *
 * One mutex (v8_mu) guards the table and every graph: the calls that take
 * it (create, set, finalize, destroy, heuristics, and executes of the
 * plans in the execute filter) are not the hot path, which is an execute
 * of any other plan (v8_calls.c), and it is never held across a call into
 * cuDNN that does work.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "v8.h"

#define MIN_SLOTS 4096
#define MAX_LIVE (1 << 21)

pthread_mutex_t v8_mu = PTHREAD_MUTEX_INITIALIZER;

/* Open addressing with linear probing: each slot holds the descriptor's
 * address beside its shadow, so that a lookup reads one slot (or a few
 * neighbours), never another descriptor's shadow. At most three quarters
 * of the slots are used; a deletion shifts the run after it back (no
 * tombstones). */
struct slot {
    const void *desc;
    struct v8_shadow *s;
};
static struct slot *table;
static size_t nslots; /* a power of two, or 0 before the first shadow */
static long live;

/* A fork while another thread holds v8_mu must not leave the child a mutex
 * nobody will unlock: a child forked before libconvcache was loaded goes on
 * using the backend hooks. (It is never held across a wait.) */
static void fork_prepare(void) { pthread_mutex_lock(&v8_mu); }
static void fork_parent(void) { pthread_mutex_unlock(&v8_mu); }
static void fork_child(void) { pthread_mutex_init(&v8_mu, NULL); }

__attribute__((constructor)) static void v8_shadow_init(void) {
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* home is where desc's entry belongs. Descriptors the host makes one after
 * another lie near each other in memory, and are destroyed in much the
 * same order: within a 4 KiB page, homes keep the addresses' order (a slot
 * per 16 bytes), so that the lookups of such a run touch few cache lines;
 * each page's 256 slots start at a hashed place, so that pages, however
 * their addresses fall, spread over the table (a run of full slots is at
 * most about a page's worth, and an absent key's probe short). */
static size_t home(const void *p, size_t n) {
    uint64_t a = (uint64_t)(uintptr_t)p, page = a >> 12;
    page ^= page >> 17;
    page *= 0x9E3779B97F4A7C15ull;
    return (size_t)(((page >> 24) << 8) + ((a >> 4) & 0xFF)) & (n - 1);
}

/* The slot this thread found last: a host sets a descriptor's attributes
 * and finalizes it in a run of calls, each a lookup of the same address.
 * A slot that still holds that address is its slot (an address is in the
 * table once), whatever moved since; anything else is looked up. */
static __thread struct {
    const void *desc;
    size_t i;
} last __attribute__((tls_model("initial-exec")));

/* find returns desc's slot, or the empty slot where it would go. */
static size_t find(const void *desc) {
    if (last.desc == desc && last.i < nslots && table[last.i].desc == desc) return last.i;
    size_t i = home(desc, nslots);
    while (table[i].desc && table[i].desc != desc) i = (i + 1) & (nslots - 1);
    if (table[i].desc) last.desc = desc, last.i = i;
    return i;
}

/* A table is mapped, apart from the host's heap: freeing a table of 64 KiB
 * or more to malloc would make it consolidate every small chunk the host
 * and cuDNN freed meanwhile (seen: half the interposer's time at a
 * stand-in host's destroys). One of 2 MiB or more is mapped in huge pages
 * where the kernel allows them: lookups land anywhere in it, and with
 * 4 KiB pages each would miss the TLB too. */
#define HUGE_BYTES ((size_t)2 << 20)

static struct slot *table_alloc(size_t n) {
    size_t bytes = n * sizeof(struct slot);
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    if (bytes >= HUGE_BYTES) madvise(p, bytes, MADV_HUGEPAGE); /* a hint: 4 KiB pages work too */
    return p;
}

static void table_free(struct slot *t, size_t n) {
    if (t) munmap(t, n * sizeof(struct slot));
}

/* resize moves every shadow to a table of n slots; on no memory the table
 * stays as it is (fuller, nothing lost). */
static void resize(size_t n) {
    struct slot *old = table, *t = table_alloc(n);
    size_t was = nslots;
    if (!t) return;
    __atomic_store_n(&table, t, __ATOMIC_RELAXED);
    __atomic_store_n(&nslots, n, __ATOMIC_RELAXED);
    size_t mask = n - 1;
    for (size_t i = 0; i < was; i++) {
        if (!old[i].desc) continue;
        size_t j = home(old[i].desc, n); /* (each address is in the table once) */
        while (t[j].desc) j = (j + 1) & mask;
        t[j] = old[i];
    }
    table_free(old, was);
}

/* take empties slot i, shifting back the entries after it that would no
 * longer be found. */
static void take(size_t i) {
    size_t mask = nslots - 1;
    for (size_t j = (i + 1) & mask; table[j].desc; j = (j + 1) & mask) {
        size_t h = home(table[j].desc, nslots);
        /* j's entry may move to i if its home is not in (i, j]. */
        if (((j - h) & mask) >= ((j - i) & mask)) {
            table[i] = table[j];
            i = j;
        }
    }
    table[i].desc = NULL;
    table[i].s = NULL;
}

void v8_shadow_prefetch(const void *desc) {
    /* Without v8_mu: a table being replaced makes this a useless hint,
     * never a fault (a prefetch does not fault). */
    struct slot *t = __atomic_load_n(&table, __ATOMIC_RELAXED);
    size_t n = __atomic_load_n(&nslots, __ATOMIC_RELAXED);
    if (t && n) __builtin_prefetch(&t[home(desc, n)]);
}

/* A slot holds a shadow, or a leaf's word: the few small values a tensor
 * or convolution keeps (v8_leaf.c), with its low bit set, in place of a
 * pointer (a shadow's low bit is 0): the many tensors get no shadow. */
static inline int is_word(const struct v8_shadow *s) { return (uintptr_t)s & 1; }

struct v8_shadow *v8_shadow_get(const void *desc) {
    if (!desc || !nslots) return NULL;
    struct v8_shadow *s = table[find(desc)].s;
    return is_word(s) ? NULL : s;
}

struct v8_shadow *v8_shadow_peek(const void *desc, uint64_t *w) {
    *w = 0;
    if (!desc || !nslots) return NULL;
    struct v8_shadow *s = table[find(desc)].s;
    if (!is_word(s)) return s;
    *w = (uint64_t)(uintptr_t)s;
    return NULL;
}

struct v8_shadow *v8_shadow_typed(const void *desc, int type) {
    struct v8_shadow *s = v8_shadow_get(desc);
    return s && s->type == type ? s : NULL;
}

long v8_shadow_live(void) { return live; }

int v8_shadow_tracked_type(int type) {
    switch (type) {
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
    case CUDNN_BACKEND_ENGINE_DESCRIPTOR:
    case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR:
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
        return 1; /* (each fits the shadow's byte) */
    }
    return 0;
}


/* shadow_size is what a new shadow of a type that is not small needs:
 * the common part, its graph and attributes' place, and the typed part
 * for the types that have one. */
static size_t shadow_size(int type) {
    switch (type) {
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
    case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR:
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
        return sizeof(struct v8_shadow);
    }
    return offsetof(struct v8_shadow, handle);
}

static void shadow_free(struct v8_shadow *s) {
    if (v8_shadow_in_slab(s)) v8_slab_free(s);
    else free(s);
}

/* small_room is the room a small shadow that needs cap bytes of
 * attributes grows to, out of its slot: at least half as much again as it
 * had (a few sets, few moves), filling malloc's chunk (a multiple of 16,
 * less its 8-byte header). */
static size_t small_room(size_t had, size_t cap) {
    size_t want = had + had / 2;
    if (want < cap) want = cap;
    return ((V8_SHADOW_HEAD + want + 8 + 15) & ~(size_t)15) - 8 - V8_SHADOW_HEAD;
}

struct v8_shadow *v8_shadow_attrs_grow(struct v8_shadow *s, size_t cap) {
    if (!v8_small(s)) {
        unsigned char *b = realloc(s->attrs, cap);
        if (!b) return NULL;
        s->attrs = b;
        return s;
    }
    cap = small_room(s->attrs_room, cap);
    if (cap > 0xFFFF) return NULL;
    struct v8_shadow *t = malloc(V8_SHADOW_HEAD + cap);
    if (!t) return NULL;
    memcpy(t, s, V8_SHADOW_HEAD + s->attrs_len);
    t->attrs_room = (uint16_t)cap; /* more than the slot's: no longer in a slab */
    size_t i = nslots ? find(s->desc) : 0;
    if (nslots && table[i].s == s) table[i].s = t;
    shadow_free(s);
    return t;
}

/* shadow_new makes the shadow of a new descriptor (v8_mu held). */
static struct v8_shadow *shadow_new(void *desc, int type) {
    int small = v8_small_type(type);
    struct v8_shadow *s = small ? v8_slab_alloc() : calloc(1, shadow_size(type));
    if (!s) return NULL;
    if (small) s->attrs_room = V8_SLOT - V8_SHADOW_HEAD;
    s->desc = desc;
    s->type = (uint8_t)type;
    s->stored = -1;
    if (type == CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR) s->heur_mode = -1;
    return s;
}

/* drop_at forgets the shadow in slot i (v8_mu held), dropping its graph
 * reference; the table may shrink. */
static void drop_at(size_t i) {
    struct v8_shadow *s = table[i].s;
    take(i);
    live--;
    if (is_word(s)) goto shrink;
    if (s->type == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR) {
        v8_unwatch(s);
        v8_shadow_plan_leave(s);
    }
    if (s->type == CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR) v8_heur_plan_free(s->heur_plan);
    if (!v8_small(s)) {
        if (s->g) v8_graph_unref(s->g);
        free(s->attrs);
    }
    shadow_free(s);
shrink:
    if (nslots > MIN_SLOTS && (size_t)live * 8 < nslots) resize(nslots / 2);
}

/* What room keeps of what desc had: nothing, a word, or a shadow of the
 * type it is given (>= 0). */
enum { KEEP_NONE = -2, KEEP_WORD = -1 };

/* room is the empty slot for desc, the table grown first if it is due
 * (v8_mu held), or SIZE_MAX: past the bound, or no memory. Whatever desc
 * had (cuDNN reused an address we did not see freed) is forgotten, but
 * for what keep says (its slot returned, the entry in *kept). */
static size_t room(void *desc, int keep, struct v8_shadow **kept) {
    *kept = NULL;
    if (!desc) return SIZE_MAX;
    if (live < MAX_LIVE && (size_t)live * 4 >= nslots * 3) resize(nslots ? 2 * nslots : MIN_SLOTS);
    if (!nslots) return SIZE_MAX; /* no memory for a table */
    size_t i = find(desc);
    struct v8_shadow *s = table[i].s;
    if (s) {
        if (keep == KEEP_WORD ? is_word(s) : !is_word(s) && s->type == keep) {
            *kept = s;
            return i;
        }
        drop_at(i);
        i = find(desc);
    }
    if (live >= MAX_LIVE || (size_t)live * 4 >= nslots * 3) return SIZE_MAX; /* past the bound, or no memory to grow */
    return i;
}

/* put_at fills empty slot i with desc and s (v8_mu held). */
static void put_at(size_t i, void *desc, struct v8_shadow *s) {
    table[i].desc = desc;
    table[i].s = s;
    last.desc = desc, last.i = i; /* the host's sets and finalize come next */
    live++;
}

/* add makes desc's shadow of type (v8_mu held); keep: one it has of that
 * type already is kept and returned. */
static struct v8_shadow *add(void *desc, int type, int keep) {
    struct v8_shadow *had;
    size_t i = room(desc, keep ? type : KEEP_NONE, &had);
    if (had || i == SIZE_MAX) return had;
    struct v8_shadow *s = shadow_new(desc, type);
    if (s) put_at(i, desc, s);
    return s;
}

int v8_shadow_set_word(void *desc, uint64_t w) {
    struct v8_shadow *had;
    size_t i = (w & 1) ? room(desc, KEEP_WORD, &had) : SIZE_MAX;
    if (i == SIZE_MAX) return 0;
    if (had) table[i].s = (struct v8_shadow *)(uintptr_t)w;
    else put_at(i, desc, (struct v8_shadow *)(uintptr_t)w);
    return 1;
}

void v8_shadow_add(void *desc, int type) { (void)add(desc, type, 0); }

struct v8_shadow *v8_shadow_get_or_add(void *desc, int type) { return add(desc, type, 1); }

void v8_shadow_drop(const void *desc) {
    if (!desc || !nslots) return;
    size_t i = find(desc);
    if (table[i].s) drop_at(i);
}

void v8_shadow_plan_join(struct v8_shadow *p) {
    struct v8_graph *g = p->g;
    if (!g || p->gprev) return;
    p->gnext = g->plan_list;
    if (p->gnext) p->gnext->gprev = &p->gnext;
    p->gprev = &g->plan_list;
    g->plan_list = p;
}

void v8_shadow_plan_leave(struct v8_shadow *p) {
    if (!p->gprev) return;
    *p->gprev = p->gnext;
    if (p->gnext) p->gnext->gprev = p->gprev;
    p->gnext = NULL;
    p->gprev = NULL;
}
