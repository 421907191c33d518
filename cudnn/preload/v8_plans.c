/*
 * Finalizing plans of a watched graph.
 *
 * Deferred plans. Once the host has built a stored choice's plan for a
 * graph (heuristics put it first, so this is the first plan built), the
 * other plans it builds are very likely never to run: their timing will be
 * refused (v8_serve.c). Building a plan can cost as much as timing it, and
 * far more for runtime-compiled engines, so their finalize is deferred:
 * the host is told it succeeded, the one thing it reads back (the plan's
 * workspace size) is answered from the engine config's own, and the plan
 * is finalized in cuDNN only if it is ever to run, that is when the stored
 * choice could not serve after all (dropped by the host for its workspace,
 * or failing to run): the interposer then stands aside, and each plan is
 * finalized at its first execute, exactly as late as the host can tell.
 *   - A plan whose real finalize fails then returns that status from its
 *     executes: the host's timing skips it, as it would have skipped a plan
 *     that failed to build.
 *   - A plan that needs more workspace than its config said is never run
 *     (its executes fail the same way), so the host's smaller buffer is
 *     never overrun.
 *   - Any other read of a deferred plan finalizes it first, and so does a
 *     read of its workspace once the graph's benchmark is over (then the
 *     plan's own answer is given), an execute at any time, and a second
 *     finalize (which then gets cuDNN's own answer to a second finalize).
 *   - cuDNN keeps the engine config a deferred plan names: the host's
 *     destroy of it waits until the plan is finalized or destroyed. To the
 *     host it is gone: a second destroy, and any other call naming it, is
 *     answered CUDNN_STATUS_BAD_PARAM, as cuDNN answers for a destroyed
 *     descriptor.
 * Where the config cannot say its workspace (cuDNN before 9.2) nothing is
 * deferred.
 *
 * Strict mode (CONVCACHE_MODE=strict) builds the first stored choice of a
 * known graph only, and refuses every plan of a graph it cannot serve.
 */
#include <string.h>

#include "v8.h"

enum { FIN_REAL, FIN_REFUSE, FIN_DEFER };

/* decide picks what a plan's finalize does (v8_mu held). */
static int decide(const struct v8_shadow *p, const struct v8_graph *g) {
    if (!g) return FIN_REAL;
    if (g->strict)
        return p->stored >= 0 && g->stored_plans == 0 && !(g->failed & (1u << p->stored)) ? FIN_REAL
                                                                                          : FIN_REFUSE;
    /* After the first stored choice, every plan (a repeat of it from the
     * fallback list too) is most likely refused its timing. */
    if (g->phase == G_IDLE && g->stored_plans > 0 && p->cfg) return FIN_DEFER;
    return FIN_REAL;
}

static void finalized(struct v8_shadow *p, cudnnStatus_t st, int deferred) {
    struct v8_graph *g = p->g;
    if (st == CUDNN_STATUS_SUCCESS) {
        p->finalized = 1;
        if (!g) return;
        g->plans++;
        if (!deferred) g->built++;
        if (p->stored >= 0) g->stored_plans++;
        v8_shadow_plan_join(p);
    } else if (g && p->stored >= 0) {
        g->failed |= 1u << p->stored;
    }
}

