/*
 * The engine-choice record and its two functions against the stand-in
 * cuDNN's backend API (tests/preload/standin_backend.c): round trips for
 * every operation and heuristic config, bad records of every kind, engines
 * and knobs this cuDNN lacks, a failing finalize, a cuDNN that quietly runs
 * something else, and a stale cache entry benchmarked again and replaced.
 */
#include "choose.h"
#include "standin_backend.h"

static struct cg_api api;
static cudnnHandle_t handle;

static const struct cg_conv convs[] = {
    {CG_FWD, 2, 8, 12, 12, 16, 3, 3, 1, 1},
    {CG_BWD_DATA, 2, 8, 12, 12, 16, 3, 3, 1, 2},
    {CG_BWD_FILTER, 1, 4, 9, 9, 8, 1, 1, 0, 1},
};

static void build(const struct cg_conv *cv, struct cg_graph *g) {
    CHECK(cg_build(&api, handle, cv, g) == CUDNN_STATUS_SUCCESS);
}

/* run executes a plan on fixed inputs and returns the output (malloc'd). */
static void *run(const struct cg_conv *cv, cudnnBackendDescriptor_t plan, size_t *out_bytes) {
    struct bufs b;
    bufs_alloc(cv, &b, (size_t)cg_workspace(&api, plan));
    CHECK(cg_execute(&api, handle, plan, b.x, b.w, b.y, b.ws) == CUDNN_STATUS_SUCCESS);
    size_t xb, wb, yb;
    cg_bytes(cv, &xb, &wb, &yb);
    void *out = cv->op == CG_FWD ? b.y : cv->op == CG_BWD_DATA ? b.x : b.w;
    *out_bytes = cv->op == CG_FWD ? yb : cv->op == CG_BWD_DATA ? xb : wb;
    void *copy = malloc(*out_bytes);
    memcpy(copy, out, *out_bytes);
    bufs_free(&b);
    return copy;
}

/* CRC-32 (IEEE), written again here, table-driven, to check the library's. */
static uint32_t crc32_ieee(const void *p, size_t n) {
    static uint32_t table[256];
    if (!table[1])
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            table[i] = c;
        }
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) c = table[(c ^ ((const unsigned char *)p)[i]) & 0xFF] ^ (c >> 8);
    return ~c;
}

static void test_crc_known_answer(void) {
    CHECK(crc32_ieee("123456789", 9) == 0xCBF43926u);
    /* zlib.crc32 of the same 800 bytes, computed independently in Python. */
    convcache_engine_choice c;
    memset(&c, 0, sizeof c);
    c.engine = 7, c.workspace = 4096, c.knob_count = 2;
    c.knobs[0].type = 14, c.knobs[0].value = 4; /* sealed: sorted by type */
    c.knobs[1].type = 2, c.knobs[1].value = 3;
    CHECK(convcache_engine_seal(&c) == 0);
    CHECK(c.crc == 0x83f7bcb7u);
    CHECK(c.knobs[0].type == 2 && c.knobs[1].type == 14);
    char text[128];
    convcache_engine_format(&c, text, sizeof text);
    CHECK(strcmp(text, "eng7_k2=3_k14=4 ws=4096") == 0);
}

/* Every heuristic config of every operation: plan -> record -> plan gives
 * the same engine, knobs, workspace and output bytes. */
