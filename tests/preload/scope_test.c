/*
 * convcache_cudnn_scope against the stand-in driver and cuDNN
 * (tests/preload/run.sh runs it with LD_LIBRARY_PATH naming them).
 *
 *   scope_test             the fingerprint, its overrides and its errors
 *   scope_test none        nothing can be loaded: CONVCACHE_E_UNAVAILABLE
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "convcache.h"

static int failures;
#define CHECK(cond, ...)                                                             \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "scope_test:%d: check failed: %s: ", __LINE__, #cond);   \
            fprintf(stderr, __VA_ARGS__);                                            \
            fprintf(stderr, "\n");                                                   \
            failures++;                                                              \
        }                                                                            \
    } while (0)

static char buf[CONVCACHE_SCOPE_MAX + 1];

/* expect checks that device's scope is want (or, with want NULL, that the
 * call fails with code and the message contains msg). */
static void expect(int device, const char *want, int code, const char *msg) {
    memset(buf, 'x', sizeof buf);
    int rc = convcache_cudnn_scope(device, buf, sizeof buf);
    if (want) {
        CHECK(rc == (int)strlen(want) && strcmp(buf, want) == 0,
              "device %d: rc %d %s\n  got  \"%s\"\n  want \"%s\"", device, rc,
              rc < 0 ? convcache_last_error() : "", rc >= 0 ? buf : "", want);
        return;
    }
    CHECK(rc == code, "device %d: rc %d (%s), want %d", device, rc, convcache_strerror(rc), code);
    CHECK(strstr(convcache_last_error(), msg) != NULL, "device %d: error \"%s\" lacks \"%s\"",
          device, convcache_last_error(), msg);
}

#define BASE0 "cc1;gpu=Standin GPU 0;cc=9.0;sms=132;driver=13000;cudnn=91300;cudart=13000"
#define BASE1 "cc1;gpu=Standin GPU 1;cc=9.0;sms=128;driver=13000;cudnn=91300;cudart=13000"

