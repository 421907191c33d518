/*
 * The shadows: what the interposer knows of each live backend descriptor
 * of the types it tracks, in a hash table keyed by the descriptor's
 * address. A shadow is made when the host creates a descriptor, filled as
 * the host sets attributes (v8_key.c), and freed when the host destroys it,
 * so the table holds no more than the host holds alive, and never more
 * than MAX_LIVE shadows (past that, new descriptors are not tracked and
 * graphs made of them pass through).
 *
 * The table grows with the live shadows (a chain is one long on average,
 * whatever the host keeps alive) and shrinks when most are gone. A tensor's
 * shadow is the common part of struct v8_shadow only (40 bytes, and its
 * encoded attributes); graphs, heuristics, configs and plans carry their
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

#include "v8.h"

#define MIN_BUCKETS 4096
#define MAX_LIVE (1 << 21)

pthread_mutex_t v8_mu = PTHREAD_MUTEX_INITIALIZER;
static struct v8_shadow **table;
static size_t nbuckets; /* a power of two, or 0 before the first shadow */
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

static size_t bucket(const void *p, size_t n) {
    uint64_t v = (uint64_t)(uintptr_t)p;
    v ^= v >> 17;
    v *= 0x9E3779B97F4A7C15ull;
    return (size_t)(v >> 32) & (n - 1);
}

/* resize moves every shadow to a table of n buckets; on no memory the
 * table stays as it is (longer chains, nothing lost). */
static void resize(size_t n) {
    struct v8_shadow **t = calloc(n, sizeof *t);
    if (!t) return;
    for (size_t b = 0; b < nbuckets; b++) {
        struct v8_shadow *s = table[b];
        while (s) {
            struct v8_shadow *next = s->next;
            size_t i = bucket(s->desc, n);
            s->next = t[i];
            t[i] = s;
            s = next;
        }
    }
    free(table);
    table = t;
    nbuckets = n;
}

struct v8_shadow *v8_shadow_get(const void *desc) {
    if (!desc || !nbuckets) return NULL;
    for (struct v8_shadow *s = table[bucket(desc, nbuckets)]; s; s = s->next)
        if (s->desc == desc) return s;
    return NULL;
}

struct v8_shadow *v8_shadow_typed(const void *desc, int type) {
    struct v8_shadow *s = v8_shadow_get(desc);
    return s && s->type == type ? s : NULL;
}

long v8_shadow_live(void) { return live; }

int v8_shadow_tracked_type(int type) {
    switch (type) {
    case CUDNN_BACKEND_TENSOR_DESCRIPTOR:
    case CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
    case CUDNN_BACKEND_ENGINE_DESCRIPTOR:
    case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR:
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
        return type >= 0 && type <= 0xFF;
    }
    return 0;
}

/* shadow_size is what a shadow of type needs: the common part, and the
 * typed part for the types that have one. */
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

void v8_shadow_add(void *desc, int type) {
    if (!desc || live >= MAX_LIVE) return;
    /* cuDNN reused an address we did not see freed: forget the old one. */
    v8_shadow_drop(desc);
    if ((size_t)live >= nbuckets) resize(nbuckets ? 2 * nbuckets : MIN_BUCKETS);
    if (!nbuckets) return;
    size_t size = shadow_size(type);
    struct v8_shadow *s = calloc(1, size);
    if (!s) return;
    s->desc = desc;
    s->type = (uint8_t)type;
    s->stored = -1;
    if (type == CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR) s->heur_mode = -1;
    size_t b = bucket(desc, nbuckets);
    s->next = table[b];
    table[b] = s;
    live++;
}

void v8_shadow_drop(const void *desc) {
    if (!desc || !nbuckets) return;
    for (struct v8_shadow **p = &table[bucket(desc, nbuckets)]; *p; p = &(*p)->next) {
        struct v8_shadow *s = *p;
        if (s->desc != desc) continue;
        *p = s->next;
        live--;
        if (s->type == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR) {
            v8_unwatch(s);
            v8_shadow_plan_leave(s);
        }
        if (s->type == CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR) v8_heur_plan_free(s->heur_plan);
        if (s->g) v8_graph_unref(s->g);
        free(s->attrs);
        free(s);
        if (nbuckets > MIN_BUCKETS && (size_t)live < nbuckets / 8) resize(nbuckets / 2);
        return;
    }
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
