//go:build cgo

/* See probe.h. Every library is opened with dlopen and never closed: a
 * driver must not be unloaded under a process that may use it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>

#include "probe.h"

/* The shipped build declares the few driver types and values it needs under
 * NVIDIA's names. The check build (make real-cudnn-check) defines
 * CONVCACHE_REAL_CUDNN and takes them from the real cuda.h and cudnn.h: the
 * asserts below then prove each function type exact, and tests/realcudnn
 * checks each value defined here against the real one. */
#ifdef CONVCACHE_REAL_CUDNN
#include <cuda.h>
#include <cudnn.h>
#else
typedef int CUresult;
typedef int CUdevice;
typedef int CUdevice_attribute;
#define CUDA_SUCCESS 0
#define CUDA_ERROR_NO_DEVICE 100
#define CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76
#endif

typedef CUresult (*cu_init_fn)(unsigned int);
typedef CUresult (*cu_int_fn)(int *);
typedef CUresult (*cu_device_get_fn)(CUdevice *, int);
typedef CUresult (*cu_device_get_name_fn)(char *, int, CUdevice);
typedef CUresult (*cu_device_get_attribute_fn)(int *, CUdevice_attribute, CUdevice);
typedef CUresult (*cu_get_error_name_fn)(CUresult, const char **);
typedef size_t (*cudnn_version_fn)(void);

#ifdef CONVCACHE_REAL_CUDNN
#define CC_SAME_TYPE(fn, name) \
    _Static_assert(__builtin_types_compatible_p(fn, __typeof__(&name)), #name)
CC_SAME_TYPE(cu_init_fn, cuInit);
CC_SAME_TYPE(cu_int_fn, cuDriverGetVersion);
CC_SAME_TYPE(cu_int_fn, cuDeviceGetCount);
CC_SAME_TYPE(cu_device_get_fn, cuDeviceGet);
CC_SAME_TYPE(cu_device_get_name_fn, cuDeviceGetName);
CC_SAME_TYPE(cu_device_get_attribute_fn, cuDeviceGetAttribute);
CC_SAME_TYPE(cu_get_error_name_fn, cuGetErrorName);
CC_SAME_TYPE(cudnn_version_fn, cudnnGetVersion);
CC_SAME_TYPE(cudnn_version_fn, cudnnGetCudartVersion);
#endif

/* open_first returns a handle to the library named by override, else to the
 * first of names already loaded in the process, else to the first of names
 * that loads. On failure it writes dlerror's message to why. */
static void *open_first(const char *override, const char *const *names, int n, char *why,
                        size_t whycap) {
    void *h;
    why[0] = 0;
    if (override && *override) {
        h = dlopen(override, RTLD_NOW | RTLD_LOCAL);
        if (!h) snprintf(why, whycap, "%s", dlerror());
        return h;
    }
    for (int i = 0; i < n; i++) {
        h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
        if (h) return h;
    }
    for (int i = 0; i < n; i++) {
        h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h) return h;
        if (i == 0) snprintf(why, whycap, "%s", dlerror());
    }
    return NULL;
}

static const char *cu_error_name(void *cuda, CUresult rc) {
    cu_get_error_name_fn f = (cu_get_error_name_fn)dlsym(cuda, "cuGetErrorName");
    const char *s = NULL;
    if (f && f(rc, &s) == CUDA_SUCCESS && s) return s;
    return "CUDA error";
}

