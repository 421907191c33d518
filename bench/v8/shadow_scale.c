/*
 * shadow_scale: a host that holds N backend descriptors alive at once,
 * against the stand-in cuDNN, run with and without the interposer
 * (bench/v8/run.sh): N tensors are created, given the attributes a
 * convolution's tensor has (data type, 4 dimensions and strides, unique
 * id, alignment) and finalized; then all are destroyed. The interposer
 * keeps each one's alignment, in its slot of the shadow table
 * (cudnn/preload/v8_leaf.c, v8_shadow.c).
 *
 *   shadow_scale N [bare]
 *
 * bare: the descriptors are only created and destroyed (no attributes).
 * prints: live=N create_ms=T destroy_ms=T rss_per_desc=BYTES
 * (CPU time of the process, so that other work on the machine does not
 * count; create: create, sets and finalize; rss_per_desc: the growth of the
 * resident set while all N are alive, per descriptor, page-rounded).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend_api.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static long rss_bytes(void) {
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return 0;
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    fclose(f);
    return resident * sysconf(_SC_PAGESIZE);
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 0;
    int bare = argc > 2 && !strcmp(argv[2], "bare");
    if (n < 1 || n > 8000000 || (argc > 2 && !bare)) {
        fprintf(stderr, "usage: shadow_scale N [bare] (N: 1 to 8000000)\n");
        return 2;
    }
    cudnnBackendDescriptor_t *t = calloc((size_t)n, sizeof *t);
    if (!t) return 1;
    long rss0 = rss_bytes();
    double t0 = now_ms();
    for (long i = 0; i < n; i++) {
        int64_t dims[4] = {2, 8 + i % 7, 16, 16}, strides[4] = {dims[1] * 256, 256, 16, 1}, uid = i, align = 16;
        cudnnDataType_t dt = CUDNN_DATA_FLOAT;
        if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, &t[i])) {
            fprintf(stderr, "shadow_scale: descriptor %ld failed\n", i);
            return 1;
        }
        if (bare) continue;
        if (cudnnBackendSetAttribute(t[i], CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt) ||
            cudnnBackendSetAttribute(t[i], CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims) ||
            cudnnBackendSetAttribute(t[i], CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides) ||
            cudnnBackendSetAttribute(t[i], CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid) ||
            cudnnBackendSetAttribute(t[i], CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align) ||
            cudnnBackendFinalize(t[i])) {
            fprintf(stderr, "shadow_scale: descriptor %ld failed\n", i);
            return 1;
        }
    }
    double t1 = now_ms();
    long rss1 = rss_bytes();
    for (long i = 0; i < n; i++)
        if (cudnnBackendDestroyDescriptor(t[i])) {
            fprintf(stderr, "shadow_scale: destroy %ld failed\n", i);
            return 1;
        }
    double t2 = now_ms();
    printf("live=%ld%s create_ms=%.1f destroy_ms=%.1f rss_per_desc=%ld\n", n, bare ? " bare" : "", t1 - t0, t2 - t1, (rss1 - rss0) / n);
    free(t);
    return 0;
}
