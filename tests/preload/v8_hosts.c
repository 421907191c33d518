/*
 * v8_hosts: hosts of cuDNN's backend API that do not follow PyTorch's
 * exact sequence, against the stand-in cuDNN, linked to it as
 * libtorch_cuda is (so that the interposer sees every call). Each case
 * writes a transcript: one line per call whose answer the host reads,
 *
 *   <step> <plan index> <status> [sum=<output checksum>] [ws=<bytes>] [timing]
 *
 * where "timing" marks the first execute of a plan while the host times
 * plans: the one place the interposer may answer NOT_SUPPORTED where cuDNN
 * would not. tests/preload/v8_hosts.sh compares the transcript of a run
 * served by the interposer with one of a run without it, line by line.
 *
 *   v8_hosts [--first TAG] [--pick TAG] [--dir DIR] CASE REPORT
 *
 * --first TAG puts the engine config that reads as TAG first among the
 * heuristics results, as the interposer does with a stored choice (so a
 * run without the interposer builds the same plans in the same order).
 * --pick TAG: after timing, the host runs the plan of the config that
 * reads as TAG (its own rule), not the fastest: what it learns does not
 * hang on timing.
 * CASE:
 *   learn      PyTorch's sequence (every plan built and timed, the others
 *              destroyed, the fastest run); reports chosen=TAG and timed=N
 *   deferred   plans 0, 1, 2 built; 0 run, 1 run (timing); 0 and 1
 *              destroyed; then 2's workspace read and 2 run, twice
 *   keep       plans 0, 1, 2 built; 0 run twice; 0 destroyed; 1 and 2 run
 *   keepall    every plan built and kept; timed; the first that ran run, and run
 *              again, then every other plan run once (after timing:
 *              nothing may be refused); reports looked=N, the executes of
 *              the chosen plan after its first run in earnest that the
 *              interposer looked at (convcache_preload_stats; 0 without it)
 *   ddestroy   plans 0 and 1 built; 1's engine config destroyed twice and
 *              set; 0 run, 1 run (timing), 1 run again
 *   final-fails  PyTorch's sequence, whose run of the chosen plan after
 *              timing fails (no handle: as a workspace the host could not
 *              get would)
 *   stall-lead, stall-follow  two hosts on one new graph (processes, or
 *              threads with "stall-threads"): the leader builds its plans,
 *              then waits (at most 60 s) for the follower to finish before
 *              it times them; the follower starts once the leader has built
 *              and runs PyTorch's sequence. The leader reports
 *              follower_done_first=yes when the follower was not held.
 *
 * Environment: V8_HOSTS_TAKE (case "fewer": how many heuristics results
 * the host asks for), V8_HOSTS_ALIGN (every tensor's byte alignment, 16 by
 * default), V8_HOSTS_LEAF_EXTRA=1 (the x tensor is also given an attribute
 * the interposer neither reads back nor keeps: a ragged offset multiplier).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "conv_graph.h"
#include "convcache_engine.h"
#include "engine.h"
#include "preload_stats.h"
#include "standin_runtime.h"

#define MAX_CFGS 64

static const struct cg_conv shape = {CG_FWD, 2, 8, 16, 16, 8, 3, 3, 1, 1};
static struct cg_api A;
static const char *first_tag, *pick_tag, *dir;
static pthread_mutex_t report_mu = PTHREAD_MUTEX_INITIALIZER;
static FILE *report;

/* One host: its handle, buffers, graph and engine configs. */
struct host {
    cudnnHandle_t handle;
    unsigned char *x, *w, *y, *ws;
    size_t yb;
    struct cg_graph g;
    cudnnBackendDescriptor_t cfg[MAX_CFGS];
    int ncfg;
    const char *who;
};

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&report_mu);
    vfprintf(report, fmt, ap);
    fputc('\n', report);
    fflush(report);
    pthread_mutex_unlock(&report_mu);
    va_end(ap);
}

