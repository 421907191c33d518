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
 * device the handle's stream belongs to. A hit copies the cached results
 * and skips the benchmark; a miss runs the real function (single-flight, via
 * convcache_get_or_create) and stores its results if it succeeded.
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
 *     one warning per kind of failure is printed on stderr.
 *
 * Environment: CONVCACHE_PRELOAD_LOG=1 prints one line per intercepted call
 * (operation, hit/miss, device, key in hex) on stderr. Everything else
 * (CONVCACHE_PATH, CONVCACHE_MODE, CONVCACHE_DISABLE, CONVCACHE_SCOPE,
 * CONVCACHE_TAG, ...) is read by libconvcache as usual.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "convcache.h"

#define EXPORT __attribute__((visibility("default")))
#define CC_STR_(x) #x
#define CC_STR(x) CC_STR_(x)

/* ---- the few cuDNN and CUDA driver types we need (ABI only) ------------ */

typedef int cudnnStatus_t;
typedef struct cudnnContext *cudnnHandle_t;
typedef struct cudnnTensorStruct *cudnnTensorDescriptor_t;
typedef struct cudnnFilterStruct *cudnnFilterDescriptor_t;
typedef struct cudnnConvolutionStruct *cudnnConvolutionDescriptor_t;
typedef void *cudaStream_t;

/* cudnnConvolution{Fwd,BwdData,BwdFilter}AlgoPerf_t share this layout. */
typedef struct {
    int algo;
    cudnnStatus_t status;
    float time;
    size_t memory;
    int determinism;
    int mathType;
    int reserved[3];
} cc_perf;
_Static_assert(sizeof(cc_perf) == 48, "cuDNN perf structs are 48 bytes");

#define CUDNN_STATUS_SUCCESS 0
#define CUDNN_STATUS_NOT_INITIALIZED 1001 /* cuDNN 9's value */
#define CUDNN_STATUS_NOT_SUPPORTED_V9 3000
#define CUDNN_STATUS_NOT_SUPPORTED_V8 9
#define CUDNN_DIM_MAX 8

typedef cudnnStatus_t (*find_fn)(cudnnHandle_t, const void *, const void *, const void *,
                                 const void *, int, int *, cc_perf *);
typedef cudnnStatus_t (*find_ex_fn)(cudnnHandle_t, const void *, const void *, const void *,
                                    const void *, const void *, const void *, void *, int, int *,
                                    cc_perf *, void *, size_t);
typedef cudnnStatus_t (*get_tensor_fn)(const void *, int, int *, int *, int *, int *);
typedef cudnnStatus_t (*get_filter_fn)(const void *, int, int *, int *, int *, int *);
typedef cudnnStatus_t (*get_conv_fn)(const void *, int, int *, int *, int *, int *, int *, int *);
typedef cudnnStatus_t (*get_int_fn)(const void *, int *);
typedef cudnnStatus_t (*get_stream_fn)(cudnnHandle_t, cudaStream_t *);

typedef int (*cu_ctx_get_device_fn)(int *);
typedef int (*cu_stream_get_ctx_fn)(void *, void **);
typedef int (*cu_ctx_push_fn)(void *);
typedef int (*cu_ctx_pop_fn)(void **);

/* ---- the real cuDNN ----------------------------------------------------- */

enum {
    F_FWD, F_FWD_EX, F_BWD_DATA, F_BWD_DATA_EX, F_BWD_FILTER, F_BWD_FILTER_EX,
    F_GET_TENSOR, F_GET_FILTER, F_GET_CONV, F_GET_MATH, F_GET_GROUPS, F_GET_REORDER,
    F_GET_STREAM, N_FUNCS
};

static const char *const func_names[N_FUNCS] = {
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
};

static void *real_funcs[N_FUNCS];
static void *own_base; /* our load address, to never resolve to ourselves */
static char own_dir[PATH_MAX];

/* real returns the real cuDNN's function i, or NULL. RTLD_NEXT finds it
 * when cuDNN is in the global scope; a cuDNN loaded with RTLD_LOCAL (as a
 * dependency of a dlopen'ed framework library) is found by its soname. */
