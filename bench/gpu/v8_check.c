/*
 * v8_check: PyTorch's default convolution path (the cuDNN backend API),
 * with and without stored engine choices, on a GPU (or on the CPU against
 * the stand-in cuDNN and driver of tests/preload).
 *
 * ResNet-50's distinct convolutions, forward, backward data and backward
 * filter, at several input sizes:
 *
 *   --run 1   heuristics (mode INSTANT, nondeterministic engines left out),
 *             build every plan (at most --candidates), time each (median of
 *             3 runs), store the fastest one's engine choice in the cache
 *             file (convcache_get_or_create), and write the report: per
 *             problem the choice and a 128-bit digest of its output.
 *   --run 2   rebuild every plan from the stored choice
 *             (convcache_engine_build_plan, which verifies the engine and
 *             knobs), run it on the same input, and compare with run 1's
 *             report: the same engine and knobs, bit-identical outputs. It
 *             prints the table (Markdown, for bench/gpu/RESULTS.md) and
 *             exits 1 if any problem was not rebuilt, ran something else or
 *             gave other bits. Engine and knobs are compared twice: as the
 *             engine code reads them, and as a second reader written apart
 *             from it reads them (plan_reader.h), in run 1 and in run 2.
 *             Then the 5 problems slowest to choose in run 2.
 *
 * "Choosing" is what PyTorch spends before it can run a convolution it has
 * not seen: run 1 the cache lookup, heuristics, plan builds and timing; run
 * 2 the lookup and the rebuild. Building the operation graph (the same in
 * both) and the final run are not counted.
 *
 * usage: v8_check --run 1|2 --cache FILE --report FILE [--compare RUN1_REPORT]
 *                 [--batch N] [--sizes 224,192,160] [--limit N] [--candidates N]
 *                 [--device N] [--label TEXT]
 * Environment: CONVCACHE_CUDNN_LIBRARY, CONVCACHE_CUDA_LIBRARY (else
 * libcudnn.so.9, libcuda.so.1 from the loader's path).
 */
#include <inttypes.h>
#include <time.h>

#include "conv_graph.h"
#include "convcache.h"
#include "convcache_engine.h"
#include "cuda_driver.h"
#include "plan_reader.h"

#define MAX_PROBLEMS 1024
#define MAX_CANDIDATES 64

static struct cg_api api;
static struct cuda drv;
static cudnnHandle_t handle;
static convcache_handle *cache;
static int candidates = 10;

struct problem {
    struct cg_conv conv;
    char choice[1400];
    uint64_t digest[2];
    int repeatable; /* run 1: two runs of the winner gave the same bits */
    char reading[1400];/* the second reader's text of the winner (plan_reader.h) */
    double ms[3];      /* time choosing, run 1 and run 2 */
};

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void die(const char *what) {
    fprintf(stderr, "v8_check: %s\n", what);
    exit(2);
}

/* ---- the problems: ResNet-50's convolutions at input size s --------------- */

static int resnet50(int batch, int s, int first, struct problem *out, int cap) {
    /* {cin, cout, k, stride, spatial size of the input} */
    const int L[][5] = {
        {3, 64, 7, 2, s},                                                              /* conv1 */
        {64, 64, 1, 1, s / 4},    {64, 64, 3, 1, s / 4},    {64, 256, 1, 1, s / 4},    /* layer1 */
        {256, 64, 1, 1, s / 4},
        {256, 128, 1, 1, s / 4},  {128, 128, 3, 2, s / 4},  {128, 512, 1, 1, s / 8},   /* layer2 */
        {256, 512, 1, 2, s / 4},  {512, 128, 1, 1, s / 8},  {128, 128, 3, 1, s / 8},
        {512, 256, 1, 1, s / 8},  {256, 256, 3, 2, s / 8},  {256, 1024, 1, 1, s / 16}, /* layer3 */
        {512, 1024, 1, 2, s / 8}, {1024, 256, 1, 1, s / 16}, {256, 256, 3, 1, s / 16},
        {1024, 512, 1, 1, s / 16}, {512, 512, 3, 2, s / 16}, {512, 2048, 1, 1, s / 32}, /* layer4 */
        {1024, 2048, 1, 2, s / 16}, {2048, 512, 1, 1, s / 32}, {512, 512, 3, 1, s / 32},
    };
    int n = first;
    for (int op = CG_FWD; op <= CG_BWD_FILTER; op++)
        for (size_t i = 0; i < sizeof L / sizeof L[0] && n < cap; i++) {
            struct cg_conv c = {op, batch, L[i][0], L[i][4], L[i][4], L[i][1], L[i][2], L[i][2], L[i][2] / 2, L[i][3]};
            memset(&out[n], 0, sizeof out[n]);
            out[n++].conv = c;
        }
    return n;
}