static uint64_t checksum(const unsigned char *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

/* tag_of formats a choice as its engine and knobs (no workspace). */
static void tag_of(const convcache_engine_choice *c, char *tag, size_t cap) {
    convcache_engine_format(c, tag, cap);
    char *sp = strchr(tag, ' ');
    if (sp) *sp = 0;
}

static int cfg_tag(cudnnBackendDescriptor_t cfg, char *tag, size_t cap) {
    convcache_engine_choice c;
    if (cce_config_choice(cfg, &c, NULL) != CONVCACHE_ENGINE_OK) return -1;
    tag_of(&c, tag, cap);
    return 0;
}

static int host_open(struct host *h, const char *who) {
    memset(h, 0, sizeof *h);
    h->who = who;
    size_t xb, wb;
    cg_bytes(&shape, &xb, &wb, &h->yb);
    h->x = malloc(xb), h->w = malloc(wb), h->y = malloc(h->yb), h->ws = malloc(1 << 22);
    for (size_t k = 0; k < xb; k++) h->x[k] = (unsigned char)(k * 7);
    for (size_t k = 0; k < wb; k++) h->w[k] = (unsigned char)(k * 13);
    if (cudnnCreate(&h->handle) != CUDNN_STATUS_SUCCESS) return -1;
    cudnnSetStream(h->handle, standin_cuda_stream(0));
    if (cg_build(&A, h->handle, &shape, &h->g) != CUDNN_STATUS_SUCCESS) return -1;
    /* "fewer": a host that asks heuristics for fewer results than they
     * have (V8_HOSTS_TAKE of them, 3 to MAX_CFGS). */
    const char *env = getenv("V8_HOSTS_TAKE");
    int take = env ? atoi(env) : 0;
    int cap = !strcmp(who, "fewer") && take >= 3 && take < MAX_CFGS ? take : MAX_CFGS;
    if (cg_heuristics(&A, h->g.graph, CUDNN_HEUR_MODE_INSTANT, h->cfg, cap, &h->ncfg) != CUDNN_STATUS_SUCCESS ||
        h->ncfg < 3)
        return -1;
    for (int i = 0; first_tag && i < h->ncfg; i++) {
        char tag[512];
        if (cfg_tag(h->cfg[i], tag, sizeof tag) == 0 && !strcmp(tag, first_tag)) {
            cudnnBackendDescriptor_t c = h->cfg[i];
            memmove(h->cfg + 1, h->cfg, (size_t)i * sizeof c);
            h->cfg[0] = c;
            break;
        }
    }
    return 0;
}

static void host_close(struct host *h) {
    for (int i = 0; i < h->ncfg; i++)
        if (h->cfg[i]) A.destroy(h->cfg[i]);
    cg_graph_free(&A, &h->g);
    if (h->handle) cudnnDestroy(h->handle);
    free(h->x), free(h->w), free(h->y), free(h->ws);
}

/* build finalizes a plan of config i, reporting the status. */
static cudnnBackendDescriptor_t build(struct host *h, int i) {
    cudnnBackendDescriptor_t p = NULL;
    cudnnStatus_t st = cg_plan(&A, h->handle, h->cfg[i], &p);
    say("build %d %d", i, (int)st);
    return st == CUDNN_STATUS_SUCCESS ? p : NULL;
}

/* run executes plan i (handle NULL: one that cannot run) and reports it;
 * timing marks a first execute while the host times plans. */
static cudnnStatus_t run(struct host *h, cudnnBackendDescriptor_t p, int i, int timing, int no_handle) {
    memset(h->y, 0, h->yb);
    cudnnStatus_t st = cg_execute(&A, no_handle ? NULL : h->handle, p, h->x, h->w, h->y, h->ws);
    if (st == CUDNN_STATUS_SUCCESS)
        say("run %d %d sum=%016llx%s", i, (int)st, (unsigned long long)checksum(h->y, h->yb), timing ? " timing" : "");
    else
        say("run %d %d%s", i, (int)st, timing ? " timing" : "");
    return st;
}

static void destroy(cudnnBackendDescriptor_t *p, int i, const char *what) {
    if (!*p) return;
    say("destroy-%s %d %d", what, i, (int)A.destroy(*p));
    *p = NULL;
}

/* looked reads the interposer's count of executes it looked at (0 when
 * it is not there). */
static unsigned long long looked(void) {
    int (*stats)(struct convcache_preload_stats *, size_t) =
        (int (*)(struct convcache_preload_stats *, size_t))dlsym(RTLD_DEFAULT, "convcache_preload_stats");
    struct convcache_preload_stats s;
    memset(&s, 0xFF, sizeof s); /* an interposer without the count leaves it so */
    if (!stats) return 0;
    stats(&s, sizeof s);
    return s.v8_looked_execs;
}

/* time_plans: a warm-up and a timed execute of each plan, as PyTorch's
 * timing loop; returns the fastest that ran (first: the first that ran,
 * so that a run without the interposer, which times every plan, chooses
 * as a served one does), or -1. */
static int time_plans(struct host *h, cudnnBackendDescriptor_t *plans, int n, int *ntimed, int first) {
    cudaEvent_t ev[2];
    cudaEventCreate(&ev[0]);
    cudaEventCreate(&ev[1]);
    int best = -1;
    float best_ms = 0;
    *ntimed = 0;
    for (int i = 0; i < n; i++) {
        if (!plans[i] || run(h, plans[i], i, 1, 0) != CUDNN_STATUS_SUCCESS) continue;
        float ms = 0;
        cudaEventRecord(ev[0], standin_cuda_stream(0));
        cudnnStatus_t st = cg_execute(&A, h->handle, plans[i], h->x, h->w, h->y, h->ws);
        cudaEventRecord(ev[1], standin_cuda_stream(0));
        cudaEventSynchronize(ev[1]);
        cudaEventElapsedTime(&ms, ev[0], ev[1]);
        if (st != CUDNN_STATUS_SUCCESS) continue;
        ++*ntimed;
        if (best < 0 || (!first && ms < best_ms)) best = i, best_ms = ms;
    }
    /* --pick: the host's own rule chose (not the fastest). */
    for (int i = 0; pick_tag && i < n; i++) {
        char tag[512];
        if (plans[i] && cfg_tag(h->cfg[i], tag, sizeof tag) == 0 && !strcmp(tag, pick_tag)) best = i;
    }
    cudaEventDestroy(ev[0]);
    cudaEventDestroy(ev[1]);
    return best;
}

/* pytorch: every plan built and timed, the fastest run (fail: the first
 * that ran, without a handle), the others destroyed. */
static int pytorch(struct host *h, int fail) {
    cudnnBackendDescriptor_t plans[MAX_CFGS];
    for (int i = 0; i < h->ncfg; i++) plans[i] = build(h, i);
    int ntimed, best = time_plans(h, plans, h->ncfg, &ntimed, fail);
    /* PyTorch keeps the plan it runs (its map holds it); the rest go. */
    for (int i = 0; i < h->ncfg; i++)
        if (i != best) destroy(&plans[i], i, "plan");
    int rc = best < 0 ? -1 : run(h, plans[best], best, 0, fail) == CUDNN_STATUS_SUCCESS ? 0 : -1;
    if (best >= 0) {
        convcache_engine_choice c;
        char tag[512] = "?";
        if (convcache_engine_from_plan(plans[best], &c, NULL) == CONVCACHE_ENGINE_OK) tag_of(&c, tag, sizeof tag);
        say("chosen=%s timed=%d", tag, ntimed);
        for (int k = 0; k < 3 && !fail; k++) run(h, plans[best], best, 0, 0);
        destroy(&plans[best], best, "plan");
    }
    return rc;
}

/* ---- the two hosts on one new graph ------------------------------------- */

static void touch(const char *name) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (f) fclose(f);
}

