/*
 * A stand-in for cuDNN 9 (libcudnn.so.9) with what convcache's fingerprint
 * and LD_PRELOAD interposer use, for tests on machines without a GPU.
 *
 * Descriptors hold what was set and give it back through the real getters'
 * signatures. The six find functions count the calls that reach them
 * (standin_find_calls()) and return deterministic results computed from
 * every descriptor field, the requested count and the workspace size, so
 * that any change in the key gives different results.
 *
 * Environment:
 *   STANDIN_CUDNN_VERSION  cudnnGetVersion (default 91300)
 *   STANDIN_FIND_STATUS    the find functions fail with this status (after
 *                          filling in results, which must not be used)
 *   STANDIN_FIND_MS        each find call takes this long (default 0), as a
 *                          benchmark would
 *   STANDIN_BAD_ALGO       the find functions return algorithm 99 first
 *   STANDIN_BAD_DIMS       a getter reports a dimension count out of range:
 *                          tensor or filter (9), conv (7), negative (tensor -1)
 *   STANDIN_POISON         the find functions return one poisoned field:
 *                          memory (2^62), math (77), det (2), status (77),
 *                          time (NaN), order (the first two successes
 *                          swapped), count (100 more than were written) or
 *                          reserved (5 in the first result's reserved[1])
 *
 * The slowest result is a failure, CUDNN_STATUS_NOT_SUPPORTED of the version
 * reported (9 before cuDNN 9, 3000 since).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* cuDNN's values, under its names (tests/realcudnn checks each one against
 * the real headers). */
#define CUDNN_STATUS_SUCCESS 0
#define CUDNN_STATUS_BAD_PARAM 2000
#define CUDNN_STATUS_NOT_SUPPORTED 3000
#define CUDNN_STATUS_NOT_SUPPORTED_V8 9 /* cuDNN 8's (not checked) */
#define CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED 4003
#define CUDNN_DIM_MAX 8
#define CUDNN_CONVOLUTION_FWD_ALGO_COUNT 8
#define CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT 6
#define CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT 7
#define OK CUDNN_STATUS_SUCCESS
#define BAD_PARAM CUDNN_STATUS_BAD_PARAM
#define DIM_MAX CUDNN_DIM_MAX

typedef struct {
    int algo, status;
    float time;
    size_t memory;
    int determinism, mathType, reserved[3];
} perf_t;

struct handle { void *stream; };
struct tensor { int dt, nb, dims[DIM_MAX], strides[DIM_MAX]; };
struct filter { int dt, fmt, nb, dims[DIM_MAX]; };
struct conv {
    int n, pad[DIM_MAX], stride[DIM_MAX], dil[DIM_MAX], mode, ctype, math, groups, reorder;
};

static int find_calls;

int standin_find_calls(void) { return __atomic_load_n(&find_calls, __ATOMIC_RELAXED); }

/* A lookup cuDNN makes itself, as cuDNN 9's libcudnn.so.9 takes each
 * function from its sub-library with dlsym: name in this library's own
 * handle (tests/preload/dlsym_exact.c; the interposer must answer it as
 * glibc does, never with its own function). */
void *standin_lookup_own(const char *name) {
    void *h = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_NOLOAD);
    /* Not a tail call: the caller a dlsym sees is its return address's
     * object, and a tail call's is this function's caller. */
    void *volatile p = h ? dlsym(h, name) : NULL;
    return p;
}

static size_t env_size(const char *name, size_t def) {
    const char *v = getenv(name);
    return v && *v ? (size_t)strtoull(v, NULL, 10) : def;
}

static int bad_dims(const char *kind) {
    const char *v = getenv("STANDIN_BAD_DIMS");
    return v && !strcmp(v, kind);
}

size_t cudnnGetVersion(void) { return env_size("STANDIN_CUDNN_VERSION", 91300); }
size_t cudnnGetCudartVersion(void) { return 13000; }

