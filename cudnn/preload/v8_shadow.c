/*
 * The shadows: what the interposer knows of each live backend descriptor
 * of the types it tracks, in a hash table keyed by the descriptor's
 * address. A shadow is made when the host creates a descriptor, filled as
 * the host sets attributes (v8_key.c), and freed when the host destroys it,
 * so the table holds no more than the host holds alive, and never more
 * than MAX_LIVE shadows (past that, new descriptors are not tracked and
 * graphs made of them pass through).
 *
 * One mutex (v8_mu) guards the table and every graph: the calls that take
 * it (create, set, finalize, destroy, heuristics, and executes while a
 * benchmark is watched) are not the hot path, which is an execute with
 * nothing watched (v8_calls.c), and it is never held across a call into
 * cuDNN.
 */
#include <stdlib.h>
#include <string.h>

#include "v8.h"

#define BUCKETS 4096
#define MAX_LIVE (1 << 20)

pthread_mutex_t v8_mu = PTHREAD_MUTEX_INITIALIZER;
static struct v8_shadow *table[BUCKETS];
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

static size_t bucket(const void *p) {
    uintptr_t v = (uintptr_t)p;
    v ^= v >> 17;
    v *= 0x9E3779B97F4A7C15ull;
    return (size_t)(v >> 52) % BUCKETS;
}

struct v8_shadow *v8_shadow_get(const void *desc) {
    if (!desc) return NULL;
    for (struct v8_shadow *s = table[bucket(desc)]; s; s = s->next)
        if (s->desc == desc) return s;
    return NULL;
}

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
        return 1;
    }
    return 0;
}

void v8_shadow_add(void *desc, int type) {
    if (!desc || live >= MAX_LIVE) return;
    /* cuDNN reused an address we did not see freed: forget the old one. */
    v8_shadow_drop(desc);
    struct v8_shadow *s = calloc(1, sizeof *s);
    if (!s) return;
    s->desc = desc;
    s->type = type;
    s->stored = -1;
    s->heur_mode = -1;
    size_t b = bucket(desc);
    s->next = table[b];
    table[b] = s;
    live++;
}

void v8_shadow_drop(const void *desc) {
    if (!desc) return;
    for (struct v8_shadow **p = &table[bucket(desc)]; *p; p = &(*p)->next) {
        struct v8_shadow *s = *p;
        if (s->desc != desc) continue;
        *p = s->next;
        live--;
        if (s->g) v8_graph_unref(s->g);
        v8_heur_plan_free(s->heur_plan);
        free(s->attrs);
        free(s);
        return;
    }
}

struct v8_shadow *v8_shadow_plan_of(const struct v8_graph *g, const void *except) {
    for (size_t b = 0; b < BUCKETS; b++)
        for (struct v8_shadow *s = table[b]; s; s = s->next)
            if (s->g == g && s->desc != except && s->finalized && s->type == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR)
                return s;
    return NULL;
}
