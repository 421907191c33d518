/*
 * v8_fork: a child forked while other threads are inside the interposer's
 * backend-API paths (tests/preload/v8_hosts.sh, and under ThreadSanitizer
 * tests/preload/sanitize_run.sh), against the stand-in cuDNN, on a file that
 * knows v8_host.h's known shape. At the fork:
 *   - thread M is making a deferred plan of the known graph real: its build
 *     in cuDNN is held by the stand-in's hook (v8_plan_materialize, with
 *     the plan marked as being made real);
 *   - thread W executes the same plan, and is seen asleep: waiting for M in
 *     the interposer (v8_plan_materialize's condition wait);
 *   - thread L leads the benchmark of a new graph (the lease, its helper
 *     thread waiting in the builder) and is inside a plan's finalize, held
 *     by the hook: progress in flight (v8_lease_progress);
 *   - the execute filter watches the known graph's plans (the stored one,
 *     deferred ones).
 * The child (one thread) must finish, within 30 s, with every execute
 * answered by cuDNN itself: the parent's stored plan and the plan M was
 * building run; plans of its own, of both shapes, build and run, none
 * deferred or refused; and the interposer looked at none of its calls (its
 * counters, zeroed at the fork, stay 0). Then the parent lets M and L go:
 * M and W get the same output, L's benchmark completes.
 *
 *   v8_fork
 *
 * Exits 0, or 1 with what went wrong on stderr.
 */
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>

#include "v8_host.h"

#define CHECK(cond, ...) VH_CHECK("v8_fork", cond, __VA_ARGS__)

/* ---- the gate: builds held in the stand-in until the parent lets go ------ */

static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static int held_m, held_l, released;
static cudnnBackendDescriptor_t gated_plan; /* M's */
static pid_t lead_tid;                      /* L's: any plan it builds */

static void hold(int *flag) {
    pthread_mutex_lock(&gate_mu);
    *flag = 1;
    pthread_cond_broadcast(&gate_cv);
    while (!released) pthread_cond_wait(&gate_cv, &gate_mu);
    pthread_mutex_unlock(&gate_mu);
}

static void gate(void *plan) {
    if (plan == __atomic_load_n(&gated_plan, __ATOMIC_ACQUIRE)) hold(&held_m);
    else if (vh_tid() == __atomic_load_n(&lead_tid, __ATOMIC_ACQUIRE)) hold(&held_l);
}

static void await_flag(int *flag) {
    pthread_mutex_lock(&gate_mu);
    while (!*flag) pthread_cond_wait(&gate_cv, &gate_mu);
    pthread_mutex_unlock(&gate_mu);
}

static void release_all(void) {
    pthread_mutex_lock(&gate_mu);
    released = 1;
    pthread_cond_broadcast(&gate_cv);
    pthread_mutex_unlock(&gate_mu);
}

/* ---- the parent's threads ----------------------------------------------------- */

struct exec {
    cudnnBackendDescriptor_t plan;
    pid_t tid;
    cudnnStatus_t st;
    uint64_t sum;
};

static void *exec_thread(void *arg) {
    struct exec *e = arg;
    struct vh_io io;
    __atomic_store_n(&e->tid, vh_tid(), __ATOMIC_RELEASE);
    e->st = vh_io_open(&io, &vh_known) == 0 ? vh_run(&io, e->plan, &e->sum) : CUDNN_STATUS_EXECUTION_FAILED;
    vh_io_close(&io);
    return NULL;
}

/* lead: a new graph's benchmark (the lease taken at its heuristics), its
 * first plan's finalize held at the fork; then every plan run, the others
 * destroyed, the first run again (the choice). */
static void *lead(void *arg) {
    int *ok = arg;
    struct vh_host h;
    __atomic_store_n(&lead_tid, vh_tid(), __ATOMIC_RELEASE);
    if (vh_open(&h, &vh_new) != 0) { /* nothing will be held: the parent must not wait */
        pthread_mutex_lock(&gate_mu);
        held_l = 1;
        pthread_cond_broadcast(&gate_cv);
        pthread_mutex_unlock(&gate_mu);
        return NULL;
    }
    int n = h.ncfg < 4 ? h.ncfg : 4, good = 1;
    uint64_t sum;
    for (int i = 0; i < n; i++) good &= vh_build(&h, i) == CUDNN_STATUS_SUCCESS;
    __atomic_store_n(&lead_tid, 0, __ATOMIC_RELEASE);
    for (int i = 0; i < n && good; i++) good &= vh_run(&h.io, h.plan[i], &sum) == CUDNN_STATUS_SUCCESS;
    for (int i = 1; i < n; i++) vh_drop(&h, i);
    good &= vh_run(&h.io, h.plan[0], &sum) == CUDNN_STATUS_SUCCESS;
    vh_close(&h);
    *ok = good;
    return NULL;
}

/* ---- the child ------------------------------------------------------------------ */

