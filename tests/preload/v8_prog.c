/*
 * v8_prog: a program that benchmarks convolutions through cuDNN's backend
 * API the way PyTorch's default path does (heuristics and the fallback
 * list, a plan for every config, a warm-up and one timed execute per plan
 * up to a limit, then the fastest plan that runs), calling the stand-in
 * libcudnn.so.9 through ordinary dynamic linking, as libtorch_cuda does, so
 * that the LD_PRELOAD interposer sees every call. The C twin of the
 * real-frontend program (tests/v8fe), small enough to read in one go.
 *
 *   v8_prog [--threads N] [--limit N] [--workspace-limit BYTES]
 *           [--iterations N] [--fork] REPORT
 *
 * --fork: then a forked child (as a DataLoader worker is) benchmarks every
 * shape again with a handle of its own; the process fails if it does not
 * finish, or its outputs differ from what its plans give in the parent.
 *
 * REPORT gets one line per thread and shape:
 *   thread=<t> shape=<i> built=<plans finalized> timed=<plans whose warm-up ran>
 *   plan=<engine and knobs of the plan kept> sum=<checksum of the output>
 *   ws=<its workspace, bytes> choose_ms=<from building the graph to the plan kept, ms>
 * and the process exits 1 when a shape ends with no plan that runs, as
 * PyTorch raises.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "conv_graph.h"
#include "convcache_engine.h"
#include "standin_runtime.h"

static const struct cg_conv shapes[] = {
    {CG_FWD, 2, 8, 16, 16, 8, 3, 3, 1, 1},
    {CG_BWD_DATA, 2, 8, 16, 16, 8, 3, 3, 1, 1},
    {CG_BWD_FILTER, 2, 8, 16, 16, 8, 3, 3, 1, 1},
    {CG_FWD, 1, 4, 12, 12, 16, 1, 1, 0, 1},
    {CG_FWD, 1, 16, 9, 9, 4, 3, 3, 1, 2},
};
#define N_SHAPES ((int)(sizeof shapes / sizeof shapes[0]))
#define MAX_CFGS 64

static struct cg_api A;
static int limit = 10, iterations = 3, threads = 1;
static int64_t ws_limit = -1;
static FILE *report;
static pthread_mutex_t report_mu = PTHREAD_MUTEX_INITIALIZER;
static int failed, fork_too;

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static uint64_t checksum(const unsigned char *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

struct timed {
    cudnnBackendDescriptor_t plan;
    double ms;
};

static int by_time(const void *a, const void *b) {
    double x = ((const struct timed *)a)->ms, y = ((const struct timed *)b)->ms;
    return x < y ? -1 : x > y;
}

/* run_shape benchmarks one shape as PyTorch does, then runs the winner
 * `iterations` times more (the warm path: only executes). */