static void *real(int i) {
    void *p = __atomic_load_n(&real_funcs[i], __ATOMIC_ACQUIRE);
    if (p) return p;
    Dl_info info;
    p = dlsym(RTLD_NEXT, func_names[i]);
    if (p && dladdr(p, &info) && info.dli_fbase == own_base) p = NULL;
    if (!p) {
        static const char *const sonames[] = {"libcudnn.so.9", "libcudnn.so.8"};
        for (int k = 0; k < 2 && !p; k++) {
            void *h = dlopen(sonames[k], RTLD_NOW | RTLD_NOLOAD);
            if (h) p = dlsym(h, func_names[i]);
        }
        if (p && dladdr(p, &info) && info.dli_fbase == own_base) p = NULL;
    }
    if (p) __atomic_store_n(&real_funcs[i], p, __ATOMIC_RELEASE);
    return p;
}

/* ---- counters (a debug hook for tests) ---------------------------------- */

struct convcache_preload_stats {
    unsigned long long calls;         /* intercepted find calls */
    unsigned long long hits;          /* answered from the cache */
    unsigned long long misses;        /* ran the real find through the cache */
    unsigned long long passthrough;   /* ran the real find without the cache */
    unsigned long long library_loads; /* attempts to dlopen libconvcache */
    unsigned long long errors;        /* cache errors and rejected entries */
};

static struct convcache_preload_stats stats;

#define COUNT(field) __atomic_fetch_add(&stats.field, 1, __ATOMIC_RELAXED)

/* convcache_preload_stats copies the counters (at most size bytes). Tests
 * find it with dlsym(RTLD_DEFAULT, ...) to tell that the interposer is
 * active and whether it loaded libconvcache. Returns 0. */
EXPORT int convcache_preload_stats(struct convcache_preload_stats *out, size_t size) {
    struct convcache_preload_stats s;
    s.calls = __atomic_load_n(&stats.calls, __ATOMIC_RELAXED);
    s.hits = __atomic_load_n(&stats.hits, __ATOMIC_RELAXED);
    s.misses = __atomic_load_n(&stats.misses, __ATOMIC_RELAXED);
    s.passthrough = __atomic_load_n(&stats.passthrough, __ATOMIC_RELAXED);
    s.library_loads = __atomic_load_n(&stats.library_loads, __ATOMIC_RELAXED);
    s.errors = __atomic_load_n(&stats.errors, __ATOMIC_RELAXED);
    if (!out) return CONVCACHE_E_INVALID;
    memcpy(out, &s, size < sizeof s ? size : sizeof s);
    return 0;
}

/* ---- warnings ----------------------------------------------------------- */

enum { W_LOAD, W_SCOPE, W_OPEN, W_CACHE, W_REAL, W_ENTRY, W_STRICT, N_WARN };
static int warned[N_WARN];

static void warn_once(int kind, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn_once(int kind, const char *fmt, ...) {
    if (__atomic_exchange_n(&warned[kind], 1, __ATOMIC_RELAXED)) return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "convcache: LD_PRELOAD interposer: %s\n", msg);
}

/* ---- loading libconvcache ----------------------------------------------- */

enum { LIB_NONE, LIB_LOADING, LIB_READY, LIB_FAILED, LIB_FORKED };
static int lib_state = LIB_NONE;
static pthread_mutex_t lib_mu = PTHREAD_MUTEX_INITIALIZER;

static struct {
    int (*open)(const char *, const char *, convcache **);
    int (*get_or_create)(convcache *, const void *, size_t, convcache_builder, void *, void *,
                         size_t, size_t *);
    int (*insert)(convcache *, const void *, size_t, const void *, size_t);
    int (*cudnn_scope)(int, char *, size_t);
    const char *(*last_error)(void);
} api;

/* The handles, one per distinct scope, and which one each device uses. */
#define MAX_DEVICES 64
#define MAX_SCOPES 16
static struct {
    int state; /* 0 not yet looked at, 1 ready, 2 failed */
    convcache *c;
} devices[MAX_DEVICES];
static struct {
    char *scope;
    convcache *c;
} scopes[MAX_SCOPES];

static void atfork_child(void) {
    int s = __atomic_load_n(&lib_state, __ATOMIC_RELAXED);
    if (s == LIB_LOADING || s == LIB_READY) {
        __atomic_store_n(&lib_state, LIB_FORKED, __ATOMIC_RELAXED);
        return;
    }
    /* The Go runtime never started in the parent: this child may load it.
     * A parent thread may have held the mutex at the fork. */
    pthread_mutex_init(&lib_mu, NULL);
}