/* own: a host of the child's own, shape cv: every plan built and run. */
static int own(const struct cg_conv *cv, const char *what) {
    struct vh_host h;
    int bad = 0;
    uint64_t sum;
    if (vh_open(&h, cv) != 0) {
        fprintf(stderr, "v8_fork: child: no %s graph\n", what);
        return 1;
    }
    int n = h.ncfg < 4 ? h.ncfg : 4;
    for (int i = 0; i < n; i++) {
        cudnnStatus_t st = vh_build(&h, i);
        if (st == CUDNN_STATUS_SUCCESS) st = vh_run(&h.io, h.plan[i], &sum);
        if (st != CUDNN_STATUS_SUCCESS) {
            fprintf(stderr, "v8_fork: child: %s graph, plan %d: status %d\n", what, i, (int)st);
            bad = 1;
        }
    }
    vh_close(&h);
    return bad;
}

static int child(struct vh_host *k) {
    alarm(30); /* a child that hangs dies, and the parent says so */
    int bad = 0;
    struct vh_io io;
    uint64_t sum;
    if (vh_io_open(&io, &vh_known) != 0) return 1;
    /* The parent's stored plan (watched), and the plan M was building
     * (marked as being made real in the interposer, built in cuDNN). */
    cudnnStatus_t st0 = vh_run(&io, k->plan[0], &sum), st2 = vh_run(&io, k->plan[2], &sum);
    if (st0 != CUDNN_STATUS_SUCCESS || st2 != CUDNN_STATUS_SUCCESS) {
        fprintf(stderr, "v8_fork: child: the parent's plans: status %d and %d\n", (int)st0, (int)st2);
        bad = 1;
    }
    vh_io_close(&io);
    bad |= own(&vh_known, "known");
    bad |= own(&vh_new, "new");
    struct convcache_preload_stats s;
    if (vh_stats(&s) != 0 || s.v8_looked_execs || s.v8_graphs || s.v8_deferred_builds || s.v8_refused_execs) {
        fprintf(stderr, "v8_fork: child: the interposer looked at its calls: %llu executes, %llu graphs, "
                "%llu builds deferred, %llu refused\n", s.v8_looked_execs, s.v8_graphs, s.v8_deferred_builds,
                s.v8_refused_execs);
        bad = 1;
    }
    return bad;
}

/* ---- the parent ----------------------------------------------------------------- */

int main(void) {
    vh_init();
    struct convcache_preload_stats s0, s1;
    if (vh_stats(&s0) != 0) {
        fprintf(stderr, "v8_fork: not under the interposer\n");
        return 2;
    }
    standin_backend_on_plan_built(gate);
    struct vh_host k;
    if (vh_open(&k, &vh_known) != 0) {
        fprintf(stderr, "v8_fork: no graph\n");
        return 1;
    }
    unsigned long long b0 = vh_built();
    for (int i = 0; i < 3; i++) CHECK(vh_build(&k, i) == CUDNN_STATUS_SUCCESS, "plan %d did not build", i);
    vh_stats(&s1);
    CHECK(vh_built() - b0 == 1 && s1.v8_deferred_builds - s0.v8_deferred_builds == 2,
          "the known graph: cuDNN built %llu of 3 plans, %llu deferred (is the file's choice first?)",
          vh_built() - b0, s1.v8_deferred_builds - s0.v8_deferred_builds);

    pthread_t tm, tw, tl;
    struct exec m = {.plan = k.plan[2]}, w = {.plan = k.plan[2]};
    int lead_ok = 0;
    __atomic_store_n(&gated_plan, k.plan[2], __ATOMIC_RELEASE);
    pthread_create(&tm, NULL, exec_thread, &m);
    await_flag(&held_m);
    pthread_create(&tw, NULL, exec_thread, &w);
    while (!__atomic_load_n(&w.tid, __ATOMIC_ACQUIRE)) vh_nap_ms(1);
    CHECK(vh_await_sleep(w.tid, 30000), "thread W never waited for M's build");
    pthread_create(&tl, NULL, lead, &lead_ok);
    await_flag(&held_l);

    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) _exit(child(&k));
    int status = 0;
    CHECK(pid > 0, "fork failed");
    CHECK(pid < 0 || waitpid(pid, &status, 0) == pid, "waitpid");
    if (pid > 0 && WIFSIGNALED(status))
        CHECK(0, "the child died of signal %d%s", WTERMSIG(status),
              WTERMSIG(status) == SIGALRM ? " (it hung for 30 s)" : "");
    else if (pid > 0)
        CHECK(WEXITSTATUS(status) == 0, "the child failed (status %d)", WEXITSTATUS(status));

    release_all();
    pthread_join(tm, NULL);
    pthread_join(tw, NULL);
    pthread_join(tl, NULL);
    standin_backend_on_plan_built(NULL);
    CHECK(m.st == CUDNN_STATUS_SUCCESS && w.st == CUDNN_STATUS_SUCCESS && m.sum == w.sum,
          "the parent's executes of the deferred plan: status %d and %d, sums %016llx and %016llx", (int)m.st,
          (int)w.st, (unsigned long long)m.sum, (unsigned long long)w.sum);
    CHECK(lead_ok, "the new graph's benchmark did not complete");
    vh_close(&k);
    if (!fails) printf("fork: a child forked while threads waited in the interposer completed, straight to cuDNN\n");
    return fails ? 1 : 0;
}
