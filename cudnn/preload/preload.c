/*
 * libconvcache_preload.so: an LD_PRELOAD interposer that answers cuDNN's
 * convolution find calls from convcache, so that programs nobody rebuilt
 * benchmark each convolution once per machine type instead of once per run.
 *
 *   LD_PRELOAD=/usr/local/lib/libconvcache_preload.so python train.py
 *
 * It defines cudnnFindConvolution{Forward,BackwardData,BackwardFilter}
 * Algorithm and their Ex variants. Each call is keyed by the operation, the
 * full content of its descriptors as the real cuDNN's getters report it, the
 * requested count and (Ex) the workspace size; the key layout is drawn in
 * cudnn/doc.go (magic "ccf1"). The scope is convcache_cudnn_scope() of the
 * device the handle's stream belongs to, or $CONVCACHE_SCOPE for every
 * device when it is set (then no device is looked up). A hit copies the
 * cached results and skips the benchmark; a miss runs the real function
 * (single-flight, via convcache_get_or_create) and stores its results if it
 * succeeded. Results are checked field by field (perf.c) before they are
 * returned from the cache or stored.
 *
 * Rules it keeps:
 *   - Pure C. A process holds one Go runtime, so this library never links
 *     libconvcache.so: it dlopens it from its own directory on the first
 *     intercepted call. A process that never calls these functions (every
 *     shell and tool that inherits LD_PRELOAD) never starts Go.
 *   - Never enters Go in a child forked after the library was loaded (or
 *     while it was loading): such a child passes every call through. A child
 *     forked before any load is a fresh process and may load it itself.
 *   - Fails open: if the library cannot be loaded, the device cannot be
 *     fingerprinted, or the cache fails, the call goes to the real cuDNN and
 *     one warning per kind of failure is printed on stderr (control
 *     characters printed as '?'). A call it cannot key or must not answer
 *     for (a NULL handle, count, results or Ex pointer) goes to cuDNN too.
 *
 * Environment, read with secure_getenv (ignored in a setuid or setgid
 * process): CONVCACHE_PRELOAD_LOG=1 prints one line per intercepted call
 * (operation, hit/miss, device, key in hex) on stderr; CONVCACHE_SCOPE;
 * CONVCACHE_VERBOSE=1 or 2 prints one summary line at exit (counters.c).
 * Everything else (CONVCACHE_PATH, CONVCACHE_MODE, CONVCACHE_DISABLE,
 * CONVCACHE_TAG, ...) is read by libconvcache as usual.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "convcache.h"
#include "preload.h"

const char *env_get(const char *name) { return secure_getenv(name); }

/* ---- the real cuDNN ----------------------------------------------------- */

const char *const func_names[N_FUNCS] = {
    "cudnnFindConvolutionForwardAlgorithm",
    "cudnnFindConvolutionForwardAlgorithmEx",
    "cudnnFindConvolutionBackwardDataAlgorithm",
    "cudnnFindConvolutionBackwardDataAlgorithmEx",
    "cudnnFindConvolutionBackwardFilterAlgorithm",
    "cudnnFindConvolutionBackwardFilterAlgorithmEx",
    "cudnnGetTensorNdDescriptor",
    "cudnnGetFilterNdDescriptor",
    "cudnnGetConvolutionNdDescriptor",
    "cudnnGetConvolutionMathType",
    "cudnnGetConvolutionGroupCount",
    "cudnnGetConvolutionReorderType",
    "cudnnGetStream",
    "cudnnGetVersion",
};

static void *real_funcs[N_FUNCS];

/* ours reports whether p lies in this library. */
static int ours(void *p) {
    Dl_info mine, info;
    return dladdr((void *)&ours, &mine) && dladdr(p, &info) && info.dli_fbase == mine.dli_fbase;
}

/* real_symbol finds the real definition of a cuDNN function, never this
 * library's own: RTLD_NEXT finds it when cuDNN is in the global scope; a
 * cuDNN loaded with RTLD_LOCAL (as a dependency of a dlopen'ed framework
 * library) is found by its soname. */
void *real_symbol(const char *name) {
    void *p = dlsym(RTLD_NEXT, name);
    if (p && ours(p)) p = NULL;
    if (!p) {
        static const char *const sonames[] = {"libcudnn.so.9", "libcudnn_graph.so.9", "libcudnn_cnn.so.9",
                                              "libcudnn.so.8"};
        for (int k = 0; k < 4 && !p; k++) {
            void *h = dlopen(sonames[k], RTLD_NOW | RTLD_NOLOAD);
            if (h) p = dlsym(h, name);
        }
        if (p && ours(p)) p = NULL;
    }
    return p;
}