cudnnStatus_t v8_plan_finalize(void *plan) {
    const struct v8_real *r = v8_real();
    pthread_mutex_lock(&v8_mu);
    struct v8_shadow *p = v8_shadow_typed(plan, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    int again = p && p->finalized;
    int what = p && !again ? decide(p, p->g) : FIN_REAL;
    void *cfg = p ? p->cfg : NULL;
    if (p && !again) v8_lease_progress(p->g, 1);
    pthread_mutex_unlock(&v8_mu);
    if (again) {
        /* Finalized before: cuDNN answers a second finalize of the plan it
         * has (a deferred one is made real first). */
        v8_plan_materialize(plan);
        return r->finalize(plan);
    }

    if (what == FIN_REFUSE) {
        COUNT_V8(v8_refused_builds);
        warn_once(W_STRICT, "CONVCACHE_MODE=strict: a convolution graph without a usable stored "
                  "choice is not benchmarked; its plans are refused (CUDNN_STATUS_NOT_SUPPORTED)");
        return cudnn_not_supported();
    }
    int64_t ws = -1, n = 0;
    if (what == FIN_DEFER &&
        (r->get(cfg, CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n, &ws) != CUDNN_STATUS_SUCCESS ||
         n != 1 || ws < 0))
        what = FIN_REAL;
    cudnnStatus_t st = what == FIN_REAL ? r->finalize(plan) : CUDNN_STATUS_SUCCESS;

    pthread_mutex_lock(&v8_mu);
    p = v8_shadow_typed(plan, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    if (p) {
        v8_lease_progress(p->g, -1);
        finalized(p, st, what == FIN_DEFER);
        if (what == FIN_DEFER) {
            struct v8_shadow *c = v8_shadow_get(cfg);
            p->deferred = 1;
            p->reported_ws = ws;
            if (c && c->type == CUDNN_BACKEND_ENGINECFG_DESCRIPTOR) c->holds++;
            if (p->g) p->g->deferred++;
            COUNT_V8(v8_deferred_builds);
        }
        if (st == CUDNN_STATUS_SUCCESS) v8_watch_update(p);
    }
    pthread_mutex_unlock(&v8_mu);
    return st;
}

/* Engine configs the host destroyed whose cuDNN destroy waits. */
int v8_destroys_pending;

int v8_config_destroy_pending(struct v8_shadow *c) {
    if (c->destroy_pending) return 1;
    c->destroy_pending = 1;
    __atomic_add_fetch(&v8_destroys_pending, 1, __ATOMIC_RELAXED);
    return 0;
}

int v8_names_destroyed_look(const void *desc, int type, int64_t count, const void *elements) {
    pthread_mutex_lock(&v8_mu);
    const struct v8_shadow *s = v8_shadow_get(desc);
    int gone = s && s->destroy_pending;
    if (type == CUDNN_TYPE_BACKEND_DESCRIPTOR && elements)
        for (int64_t i = 0; i < count && i < 64 && !gone; i++) {
            s = v8_shadow_get(((void *const *)elements)[i]);
            gone = s && s->destroy_pending;
        }
    pthread_mutex_unlock(&v8_mu);
    return gone;
}

/* unhold lets go of one hold on engine config cfg (v8_mu held); it
 * returns cfg when the host's destroy of it, asked for meanwhile, is now
 * due (the caller makes it, v8_mu released), else NULL. */
static void *unhold(void *cfg) {
    struct v8_shadow *c = v8_shadow_get(cfg);
    if (!c || c->type != CUDNN_BACKEND_ENGINECFG_DESCRIPTOR || --c->holds > 0 || !c->destroy_pending)
        return NULL;
    __atomic_sub_fetch(&v8_destroys_pending, 1, __ATOMIC_RELAXED);
    v8_shadow_drop(cfg);
    return cfg;
}

void *v8_plan_release(struct v8_shadow *p) {
    if (!p->deferred) return NULL;
    p->deferred = 0;
    return unhold(p->cfg);
}

/* One thread makes a deferred plan real; another that needs it meanwhile
 * waits for its status (v8_mu's condition). */
static pthread_cond_t made = PTHREAD_COND_INITIALIZER;

cudnnStatus_t v8_plan_materialize(void *plan) {
    const struct v8_real *r = v8_real();
    pthread_mutex_lock(&v8_mu);
    struct v8_shadow *p = v8_shadow_get(plan);
    while (p && p->type == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR && p->materializing) {
        pthread_cond_wait(&made, &v8_mu);
        p = v8_shadow_get(plan);
    }
    if (!p || p->type != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR || !p->deferred) {
        cudnnStatus_t blocked = p && p->type == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR ? p->blocked
                                                                                  : CUDNN_STATUS_SUCCESS;
        pthread_mutex_unlock(&v8_mu);
        return blocked;
    }
    p->materializing = 1;
    int64_t reported = p->reported_ws;
    int phase = v8_time_fin_phase(p);
    pthread_mutex_unlock(&v8_mu);

    cudnnStatus_t st = V8_TIMED(phase, r->finalize(plan));
    int64_t ws = -1, n = 0;
    if (st == CUDNN_STATUS_SUCCESS &&
        (r->get(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n, &ws) !=
             CUDNN_STATUS_SUCCESS || n != 1 || ws > reported)) {
        /* It would overrun the workspace the host sized from what it was
         * told: it never runs. */
        st = cudnn_not_supported();
        warn_once(W_ENTRY, "a deferred cuDNN plan needs more workspace than its engine config "
                  "said; it is not run");
    }
    pthread_mutex_lock(&v8_mu);
    void *cfg = NULL;
    p = v8_shadow_get(plan);
    if (p && p->type == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR && p->materializing) {
        p->materializing = 0;
        p->blocked = st;
        if (p->g && st == CUDNN_STATUS_SUCCESS) p->g->built++;
        cfg = v8_plan_release(p);
        v8_watch_update(p);
    }
    pthread_cond_broadcast(&made);
    pthread_mutex_unlock(&v8_mu);
    if (cfg) r->destroy(cfg);
    return st;
}

int v8_plan_get(void *plan, int name, int type, int64_t requested, int64_t *count, void *elements,
                cudnnStatus_t *st) {
    pthread_mutex_lock(&v8_mu);
    struct v8_shadow *p = v8_shadow_get(plan);
    int deferred = p && p->type == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR && p->deferred;
    int64_t ws = deferred ? p->reported_ws : 0;
    /* The workspace the config reported stands for the plan's only while
     * the host is choosing among plans it will mostly not run. */
    int timing = deferred && v8_graph_open(p->g);
    pthread_mutex_unlock(&v8_mu);
    if (!deferred) return 0;
    /* (cudnn_frontend passes no count pointer: cuDNN accepts that.) */
    if (timing && name == CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE && type == CUDNN_TYPE_INT64 && requested >= 1 &&
        elements) {
        memcpy(elements, &ws, sizeof ws);
        if (count) *count = 1;
        *st = CUDNN_STATUS_SUCCESS;
        return 1;
    }
    /* Anything else the host reads is cuDNN's to say: finalize it now. */
    v8_plan_materialize(plan);
    return 0;
}

int v8_plan_config_choice(void *plan, convcache_engine_choice *out) {
    pthread_mutex_lock(&v8_mu);
    struct v8_shadow *p = v8_shadow_typed(plan, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    struct v8_shadow *c = p && p->cfg ? v8_shadow_get(p->cfg) : NULL;
    /* The config the plan was built from, if the host still has it: its
     * address could since name another descriptor (the host destroyed the
     * config, and a new one took its place), so it must be an engine
     * config of the same graph. One whose destroy waits for a deferred
     * plan is still alive. */
    void *cfg = c && c->type == CUDNN_BACKEND_ENGINECFG_DESCRIPTOR && (!c->g || c->g == p->g) ? c->desc : NULL;
    if (cfg) c->holds++; /* the host's destroy of it waits (v8_destroying) */
    pthread_mutex_unlock(&v8_mu);
    if (!cfg) return -1;
    int rc = cce_config_choice(cfg, out, NULL) == CONVCACHE_ENGINE_OK ? 0 : -1;
    pthread_mutex_lock(&v8_mu);
    void *due = unhold(cfg);
    pthread_mutex_unlock(&v8_mu);
    if (due) v8_real()->destroy(due);
    return rc;
}
