/*
 * A plain C program that uses convcache through one header and no link-time
 * dependency: build it with just `cc main.c` (no -lconvcache). At run time
 * it loads libconvcache.so.1 if it can; if not, it prints one warning and
 * runs on with the cache off (every lookup misses, so it tunes each time).
 *
 *   cc -Iinclude examples/c_dynamic/main.c -o tuner
 *   LD_LIBRARY_PATH=build ./tuner            # with the library: tuned once
 *   CONVCACHE_LIBRARY=/nowhere.so ./tuner    # without: still works
 */
#define CONVCACHE_DYNAMIC 1
#include "convcache.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

/* What the program tunes: the best tile size for a matrix product of a
 * given size, found by timing each candidate. */
struct problem {
    int m, n, k;
};
struct choice {
    int tile;
    double seconds;
};

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static float a[128 * 128], b[128 * 128], c[128 * 128];

static void matmul_tiled(int m, int n, int k, int tile) {
    memset(c, 0, sizeof(float) * (size_t)m * (size_t)n);
    for (int i0 = 0; i0 < m; i0 += tile)
        for (int p0 = 0; p0 < k; p0 += tile)
            for (int i = i0; i < i0 + tile && i < m; i++)
                for (int p = p0; p < p0 + tile && p < k; p++) {
                    float av = a[i * k + p];
                    for (int j = 0; j < n; j++) c[i * n + j] += av * b[p * n + j];
                }
}

/* The builder convcache_get_or_create runs on a miss. */
static int tune(void *user, const void *key, size_t key_len, void *value, size_t cap, size_t *len) {
    const struct problem *p = (const struct problem *)key;
    (void)user;
    if (key_len != sizeof *p || cap < sizeof(struct choice)) return CONVCACHE_E_USER - 1;
    struct choice best = {0, 1e9};
    static const int tiles[] = {4, 8, 16, 32, 64};
    for (size_t t = 0; t < sizeof tiles / sizeof tiles[0]; t++) {
        double t0 = now();
        for (int rep = 0; rep < 20; rep++) matmul_tiled(p->m, p->n, p->k, tiles[t]);
        double dt = now() - t0;
        if (dt < best.seconds) {
            best.tile = tiles[t];
            best.seconds = dt;
        }
    }
    memcpy(value, &best, sizeof best);
    *len = sizeof best;
    return 0;
}

int main(void) {
    for (int i = 0; i < 128 * 128; i++) a[i] = b[i] = (float)(i % 7);

    convcache *cache = NULL;
    int rc = convcache_open(NULL, "example-c-dynamic", &cache); /* $CONVCACHE_PATH or the default */
    if (rc < 0) {
        fprintf(stderr, "convcache_open: %s: %s\n", convcache_strerror(rc), convcache_last_error());
        return 1;
    }
    printf("convcache %s (%s)\n", convcache_version(),
           convcache_dynamic_available() ? "loaded" : "not available: running without the cache");

    static const struct problem problems[] = {{64, 64, 64}, {128, 128, 128}, {96, 128, 32}};
    double t0 = now();
    int tuned = 0;
    for (size_t i = 0; i < sizeof problems / sizeof problems[0]; i++) {
        struct problem p = problems[i]; /* the key is its bytes (three ints: no padding) */
        struct choice ch;
        size_t n = 0;
        rc = convcache_get_or_create(cache, &p, sizeof p, tune, NULL, &ch, sizeof ch, &n);
        if (rc < 0 || n != sizeof ch) {
            fprintf(stderr, "get_or_create: %s\n", convcache_strerror(rc));
            return 1;
        }
        tuned += rc == CONVCACHE_OK; /* 0: this call ran the builder; 1: a hit */
        printf("  %dx%dx%d: tile %d (%s)\n", p.m, p.n, p.k, ch.tile, rc == CONVCACHE_HIT ? "cached" : "tuned now");
    }
    printf("%d of 3 problems tuned in this run, %.1f ms\n", tuned, (now() - t0) * 1e3);
    convcache_save(cache);
    convcache_close(cache);
    return 0;
}
