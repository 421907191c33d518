/*
 * 2 processes x 4 threads share one cache file and ask for the same
 * shapes, each thread in its own order: every shape is benchmarked once in
 * all, by single flight across threads and processes
 * (convcache_get_or_create), and every thread ends up running the same
 * engine and knobs for a shape. Each child prints, per shape, the choice it
 * ran; the parent compares them and sums the benchmarks.
 */
#include "choose.h"

#define THREADS 4
#define SHAPES 12

static struct cg_api api;
static convcache_handle *cache;
static struct cg_conv shapes[SHAPES];
static char ran[THREADS][SHAPES][128];
static int benchmarks;

static void *worker(void *arg) {
    int t = (int)(intptr_t)arg;
    cudnnHandle_t h;
    CHECK(api.handle_create(&h) == 0);
    struct chooser ch = {&api, h, cache, 0};
    for (int i = 0; i < SHAPES; i++) {
        int s = (t % 2 ? SHAPES - 1 - i + 5 * t : i + 5 * t) % SHAPES; /* each thread its own order */
        struct cg_graph g;
        CHECK(cg_build(&api, h, &shapes[s], &g) == 0);
        int cached = 0;
        convcache_engine_plan *p = choose(&ch, &shapes[s], g.graph, &cached);
        convcache_engine_format(convcache_engine_plan_choice(p), ran[t][s], sizeof ran[t][s]);
        convcache_engine_plan_destroy(p);
        cg_graph_free(&api, &g);
    }
    __atomic_fetch_add(&benchmarks, ch.benchmarks, __ATOMIC_RELAXED);
    api.handle_destroy(h);
    return NULL;
}

static int child(const char *path) {
    char why[512];
    CHECK(cg_api_load(&api, why, sizeof why) == 0);
    CHECK_RC(convcache_open(path, "test-scope", &cache), 0);
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++) CHECK(pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t) == 0);
    for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    for (int s = 0; s < SHAPES; s++) {
        for (int t = 1; t < THREADS; t++)
            if (strcmp(ran[t][s], ran[0][s]) != 0) fprintf(stderr, "shape %d: thread %d ran %s, thread 0 %s\n", s, t, ran[t][s], ran[0][s]);
        for (int t = 1; t < THREADS; t++) CHECK(strcmp(ran[t][s], ran[0][s]) == 0);
        printf("shape %d %s\n", s, ran[0][s]);
    }
    printf("benchmarks %d\n", benchmarks);
    convcache_close(cache);
    return 0;
}

int main(int argc, char **argv) {
    for (int s = 0; s < SHAPES; s++)
        shapes[s] = (struct cg_conv){1 + s % 3, 1 + s % 2, 4 + 4 * (s % 4), 8 + s, 8 + s, 8, 1 + 2 * (s % 2), 1 + 2 * (s % 2), s % 2, 1};
    if (argc == 3 && !strcmp(argv[1], "--child")) return child(argv[2]);
    /* The parent starts both children at once and reads what they ran. */
    const char *path = test_path("shared.ccdb");
    FILE *out[2];
    for (int i = 0; i < 2; i++) {
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "'%s' --child '%s'", argv[0], path);
        out[i] = popen(cmd, "r");
        CHECK(out[i] != NULL);
    }
    char lines[2][SHAPES + 1][160];
    int total = 0;
    for (int i = 0; i < 2; i++) {
        for (int l = 0; l <= SHAPES; l++) CHECK(fgets(lines[i][l], sizeof lines[i][l], out[i]) != NULL);
        CHECK(pclose(out[i]) == 0);
        int b = -1;
        CHECK(sscanf(lines[i][SHAPES], "benchmarks %d", &b) == 1);
        total += b;
    }
    for (int l = 0; l < SHAPES; l++) CHECK(strcmp(lines[0][l], lines[1][l]) == 0);
    printf("test_shared: %d shapes, %d benchmarks in 2 processes x %d threads\n", SHAPES, total, THREADS);
    CHECK(total == SHAPES);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", test_tmpdir());
    if (system(cmd) != 0) return 1;
    printf("test_shared: ok\n");
    return 0;
}