void *real_func(int i) {
    void *p = __atomic_load_n(&real_funcs[i], __ATOMIC_ACQUIRE);
    if (p) return p;
    p = real_symbol(func_names[i]);
    if (p) __atomic_store_n(&real_funcs[i], p, __ATOMIC_RELEASE);
    return p;
}

/* ---- warnings ----------------------------------------------------------- */

static int warned[N_WARN];

void warn_once(int kind, const char *fmt, ...) {
    if (__atomic_exchange_n(&warned[kind], 1, __ATOMIC_RELAXED)) return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    for (unsigned char *p = (unsigned char *)msg; *p; p++)
        if (*p < 0x20 || *p == 0x7f) *p = '?';
    fprintf(stderr, "convcache: LD_PRELOAD interposer: %s\n", msg);
}

/* ---- one intercepted call ----------------------------------------------- */

const char *const op_names[4] = {"", "fwd", "bwd-data", "bwd-filter"};

static cudnnStatus_t call_real(struct call *c) {
    int f = (c->op - 1) * 2 + c->ex;
    void *p = real_func(f);
    if (!p) {
        warn_once(W_REAL, "%s: the real cuDNN function was not found", func_names[f]);
        return CUDNN_STATUS_NOT_INITIALIZED;
    }
    if (!c->ex)
        return ((find_fn)p)(c->handle, c->desc[0], c->desc[1], c->desc[2], c->desc[3],
                            c->requested, c->returned, c->perf);
    /* Ex argument order: handle, d0, data0, d1, data1, d2 (conv), d3, data2, ... */
    return ((find_ex_fn)p)(c->handle, c->desc[0], c->data[0], c->desc[1], c->data[1],
                           c->desc[2], c->desc[3], (void *)c->data[2], c->requested,
                           c->returned, c->perf, c->workspace, c->workspace_size);
}

/* benchmark runs the real find for a miss, timed for the summary. */
static cudnnStatus_t benchmark(struct call *c) {
    uint64_t t0 = now_ns();
    cudnnStatus_t st = call_real(c);
    __atomic_fetch_add(&counters.find_ns, now_ns() - t0, __ATOMIC_RELAXED);
    return st;
}

/* The builder convcache_get_or_create runs on a miss: the real benchmark,
 * on the calling thread (so the CUDA context is the caller's). */
static int build(void *user, const void *key, size_t key_len, void *value, size_t value_cap,
                 size_t *value_len) {
    (void)key;
    (void)key_len;
    struct call *c = user;
    c->ran = 1;
    c->status = benchmark(c);
    if (c->status != CUDNN_STATUS_SUCCESS) return CONVCACHE_E_USER; /* store nothing */
    int n = *c->returned;
    cc_perf store[MAX_RESULTS];
    if (!perf_to_store(c, c->perf, n, store) || (size_t)n * sizeof(cc_perf) > value_cap) {
        warn_once(W_ENTRY, "cuDNN returned %d results that do not pass the checks; not cached", n);
        COUNT(errors);
        return CONVCACHE_E_USER - 1;
    }
    memcpy(value, store, (size_t)n * sizeof(cc_perf));
    *value_len = (size_t)n * sizeof(cc_perf);
    return 0;
}

int log_enabled(void) {
    const char *v = env_get("CONVCACHE_PRELOAD_LOG");
    return v && v[0] && strcmp(v, "0") != 0;
}

void log_key(const char *what, const char *detail, const unsigned char *key, size_t n) {
    static const char digits[] = "0123456789abcdef";
    char *hex = malloc(2 * n + 1);
    if (!hex) return;
    for (size_t i = 0; i < n; i++) {
        hex[2 * i] = digits[key[i] >> 4];
        hex[2 * i + 1] = digits[key[i] & 15];
    }
    hex[2 * n] = 0;
    fprintf(stderr, "convcache-preload: v8 %s%s%s key %s\n", what, detail[0] ? " " : "", detail, hex);
    free(hex);
}

