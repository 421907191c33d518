/*
 * A stand-in for the CUDA runtime (libcudart.so.13, the soname cuDNN 9 for
 * CUDA 13 and cudnn_frontend link against), with what the frontend's legacy
 * API calls (its timing, time_sorted_plan, above all) and what a program
 * like PyTorch calls around it, for tests on machines without a GPU.
 *
 * Work is synchronous: the stand-in cuDNN's cudnnBackendExecute computes and
 * sleeps before it returns, so synchronizing does nothing, and an event
 * records the wall time (CLOCK_MONOTONIC) at cudaEventRecord. The elapsed
 * time between two events is therefore the real time between the records:
 * timing picks a real winner.
 *
 * Device memory is host memory (malloc), so the stand-in cuDNN's execution
 * reads and writes it. cudaSetDevice also makes the device current in the
 * stand-in driver (standin_cuda_set_device), as the real runtime makes its
 * primary context current.
 *
 * Timing windows: each cudaEventRecord tells the stand-in cuDNN, when it is
 * in the process, the calling thread's record number
 * (standin_backend_on_record), and each successful cudaEventElapsedTime the
 * two records that bound it (standin_backend_on_window): that is how the
 * stand-in cuDNN counts the plans timed (standin_backend.h). Both are found
 * with dlsym, so either library works without the other: in the global
 * scope, else in the stand-in cuDNN a dlopen client opened RTLD_LOCAL.
 *
 * Environment:
 *   STANDIN_CUDA_DEVICES     number of devices (default 2), as the driver's
 *   STANDIN_CUDART_VERSION   cudaRuntimeGetVersion (default 13000)
 *   STANDIN_EVENT_US         elapsed times are rounded down to a multiple
 *                            of this many microseconds (default 0: not;
 *                            real events resolve about 0.5): executes of
 *                            different lengths then time alike, and
 *                            cudnn_frontend's time_sorted_plan returns one
 *                            of them
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#ifdef CONVCACHE_REAL_CUDNN
/* make v8-real-headers: every definition below must match its prototype,
 * and each value below cuda_runtime_api.h's. */
#include <cuda_runtime_api.h>
_Static_assert(cudaSuccess == 0 && cudaErrorInvalidValue == 1 && cudaErrorMemoryAllocation == 2 &&
                   cudaErrorInvalidDevice == 101 && cudaErrorInvalidResourceHandle == 400 &&
                   cudaErrorNotReady == 600,
               "cudaError_t values differ from driver_types.h");
#else
typedef enum cudaError {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInvalidDevice = 101,
    cudaErrorInvalidResourceHandle = 400,
    cudaErrorNotReady = 600,
} cudaError_t;
typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;
enum cudaStreamCaptureMode { cudaStreamCaptureModeGlobal = 0, cudaStreamCaptureModeRelaxed = 2 };
#endif

/* The stand-in driver's (standin_cuda.c). */
void standin_cuda_set_device(int dev);

#define EVENT_MAGIC 0x5e7e47e7u

struct CUevent_st {
    unsigned magic;
    int recorded;
    double t;          /* seconds, CLOCK_MONOTONIC, at the last record */
    uint64_t seq;      /* the recording thread's record number */
    const void *owner; /* the recording thread (its thread-local address) */
};

static __thread int device;      /* the current device */
static __thread cudaError_t last; /* the sticky last error, as cudaGetLastError reads it */
static __thread uint64_t records; /* cudaEventRecord calls of this thread */
static __thread char thread_tag;  /* its address names the thread */

static int env_int(const char *name, int def) {
    const char *v = getenv(name);
    return v && *v ? atoi(v) : def;
}

static cudaError_t fail(cudaError_t e) {
    last = e;
    return e;
}

/* ---- the stand-in cuDNN's hooks ------------------------------------------ */

typedef void (*on_record_fn)(uint64_t seq);
typedef void (*on_window_fn)(uint64_t start_seq, uint64_t stop_seq);
static on_record_fn on_record;
static on_window_fn on_window;
static pthread_once_t hooks_once = PTHREAD_ONCE_INIT;

static void find_hooks(void) {
    void *h = RTLD_DEFAULT; /* NULL */
    if (!dlsym(h, "standin_backend_on_record")) {
        h = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_NOLOAD);
        if (!h) return;
    }
    on_record = (on_record_fn)dlsym(h, "standin_backend_on_record");
    on_window = (on_window_fn)dlsym(h, "standin_backend_on_window");
}

/* ---- versions, errors, devices -------------------------------------------- */

