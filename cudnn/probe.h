/* The C side of the fingerprint: loads libcuda and libcudnn at run time and
 * reads what the scope needs. Not linked against either library. */
#ifndef CONVCACHE_CUDNN_PROBE_H
#define CONVCACHE_CUDNN_PROBE_H

#include <stddef.h>

/* Results of ccn_probe. */
enum {
    CCN_OK = 0,
    CCN_NO_DRIVER = 1,    /* libcuda.so.1 could not be loaded, or lacks a function */
    CCN_DRIVER_ERROR = 2, /* cuInit or a device query failed */
    CCN_NO_DEVICE = 3,    /* no device with that ordinal */
    CCN_NO_CUDNN = 4      /* no libcudnn.so.9 or .8, or it lacks a function */
};

typedef struct ccn_device {
    char name[256];
    int major, minor;
    int sms;
    int driver;
    unsigned long long cudnn;
    unsigned long long cudart;
} ccn_device;

/* ccn_probe fills *out for CUDA device ordinal `device`. cuda_lib and
 * cudnn_lib, when not NULL or empty, name the files to load instead of the
 * defaults (ignored in a privileged process: AT_SECURE). On failure it
 * writes a message to err[0..errcap). */
int ccn_probe(int device, const char *cuda_lib, const char *cudnn_lib, ccn_device *out,
              char *err, size_t errcap);

#endif
