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
    if (lease) {
        v8_lease_finish(lease, len ? value : NULL, len);
    } else if (len) {
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

/* decide picks what an execute of p does (v8_mu held). */
static int decide(struct v8_graph *g, struct v8_shadow *p) {
    if (g->phase == G_IDLE) {
        g->executed = 1;
        if (g->plans < 2) { /* not a benchmark: the host runs what it built */
            v8_close_window(g);
            return RUN;
        }
        if (g->stored.n == 0) {
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
        g->aside_why = !g->heur_seen ? "no heuristics results were read through the interposer"
                       : !g->offered && g->reorder_skipped
                           ? "heuristics results were given in their own order (the host asked for fewer)"
                       : !g->offered && g->heur_unreadable ? "heuristics offered no stored choice (some unreadable)"
                       : !g->offered                 ? "heuristics offered no stored choice"
                       : g->failed                   ? "a stored choice failed to finalize"
                       : g->stored_plans == 0        ? "a stored choice was offered; the host kept no plan of it"
                                                     : "the host ran another plan before the stored choice's";
        COUNT_V8(v8_aside);
        return RUN;
    }
    if (g->phase == G_SERVING && p->desc != g->candidate && p->ok_runs == 0 && p->refused == 0) {
        p->refused++;
        g->refused++;
        return REFUSE;
    }
    return RUN;
}

cudnnStatus_t v8_execute(cudnnHandle_t h, void *plan, void *pack) {
    const struct v8_real *r = v8_real();
    pthread_mutex_lock(&v8_mu);
    struct v8_shadow *p = v8_shadow_get(plan);
    struct v8_graph *g = p ? p->g : NULL;
    if (!g || g->phase == G_DONE || !p->finalized) {
        pthread_mutex_unlock(&v8_mu);
        return r->execute(h, plan, pack);
    }
    int what = decide(g, p);
    int idx = g->candidate_idx;
    convcache_engine_choice want = {0};
    uint64_t want_plan = 0;
    if (what == TRY) want = g->stored.c[idx], want_plan = g->stored.plan_id[idx];
    v8_graph_ref(g);
    pthread_mutex_unlock(&v8_mu);

    if (what == REFUSE) {
        COUNT_V8(v8_refused_execs);
        pthread_mutex_lock(&v8_mu);
        v8_graph_unref(g);
        pthread_mutex_unlock(&v8_mu);
        return cudnn_not_supported();
    }
    /* A deferred plan that is to run is finalized first; one that cannot
     * be never runs. */
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

    void *to_record = NULL;
    pthread_mutex_lock(&v8_mu);
    p = v8_shadow_get(plan);
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
    if (st == CUDNN_STATUS_SUCCESS && p) {
        if (p->ok_runs++ == 0) g->ran++;
        if (p->stored >= 0 && p->desc != g->candidate) g->timed |= 1u << p->stored;
        if ((g->phase == G_RECORDING || g->phase == G_ASIDE) && g->post && !g->recorded) to_record = plan;
    }
    pthread_mutex_unlock(&v8_mu);
    if (to_record) record(g, to_record);
    pthread_mutex_lock(&v8_mu);
    v8_graph_unref(g);
    pthread_mutex_unlock(&v8_mu);
    return st;
}

/* ---- destroys --------------------------------------------------------------- */
/* The choice: the first good execute once the graph or a timed plan is
 * gone (post), or the one plan left of several. */

int v8_destroying(void *desc) {
    void *to_record = NULL, *cfg = NULL;
    struct v8_graph *g = NULL;
    pthread_mutex_lock(&v8_mu);
    struct v8_shadow *s = v8_shadow_get(desc);
    if (s && s->type == CUDNN_BACKEND_ENGINECFG_DESCRIPTOR && s->holds > 0) {
        /* A deferred plan still names it, or it is being read: cuDNN's
         * destroy waits. */
        s->destroy_pending = 1;
        pthread_mutex_unlock(&v8_mu);
        return 0;
    }
    if (s && s->type == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR) cfg = v8_plan_release(s);
    if (s && s->g && s->type == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR && s->finalized) {
        g = s->g;
        g->plans--;
        if (s->stored >= 0) g->stored_plans--;
        if ((g->phase == G_RECORDING || g->phase == G_ASIDE) && !g->recorded) {
            /* A timed plan going means timing is over: the host's next
             * good execute is its choice. (Not the plan run last: a timing
             * loop that keeps its plans in a set ordered by time drops one
             * of two that time the same, before choosing.) And once one
             * plan is left of several, it is the host's choice. */
            if (s->ok_runs > 0) g->post = 1;
            struct v8_shadow *left = g->plans == 1 && g->executed ? v8_shadow_plan_of(g, desc) : NULL;
            if (left && left->ok_runs > 0) {
                to_record = left->desc;
                v8_graph_ref(g);
            }
        } else if (g->phase == G_SERVING && g->plans <= 1) {
            v8_close_window(g); /* the others are gone: nothing left to refuse */
        }
    } else if (s && s->g && s->type == CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR) {
        s->g->graph_gone = 1;
        if (s->g->executed) s->g->post = 1;
    }
    pthread_mutex_unlock(&v8_mu);
    if (to_record) {
        record(g, to_record);
        pthread_mutex_lock(&v8_mu);
        v8_graph_unref(g);
        pthread_mutex_unlock(&v8_mu);
    }
    pthread_mutex_lock(&v8_mu);
    v8_shadow_drop(desc);
    pthread_mutex_unlock(&v8_mu);
    if (cfg) v8_real()->destroy(cfg);
    return 1;
}
