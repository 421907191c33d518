/*
 * The program the LD_PRELOAD tests run (tests/preload/run.sh). It is linked
 * against the stand-in cuDNN and CUDA driver only, never libconvcache: under
 * LD_PRELOAD the interposer must load that itself.
 *
 *   preload_prog run OUT [DEVICE]  a fixed workload of 18 find calls (3 shapes x
 *                                  6 functions); results to OUT; prints
 *                                  "finds N" (calls that reached cuDNN) and
 *                                  "success_ms X" (the sum of the successful
 *                                  results' times it got)
 *   preload_prog vary              one field at a time must miss, repeats hit
 *   preload_prog status            failed or out-of-range results are not cached
 *   preload_prog keys              the key layout of cudnn/doc.go, built here
 *                                  independently, is the one the interposer uses;
 *                                  a damaged entry is measured again and replaced
 *   preload_prog poison            every poisoned field of a planted entry is
 *                                  caught: measured again and replaced (planted.c)
 *   preload_prog poison-real       poisoned results from cuDNN itself reach the
 *                                  caller unchanged and are never stored
 *   preload_prog nulls             NULL arguments and requests below 1 reach cuDNN,
 *                                  even for a stored problem (args.c)
 *   preload_prog getters           getters reporting dimension counts out of
 *                                  range pass every call through (args.c)
 *   preload_prog fork              a child forked after the library loaded passes
 *                                  through; the parent keeps its cache
 *   preload_prog fork-early        a child forked before any load uses the cache
 *   preload_prog fork-idle         one call, then a child that does nothing and
 *                                  exits with exit(): only the parent may print
 *                                  the CONVCACHE_VERBOSE summary
 *   preload_prog flight            8 threads missing one key benchmark it once
 *   preload_prog cost N            times the first call and N repeats of it (a
 *                                  measurement, not a test)
 *   preload_prog nogo [call]       prints threads, whether libconvcache is mapped,
 *                                  and the interposer's counters; with "call",
 *                                  after one find call
 *   preload_prog secure            prints "at_secure N" (getauxval), then makes
 *                                  one find call
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/wait.h>
#include <unistd.h>

#include "convcache.h"
#include "prog.h"

int failures;

int get_stats(struct preload_stats *s) {
    int (*f)(struct preload_stats *, size_t) =
        (int (*)(struct preload_stats *, size_t))dlsym(RTLD_DEFAULT, "convcache_preload_stats");
    memset(s, 0, sizeof *s);
    return f ? f(s, sizeof *s) == 0 : 0;
}

/* ---- a convolution problem ---- */
void packed(const int *d, int nb, int *s) {
    s[nb - 1] = 1;
    for (int i = nb - 2; i >= 0; i--) s[i] = s[i + 1] * d[i + 1];
}

struct problem make(int n, int c, int h, int k, int r, int pad, int stride) {
    struct problem p = {.dt = 0, .nb = 4, .x = {n, c, h, h}, .fdt = 0, .fmt = 0, .w = {k, c, r, r},
                        .n = 2, .pad = {pad, pad}, .stride = {stride, stride}, .dil = {1, 1},
                        .mode = 1, .ctype = 0, .math = 0, .groups = 1, .reorder = 0};
    int o = (h + 2 * pad - r) / stride + 1;
    p.y[0] = n, p.y[1] = k, p.y[2] = o, p.y[3] = o;
    packed(p.x, 4, p.xs);
    packed(p.y, 4, p.ys);
    return p;
}

void set(struct descs *d, const struct problem *p) {
    if (!d->x) {
        cudnnCreateTensorDescriptor(&d->x);
        cudnnCreateTensorDescriptor(&d->y);
        cudnnCreateFilterDescriptor(&d->w);
        cudnnCreateConvolutionDescriptor(&d->conv);
    }
    cudnnSetTensorNdDescriptor(d->x, p->dt, p->nb, p->x, p->xs);
    cudnnSetTensorNdDescriptor(d->y, p->dt, p->nb, p->y, p->ys);
    cudnnSetFilterNdDescriptor(d->w, p->fdt, p->fmt, p->nb, p->w);
    cudnnSetConvolutionNdDescriptor(d->conv, p->n, p->pad, p->stride, p->dil, p->mode, p->ctype);
    cudnnSetConvolutionMathType(d->conv, p->math);
    cudnnSetConvolutionGroupCount(d->conv, p->groups);
    cudnnSetConvolutionReorderType(d->conv, p->reorder);
}