/* ---- device buffers --------------------------------------------------------- */

struct buffers {
    CUdeviceptr x, w, y, ws;
    size_t xb, wb, yb, wsb;
    void *host;
};

static void fill(float *f, size_t n, uint64_t seed) {
    for (size_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        f[i] = (float)((int)((seed >> 33) % 2001) - 1000) / 1000.0f;
    }
}

static void bufs_open(struct buffers *b, const struct cg_conv *cv) {
    memset(b, 0, sizeof *b);
    cg_bytes(cv, &b->xb, &b->wb, &b->yb);
    size_t big = b->xb > b->wb ? b->xb : b->wb;
    big = big > b->yb ? big : b->yb;
    b->host = malloc(big);
    if (!b->host || drv.alloc(&b->x, b->xb) || drv.alloc(&b->w, b->wb) || drv.alloc(&b->y, b->yb))
        die("out of memory");
}

/* upload writes the same inputs every time (seeded by the problem). */
static void upload(struct buffers *b, const struct cg_conv *cv) {
    uint64_t seed = (uint64_t)(cv->op * 1000003 + cv->c * 1009 + cv->k * 101 + cv->h * 7 + cv->r);
    size_t sz[3] = {b->xb, b->wb, b->yb};
    CUdeviceptr d[3] = {b->x, b->w, b->y};
    for (int i = 0; i < 3; i++) {
        fill(b->host, sz[i] / 4, seed + (uint64_t)i);
        if (drv.htod(d[i], b->host, sz[i])) die("cuMemcpyHtoD failed");
    }
}

static void workspace(struct buffers *b, int64_t need) {
    if (need < 0) die("bad workspace size");
    if ((size_t)need <= b->wsb && b->ws) return;
    if (b->ws) drv.free(b->ws), b->ws = 0;
    b->wsb = (size_t)need;
    if (need && drv.alloc(&b->ws, b->wsb)) die("out of memory (workspace)");
}

static void bufs_close(struct buffers *b) {
    drv.free(b->x), drv.free(b->w), drv.free(b->y);
    if (b->ws) drv.free(b->ws);
    free(b->host);
}

static int run_plan(struct buffers *b, cudnnBackendDescriptor_t plan) {
    workspace(b, cg_workspace(&api, plan));
    if (cg_execute(&api, handle, plan, (void *)(uintptr_t)b->x, (void *)(uintptr_t)b->w, (void *)(uintptr_t)b->y,
                   (void *)(uintptr_t)b->ws))
        return -1;
    return drv.sync() ? -1 : 0;
}

/* digest: 128 bits over the output of one run on fresh inputs. */
static int digest(struct buffers *b, const struct cg_conv *cv, cudnnBackendDescriptor_t plan, uint64_t d[2]) {
    upload(b, cv);
    if (run_plan(b, plan)) return -1;
    CUdeviceptr out = cv->op == CG_FWD ? b->y : cv->op == CG_BWD_DATA ? b->x : b->w;
    size_t n = cv->op == CG_FWD ? b->yb : cv->op == CG_BWD_DATA ? b->xb : b->wb;
    if (drv.dtoh(b->host, out, n)) die("cuMemcpyDtoH failed");
    uint64_t h1 = 0xcbf29ce484222325ull, h2 = 0x9E3779B97F4A7C15ull;
    const unsigned char *p = b->host;
    for (size_t i = 0; i < n; i++) {
        h1 = (h1 ^ p[i]) * 0x100000001b3ull;
        h2 = (h2 + p[i] + 1) * 0xBF58476D1CE4E5B9ull;
        h2 ^= h2 >> 31;
    }
    d[0] = h1, d[1] = h2;
    return 0;
}

