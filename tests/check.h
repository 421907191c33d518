/* Minimal helpers for the C tests: each test is a program that exits 0 when
 * every check passed and prints the failing check otherwise. */
#ifndef CONVCACHE_TEST_CHECK_H
#define CONVCACHE_TEST_CHECK_H

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "convcache.h"
#include "tmpdir.h"

#define CHECK(cond)                                                             \
    do {                                                                        \
        if (!(cond)) {                                                          \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n  last_error: %s\n",      \
                    __FILE__, __LINE__, #cond, convcache_last_error());         \
            exit(1);                                                            \
        }                                                                       \
    } while (0)

#define CHECK_RC(expr, want)                                                    \
    do {                                                                        \
        int rc_ = (expr);                                                       \
        if (rc_ != (want)) {                                                    \
            fprintf(stderr, "%s:%d: %s returned %d (%s), want %d (%s)\n"        \
                            "  last_error: %s\n",                               \
                    __FILE__, __LINE__, #expr, rc_, convcache_strerror(rc_),    \
                    (want), convcache_strerror(want), convcache_last_error());  \
            exit(1);                                                            \
        }                                                                       \
    } while (0)

/* A fresh temporary directory for this test, removed at exit (tmpdir.h). */
static inline const char *test_tmpdir(void) { return test_tmpdir_named("convcache-test"); }

static inline char *test_path(const char *name) {
    char *p = malloc(512);
    snprintf(p, 512, "%s/%s", test_tmpdir(), name);
    return p;
}

/* A key shaped like PyTorch's 104-byte ConvolutionParams for index i, and a
 * 48-byte value like cudnnConvolutionFwdAlgoPerf_t derived from it. */
typedef struct { unsigned char b[104]; } test_key;
typedef struct { unsigned char b[48]; } test_val;

static inline test_key make_key(uint32_t i) {
    test_key k;
    memset(&k, 0, sizeof k);
    int32_t dims[5] = {(int32_t)(1 + i % 64), (int32_t)(3 + (i / 64) % 512), (int32_t)(7 + (i / 32768) % 224),
                       (int32_t)(7 + i % 224), 0};
    memcpy(k.b + 8, dims, sizeof dims);
    k.b[28] = 4;
    memcpy(k.b + 88, &i, sizeof i); /* guarantees uniqueness */
    return k;
}

static inline test_val make_val(uint32_t i, uint32_t version) {
    test_val v;
    memset(&v, 0, sizeof v);
    uint32_t algo = i % 8;
    float ms = (float)(i % 1000) / 7.0f + (float)version;
    uint64_t mem = (uint64_t)i * 4096u;
    memcpy(v.b, &algo, 4);
    memcpy(v.b + 8, &ms, 4);
    memcpy(v.b + 16, &mem, 8);
    memcpy(v.b + 32, &i, 4);
    memcpy(v.b + 36, &version, 4);
    return v;
}

static inline double now_sec(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static inline void write_file(const char *path, const void *data, size_t n) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || write(fd, data, n) != (ssize_t)n) {
        perror(path);
        exit(1);
    }
    close(fd);
}

static inline size_t read_file(const char *path, void *buf, size_t cap) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, cap);
    close(fd);
    return n < 0 ? 0 : (size_t)n;
}

#endif