static D handle;
static char buf[64]; /* stands for device memory; never read */

int find(int f, const struct descs *d, int req, size_t ws, int *ret, perf_t *perf) {
    switch (f) {
    case 0: return cudnnFindConvolutionForwardAlgorithm(handle, d->x, d->w, d->conv, d->y, req, ret, perf);
    case 1: return cudnnFindConvolutionForwardAlgorithmEx(handle, d->x, buf, d->w, buf, d->conv, d->y, buf, req, ret, perf, buf, ws);
    case 2: return cudnnFindConvolutionBackwardDataAlgorithm(handle, d->w, d->y, d->conv, d->x, req, ret, perf);
    case 3: return cudnnFindConvolutionBackwardDataAlgorithmEx(handle, d->w, buf, d->y, buf, d->conv, d->x, buf, req, ret, perf, buf, ws);
    case 4: return cudnnFindConvolutionBackwardFilterAlgorithm(handle, d->x, d->y, d->conv, d->w, req, ret, perf);
    default: return cudnnFindConvolutionBackwardFilterAlgorithmEx(handle, d->x, buf, d->y, buf, d->conv, d->w, buf, req, ret, perf, buf, ws);
    }
}

const int counts[6] = {8, 8, 6, 6, 7, 7};

static void print_results(FILE *f, const char *what, int st, int n, const perf_t *p) {
    fprintf(f, "%s status %d returned %d\n", what, st, n);
    for (int i = 0; i < n && st == 0; i++)
        fprintf(f, "  algo %d status %d time %a memory %zu det %d math %d\n", p[i].algo,
                p[i].status, (double)p[i].time, p[i].memory, p[i].determinism, p[i].mathType);
}

static int setup(int argc, char **argv, int devarg) {
    cudnnCreate(&handle);
    if (argc > devarg) cudnnSetStream(handle, standin_cuda_stream(atoi(argv[devarg])));
    return 0;
}

/* ---- run ---- */
static int run(const char *out) {
    struct problem ps[3] = {make(32, 64, 56, 64, 3, 1, 1), make(32, 256, 14, 256, 3, 1, 1),
                            make(16, 3, 224, 64, 7, 3, 2)};
    FILE *f = fopen(out, "w");
    if (!f) return perror(out), 2;
    struct descs d = {0};
    double success_ms = 0; /* the time of every successful result returned */
    for (int s = 0; s < 3; s++) {
        set(&d, &ps[s]);
        for (int fn = 0; fn < 6; fn++) {
            perf_t perf[8];
            int n = -1;
            int st = find(fn, &d, counts[fn], 1 << 20, &n, perf);
            char what[64];
            snprintf(what, sizeof what, "shape %d function %d", s, fn);
            print_results(f, what, st, n, perf);
            for (int i = 0; i < n && st == 0; i++)
                if (perf[i].status == 0) success_ms += (double)perf[i].time;
        }
    }
    fclose(f);
    printf("finds %d\n", standin_find_calls());
    printf("success_ms %.3f\n", success_ms);
    return 0;
}

/* ---- vary ---- */
int same(const perf_t *a, const perf_t *b, int n) {
    for (int i = 0; i < n; i++)
        if (a[i].algo != b[i].algo || a[i].status != b[i].status || a[i].time != b[i].time ||
            a[i].memory != b[i].memory || a[i].determinism != b[i].determinism ||
            a[i].mathType != b[i].mathType)
            return 0;
    return 1;
}

void call(const char *what, int fn, const struct problem *p, int req, size_t ws,
                 int want_miss) {
    static struct descs d;
    set(&d, p);
    perf_t perf[8];
    int n = 0, before = standin_find_calls();
    int st = find(fn, &d, req, ws, &n, perf);
    int missed = standin_find_calls() - before;
    CHECK(st == 0 && n >= 1, "%s: status %d returned %d", what, st, n);
    CHECK(missed == want_miss, "%s: %s, want a %s", what, missed ? "reached cuDNN" : "hit",
          want_miss ? "miss" : "hit");
}

