/*
 * Timing for the C micro-benchmarks (bench/v8/exec_overhead.c,
 * bench/dlsym/dlsym_cost.c): a monotonic clock in nanoseconds, and the
 * median of a round's figures.
 */
#ifndef CONVCACHE_BENCH_MEDIAN_NS_H
#define CONVCACHE_BENCH_MEDIAN_NS_H

#include <stdlib.h>
#include <time.h>

static inline double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static inline int median_cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* median sorts v's n figures and returns the middle one. */
static inline double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof v[0], median_cmp);
    return v[n / 2];
}

#endif