/* await waits up to limit_s for name in dir; reports whether it came. */
static int await(const char *name, int limit_s) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct timespec ten_ms = {0, 10000000};
    for (long i = 0; i < limit_s * 100L; i++) {
        if (access(path, F_OK) == 0) return 1;
        nanosleep(&ten_ms, NULL);
    }
    return 0;
}

static int stall_lead(void) {
    struct host h;
    if (host_open(&h, "lead") != 0) return 1;
    cudnnBackendDescriptor_t plans[MAX_CFGS];
    for (int i = 0; i < h.ncfg; i++) plans[i] = build(&h, i);
    touch("built");
    int first = await("followed", 60);
    say("follower_done_first=%s", first ? "yes" : "no");
    int ntimed, best = time_plans(&h, plans, h.ncfg, &ntimed, 0);
    int rc = best >= 0 && run(&h, plans[best], best, 0, 0) == CUDNN_STATUS_SUCCESS ? 0 : 1;
    for (int i = 0; i < h.ncfg; i++) destroy(&plans[i], i, "plan");
    host_close(&h);
    return rc;
}

static int stall_follow(void) {
    if (!await("built", 60)) return 1;
    struct host h;
    int rc = host_open(&h, "follow") == 0 && pytorch(&h, 0) == 0 ? 0 : 1;
    host_close(&h);
    touch("followed");
    return rc;
}