static void run_shape(cudnnHandle_t handle, int tid, int i) {
    const struct cg_conv *cv = &shapes[i];
    size_t xb, wb, yb;
    cg_bytes(cv, &xb, &wb, &yb);
    unsigned char *x = malloc(xb), *w = malloc(wb), *y = malloc(yb);
    for (size_t k = 0; k < xb; k++) x[k] = (unsigned char)(k * 7 + i);
    for (size_t k = 0; k < wb; k++) w[k] = (unsigned char)(k * 13 + i);
    for (size_t k = 0; k < yb; k++) y[k] = (unsigned char)(k * 5 + i);
    /* The operation's output: y, dx or dw. */
    unsigned char *o = cv->op == CG_FWD ? y : cv->op == CG_BWD_DATA ? x : w;
    size_t ob = cv->op == CG_FWD ? yb : cv->op == CG_BWD_DATA ? xb : wb;
    struct cg_graph g;
    cudnnBackendDescriptor_t cfgs[2 * MAX_CFGS], plans[2 * MAX_CFGS];
    int n1 = 0, n2 = 0, nplans = 0, built = 0, ntimed = 0;
    struct timed timed[2 * MAX_CFGS];
    cudnnBackendDescriptor_t chosen = NULL;
    void *ws = NULL;
    cudaEvent_t ev[2];
    cudaEventCreate(&ev[0]);
    cudaEventCreate(&ev[1]);
    double t_start = now_ms();
    if (cg_build(&A, handle, cv, &g) != CUDNN_STATUS_SUCCESS) goto fail;
    cg_heuristics(&A, g.graph, CUDNN_HEUR_MODE_INSTANT, cfgs, MAX_CFGS, &n1);
    cg_heuristics(&A, g.graph, CUDNN_HEUR_MODE_FALLBACK, cfgs + n1, MAX_CFGS, &n2);
    /* A plan for every config; those that do not finalize are skipped. */
    int64_t max_ws = 0;
    for (int k = 0; k < n1 + n2; k++) {
        cudnnBackendDescriptor_t p;
        if (cg_plan(&A, handle, cfgs[k], &p) != CUDNN_STATUS_SUCCESS) continue;
        built++;
        int64_t need = cg_workspace(&A, p);
        if (ws_limit >= 0 && need > ws_limit) { /* what the allocator cannot give */
            A.destroy(p);
            continue;
        }
        if (need > max_ws) max_ws = need;
        plans[nplans++] = p;
    }
    ws = malloc(max_ws > 0 ? (size_t)max_ws : 1);
    /* Timing: a warm-up and one timed execute per plan, up to the limit;
     * a plan whose warm-up fails is skipped and does not count. */
    for (int k = 0; k < nplans; k++) {
        if (ntimed >= limit) {
            A.destroy(plans[k]);
            continue;
        }
        if (cg_execute(&A, handle, plans[k], x, w, y, ws) != CUDNN_STATUS_SUCCESS) {
            A.destroy(plans[k]);
            continue;
        }
        float ms = 0;
        cudaEventRecord(ev[0], standin_cuda_stream(0));
        cg_execute(&A, handle, plans[k], x, w, y, ws);
        cudaEventRecord(ev[1], standin_cuda_stream(0));
        cudaEventSynchronize(ev[1]);
        cudaEventElapsedTime(&ms, ev[0], ev[1]);
        timed[ntimed].plan = plans[k];
        timed[ntimed++].ms = ms;
    }
    cg_graph_free(&A, &g); /* the graph goes before the choice is used */
    qsort(timed, (size_t)ntimed, sizeof timed[0], by_time);
    for (int k = 0; k < ntimed && !chosen; k++) {
        memset(o, 0, ob);
        if (cg_execute(&A, handle, timed[k].plan, x, w, y, ws) == CUDNN_STATUS_SUCCESS) chosen = timed[k].plan;
    }
    for (int k = 0; k < ntimed; k++)
        if (timed[k].plan != chosen) A.destroy(timed[k].plan);
    for (int k = 0; k < n1 + n2; k++) A.destroy(cfgs[k]);
    if (!chosen) goto fail;
    double choose_ms = now_ms() - t_start;
    for (int it = 0; it < iterations; it++) {
        memset(o, 0, ob);
        if (cg_execute(&A, handle, chosen, x, w, y, ws) != CUDNN_STATUS_SUCCESS) goto fail;
    }
    convcache_engine_choice c;
    char tag[512] = "?";
    long long chosen_ws = -1;
    if (convcache_engine_from_plan(chosen, &c, NULL) == CONVCACHE_ENGINE_OK) {
        chosen_ws = (long long)c.workspace;
        convcache_engine_format(&c, tag, sizeof tag);
        char *sp = strchr(tag, ' '); /* the workspace is not the plan's identity */
        if (sp) *sp = 0;
    }
    pthread_mutex_lock(&report_mu);
    fprintf(report, "thread=%d shape=%d built=%d timed=%d plan=%s sum=%016llx ws=%lld choose_ms=%.3f\n", tid, i,
            built, ntimed, tag, (unsigned long long)checksum(o, ob), chosen_ws, choose_ms);
    pthread_mutex_unlock(&report_mu);
    A.destroy(chosen);
    cudaEventDestroy(ev[0]);
    cudaEventDestroy(ev[1]);
    free(x), free(w), free(y), free(ws);
    return;
fail:
    fprintf(stderr, "v8_prog: shape %d: no engine could run this convolution\n", i);
    __atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
    cudaEventDestroy(ev[0]);
    cudaEventDestroy(ev[1]);
    free(x), free(w), free(y), free(ws);
}

static void *worker(void *arg) {
    int tid = (int)(intptr_t)arg;
    cudnnHandle_t h;
    if (cudnnCreate(&h) != CUDNN_STATUS_SUCCESS) {
        fprintf(stderr, "v8_prog: cudnnCreate failed\n");
        __atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    cudnnSetStream(h, standin_cuda_stream(0));
    for (int i = 0; i < N_SHAPES; i++) run_shape(h, tid, i);
    cudnnDestroy(h);
    return NULL;
}

int main(int argc, char **argv) {
    const char *out = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--fork")) fork_too = 1;
        else if (!strcmp(argv[i], "--limit") && i + 1 < argc) limit = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--iterations") && i + 1 < argc) iterations = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--workspace-limit") && i + 1 < argc) ws_limit = atoll(argv[++i]);
        else out = argv[i];
    }
    if (!out || threads < 1 || threads > 64 || limit < 1) {
        fprintf(stderr, "usage: v8_prog [--threads N] [--limit N] [--workspace-limit BYTES] "
                        "[--iterations N] REPORT\n");
        return 2;
    }
    /* The functions as libtorch_cuda calls them: bound by the dynamic
     * linker, so an LD_PRELOAD library's come first. */
    A = (struct cg_api){cudnnGetVersion, cudnnCreate, cudnnDestroy, cudnnBackendCreateDescriptor,
                        cudnnBackendDestroyDescriptor, cudnnBackendFinalize, cudnnBackendSetAttribute,
                        cudnnBackendGetAttribute, cudnnBackendExecute};
    cuInit(0);
    report = fopen(out, "w");
    if (!report) {
        perror(out);
        return 2;
    }
    pthread_t t[64];
    for (int i = 0; i < threads; i++) pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    if (fork_too && !failed) {
        fflush(report);
        pid_t pid = fork();
        if (pid == 0) { /* the child's lines go to the same report, thread 99 */
            worker((void *)(intptr_t)99);
            fflush(report);
            _exit(failed);
        }
        int st = 0;
        if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "v8_prog: the forked child failed (status %d)\n", st);
            failed = 1;
        }
    }
    fclose(report);
    return failed;
}
