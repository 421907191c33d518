/*
 * One operation graph's life, as the host benchmarks it (design and the
 * reasons: cudnn/doc.go).
 *
 *   finalized        key from the attributes as set; stored choices looked
 *                    up; a new graph takes the lease at its first
 *                    heuristics (v8_lease.c), and another process's value
 *                    may arrive there
 *   heuristics       stored choices moved to the front (v8_reorder.c)
 *   plans finalized  counted; in strict mode only the first stored choice
 *                    is let through
 *   first execute    fewer than two plans alive: not a benchmark, nothing
 *                    to do. Else, when the plan is a stored choice and
 *                    reads back as that choice's plan did when stored, it runs;
 *                    if it runs well the graph is SERVING: every other
 *                    plan's first execute (its timing) is refused, so the
 *                    host times one plan. Anything else: ASIDE (a stored
 *                    choice the host did not keep, that failed, or that
 *                    does not match) or RECORDING (a new graph): the host
 *                    benchmarks exactly as without convcache
 *   the choice       the host's choice is the plan it runs after timing:
 *                    the first good execute once the graph or a timed
 *                    plan is destroyed, or the one plan left when all the
 *                    others are. It is merged into the stored list
 *                    (v8_choices.c) and stored.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "v8.h"

/* ---- lifetime ----------------------------------------------------------- */

static const char *const phase_names[] = {"not a benchmark", "served", "stood aside", "new", "done"};

/* The graph whose plans this thread was timing last (a reference), while
 * its window is open; let go of when the thread exits (timing_key). */
static __thread struct v8_graph *timing_here;
static pthread_key_t timing_key;
static pthread_once_t timing_once = PTHREAD_ONCE_INIT;

static void timing_exit(void *g) {
    pthread_mutex_lock(&v8_mu);
    if (timing_here == g) {
        timing_here = NULL;
        v8_graph_unref(g);
    }
    pthread_mutex_unlock(&v8_mu);
}

static void timing_key_make(void) { (void)pthread_key_create(&timing_key, timing_exit); }

void v8_moved_on(struct v8_graph *g) {
    struct v8_graph *was = timing_here;
    if (was == g) return;
    if (was && was->phase == G_SERVING) {
        v8_graph_ref(was);
        v8_close_window(was); /* lets go of timing_here's reference */
        v8_graph_unref(was);
    } else if (was) {
        /* A graph being learnt stays watched: a host that times several
         * graphs and then runs their choices is learnt when it does. */
        timing_here = NULL;
        v8_graph_unref(was);
    }
    if (v8_graph_open(g) && g->executed) {
        v8_graph_ref(g);
        timing_here = g;
        pthread_once(&timing_once, timing_key_make);
        (void)pthread_setspecific(timing_key, g);
    }
}

void v8_close_window(struct v8_graph *g) {
    if (g->phase != G_DONE && g->executed && log_enabled()) {
        const char *why = g->phase == G_ASIDE ? g->aside_why : NULL;
        char what[256];
        snprintf(what, sizeof what, "built %d timed %d refused %d%s%s%s", g->built, g->ran, g->refused,
                 why ? " (" : "", why ? why : "", why ? ")" : "");
        log_key(phase_names[g->phase], what, g->key, g->key_len);
    }
    if (g->phase == G_ASIDE) count_aside_reason(g->aside_why);
    g->phase = G_DONE;
    g->candidate = NULL;
    for (struct v8_shadow *p = g->plan_list; p; p = p->gnext) v8_watch_update(p);
    if (timing_here == g) {
        timing_here = NULL;
        g->refs--; /* never the last: the caller holds one */
    }
    if (g->lease) { /* nothing to store: the waiters benchmark for themselves */
        v8_lease_finish(g->lease, NULL, 0);
        g->lease = NULL;
    }
}

void v8_graph_ref(struct v8_graph *g) { g->refs++; }

void v8_graph_unref(struct v8_graph *g) {
    if (--g->refs > 0) return;
    v8_close_window(g);
    free(g->key);
    free(g);
}

/* ---- the cache's mode ---------------------------------------------------- */

/* strict_mode reports whether cache is in strict mode: a find of a key no
 * one stores is then CONVCACHE_E_MISS rather than a miss. Asked once per
 * handle, so that the library's rule for CONVCACHE_MODE stays its own. */
static int strict_mode(convcache_handle *cache) {
    static struct {
        convcache_handle *c;
        int strict;
    } known[16];
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&mu);
    for (int i = 0; i < 16; i++)
        if (known[i].c == cache) {
            int s = known[i].strict;
            pthread_mutex_unlock(&mu);
            return s;
        }
    pthread_mutex_unlock(&mu);
    static const char probe[] = "convcache-v8-mode-probe: a key nobody stores";
    unsigned char v[1];
    size_t len = 0;
    int s = V8_TIMED(V8T_CACHE, api.find(cache, probe, sizeof probe - 1, v, sizeof v, &len)) == CONVCACHE_E_MISS;
    pthread_mutex_lock(&mu);
    for (int i = 0; i < 16; i++)
        if (!known[i].c) {
            known[i].c = cache;
            known[i].strict = s;
            break;
        }
    pthread_mutex_unlock(&mu);
    return s;
}

