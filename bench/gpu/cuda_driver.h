/*
 * cuda_driver.h - the few CUDA driver functions the GPU check needs, found
 * at run time in libcuda.so.1 ($CONVCACHE_CUDA_LIBRARY names another file,
 * such as the stand-in in build/tests/preload), so that nothing links
 * against CUDA. Device memory through the primary context, which the CUDA
 * runtime (and so cuDNN) uses too.
 */
#ifndef CONVCACHE_CUDA_DRIVER_H
#define CONVCACHE_CUDA_DRIVER_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

typedef unsigned long long CUdeviceptr;

struct cuda {
    int (*alloc)(CUdeviceptr *, size_t);
    int (*free)(CUdeviceptr);
    int (*htod)(CUdeviceptr, const void *, size_t);
    int (*dtoh)(void *, CUdeviceptr, size_t);
    int (*sync)(void);
};

/* cuda_load opens the driver, makes device's primary context current and
 * fills d. Returns 0, or -1 with why filled. */
static inline int cuda_load(struct cuda *d, int device, char *why, size_t cap) {
    const char *path = getenv("CONVCACHE_CUDA_LIBRARY");
    if (!path || !*path) path = "libcuda.so.1";
    void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
        snprintf(why, cap, "cannot load %s: %s", path, dlerror());
        return -1;
    }
    int (*init)(unsigned) = (int (*)(unsigned))dlsym(h, "cuInit");
    int (*get)(int *, int) = (int (*)(int *, int))dlsym(h, "cuDeviceGet");
    int (*retain)(void **, int) = (int (*)(void **, int))dlsym(h, "cuDevicePrimaryCtxRetain");
    int (*set)(void *) = (int (*)(void *))dlsym(h, "cuCtxSetCurrent");
    d->alloc = (int (*)(CUdeviceptr *, size_t))dlsym(h, "cuMemAlloc_v2");
    d->free = (int (*)(CUdeviceptr))dlsym(h, "cuMemFree_v2");
    d->htod = (int (*)(CUdeviceptr, const void *, size_t))dlsym(h, "cuMemcpyHtoD_v2");
    d->dtoh = (int (*)(void *, CUdeviceptr, size_t))dlsym(h, "cuMemcpyDtoH_v2");
    d->sync = (int (*)(void))dlsym(h, "cuCtxSynchronize");
    if (!init || !get || !retain || !set || !d->alloc || !d->free || !d->htod || !d->dtoh || !d->sync) {
        snprintf(why, cap, "%s lacks a CUDA driver function the check needs", path);
        return -1;
    }
    int dev = 0, rc;
    void *ctx = NULL;
    if ((rc = init(0)) || (rc = get(&dev, device)) || (rc = retain(&ctx, dev)) || (rc = set(ctx))) {
        snprintf(why, cap, "CUDA driver error %d on device %d", rc, device);
        return -1;
    }
    return 0;
}

#endif
