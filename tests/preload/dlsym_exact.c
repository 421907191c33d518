/*
 * dlsym_exact NAMES CUDNN: every name in the file NAMES (one a line) looked
 * up with dlsym in libc.so.6, libm.so.6, the library CUDNN (a path), this
 * program (dlopen(NULL)), RTLD_DEFAULT and RTLD_NEXT, and with dlvsym in
 * libc at version GLIBC_2.2.5 and in CUDNN at libcudnn.so.9 (the real
 * cuDNN 9 versions its symbols so); one line each: where the answer lies (the
 * object's file name and the offset in it, so that two runs compare) and
 * what dlerror says after it (a thread-local variable's address lies in no
 * object and moves when another library with thread-local storage is
 * loaded: only that it lies in none is printed). tests/preload/dlopen_run.sh runs it with and
 * without the interposer and compares.
 *
 * Where CUDNN has standin_lookup_own (the stand-in), each name is also
 * looked up by cuDNN itself in its own handle ("cudnn-self"), as cuDNN 9's
 * libcudnn.so.9 takes its sub-libraries' functions. With a third argument
 * "call", cudnnBackendCreateDescriptor and cudnnBackendDestroyDescriptor
 * taken from CUDNN's handle are called once (a tensor descriptor; no GPU
 * needed): through the interposer, they must reach cuDNN and come back.
 *
 * It defines and exports (-rdynamic) one served name itself,
 * cudnnBackendExecute, as a program with its own stand-in might: glibc's
 * RTLD_DEFAULT answer is then the program's, and must stay so.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cudnnBackendExecute(void *handle, void *plan, void *pack);
int cudnnBackendExecute(void *handle, void *plan, void *pack) {
    (void)handle;
    (void)plan;
    (void)pack;
    return 42;
}

static void show(FILE *out, const char *where, const char *name, void *p) {
    const char *err = dlerror();
    Dl_info info;
    if (!p) fprintf(out, "%s %s NULL", where, name);
    else if (dladdr(p, &info) && info.dli_fname) {
        const char *b = strrchr(info.dli_fname, '/');
        fprintf(out, "%s %s %s+%#lx", where, name, b ? b + 1 : info.dli_fname,
                (unsigned long)((uintptr_t)p - (uintptr_t)info.dli_fbase));
    } else fprintf(out, "%s %s outside-any-object", where, name); /* thread-local */
    fprintf(out, " err %s\n", err ? err : "-");
}

int main(int argc, char **argv) {
    if (argc != 3 && !(argc == 4 && !strcmp(argv[3], "call"))) {
        fprintf(stderr, "usage: dlsym_exact NAMES CUDNN [call]\n");
        return 2;
    }
    FILE *in = fopen(argv[1], "r");
    if (!in) return perror(argv[1]), 2;
    struct { const char *what; void *h; } hs[] = {
        {"libc", dlopen("libc.so.6", RTLD_NOW)},
        {"libm", dlopen("libm.so.6", RTLD_NOW)},
        {"cudnn", dlopen(argv[2], RTLD_NOW | RTLD_LOCAL)},
        {"self", dlopen(NULL, RTLD_NOW)},
        {"default", RTLD_DEFAULT},
        {"next", RTLD_NEXT},
    };
    for (size_t k = 0; k < 4; k++)
        if (!hs[k].h) return fprintf(stderr, "dlopen %s: %s\n", hs[k].what, dlerror()), 2;
    void *(*self)(const char *) = (void *(*)(const char *))dlsym(hs[2].h, "standin_lookup_own");
    char line[512];
    long n = 0;
    dlerror();
    while (fgets(line, sizeof line, in)) {
        line[strcspn(line, "\n")] = 0;
        if (!line[0]) continue;
        for (size_t k = 0; k < sizeof hs / sizeof hs[0]; k++) show(stdout, hs[k].what, line, dlsym(hs[k].h, line));
        show(stdout, "libc@GLIBC_2.2.5", line, dlvsym(hs[0].h, line, "GLIBC_2.2.5"));
        show(stdout, "cudnn@libcudnn.so.9", line, dlvsym(hs[2].h, line, "libcudnn.so.9"));
        if (self) show(stdout, "cudnn-self", line, self(line));
        n++;
    }
    fclose(in);
    fprintf(stderr, "dlsym_exact: %ld names\n", n);
    if (argc == 4) {
        int (*create)(int, void **) = (int (*)(int, void **))dlsym(hs[2].h, "cudnnBackendCreateDescriptor");
        int (*destroy)(void *) = (int (*)(void *))dlsym(hs[2].h, "cudnnBackendDestroyDescriptor");
        void *d = NULL;
        int st = create ? create(4 /* CUDNN_BACKEND_TENSOR_DESCRIPTOR */, &d) : -1;
        int dst = d && destroy ? destroy(d) : -1;
        fprintf(stderr, "call create %d destroy %d\n", st, dst);
        if (st != 0 || dst != 0) return 1;
    }
    return 0;
}
