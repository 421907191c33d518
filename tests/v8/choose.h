/*
 * What a caller of the engine-choice record does, in C (the v8 tests use
 * it): look the problem up in convcache; rebuild the plan from a stored
 * choice; when there is none, or it cannot be rebuilt here, benchmark every
 * heuristic engine config (single flight across threads and processes:
 * convcache_get_or_create) and store the fastest one's choice.
 */
#ifndef CONVCACHE_TEST_CHOOSE_H
#define CONVCACHE_TEST_CHOOSE_H

#include <pthread.h>
#include <time.h>

#include "../check.h"
#include "conv_graph.h"
#include "convcache_engine.h"

/* A problem's key in the cache. */
struct choose_key {
    char tag[8]; /* "v8test\0" */
    struct cg_conv conv;
};

struct chooser {
    const struct cg_api *api;
    cudnnHandle_t handle;
    convcache_handle *cache;
    int benchmarks; /* run by this chooser */
};

static double choose_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Buffers for one problem, host memory (the stand-in runs on the CPU). */
struct bufs {
    void *x, *w, *y, *ws;
};

static void bufs_alloc(const struct cg_conv *cv, struct bufs *b, size_t ws) {
    size_t xb, wb, yb;
    cg_bytes(cv, &xb, &wb, &yb);
    b->x = calloc(1, xb);
    b->w = calloc(1, wb);
    b->y = calloc(1, yb);
    b->ws = calloc(1, ws ? ws : 1);
    CHECK(b->x && b->w && b->y && b->ws);
    for (size_t i = 0; i < xb; i++) ((unsigned char *)b->x)[i] = (unsigned char)(i * 31 + 7);
    for (size_t i = 0; i < wb; i++) ((unsigned char *)b->w)[i] = (unsigned char)(i * 17 + 3);
    for (size_t i = 0; i < yb; i++) ((unsigned char *)b->y)[i] = (unsigned char)(i * 13 + 5);
}

static void bufs_free(struct bufs *b) {
    free(b->x), free(b->w), free(b->y), free(b->ws);
}

struct bench_ctx {
    struct chooser *ch;
    cudnnBackendDescriptor_t graph;
    const struct cg_conv *conv;
};

/* benchmark: time every heuristic config (median of 3), record the fastest. */
static int benchmark(void *user, const void *key, size_t key_len, void *value, size_t cap, size_t *len) {
    (void)key, (void)key_len;
    struct bench_ctx *b = user;
    const struct cg_api *a = b->ch->api;
    cudnnBackendDescriptor_t cfgs[16];
    int n = 0;
    if (cap < sizeof(convcache_engine_choice) ||
        cg_heuristics(a, b->graph, CUDNN_HEUR_MODE_INSTANT, cfgs, 16, &n) != CUDNN_STATUS_SUCCESS || n == 0)
        return CONVCACHE_E_USER - 1;
    __atomic_fetch_add(&b->ch->benchmarks, 1, __ATOMIC_RELAXED);
    double best = 1e300;
    convcache_engine_choice win;
    memset(&win, 0, sizeof win);
    for (int i = 0; i < n; i++) {
        cudnnBackendDescriptor_t plan;
        if (cg_plan(a, b->ch->handle, cfgs[i], &plan) != CUDNN_STATUS_SUCCESS) continue;
        struct bufs buf;
        bufs_alloc(b->conv, &buf, (size_t)cg_workspace(a, plan));
        double t[3];
        for (int r = 0; r < 3; r++) {
            double t0 = choose_now_ms();
            CHECK(cg_execute(a, b->ch->handle, plan, buf.x, buf.w, buf.y, buf.ws) == CUDNN_STATUS_SUCCESS);
            t[r] = choose_now_ms() - t0;
        }
        double med = t[0] > t[1] ? (t[1] > t[2] ? t[1] : t[0] > t[2] ? t[2] : t[0])
                                 : (t[0] > t[2] ? t[0] : t[1] > t[2] ? t[2] : t[1]);
        if (med < best && convcache_engine_from_plan(plan, &win, NULL) == 0) best = med;
        bufs_free(&buf);
        a->destroy(plan);
    }
    for (int i = 0; i < n; i++) a->destroy(cfgs[i]);
    if (best == 1e300) return CONVCACHE_E_USER - 2;
    memcpy(value, &win, sizeof win);
    *len = sizeof win;
    return 0;
}

/* choose returns a plan for cv (graph: its finalized graph) and sets
 * *rebuilt_from_cache. A stored choice that cannot be rebuilt here is
 * benchmarked again and replaced. */
static convcache_engine_plan *choose(struct chooser *ch, const struct cg_conv *cv,
                                     cudnnBackendDescriptor_t graph, int *rebuilt_from_cache) {
    struct choose_key k;
    memset(&k, 0, sizeof k);
    memcpy(k.tag, "v8test", 7);
    k.conv = *cv;
    struct bench_ctx ctx = {ch, graph, cv};
    convcache_engine_choice c;
    size_t len = 0;
    *rebuilt_from_cache = 0;
    int rc = convcache_get_or_create(ch->cache, &k, sizeof k, benchmark, &ctx, &c, sizeof c, &len);
    CHECK(rc == CONVCACHE_HIT || rc == CONVCACHE_OK);
    convcache_engine_plan *p = NULL;
    int erc = convcache_engine_build_plan(&c, ch->handle, graph, &p, NULL);
    if (erc == CONVCACHE_ENGINE_OK) {
        *rebuilt_from_cache = rc == CONVCACHE_HIT;
        return p;
    }
    /* Stale or bad: benchmark again and replace the entry. */
    CHECK(benchmark(&ctx, &k, sizeof k, &c, sizeof c, &len) == 0);
    CHECK(convcache_insert(ch->cache, &k, sizeof k, &c, sizeof c) >= 0);
    CHECK(convcache_engine_build_plan(&c, ch->handle, graph, &p, NULL) == CONVCACHE_ENGINE_OK);
    return p;
}

#endif
