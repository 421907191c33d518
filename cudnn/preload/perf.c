/*
 * The rules a perf struct must pass before the interposer returns it from
 * the cache or stores it. The cache file may be hostile, and cuDNN itself
 * is only trusted to answer its caller: a result that breaks a rule is
 * never returned from the cache (the call benchmarks and the entry is
 * replaced) and never stored (the caller still gets cuDNN's answer).
 *
 * Every result:
 *   - algo within its enum: CUDNN_CONVOLUTION_{FWD,BWD_DATA,BWD_FILTER}
 *     _ALGO_COUNT is 8, 6, 7 (cudnn_ops.h);
 *   - status CUDNN_STATUS_SUCCESS or a cuDNN error: cuDNN 9 numbers them
 *     category + code, categories 1000 to 5000 (cudnn_graph.h,
 *     CUDNN_STATUS_CATEGORY), so 1000..5999; cuDNN 8 numbered them 1..14;
 *     the loaded cuDNN's major decides;
 *   - determinism CUDNN_NON_DETERMINISTIC (0) or CUDNN_DETERMINISTIC (1);
 *   - mathType CUDNN_DEFAULT_MATH (0) to CUDNN_FMA_MATH (3);
 *   - reserved all 0 (stored as 0, whatever cuDNN left there);
 *   - time finite (cuDNN gives -1 to the algorithms that failed);
 *   - memory at most 1 TiB (MEMORY_CAP), or the device's memory if larger.
 * A successful result also:
 *   - time >= 0, and not less than the previous successful result's: find
 *     returns its results sorted by execution time (cudnn_cnn.h);
 *   - memory within the workspace offered (Ex), or within the device's
 *     memory (cuDeviceTotalMem; MEMORY_CAP when the device is not known,
 *     as under CONVCACHE_SCOPE): find allocated that workspace itself.
 * And 1 to min(requested, MAX_RESULTS) results.
 */
#include <math.h>
#include <string.h>

#include "preload.h"

#define MEMORY_CAP ((size_t)1 << 40)

static const int algo_count[4] = {0, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                  CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
                                  CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT};

/* cudnn_version is cudnnGetVersion() of the loaded cuDNN, or 0. */
static size_t cudnn_version(void) {
    static size_t version; /* 0 until known; every thread computes the same */
    size_t v = __atomic_load_n(&version, __ATOMIC_RELAXED);
    if (v) return v;
    get_version_fn get = (get_version_fn)real_func(F_GET_VERSION);
    v = get ? get() : 0;
    __atomic_store_n(&version, v, __ATOMIC_RELAXED);
    return v;
}

/* Before cuDNN 9, versions were major * 1000 + ...; since, major * 10000. */
static int cudnn_before_9(void) {
    size_t v = cudnn_version();
    return v && v < 90000;
}

cudnnStatus_t cudnn_not_supported(void) {
    return cudnn_before_9() ? CUDNN_STATUS_NOT_SUPPORTED_V8 : CUDNN_STATUS_NOT_SUPPORTED;
}

cudnnStatus_t cudnn_bad_param(void) { return cudnn_before_9() ? CUDNN_STATUS_BAD_PARAM_V8 : CUDNN_STATUS_BAD_PARAM; }

static int known_status(int s) {
    if (s == CUDNN_STATUS_SUCCESS) return 1;
    if (cudnn_before_9()) return s >= 1 && s <= CUDNN_STATUS_VERSION_MISMATCH_V8;
    return s >= CC_STATUS_V9_MIN && s <= CC_STATUS_V9_MAX;
}

int perf_valid(const struct call *c, const cc_perf *p, int n) {
    if (n < 1 || n > c->requested || n > MAX_RESULTS) return 0;
    const size_t device = c->mem_limit ? c->mem_limit : MEMORY_CAP;
    const size_t any = device > MEMORY_CAP ? device : MEMORY_CAP;
    float last = 0;
    for (int i = 0; i < n; i++) {
        const cc_perf *r = &p[i];
        if (r->algo < 0 || r->algo >= algo_count[c->op]) return 0;
        if (!known_status(r->status)) return 0;
        if (r->determinism != CUDNN_NON_DETERMINISTIC && r->determinism != CUDNN_DETERMINISTIC)
            return 0;
        if (r->mathType < CUDNN_DEFAULT_MATH || r->mathType > CUDNN_FMA_MATH) return 0;
        if (r->reserved[0] || r->reserved[1] || r->reserved[2]) return 0;
        if (!isfinite(r->time) || r->memory > any) return 0;
        if (r->status != CUDNN_STATUS_SUCCESS) continue;
        if (r->time < 0 || r->time < last) return 0;
        last = r->time;
        if (r->memory > (c->ex ? c->workspace_size : device)) return 0;
    }
    return 1;
}

int perf_to_store(const struct call *c, const cc_perf *src, int n, cc_perf *dst) {
    if (n < 1 || n > c->requested || n > MAX_RESULTS) return 0; /* before reading src */
    memcpy(dst, src, (size_t)n * sizeof *dst);
    for (int i = 0; i < n; i++) memset(dst[i].reserved, 0, sizeof dst[i].reserved);
    return perf_valid(c, dst, n);
}

double perf_success_ms(const cc_perf *p, int n) {
    double ms = 0;
    for (int i = 0; i < n; i++)
        if (p[i].status == CUDNN_STATUS_SUCCESS) ms += (double)p[i].time;
    return ms;
}
