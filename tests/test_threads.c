/* 8 threads mix find and insert on one handle, and on two handles of the
 * same file. Every value found must be one that was inserted for that key,
 * and afterwards every key must be found, through both handles. */
#include "check.h"

#include <pthread.h>

#define THREADS 8
#define KEYS 4000
#define OPS 40000

typedef struct {
    convcache *h;
    int id;
    long hits, wrong;
} worker;

/* Values carry their key index and a version; any version is a value that
 * was inserted for the key, as long as the rest matches make_val. */
static int valid_for(const test_val *v, uint32_t key) {
    uint32_t idx, ver;
    memcpy(&idx, v->b + 32, 4);
    memcpy(&ver, v->b + 36, 4);
    test_val want = make_val(key, ver);
    return idx == key && ver < THREADS && memcmp(v, &want, sizeof want) == 0;
}

static void *run(void *arg) {
    worker *w = arg;
    uint32_t seed = 0x9E3779B9u * (uint32_t)(w->id + 1);
    for (int i = 0; i < OPS; i++) {
        seed = seed * 1664525u + 1013904223u;
        uint32_t key = (seed >> 8) % KEYS;
        test_key k = make_key(key);
        test_val got;
        size_t n = 0;
        int rc = convcache_find(w->h, &k, sizeof k, &got, sizeof got, &n);
        CHECK(rc == 0 || rc == CONVCACHE_HIT);
        if (rc == CONVCACHE_HIT) {
            w->hits++;
            if (n != sizeof got || !valid_for(&got, key)) w->wrong++;
        }
        if ((seed & 7) == 0 || rc == 0) {
            test_val v = make_val(key, (uint32_t)w->id);
            CHECK_RC(convcache_insert(w->h, &k, sizeof k, &v, sizeof v), CONVCACHE_OK);
        }
    }
    return NULL;
}

static void round_with(convcache *a, convcache *b, const char *what) {
    pthread_t t[THREADS];
    worker w[THREADS];
    double t0 = now_sec();
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){.h = (i % 2 && b) ? b : a, .id = i};
        CHECK(pthread_create(&t[i], NULL, run, &w[i]) == 0);
    }
    long hits = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        CHECK(w[i].wrong == 0);
        hits += w[i].hits;
    }
    /* Nothing lost: every key is found, through every handle. */
    convcache *hs[2] = {a, b};
    for (int h = 0; h < 2 && hs[h]; h++)
        for (uint32_t key = 0; key < KEYS; key++) {
            test_key k = make_key(key);
            test_val got;
            size_t n;
            CHECK_RC(convcache_find(hs[h], &k, sizeof k, &got, sizeof got, &n), CONVCACHE_HIT);
            CHECK(valid_for(&got, key));
        }
    printf("%s: %d threads, %d ops each, %ld hits, %.2fs\n", what, THREADS, OPS, hits, now_sec() - t0);
}

int main(void) {
    /* Inserts must succeed here (CONVCACHE_OK, not PENDING): a loaded
     * machine must not turn lock contention into a lock timeout. */
    setenv("CONVCACHE_LOCK_TIMEOUT_MS", "600000", 1);
    char *p1 = test_path("threads1.ccdb"), *p2 = test_path("threads2.ccdb");
    convcache *a, *b, *c;
    CHECK_RC(convcache_open(p1, "t", &a), CONVCACHE_OK);
    round_with(a, NULL, "one handle");
    convcache_close(a);
    CHECK_RC(convcache_open(p2, "t", &b), CONVCACHE_OK);
    CHECK_RC(convcache_open(p2, "t", &c), CONVCACHE_OK);
    round_with(b, c, "two handles");
    convcache_close(b);
    convcache_close(c);
    /* And a fresh handle agrees. */
    CHECK_RC(convcache_open(p2, "t", &a), CONVCACHE_OK);
    for (uint32_t key = 0; key < KEYS; key++) {
        test_key k = make_key(key);
        test_val got;
        size_t n;
        CHECK_RC(convcache_find(a, &k, sizeof k, &got, sizeof got, &n), CONVCACHE_HIT);
        CHECK(valid_for(&got, key));
    }
    convcache_close(a);
    printf("test_threads: ok\n");
    return 0;
}