int cudnnCreate(struct handle **h) {
    if (!h) return BAD_PARAM;
    *h = calloc(1, sizeof **h);
    return *h ? OK : CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
}
int cudnnDestroy(struct handle *h) { free(h); return OK; }
int cudnnSetStream(struct handle *h, void *s) {
    if (!h) return BAD_PARAM;
    h->stream = s;
    return OK;
}
int cudnnGetStream(struct handle *h, void **s) {
    if (!h || !s) return BAD_PARAM;
    *s = h->stream;
    return OK;
}

/* What cudnn_frontend puts in its exceptions' messages. */
const char *cudnnGetErrorString(int status) {
    switch (status) {
    case OK: return "CUDNN_STATUS_SUCCESS";
    case BAD_PARAM: return "CUDNN_STATUS_BAD_PARAM";
    case 1001: return "CUDNN_STATUS_NOT_INITIALIZED";
    case 3000: return "CUDNN_STATUS_NOT_SUPPORTED";
    case 5000: return "CUDNN_STATUS_EXECUTION_FAILED";
    }
    return "CUDNN_STATUS_UNKNOWN (stand-in)";
}
void cudnnGetLastErrorString(char *message, size_t max_size) {
    if (message && max_size) message[0] = 0;
}

int cudnnCreateTensorDescriptor(struct tensor **d) { *d = calloc(1, sizeof **d); return OK; }
int cudnnDestroyTensorDescriptor(struct tensor *d) { free(d); return OK; }
int cudnnSetTensorNdDescriptor(struct tensor *d, int dt, int nb, const int *dims,
                               const int *strides) {
    if (!d || nb < 1 || nb > DIM_MAX) return BAD_PARAM;
    memset(d, 0, sizeof *d);
    d->dt = dt;
    d->nb = nb;
    memcpy(d->dims, dims, sizeof(int) * (size_t)nb);
    memcpy(d->strides, strides, sizeof(int) * (size_t)nb);
    return OK;
}
int cudnnGetTensorNdDescriptor(const struct tensor *d, int req, int *dt, int *nb, int *dims,
                               int *strides) {
    if (!d || !dt || !nb || req < 0) return BAD_PARAM;
    *dt = d->dt;
    *nb = d->nb;
    for (int i = 0; i < d->nb && i < req; i++) dims[i] = d->dims[i], strides[i] = d->strides[i];
    if (bad_dims("tensor")) *nb = DIM_MAX + 1;
    if (bad_dims("negative")) *nb = -1;
    return OK;
}

int cudnnCreateFilterDescriptor(struct filter **d) { *d = calloc(1, sizeof **d); return OK; }
int cudnnDestroyFilterDescriptor(struct filter *d) { free(d); return OK; }
int cudnnSetFilterNdDescriptor(struct filter *d, int dt, int fmt, int nb, const int *dims) {
    if (!d || nb < 1 || nb > DIM_MAX) return BAD_PARAM;
    memset(d, 0, sizeof *d);
    d->dt = dt;
    d->fmt = fmt;
    d->nb = nb;
    memcpy(d->dims, dims, sizeof(int) * (size_t)nb);
    return OK;
}
int cudnnGetFilterNdDescriptor(const struct filter *d, int req, int *dt, int *fmt, int *nb,
                               int *dims) {
    if (!d || !dt || !fmt || !nb || req < 0) return BAD_PARAM;
    *dt = d->dt;
    *fmt = d->fmt;
    *nb = d->nb;
    for (int i = 0; i < d->nb && i < req; i++) dims[i] = d->dims[i];
    if (bad_dims("filter")) *nb = DIM_MAX + 1;
    return OK;
}