__attribute__((constructor)) static void preload_init(void) {
    Dl_info info;
    if (dladdr((void *)&preload_init, &info) && info.dli_fname) {
        own_base = info.dli_fbase;
        /* Resolve a relative LD_PRELOAD path now: the program may chdir. */
        char path[PATH_MAX];
        if (info.dli_fname[0] == '/' || !realpath(info.dli_fname, path))
            snprintf(path, sizeof path, "%s", info.dli_fname);
        char *slash = strrchr(path, '/');
        if (slash) {
            *slash = 0;
            snprintf(own_dir, sizeof own_dir, "%s", path[0] ? path : "/");
        }
    }
    pthread_atfork(NULL, NULL, atfork_child);
}

/* load_library dlopens libconvcache from our directory; lib_mu is held. */
static void load_library(void) {
    __atomic_store_n(&lib_state, LIB_LOADING, __ATOMIC_RELEASE);
    COUNT(library_loads);
    static const char *const names[] = {"libconvcache.so." CC_STR(CONVCACHE_VERSION_MAJOR),
                                        "libconvcache.so"};
    char path[PATH_MAX + 64], first_err[PATH_MAX + 256] = "";
    void *h = NULL;
    if (!own_dir[0]) {
        snprintf(first_err, sizeof first_err, "cannot tell this library's own directory");
    } else {
        for (int i = 0; i < 2 && !h; i++) {
            snprintf(path, sizeof path, "%s/%s", own_dir, names[i]);
            h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
            if (!h && i == 0) snprintf(first_err, sizeof first_err, "%s", dlerror());
        }
    }
    if (h) {
        api.open = (int (*)(const char *, const char *, convcache **))dlsym(h, "convcache_open");
        api.get_or_create = (int (*)(convcache *, const void *, size_t, convcache_builder, void *,
                                     void *, size_t, size_t *))dlsym(h, "convcache_get_or_create");
        api.insert = (int (*)(convcache *, const void *, size_t, const void *, size_t))dlsym(
            h, "convcache_insert");
        api.cudnn_scope = (int (*)(int, char *, size_t))dlsym(h, "convcache_cudnn_scope");
        api.last_error = (const char *(*)(void))dlsym(h, "convcache_last_error");
        if (!api.open || !api.get_or_create || !api.insert || !api.cudnn_scope ||
            !api.last_error) {
            snprintf(first_err, sizeof first_err, "%s lacks convcache_cudnn_scope or another "
                     "function (an older library?)", path);
            h = NULL;
        }
    }
    if (!h) {
        warn_once(W_LOAD, "cannot load libconvcache.so from %s (%s); cuDNN find calls run "
                  "uncached", own_dir[0] ? own_dir : "?", first_err);
        __atomic_store_n(&lib_state, LIB_FAILED, __ATOMIC_RELEASE);
        return;
    }
    __atomic_store_n(&lib_state, LIB_READY, __ATOMIC_RELEASE);
}

/* ---- the handle's device ------------------------------------------------ */

/* handle_device sets *dev to the CUDA device of the handle's stream (the
 * current device when the stream is the default one). Returns 0 or -1. */
static int handle_device(cudnnHandle_t handle, int *dev) {
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!cuda) return -1;
    cu_ctx_get_device_fn get_device = (cu_ctx_get_device_fn)dlsym(cuda, "cuCtxGetDevice");
    cu_stream_get_ctx_fn stream_ctx = (cu_stream_get_ctx_fn)dlsym(cuda, "cuStreamGetCtx");
    cu_ctx_push_fn push = (cu_ctx_push_fn)dlsym(cuda, "cuCtxPushCurrent_v2");
    cu_ctx_pop_fn pop = (cu_ctx_pop_fn)dlsym(cuda, "cuCtxPopCurrent_v2");
    int rc = -1;
    if (get_device) {
        get_stream_fn get_stream = (get_stream_fn)real(F_GET_STREAM);
        cudaStream_t s = NULL;
        void *ctx = NULL, *popped = NULL;
        if (get_stream && stream_ctx && push && pop && get_stream(handle, &s) == 0 && s &&
            stream_ctx(s, &ctx) == 0 && ctx && push(ctx) == 0) {
            rc = get_device(dev) == 0 ? 0 : -1;
            pop(&popped);
        }
        if (rc != 0) rc = get_device(dev) == 0 ? 0 : -1;
    }
    dlclose(cuda); /* drops only the reference NOLOAD took */
    return rc;
}

