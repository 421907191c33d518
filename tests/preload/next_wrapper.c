/*
 * libnext_wrapper.so: another interposer of cuDNN's forward find, as a
 * profiler might be: it defines cudnnFindConvolutionForwardAlgorithm,
 * counts the calls and passes each to the next definition, taken with
 * dlsym(RTLD_NEXT) (tests/preload/dlopen_run.sh preloads it after the
 * interposer). The interposer's dlsym must give it glibc's answer, never
 * the interposer's own function, which would call it back forever. At exit
 * it prints "next_wrapper calls N next FILE" on stderr.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

typedef int (*find_fn)(void *, void *, void *, void *, void *, int, int *, void *);
static int calls;
static const char *next_file = "-";

int cudnnFindConvolutionForwardAlgorithm(void *h, void *x, void *w, void *c, void *y, int req, int *ret,
                                         void *perf) {
    __atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED);
    find_fn next = (find_fn)dlsym(RTLD_NEXT, "cudnnFindConvolutionForwardAlgorithm");
    Dl_info info;
    if (next && dladdr((void *)next, &info) && info.dli_fname) next_file = info.dli_fname;
    if (!next || calls > 1000) return 4000; /* a loop ends here, as a failure */
    return next(h, x, w, c, y, req, ret, perf);
}

__attribute__((destructor)) static void report(void) {
    fprintf(stderr, "next_wrapper calls %d next %s\n", calls, next_file);
}