int cudnnCreateConvolutionDescriptor(struct conv **d) {
    *d = calloc(1, sizeof **d);
    (*d)->groups = 1;
    return OK;
}
int cudnnDestroyConvolutionDescriptor(struct conv *d) { free(d); return OK; }
int cudnnSetConvolutionNdDescriptor(struct conv *d, int n, const int *pad, const int *stride,
                                    const int *dil, int mode, int ctype) {
    if (!d || n < 1 || n > DIM_MAX - 2) return BAD_PARAM;
    memset(d->pad, 0, sizeof d->pad);
    memset(d->stride, 0, sizeof d->stride);
    memset(d->dil, 0, sizeof d->dil);
    d->n = n;
    memcpy(d->pad, pad, sizeof(int) * (size_t)n);
    memcpy(d->stride, stride, sizeof(int) * (size_t)n);
    memcpy(d->dil, dil, sizeof(int) * (size_t)n);
    d->mode = mode;
    d->ctype = ctype;
    return OK;
}
int cudnnGetConvolutionNdDescriptor(const struct conv *d, int req, int *n, int *pad, int *stride,
                                    int *dil, int *mode, int *ctype) {
    if (!d || !n || !mode || !ctype || req < 0 || req > DIM_MAX - 2) return BAD_PARAM;
    *n = d->n;
    for (int i = 0; i < d->n && i < req; i++)
        pad[i] = d->pad[i], stride[i] = d->stride[i], dil[i] = d->dil[i];
    *mode = d->mode;
    *ctype = d->ctype;
    if (bad_dims("conv")) *n = DIM_MAX - 1;
    return OK;
}
int cudnnSetConvolutionMathType(struct conv *d, int m) { d->math = m; return OK; }
int cudnnGetConvolutionMathType(const struct conv *d, int *m) { *m = d->math; return OK; }
int cudnnSetConvolutionGroupCount(struct conv *d, int g) { d->groups = g; return OK; }
int cudnnGetConvolutionGroupCount(const struct conv *d, int *g) { *g = d->groups; return OK; }
int cudnnSetConvolutionReorderType(struct conv *d, int r) { d->reorder = r; return OK; }
int cudnnGetConvolutionReorderType(const struct conv *d, int *r) { *r = d->reorder; return OK; }

/* ---- find ---------------------------------------------------------------- */

static uint32_t mix(uint32_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x01000193u;
    return h;
}

/* poison applies STANDIN_POISON to the results. */
static void poison(perf_t *perf, int *returned) {
    const char *f = getenv("STANDIN_POISON");
    if (!f) return;
    if (!strcmp(f, "memory")) perf[0].memory = (size_t)1 << 62;
    if (!strcmp(f, "math")) perf[0].mathType = 77;
    if (!strcmp(f, "det")) perf[0].determinism = 2;
    if (!strcmp(f, "status")) perf[0].status = 77;
    if (!strcmp(f, "time")) perf[0].time = NAN;
    if (!strcmp(f, "order") && *returned > 2) {
        perf_t t = perf[0];
        perf[0] = perf[1];
        perf[1] = t;
    }
    if (!strcmp(f, "count")) *returned += 100;
    if (!strcmp(f, "reserved")) perf[0].reserved[1] = 5;
}

/* find computes results from everything the call was given. handle is
 * the handle; ptrs_ok is 0 for an Ex call given a NULL data pointer, or a
 * NULL workspace of more than 0 bytes. */
