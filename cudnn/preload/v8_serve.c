/*
 * Executes and destroys of a watched graph's plans: serving the stored
 * choice, standing aside, and learning the host's choice (the states are
 * drawn in v8_graph.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "v8.h"

int v8_plan_choice(void *plan, convcache_engine_choice *out) {
    return convcache_engine_from_plan(plan, out, NULL) == CONVCACHE_ENGINE_OK ? 0 : -1;
}

/* log_choices logs two choices that were to be the same, whole, with the
 * digest a plan's reading was to have (0: none) (CONVCACHE_PRELOAD_LOG=1):
 * the evidence for what a cuDNN does. */
static void log_choices(const char *what, const convcache_engine_choice *a, uint64_t want_plan,
                        const convcache_engine_choice *b, const struct v8_graph *g) {
    enum { CHOICE_TEXT = 1400 }; /* 48 knobs of 64-bit values fit */
    char *ta = malloc(CHOICE_TEXT), *tb = malloc(CHOICE_TEXT), *line = malloc(2 * CHOICE_TEXT + 200);
    if (ta && tb && line) {
        convcache_engine_format(a, ta, CHOICE_TEXT);
        convcache_engine_format(b, tb, CHOICE_TEXT);
        snprintf(line, 2 * CHOICE_TEXT + 200, "%s: %s (plan digest %016llx), %s (digest %016llx)", what, ta,
                 (unsigned long long)want_plan, tb, (unsigned long long)v8_choice_id(b));
        log_key("note", line, g->key, g->key_len);
    }
    free(ta), free(tb), free(line);
}

/* record stores the host's choice, plan, as g's (plan is alive; v8_mu
 * not held; the caller holds a reference on g). Stored choices are found
 * among heuristics results by what their configs read, so the choice is
 * what plan's engine config reads as; where the plan itself reads
 * otherwise (some engines of cuDNN 9 on a GPU), that is kept beside it,
 * for the check before serving. A config already gone: the plan's own. */
static void record(struct v8_graph *g, void *plan) {
    convcache_engine_choice w, c;
    uint64_t w_plan = 0;
    int ok = v8_plan_choice(plan, &w) == 0;
    if (ok && v8_plan_config_choice(plan, &c) == 0 && !convcache_engine_same(&c, &w)) {
        if (log_enabled()) log_choices("config and plan read differently", &c, 0, &w, g);
        w_plan = v8_choice_id(&w);
        c.workspace = w.workspace;
        if (convcache_engine_seal(&c) == CONVCACHE_ENGINE_OK) w = c;
        else w_plan = 0;
    }
    pthread_mutex_lock(&v8_mu);
    if (g->recorded || g->phase == G_DONE) {
        pthread_mutex_unlock(&v8_mu);
        return;
    }
    g->recorded = 1;
    struct v8_choices merged = {0};
    if (ok) {
        /* Dropped: choices that failed here, that heuristics no longer
         * offer (once they were asked), and that were timed and lost. */
        unsigned drop = g->failed | g->timed;
        if (g->heur_seen) drop |= ~g->offered;
        v8_choices_merge(&g->stored, drop, &w, w_plan, &merged);
    }
    int aside = g->phase == G_ASIDE;
    struct v8_lease *lease = g->lease;
    g->lease = NULL;
    v8_close_window(g);
    pthread_mutex_unlock(&v8_mu);

    unsigned char value[V8_VALUE_MAX];
    size_t len = ok ? v8_choices_encode(&merged, value, sizeof value) : 0;
    /* A lease the builder let go of meanwhile (the host made no progress
     * for a while): stored with a plain insert. */
    int handed = lease && v8_lease_finish(lease, len ? value : NULL, len);
    if (!handed && len) {
        int rc = V8_TIMED(V8T_CACHE, api.insert(g->cache, g->key, g->key_len, value, len));
        if (rc < 0 && rc != CONVCACHE_E_READONLY) {
            COUNT(errors);
            warn_once(W_CACHE, "a cache error (%s) kept a backend-API choice from being stored",
                      api.last_error());
        }
    }
    if (len) COUNT_V8(v8_recorded);
    if (log_enabled()) log_key(aside ? "stood aside, recorded" : "recorded", ok ? "" : "(unreadable plan)",
                               g->key, g->key_len);
}