static void log_call(const struct call *c, const char *what, const struct key *k) {
    char hex[2 * sizeof k->b + 1], dev[16] = "-";
    size_t n = k ? k->n : 0;
    for (size_t i = 0; i < n; i++) snprintf(hex + 2 * i, 3, "%02x", k->b[i]);
    hex[2 * n] = 0;
    if (c->dev >= 0) snprintf(dev, sizeof dev, "%d", c->dev);
    fprintf(stderr, "convcache-preload: %s%s %s device %s key %s\n", op_names[c->op],
            c->ex ? "-ex" : "", what, dev, n ? hex : "-");
}

static cudnnStatus_t passthrough(struct call *c, const struct key *k) {
    COUNT(passthrough);
    if (log_enabled()) log_call(c, "passthrough", k);
    return call_real(c);
}

/* answerable reports whether the interposer may answer for c: arguments
 * cuDNN itself would reject (a NULL handle, count, results, Ex data pointer
 * or a NULL workspace of more than 0 bytes, a count below 1) get cuDNN's own
 * answer, never a hit. */
static int answerable(const struct call *c) {
    if (!c->handle || c->requested < 1 || !c->returned || !c->perf) return 0;
    if (c->ex && (!c->data[0] || !c->data[1] || !c->data[2] ||
                  (!c->workspace && c->workspace_size > 0)))
        return 0;
    return 1;
}

static cudnnStatus_t intercept(struct call *c) {
    COUNT(calls);
    c->dev = -1;
    if (!library_usable() || !answerable(c)) return passthrough(c, NULL);
    struct key k;
    if (build_key(c, &k) != 0) return passthrough(c, NULL);
    if (!library_ready()) return passthrough(c, &k);
    convcache *cache = cache_for(c);
    if (!cache) return passthrough(c, &k);

    cc_perf cached[MAX_RESULTS];
    size_t cap = (size_t)(c->requested < MAX_RESULTS ? c->requested : MAX_RESULTS) * sizeof(cc_perf);
    size_t len = 0;
    c->ran = 0;
    int rc = api.get_or_create(cache, k.b, k.n, build, c, cached, cap, &len);
    if (c->ran) {
        /* The real function ran: its results are in the caller's buffer. */
        COUNT(misses);
        if (rc < 0 && rc != CONVCACHE_E_USER && rc != CONVCACHE_E_USER - 1) {
            COUNT(errors);
            warn_once(W_CACHE, "a cache error (%s) kept a result from being stored",
                      api.last_error());
        }
        if (log_enabled()) log_call(c, "miss", &k);
        return c->status;
    }
    if (rc == CONVCACHE_HIT && len <= cap && len % sizeof(cc_perf) == 0 &&
        perf_valid(c, cached, (int)(len / sizeof(cc_perf)))) {
        int n = (int)(len / sizeof(cc_perf));
        memcpy(c->perf, cached, len);
        *c->returned = n;
        COUNT(hits);
        count_saved_ms(perf_success_ms(cached, n));
        if (log_enabled()) log_call(c, "hit", &k);
        return CUDNN_STATUS_SUCCESS;
    }
    if (rc == CONVCACHE_HIT || rc == CONVCACHE_E_RANGE) {
        /* A stored entry that fails the checks: measure again, replace it. */
        COUNT(errors);
        warn_once(W_ENTRY, "ignoring a cached %s result that fails the checks; measuring again",
                  op_names[c->op]);
        COUNT(misses);
        cudnnStatus_t st = benchmark(c);
        cc_perf store[MAX_RESULTS];
        int n = *c->returned;
        if (st == CUDNN_STATUS_SUCCESS && perf_to_store(c, c->perf, n, store))
            api.insert(cache, k.b, k.n, store, (size_t)n * sizeof(cc_perf));
        if (log_enabled()) log_call(c, "replaced", &k);
        return st;
    }
    if (rc == CONVCACHE_E_MISS) {
        /* CONVCACHE_MODE=strict: production proves it never benchmarks. A
         * miss is an error to the caller, not a silent benchmark. */
        COUNT(refused);
        warn_once(W_STRICT, "CONVCACHE_MODE=strict: a %s problem is not in the cache; returning "
                  "CUDNN_STATUS_NOT_SUPPORTED instead of benchmarking", op_names[c->op]);
        if (log_enabled()) log_call(c, "strict-miss", &k);
        return cudnn_not_supported();
    }
    COUNT(errors);
    warn_once(W_CACHE, "cache error (%s); this call and others like it run uncached",
              api.last_error());
    return passthrough(c, &k);
}

/* ---- the interposed functions ------------------------------------------- */