static int find(const void *handle, int ptrs_ok, int op, const void *d0, size_t n0,
                const void *d1, size_t n1, const struct conv *conv, const void *d3, size_t n3, int requested, int *returned,
                perf_t *perf, size_t ws, int ex) {
    __atomic_fetch_add(&find_calls, 1, __ATOMIC_RELAXED);
    size_t ms = env_size("STANDIN_FIND_MS", 0);
    if (ms) {
        struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) != 0) {}
    }
    if (!handle || !ptrs_ok || !d0 || !d1 || !conv || !d3 || !returned || !perf || requested < 1)
        return BAD_PARAM;
    static const int counts[4] = {0, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                   CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
                                   CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT};
    uint32_t h = 0x811C9DC5u;
    h = mix(h, &op, sizeof op);
    h = mix(h, &ex, sizeof ex);
    h = mix(h, d0, n0);
    h = mix(h, d1, n1);
    h = mix(h, conv, sizeof *conv);
    h = mix(h, d3, n3);
    h = mix(h, &requested, sizeof requested);
    h = mix(h, &ws, sizeof ws);
    int n = requested < counts[op] ? requested : counts[op];
    const int not_supported =
        cudnnGetVersion() < 90000 ? CUDNN_STATUS_NOT_SUPPORTED_V8 : CUDNN_STATUS_NOT_SUPPORTED;
    for (int i = 0; i < n; i++) {
        memset(&perf[i], 0, sizeof perf[i]);
        perf[i].algo = (int)((h + (uint32_t)i) % (uint32_t)counts[op]);
        perf[i].status = i == n - 1 ? not_supported : OK; /* the slowest is "not supported" */
        perf[i].time = (float)((h >> 8) % 1000) / 1000.0f + (float)i;
        perf[i].memory = ex ? (ws / 8) * (size_t)i / (size_t)(n > 1 ? n - 1 : 1) : (size_t)i << 12;
        perf[i].determinism = (int)((h >> (i & 15)) & 1);
        perf[i].mathType = conv->math;
    }
    if (getenv("STANDIN_BAD_ALGO")) perf[0].algo = 99;
    *returned = n;
    poison(perf, returned);
    /* A failure still fills the results: the caller must look at the status. */
    return (int)env_size("STANDIN_FIND_STATUS", 0);
}

#define T sizeof(struct tensor)
#define F sizeof(struct filter)

int cudnnFindConvolutionForwardAlgorithm(void *h, const struct tensor *x, const struct filter *w,
                                         const struct conv *c, const struct tensor *y, int req,
                                         int *ret, perf_t *perf) {
    return find(h, 1, 1, x, T, w, F, c, y, T, req, ret, perf, 0, 0);
}
int cudnnFindConvolutionForwardAlgorithmEx(void *h, const struct tensor *x, const void *xp,
                                           const struct filter *w, const void *wp,
                                           const struct conv *c, const struct tensor *y, void *yp,
                                           int req, int *ret, perf_t *perf, void *ws,
                                           size_t wss) {
    return find(h, xp && wp && yp && (ws || !wss),
                1, x, T, w, F, c, y, T, req, ret, perf, wss, 1);
}
int cudnnFindConvolutionBackwardDataAlgorithm(void *h, const struct filter *w,
                                              const struct tensor *dy, const struct conv *c,
                                              const struct tensor *dx, int req, int *ret,
                                              perf_t *perf) {
    return find(h, 1, 2, w, F, dy, T, c, dx, T, req, ret, perf, 0, 0);
}
int cudnnFindConvolutionBackwardDataAlgorithmEx(void *h, const struct filter *w, const void *wp,
                                                const struct tensor *dy, const void *dyp,
                                                const struct conv *c, const struct tensor *dx,
                                                void *dxp, int req, int *ret, perf_t *perf,
                                                void *ws, size_t wss) {
    return find(h, wp && dyp && dxp && (ws || !wss),
                2, w, F, dy, T, c, dx, T, req, ret, perf, wss, 1);
}
int cudnnFindConvolutionBackwardFilterAlgorithm(void *h, const struct tensor *x,
                                                const struct tensor *dy, const struct conv *c,
                                                const struct filter *dw, int req, int *ret,
                                                perf_t *perf) {
    return find(h, 1, 3, x, T, dy, T, c, dw, F, req, ret, perf, 0, 0);
}
int cudnnFindConvolutionBackwardFilterAlgorithmEx(void *h, const struct tensor *x, const void *xp,
                                                  const struct tensor *dy, const void *dyp,
                                                  const struct conv *c, const struct filter *dw,
                                                  void *dwp, int req, int *ret, perf_t *perf,
                                                  void *ws, size_t wss) {
    return find(h, xp && dyp && dwp && (ws || !wss),
                3, x, T, dy, T, c, dw, F, req, ret, perf, wss, 1);
}
