/*
 * What the files of libconvcache_preload.so share (internal: every name
 * here is hidden by -fvisibility=hidden). preload.c holds the interposed
 * functions, handles.c the cache handles (loading libconvcache, scopes),
 * key.c the find key, perf.c the rules a perf struct must pass, counters.c
 * the counters and the exit summary; dlsym.c, dlsym_entry.S and
 * dlsym_libc.c the interposed dlsym and dlvsym (dlsym.h), which hand a
 * program that opens cuDNN with dlopen the interposer's functions; v8.h
 * and v8_*.c the backend API.
 */
#ifndef CONVCACHE_PRELOAD_H
#define CONVCACHE_PRELOAD_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#include "convcache.h"
#include "preload_stats.h"

#define EXPORT __attribute__((visibility("default")))

/* ---- the few cuDNN and CUDA driver types we need (ABI only) ------------ */

/* The shipped build declares what it needs itself, under NVIDIA's names,
 * and needs no cuDNN or CUDA header. The check build (make real-cudnn-check,
 * tests/realcudnn) defines CONVCACHE_REAL_CUDNN and takes every name from
 * NVIDIA's real headers instead: the compiler then checks each interposed
 * function against the real prototype, and tests/realcudnn checks each
 * value defined below (CUDNN_ and CU_ names) and each function type against
 * the real ones. Values that only cuDNN 8 had end in _V8 (not checked). */
#ifdef CONVCACHE_REAL_CUDNN
#include <cuda.h>
#include <cudnn.h>
#else
typedef int cudnnStatus_t;
typedef int cudnnDataType_t;
typedef struct cudnnContext *cudnnHandle_t;
typedef struct cudnnTensorStruct *cudnnTensorDescriptor_t;
typedef struct cudnnFilterStruct *cudnnFilterDescriptor_t;
typedef struct cudnnConvolutionStruct *cudnnConvolutionDescriptor_t;
typedef struct CUstream_st *cudaStream_t;
typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;

#define CUDNN_STATUS_SUCCESS 0
#define CUDNN_STATUS_NOT_INITIALIZED 1001
#define CUDNN_STATUS_BAD_PARAM 2000
#define CUDNN_STATUS_NOT_SUPPORTED 3000
#ifndef CUDNN_DIM_MAX
#define CUDNN_DIM_MAX 8
#endif
#define CUDNN_CONVOLUTION_FWD_ALGO_COUNT 8
#define CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT 6
#define CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT 7
#define CUDNN_NON_DETERMINISTIC 0
#define CUDNN_DETERMINISTIC 1
#define CUDNN_DEFAULT_MATH 0
#define CUDNN_FMA_MATH 3 /* the last cudnnMathType_t */
#endif

/* cuDNN 9 numbers its errors category + code (cudnn_graph.h), the
 * categories from CUDNN_STATUS_NOT_INITIALIZED's (1000) to
 * CUDNN_STATUS_EXECUTION_FAILED's (5000). */
#define CC_STATUS_V9_MIN 1000
#define CC_STATUS_V9_MAX 5999
/* cuDNN 8 (not checked: the headers are cuDNN 9's). */
#define CUDNN_STATUS_NOT_SUPPORTED_V8 9
#define CUDNN_STATUS_BAD_PARAM_V8 3
#define CUDNN_STATUS_VERSION_MISMATCH_V8 14 /* its last status */

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
static_assert(sizeof(cc_perf) == 48, "cuDNN perf structs are 48 bytes");
#ifndef CONVCACHE_REAL_CUDNN
typedef cc_perf cudnnConvolutionFwdAlgoPerf_t;
typedef cc_perf cudnnConvolutionBwdDataAlgoPerf_t;
typedef cc_perf cudnnConvolutionBwdFilterAlgoPerf_t;
#endif

#define MAX_RESULTS 16 /* the largest algorithm enum has 8 */

/* The types the real functions are called through (found with dlsym): the
 * six find functions, generic over the descriptors' kinds and the perf
 * struct, and the getters. */
typedef cudnnStatus_t (*find_fn)(cudnnHandle_t, const void *, const void *, const void *,
                                 const void *, int, int *, cc_perf *);
typedef cudnnStatus_t (*find_ex_fn)(cudnnHandle_t, const void *, const void *, const void *,
                                    const void *, const void *, const void *, void *, int, int *,
                                    cc_perf *, void *, size_t);
typedef cudnnStatus_t (*get_tensor_fn)(const void *, int, int *, int *, int *, int *);
typedef cudnnStatus_t (*get_filter_fn)(const void *, int, int *, int *, int *, int *);
typedef cudnnStatus_t (*get_conv_fn)(const void *, int, int *, int *, int *, int *, int *, int *);
typedef cudnnStatus_t (*get_int_fn)(const void *, int *); /* math type, group count, reorder */
typedef cudnnStatus_t (*get_stream_fn)(cudnnHandle_t, cudaStream_t *);
typedef size_t (*get_version_fn)(void);
/* The CUDA driver's (handles.c). */
typedef CUresult (*cu_ctx_get_device_fn)(CUdevice *);
typedef CUresult (*cu_stream_get_ctx_fn)(CUstream, CUcontext *);
typedef CUresult (*cu_ctx_push_fn)(CUcontext);
typedef CUresult (*cu_ctx_pop_fn)(CUcontext *);
typedef CUresult (*cu_device_total_mem_fn)(size_t *, CUdevice);

/* ---- the real cuDNN (preload.c) ----------------------------------------- */