static void *lead_thread(void *rc) {
    *(int *)rc = stall_lead();
    return NULL;
}

/* ---- the cases ------------------------------------------------------------ */

static int one_case(const char *name) {
    if (!strcmp(name, "stall-lead")) return stall_lead();
    if (!strcmp(name, "stall-follow")) return stall_follow();
    if (!strcmp(name, "stall-threads")) {
        pthread_t t;
        int lead_rc = 1;
        pthread_create(&t, NULL, lead_thread, &lead_rc);
        int rc = stall_follow();
        pthread_join(t, NULL);
        return rc | lead_rc;
    }
    struct host h;
    if (host_open(&h, name) != 0) {
        fprintf(stderr, "v8_hosts: no graph, or fewer than 3 engine configs\n");
        return 1;
    }
    cudnnBackendDescriptor_t p[MAX_CFGS] = {0};
    int rc = 0;
    if (!strcmp(name, "fewer")) {
        /* The configs it got, by tag, then PyTorch's sequence on them. */
        for (int i = 0; i < h.ncfg; i++) {
            char tag[512] = "?";
            cfg_tag(h.cfg[i], tag, sizeof tag);
            say("config %s", tag);
        }
        rc = pytorch(&h, 0) != 0;
    } else if (!strcmp(name, "learn") || !strcmp(name, "final-fails")) {
        int r = pytorch(&h, !strcmp(name, "final-fails"));
        rc = !strcmp(name, "learn") ? r != 0 : 0;
    } else if (!strcmp(name, "deferred")) {
        for (int i = 0; i < 3; i++) p[i] = build(&h, i);
        run(&h, p[0], 0, 1, 0);
        run(&h, p[1], 1, 1, 0);
        destroy(&p[0], 0, "plan");
        destroy(&p[1], 1, "plan");
        say("ws 2 %lld", (long long)cg_workspace(&A, p[2]));
        run(&h, p[2], 2, 0, 0);
        run(&h, p[2], 2, 0, 0);
    } else if (!strcmp(name, "keep")) {
        for (int i = 0; i < 3; i++) p[i] = build(&h, i);
        run(&h, p[0], 0, 1, 0);
        run(&h, p[0], 0, 0, 0);
        destroy(&p[0], 0, "plan");
        run(&h, p[1], 1, 0, 0);
        run(&h, p[2], 2, 0, 0);
    } else if (!strcmp(name, "keepall")) {
        for (int i = 0; i < h.ncfg; i++) p[i] = build(&h, i);
        int ntimed, best = time_plans(&h, p, h.ncfg, &ntimed, 1);
        if (best < 0) rc = 1;
        else {
            run(&h, p[best], best, 0, 0); /* in earnest */
            unsigned long long before = looked();
            for (int k = 0; k < 5; k++) run(&h, p[best], best, 0, 0);
            if (before == ~0ull) say("looked=unknown"); /* an interposer without the count */
            else say("looked=%llu", looked() - before);
            for (int i = 0; i < h.ncfg; i++)
                if (i != best && p[i]) run(&h, p[i], i, 0, 0);
        }
    } else if (!strcmp(name, "ddestroy")) {
        p[0] = build(&h, 0);
        p[1] = build(&h, 1);
        say("destroy-config 1 %d", (int)A.destroy(h.cfg[1]));
        say("destroy-config 1 %d", (int)A.destroy(h.cfg[1]));
        int64_t knobs = 0;
        say("set-config 1 %d", (int)A.set(h.cfg[1], CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                          0, &knobs));
        h.cfg[1] = NULL;
        run(&h, p[0], 0, 1, 0);
        run(&h, p[1], 1, 1, 0);
        run(&h, p[1], 1, 0, 0);
    } else {
        fprintf(stderr, "v8_hosts: unknown case %s\n", name);
        rc = 2;
    }
    for (int i = 0; i < MAX_CFGS; i++) destroy(&p[i], i, "plan");
    host_close(&h);
    return rc;
}