static void test_round_trip(void) {
    struct standin_backend_stats s0, s1;
    standin_backend_get_stats(&s0);
    int total = 0;
    for (size_t i = 0; i < sizeof convs / sizeof convs[0]; i++) {
        struct cg_graph g;
        build(&convs[i], &g);
        cudnnBackendDescriptor_t cfgs[16];
        int n = 0;
        CHECK(cg_heuristics(&api, g.graph, CUDNN_HEUR_MODE_INSTANT, cfgs, 16, &n) == 0 && n >= 3);
        for (int j = 0; j < n; j++) {
            cudnnBackendDescriptor_t plan;
            CHECK(cg_plan(&api, handle, cfgs[j], &plan) == 0);
            convcache_engine_choice rec, back;
            CHECK(convcache_engine_from_plan(plan, &rec, NULL) == 0);
            CHECK(convcache_engine_check(&rec, sizeof rec, NULL) == 0);
            CHECK(rec.workspace == cg_workspace(&api, plan));
            CHECK(convcache_engine_verify(plan, &rec, NULL) == 0);
            convcache_engine_plan *p = NULL;
            CHECK(convcache_engine_build_plan(&rec, handle, g.graph, &p, NULL) == 0 && p);
            CHECK(convcache_engine_from_plan(convcache_engine_plan_descriptor(p), &back, NULL) == 0);
            CHECK(memcmp(&rec, &back, sizeof rec) == 0);
            CHECK(memcmp(convcache_engine_plan_choice(p), &rec, sizeof rec) == 0);
            size_t n1, n2;
            void *o1 = run(&convs[i], plan, &n1), *o2 = run(&convs[i], convcache_engine_plan_descriptor(p), &n2);
            CHECK(n1 == n2 && memcmp(o1, o2, n1) == 0);
            free(o1), free(o2);
            convcache_engine_plan_destroy(p);
            api.destroy(plan);
            api.destroy(cfgs[j]);
            total++;
        }
        cg_graph_free(&api, &g);
    }
    CHECK(total >= 10);
    standin_backend_get_stats(&s1);
    CHECK(s1.foreign == s0.foreign); /* only descriptors it made or was given */
    /* Different engines really give different outputs (else bit-identity
     * would prove nothing). */
    struct cg_graph g;
    build(&convs[0], &g);
    convcache_engine_choice a, b;
    memset(&a, 0, sizeof a), memset(&b, 0, sizeof b);
    b.engine = 3, b.knob_count = 1, b.knobs[0].type = CUDNN_KNOB_TYPE_SWIZZLE;
    CHECK(convcache_engine_seal(&a) == 0 && convcache_engine_seal(&b) == 0);
    convcache_engine_plan *pa, *pb;
    CHECK(convcache_engine_build_plan(&a, handle, g.graph, &pa, NULL) == 0);
    CHECK(convcache_engine_build_plan(&b, handle, g.graph, &pb, NULL) == 0);
    size_t n1, n2;
    void *o1 = run(&convs[0], convcache_engine_plan_descriptor(pa), &n1);
    void *o2 = run(&convs[0], convcache_engine_plan_descriptor(pb), &n2);
    CHECK(n1 == n2 && memcmp(o1, o2, n1) != 0);
    free(o1), free(o2);
    convcache_engine_plan_destroy(pa), convcache_engine_plan_destroy(pb);
    cg_graph_free(&api, &g);
}

/* hand makes a sealed record for engine e with up to two knobs. */
static convcache_engine_choice hand(int64_t e, int t0, int64_t v0, int t1, int64_t v1) {
    convcache_engine_choice c;
    memset(&c, 0, sizeof c);
    c.engine = e;
    if (t0) c.knobs[c.knob_count].type = t0, c.knobs[c.knob_count++].value = v0;
    if (t1) c.knobs[c.knob_count].type = t1, c.knobs[c.knob_count++].value = v1;
    CHECK(convcache_engine_seal(&c) == 0);
    return c;
}

static int try_build(const convcache_engine_choice *c, const struct cg_conv *cv, int *status) {
    struct cg_graph g;
    build(cv, &g);
    convcache_engine_plan *p = (convcache_engine_plan *)&g; /* must be reset to NULL on failure */
    int rc = convcache_engine_build_plan(c, handle, g.graph, &p, status);
    CHECK((rc == 0) == (p != NULL));
    convcache_engine_plan_destroy(p);
    cg_graph_free(&api, &g);
    return rc;
}

