/*
 * preload_prog's tests of what the interposer accepts: entries planted in
 * the cache file under the key layout of cudnn/doc.go (built here,
 * independently of the interposer), and poisoned results from cuDNN itself
 * (the stand-in's STANDIN_POISON).
 *
 *   keys         a valid planted entry is what find returns
 *   poison       each planted entry with one poisoned field is not returned:
 *                the call benchmarks and the entry is replaced
 *   poison-real  cuDNN's own poisoned results reach the caller unchanged and
 *                are never stored (reserved fields are stored as 0)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convcache.h"
#include "prog.h"

size_t cudnnGetVersion(void);

/* ---- the documented key layout ---- */
struct key { unsigned char b[1024]; size_t n; };
static void k32(struct key *k, int32_t v) {
    for (int i = 0; i < 4; i++) k->b[k->n++] = (unsigned char)((uint32_t)v >> (8 * i));
}
static void ktensor(struct key *k, int dt, int nb, const int *d, const int *s) {
    k32(k, dt), k32(k, nb);
    for (int i = 0; i < nb; i++) k32(k, d[i]);
    for (int i = 0; i < nb; i++) k32(k, s[i]);
}
static void fwd_key(struct key *k, const struct problem *p, int ex, int req, uint64_t ws) {
    k->n = 0;
    memcpy(k->b, "ccf1", 4), k->n = 4;
    k->b[k->n++] = 1, k->b[k->n++] = (unsigned char)ex, k->b[k->n++] = 0, k->b[k->n++] = 0;
    k32(k, req), k32(k, (int32_t)(uint32_t)ws), k32(k, (int32_t)(uint32_t)(ws >> 32));
    ktensor(k, p->dt, p->nb, p->x, p->xs);
    k32(k, p->fdt), k32(k, p->fmt), k32(k, p->nb);
    for (int i = 0; i < p->nb; i++) k32(k, p->w[i]);
    k32(k, p->n);
    for (int i = 0; i < p->n; i++) k32(k, p->pad[i]);
    for (int i = 0; i < p->n; i++) k32(k, p->stride[i]);
    for (int i = 0; i < p->n; i++) k32(k, p->dil[i]);
    k32(k, p->mode), k32(k, p->ctype), k32(k, p->math), k32(k, p->groups), k32(k, p->reorder);
    ktensor(k, p->dt, p->nb, p->y, p->ys);
}

/* ---- planting ---- */
static int (*insert_fn)(convcache *, const void *, size_t, const void *, size_t);
static convcache *planted_cache;

/* open_planter loads libconvcache through the interposer (with a call on
 * an unrelated problem) and opens the cache file under device 0's scope,
 * as the interposer does. Returns 0 or -1. */
static int open_planter(void) {
    const struct problem other = make(4, 4, 8, 4, 1, 0, 1);
    call("warm-up", 0, &other, 8, 0, 1);
    void *lib = dlopen("libconvcache.so." "1", RTLD_NOW | RTLD_NOLOAD);
    CHECK(lib != NULL, "the interposer did not load libconvcache");
    if (!lib) return -1;
    int (*scope_fn)(int, char *, size_t) =
        (int (*)(int, char *, size_t))dlsym(lib, "convcache_cudnn_scope");
    int (*open_fn)(const char *, const char *, convcache **) =
        (int (*)(const char *, const char *, convcache **))dlsym(lib, "convcache_open");
    insert_fn = (int (*)(convcache *, const void *, size_t, const void *, size_t))dlsym(
        lib, "convcache_insert");
    static char scope[CONVCACHE_SCOPE_MAX + 1];
    CHECK(scope_fn(0, scope, sizeof scope) > 0, "no scope");
    CHECK(open_fn(NULL, scope, &planted_cache) == 0, "cannot open the cache");
    return planted_cache && insert_fn ? 0 : -1;
}

static void plant(const struct key *k, const void *v, size_t len) {
    CHECK(insert_fn(planted_cache, k->b, k->n, v, len) == 0, "insert failed");
}

static struct problem planted_problem(void) {
    struct problem p = make(32, 64, 56, 64, 3, 1, 1);
    p.math = 1;
    return p;
}

/* ---- keys ---- */
int keys(void) {
    if (open_planter() != 0) return 1;
    struct problem base = planted_problem();
    struct descs d = {0};
    set(&d, &base);
    struct key k;
    /* A valid entry planted under the documented key is what find returns. */
    perf_t planted[2] = {{.algo = 2, .time = 7.5f, .memory = 4096, .determinism = 1},
                         {.algo = 6, .status = 3000, .time = -1}};
    for (int ex = 0; ex < 2; ex++) {
        fwd_key(&k, &base, ex, 5, ex ? 1 << 20 : 0);
        plant(&k, planted, sizeof planted);
        perf_t perf[8];
        int n = 0, before = standin_find_calls();
        int st = find(ex, &d, 5, 1 << 20, &n, perf);
        CHECK(st == 0 && n == 2 && same(perf, planted, 2) && standin_find_calls() == before,
              "ex %d: the planted entry was not found under the documented key (status %d, "
              "%d results, algo %d)", ex, st, n, perf[0].algo);
    }
    return failures ? 1 : 0;
}

