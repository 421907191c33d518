/*
 * A stand-in for the CUDA driver (libcuda.so.1) with just what convcache's
 * fingerprint and LD_PRELOAD interposer call, for tests on machines without
 * a GPU.
 *
 * Environment:
 *   STANDIN_CUDA_DEVICES     number of devices (default 2)
 *   STANDIN_GPU_NAME_<i>     name of device i (default "Standin GPU <i>")
 *   STANDIN_DRIVER_VERSION   cuDriverGetVersion (default 13000)
 *   STANDIN_CUDA_INIT_ERROR  cuInit returns this CUresult (default 0)
 *   STANDIN_TOTAL_MEM        cuDeviceTotalMem_v2 in bytes (default 80 GiB)
 *   STANDIN_CUDA_NO_DRIVER   set: every function fails with
 *                            CUDA_ERROR_NO_DEVICE, as a driver stub without
 *                            a driver or GPU does
 *
 * Streams and contexts: standin_cuda_stream(i) is a stream of device i;
 * standin_cuda_set_device(i) makes device i current for the calling thread.
 *
 * Memory (for the GPU checks, bench/gpu/v7_find.c and v8_check.c, run on
 * the CPU): device memory is host memory, so the stand-in cuDNN's execution
 * can read and write it; copies are memcpy; synchronizing does nothing.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The driver's values, under its names (tests/realcudnn checks each one
 * against the real cuda.h). */
#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_OUT_OF_MEMORY 2
#define CUDA_ERROR_NOT_INITIALIZED 3
#define CUDA_ERROR_NO_DEVICE 100
#define CUDA_ERROR_INVALID_DEVICE 101
#define CUDA_ERROR_INVALID_CONTEXT 201
#define CUDA_ERROR_INVALID_HANDLE 400
#define CUDA_ERROR_UNKNOWN 999
#define CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76

static int env_int(const char *name, int def) {
    const char *v = getenv(name);
    return v && *v ? atoi(v) : def;
}

#define NO_DRIVER_CHECK                                                    \
    do {                                                                   \
        if (getenv("STANDIN_CUDA_NO_DRIVER")) return CUDA_ERROR_NO_DEVICE; \
    } while (0)

static int initialized;
static __thread int current = -1; /* current device; -1: device 0 after cuInit */
static __thread int stack[8];
static __thread int depth;

static int device_count(void) { return env_int("STANDIN_CUDA_DEVICES", 2); }

int cuInit(unsigned int flags) {
    NO_DRIVER_CHECK;
    if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
    int err = env_int("STANDIN_CUDA_INIT_ERROR", 0);
    if (err) return err;
    initialized = 1;
    return CUDA_SUCCESS;
}

int cuDriverGetVersion(int *v) {
    NO_DRIVER_CHECK;
    if (!v) return CUDA_ERROR_INVALID_VALUE;
    *v = env_int("STANDIN_DRIVER_VERSION", 13000);
    return CUDA_SUCCESS;
}

int cuDeviceGetCount(int *n) {
    NO_DRIVER_CHECK;
    if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
    if (!n) return CUDA_ERROR_INVALID_VALUE;
    *n = device_count();
    return CUDA_SUCCESS;
}

int cuDeviceGet(int *dev, int ordinal) {
    NO_DRIVER_CHECK;
    if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
    if (!dev || ordinal < 0 || ordinal >= device_count()) return CUDA_ERROR_INVALID_DEVICE;
    *dev = ordinal;
    return CUDA_SUCCESS;
}

int cuDeviceGetName(char *name, int len, int dev) {
    NO_DRIVER_CHECK;
    if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
    if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= device_count()) return CUDA_ERROR_INVALID_DEVICE;
    char var[64];
    snprintf(var, sizeof var, "STANDIN_GPU_NAME_%d", dev);
    const char *v = getenv(var);
    if (v) snprintf(name, (size_t)len, "%s", v);
    else snprintf(name, (size_t)len, "Standin GPU %d", dev);
    return CUDA_SUCCESS;
}

int cuDeviceGetAttribute(int *out, int attr, int dev) {
    NO_DRIVER_CHECK;
    if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= device_count()) return CUDA_ERROR_INVALID_DEVICE;
    switch (attr) {
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *out = 132 - 4 * dev; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *out = 9; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *out = 0; return CUDA_SUCCESS;
    }
    return CUDA_ERROR_INVALID_VALUE;
}