/* ---- run 1: benchmark --------------------------------------------------------- */

static int nondeterministic(cudnnBackendDescriptor_t cfg) {
    cudnnBackendDescriptor_t e = NULL;
    cudnnBackendNumericalNote_t notes[16];
    int64_t n = 0;
    int bad = 0;
    if (api.create(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &e)) return 1;
    if (api.get(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &e) ||
        api.get(e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE, 16, &n, notes))
        bad = 1; /* cannot tell: leave it out */
    for (int64_t i = 0; !bad && i < n && i < 16; i++) bad = notes[i] == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC;
    api.destroy(e);
    return bad;
}

struct bench {
    struct cg_graph *g;
    struct buffers *b;
    cudnnBackendDescriptor_t winner; /* kept for the digest run */
    int timed;
};

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int benchmark(void *user, const void *key, size_t key_len, void *value, size_t cap, size_t *len) {
    (void)key, (void)key_len;
    struct bench *bn = user;
    cudnnBackendDescriptor_t cfgs[MAX_CANDIDATES];
    int n = 0;
    if (cap < sizeof(convcache_engine_choice) ||
        cg_heuristics(&api, bn->g->graph, CUDNN_HEUR_MODE_INSTANT, cfgs, MAX_CANDIDATES, &n))
        return CONVCACHE_E_USER - 1;
    double best = 1e300;
    for (int i = 0; i < n; i++) {
        cudnnBackendDescriptor_t plan = NULL;
        if (bn->timed < candidates && !nondeterministic(cfgs[i]) && !cg_plan(&api, handle, cfgs[i], &plan)) {
            double t[3];
            int ok = run_plan(bn->b, plan) == 0; /* warm-up */
            for (int r = 0; ok && r < 3; r++) {
                double t0 = now_ms();
                ok = run_plan(bn->b, plan) == 0;
                t[r] = now_ms() - t0;
            }
            bn->timed++;
            qsort(t, 3, sizeof t[0], cmp_double);
            if (ok && t[1] < best) {
                best = t[1];
                if (bn->winner) api.destroy(bn->winner);
                bn->winner = plan, plan = NULL;
            }
            if (plan) api.destroy(plan);
        }
        api.destroy(cfgs[i]);
    }
    convcache_engine_choice c;
    if (!bn->winner || convcache_engine_from_plan(bn->winner, &c, NULL)) return CONVCACHE_E_USER - 2;
    memcpy(value, &c, sizeof c);
    *len = sizeof c;
    return 0;
}

/* ---- the key: what PyTorch's CacheKey holds that matters here ---------------- */

struct key {
    char tag[8]; /* "v8check" */
    struct cg_conv conv;
};

static struct key key_of(const struct cg_conv *cv) {
    struct key k;
    memset(&k, 0, sizeof k);
    memcpy(k.tag, "v8check", 8);
    k.conv = *cv;
    return k;
}

/* ---- the report ---------------------------------------------------------------- */

static void write_report(const char *path, struct problem *p, int n, double choose_ms[4], int run) {
    FILE *f = fopen(path, "w");
    if (!f) die("cannot write the report");
    fprintf(f, "run=%d\nproblems=%d\n", run, n);
    for (int op = 1; op <= 3; op++) fprintf(f, "choosing_ms_%d=%.6f\n", op, choose_ms[op]);
    fprintf(f, "choosing_ms=%.6f\n", choose_ms[0]);
    for (int i = 0; i < n; i++) {
        fprintf(f, "p %d %016" PRIx64 "%016" PRIx64 " %d %s\n", i, p[i].digest[0], p[i].digest[1], p[i].repeatable,
                p[i].choice);
        fprintf(f, "r %d %s\nt %d %.6f\n", i, p[i].reading, i, p[i].ms[run]);
    }
    if (fclose(f)) die("cannot write the report");
}