int ccn_probe(int device, const char *cuda_lib, const char *cudnn_lib, ccn_device *out,
              char *err, size_t errcap) {
    char why[512];
    memset(out, 0, sizeof *out);
    /* The overrides come from the environment. In a privileged process
     * (AT_SECURE) the caller already drops them; never load a library
     * another user named with this process's privileges, whatever the
     * caller passed. */
    if (getauxval(AT_SECURE)) cuda_lib = cudnn_lib = NULL;

    static const char *const cuda_names[] = {"libcuda.so.1"};
    void *cuda = open_first(cuda_lib, cuda_names, 1, why, sizeof why);
    if (!cuda) {
        snprintf(err, errcap,
                 "no CUDA driver: cannot load %s (%s); set CONVCACHE_CUDA_LIBRARY if it is "
                 "elsewhere, or CONVCACHE_SCOPE to name the scope yourself",
                 cuda_lib && *cuda_lib ? cuda_lib : "libcuda.so.1", why);
        return CCN_NO_DRIVER;
    }
    cu_init_fn cu_init = (cu_init_fn)dlsym(cuda, "cuInit");
    cu_int_fn cu_driver_version = (cu_int_fn)dlsym(cuda, "cuDriverGetVersion");
    cu_int_fn cu_count = (cu_int_fn)dlsym(cuda, "cuDeviceGetCount");
    cu_device_get_fn cu_get = (cu_device_get_fn)dlsym(cuda, "cuDeviceGet");
    cu_device_get_name_fn cu_name = (cu_device_get_name_fn)dlsym(cuda, "cuDeviceGetName");
    cu_device_get_attribute_fn cu_attr =
        (cu_device_get_attribute_fn)dlsym(cuda, "cuDeviceGetAttribute");
    if (!cu_init || !cu_driver_version || !cu_count || !cu_get || !cu_name || !cu_attr) {
        snprintf(err, errcap, "the CUDA driver library lacks the device query functions");
        return CCN_NO_DRIVER;
    }
    CUresult rc = cu_init(0);
    if (rc != CUDA_SUCCESS) {
        snprintf(err, errcap, "cuInit failed: %s (%d): no usable GPU or driver",
                 cu_error_name(cuda, rc), rc);
        return rc == CUDA_ERROR_NO_DEVICE ? CCN_NO_DEVICE : CCN_DRIVER_ERROR;
    }
    if ((rc = cu_driver_version(&out->driver)) != CUDA_SUCCESS) {
        snprintf(err, errcap, "cuDriverGetVersion failed: %s (%d)", cu_error_name(cuda, rc), rc);
        return CCN_DRIVER_ERROR;
    }
    int count = 0;
    if ((rc = cu_count(&count)) != CUDA_SUCCESS) {
        snprintf(err, errcap, "cuDeviceGetCount failed: %s (%d)", cu_error_name(cuda, rc), rc);
        return CCN_DRIVER_ERROR;
    }
    if (device >= count) {
        snprintf(err, errcap, "no CUDA device %d: %d device(s) visible", device, count);
        return CCN_NO_DEVICE;
    }
    int dev = 0;
    if ((rc = cu_get(&dev, device)) != CUDA_SUCCESS) {
        snprintf(err, errcap, "cuDeviceGet(%d) failed: %s (%d)", device, cu_error_name(cuda, rc),
                 rc);
        return CCN_NO_DEVICE;
    }
    if ((rc = cu_name(out->name, (int)sizeof out->name - 1, dev)) != CUDA_SUCCESS ||
        (rc = cu_attr(&out->major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)) !=
            CUDA_SUCCESS ||
        (rc = cu_attr(&out->minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)) !=
            CUDA_SUCCESS ||
        (rc = cu_attr(&out->sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev)) != CUDA_SUCCESS) {
        snprintf(err, errcap, "querying CUDA device %d failed: %s (%d)", device,
                 cu_error_name(cuda, rc), rc);
        return CCN_DRIVER_ERROR;
    }
    out->name[sizeof out->name - 1] = 0;

    static const char *const cudnn_names[] = {"libcudnn.so.9", "libcudnn.so.8"};
    void *cudnn = open_first(cudnn_lib, cudnn_names, 2, why, sizeof why);
    if (!cudnn) {
        snprintf(err, errcap,
                 "no cuDNN: cannot load %s (%s); set CONVCACHE_CUDNN_LIBRARY to its path",
                 cudnn_lib && *cudnn_lib ? cudnn_lib : "libcudnn.so.9 or libcudnn.so.8", why);
        return CCN_NO_CUDNN;
    }
    cudnn_version_fn v = (cudnn_version_fn)dlsym(cudnn, "cudnnGetVersion");
    cudnn_version_fn rt = (cudnn_version_fn)dlsym(cudnn, "cudnnGetCudartVersion");
    if (!v || !rt) {
        snprintf(err, errcap, "the cuDNN library lacks cudnnGetVersion or cudnnGetCudartVersion");
        return CCN_NO_CUDNN;
    }
    out->cudnn = v();
    out->cudart = rt();
    return CCN_OK;
}
