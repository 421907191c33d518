/*
 * v8_stress: many threads through the interposer's backend-API paths at
 * once, against the stand-in cuDNN, for ThreadSanitizer
 * (tests/preload/sanitize_run.sh) and for correctness: every status and output
 * is checked, and the process exits 1 on any that is wrong.
 *
 *   v8_stress materialize | churn | shared
 *
 * Both on a file that knows v8_host.h's known shape (v8_hosts learn):
 * materialize  each round builds the stored plan, then deferred ones, and
 *              8 threads, each with its own handle and buffers, execute one
 *              deferred plan at once. Its build in cuDNN is held (the
 *              stand-in's hook) until the 7 others sleep, waiting for it in
 *              the interposer (v8_plan_materialize); then each runs the
 *              other deferred plans, free, in an order of its own. Every
 *              execute must succeed with its plan's one output, and cuDNN
 *              must have built each plan once.
 * churn        4 threads run PyTorch's sequence again and again (served:
 *              the stored plan built, the others deferred, their timing
 *              refused, destroyed; the choice run), and between every step
 *              a plan of their own whose window has closed (the execute
 *              filter's fast path), while 2 threads create, set and destroy
 *              thousands of tensor descriptors (the shadow table grows and
 *              shrinks under them).
 * shared       one host's plans timed by 8 threads at once, each in its own
 *              order, while the host destroys the engine configs (their
 *              destroys wait for the deferred plans) and the graph; then
 *              its choice run by all 8 (the run in earnest closes the
 *              window). Each plan is built once, refused at most once (its
 *              first execute while the stored one serves), and otherwise
 *              gives its one output.
 */
#include <pthread.h>

#include "v8_host.h"

#define THREADS 8
#define ROUNDS 3
#define EXECUTORS 4
#define CHURNERS 2
#define ITERATIONS 6
#define TENSORS 2500
#define CHURN_ROUNDS 4

#define CHECK(cond, ...) VH_CHECK("v8_stress", cond, __VA_ARGS__)

/* ---- materialize ------------------------------------------------------------ */

static cudnnBackendDescriptor_t target; /* the deferred plan the threads run */
static pid_t tids[THREADS];
static int asleep; /* rounds in which all the others were seen waiting */

/* held: the stand-in's hook, on the thread that builds target in cuDNN. */
static void held(void *plan) {
    if (plan != __atomic_load_n(&target, __ATOMIC_ACQUIRE)) return;
    pid_t me = vh_tid();
    int all = 1;
    for (int i = 0; i < THREADS; i++)
        if (tids[i] != me) all &= vh_await_sleep(tids[i], 30000);
    if (all) __atomic_add_fetch(&asleep, 1, __ATOMIC_RELAXED);
}

#define PLANS 6 /* built per round: the stored one, then deferred ones */

struct runner {
    int i, n;
    pthread_barrier_t *go;
    cudnnBackendDescriptor_t *plan;
    cudnnStatus_t st[PLANS];
    uint64_t sum[PLANS];
};

/* run_plans: the target with the others (held: they wait for its build),
 * then the rest of the deferred plans, free, each thread in another order
 * (some make a plan real while others wait for it or find it made). */
static void *run_plans(void *arg) {
    struct runner *r = arg;
    struct vh_io io;
    tids[r->i] = vh_tid();
    int ok = vh_io_open(&io, &vh_known) == 0;
    pthread_barrier_wait(r->go);
    for (int k = 2; k < r->n; k++) {
        int j = k == 2 ? 2 : 3 + (k - 3 + r->i) % (r->n - 3);
        r->st[j] = ok ? vh_run(&io, r->plan[j], &r->sum[j]) : CUDNN_STATUS_EXECUTION_FAILED;
    }
    vh_io_close(&io);
    return NULL;
}