/* ---- poison: one poisoned field at a time ---- */
#define TOTAL_MEM (128u << 20) /* the stand-in device's memory in this test */
#define MIB (1u << 20)

struct poisoned {
    const char *name;
    int ex, req, n; /* req 0: a count of its own (each case its own key); n results, or ... */
    size_t len;     /* ... when n is 0, len bytes */
    perf_t v[17];
    int accepted; /* a valid entry: returned as planted */
};

/* good fills two results as cuDNN gives them: a success, then a failure. */
static void good(perf_t *v, int failed_status) {
    memset(v, 0, 2 * sizeof *v);
    v[0] = (perf_t){.algo = 2, .time = 0.5f, .memory = 4096, .determinism = 1, .mathType = 1};
    v[1] = (perf_t){.algo = 6, .status = failed_status, .time = -1, .mathType = 1};
}

int poison(void) {
    /* The interposer asks the driver for the device's memory once, when it
     * first opens the cache for the device. */
    char mem[32];
    snprintf(mem, sizeof mem, "%u", TOTAL_MEM);
    setenv("STANDIN_TOTAL_MEM", mem, 1);
    const int v8 = cudnnGetVersion() < 90000;
    const int failed = v8 ? 9 : 3000; /* CUDNN_STATUS_NOT_SUPPORTED */
    const int scoped = getenv("CONVCACHE_SCOPE") && *getenv("CONVCACHE_SCOPE");
    if (open_planter() != 0) return 1;

    static struct poisoned cases[] = {
        {"an algorithm out of range", 0, 0, 1, 0, {{0}}, 0},
        {"a negative algorithm", 0, 0, 2, 0, {{0}}, 0},
        {"more results than requested", 0, 3, 8, 0, {{0}}, 0},
        {"more results than the interposer's buffer", 0, INT_MAX, 17, 0, {{0}}, 0},
        {"a ragged length", 0, 7, 0, 47, {{0}}, 0},
        {"no results", 0, 6, 0, 0, {{0}}, 0},
        {"Ex: a success needing more workspace than offered", 1, 0, 2, 0, {{0}}, 0},
        {"a success needing 2^62 bytes (not Ex)", 0, 0, 2, 0, {{0}}, 0},
        {"a success needing more than the device's memory (not Ex)", 0, 0, 2, 0, {{0}}, 0},
        {"a failure claiming more than 1 TiB", 0, 0, 2, 0, {{0}}, 0},
        {"mathType 77", 0, 0, 2, 0, {{0}}, 0},
        {"mathType -1", 0, 0, 2, 0, {{0}}, 0},
        {"determinism 2", 0, 0, 2, 0, {{0}}, 0},
        {"status 77", 0, 0, 2, 0, {{0}}, 0},
        {"status -1", 0, 0, 2, 0, {{0}}, 0},
        {"the other cuDNN major's NOT_SUPPORTED", 0, 0, 2, 0, {{0}}, 0},
        {"time NaN", 0, 0, 2, 0, {{0}}, 0},
        {"time +inf", 0, 0, 2, 0, {{0}}, 0},
        {"a success with a negative time", 0, 0, 2, 0, {{0}}, 0},
        {"a failure with time NaN", 0, 0, 2, 0, {{0}}, 0},
        {"reserved[0] 1", 0, 0, 2, 0, {{0}}, 0},
        {"reserved[2] -1", 0, 0, 2, 0, {{0}}, 0},
        {"successes out of time order", 0, 0, 2, 0, {{0}}, 0},
        {"control: a valid entry", 0, 0, 2, 0, {{0}}, 1},
    };
    enum { NCASES = sizeof cases / sizeof cases[0] };
    for (int i = 0; i < NCASES; i++) good(cases[i].v, failed);
    int c = 0;
    cases[c++].v[0].algo = 8;
    cases[c++].v[1].algo = -1;
    for (int i = 0; i < 8; i++) cases[c].v[i] = cases[c].v[0]; /* valid but too many */
    c++;
    for (int i = 0; i < 17; i++) cases[c].v[i] = cases[c].v[0], cases[c].v[i].algo = i % 8;
    c++;
    c++; /* ragged */
    c++; /* none */
    cases[c++].v[0].memory = 2 * MIB; /* the offer is 1 MiB */
    cases[c++].v[0].memory = (size_t)1 << 62;
    cases[c].v[0].memory = 2 * (size_t)TOTAL_MEM;
    cases[c++].accepted = scoped; /* no device lookup: within the 1 TiB cap */
    cases[c++].v[1].memory = ((size_t)1 << 40) + 1;
    cases[c++].v[0].mathType = 77;
    cases[c++].v[1].mathType = -1;
    cases[c++].v[0].determinism = 2;
    cases[c++].v[0].status = 77;
    cases[c++].v[1].status = -1;
    cases[c++].v[1].status = v8 ? 3000 : 9;
    cases[c++].v[0].time = NAN;
    cases[c++].v[0].time = INFINITY;
    cases[c++].v[0].time = -0.5f;
    cases[c++].v[1].time = NAN;
    cases[c++].v[0].reserved[0] = 1;
    cases[c++].v[1].reserved[2] = -1;
    cases[c].v[1] = cases[c].v[0], cases[c].v[0].time = 0.75f, cases[c].v[0].algo = 1;
    c++;
    c++; /* control */
    CHECK(c == NCASES, "%d cases set up, %d listed", c, (int)NCASES);

    struct problem base = planted_problem();
    struct descs d = {0};
    set(&d, &base);
    int rejected = 0;
    for (int i = 0; i < NCASES; i++) {
        const struct poisoned *p = &cases[i];
        const int req = p->req ? p->req : 100 + i;
        struct key k;
        fwd_key(&k, &base, p->ex, req, p->ex ? MIB : 0);
        plant(&k, p->v, p->n ? (size_t)p->n * sizeof(perf_t) : p->len);
        perf_t perf[20], again[20];
        memset(perf, 0, sizeof perf);
        int n = 0, n2 = 0, before = standin_find_calls();
        int st = find(p->ex, &d, req, MIB, &n, perf);
        if (p->accepted) {
            CHECK(st == 0 && n == p->n && same(perf, p->v, n) && standin_find_calls() == before,
                  "%s: not returned as planted (status %d, %d results)", p->name, st, n);
            continue;
        }
        rejected++;
        CHECK(st == 0 && n >= 1 && n <= 8 && standin_find_calls() == before + 1,
              "%s: returned instead of measured again (status %d, %d results)", p->name, st, n);
        before = standin_find_calls();
        st = find(p->ex, &d, req, MIB, &n2, again);
        CHECK(st == 0 && n2 == n && same(perf, again, n) && standin_find_calls() == before,
              "%s: the replacement was not cached", p->name);
    }
    struct preload_stats s;
    get_stats(&s);
    CHECK(s.errors == (unsigned long long)rejected, "%llu errors counted, want %d", s.errors,
          rejected);
    return failures ? 1 : 0;
}