cudaError_t cudaRuntimeGetVersion(int *v) {
    if (!v) return fail(cudaErrorInvalidValue);
    *v = env_int("STANDIN_CUDART_VERSION", 13000);
    return cudaSuccess;
}

cudaError_t cudaGetLastError(void) {
    cudaError_t e = last;
    last = cudaSuccess;
    return e;
}

cudaError_t cudaPeekAtLastError(void) { return last; }

const char *cudaGetErrorString(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorNotReady: return "device not ready";
    default: return "unrecognized error code";
    }
}

const char *cudaGetErrorName(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    default: return "cudaErrorUnknown";
    }
}

cudaError_t cudaGetDeviceCount(int *n) {
    if (!n) return fail(cudaErrorInvalidValue);
    *n = env_int("STANDIN_CUDA_DEVICES", 2);
    return cudaSuccess;
}

cudaError_t cudaGetDevice(int *d) {
    if (!d) return fail(cudaErrorInvalidValue);
    *d = device;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int d) {
    if (d < 0 || d >= env_int("STANDIN_CUDA_DEVICES", 2)) return fail(cudaErrorInvalidDevice);
    device = d;
    standin_cuda_set_device(d);
    return cudaSuccess;
}

/* ---- synchronization: the work is done when its call returns -------------- */

cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }
cudaError_t cudaStreamSynchronize(cudaStream_t s) {
    (void)s;
    return cudaSuccess;
}

/* cudnn_frontend switches a thread to relaxed capture while it releases
 * CUDA graph payloads; there is no capture here, the mode is only kept. */
static __thread enum cudaStreamCaptureMode capture_mode = cudaStreamCaptureModeGlobal;
cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode *mode) {
    if (!mode) return fail(cudaErrorInvalidValue);
    enum cudaStreamCaptureMode old = capture_mode;
    capture_mode = *mode;
    *mode = old;
    return cudaSuccess;
}

/* ---- memory: host memory ---------------------------------------------------- */

cudaError_t cudaMalloc(void **p, size_t n) {
    if (!p) return fail(cudaErrorInvalidValue);
    *p = NULL;
    if (n == 0) return cudaSuccess;
    *p = malloc(n);
    return *p ? cudaSuccess : fail(cudaErrorMemoryAllocation);
}

cudaError_t cudaFree(void *p) {
    free(p);
    return cudaSuccess;
}

/* ---- events: wall time at the record ---------------------------------------- */

static struct CUevent_st *event_of(cudaEvent_t e) {
    return e && e->magic == EVENT_MAGIC ? e : NULL;
}

cudaError_t cudaEventCreate(cudaEvent_t *e) {
    if (!e) return fail(cudaErrorInvalidValue);
    struct CUevent_st *ev = calloc(1, sizeof *ev);
    if (!ev) return fail(cudaErrorMemoryAllocation);
    ev->magic = EVENT_MAGIC;
    *e = ev;
    return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags) {
    (void)flags;
    return cudaEventCreate(e);
}

cudaError_t cudaEventDestroy(cudaEvent_t e) {
    struct CUevent_st *ev = event_of(e);
    if (!ev) return fail(cudaErrorInvalidResourceHandle);
    ev->magic = 0;
    free(ev);
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
    (void)s;
    struct CUevent_st *ev = event_of(e);
    if (!ev) return fail(cudaErrorInvalidResourceHandle);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ev->t = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
    ev->seq = ++records;
    ev->owner = &thread_tag;
    ev->recorded = 1;
    pthread_once(&hooks_once, find_hooks);
    if (on_record) on_record(ev->seq);
    return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t e) {
    return event_of(e) ? cudaSuccess : fail(cudaErrorInvalidResourceHandle);
}

cudaError_t cudaEventQuery(cudaEvent_t e) {
    return event_of(e) ? cudaSuccess : fail(cudaErrorInvalidResourceHandle);
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end) {
    struct CUevent_st *a = event_of(start), *b = event_of(end);
    if (!ms) return fail(cudaErrorInvalidValue);
    if (!a || !b) return fail(cudaErrorInvalidResourceHandle);
    if (!a->recorded || !b->recorded) return fail(cudaErrorNotReady);
    double us = (b->t - a->t) * 1e6;
    int res_us = env_int("STANDIN_EVENT_US", 0);
    if (res_us > 0) us = (double)((long long)(us / res_us) * res_us); /* rounded down: the same for every run */
    *ms = (float)(us * 1e-3);
    pthread_once(&hooks_once, find_hooks);
    /* A window is this thread's when it recorded both ends. */
    if (on_window && a->owner == &thread_tag && b->owner == &thread_tag && a->seq < b->seq)
        on_window(a->seq, b->seq);
    return cudaSuccess;
}