/* host_set is the host's SetAttribute: cuDNN's, but for the tensors'
 * alignment and attributes V8_HOSTS_ALIGN and V8_HOSTS_LEAF_EXTRA ask for. */
static cc_set_attr_fn cudnn_set;
static cudnnStatus_t host_set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
                              cudnnBackendAttributeType_t type, int64_t count, const void *elements) {
    const char *align = getenv("V8_HOSTS_ALIGN"), *extra = getenv("V8_HOSTS_LEAF_EXTRA");
    int64_t v;
    if (name == CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT && align) {
        v = atoll(align);
        elements = &v;
    }
    if (name == CUDNN_ATTR_TENSOR_UNIQUE_ID && extra && !strcmp(extra, "1") && *(const int64_t *)elements == 'x') {
        int64_t one = 1;
        cudnnStatus_t st = cudnn_set(d, 914 /* RAGGED_OFFSET_MULTIPLIER */, CUDNN_TYPE_INT64, 1, &one);
        if (st != CUDNN_STATUS_SUCCESS) return st;
    }
    return cudnn_set(d, name, type, count, elements);
}

int main(int argc, char **argv) {
    int i = 1;
    for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
        if (!strcmp(argv[i], "--first")) first_tag = argv[i + 1];
        else if (!strcmp(argv[i], "--pick")) pick_tag = argv[i + 1];
        else if (!strcmp(argv[i], "--dir")) dir = argv[i + 1];
        else break;
    }
    if (argc - i != 2 || (!dir && !strncmp(argv[i], "stall", 5))) {
        fprintf(stderr, "usage: v8_hosts [--first TAG] [--pick TAG] [--dir DIR] CASE REPORT\n");
        return 2;
    }
    A = (struct cg_api){cudnnGetVersion, cudnnCreate, cudnnDestroy, cudnnBackendCreateDescriptor,
                        cudnnBackendDestroyDescriptor, cudnnBackendFinalize, cudnnBackendSetAttribute,
                        cudnnBackendGetAttribute, cudnnBackendExecute};
    cudnn_set = A.set;
    A.set = host_set;
    cuInit(0);
    report = fopen(argv[i + 1], "w");
    if (!report) {
        perror(argv[i + 1]);
        return 2;
    }
    int rc = one_case(argv[i]);
    fclose(report);
    return rc;
}