int cuDeviceTotalMem_v2(size_t *bytes, int dev) {
    NO_DRIVER_CHECK;
    if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
    if (!bytes) return CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= device_count()) return CUDA_ERROR_INVALID_DEVICE;
    const char *v = getenv("STANDIN_TOTAL_MEM");
    *bytes = v && *v ? (size_t)strtoull(v, NULL, 10) : (size_t)80 << 30;
    return CUDA_SUCCESS;
}

int cuGetErrorName(int err, const char **s) {
    if (!s) return CUDA_ERROR_INVALID_VALUE;
    switch (err) {
    case CUDA_ERROR_NO_DEVICE: *s = "CUDA_ERROR_NO_DEVICE"; return CUDA_SUCCESS;
    case CUDA_ERROR_UNKNOWN: *s = "CUDA_ERROR_UNKNOWN"; return CUDA_SUCCESS;
    }
    return CUDA_ERROR_INVALID_VALUE;
}

/* Contexts are device + 1 as a pointer; streams are 0x1000 + device. */
void *standin_cuda_stream(int dev) { return (void *)(uintptr_t)(0x1000 + dev); }
void standin_cuda_set_device(int dev) { current = dev; }

int cuCtxGetDevice(int *dev) {
    NO_DRIVER_CHECK;
    if (!dev) return CUDA_ERROR_INVALID_VALUE;
    *dev = current < 0 ? 0 : current;
    return CUDA_SUCCESS;
}

int cuStreamGetCtx(void *stream, void **ctx) {
    NO_DRIVER_CHECK;
    uintptr_t s = (uintptr_t)stream;
    if (!ctx || s < 0x1000 || s >= 0x1000 + (uintptr_t)device_count())
        return CUDA_ERROR_INVALID_HANDLE;
    *ctx = (void *)(s - 0x1000 + 1);
    return CUDA_SUCCESS;
}

int cuCtxPushCurrent_v2(void *ctx) {
    NO_DRIVER_CHECK;
    uintptr_t c = (uintptr_t)ctx;
    if (c < 1 || c > (uintptr_t)device_count() || depth == 8) return CUDA_ERROR_INVALID_CONTEXT;
    stack[depth++] = current;
    current = (int)c - 1;
    return CUDA_SUCCESS;
}

int cuCtxPopCurrent_v2(void **ctx) {
    NO_DRIVER_CHECK;
    if (depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
    if (ctx) *ctx = (void *)(uintptr_t)(current + 1);
    current = stack[--depth];
    return CUDA_SUCCESS;
}

/* ---- primary contexts and memory, as the GPU checks use them ---------- */

typedef unsigned long long CUdeviceptr;

int cuDevicePrimaryCtxRetain(void **ctx, int dev) {
    NO_DRIVER_CHECK;
    if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
    if (!ctx) return CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= device_count()) return CUDA_ERROR_INVALID_DEVICE;
    *ctx = (void *)(uintptr_t)(dev + 1);
    return CUDA_SUCCESS;
}

int cuCtxSetCurrent(void *ctx) {
    NO_DRIVER_CHECK;
    uintptr_t c = (uintptr_t)ctx;
    if (c > (uintptr_t)device_count()) /* NULL unbinds */ return CUDA_ERROR_INVALID_CONTEXT;
    current = (int)c - 1;
    return CUDA_SUCCESS;
}

int cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
    NO_DRIVER_CHECK;
    if (!p || !n) return CUDA_ERROR_INVALID_VALUE;
    void *m = malloc(n);
    if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
    *p = (CUdeviceptr)(uintptr_t)m;
    return CUDA_SUCCESS;
}

int cuMemFree_v2(CUdeviceptr p) {
    NO_DRIVER_CHECK;
    free((void *)(uintptr_t)p);
    return CUDA_SUCCESS;
}

int cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
    if (!dst || !src) return CUDA_ERROR_INVALID_VALUE;
    memcpy((void *)(uintptr_t)dst, src, n);
    return CUDA_SUCCESS;
}

int cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
    if (!dst || !src) return CUDA_ERROR_INVALID_VALUE;
    memcpy(dst, (const void *)(uintptr_t)src, n);
    return CUDA_SUCCESS;
}

int cuCtxSynchronize(void) {
    NO_DRIVER_CHECK;
    return CUDA_SUCCESS;
}