/* ---- poison-real: cuDNN's own poisoned results ---- */

/* shows reports whether the caller got cuDNN's poisoned field unchanged. */
static int shows(const char *field, const perf_t *p, int n) {
    if (!strcmp(field, "memory")) return p[0].memory == (size_t)1 << 62;
    if (!strcmp(field, "math")) return p[0].mathType == 77;
    if (!strcmp(field, "det")) return p[0].determinism == 2;
    if (!strcmp(field, "status")) return p[0].status == 77;
    if (!strcmp(field, "time")) return isnan(p[0].time);
    if (!strcmp(field, "order")) return p[0].time > p[1].time && p[1].status == 0;
    if (!strcmp(field, "count")) return n == 8 + 100;
    if (!strcmp(field, "reserved")) return p[0].reserved[1] == 5;
    return 0;
}

int poison_real(void) {
    static const char *const fields[] = {"memory", "math",  "det",   "status",
                                         "time",   "order", "count", "reserved"};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        const char *f = fields[i];
        struct problem p = make(8, 8 + 8 * (int)i, 16, 8, 3, 1, 1); /* a problem per field */
        struct descs d = {0};
        set(&d, &p);
        perf_t first[8], again[8];
        memset(first, 0, sizeof first);
        memset(again, 0, sizeof again);
        setenv("STANDIN_POISON", f, 1);
        int n = 0, n2 = 0, before = standin_find_calls();
        int st = find(0, &d, 8, 0, &n, first);
        CHECK(st == 0 && standin_find_calls() == before + 1 && shows(f, first, n),
              "%s: status %d, %d results: the caller did not get cuDNN's results", f, st, n);
        unsetenv("STANDIN_POISON");
        before = standin_find_calls();
        int st2 = find(0, &d, 8, 0, &n2, again);
        int m = n < 8 ? n : 8;
        if (!strcmp(f, "reserved")) {
            /* Stored, with the reserved fields as 0. */
            CHECK(st2 == 0 && standin_find_calls() == before && n2 == n && same(first, again, m) &&
                      again[0].reserved[1] == 0,
                  "reserved: %s, reserved %d: want a hit with reserved 0",
                  standin_find_calls() == before ? "a hit" : "not stored", again[0].reserved[1]);
        } else {
            CHECK(st2 == 0 && standin_find_calls() == before + 1,
                  "%s: a poisoned result was stored", f);
        }
    }
    return failures ? 1 : 0;
}
