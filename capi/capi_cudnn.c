/*
 * convcache_cudnn_scope: the public C function. As in capi.c it checks the
 * fork state and its arguments here, then enters Go (cudnn.go).
 */
#include <stddef.h>

#include "capi_internal.h"
#include "_cgo_export.h"

int convcache_cudnn_scope(int device, char *buf, size_t cap) {
    if (ccx_forked())
        return ccx_fail(CONVCACHE_E_FORKED,
                        "convcache_cudnn_scope: called in a forked child; exec, or call it "
                        "after exec");
    if (!buf) return ccx_fail(CONVCACHE_E_INVALID, "convcache_cudnn_scope: buf is NULL");
    if (device < 0) return ccx_fail(CONVCACHE_E_INVALID, "convcache_cudnn_scope: device is negative");
    if (cap == 0) return ccx_fail(CONVCACHE_E_RANGE, "convcache_cudnn_scope: cap is 0");
    buf[0] = 0;
    return ccgo_cudnn_scope(device, buf, cap);
}