/* read_report fills choice, digest and repeatable of p from run 1's report,
 * and run 1's choosing times. */
static void read_report(const char *path, struct problem *p, int n, double choose_ms[4]) {
    FILE *f = fopen(path, "r");
    char line[1600];
    int seen = 0;
    if (!f) die("cannot read run 1's report");
    while (fgets(line, sizeof line, f)) {
        int i, rep, op;
        double v;
        char hex[40], choice[1400];
        if (sscanf(line, "choosing_ms_%d=%lf", &op, &v) == 2 && op >= 1 && op <= 3) choose_ms[op] = v;
        else if (sscanf(line, "r %d %1399[^\n]", &i, choice) == 2 && i >= 0 && i < n)
            snprintf(p[i].reading, sizeof p[i].reading, "%s", choice);
        else if (sscanf(line, "t %d %lf", &i, &v) == 2 && i >= 0 && i < n) p[i].ms[1] = v;
        else if (sscanf(line, "choosing_ms=%lf", &v) == 1) choose_ms[0] = v;
        else if (sscanf(line, "p %d %39s %d %1399[^\n]", &i, hex, &rep, choice) == 4 && i >= 0 && i < n &&
                 strlen(hex) == 32) {
            snprintf(p[i].choice, sizeof p[i].choice, "%s", choice);
            char hi[17];
            memcpy(hi, hex, 16);
            hi[16] = 0;
            p[i].digest[0] = strtoull(hi, NULL, 16);
            p[i].digest[1] = strtoull(hex + 16, NULL, 16);
            p[i].repeatable = rep;
            seen++;
        }
    }
    fclose(f);
    if (seen != n) die("run 1's report does not match these problems (other --sizes, --batch or --limit?)");
}

static const char *const phase[4] = {"all", "forward", "backward data", "backward filter"};

/* slowest prints the 5 problems that took longest to choose in run 2. */
static void slowest(const struct problem *p, int n) {
    int top[5], k = 0;
    for (; k < 5 && k < n; k++) { /* the k-th slowest: the slowest of those not yet listed */
        int best = -1;
        for (int i = 0; i < n; i++) {
            int listed = 0;
            for (int j = 0; j < k; j++) listed |= top[j] == i;
            if (!listed && (best < 0 || p[i].ms[2] > p[best].ms[2])) best = i;
        }
        top[k] = best;
    }
    printf("\nThe %d problems slowest to choose in run 2:\n\n| problem | run 1 (ms) | run 2 (ms) |\n|---|---:|---:|\n",
           k);
    for (int i = 0; i < k; i++) {
        const struct cg_conv *c = &p[top[i]].conv;
        printf("| %s n%lld c%lld %lldx%lld k%lld %lldx%lld stride %lld | %.2f | %.2f |\n", phase[c->op],
               (long long)c->n, (long long)c->c, (long long)c->h, (long long)c->w, (long long)c->k, (long long)c->r,
               (long long)c->s, (long long)c->stride, p[top[i]].ms[1], p[top[i]].ms[2]);
    }
}