/* cache_for returns the handle for the handle's device, or NULL to pass the
 * call through. lib_state is LIB_READY. */
static convcache *cache_for(cudnnHandle_t handle, int *devp) {
    int dev = -1;
    if (handle_device(handle, &dev) != 0 || dev < 0 || dev >= MAX_DEVICES) {
        warn_once(W_SCOPE, "cannot tell the CUDA device of a cuDNN handle; its find calls run "
                  "uncached");
        return NULL;
    }
    *devp = dev;
    if (__atomic_load_n(&devices[dev].state, __ATOMIC_ACQUIRE) == 1) return devices[dev].c;
    convcache *c = NULL;
    pthread_mutex_lock(&lib_mu);
    if (devices[dev].state == 0) {
        char scope[CONVCACHE_SCOPE_MAX + 1];
        int n = api.cudnn_scope(dev, scope, sizeof scope);
        if (n < 0) {
            warn_once(W_SCOPE, "cannot fingerprint CUDA device %d (%s); its find calls run "
                      "uncached", dev, api.last_error());
        } else {
            int i = 0;
            for (; i < MAX_SCOPES && scopes[i].scope; i++)
                if (strcmp(scopes[i].scope, scope) == 0) break;
            if (i < MAX_SCOPES && scopes[i].scope) {
                c = scopes[i].c;
            } else if (i < MAX_SCOPES) {
                int rc = api.open(NULL, scope, &c);
                if (rc < 0) {
                    warn_once(W_OPEN, "cannot open the cache (%s); find calls run uncached",
                              api.last_error());
                    c = NULL;
                } else {
                    scopes[i].scope = strdup(scope);
                    scopes[i].c = c;
                }
            }
        }
        devices[dev].c = c;
        __atomic_store_n(&devices[dev].state, c ? 1 : 2, __ATOMIC_RELEASE);
    }
    c = devices[dev].state == 1 ? devices[dev].c : NULL;
    pthread_mutex_unlock(&lib_mu);
    return c;
}

/* ---- one intercepted call ----------------------------------------------- */

enum { OP_FWD = 1, OP_BWD_DATA = 2, OP_BWD_FILTER = 3 };
static const int algo_count[4] = {0, 8, 6, 7};
static const char *const op_names[4] = {"", "fwd", "bwd-data", "bwd-filter"};

#define MAX_RESULTS 16 /* the largest algorithm enum has 8 */

struct call {
    int op, ex;
    cudnnHandle_t handle;
    const void *desc[4];  /* in argument order */
    const void *data[3];  /* Ex: the three data pointers, in argument order */
    int requested;
    int *returned;
    cc_perf *perf;
    void *workspace;
    size_t workspace_size;
    /* set by the builder */
    int ran;
    cudnnStatus_t status;
};