static int fingerprint(void) {
    unsetenv("CONVCACHE_SCOPE");
    unsetenv("CONVCACHE_TAG");
    expect(0, BASE0, 0, NULL);
    expect(1, BASE1, 0, NULL);

    setenv("CONVCACHE_TAG", "torch-2.9.0+git1a2b3c", 1);
    expect(0, BASE0 ";tag=torch-2.9.0+git1a2b3c", 0, NULL);
    setenv("CONVCACHE_TAG", "", 1);
    expect(0, BASE0, 0, NULL);

    setenv("CONVCACHE_SCOPE", "site-wide scope", 1);
    setenv("CONVCACHE_TAG", "ignored", 1);
    expect(0, "site-wide scope", 0, NULL);
    expect(9, "site-wide scope", 0, NULL); /* no such device: the override wins */
    unsetenv("CONVCACHE_SCOPE");
    unsetenv("CONVCACHE_TAG");

    /* What the scope must follow. */
    setenv("STANDIN_DRIVER_VERSION", "13010", 1);
    expect(0, "cc1;gpu=Standin GPU 0;cc=9.0;sms=132;driver=13010;cudnn=91300;cudart=13000", 0, NULL);
    unsetenv("STANDIN_DRIVER_VERSION");
    setenv("STANDIN_CUDNN_VERSION", "91400", 1);
    expect(0, "cc1;gpu=Standin GPU 0;cc=9.0;sms=132;driver=13000;cudnn=91400;cudart=13000", 0, NULL);
    unsetenv("STANDIN_CUDNN_VERSION");
    setenv("STANDIN_GPU_NAME_0", " Odd;name=x\tGPU ", 1);
    expect(0, "cc1;gpu=Odd_name_x_GPU;cc=9.0;sms=132;driver=13000;cudnn=91300;cudart=13000", 0, NULL);
    unsetenv("STANDIN_GPU_NAME_0");

    /* Errors. */
    expect(2, NULL, CONVCACHE_E_UNAVAILABLE, "no CUDA device 2: 2 device(s) visible");
    setenv("STANDIN_CUDA_INIT_ERROR", "100", 1);
    expect(0, NULL, CONVCACHE_E_UNAVAILABLE, "cuInit failed: CUDA_ERROR_NO_DEVICE");
    unsetenv("STANDIN_CUDA_INIT_ERROR");
    setenv("CONVCACHE_CUDNN_LIBRARY", "/nonexistent/libcudnn.so.9", 1);
    expect(0, NULL, CONVCACHE_E_UNAVAILABLE, "no cuDNN: cannot load /nonexistent/libcudnn.so.9");
    unsetenv("CONVCACHE_CUDNN_LIBRARY");
    setenv("CONVCACHE_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
    expect(0, NULL, CONVCACHE_E_UNAVAILABLE, "no CUDA driver: cannot load /nonexistent/libcuda.so.1");
    unsetenv("CONVCACHE_CUDA_LIBRARY");
    const char *dir = getenv("STANDIN_DIR");
    if (dir) {
        char path[4096];
        snprintf(path, sizeof path, "%s/libcuda.so.1", dir);
        setenv("CONVCACHE_CUDA_LIBRARY", path, 1);
        snprintf(path, sizeof path, "%s/libcudnn.so.9", dir);
        setenv("CONVCACHE_CUDNN_LIBRARY", path, 1);
        expect(0, BASE0, 0, NULL);
        unsetenv("CONVCACHE_CUDA_LIBRARY");
        unsetenv("CONVCACHE_CUDNN_LIBRARY");
    }
    char *tag = malloc(CONVCACHE_SCOPE_MAX + 2);
    if (!tag) return 1;
    memset(tag, 't', CONVCACHE_SCOPE_MAX);
    tag[CONVCACHE_SCOPE_MAX] = 0; /* a tag that alone fills the limit */
    setenv("CONVCACHE_TAG", tag, 1);
    expect(0, NULL, CONVCACHE_E_SIZE, "CONVCACHE_TAG");
    setenv("CONVCACHE_SCOPE", tag, 1); /* exactly the limit: allowed */
    CHECK(convcache_cudnn_scope(0, buf, sizeof buf) == CONVCACHE_SCOPE_MAX, "a scope of %d bytes",
          CONVCACHE_SCOPE_MAX);
    strcat(tag, "T");
    setenv("CONVCACHE_SCOPE", tag, 1);
    expect(0, NULL, CONVCACHE_E_SIZE, "CONVCACHE_SCOPE");
    unsetenv("CONVCACHE_SCOPE");
    unsetenv("CONVCACHE_TAG");
    free(tag);

    CHECK(convcache_cudnn_scope(0, NULL, 10) == CONVCACHE_E_INVALID, "NULL buf");
    CHECK(convcache_cudnn_scope(-1, buf, sizeof buf) == CONVCACHE_E_INVALID, "negative device");
    CHECK(convcache_cudnn_scope(0, buf, 0) == CONVCACHE_E_RANGE, "cap 0");
    buf[0] = 'x';
    int rc = convcache_cudnn_scope(0, buf, strlen(BASE0));
    CHECK(rc == CONVCACHE_E_RANGE && buf[0] == 0, "cap one short: rc %d buf \"%.10s\"", rc, buf);
    CHECK(convcache_cudnn_scope(0, buf, strlen(BASE0) + 1) == (int)strlen(BASE0), "exact cap");

    /* The scope opens a cache. */
    convcache *c = NULL;
    CHECK(convcache_open(NULL, buf, &c) == 0, "open with the scope: %s", convcache_last_error());
    convcache_close(c);

    pid_t pid = fork();
    if (pid == 0) _exit(convcache_cudnn_scope(0, buf, sizeof buf) == CONVCACHE_E_FORKED ? 0 : 1);
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a forked child did not get CONVCACHE_E_FORKED");
    return failures ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "none") == 0) {
        unsetenv("CONVCACHE_SCOPE");
        expect(0, NULL, CONVCACHE_E_UNAVAILABLE, "no CUDA driver: cannot load libcuda.so.1");
        return failures ? 1 : 0;
    }
    return fingerprint();
}