static void test_engines_and_knobs(void) {
    struct standin_backend_stats s0, s1;
    standin_backend_get_stats(&s0);
    convcache_engine_choice ok = hand(1, CUDNN_KNOB_TYPE_TILE_SIZE, 3, CUDNN_KNOB_TYPE_STAGES, 4);
    CHECK(try_build(&ok, &convs[0], NULL) == 0);
    /* An engine this cuDNN does not have (fewer engines installed). */
    convcache_engine_choice e5 = hand(5, CUDNN_KNOB_TYPE_STAGES, 2, 0, 0);
    CHECK(try_build(&e5, &convs[0], NULL) == 0);
    setenv("STANDIN_ENGINE_COUNT", "3", 1);
    CHECK(try_build(&e5, &convs[0], NULL) == CONVCACHE_ENGINE_E_NO_ENGINE);
    unsetenv("STANDIN_ENGINE_COUNT");
    /* An engine that does not run this operation (4: forward only). */
    convcache_engine_choice e4 = hand(4, CUDNN_KNOB_TYPE_TILE_SIZE, 2, CUDNN_KNOB_TYPE_EDGE, 1);
    CHECK(try_build(&e4, &convs[0], NULL) == 0);
    int status = 0;
    CHECK(try_build(&e4, &convs[1], &status) == CONVCACHE_ENGINE_E_NO_ENGINE && status == CUDNN_STATUS_NOT_SUPPORTED);
    /* Knobs: out of range, off the stride, below the minimum, not the engine's. */
    convcache_engine_choice bad[] = {
        hand(1, CUDNN_KNOB_TYPE_TILE_SIZE, 4, CUDNN_KNOB_TYPE_STAGES, 1),
        hand(4, CUDNN_KNOB_TYPE_TILE_SIZE, 3, 0, 0),
        hand(1, CUDNN_KNOB_TYPE_STAGES, 0, 0, 0),
        hand(1, CUDNN_KNOB_TYPE_SWIZZLE, 0, 0, 0),
        hand(0, CUDNN_KNOB_TYPE_TILE_SIZE, 0, 0, 0),
        hand(2, CUDNN_KNOB_TYPE_SPLIT_K_SLC, -1, 0, 0),
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) CHECK(try_build(&bad[i], &convs[0], NULL) == CONVCACHE_ENGINE_E_KNOB);
    /* A finalize that fails. */
    setenv("STANDIN_PLAN_STATUS", "3000", 1);
    CHECK(try_build(&ok, &convs[0], &status) == CONVCACHE_ENGINE_E_FINALIZE && status == 3000);
    unsetenv("STANDIN_PLAN_STATUS");
    /* A cuDNN that quietly runs another engine, or another knob value. */
    setenv("STANDIN_SUBSTITUTE", "engine", 1);
    CHECK(try_build(&ok, &convs[0], NULL) == CONVCACHE_ENGINE_E_MISMATCH);
    setenv("STANDIN_SUBSTITUTE", "knob", 1);
    CHECK(try_build(&ok, &convs[0], NULL) == CONVCACHE_ENGINE_E_MISMATCH);
    unsetenv("STANDIN_SUBSTITUTE");
    CHECK(try_build(&ok, &convs[0], NULL) == 0);
    /* A library whose element counts cannot be trusted: a clean error,
     * never a descriptor read that was not made. */
    standin_backend_get_stats(&s0);
    setenv("STANDIN_LIE", "count", 1);
    CHECK(try_build(&ok, &convs[0], &status) == CONVCACHE_ENGINE_E_CUDNN && status == CUDNN_STATUS_BAD_PARAM);
    unsetenv("STANDIN_LIE");
    standin_backend_get_stats(&s1);
    CHECK(s1.foreign == s0.foreign);
    standin_backend_get_stats(&s1);
    CHECK(s1.plans > s0.plans);
    /* Bad arguments. */
    convcache_engine_plan *p = NULL;
    CHECK(convcache_engine_build_plan(NULL, handle, (void *)1, &p, NULL) == CONVCACHE_ENGINE_E_INVALID);
    CHECK(convcache_engine_build_plan(&ok, handle, NULL, &p, NULL) == CONVCACHE_ENGINE_E_INVALID);
    CHECK(convcache_engine_build_plan(&ok, handle, (void *)1, NULL, NULL) == CONVCACHE_ENGINE_E_INVALID);
    convcache_engine_choice out;
    CHECK(convcache_engine_from_plan(NULL, &out, NULL) == CONVCACHE_ENGINE_E_INVALID);
    /* Not a plan (a pointer the stand-in does not know), and a plan not finalized. */
    CHECK(convcache_engine_from_plan(&out, &out, &status) == CONVCACHE_ENGINE_E_CUDNN && status == CUDNN_STATUS_BAD_PARAM);
    cudnnBackendDescriptor_t raw;
    CHECK(api.create(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &raw) == 0);
    CHECK(convcache_engine_from_plan(raw, &out, &status) == CONVCACHE_ENGINE_E_CUDNN && status == CUDNN_STATUS_NOT_INITIALIZED);
    api.destroy(raw);
    convcache_engine_plan_destroy(NULL);
}