EXPORT cudnnStatus_t cudnnFindConvolutionForwardAlgorithm(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const cudnnFilterDescriptor_t wDesc,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t yDesc,
    const int requestedAlgoCount, int *returnedAlgoCount, cudnnConvolutionFwdAlgoPerf_t *perfResults) {
    struct call c = {.op = OP_FWD, .handle = handle, .desc = {xDesc, wDesc, convDesc, yDesc},
                     .requested = requestedAlgoCount, .returned = returnedAlgoCount,
                     .perf = (cc_perf *)perfResults};
    return intercept(&c);
}

EXPORT cudnnStatus_t cudnnFindConvolutionForwardAlgorithmEx(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const void *x,
    const cudnnFilterDescriptor_t wDesc, const void *w, const cudnnConvolutionDescriptor_t convDesc,
    const cudnnTensorDescriptor_t yDesc, void *y, const int requestedAlgoCount,
    int *returnedAlgoCount, cudnnConvolutionFwdAlgoPerf_t *perfResults, void *workSpace, size_t workSpaceSizeInBytes) {
    struct call c = {.op = OP_FWD, .ex = 1, .handle = handle,
                     .desc = {xDesc, wDesc, convDesc, yDesc}, .data = {x, w, y},
                     .requested = requestedAlgoCount, .returned = returnedAlgoCount,
                     .perf = (cc_perf *)perfResults, .workspace = workSpace,
                     .workspace_size = workSpaceSizeInBytes};
    return intercept(&c);
}

EXPORT cudnnStatus_t cudnnFindConvolutionBackwardDataAlgorithm(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t wDesc, const cudnnTensorDescriptor_t dyDesc,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t dxDesc,
    const int requestedAlgoCount, int *returnedAlgoCount, cudnnConvolutionBwdDataAlgoPerf_t *perfResults) {
    struct call c = {.op = OP_BWD_DATA, .handle = handle, .desc = {wDesc, dyDesc, convDesc, dxDesc},
                     .requested = requestedAlgoCount, .returned = returnedAlgoCount,
                     .perf = (cc_perf *)perfResults};
    return intercept(&c);
}

EXPORT cudnnStatus_t cudnnFindConvolutionBackwardDataAlgorithmEx(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t wDesc, const void *w,
    const cudnnTensorDescriptor_t dyDesc, const void *dy,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t dxDesc, void *dx,
    const int requestedAlgoCount, int *returnedAlgoCount, cudnnConvolutionBwdDataAlgoPerf_t *perfResults, void *workSpace,
    size_t workSpaceSizeInBytes) {
    struct call c = {.op = OP_BWD_DATA, .ex = 1, .handle = handle,
                     .desc = {wDesc, dyDesc, convDesc, dxDesc}, .data = {w, dy, dx},
                     .requested = requestedAlgoCount, .returned = returnedAlgoCount,
                     .perf = (cc_perf *)perfResults, .workspace = workSpace,
                     .workspace_size = workSpaceSizeInBytes};
    return intercept(&c);
}

EXPORT cudnnStatus_t cudnnFindConvolutionBackwardFilterAlgorithm(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const cudnnTensorDescriptor_t dyDesc,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnFilterDescriptor_t dwDesc,
    const int requestedAlgoCount, int *returnedAlgoCount, cudnnConvolutionBwdFilterAlgoPerf_t *perfResults) {
    struct call c = {.op = OP_BWD_FILTER, .handle = handle,
                     .desc = {xDesc, dyDesc, convDesc, dwDesc}, .requested = requestedAlgoCount,
                     .returned = returnedAlgoCount, .perf = (cc_perf *)perfResults};
    return intercept(&c);
}

EXPORT cudnnStatus_t cudnnFindConvolutionBackwardFilterAlgorithmEx(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const void *x,
    const cudnnTensorDescriptor_t dyDesc, const void *y,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnFilterDescriptor_t dwDesc, void *dw,
    const int requestedAlgoCount, int *returnedAlgoCount, cudnnConvolutionBwdFilterAlgoPerf_t *perfResults, void *workSpace,
    size_t workSpaceSizeInBytes) {
    struct call c = {.op = OP_BWD_FILTER, .ex = 1, .handle = handle,
                     .desc = {xDesc, dyDesc, convDesc, dwDesc}, .data = {x, y, dw},
                     .requested = requestedAlgoCount, .returned = returnedAlgoCount,
                     .perf = (cc_perf *)perfResults, .workspace = workSpace,
                     .workspace_size = workSpaceSizeInBytes};
    return intercept(&c);
}
