/*
 * The real libcudnn.so.9, loaded on a machine without a GPU, under the
 * interposer (make real-cudnn-check runs it with LD_PRELOAD set).
 *
 * Linked against the real library, compiled against its header:
 *   - cudnnGetVersion() is the header's CUDNN_VERSION, and
 *     cudnnGetCudartVersion() is a CUDA of the header's major version;
 *   - each of the six find functions, called with a NULL handle, reaches
 *     the interposer (convcache_preload_stats counts it), which passes it
 *     through to the real cuDNN (it never answers for a NULL handle): the
 *     real function's status comes back, and no result is written. The
 *     interposer found the real function behind itself, and never loaded
 *     libconvcache for it.
 *
 * usage: load_check    (exit 0: every check passed)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include <cudnn.h>
#include <cuda_runtime_api.h>

/* The interposer's counters (cudnn/preload/preload.h): the prefix that
 * this test reads. */
struct stats {
    unsigned long long calls, hits, misses, passthrough, library_loads;
};

static int failures;

#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        if (!(cond)) {                                                     \
            fprintf(stderr, "load_check: FAIL %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                                  \
            fprintf(stderr, "\n");                                         \
            failures++;                                                    \
        }                                                                  \
    } while (0)

static int stats(struct stats *s) {
    int (*f)(struct stats *, size_t) =
        (int (*)(struct stats *, size_t))dlsym(RTLD_DEFAULT, "convcache_preload_stats");
    memset(s, 0, sizeof *s);
    return f ? f(s, sizeof *s) : -1;
}

int main(void) {
    size_t v = cudnnGetVersion(), rt = cudnnGetCudartVersion();
    printf("load_check: libcudnn reports cudnnGetVersion %zu, cudnnGetCudartVersion %zu; "
           "the header says CUDNN_VERSION %d\n", v, rt, CUDNN_VERSION);
    CHECK(v == CUDNN_VERSION, "cudnnGetVersion %zu, header %d", v, CUDNN_VERSION);
    CHECK(rt / 1000 == CUDART_VERSION / 1000, "cudnnGetCudartVersion %zu: not CUDA %d", rt,
          CUDART_VERSION / 1000);

    struct stats before, after;
    CHECK(stats(&before) == 0, "convcache_preload_stats not found: is the interposer preloaded?");
    cudnnConvolutionFwdAlgoPerf_t fwd[2];
    cudnnConvolutionBwdDataAlgoPerf_t bwd_data[2];
    cudnnConvolutionBwdFilterAlgoPerf_t bwd_filter[2];
    memset(fwd, 0x5a, sizeof fwd);
    memset(bwd_data, 0x5a, sizeof bwd_data);
    memset(bwd_filter, 0x5a, sizeof bwd_filter);
    int n = -7;
    char buf[64];
    cudnnStatus_t st[6];
    st[0] = cudnnFindConvolutionForwardAlgorithm(NULL, NULL, NULL, NULL, NULL, 2, &n, fwd);
    st[1] = cudnnFindConvolutionForwardAlgorithmEx(NULL, NULL, buf, NULL, buf, NULL, NULL, buf, 2,
                                                   &n, fwd, buf, sizeof buf);
    st[2] = cudnnFindConvolutionBackwardDataAlgorithm(NULL, NULL, NULL, NULL, NULL, 2, &n, bwd_data);
    st[3] = cudnnFindConvolutionBackwardDataAlgorithmEx(NULL, NULL, buf, NULL, buf, NULL, NULL, buf,
                                                        2, &n, bwd_data, buf, sizeof buf);
    st[4] = cudnnFindConvolutionBackwardFilterAlgorithm(NULL, NULL, NULL, NULL, NULL, 2, &n,
                                                        bwd_filter);
    st[5] = cudnnFindConvolutionBackwardFilterAlgorithmEx(NULL, NULL, buf, NULL, buf, NULL, NULL,
                                                          buf, 2, &n, bwd_filter, buf, sizeof buf);
    for (int i = 0; i < 6; i++)
        CHECK(st[i] != CUDNN_STATUS_SUCCESS, "find %d with a NULL handle succeeded", i);
    printf("load_check: the real find functions answered a NULL handle with %d %d %d %d %d %d (%s)\n",
           st[0], st[1], st[2], st[3], st[4], st[5], cudnnGetErrorString(st[0]));
    unsigned char poison[sizeof fwd];
    memset(poison, 0x5a, sizeof poison);
    CHECK(memcmp(fwd, poison, sizeof fwd) == 0, "a result was written for a failed call");
    CHECK(stats(&after) == 0, "convcache_preload_stats failed");
    CHECK(after.calls - before.calls == 6, "the interposer saw %llu of 6 calls",
          after.calls - before.calls);
    CHECK(after.passthrough - before.passthrough == 6, "%llu of 6 calls passed through",
          after.passthrough - before.passthrough);
    CHECK(after.library_loads == 0, "libconvcache was loaded %llu times", after.library_loads);
    CHECK(after.hits == 0 && after.misses == 0, "hits %llu misses %llu", after.hits, after.misses);
    if (failures) return 1;
    printf("load_check: ok\n");
    return 0;
}