static void materialize(void) {
    standin_backend_on_plan_built(held);
    for (int round = 0; round < ROUNDS; round++) {
        struct vh_host h;
        struct convcache_preload_stats s0, s1;
        CHECK(vh_open(&h, &vh_known) == 0 && h.ncfg >= PLANS, "materialize: no graph, or too few configs");
        unsigned long long b0 = vh_built();
        vh_stats(&s0);
        for (int i = 0; i < PLANS; i++) CHECK(vh_build(&h, i) == CUDNN_STATUS_SUCCESS, "plan %d did not build", i);
        vh_stats(&s1);
        unsigned long long b1 = vh_built();
        /* The stored plan is built; the others are deferred. */
        CHECK(b1 - b0 == 1 && s1.v8_deferred_builds - s0.v8_deferred_builds == PLANS - 1,
              "round %d: cuDNN built %llu plans of %d, %llu deferred (not the stored one alone)", round, b1 - b0,
              PLANS, s1.v8_deferred_builds - s0.v8_deferred_builds);
        __atomic_store_n(&target, h.plan[2], __ATOMIC_RELEASE);
        pthread_barrier_t go;
        pthread_barrier_init(&go, NULL, THREADS);
        struct runner r[THREADS];
        pthread_t t[THREADS];
        for (int i = 0; i < THREADS; i++) {
            r[i] = (struct runner){.i = i, .n = PLANS, .go = &go, .plan = h.plan};
            pthread_create(&t[i], NULL, run_plans, &r[i]);
        }
        for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
        pthread_barrier_destroy(&go);
        __atomic_store_n(&target, NULL, __ATOMIC_RELEASE);
        /* The target serves (it is a stored choice: the round's first
         * execute) or stands aside; once it served, each other plan's
         * first execute may be refused (its timing), and no other. */
        struct convcache_preload_stats s2;
        vh_stats(&s2);
        unsigned long long refused = 0;
        for (int j = 2; j < PLANS; j++) {
            uint64_t want = 0;
            int no = 0;
            for (int i = 0; i < THREADS; i++) {
                if (r[i].st[j] == CUDNN_STATUS_NOT_SUPPORTED && j > 2) {
                    no++;
                    continue;
                }
                if (!want) want = r[i].sum[j];
                CHECK(r[i].st[j] == CUDNN_STATUS_SUCCESS && r[i].sum[j] == want,
                      "round %d: thread %d's execute of deferred plan %d: status %d, sum %016llx (not %016llx)",
                      round, i, j, (int)r[i].st[j], (unsigned long long)r[i].sum[j], (unsigned long long)want);
            }
            CHECK(no <= 1, "round %d: plan %d refused to %d threads", round, j, no);
            refused += (unsigned long long)no;
        }
        CHECK(s2.v8_refused_execs - s1.v8_refused_execs == refused, "round %d: %llu refusals seen, %llu counted",
              round, refused, s2.v8_refused_execs - s1.v8_refused_execs);
        CHECK(vh_built() - b1 == PLANS - 2, "round %d: cuDNN built %llu of the %d deferred plans run, not each once",
              round, vh_built() - b1, PLANS - 2);
        vh_close(&h);
    }
    standin_backend_on_plan_built(NULL);
    CHECK(asleep == ROUNDS, "the other threads were seen waiting for the build in %d rounds of %d", asleep, ROUNDS);
    printf("materialize: %d rounds, %d threads ran %d deferred plans at once, each built once; all %d waited for "
           "the held build in %d rounds\n", ROUNDS, THREADS, PLANS - 2, THREADS - 1, asleep);
}

/* ---- churn ------------------------------------------------------------------- */

static int churning;

/* hot runs a plan whose window closed: unwatched, straight to cuDNN. */
static void hot(struct vh_host *h, uint64_t want) {
    uint64_t sum;
    cudnnStatus_t st = vh_run(&h->io, h->plan[0], &sum);
    CHECK(st == CUDNN_STATUS_SUCCESS && sum == want, "hot plan: status %d, sum %016llx, not %016llx", (int)st,
          (unsigned long long)sum, (unsigned long long)want);
}

/* pytorch runs PyTorch's sequence on a known graph: the stored plan
 * serves, every other plan's timing is refused; the choice runs after.
 * *choice: its output; h keeps the choice's plan alive (plan[0]). */
static void pytorch(struct vh_host *h, struct vh_host *hotp, uint64_t hot_sum, uint64_t *choice) {
    CHECK(vh_open(h, &vh_known) == 0, "churn: no graph");
    int n = h->ncfg < 6 ? h->ncfg : 6;
    uint64_t sum;
    for (int i = 0; i < n; i++) {
        CHECK(vh_build(h, i) == CUDNN_STATUS_SUCCESS, "churn: plan %d did not build", i);
        if (hotp) hot(hotp, hot_sum);
    }
    for (int i = 0; i < n; i++) {
        cudnnStatus_t st = vh_run(&h->io, h->plan[i], &sum);
        cudnnStatus_t want = i == 0 ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_NOT_SUPPORTED;
        CHECK(st == want, "churn: plan %d's timing execute: status %d, not %d", i, (int)st, (int)want);
        if (i == 0) *choice = sum;
        if (hotp) hot(hotp, hot_sum);
    }
    for (int i = 1; i < n; i++) vh_drop(h, i);
    for (int k = 0; k < 3; k++) {
        cudnnStatus_t st = vh_run(&h->io, h->plan[0], &sum);
        CHECK(st == CUDNN_STATUS_SUCCESS && sum == *choice, "churn: the choice's run %d: status %d", k, (int)st);
        if (hotp) hot(hotp, hot_sum);
    }
}

