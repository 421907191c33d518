/*
 * v8_host.h - what the interposer's thread and fork tests share
 * (tests/preload/v8_stress.c, tests/preload/v8_fork.c): hosts of one
 * convolution through cuDNN's backend API, linked to the stand-in cuDNN as
 * libtorch_cuda is (so that the interposer sees every call), the
 * interposer's counters, and whether another thread of the process sleeps.
 * Header-only (static functions).
 */
#ifndef CONVCACHE_V8_HOST_H
#define CONVCACHE_V8_HOST_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "conv_graph.h"
#include "preload_stats.h"
#include "standin_backend.h"
#include "standin_runtime.h"

#define VH_MAX_CFGS 64
#define VH_WS_BYTES (1 << 22)


/* The shape the tests learn first, and one no run ever stores. */
static const struct cg_conv vh_known = {CG_FWD, 2, 8, 16, 16, 8, 3, 3, 1, 1};
static const struct cg_conv vh_new = {CG_FWD, 1, 4, 12, 12, 16, 1, 1, 0, 1};

static struct cg_api A;

/* VH_CHECK counts a failed check in fails and says what failed, prefixed
 * with the program's name; the program goes on (threads may wait on it). */
static int fails;
#define VH_CHECK(prog, cond, ...)                            \
    do {                                                     \
        if (!(cond)) {                                       \
            fprintf(stderr, prog ": " __VA_ARGS__);          \
            fputc('\n', stderr);                             \
            __atomic_add_fetch(&fails, 1, __ATOMIC_RELAXED); \
        }                                                    \
    } while (0)

/* vh_init binds the functions as the dynamic linker binds libtorch_cuda's:
 * an LD_PRELOAD library's come first. */
static void vh_init(void) {
    A = (struct cg_api){cudnnGetVersion, cudnnCreate, cudnnDestroy, cudnnBackendCreateDescriptor,
                        cudnnBackendDestroyDescriptor, cudnnBackendFinalize, cudnnBackendSetAttribute,
                        cudnnBackendGetAttribute, cudnnBackendExecute};
    cuInit(0);
}

/* One thread's buffers and handle: threads that run one plan together
 * each write their own output. */
struct vh_io {
    cudnnHandle_t handle;
    unsigned char *x, *w, *y, *ws;
    size_t yb;
};

static int vh_io_open(struct vh_io *io, const struct cg_conv *cv) {
    size_t xb, wb;
    memset(io, 0, sizeof *io);
    cg_bytes(cv, &xb, &wb, &io->yb);
    io->x = malloc(xb), io->w = malloc(wb), io->y = malloc(io->yb), io->ws = malloc(VH_WS_BYTES);
    if (!io->x || !io->w || !io->y || !io->ws) return -1;
    for (size_t k = 0; k < xb; k++) io->x[k] = (unsigned char)(k * 7);
    for (size_t k = 0; k < wb; k++) io->w[k] = (unsigned char)(k * 13);
    if (cudnnCreate(&io->handle) != CUDNN_STATUS_SUCCESS) return -1;
    cudnnSetStream(io->handle, standin_cuda_stream(0));
    return 0;
}

static void vh_io_close(struct vh_io *io) {
    if (io->handle) cudnnDestroy(io->handle);
    free(io->x), free(io->w), free(io->y), free(io->ws);
    memset(io, 0, sizeof *io);
}

static uint64_t vh_checksum(const unsigned char *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

/* vh_run executes plan with io's buffers; *sum: the output's checksum. */
static cudnnStatus_t vh_run(struct vh_io *io, cudnnBackendDescriptor_t plan, uint64_t *sum) {
    memset(io->y, 0, io->yb);
    cudnnStatus_t st = cg_execute(&A, io->handle, plan, io->x, io->w, io->y, io->ws);
    *sum = st == CUDNN_STATUS_SUCCESS ? vh_checksum(io->y, io->yb) : 0;
    return st;
}

/* One host: a graph of one shape, its engine configs (heuristics results,
 * the interposer's stored choice first) and the plans built of them. */
struct vh_host {
    struct vh_io io;
    struct cg_graph g;
    cudnnBackendDescriptor_t cfg[VH_MAX_CFGS], plan[VH_MAX_CFGS];
    int ncfg;
};

/* vh_open builds cv's graph and reads its heuristics (at least 3 configs). */
static int vh_open(struct vh_host *h, const struct cg_conv *cv) {
    memset(h, 0, sizeof *h);
    if (vh_io_open(&h->io, cv) != 0) return -1;
    if (cg_build(&A, h->io.handle, cv, &h->g) != CUDNN_STATUS_SUCCESS) return -1;
    if (cg_heuristics(&A, h->g.graph, CUDNN_HEUR_MODE_INSTANT, h->cfg, VH_MAX_CFGS, &h->ncfg) !=
        CUDNN_STATUS_SUCCESS)
        return -1;
    return h->ncfg >= 3 ? 0 : -1;
}

static cudnnStatus_t vh_build(struct vh_host *h, int i) { return cg_plan(&A, h->io.handle, h->cfg[i], &h->plan[i]); }

static void vh_drop(struct vh_host *h, int i) {
    if (h->plan[i]) A.destroy(h->plan[i]);
    h->plan[i] = NULL;
}

static void vh_close(struct vh_host *h) {
    for (int i = 0; i < VH_MAX_CFGS; i++) vh_drop(h, i);
    for (int i = 0; i < h->ncfg; i++)
        if (h->cfg[i]) A.destroy(h->cfg[i]);
    cg_graph_free(&A, &h->g);
    vh_io_close(&h->io);
}

/* vh_stats reads the interposer's counters: 0, or -1 without it. */
static int vh_stats(struct convcache_preload_stats *s) {
    int (*stats)(struct convcache_preload_stats *, size_t) =
        (int (*)(struct convcache_preload_stats *, size_t))dlsym(RTLD_DEFAULT, "convcache_preload_stats");
    memset(s, 0, sizeof *s);
    return stats && stats(s, sizeof *s) == 0 ? 0 : -1;
}

/* The plans cuDNN (the stand-in) has finalized so far. */
static unsigned long long vh_built(void) {
    struct standin_backend_stats s;
    standin_backend_get_stats(&s);
    return s.plans;
}

static pid_t vh_tid(void) { return (pid_t)syscall(SYS_gettid); }

/* vh_sleeping reports whether thread tid of this process is blocked (state
 * S in /proc: a futex wait, here). */
static int vh_sleeping(pid_t tid) {
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char *got = fgets(line, sizeof line, f);
    fclose(f);
    const char *paren = got ? strrchr(line, ')') : NULL;
    return paren && paren[1] == ' ' && paren[2] == 'S';
}

static void vh_nap_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* vh_await_sleep waits, at most limit_ms, until thread tid is seen blocked
 * twice in a row, 5 ms apart; reports whether it was. */
static int vh_await_sleep(pid_t tid, long limit_ms) {
    for (long t = 0; t < limit_ms; t += 5) {
        if (vh_sleeping(tid)) {
            vh_nap_ms(5);
            if (vh_sleeping(tid)) return 1;
        }
        vh_nap_ms(5);
    }
    return 0;
}

#endif