/* Every kind of bad record, through check and through build_plan. */
static void test_bad_records(void) {
    convcache_engine_choice good = hand(1, CUDNN_KNOB_TYPE_TILE_SIZE, 1, CUDNN_KNOB_TYPE_STAGES, 2);
    unsigned char buf[1024];
    memcpy(buf, &good, sizeof good);
    CHECK(convcache_engine_check(buf, sizeof good, NULL) == 0);
    CHECK(convcache_engine_check(buf, sizeof good - 1, NULL) == CONVCACHE_ENGINE_E_TRUNCATED);
    CHECK(convcache_engine_check(buf, 3, NULL) == CONVCACHE_ENGINE_E_TRUNCATED);
    CHECK(convcache_engine_check(buf, 0, NULL) == CONVCACHE_ENGINE_E_TRUNCATED);
    CHECK(convcache_engine_check(buf, sizeof good + 1, NULL) == CONVCACHE_ENGINE_E_FOREIGN);
    CHECK(convcache_engine_check(buf + 1, sizeof good, NULL) == CONVCACHE_ENGINE_E_FOREIGN); /* unaligned, shifted */
    CHECK(convcache_engine_check(NULL, 800, NULL) == CONVCACHE_ENGINE_E_INVALID);
    const char *foreign = "cudnnFwdAlgoPerf: 48 bytes of something else";
    CHECK(convcache_engine_check(foreign, strlen(foreign), NULL) == CONVCACHE_ENGINE_E_FOREIGN);
    /* A newer format, of the same size and of another size. */
    convcache_engine_choice v2 = good;
    v2.format = 2;
    CHECK(convcache_engine_check(&v2, sizeof v2, NULL) == CONVCACHE_ENGINE_E_VERSION);
    CHECK(convcache_engine_check(&v2, 12, NULL) == CONVCACHE_ENGINE_E_VERSION);
    CHECK(try_build(&v2, &convs[0], NULL) == CONVCACHE_ENGINE_E_VERSION);
    /* Fields that break the rules under a correct checksum. */
    convcache_engine_choice cases[4];
    cases[0] = good, cases[0].knob_count = CONVCACHE_ENGINE_MAX_KNOBS + 1;
    cases[1] = good, cases[1].knobs[5].value = 1;
    cases[2] = good, cases[2].knobs[0].zero = 1;
    cases[3] = good, cases[3].knobs[1].type = cases[3].knobs[0].type;
    for (int i = 0; i < 4; i++) {
        cases[i].crc = 0;
        cases[i].crc = crc32_ieee(&cases[i], sizeof cases[i]);
        CHECK(convcache_engine_check(&cases[i], sizeof cases[i], NULL) == CONVCACHE_ENGINE_E_CORRUPT);
        CHECK(try_build(&cases[i], &convs[0], NULL) == CONVCACHE_ENGINE_E_CORRUPT);
    }
    CHECK(convcache_engine_seal(&cases[0]) == CONVCACHE_ENGINE_E_CORRUPT);
    CHECK(convcache_engine_seal(&cases[3]) == CONVCACHE_ENGINE_E_CORRUPT);
    /* Random bytes, random lengths, and random bytes behind a good header:
     * never accepted, never read past len. */
    uint64_t r = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < 20000; i++) {
        for (size_t j = 0; j < sizeof buf; j++) {
            r ^= r << 13, r ^= r >> 7, r ^= r << 17;
            buf[j] = (unsigned char)r;
        }
        if (i % 2) memcpy(buf, &good, 8); /* magic, format, size */
        size_t len = i % 3 ? sizeof good : (size_t)(r % sizeof buf);
        unsigned char *copy = malloc(len ? len : 1);
        memcpy(copy, buf, len);
        CHECK(convcache_engine_check(copy, len, NULL) < 0);
        free(copy);
    }
    /* Every single-bit flip is caught. */
    for (size_t byte = 0; byte < sizeof good; byte++) {
        for (int bit = 0; bit < 8; bit++) {
            memcpy(buf, &good, sizeof good);
            buf[byte] ^= (unsigned char)(1u << bit);
            CHECK(convcache_engine_check(buf, sizeof good, NULL) < 0);
        }
    }
}