static cudnnStatus_t call_real(struct call *c) {
    int f = (c->op - 1) * 2 + c->ex;
    void *p = real(f);
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

/* A key buffer; the largest key is under 400 bytes. */
struct key {
    unsigned char b[1024];
    size_t n;
    int bad;
};

static void put32(struct key *k, int32_t v) {
    if (k->n + 4 > sizeof k->b) {
        k->bad = 1;
        return;
    }
    uint32_t u = (uint32_t)v;
    for (int i = 0; i < 4; i++) k->b[k->n++] = (unsigned char)(u >> (8 * i));
}

static void put64(struct key *k, uint64_t v) {
    put32(k, (int32_t)(uint32_t)v);
    put32(k, (int32_t)(uint32_t)(v >> 32));
}

static void put_tensor(struct key *k, const void *d) {
    int dt = 0, nb = 0, dims[CUDNN_DIM_MAX], strides[CUDNN_DIM_MAX];
    get_tensor_fn f = (get_tensor_fn)real(F_GET_TENSOR);
    if (!f || !d || f(d, CUDNN_DIM_MAX, &dt, &nb, dims, strides) != 0 || nb < 0 ||
        nb > CUDNN_DIM_MAX) {
        k->bad = 1;
        return;
    }
    put32(k, dt);
    put32(k, nb);
    for (int i = 0; i < nb; i++) put32(k, dims[i]);
    for (int i = 0; i < nb; i++) put32(k, strides[i]);
}

static void put_filter(struct key *k, const void *d) {
    int dt = 0, fmt = 0, nb = 0, dims[CUDNN_DIM_MAX];
    get_filter_fn f = (get_filter_fn)real(F_GET_FILTER);
    if (!f || !d || f(d, CUDNN_DIM_MAX, &dt, &fmt, &nb, dims) != 0 || nb < 0 ||
        nb > CUDNN_DIM_MAX) {
        k->bad = 1;
        return;
    }
    put32(k, dt);
    put32(k, fmt);
    put32(k, nb);
    for (int i = 0; i < nb; i++) put32(k, dims[i]);
}

static void put_conv(struct key *k, const void *d) {
    enum { N = CUDNN_DIM_MAX - 2 };
    int n = 0, pad[N], stride[N], dil[N], mode = 0, ctype = 0, math = 0, groups = 0,
        reorder = -1;
    get_conv_fn f = (get_conv_fn)real(F_GET_CONV);
    get_int_fn fm = (get_int_fn)real(F_GET_MATH), fg = (get_int_fn)real(F_GET_GROUPS),
               fr = (get_int_fn)real(F_GET_REORDER);
    if (!f || !fm || !fg || !d || f(d, N, &n, pad, stride, dil, &mode, &ctype) != 0 || n < 0 ||
        n > N || fm(d, &math) != 0 || fg(d, &groups) != 0) {
        k->bad = 1;
        return;
    }
    if (fr && fr(d, &reorder) != 0) reorder = -1;
    put32(k, n);
    for (int i = 0; i < n; i++) put32(k, pad[i]);
    for (int i = 0; i < n; i++) put32(k, stride[i]);
    for (int i = 0; i < n; i++) put32(k, dil[i]);
    put32(k, mode);
    put32(k, ctype);
    put32(k, math);
    put32(k, groups);
    put32(k, reorder);
}

/* Descriptor kinds in argument order, per operation. */
enum { D_TENSOR, D_FILTER, D_CONV };
static const int desc_kinds[4][4] = {
    {0},
    {D_TENSOR, D_FILTER, D_CONV, D_TENSOR}, /* x, w, conv, y */
    {D_FILTER, D_TENSOR, D_CONV, D_TENSOR}, /* w, dy, conv, dx */
    {D_TENSOR, D_TENSOR, D_CONV, D_FILTER}, /* x, dy, conv, dw */
};

static int build_key(struct call *c, struct key *k) {
    k->n = 0;
    k->bad = 0;
    memcpy(k->b, "ccf1", 4);
    k->n = 4;
    k->b[k->n++] = (unsigned char)c->op;
    k->b[k->n++] = (unsigned char)c->ex;
    k->b[k->n++] = 0;
    k->b[k->n++] = 0;
    put32(k, c->requested);
    put64(k, c->ex ? (uint64_t)c->workspace_size : 0);
    for (int i = 0; i < 4 && !k->bad; i++) {
        switch (desc_kinds[c->op][i]) {
        case D_TENSOR: put_tensor(k, c->desc[i]); break;
        case D_FILTER: put_filter(k, c->desc[i]); break;
        case D_CONV: put_conv(k, c->desc[i]); break;
        }
    }
    return k->bad ? -1 : 0;
}

/* valid reports whether n results are acceptable for c: within the request
 * and the buffer, algorithms within their enum, and (Ex) successful entries
 * within the workspace offered. */
static int valid(const struct call *c, const cc_perf *p, int n) {
    if (n < 1 || n > c->requested || n > MAX_RESULTS) return 0;
    for (int i = 0; i < n; i++) {
        if (p[i].algo < 0 || p[i].algo >= algo_count[c->op]) return 0;
        if (c->ex && p[i].status == CUDNN_STATUS_SUCCESS && p[i].memory > c->workspace_size)
            return 0;
    }
    return 1;
}

/* The builder convcache_get_or_create runs on a miss: the real benchmark,
 * on the calling thread (so the CUDA context is the caller's). */
static int build(void *user, const void *key, size_t key_len, void *value, size_t value_cap,
                 size_t *value_len) {
    (void)key;
    (void)key_len;
    struct call *c = user;
    c->ran = 1;
    c->status = call_real(c);
    if (c->status != CUDNN_STATUS_SUCCESS) return CONVCACHE_E_USER; /* store nothing */
    int n = *c->returned;
    if (!valid(c, c->perf, n) || (size_t)n * sizeof(cc_perf) > value_cap) {
        warn_once(W_ENTRY, "cuDNN returned %d results that do not pass the checks; not cached", n);
        COUNT(errors);
        return CONVCACHE_E_USER - 1;
    }
    memcpy(value, c->perf, (size_t)n * sizeof(cc_perf));
    *value_len = (size_t)n * sizeof(cc_perf);
    return 0;
}

static int log_enabled(void) {
    const char *v = getenv("CONVCACHE_PRELOAD_LOG");
    return v && v[0] && strcmp(v, "0") != 0;
}

static void log_call(const struct call *c, const char *what, int dev, const struct key *k) {
    char hex[2 * sizeof k->b + 1];
    size_t n = k ? k->n : 0;
    for (size_t i = 0; i < n; i++) snprintf(hex + 2 * i, 3, "%02x", k->b[i]);
    hex[2 * n] = 0;
    fprintf(stderr, "convcache-preload: %s%s %s device %d key %s\n", op_names[c->op],
            c->ex ? "-ex" : "", what, dev, n ? hex : "-");
}

/* not_supported is CUDNN_STATUS_NOT_SUPPORTED of the loaded cuDNN: its
 * value changed in cuDNN 9. */
static cudnnStatus_t not_supported(void) {
    size_t (*version)(void) = (size_t (*)(void))dlsym(RTLD_NEXT, "cudnnGetVersion");
    return version && version() < 90000 ? CUDNN_STATUS_NOT_SUPPORTED_V8 : CUDNN_STATUS_NOT_SUPPORTED_V9;
}

static cudnnStatus_t passthrough(struct call *c, int dev, const struct key *k) {
    COUNT(passthrough);
    if (log_enabled()) log_call(c, "passthrough", dev, k);
    return call_real(c);
}

static cudnnStatus_t intercept(struct call *c) {
    COUNT(calls);
    int state = __atomic_load_n(&lib_state, __ATOMIC_ACQUIRE);
    if (state == LIB_FORKED || state == LIB_FAILED) return passthrough(c, -1, NULL);
    if (c->requested < 1 || !c->returned || !c->perf) return passthrough(c, -1, NULL);
    struct key k;
    if (build_key(c, &k) != 0) return passthrough(c, -1, NULL);
    if (state != LIB_READY) {
        pthread_mutex_lock(&lib_mu);
        if (__atomic_load_n(&lib_state, __ATOMIC_ACQUIRE) == LIB_NONE) load_library();
        pthread_mutex_unlock(&lib_mu);
        if (__atomic_load_n(&lib_state, __ATOMIC_ACQUIRE) != LIB_READY)
            return passthrough(c, -1, &k);
    }
    int dev = -1;
    convcache *cache = cache_for(c->handle, &dev);
    if (!cache) return passthrough(c, dev, &k);

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
        if (log_enabled()) log_call(c, "miss", dev, &k);
        return c->status;
    }
    if (rc == CONVCACHE_HIT && len % sizeof(cc_perf) == 0 &&
        valid(c, cached, (int)(len / sizeof(cc_perf)))) {
        int n = (int)(len / sizeof(cc_perf));
        memcpy(c->perf, cached, len);
        *c->returned = n;
        COUNT(hits);
        if (log_enabled()) log_call(c, "hit", dev, &k);
        return CUDNN_STATUS_SUCCESS;
    }
    COUNT(errors);
    if (rc == CONVCACHE_HIT || rc == CONVCACHE_E_RANGE) {
        /* A stored entry that fails the checks: measure again, replace it. */
        warn_once(W_ENTRY, "ignoring a cached %s result that fails the checks; measuring again",
                  op_names[c->op]);
        COUNT(misses);
        cudnnStatus_t st = call_real(c);
        if (st == CUDNN_STATUS_SUCCESS && valid(c, c->perf, *c->returned))
            api.insert(cache, k.b, k.n, c->perf, (size_t)*c->returned * sizeof(cc_perf));
        if (log_enabled()) log_call(c, "replaced", dev, &k);
        return st;
    }
    if (rc == CONVCACHE_E_MISS) {
        /* CONVCACHE_MODE=strict: production proves it never benchmarks. A
         * miss is an error to the caller, not a silent benchmark. */
        warn_once(W_STRICT, "CONVCACHE_MODE=strict: a %s problem is not in the cache; returning "
                  "CUDNN_STATUS_NOT_SUPPORTED instead of benchmarking", op_names[c->op]);
        if (log_enabled()) log_call(c, "strict-miss", dev, &k);
        return not_supported();
    }
    warn_once(W_CACHE, "cache error (%s); this call and others like it run uncached",
              api.last_error());
    return passthrough(c, dev, &k);
}