/* mutate changes field i of p and names it; NULL past the last field. */
static const char *mutate(int i, struct problem *p) {
    switch (i) {
    case 0: p->dt = 2; return "x data type";
    case 1: p->x[0] = 16; return "x dim 0";
    case 2: p->x[1] = 32; return "x dim 1";
    case 3: p->x[2] = 28; return "x dim 2";
    case 4: p->x[3] = 57; return "x dim 3";
    case 5: p->xs[0] += 1; return "x stride 0";
    case 6: p->xs[1] += 1; return "x stride 1";
    case 7: p->xs[2] += 1; return "x stride 2";
    case 8: p->xs[3] = 2; return "x stride 3";
    case 9: p->y[1] = 32; return "y dim 1";
    case 10: p->ys[3] = 2; return "y stride 3";
    case 11: p->fdt = 2; return "w data type";
    case 12: p->fmt = 1; return "w format";
    case 13: p->w[0] = 32; return "w dim 0";
    case 14: p->w[2] = 5; return "w dim 2";
    case 15: p->w[3] = 1; return "w dim 3";
    case 16: p->pad[0] = 0; return "pad 0";
    case 17: p->pad[1] = 2; return "pad 1";
    case 18: p->stride[0] = 2; return "stride 0";
    case 19: p->stride[1] = 2; return "stride 1";
    case 20: p->dil[0] = 2; return "dilation 0";
    case 21: p->dil[1] = 2; return "dilation 1";
    case 22: p->mode = 0; return "mode";
    case 23: p->ctype = 2; return "compute type";
    case 24: p->math = 1; return "math type";
    case 25: p->groups = 2; return "group count";
    case 26: p->reorder = 1; return "reorder type";
    case 27:
        p->nb = 5, p->x[4] = 8, p->y[4] = 8, p->w[4] = 3, p->n = 3;
        p->pad[2] = 1, p->stride[2] = 1, p->dil[2] = 1;
        packed(p->x, 5, p->xs), packed(p->y, 5, p->ys);
        return "number of dimensions";
    }
    return NULL;
}

static int vary(void) {
    const struct problem base = make(32, 64, 56, 64, 3, 1, 1);
    const size_t ws = 1 << 20;
    call("base", 0, &base, 8, ws, 1);
    call("base again", 0, &base, 8, ws, 0);
    for (int i = 0;; i++) {
        struct problem p = base;
        const char *name = mutate(i, &p);
        if (!name) break;
        char what[96];
        snprintf(what, sizeof what, "fwd with another %s", name);
        call(what, 0, &p, 8, ws, 1);
        snprintf(what, sizeof what, "fwd with another %s, again", name);
        call(what, 0, &p, 8, ws, 0);
    }
    call("another requested count", 0, &base, 4, ws, 1);
    call("another requested count, again", 0, &base, 4, ws, 0);
    for (int fn = 1; fn < 6; fn++) {
        char what[64];
        snprintf(what, sizeof what, "function %d, same descriptors", fn);
        call(what, fn, &base, counts[fn], ws, 1);
        snprintf(what, sizeof what, "function %d again", fn);
        call(what, fn, &base, counts[fn], ws, 0);
    }
    call("Ex with 2 MiB workspace", 1, &base, 8, 2 << 20, 1);
    call("Ex with 2 MiB workspace, again", 1, &base, 8, 2 << 20, 0);
    call("Ex with no workspace", 1, &base, 8, 0, 1);
    call("Ex with 1 MiB workspace, again", 1, &base, 8, ws, 0);
    call("base at the end", 0, &base, 8, ws, 0);
    struct preload_stats s;
    CHECK(get_stats(&s), "the interposer is not active");
    CHECK(s.passthrough == 0 && s.errors == 0, "passthrough %llu errors %llu", s.passthrough,
          s.errors);
    printf("vary: %llu calls, %llu hits, %llu misses\n", s.calls, s.hits, s.misses);
    return failures ? 1 : 0;
}

