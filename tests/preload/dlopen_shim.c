/*
 * preload_prog as a dlopen client (tests/preload/dlopen_run.sh): the
 * program does not link cuDNN; every cuDNN function it calls is taken with
 * dlsym from a handle of the stand-in libcudnn.so.9, opened on the first
 * call (after the program started), as ONNX Runtime's CUDA provider does.
 *
 *   DLOPEN_PROG_CUDNN  what to open: a path or a soname (default
 *                      "libcudnn.so.9", found by this program's run path)
 *   DLOPEN_PROG_OPEN   how: "once" (default, RTLD_NOW | RTLD_LOCAL);
 *                      "twice" (the same library by soname, then by the
 *                      path, the functions taken from the second handle);
 *                      "reopen" (opened, functions taken, closed, opened
 *                      again, taken again); "threads" (8 threads open and
 *                      take every function at once; each must get the same
 *                      pointers); "forked" (the program forks first, and
 *                      the child opens cuDNN, takes the functions and runs
 *                      the rest; the parent exits with its status)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "prog.h"

#define FUNCS(X)                                                                                 \
    X(int, cudnnCreate, (D * a), (a))                                                            \
    X(int, cudnnSetStream, (D a, void *b), (a, b))                                               \
    X(int, cudnnCreateTensorDescriptor, (D * a), (a))                                            \
    X(int, cudnnSetTensorNdDescriptor, (D a, int b, int c, const int *d, const int *e), (a, b, c, d, e)) \
    X(int, cudnnCreateFilterDescriptor, (D * a), (a))                                            \
    X(int, cudnnSetFilterNdDescriptor, (D a, int b, int c, int d, const int *e), (a, b, c, d, e)) \
    X(int, cudnnCreateConvolutionDescriptor, (D * a), (a))                                       \
    X(int, cudnnSetConvolutionNdDescriptor,                                                      \
      (D a, int b, const int *c, const int *d, const int *e, int f, int g), (a, b, c, d, e, f, g)) \
    X(int, cudnnSetConvolutionMathType, (D a, int b), (a, b))                                    \
    X(int, cudnnSetConvolutionGroupCount, (D a, int b), (a, b))                                  \
    X(int, cudnnSetConvolutionReorderType, (D a, int b), (a, b))                                 \
    X(int, cudnnFindConvolutionForwardAlgorithm,                                                 \
      (D a, D b, D c, D d, D e, int f, int *g, perf_t *h), (a, b, c, d, e, f, g, h))             \
    X(int, cudnnFindConvolutionForwardAlgorithmEx,                                               \
      (D a, D b, const void *c, D d, const void *e, D f, D g, void *h, int i, int *j, perf_t *k, \
       void *l, size_t m), (a, b, c, d, e, f, g, h, i, j, k, l, m))                              \
    X(int, cudnnFindConvolutionBackwardDataAlgorithm,                                            \
      (D a, D b, D c, D d, D e, int f, int *g, perf_t *h), (a, b, c, d, e, f, g, h))             \
    X(int, cudnnFindConvolutionBackwardDataAlgorithmEx,                                          \
      (D a, D b, const void *c, D d, const void *e, D f, D g, void *h, int i, int *j, perf_t *k, \
       void *l, size_t m), (a, b, c, d, e, f, g, h, i, j, k, l, m))                              \
    X(int, cudnnFindConvolutionBackwardFilterAlgorithm,                                          \
      (D a, D b, D c, D d, D e, int f, int *g, perf_t *h), (a, b, c, d, e, f, g, h))             \
    X(int, cudnnFindConvolutionBackwardFilterAlgorithmEx,                                        \
      (D a, D b, const void *c, D d, const void *e, D f, D g, void *h, int i, int *j, perf_t *k, \
       void *l, size_t m), (a, b, c, d, e, f, g, h, i, j, k, l, m))                              \
    X(size_t, cudnnGetVersion, (void), ())                                                       \
    X(int, standin_find_calls, (void), ())                                                       \
    X(void *, standin_cuda_stream, (int a), (a))

enum {
#define X(ret, name, params, args) I_##name,
    FUNCS(X)
#undef X
    N_SHIM
};
static const char *const names[N_SHIM] = {
#define X(ret, name, params, args) #name,
    FUNCS(X)
#undef X
};

static void *fns[N_SHIM];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static const char *target(void) {
    const char *t = getenv("DLOPEN_PROG_CUDNN");
    return t && *t ? t : "libcudnn.so.9";
}

/* open_cudnn opens what or exits. */
static void *open_cudnn(const char *what) {
    void *h = dlopen(what, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen_prog: dlopen %s: %s\n", what, dlerror());
        exit(3);
    }
    return h;
}

/* take fills out with every function from h (the stand-in driver's own,
 * standin_cuda_stream, from the driver). */
static void take(void *h, void **out) {
    for (int i = 0; i < N_SHIM; i++) {
        out[i] = dlsym(i == I_standin_cuda_stream ? open_cudnn("libcuda.so.1") : h, names[i]);
        if (!out[i]) {
            fprintf(stderr, "dlopen_prog: dlsym %s: %s\n", names[i], dlerror());
            exit(3);
        }
    }
}

static void *thread_take(void *arg) {
    take(open_cudnn(target()), arg);
    return NULL;
}

static void load(void) {
    const char *how = getenv("DLOPEN_PROG_OPEN");
    how = how && *how ? how : "once";
    if (!strcmp(how, "once")) {
        take(open_cudnn(target()), fns);
    } else if (!strcmp(how, "twice")) {
        void *a = open_cudnn("libcudnn.so.9"), *b = open_cudnn(target());
        void *first[N_SHIM];
        take(a, first);
        take(b, fns);
        for (int i = 0; i < N_SHIM; i++)
            CHECK(first[i] == fns[i], "%s differs between two handles", names[i]);
    } else if (!strcmp(how, "reopen")) {
        void *h = open_cudnn(target());
        take(h, fns);
        dlclose(h);
        take(open_cudnn(target()), fns);
    } else if (!strcmp(how, "forked")) {
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0) exit(3);
        if (pid > 0) {
            int st = 0;
            while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
            _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 4);
        }
        take(open_cudnn(target()), fns);
    } else if (!strcmp(how, "threads")) {
        enum { T = 8 };
        static void *got[T][N_SHIM];
        pthread_t t[T];
        for (int i = 0; i < T; i++) pthread_create(&t[i], NULL, thread_take, got[i]);
        for (int i = 0; i < T; i++) pthread_join(t[i], NULL);
        for (int i = 0; i < T; i++)
            for (int k = 0; k < N_SHIM; k++)
                CHECK(got[i][k] == got[0][k], "thread %d took another %s", i, names[k]);
        memcpy(fns, got[0], sizeof fns);
    } else {
        fprintf(stderr, "dlopen_prog: DLOPEN_PROG_OPEN=%s?\n", how);
        exit(2);
    }
}

#define X(ret, name, params, args)                  \
    ret name params {                               \
        pthread_once(&once, load);                  \
        return ((ret(*) params)fns[I_##name])args; \
    }
FUNCS(X)
#undef X