/* ---- finalized graph ------------------------------------------------------ */

void v8_graph_finalized(void *desc) {
    unsigned char key[CONVCACHE_KEY_MAX];
    size_t key_len = 0;
    cudnnHandle_t handle = NULL;
    pthread_mutex_lock(&v8_mu);
    struct v8_shadow *s = v8_shadow_typed(desc, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    if (s) {
        s->finalized = 1;
        key_len = v8_key(s, key, sizeof key);
        handle = s->handle;
    }
    pthread_mutex_unlock(&v8_mu);
    if (!key_len) {
        if (s) COUNT_V8(v8_passthrough);
        return;
    }
    if (!V8_TIMED(V8T_SETUP, library_ready())) return;
    int dev = -1;
    convcache_handle *cache = V8_TIMED(V8T_SETUP, cache_for_handle(handle, &dev, NULL));
    if (!cache) return;

    struct v8_graph *g = calloc(1, sizeof *g);
    if (!g || !(g->key = malloc(key_len))) {
        free(g);
        return;
    }
    memcpy(g->key, key, key_len);
    g->key_len = key_len;
    g->cache = cache;
    g->candidate_idx = -1;
    unsigned char value[V8_VALUE_MAX];
    size_t len = 0;
    int rc = V8_TIMED(V8T_CACHE, api.find(cache, key, key_len, value, sizeof value, &len));
    if (rc == CONVCACHE_HIT) {
        if (v8_choices_decode(value, len, &g->stored) != 0) {
            COUNT(errors);
            warn_once(W_ENTRY, "ignoring a stored backend-API choice that fails the checks; "
                      "benchmarking again");
        }
        g->strict = strict_mode(cache);
    } else if (rc == CONVCACHE_E_MISS) {
        g->strict = 1;
    } else if (rc < 0) {
        COUNT(errors);
        warn_once(W_CACHE, "cache error (%s); backend-API graphs run uncached", api.last_error());
        free(g->key);
        free(g);
        return;
    }
    COUNT_V8(v8_graphs);
    if (log_enabled()) log_key("graph", g->stored.n ? "known" : "new", key, key_len);
    pthread_mutex_lock(&v8_mu);
    s = v8_shadow_typed(desc, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    if (s && !s->g) {
        g->refs = 1;
        s->g = g;
        v8_moved_on(g);
        g = NULL;
    }
    pthread_mutex_unlock(&v8_mu);
    if (g) {
        free(g->key);
        free(g);
    }
}

/* ---- heuristics ----------------------------------------------------------- */

/* The graph this thread leads a benchmark of. A thread that goes on to
 * another graph first lets go of that lease, storing nothing: otherwise a
 * thread waiting for another process's graph while leading one that
 * process waits for would stall both until the build timeout. */
static __thread struct v8_graph *leading_here;

void v8_heur_finalized(void *heur) {
    pthread_mutex_lock(&v8_mu);
    struct v8_shadow *h = v8_shadow_typed(heur, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    struct v8_graph *g = h ? h->g : NULL;
    if (h) h->finalized = 1;
    if (g) v8_moved_on(g);
    int take = g && g->phase == G_IDLE && g->stored.n == 0 && !g->stored.dropped && !g->strict && !g->lease_tried;
    struct v8_lease *left = NULL;
    if (take) {
        g->lease_tried = 1;
        v8_graph_ref(g);
        if (leading_here && leading_here != g) {
            left = leading_here->lease;
            leading_here->lease = NULL;
            v8_graph_unref(leading_here);
            leading_here = NULL;
        }
    }
    pthread_mutex_unlock(&v8_mu);
    if (left) v8_lease_finish(left, NULL, 0);
    if (!take) return;

    struct v8_lease *lease = NULL;
    unsigned char value[V8_VALUE_MAX];
    size_t len = 0;
    int got = v8_lease_take(g->cache, g->key, g->key_len, &lease, value, sizeof value, &len);
    struct v8_choices stored = {0};
    if (got == LEASE_VALUE && v8_choices_decode(value, len, &stored) != 0) got = LEASE_NONE;
    pthread_mutex_lock(&v8_mu);
    if (got == LEASE_LEAD) {
        if (g->refs > 1) {
            g->lease = lease;
            lease = NULL;
            v8_graph_ref(g);
            leading_here = g;
        }
    } else if (got == LEASE_VALUE) {
        g->stored = stored;
        COUNT_V8(v8_waited);
    }
    v8_graph_unref(g);
    pthread_mutex_unlock(&v8_mu);
    if (lease) v8_lease_finish(lease, NULL, 0); /* the graph went meanwhile */
}