/* ---- status ---- */
static int status(void) {
    const struct problem base = make(8, 16, 32, 16, 3, 1, 1);
    struct descs d = {0};
    set(&d, &base);
    perf_t perf[8];
    int n = 0, before;
    setenv("STANDIN_FIND_STATUS", "2000", 1);
    for (int i = 0; i < 2; i++) {
        before = standin_find_calls();
        int st = find(0, &d, 8, 0, &n, perf);
        CHECK(st == 2000, "failed call returned %d, want the real status 2000", st);
        CHECK(standin_find_calls() == before + 1, "a failed result was cached");
    }
    unsetenv("STANDIN_FIND_STATUS");
    setenv("STANDIN_BAD_ALGO", "1", 1);
    for (int i = 0; i < 2; i++) {
        before = standin_find_calls();
        int st = find(0, &d, 8, 0, &n, perf);
        CHECK(st == 0 && perf[0].algo == 99, "status %d algo %d: want the real results", st,
              perf[0].algo);
        CHECK(standin_find_calls() == before + 1, "an out-of-range algorithm was cached");
    }
    unsetenv("STANDIN_BAD_ALGO");
    call("good result after failures", 0, &base, 8, 0, 1);
    call("good result again", 0, &base, 8, 0, 0);
    before = standin_find_calls();
    CHECK(find(0, &d, 0, 0, &n, perf) != 0, "requested 0 must fail in cuDNN");
    CHECK(standin_find_calls() == before + 1, "requested 0 must pass through");
    return failures ? 1 : 0;
}

/* ---- fork ---- */
static int do_fork(int early) {
    const struct problem base = make(32, 64, 56, 64, 3, 1, 1);
    struct descs d = {0};
    set(&d, &base);
    perf_t first[8], perf[8];
    int n = 0, n1 = 0;
    if (!early) {
        CHECK(find(0, &d, 8, 0, &n1, first) == 0, "first call failed");
        int before = standin_find_calls();
        CHECK(find(0, &d, 8, 0, &n, perf) == 0 && standin_find_calls() == before,
              "second call in the parent did not hit");
    }
    pid_t pid = fork();
    if (pid == 0) {
        struct preload_stats s0, s;
        get_stats(&s0); /* inherited from the parent */
        int before = standin_find_calls();
        int st = find(0, &d, 8, 0, &n, perf);
        int reached = standin_find_calls() - before;
        if (early) {
            before = standin_find_calls();
            find(0, &d, 8, 0, &n, perf);
            /* a fresh child: first call misses or hits the file, the second hits */
            _exit(st == 0 && standin_find_calls() == before ? 0 : 1);
        }
        get_stats(&s);
        /* Passed through by the interposer itself: not a cache error, not a
         * miss, and no call into libconvcache (whose own fork guard would
         * count as an error here). */
        _exit(st == 0 && reached == 1 && n == n1 && same(perf, first, n) &&
                      s.passthrough == s0.passthrough + 1 && s.errors == s0.errors &&
                      s.misses == s0.misses && s.hits == s0.hits
                  ? 0 : 1);
    }
    int ws = 0;
    CHECK(pid > 0 && waitpid(pid, &ws, 0) == pid, "fork or wait failed");
    CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "the child failed (status %d)", ws);
    int before = standin_find_calls();
    CHECK(find(0, &d, 8, 0, &n, perf) == 0, "parent call after fork failed");
    CHECK(standin_find_calls() == before, "parent call after the child did not hit");
    return failures ? 1 : 0;
}

/* fork_idle: the child of a process that has made a find call does
 * nothing and leaves through exit(), which runs the interposer's exit code:
 * it must print no CONVCACHE_VERBOSE summary of its parent's calls. */
static int fork_idle(void) {
    const struct problem base = make(32, 64, 56, 64, 3, 1, 1);
    struct descs d = {0};
    set(&d, &base);
    perf_t perf[8];
    int n = 0;
    CHECK(find(0, &d, 8, 0, &n, perf) == 0, "the call failed");
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) exit(0);
    int ws = 0;
    CHECK(pid > 0 && waitpid(pid, &ws, 0) == pid, "fork or wait failed");
    CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "the child failed (status %d)", ws);
    return failures ? 1 : 0;
}

/* ---- flight ---- */
static pthread_barrier_t barrier;
static perf_t flight_results[8][8];