static void *executor(void *arg) {
    (void)arg;
    struct vh_host keep, h;
    uint64_t keep_sum = 0, sum;
    pytorch(&keep, NULL, 0, &keep_sum); /* its window closed: the hot plan */
    for (int it = 0; it < ITERATIONS; it++) {
        pytorch(&h, &keep, keep_sum, &sum);
        CHECK(sum == keep_sum, "churn: iteration %d's choice gave another output", it);
        vh_close(&h);
    }
    vh_close(&keep);
    __atomic_sub_fetch(&churning, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void *churner(void *arg) {
    (void)arg;
    static cudnnBackendDescriptor_t none[CHURNERS][TENSORS];
    static int next;
    cudnnBackendDescriptor_t *t = none[__atomic_fetch_add(&next, 1, __ATOMIC_RELAXED)];
    /* At least CHURN_ROUNDS rounds, and on while the executors run. */
    for (int round = 0; round < CHURN_ROUNDS || __atomic_load_n(&churning, __ATOMIC_ACQUIRE) > 0; round++) {
        for (int i = 0; i < TENSORS; i++) {
            cudnnStatus_t st = A.create(CUDNN_BACKEND_TENSOR_DESCRIPTOR, &t[i]);
            CHECK(st == CUDNN_STATUS_SUCCESS, "churn: create: %d", (int)st);
            /* A unique id is read back (no shadow), an alignment kept (a
             * shadow: the table grows and shrinks), an attribute not keyed
             * marks the tensor (a shadow too): cudnn/preload/v8_leaf.c. */
            int64_t uid = i, align = 16, one = 1;
            if (st == CUDNN_STATUS_SUCCESS && i % 2 == 0)
                CHECK(A.set(t[i], CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid) == CUDNN_STATUS_SUCCESS,
                      "churn: set");
            if (st == CUDNN_STATUS_SUCCESS && i % 3 == 0)
                CHECK(A.set(t[i], CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align) ==
                          CUDNN_STATUS_SUCCESS,
                      "churn: set");
            if (st == CUDNN_STATUS_SUCCESS && i % 5 == 0)
                CHECK(A.set(t[i], 914 /* RAGGED_OFFSET_MULTIPLIER */, CUDNN_TYPE_INT64, 1, &one) == CUDNN_STATUS_SUCCESS,
                      "churn: set");
        }
        for (int i = 0; i < TENSORS; i++) CHECK(A.destroy(t[i]) == CUDNN_STATUS_SUCCESS, "churn: destroy");
    }
    return NULL;
}

static void churn(void) {
    pthread_t e[EXECUTORS], c[CHURNERS];
    churning = EXECUTORS;
    for (int i = 0; i < CHURNERS; i++) pthread_create(&c[i], NULL, churner, NULL);
    for (int i = 0; i < EXECUTORS; i++) pthread_create(&e[i], NULL, executor, NULL);
    for (int i = 0; i < EXECUTORS; i++) pthread_join(e[i], NULL);
    for (int i = 0; i < CHURNERS; i++) pthread_join(c[i], NULL);
    struct convcache_preload_stats s;
    CHECK(vh_stats(&s) == 0 && s.v8_hits == (unsigned long long)EXECUTORS * (ITERATIONS + 1),
          "churn: %llu graphs served, not %d", s.v8_hits, EXECUTORS * (ITERATIONS + 1));
    printf("churn: %d threads served %llu graphs, refused %llu timings, while %d threads made and dropped "
           "%d tensors at a time\n", EXECUTORS, s.v8_hits, s.v8_refused_execs, CHURNERS, TENSORS);
}

/* ---- shared ------------------------------------------------------------------ */

/* One host's plans run by many threads: the timing loop of 8 threads over
 * the same plans, each in its own order, while the host destroys the
 * engine configs and the graph (the configs' destroys wait for the
 * deferred plans built from them); then, the others destroyed, the choice
 * run by all 8 at once (its run in earnest closes the window). */
struct sharer {
    int i;
    pthread_barrier_t *go, *timed;
    struct vh_host *h;
    cudnnStatus_t st[PLANS][2];
    uint64_t sum[PLANS][2], choice[5];
    cudnnStatus_t choice_st[5];
};

static void *share(void *arg) {
    struct sharer *r = arg;
    struct vh_io io;
    int ok = vh_io_open(&io, &vh_known) == 0;
    pthread_barrier_wait(r->go);
    for (int k = 0; k < PLANS; k++) {
        int j = (k + r->i) % PLANS;
        for (int t = 0; t < 2; t++)
            r->st[j][t] = ok ? vh_run(&io, r->h->plan[j], &r->sum[j][t]) : CUDNN_STATUS_EXECUTION_FAILED;
    }
    pthread_barrier_wait(r->timed); /* the host keeps plan 0 alone */
    pthread_barrier_wait(r->timed);
    for (int k = 0; k < 5; k++)
        r->choice_st[k] = ok ? vh_run(&io, r->h->plan[0], &r->choice[k]) : CUDNN_STATUS_EXECUTION_FAILED;
    vh_io_close(&io);
    return NULL;
}

static void shared(void) {
    for (int round = 0; round < ROUNDS; round++) {
        struct vh_host h;
        struct convcache_preload_stats s0, s1;
        CHECK(vh_open(&h, &vh_known) == 0 && h.ncfg >= PLANS, "shared: no graph, or too few configs");
        for (int i = 0; i < PLANS; i++) CHECK(vh_build(&h, i) == CUDNN_STATUS_SUCCESS, "plan %d did not build", i);
        unsigned long long b0 = vh_built();
        vh_stats(&s0);
        pthread_barrier_t go, timed;
        pthread_barrier_init(&go, NULL, THREADS + 1);
        pthread_barrier_init(&timed, NULL, THREADS + 1);
        struct sharer r[THREADS];
        pthread_t t[THREADS];
        for (int i = 0; i < THREADS; i++) {
            r[i] = (struct sharer){.i = i, .go = &go, .timed = &timed, .h = &h};
            pthread_create(&t[i], NULL, share, &r[i]);
        }
        pthread_barrier_wait(&go);
        for (int i = 0; i < h.ncfg; i++) { /* as cuDNN answers: the plans hold what they need */
            CHECK(A.destroy(h.cfg[i]) == CUDNN_STATUS_SUCCESS, "round %d: config %d's destroy failed", round, i);
            h.cfg[i] = NULL;
        }
        cg_graph_free(&A, &h.g);
        pthread_barrier_wait(&timed);
        vh_stats(&s1);
        unsigned long long refused = 0;
        for (int j = 0; j < PLANS; j++) {
            uint64_t want = 0;
            int no = 0;
            for (int i = 0; i < THREADS; i++)
                for (int k = 0; k < 2; k++) {
                    if (r[i].st[j][k] == CUDNN_STATUS_NOT_SUPPORTED) {
                        no++;
                        continue;
                    }
                    if (!want) want = r[i].sum[j][k];
                    CHECK(r[i].st[j][k] == CUDNN_STATUS_SUCCESS && r[i].sum[j][k] == want,
                          "shared round %d: thread %d, plan %d, run %d: status %d, sum %016llx (not %016llx)", round,
                          i, j, k, (int)r[i].st[j][k], (unsigned long long)r[i].sum[j][k], (unsigned long long)want);
                }
            /* Refused: a plan's first execute while the stored one serves. */
            CHECK(no <= 1, "shared round %d: plan %d refused %d times", round, j, no);
            refused += (unsigned long long)no;
        }
        CHECK(s1.v8_refused_execs - s0.v8_refused_execs == refused, "shared round %d: %llu refusals seen, %llu counted",
              round, refused, s1.v8_refused_execs - s0.v8_refused_execs);
        CHECK(vh_built() - b0 == PLANS - 1, "shared round %d: cuDNN built %llu deferred plans, not %d", round,
              vh_built() - b0, PLANS - 1);
        for (int i = 1; i < PLANS; i++) vh_drop(&h, i);
        pthread_barrier_wait(&timed);
        for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
        pthread_barrier_destroy(&go);
        pthread_barrier_destroy(&timed);
        for (int i = 0; i < THREADS; i++)
            for (int k = 0; k < 5; k++)
                CHECK(r[i].choice_st[k] == CUDNN_STATUS_SUCCESS && r[i].choice[k] == r[0].sum[0][1],
                      "shared round %d: thread %d's run %d of the choice: status %d", round, i, k,
                      (int)r[i].choice_st[k]);
        vh_close(&h);
    }
    printf("shared: %d rounds, %d threads timed one host's %d plans at once while it destroyed its configs and "
           "graph, then ran its choice\n", ROUNDS, THREADS, PLANS);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: v8_stress materialize|churn|shared\n");
        return 2;
    }
    vh_init();
    struct convcache_preload_stats s;
    if (vh_stats(&s) != 0) {
        fprintf(stderr, "v8_stress: not under the interposer\n");
        return 2;
    }
    if (!strcmp(argv[1], "materialize")) materialize();
    else if (!strcmp(argv[1], "churn")) churn();
    else if (!strcmp(argv[1], "shared")) shared();
    else {
        fprintf(stderr, "v8_stress: unknown mode %s\n", argv[1]);
        return 2;
    }
    return fails ? 1 : 0;
}
