/*
 * What the parts of preload_prog (tests/preload/preload_prog.c, planted.c)
 * share: the stand-in cuDNN and driver's functions, a convolution problem
 * and its descriptors, and the check macro.
 */
#ifndef CONVCACHE_TESTS_PRELOAD_PROG_H
#define CONVCACHE_TESTS_PRELOAD_PROG_H

#include <stddef.h>
#include <stdio.h>

/* ---- the stand-in cuDNN and driver ---- */
typedef struct {
    int algo, status;
    float time;
    size_t memory;
    int determinism, mathType, reserved[3];
} perf_t;
typedef void *D;
int cudnnCreate(D *);
int cudnnSetStream(D, void *);
int cudnnCreateTensorDescriptor(D *);
int cudnnSetTensorNdDescriptor(D, int, int, const int *, const int *);
int cudnnCreateFilterDescriptor(D *);
int cudnnSetFilterNdDescriptor(D, int, int, int, const int *);
int cudnnCreateConvolutionDescriptor(D *);
int cudnnSetConvolutionNdDescriptor(D, int, const int *, const int *, const int *, int, int);
int cudnnSetConvolutionMathType(D, int);
int cudnnSetConvolutionGroupCount(D, int);
int cudnnSetConvolutionReorderType(D, int);
int cudnnFindConvolutionForwardAlgorithm(D, D, D, D, D, int, int *, perf_t *);
int cudnnFindConvolutionForwardAlgorithmEx(D, D, const void *, D, const void *, D, D, void *, int,
                                           int *, perf_t *, void *, size_t);
int cudnnFindConvolutionBackwardDataAlgorithm(D, D, D, D, D, int, int *, perf_t *);
int cudnnFindConvolutionBackwardDataAlgorithmEx(D, D, const void *, D, const void *, D, D, void *,
                                                int, int *, perf_t *, void *, size_t);
int cudnnFindConvolutionBackwardFilterAlgorithm(D, D, D, D, D, int, int *, perf_t *);
int cudnnFindConvolutionBackwardFilterAlgorithmEx(D, D, const void *, D, const void *, D, D,
                                                  void *, int, int *, perf_t *, void *, size_t);
int standin_find_calls(void);
void *standin_cuda_stream(int dev);

/* The interposer's counters (the first fields of its struct). */
struct preload_stats {
    unsigned long long calls, hits, misses, passthrough, library_loads, errors;
};
int get_stats(struct preload_stats *s); /* 1 when the interposer is active */

extern int failures;
#define CHECK(cond, ...)                                                                  \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            fprintf(stderr, "preload_prog:%s:%d: check failed: %s: ", __FILE__, __LINE__, \
                    #cond);                                                               \
            fprintf(stderr, __VA_ARGS__);                                                 \
            fprintf(stderr, "\n");                                                        \
            __atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED);                           \
        }                                                                                 \
    } while (0)

/* ---- a convolution problem ---- */
struct problem {
    int dt, nb, x[5], xs[5], fdt, fmt, w[5], n, pad[3], stride[3], dil[3], mode, ctype, math,
        groups, reorder, y[5], ys[5];
};
struct descs { D x, w, conv, y; };

void packed(const int *d, int nb, int *s);
struct problem make(int n, int c, int h, int k, int r, int pad, int stride);
void set(struct descs *d, const struct problem *p);

/* find runs function f (0..5: fwd, fwd-ex, bwd-data, bwd-data-ex,
 * bwd-filter, bwd-filter-ex) on the handle and returns the status. */
int find(int f, const struct descs *d, int req, size_t ws, int *ret, perf_t *perf);
extern const int counts[6]; /* the algorithm count of each function */

/* same compares the fields cuDNN's callers read. */
int same(const perf_t *a, const perf_t *b, int n);

/* call runs fn on p and checks whether it reached cuDNN (want_miss) and
 * returned success. */
void call(const char *what, int fn, const struct problem *p, int req, size_t ws, int want_miss);

/* planted.c: entries planted in the cache file under the documented key. */
int keys(void);
int poison(void);
int poison_real(void);

/* args.c: hostile arguments and descriptors. */
int nulls(void);
int getters(void);

#endif