int main(int argc, char **argv) {
    int run = 0, batch = 16, limit = MAX_PROBLEMS, device = 0;
    const char *path = NULL, *report = NULL, *compare = NULL, *sizes = "224,192,160", *label = "";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) die("every option takes a value");
        if (!strcmp(a, "--run")) run = atoi(v);
        else if (!strcmp(a, "--cache")) path = v;
        else if (!strcmp(a, "--report")) report = v;
        else if (!strcmp(a, "--compare")) compare = v;
        else if (!strcmp(a, "--batch")) batch = atoi(v);
        else if (!strcmp(a, "--sizes")) sizes = v;
        else if (!strcmp(a, "--limit")) limit = atoi(v);
        else if (!strcmp(a, "--candidates")) candidates = atoi(v);
        else if (!strcmp(a, "--device")) device = atoi(v);
        else if (!strcmp(a, "--label")) label = v;
        else die("unknown option (see the top of bench/gpu/v8_check.c)");
        i++;
    }
    if ((run != 1 && run != 2) || !path || !report || (run == 2 && !compare) || batch < 1 || limit < 1 ||
        candidates < 1)
        die("usage: v8_check --run 1|2 --cache FILE --report FILE [--compare RUN1_REPORT] ...");

    static struct problem probs[MAX_PROBLEMS];
    int n = 0;
    for (const char *s = sizes; *s;) {
        int size = atoi(s);
        if (size < 32 || size % 32) die("--sizes: multiples of 32, at least 32");
        n = resnet50(batch, size, n, probs, MAX_PROBLEMS);
        s = strchr(s, ',');
        if (!s) break;
        s++;
    }
    if (n > limit) n = limit;

    char why[512];
    if (cg_api_load(&api, why, sizeof why) || cuda_load(&drv, device, why, sizeof why)) die(why);
    if (api.handle_create(&handle)) die("cudnnCreate failed");
    char scope[CONVCACHE_SCOPE_MAX + 1], gpu[256] = "?";
    if (convcache_cudnn_scope(device, scope, sizeof scope) < 0) die(convcache_last_error());
    const char *g0 = strstr(scope, "gpu="), *g1 = g0 ? strchr(g0, ';') : NULL;
    if (g0 && g1) snprintf(gpu, sizeof gpu, "%.*s", (int)(g1 - g0 - 4), g0 + 4);
    int rc = convcache_open(path, scope, &cache);
    if (rc < 0) die(convcache_last_error());

    double choose[4] = {0}, first[4] = {0};
    int per[4] = {0}, rebuilt[4] = {0}, same[4] = {0}, same2[4] = {0}, agree[4] = {0}, identical[4] = {0};
    int repeat[4] = {0};
    if (run == 2) read_report(compare, probs, n, first);
    for (int i = 0; i < n; i++) {
        struct problem *p = &probs[i];
        int op = p->conv.op;
        struct cg_graph g;
        struct buffers b;
        bufs_open(&b, &p->conv);
        upload(&b, &p->conv);
        if (cg_build(&api, handle, &p->conv, &g)) die("cannot build an operation graph");
        struct key k = key_of(&p->conv);
        convcache_engine_choice c;
        size_t len = 0;
        cudnnBackendDescriptor_t plan = NULL;
        convcache_engine_plan *ep = NULL;
        double t0 = now_ms();
        if (run == 1) {
            struct bench bn = {&g, &b, NULL, 0};
            rc = convcache_get_or_create(cache, &k, sizeof k, benchmark, &bn, &c, sizeof c, &len);
            if (rc < 0 || !bn.winner) die("run 1: no engine config ran (or the cache file was not fresh)");
            plan = bn.winner;
        } else {
            rc = convcache_find(cache, &k, sizeof k, &c, sizeof c, &len);
            if (rc == CONVCACHE_HIT && convcache_engine_build_plan(&c, handle, g.graph, &ep, NULL) == 0) {
                plan = convcache_engine_plan_descriptor(ep);
                rebuilt[op]++;
            }
        }
        double dt = now_ms() - t0;
        p->ms[run] = dt;
        choose[op] += dt, choose[0] += dt;
        per[op]++;
        if (run == 1) {
            uint64_t d2[2];
            convcache_engine_format(&c, p->choice, sizeof p->choice);
            if (digest(&b, &p->conv, plan, p->digest) || digest(&b, &p->conv, plan, d2)) die("execution failed");
            p->repeatable = d2[0] == p->digest[0] && d2[1] == p->digest[1];
            repeat[op] += p->repeatable;
            pr_read(&api, plan, p->reading, sizeof p->reading);
            api.destroy(plan);
        } else if (plan) {
            convcache_engine_choice have;
            char text[1400];
            uint64_t d[2];
            if (convcache_engine_from_plan(plan, &have, NULL)) die("cannot read a rebuilt plan back");
            convcache_engine_format(&have, text, sizeof text);
            same[op] += strcmp(text, p->choice) == 0;
            pr_read(&api, plan, text, sizeof text);
            same2[op] += strncmp(text, "eng=", 4) == 0 && strcmp(text, p->reading) == 0;
            /* and the two readers agree on the rebuilt plan */
            char mine[1400];
            int w = snprintf(mine, sizeof mine, "eng=%lld", (long long)have.engine);
            for (uint32_t j = 0; j < have.knob_count && w > 0 && (size_t)w < sizeof mine; j++)
                w += snprintf(mine + w, sizeof mine - (size_t)w, " %lld:%lld", (long long)have.knobs[j].type,
                              (long long)have.knobs[j].value);
            agree[op] += strcmp(mine, text) == 0;
            if (digest(&b, &p->conv, plan, d)) die("execution failed");
            identical[op] += d[0] == p->digest[0] && d[1] == p->digest[1];
            repeat[op] += p->repeatable;
        }
        convcache_engine_plan_destroy(ep);
        cg_graph_free(&api, &g);
        bufs_close(&b);
    }
    for (int op = 1; op <= 3; op++) {
        per[0] += per[op], rebuilt[0] += rebuilt[op], same[0] += same[op], same2[0] += same2[op], agree[0] += agree[op];
        identical[0] += identical[op], repeat[0] += repeat[op];
    }
    write_report(report, probs, n, choose, run);
    if (run == 1) {
        printf("v8_check run 1: %d problems benchmarked and stored, %.1f ms choosing (%d of %d winners gave the "
               "same bits twice)\n", n, choose[0], repeat[0], n);
        return 0;
    }
    /* The table, for bench/gpu/RESULTS.md. */
    printf("### cuDNN backend API: engine choices stored (run 1) and rebuilt (run 2)%s%s\n\n", *label ? " - " : "",
           label);
    printf("device: %s · cuDNN %zu · scope `%s` · batch %d · input sizes %s · candidates per problem <= %d\n\n", gpu,
           api.version(), scope, batch, sizes, candidates);
    printf("| phase | problems | run 1: ms choosing | run 2: ms choosing | run 2 / run 1 | rebuilt in run 2 | "
           "same engine and knobs | the same, second reader | outputs bit-identical |\n"
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int op = 1; op <= 4; op++) {
        int o = op % 4;
        printf("| %s | %d | %.1f | %.2f | %.3g%% | %d/%d | %d/%d | %d/%d | %d/%d |\n", phase[o], per[o], first[o],
               choose[o], first[o] > 0 ? 100 * choose[o] / first[o] : 0.0, rebuilt[o], per[o], same[o], per[o],
               same2[o], per[o], identical[o], repeat[o]);
    }
    printf("\nChoosing: run 1 = cache lookup + heuristics + plan builds + timing (median of 3), run 2 = lookup + "
           "rebuild + verification; graph building and the final run are not counted. Bit-identical: of the "
           "problems whose run-1 winner gave the same bits twice (%d of %d).\n", repeat[0], per[0]);
    slowest(probs, n);
    printf("\nv8_check: second reader: %d/%d the same engine and knobs in run 2 as in run 1; the two readers agree "
           "on %d/%d rebuilt plans\n", same2[0], n, agree[0], n);
    int ok = rebuilt[0] == n && same[0] == n && same2[0] == n && agree[0] == n && identical[0] == repeat[0];
    printf("\nv8_check: %s\n", ok ? "PASS" : "FAIL");
    convcache_close(cache);
    api.handle_destroy(handle);
    return ok ? 0 : 1;
}
