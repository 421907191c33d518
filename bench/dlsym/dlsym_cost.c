/*
 * What the interposed dlsym costs a lookup it does not redirect, against
 * glibc's own dlsym (found with dlvsym in libc's handle: "dlsym" is not a
 * name the interposer redirects). Run under
 * LD_PRELOAD=libconvcache_preload.so; it opens bench/v8/fake_cudnn.c's
 * libcudnn.so.9 (by its run path) with dlopen. In alternating rounds it times 64 names of libc looked up
 * in libc's handle and in RTLD_DEFAULT through each, then a served name
 * (cudnnBackendExecute in cuDNN's handle, redirected), and prints the
 * median ns per lookup of each:
 *
 *   dlsym_ns_glibc=<n> dlsym_ns_interposed=<n> dlsym_ratio=<r>
 *   served_ns_glibc=<n> served_ns_interposed=<n>
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../median_ns.h"

typedef void *(*dlsym_fn)(void *, const char *);

static const char *const names[] = {
    "printf", "malloc", "free", "memcpy", "strlen", "open", "close", "read", "write", "fopen",
    "fclose", "fprintf", "snprintf", "qsort", "bsearch", "getenv", "setenv", "pthread_create",
    "pthread_join", "pthread_mutex_lock", "pthread_mutex_unlock", "mmap", "munmap", "clock_gettime",
    "nanosleep", "socket", "connect", "bind", "listen", "accept", "send", "recv", "strcmp",
    "strncmp", "strchr", "strrchr", "strstr", "memset", "memmove", "calloc", "realloc",
    "posix_memalign", "abort", "exit", "atexit", "fork", "execve", "waitpid", "kill", "signal",
    "sigaction", "getpid", "getuid", "time", "localtime_r", "strftime", "fflush", "fwrite",
    "fread", "fseek", "ftell", "rewind", "dlopen", "cuInit",
};
#define N_NAMES ((int)(sizeof names / sizeof names[0]))

static volatile unsigned long sink;

/* round: ns per lookup, over reps passes of every name in both handles. */
static double round_ns(dlsym_fn f, void *libc, int reps) {
    double t0 = now_ns();
    for (int r = 0; r < reps; r++)
        for (int i = 0; i < N_NAMES; i++) {
            sink += (unsigned long)f(libc, names[i]);
            sink += (unsigned long)f(RTLD_DEFAULT, names[i]);
        }
    return (now_ns() - t0) / (reps * 2.0 * N_NAMES);
}

static double served_ns(dlsym_fn f, void *cudnn, int reps) {
    double t0 = now_ns();
    for (int r = 0; r < reps; r++) sink += (unsigned long)f(cudnn, "cudnnBackendExecute");
    return (now_ns() - t0) / reps;
}

int main(void) {
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    void *cudnn = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_LOCAL);
    dlsym_fn glibc = NULL;
    if (libc) glibc = (dlsym_fn)dlvsym(libc, "dlsym", "GLIBC_2.34");
    if (libc && !glibc) glibc = (dlsym_fn)dlvsym(libc, "dlsym", "GLIBC_2.2.5");
    dlsym_fn interposed = dlsym;
    if (!libc || !cudnn || !glibc || glibc == interposed ||
        interposed(cudnn, "cudnnBackendExecute") == glibc(cudnn, "cudnnBackendExecute")) {
        fprintf(stderr, "dlsym_cost: run it under LD_PRELOAD=libconvcache_preload.so\n");
        return 2;
    }
    enum { ROUNDS = 31, REPS = 300, SERVED = 20000 };
    double g[ROUNDS], p[ROUNDS], sg[ROUNDS], sp[ROUNDS];
    round_ns(interposed, libc, REPS);
    round_ns(glibc, libc, REPS);
    for (int r = 0; r < ROUNDS; r++) {
        g[r] = round_ns(glibc, libc, REPS);
        p[r] = round_ns(interposed, libc, REPS);
        sg[r] = served_ns(glibc, cudnn, SERVED);
        sp[r] = served_ns(interposed, cudnn, SERVED);
    }
    double mg = median(g, ROUNDS), mp = median(p, ROUNDS);
    printf("dlsym_ns_glibc=%.2f dlsym_ns_interposed=%.2f dlsym_ratio=%.3f served_ns_glibc=%.2f "
           "served_ns_interposed=%.2f\n",
           mg, mp, mp / mg, median(sg, ROUNDS), median(sp, ROUNDS));
    return 0;
}