enum {
    F_FWD, F_FWD_EX, F_BWD_DATA, F_BWD_DATA_EX, F_BWD_FILTER, F_BWD_FILTER_EX,
    F_GET_TENSOR, F_GET_FILTER, F_GET_CONV, F_GET_MATH, F_GET_GROUPS, F_GET_REORDER,
    F_GET_STREAM, F_GET_VERSION, N_FUNCS
};

extern const char *const func_names[N_FUNCS];

/* The six backend functions the interposer serves (v8_calls.c), in the
 * order of struct v8_real: create, destroy, finalize, set, get, execute. */
#define N_V8_FUNCS 6
extern const char *const v8_func_names[N_V8_FUNCS];

/* real_func returns the real cuDNN's function i, or NULL; real_symbol the
 * real definition of any cuDNN function by name, or NULL. */
void *real_func(int i);
void *real_symbol(const char *name);

/* env_get reads an environment variable with secure_getenv: NULL in a
 * setuid or setgid process (AT_SECURE), whatever the variable holds. */
const char *env_get(const char *name);

/* warn_once prints one line on stderr per kind of problem. What it prints
 * may hold a path or an error text from a hostile file: control characters
 * are printed as '?'. */
enum { W_LOAD, W_SCOPE, W_OPEN, W_CACHE, W_REAL, W_ENTRY, W_STRICT, N_WARN };
void warn_once(int kind, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- one intercepted call ------------------------------------------------ */

enum { OP_FWD = 1, OP_BWD_DATA = 2, OP_BWD_FILTER = 3 };
extern const char *const op_names[4];

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
    /* set by cache_for */
    int dev;          /* the handle's device; -1 when unknown or CONVCACHE_SCOPE names the scope */
    size_t mem_limit; /* the device's memory in bytes; 0 when unknown */
    /* set by the builder */
    int ran;
    cudnnStatus_t status;
};

/* ---- the cache handles (handles.c) ------------------------------------- */

/* libconvcache's functions, once library_ready() said so (convcache_handle
 * is convcache, under the name C++ can include this header with). */
struct convcache_api {
    int (*open)(const char *, const char *, convcache_handle **);
    int (*get_or_create)(convcache_handle *, const void *, size_t, convcache_builder, void *,
                         void *, size_t, size_t *);
    int (*insert)(convcache_handle *, const void *, size_t, const void *, size_t);
    int (*find)(convcache_handle *, const void *, size_t, void *, size_t, size_t *);
    int (*cudnn_scope)(int, char *, size_t);
    const char *(*last_error)(void);
};
extern struct convcache_api api;

/* library_usable reports whether a call may use the cache at all: not after
 * a failed load, nor in a child forked after a load. */
int library_usable(void);

/* library_forked reports a child forked after libconvcache was loaded. */
int library_forked(void);

/* library_ready loads libconvcache if no call has tried yet, and reports
 * whether it is loaded. */
int library_ready(void);

/* cache_for returns the handle for the call, or NULL to pass it through,
 * and sets c->dev and c->mem_limit. library_ready() said yes. */
convcache_handle *cache_for(struct call *c);

/* cache_for_handle is the same for a cuDNN handle: *dev is its device (-1
 * when CONVCACHE_SCOPE names the scope), *mem (if not NULL) the device's
 * memory in bytes, 0 when unknown. */
convcache_handle *cache_for_handle(cudnnHandle_t handle, int *dev, size_t *mem);

/* log_enabled reports CONVCACHE_PRELOAD_LOG; log_key prints one line with
 * a key in hex. */
int log_enabled(void);
void log_key(const char *what, const char *detail, const unsigned char *key, size_t n);

/* ---- the key (key.c) ---------------------------------------------------- */

/* A key buffer; the largest key is under 400 bytes. */
struct key {
    unsigned char b[1024];
    size_t n;
    int bad;
};

/* build_key fills k for c from the real cuDNN's descriptor getters.
 * Returns 0, or -1 when a descriptor cannot be read (pass the call through). */
int build_key(const struct call *c, struct key *k);

/* ---- the rules for results (perf.c) ------------------------------------- */

/* perf_valid reports whether n results may be returned for c. */
int perf_valid(const struct call *c, const cc_perf *p, int n);

/* perf_to_store copies cuDNN's n results for c into dst (MAX_RESULTS) with
 * the reserved fields set to 0, and reports whether they may be stored. */
int perf_to_store(const struct call *c, const cc_perf *src, int n, cc_perf *dst);

/* perf_success_ms sums the times of the successful results. */
double perf_success_ms(const cc_perf *p, int n);

/* cudnn_not_supported is CUDNN_STATUS_NOT_SUPPORTED of the loaded cuDNN,
 * cudnn_bad_param CUDNN_STATUS_BAD_PARAM. */
cudnnStatus_t cudnn_not_supported(void);
cudnnStatus_t cudnn_bad_param(void);

/* ---- counters and the exit summary (counters.c) ------------------------- */

/* The counters: struct convcache_preload_stats (preload_stats.h). */
extern struct convcache_preload_stats counters;
#define COUNT(field) __atomic_fetch_add(&counters.field, 1, __ATOMIC_RELAXED)

void count_saved_ms(double ms);
/* count_aside_reason counts a graph that stood aside, by why (a static
 * string), for the report's top reason. */
void count_aside_reason(const char *why);
uint64_t now_ns(void);

/* counters_forked zeroes the counters in a forked child: they count this
 * process's calls. */
void counters_forked(void);

/* The exit summary's line of the backend API's time by phase
 * ("convcache-preload: v8 time ms: calls=... own=... heur=..."; v8_time.c):
 * its length, 0 before any call. A forked child starts at zero. */
int v8_time_format(char *out, size_t cap);
void v8_time_forked(void);

#endif