/* A stored choice for an engine this cuDNN lacks: a clean miss, one new
 * benchmark, and the entry replaced, so the next process rebuilds. */
static void test_stale_entry_replaced(void) {
    convcache_handle *c = NULL;
    CHECK_RC(convcache_open(test_path("stale.ccdb"), "test-scope", &c), 0);
    struct chooser ch = {&api, handle, c, 0};
    struct cg_graph g;
    build(&convs[0], &g);
    struct choose_key k;
    memset(&k, 0, sizeof k);
    memcpy(k.tag, "v8test", 7);
    k.conv = convs[0];
    convcache_engine_choice e5 = hand(5, CUDNN_KNOB_TYPE_STAGES, 4, 0, 0);
    CHECK_RC(convcache_insert(c, &k, sizeof k, &e5, sizeof e5), 0);
    setenv("STANDIN_ENGINE_COUNT", "3", 1);
    cg_graph_free(&api, &g);
    build(&convs[0], &g); /* a graph of the cuDNN with 3 engines */
    int cached = 0;
    convcache_engine_plan *p = choose(&ch, &convs[0], g.graph, &cached);
    CHECK(!cached && ch.benchmarks == 1 && convcache_engine_plan_choice(p)->engine < 3);
    convcache_engine_plan_destroy(p);
    convcache_engine_choice now;
    size_t len = 0;
    CHECK_RC(convcache_find(c, &k, sizeof k, &now, sizeof now, &len), CONVCACHE_HIT);
    CHECK(len == sizeof now && now.engine < 3);
    p = choose(&ch, &convs[0], g.graph, &cached);
    CHECK(cached && ch.benchmarks == 1);
    convcache_engine_plan_destroy(p);
    /* A damaged value is replaced the same way. */
    unsigned char junk[800];
    memset(junk, 0xA5, sizeof junk);
    CHECK_RC(convcache_insert(c, &k, sizeof k, junk, sizeof junk), 0);
    p = choose(&ch, &convs[0], g.graph, &cached);
    CHECK(!cached && ch.benchmarks == 2);
    convcache_engine_plan_destroy(p);
    unsetenv("STANDIN_ENGINE_COUNT");
    cg_graph_free(&api, &g);
    convcache_close(c);
}

int main(void) {
    char why[512];
    CHECK(cg_api_load(&api, why, sizeof why) == 0);
    CHECK(api.handle_create(&handle) == 0);
    test_crc_known_answer();
    test_round_trip();
    test_engines_and_knobs();
    test_bad_records();
    test_stale_entry_replaced();
    CHECK(convcache_engine_strerror(CONVCACHE_ENGINE_E_MISMATCH)[0] != 'u');
    CHECK(strcmp(convcache_engine_strerror(-999), "unknown code") == 0);
    api.handle_destroy(handle);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", test_tmpdir());
    if (system(cmd) != 0) return 1;
    printf("test_engine: ok\n");
    return 0;
}