static void *flight_thread(void *arg) {
    int i = (int)(intptr_t)arg, n = 0;
    struct problem p = make(64, 128, 28, 128, 3, 1, 1);
    struct descs d = {0};
    set(&d, &p);
    pthread_barrier_wait(&barrier);
    if (find(0, &d, 8, 0, &n, flight_results[i]) != 0 || n != 8)
        __atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED);
    return NULL;
}

static int flight(void) {
    pthread_t t[8];
    pthread_barrier_init(&barrier, NULL, 8);
    for (int i = 0; i < 8; i++) pthread_create(&t[i], NULL, flight_thread, (void *)(intptr_t)i);
    for (int i = 0; i < 8; i++) pthread_join(t[i], NULL);
    CHECK(standin_find_calls() == 1, "%d benchmarks for one key from 8 threads, want 1",
          standin_find_calls());
    for (int i = 1; i < 8; i++) CHECK(same(flight_results[0], flight_results[i], 8), "thread %d differs", i);
    return failures ? 1 : 0;
}

/* ---- cost ---- */
#include <time.h>
static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cost(int n) {
    const struct problem p = make(32, 64, 56, 64, 3, 1, 1);
    struct descs d = {0};
    set(&d, &p);
    perf_t perf[8];
    int ret;
    double t0 = now_ns();
    find(1, &d, 8, 1 << 20, &ret, perf);
    double t1 = now_ns();
    for (int i = 0; i < n; i++) find(1, &d, 8, 1 << 20, &ret, perf);
    double t2 = now_ns();
    printf("first call %.0f us, then %.0f ns per call (%d calls, %d reached cuDNN)\n",
           (t1 - t0) / 1e3, (t2 - t1) / (n > 0 ? n : 1), n + 1, standin_find_calls());
    return 0;
}

/* ---- nogo ---- */
static int count_threads(void) {
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.') n++;
    if (d) closedir(d);
    return n;
}

static int mapped(const char *what) {
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    int found = 0;
    while (f && fgets(line, sizeof line, f))
        if (strstr(line, what)) found = 1;
    if (f) fclose(f);
    return found;
}

static int nogo(int do_call) {
    if (do_call) {
        const struct problem p = make(2, 2, 4, 2, 1, 0, 1);
        struct descs d = {0};
        set(&d, &p);
        perf_t perf[8];
        int n;
        find(0, &d, 8, 0, &n, perf);
    }
    struct preload_stats s;
    int active = get_stats(&s);
    printf("threads %d libconvcache %d preload %d loads %llu\n", count_threads(),
           mapped("libconvcache.so"), active, s.library_loads);
    return 0;
}

/* secure: whether the kernel started this process in secure mode (setuid
 * or setgid), then one find call. */
static int secure(void) {
    printf("at_secure %lu\n", getauxval(AT_SECURE));
    fflush(stdout);
    return nogo(1);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: preload_prog run|vary|status|keys|poison|poison-real|nulls|getters|fork|fork-early|"
                        "fork-idle|flight|cost|nogo|secure\n");
        return 2;
    }
    const char *m = argv[1];
    if (!strcmp(m, "run") && argc >= 3) return setup(argc, argv, 3), run(argv[2]);
    setup(0, argv, 1);
    if (!strcmp(m, "vary")) return vary();
    if (!strcmp(m, "status")) return status();
    if (!strcmp(m, "keys")) return keys();
    if (!strcmp(m, "poison")) return poison();
    if (!strcmp(m, "poison-real")) return poison_real();
    if (!strcmp(m, "nulls")) return nulls();
    if (!strcmp(m, "getters")) return getters();
    if (!strcmp(m, "fork")) return do_fork(0);
    if (!strcmp(m, "fork-early")) return do_fork(1);
    if (!strcmp(m, "fork-idle")) return fork_idle();
    if (!strcmp(m, "flight")) return flight();
    if (!strcmp(m, "cost")) return cost(argc > 2 ? atoi(argv[2]) : 10000);
    if (!strcmp(m, "nogo")) return nogo(argc > 2 && !strcmp(argv[2], "call"));
    if (!strcmp(m, "secure")) return secure();
    fprintf(stderr, "preload_prog: unknown mode %s\n", m);
    return 2;
}
