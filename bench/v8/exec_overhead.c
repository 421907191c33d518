/*
 * What the interposer adds to cudnnBackendExecute when no benchmark is
 * being watched (the warm path: PyTorch's own map answers, and only
 * executes reach cuDNN). Run under LD_PRELOAD=libconvcache_preload.so,
 * linked to bench/v8/fake_cudnn.c's libcudnn.so.9, whose execute returns
 * at once: the program times the same call through the interposer (the
 * symbol it links to) and straight to the fake (its alias
 * fake_cudnn_execute, found by dlsym in the library itself), in alternating
 * rounds, and prints the median of each and their difference, in ns per
 * call; then the same through the pointer a dlopen client gets, dlsym of
 * cudnnBackendExecute in the library's handle (the interposer's):
 *
 *   exec_ns_direct=<n> exec_ns_interposed=<n> exec_ns_added=<n>
 *   exec_ns_dlsym=<n> exec_ns_dlsym_added=<n>
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../median_ns.h"

int cudnnBackendExecute(void *h, void *plan, void *pack);
typedef int (*exec_fn)(void *, void *, void *);

/* round times n calls of f; volatile keeps the compiler from folding them. */
static double round_ns(exec_fn volatile f, long n) {
    int plan;
    double t0 = now_ns();
    for (long i = 0; i < n; i++)
        if (f(NULL, &plan, NULL)) abort();
    return (now_ns() - t0) / n;
}

int main(void) {
    void *lib = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_NOLOAD);
    exec_fn direct = lib ? (exec_fn)dlsym(lib, "fake_cudnn_execute") : NULL;
    exec_fn interposed = cudnnBackendExecute;
    exec_fn via_dlsym = lib ? (exec_fn)dlsym(lib, "cudnnBackendExecute") : NULL;
    if (!direct || direct == interposed || !via_dlsym) {
        fprintf(stderr, "exec_overhead: run it under LD_PRELOAD=libconvcache_preload.so\n");
        return 2;
    }
    enum { ROUNDS = 31, CALLS = 2000000 };
    double d[ROUNDS], p[ROUNDS], q[ROUNDS];
    round_ns(interposed, CALLS); /* the interposer resolves cuDNN on its first call */
    for (int r = 0; r < ROUNDS; r++) {
        d[r] = round_ns(direct, CALLS);
        p[r] = round_ns(interposed, CALLS);
        q[r] = round_ns(via_dlsym, CALLS);
    }
    double md = median(d, ROUNDS), mp = median(p, ROUNDS), mq = median(q, ROUNDS);
    printf("exec_ns_direct=%.2f exec_ns_interposed=%.2f exec_ns_added=%.2f exec_ns_dlsym=%.2f exec_ns_dlsym_added=%.2f\n",
           md, mp, mp - md, mq, mq - md);
    return 0;
}