/* ---- executes ------------------------------------------------------------- */

enum { RUN, TRY, REFUSE };

/* untouched reports whether g has a plan other than the candidate that
 * has not had its first execute yet (v8_mu held). */
static int untouched(const struct v8_graph *g) {
    for (const struct v8_shadow *q = g->plan_list; q; q = q->gnext)
        if (q->desc != g->candidate && q->ok_runs == 0 && q->refused == 0) return 1;
    return 0;
}

/* aside_reason says why a graph with stored choices stands aside at its
 * first execute (v8_mu held). */
static const char *aside_reason(const struct v8_graph *g) {
    return !g->heur_seen ? "no heuristics results were read through the interposer"
           : !g->offered && g->reorder_skipped == V8_REORDER_UNREAD
               ? "heuristics results could not be read ahead, so were given in their own order"
           : !g->offered && g->reorder_skipped
               ? "heuristics results changed between reads, so were given in their own order"
           : !g->offered && g->heur_unreadable ? "heuristics offered no stored choice (some unreadable)"
           : !g->offered                 ? "heuristics offered no stored choice"
           : g->failed                   ? "a stored choice failed to finalize"
           : g->stored_plans == 0        ? "a stored choice was offered; the host kept no plan of it"
                                         : "the host ran another plan before the stored choice's";
}

/* decide picks what an execute of p does (v8_mu held). */
static int decide(struct v8_graph *g, struct v8_shadow *p) {
    if (g->phase == G_IDLE) {
        g->executed = 1;
        if (g->plans < 2) { /* not a benchmark: the host runs what it built */
            v8_close_window(g);
            return RUN;
        }
        if (g->stored.n == 0 && !g->stored.dropped) {
            g->phase = G_RECORDING;
            COUNT_V8(v8_misses);
            return RUN;
        }
        if (p->stored >= 0 && !(g->failed & (1u << p->stored))) {
            g->phase = G_SERVING;
            g->candidate = p->desc;
            g->candidate_idx = p->stored;
            return TRY;
        }
        g->phase = G_ASIDE;
        g->aside_why = g->stored.dropped ? "the choice served last failed in a host's run after timing"
                                         : aside_reason(g);
        COUNT_V8(v8_aside);
        return RUN;
    }
    if (g->phase != G_SERVING) return RUN;
    if (p->desc == g->candidate) {
        /* After the host passed over another plan, the candidate runs in
         * earnest: timing is over. */
        if (g->refused > 0 || !untouched(g)) g->earnest = 1;
        return RUN;
    }
    if (p->ok_runs == 0 && p->refused == 0) {
        p->refused++;
        g->refused++;
        return REFUSE;
    }
    return RUN;
}

/* served_failed handles the served choice failing in the host's run after
 * timing (a workspace it could not get, say): the host had only that plan
 * left to run, the others' timing having been refused. Nothing can be
 * undone here; the choice is dropped from the stored list, so that the
 * next process stands aside for the graph and benchmarks it in full
 * (v8_mu not held; the caller holds a reference on g). */
static void served_failed(struct v8_graph *g) {
    struct v8_choices left;
    v8_choices_merge(&g->stored, 0, NULL, 0, &left);
    unsigned char value[V8_VALUE_MAX];
    size_t len = v8_choices_encode(&left, value, sizeof value);
    int rc = len ? V8_TIMED(V8T_CACHE, api.insert(g->cache, g->key, g->key_len, value, len)) : CONVCACHE_E_INVALID;
    if (rc < 0 && rc != CONVCACHE_E_READONLY) {
        COUNT(errors);
        warn_once(W_CACHE, "a cache error (%s) kept a failed backend-API choice from being dropped",
                  api.last_error());
    }
    warn_once(W_ENTRY, "a served cuDNN plan failed in the host's run after timing; the next process "
              "benchmarks that convolution in full");
    if (log_enabled()) log_key("served choice failed after timing", "dropped", g->key, g->key_len);
}