/* ---- the interposed functions ------------------------------------------- */

EXPORT cudnnStatus_t cudnnFindConvolutionForwardAlgorithm(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const cudnnFilterDescriptor_t wDesc,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t yDesc,
    const int requestedAlgoCount, int *returnedAlgoCount, cc_perf *perfResults) {
    struct call c = {.op = OP_FWD, .handle = handle, .desc = {xDesc, wDesc, convDesc, yDesc},
                     .requested = requestedAlgoCount, .returned = returnedAlgoCount,
                     .perf = perfResults};
    return intercept(&c);
}

EXPORT cudnnStatus_t cudnnFindConvolutionForwardAlgorithmEx(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const void *x,
    const cudnnFilterDescriptor_t wDesc, const void *w, const cudnnConvolutionDescriptor_t convDesc,
    const cudnnTensorDescriptor_t yDesc, void *y, const int requestedAlgoCount,
    int *returnedAlgoCount, cc_perf *perfResults, void *workSpace, size_t workSpaceSizeInBytes) {
    struct call c = {.op = OP_FWD, .ex = 1, .handle = handle,
                     .desc = {xDesc, wDesc, convDesc, yDesc}, .data = {x, w, y},
                     .requested = requestedAlgoCount, .returned = returnedAlgoCount,
                     .perf = perfResults, .workspace = workSpace,
                     .workspace_size = workSpaceSizeInBytes};
    return intercept(&c);
}

