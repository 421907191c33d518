/*
 * Where the interposer's time goes on the backend API: wall time by phase,
 * per graph (CONVCACHE_PRELOAD_LOG=1: one "v8 time" line when its
 * benchmark window has closed) and in all (the exit summary, counters.c).
 *
 * Each interposed call on the looked-at path (v8_calls.c: a heuristics
 * results query, the finalize of a graph, heuristics or plan, an execute
 * the interposer looks at, and a destroy that stores the host's choice;
 * never the warm execute's fast path, nor a plain descriptor's create,
 * set, finalize or destroy, which must stay cheap for hosts that keep a
 * million) is a root interval; inside it, intervals of one phase each are nested (the real
 * heuristics, a plan's finalize, an execute, a wait for another builder,
 * a cache call, loading libconvcache). Every interval's time is counted
 * once, in its own phase, less the intervals nested in it; what a root
 * keeps for itself is the interposer's own work (locks, shadows, keys,
 * reading choices). So the phases and "own" add up to the time spent in
 * the interposer's calls by construction, and "own" says how much of it
 * the phases do not explain.
 *
 * A helper thread's get_or_create (v8_lease.c) runs outside every call:
 * it is counted apart, less the time its builder waits for the host.
 */
#include <stdio.h>
#include <string.h>

#include "v8.h"

static uint64_t totals[V8T_N];

static __thread struct v8_timer *top __attribute__((tls_model("initial-exec")));

static const char *const names[V8T_N] = {
    [V8T_CALLS] = "calls",
    [V8T_OWN] = "own",
    [V8T_HEUR] = "heur",
    [V8T_HEUR_OURS] = "heur_ours",
    [V8T_FIN_STORED] = "fin_stored",
    [V8T_FIN_OTHER] = "fin_other",
    [V8T_EXEC_WARMUP] = "exec_warmup",
    [V8T_EXEC_TIMING] = "exec_timing",
    [V8T_EXEC_OTHER] = "exec_other",
    [V8T_LEASE] = "lease_wait",
    [V8T_CACHE] = "cache",
    [V8T_DESC] = "desc",
    [V8T_SETUP] = "setup",
    [V8T_HELPER_CACHE] = "helper_cache",
    [V8T_HELPER_WAIT] = "helper_wait",
};

void v8_time_begin(struct v8_timer *t, int phase) {
    /* Outside a timed call (a plain descriptor's create, set, finalize or
     * destroy, which stay untimed and cheap), an interval counts nowhere:
     * only skip is read of it. */
    t->skip = !top && phase != V8T_OWN && phase < V8T_HELPER_CACHE;
    if (t->skip) return;
    memset(t, 0, sizeof *t);
    t->phase = phase;
    t->up = top;
    top = t;
    t->t0 = now_ns();
}

/* end pops t, counting its own time (less its children's) in its phase,
 * in the totals and in its root's per-graph figures; returns its whole
 * time. */
static uint64_t end(struct v8_timer *t) {
    if (t->skip) return 0;
    uint64_t all = now_ns() - t->t0;
    uint64_t self = all > t->child ? all - t->child : 0;
    top = t->up;
    __atomic_fetch_add(&totals[t->phase], self, __ATOMIC_RELAXED);
    struct v8_timer *root = t;
    while (root->up) root = root->up;
    root->by[t->phase] += self;
    if (t->up) t->up->child += all;
    return all;
}

void v8_time_end(struct v8_timer *t) { end(t); }

/* exec_phase and v8_time_fin_phase say what an execute or a finalize of s is
 * (v8_mu held; s may be NULL). A plan's first execute is its warm-up;
 * those after it, while its graph's benchmark is watched, its timing. */
static int exec_phase(const struct v8_shadow *s) {
    const struct v8_graph *g = s && s->type == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR ? s->g : NULL;
    return !g || g->phase == G_DONE || !s->finalized ? V8T_EXEC_OTHER
           : s->ok_runs == 0 && s->refused == 0      ? V8T_EXEC_WARMUP
                                                     : V8T_EXEC_TIMING;
}