cudnnStatus_t v8_execute(cudnnHandle_t h, void *plan, void *pack) {
    const struct v8_real *r = v8_real();
    COUNT_V8(v8_looked_execs);
    pthread_mutex_lock(&v8_mu);
    struct v8_shadow *p = v8_shadow_typed(plan, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    struct v8_graph *g = p ? p->g : NULL, *pg = g;
    int what = RUN, idx = -1, earnest = 0;
    convcache_engine_choice want = {0};
    uint64_t want_plan = 0;
    if (v8_graph_open(g) && p->finalized) {
        what = decide(g, p);
        idx = g->candidate_idx;
        earnest = g->earnest && p->desc == g->candidate;
        if (what == TRY) want = g->stored.c[idx], want_plan = g->stored.plan_id[idx];
        v8_watch_update(p);
    } else {
        g = NULL;
    }
    if (pg) v8_moved_on(pg); /* after decide: this execute may have opened its timing */
    if (g) {
        v8_graph_ref(g);
        v8_lease_progress(g, 1);
    }
    pthread_mutex_unlock(&v8_mu);

    if (what == REFUSE) {
        COUNT_V8(v8_refused_execs);
        pthread_mutex_lock(&v8_mu);
        v8_lease_progress(g, -1);
        if (g->phase == G_SERVING && !untouched(g)) {
            /* Nothing left to refuse: only the candidate's run in earnest
             * is still watched. */
            g->earnest = 1;
        }
        v8_graph_unref(g);
        pthread_mutex_unlock(&v8_mu);
        return cudnn_not_supported();
    }
    /* A deferred plan is finalized first; one that cannot be never runs. */
    cudnnStatus_t st = v8_plan_materialize(plan);
    int matches = 1;
    if (st == CUDNN_STATUS_SUCCESS && what == TRY) {
        /* A config that reads as the stored choice must also build a plan
         * that runs what its plan ran when it was stored (a cuDNN may
         * substitute another engine). */
        convcache_engine_choice have;
        matches = v8_plan_choice(plan, &have) == 0 && v8_choice_runs(&want, want_plan, &have);
        if (!matches && log_enabled())
            log_choices("served plan reads differently", &want, want_plan, &have, g);
    }
    if (st == CUDNN_STATUS_SUCCESS) st = r->execute(h, plan, pack);
    if (!g) return st;

    void *to_record = NULL;
    int dropped = 0;
    pthread_mutex_lock(&v8_mu);
    v8_lease_progress(g, -1);
    p = v8_shadow_typed(plan, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    if (what == TRY && (!matches || st != CUDNN_STATUS_SUCCESS)) {
        /* The stored choice cannot serve: the host benchmarks the rest as
         * usual (nothing was refused yet), and its choice replaces it. */
        g->failed |= 1u << idx;
        g->phase = G_ASIDE;
        g->aside_why = !matches ? "the stored choice's plan runs another engine or knobs than stored"
                                : "the stored choice's plan failed to run";
        g->candidate = NULL;
        COUNT_V8(v8_aside);
    } else if (what == TRY) {
        COUNT_V8(v8_hits);
    }
    if (earnest && g->phase == G_SERVING) {
        dropped = st != CUDNN_STATUS_SUCCESS;
        v8_close_window(g);
    }
    if (st == CUDNN_STATUS_SUCCESS && p && p->g == g) {
        /* A plan run again after another: the host's run of its choice
         * (a timing loop goes from plan to plan and does not come back). */
        if (g->last_run != p->desc) g->revisit = p->ok_runs > 0;
        g->last_run = p->desc;
        if (p->ok_runs++ == 0) g->ran++;
        if (p->stored >= 0 && p->desc != g->candidate) g->timed |= 1u << p->stored;
        if ((g->phase == G_RECORDING || g->phase == G_ASIDE) && g->post && !g->recorded) to_record = plan;
    }
    if (p && p->g == g) v8_watch_update(p);
    pthread_mutex_unlock(&v8_mu);
    if (dropped) served_failed(g);
    if (to_record) record(g, to_record);
    pthread_mutex_lock(&v8_mu);
    v8_graph_unref(g);
    pthread_mutex_unlock(&v8_mu);
    return st;
}

/* ---- destroys --------------------------------------------------------------- */
/* The choice, once timing is over (a timed plan goes): the plan that ran
 * again after others, or the plan that ran last if it is the first to go,
 * else the first good execute after that (post; the graph gone counts
 * too), or the one plan left of several when it was the last one run. */

int v8_destroying(void *desc, cudnnStatus_t *st) {
    void *to_record = NULL, *cfg = NULL;
    struct v8_graph *g = NULL;
    pthread_mutex_lock(&v8_mu);
    struct v8_shadow *s = v8_shadow_get(desc);
    if (s && s->type == CUDNN_BACKEND_ENGINECFG_DESCRIPTOR && (s->holds > 0 || s->destroy_pending)) {
        /* A deferred plan still names it, or it is being read: cuDNN's
         * destroy waits. A second destroy is answered as cuDNN answers
         * one of a destroyed descriptor. */
        *st = v8_config_destroy_pending(s) ? cudnn_bad_param() : CUDNN_STATUS_SUCCESS;
        pthread_mutex_unlock(&v8_mu);
        return 0;
    }
    if (s && s->type == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR) cfg = v8_plan_release(s);
    if (s && s->type == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR && s->g && s->finalized) {
        g = s->g;
        g->plans--;
        if (s->stored >= 0) g->stored_plans--;
        v8_shadow_plan_leave(s);
        if ((g->phase == G_RECORDING || g->phase == G_ASIDE) && !g->recorded) {
            /* A timed plan going means timing is over: the host's next
             * good execute is its choice. (Not the plan run last: a timing
             * loop that keeps its plans in a set ordered by time drops one
             * of two that time the same, before choosing.) And once one
             * plan is left of several, it is the host's choice. */
            int first = !g->post && s->ok_runs > 0;
            if (s->ok_runs > 0) g->post = 1;
            struct v8_shadow *left = g->plans == 1 && g->executed ? g->plan_list : NULL;
            if (left && left->ok_runs > 0 && left->desc == g->last_run) {
                to_record = left->desc;
            } else if (first && desc == g->last_run) {
                /* The first plan to go after timing is the one that ran
                 * last: the host ran its choice, then let go of its plans
                 * in its own order (a v1 graph: fastest first). Or it is
                 * one of two that timed alike, as good as the other. */
                to_record = desc;
            } else if (g->post && g->revisit && v8_shadow_typed(g->last_run, s->type)) {
                /* The host ran a plan again after timing: its choice (this
                 * very plan perhaps: it is read before it goes). */
                to_record = g->last_run;
            }
            if (to_record) v8_graph_ref(g);
        } else if (g->phase == G_SERVING && s->desc == g->candidate) {
            v8_close_window(g); /* the plan that served is gone: nothing is refused any more */
        } else if (g->phase == G_SERVING && g->plans <= 1) {
            g->earnest = 1; /* the others are gone: the candidate's next run is in earnest */
        }
    } else if (s && s->type == CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR && s->g) {
        s->g->graph_gone = 1;
        if (s->g->executed) s->g->post = 1;
    }
    if (to_record) {
        pthread_mutex_unlock(&v8_mu);
        struct v8_timer tc; /* storing the host's choice: a timed call (v8_time.c) */
        v8_time_call(&tc, to_record);
        record(g, to_record);
        v8_time_call_end(&tc);
        pthread_mutex_lock(&v8_mu);
        v8_graph_unref(g);
    }
    v8_shadow_drop(desc);
    pthread_mutex_unlock(&v8_mu);
    if (cfg) v8_real()->destroy(cfg);
    return 1;
}