EXPORT cudnnStatus_t cudnnFindConvolutionBackwardDataAlgorithm(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t wDesc, const cudnnTensorDescriptor_t dyDesc,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t dxDesc,
    const int requestedAlgoCount, int *returnedAlgoCount, cc_perf *perfResults) {
    struct call c = {.op = OP_BWD_DATA, .handle = handle, .desc = {wDesc, dyDesc, convDesc, dxDesc},
                     .requested = requestedAlgoCount, .returned = returnedAlgoCount,
                     .perf = perfResults};
    return intercept(&c);
}

EXPORT cudnnStatus_t cudnnFindConvolutionBackwardDataAlgorithmEx(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t wDesc, const void *w,
    const cudnnTensorDescriptor_t dyDesc, const void *dy,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t dxDesc, void *dx,
    const int requestedAlgoCount, int *returnedAlgoCount, cc_perf *perfResults, void *workSpace,
    size_t workSpaceSizeInBytes) {
    struct call c = {.op = OP_BWD_DATA, .ex = 1, .handle = handle,
                     .desc = {wDesc, dyDesc, convDesc, dxDesc}, .data = {w, dy, dx},
                     .requested = requestedAlgoCount, .returned = returnedAlgoCount,
                     .perf = perfResults, .workspace = workSpace,
                     .workspace_size = workSpaceSizeInBytes};
    return intercept(&c);
}

EXPORT cudnnStatus_t cudnnFindConvolutionBackwardFilterAlgorithm(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const cudnnTensorDescriptor_t dyDesc,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnFilterDescriptor_t dwDesc,
    const int requestedAlgoCount, int *returnedAlgoCount, cc_perf *perfResults) {
    struct call c = {.op = OP_BWD_FILTER, .handle = handle,
                     .desc = {xDesc, dyDesc, convDesc, dwDesc}, .requested = requestedAlgoCount,
                     .returned = returnedAlgoCount, .perf = perfResults};
    return intercept(&c);
}

EXPORT cudnnStatus_t cudnnFindConvolutionBackwardFilterAlgorithmEx(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const void *x,
    const cudnnTensorDescriptor_t dyDesc, const void *y,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnFilterDescriptor_t dwDesc, void *dw,
    const int requestedAlgoCount, int *returnedAlgoCount, cc_perf *perfResults, void *workSpace,
    size_t workSpaceSizeInBytes) {
    struct call c = {.op = OP_BWD_FILTER, .ex = 1, .handle = handle,
                     .desc = {xDesc, dyDesc, convDesc, dwDesc}, .data = {x, y, dw},
                     .requested = requestedAlgoCount, .returned = returnedAlgoCount,
                     .perf = perfResults, .workspace = workSpace,
                     .workspace_size = workSpaceSizeInBytes};
    return intercept(&c);
}