int v8_time_fin_phase(const struct v8_shadow *s) {
    int type = s ? s->type : -1;
    return type == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR ? (s->stored >= 0 ? V8T_FIN_STORED : V8T_FIN_OTHER)
           : type == CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR   ? V8T_HEUR
                                                           : V8T_DESC;
}

/* ---- roots: the interposed calls ------------------------------------------ */

void v8_time_call(struct v8_timer *t, const void *desc) {
    v8_time_begin(t, V8T_OWN);
    t->exec_phase = V8T_EXEC_OTHER;
    t->fin_phase = V8T_DESC;
    if (!desc) return;
    pthread_mutex_lock(&v8_mu);
    struct v8_shadow *s = v8_shadow_get(desc);
    if (v8_shadow_graph(s)) {
        t->g = s->g;
        v8_graph_ref(t->g);
    }
    /* What an execute or a finalize of desc is, from the same lookup. */
    t->exec_phase = exec_phase(s);
    t->fin_phase = v8_time_fin_phase(s);
    pthread_mutex_unlock(&v8_mu);
}

/* log_graph prints g's times, once, when its window has closed (v8_mu held). */
static void log_graph(struct v8_graph *g) {
    if (g->time.logged || g->phase != G_DONE || !g->executed || !log_enabled()) return;
    g->time.logged = 1;
    char line[512];
    int n = 0;
    for (int i = 0; i < V8T_HELPER_CACHE && n >= 0 && (size_t)n < sizeof line; i++)
        n += snprintf(line + n, sizeof line - (size_t)n, "%s%s=%.3f", i ? " " : "", names[i],
                      (double)g->time.ns[i] / 1e6);
    log_key("time ms", line, g->key, g->key_len);
}

void v8_time_call_end(struct v8_timer *t) {
    uint64_t all = end(t);
    __atomic_fetch_add(&totals[V8T_CALLS], all, __ATOMIC_RELAXED);
    if (!t->g) return;
    pthread_mutex_lock(&v8_mu);
    for (int i = 0; i < V8T_N; i++) t->g->time.ns[i] += t->by[i];
    t->g->time.ns[V8T_CALLS] += all;
    if (t->g->refs == 1) v8_close_window(t->g); /* as the unref below would: logged first */
    log_graph(t->g);
    v8_graph_unref(t->g);
    pthread_mutex_unlock(&v8_mu);
}

/* ---- what an execute or a plan's finalize is ------------------------------ */

cudnnStatus_t v8_time_execute(cudnnHandle_t h, void *plan, void *pack) {
    struct v8_timer tc;
    v8_time_call(&tc, plan);
    cudnnStatus_t st = V8_TIMED(tc.exec_phase, v8_execute(h, plan, pack));
    v8_time_call_end(&tc);
    return st;
}

/* ---- the exit summary ------------------------------------------------------ */

void v8_time_forked(void) { memset(totals, 0, sizeof totals); }

int v8_time_format(char *out, size_t cap) {
    uint64_t v[V8T_N];
    for (int i = 0; i < V8T_N; i++) v[i] = __atomic_load_n(&totals[i], __ATOMIC_RELAXED);
    if (!v[V8T_CALLS]) return 0;
    int n = snprintf(out, cap, "convcache-preload: v8 time ms:");
    for (int i = 0; i < V8T_HELPER_WAIT && n >= 0 && (size_t)n < cap; i++)
        n += snprintf(out + n, cap - (size_t)n, " %s=%.3f", names[i], (double)v[i] / 1e6);
    if (n >= 0 && (size_t)n < cap) n += snprintf(out + n, cap - (size_t)n, "\n");
    return n > 0 && (size_t)n < cap ? n : 0;
}
