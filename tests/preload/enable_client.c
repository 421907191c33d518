/*
 * libenable_client.so: a library linked against the stand-in cuDNN, as
 * libtorch_cuda.so is against libcudnn.so.9, for tests/wheel/enable_check.py
 * (convcache.enable()). bound(i) names the file that its reference to the
 * i-th function the interposer serves binds to (NULL past the last);
 * find_calls() is how many find calls reached the stand-in.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>

#include "../cudnn_served.h"

const char *bound(int i) {
#define REF(name) name,
    int (*const fns[])(void) = {CUDNN_SERVED(REF)};
#undef REF
    Dl_info info;
    if (i < 0 || i >= (int)(sizeof fns / sizeof fns[0])) return NULL;
    return dladdr((void *)fns[i], &info) && info.dli_fname ? info.dli_fname : "?";
}
