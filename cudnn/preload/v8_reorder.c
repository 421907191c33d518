/*
 * Heuristics results with the stored choices first. The host builds a plan
 * for each config heuristics give it, in their order (after its own
 * filters), and times them in that order; putting the stored choices in
 * front makes the first plan the host times the stored one when the host
 * keeps it, so that the interposer knows whether it runs before it refuses
 * any other plan's timing (v8_serve.c).
 *
 * The host's engine config descriptors are filled by cuDNN, not by the
 * interposer (it cannot copy one). So at a heuristics descriptor's first
 * results query its results are read once into scratch configs to learn
 * which is which, and then each fill goes straight into the host's
 * configs, passed in the order that makes result i land in the host's slot
 * perm(i). The host gets exactly the configs heuristics give, each once:
 * only their order differs.
 *
 * A stored choice that the fallback list offers and these results do not
 * (the host's choice came from its fallback list) would be timed after all
 * of them. Then the results get one more config in front: the interposer
 * reads the fallback list itself and fills the host's first config with
 * that choice, and answers the count query with one more. The host gets
 * every config heuristics give, plus one the fallback list gives it again
 * later (the fallback list repeats heuristics configs anyway).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "v8.h"

#define MAX_HEUR_RESULTS 1024

struct v8_heur_plan {
    int64_t n;        /* the results heuristics fill (at most their count) */
    int64_t counted;  /* what their count query answered */
    int *which;       /* each result's stored index, -1 */
    void *fb;         /* our fallback heuristics, when a choice comes from there */
    int64_t fb_index; /* which of its results */
    int fb_which;     /* and which stored choice that is */
    int unreadable;   /* results whose choice could not be read */
};

void v8_heur_plan_free(struct v8_heur_plan *hp) {
    if (!hp) return;
    if (hp->fb) v8_real()->destroy(hp->fb);
    free(hp->which);
    free(hp);
}

/* identify reads which stored choice each of n configs is (-1: none);
 * returns how many could not be read. A config's engine is read first,
 * and its knobs only when a stored choice runs that engine. */
static int identify(const struct v8_choices *stored, void **cfg, int64_t n, int *which) {
    int unreadable = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t engine;
        int ok = cce_config_engine(cfg[i], &engine) == CONVCACHE_ENGINE_OK, known = 0;
        for (int j = 0; ok && j < stored->n && !known; j++) known = stored->c[j].engine == engine;
        convcache_engine_choice c;
        if (known) ok = cce_config_choice(cfg[i], &c, NULL) == CONVCACHE_ENGINE_OK;
        which[i] = ok && known ? v8_choices_find(stored, &c) : -1;
        unreadable += !ok;
    }
    return unreadable;
}

/* read_results reads heur's results into fresh scratch configs and says
 * which stored choice each is (and how many could not be read, into
 * *unreadable unless NULL; what the count query answered into *counted
 * unless NULL); returns how many were filled, or -1. Heuristics may fill
 * fewer than their count query answers (cudnn_frontend trims its list to
 * what was filled): the filled ones are the results. */
static int64_t read_results(void *heur, const struct v8_choices *stored, int **which, int *unreadable,
                            int64_t *counted) {
    const struct v8_real *r = v8_real();
    int64_t n = -1, got = -1;
    *which = NULL;
    if (r->get(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &n, NULL) !=
            CUDNN_STATUS_SUCCESS || n < 0 || n > MAX_HEUR_RESULTS)
        return -1;
    if (counted) *counted = n;
    void **scratch = calloc((size_t)n + 1, sizeof *scratch);
    *which = calloc((size_t)n + 1, sizeof **which);
    int64_t made = 0;
    while (scratch && made < n && r->create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &scratch[made]) == CUDNN_STATUS_SUCCESS)
        made++;
    int filled = *which && made == n &&
                 (n == 0 || (r->get(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, n, &got,
                                    scratch) == CUDNN_STATUS_SUCCESS && got >= 0 && got <= n));
    if (filled) {
        if (n > 0) n = got;
        int u = identify(stored, scratch, n, *which);
        if (unreadable) *unreadable = u;
    } else {
        n = -1;
    }
    for (int64_t i = 0; i < made; i++) r->destroy(scratch[i]);
    free(scratch);
    if (n < 0) {
        free(*which);
        *which = NULL;
    }
    return n;
}

/* fallback_for makes heuristics of the fallback mode for graph, and finds
 * the first stored choice among their results (sets hp->fb...). */
static void fallback_for(void *graph, const struct v8_choices *stored, struct v8_heur_plan *hp) {
    const struct v8_real *r = v8_real();
    void *fb = NULL;
    cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_FALLBACK;
    int *which = NULL;
    if (!graph || r->create(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &fb) != CUDNN_STATUS_SUCCESS) return;
    int64_t m = -1;
    if (r->set(fb, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph) ==
            CUDNN_STATUS_SUCCESS &&
        r->set(fb, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode) == CUDNN_STATUS_SUCCESS &&
        r->finalize(fb) == CUDNN_STATUS_SUCCESS)
        m = read_results(fb, stored, &which, NULL, NULL);
    for (int j = 0; j < stored->n && !hp->fb; j++)
        for (int64_t i = 0; i < m; i++)
            if (which[i] == j) {
                hp->fb = fb;
                hp->fb_index = i;
                hp->fb_which = j;
                break;
            }
    if (!hp->fb) r->destroy(fb);
    free(which);
}

/* make_plan works out how heur's results are given to the host. */
static struct v8_heur_plan *make_plan(void *heur, void *graph, int mode, const struct v8_choices *stored) {
    struct v8_heur_plan *hp = calloc(1, sizeof *hp);
    if (!hp) return NULL;
    hp->n = read_results(heur, stored, &hp->which, &hp->unreadable, &hp->counted);
    if (hp->n < 0) {
        v8_heur_plan_free(hp);
        return NULL;
    }
    int found = 0;
    for (int64_t i = 0; i < hp->n && !found; i++) found = hp->which[i] >= 0;
    if (!found && mode != CUDNN_HEUR_MODE_FALLBACK) fallback_for(graph, stored, hp);
    return hp;
}

/* order_first puts, for a host that takes the first k results, the stored
 * choices among them first (in the stored order), then the rest in cuDNN's
 * order: order[s] is the result that lands in the host's slot s. A host
 * that asks for fewer results than there are gets the same ones as
 * without convcache, only in another order. */
static void order_first(const struct v8_heur_plan *hp, int nstored, int64_t k, int *order) {
    int64_t m = 0;
    for (int j = 0; j < nstored; j++)
        for (int64_t i = 0; i < k; i++)
            if (hp->which[i] == j) {
                order[m++] = (int)i;
                break;
            }
    for (int64_t i = 0; i < k; i++)
        if (hp->which[i] < 0 || hp->which[i] >= nstored) order[m++] = (int)i;
}

/* fill_front fills the host's first config with hp's fallback choice. */
static cudnnStatus_t fill_front(struct v8_heur_plan *hp, void *host) {
    const struct v8_real *r = v8_real();
    int64_t want = hp->fb_index + 1, got = 0, made = 0;
    void **arr = calloc((size_t)want, sizeof *arr);
    cudnnStatus_t st = arr ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_INTERNAL_ERROR;
    while (st == CUDNN_STATUS_SUCCESS && made < hp->fb_index)
        st = r->create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &arr[made++]);
    if (st == CUDNN_STATUS_SUCCESS) {
        arr[hp->fb_index] = host;
        st = r->get(hp->fb, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, want, &got, arr);
        if (st == CUDNN_STATUS_SUCCESS && got != want) st = CUDNN_STATUS_INTERNAL_ERROR;
    }
    for (int64_t i = 0; i < made && i < hp->fb_index; i++)
        if (arr[i]) r->destroy(arr[i]);
    free(arr);
    return st;
}

cudnnStatus_t v8_reorder(struct v8_graph *g, void *heur, int64_t requested, int64_t *count,
                         void **elements) {
    const struct v8_real *r = v8_real();
    pthread_mutex_lock(&v8_mu);
    struct v8_choices stored = g->stored;
    struct v8_shadow *h = v8_shadow_typed(heur, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    struct v8_heur_plan *hp = h ? h->heur_plan : NULL;
    void *graph = h ? h->graph_desc : NULL;
    int mode = h ? h->heur_mode : -1;
    pthread_mutex_unlock(&v8_mu);

    if (!hp && stored.n > 0) {
        hp = V8_TIMED(V8T_HEUR_OURS, make_plan(heur, graph, mode, &stored));
        pthread_mutex_lock(&v8_mu);
        h = v8_shadow_typed(heur, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
        struct v8_heur_plan *mine = hp;
        if (h && !h->heur_plan) {
            h->heur_plan = hp;
            mine = NULL;
        } else if (h) {
            hp = h->heur_plan; /* another thread's, first */
        }
        pthread_mutex_unlock(&v8_mu);
        if (mine) {
            if (!h) hp = NULL;
            v8_heur_plan_free(mine);
        }
    }
    int front = hp && hp->fb ? 1 : 0;

    if (requested == 0) { /* the count: one more for the config in front */
        cudnnStatus_t st = r->get(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, count,
                                  elements);
        if (st == CUDNN_STATUS_SUCCESS && count && front) *count += 1;
        return st;
    }
    if (front && (requested < hp->n + 1 || V8_TIMED(V8T_HEUR_OURS, fill_front(hp, elements[0])) != CUDNN_STATUS_SUCCESS))
        front = 0;
    void **host = elements + front;
    int64_t room = requested - front;
    int64_t k = hp ? (room < hp->n ? room : hp->n) : 0;
    void **arr = hp && k > 0 ? calloc((size_t)room, sizeof *arr) : NULL;
    int *order = arr ? calloc((size_t)k, sizeof *order) : NULL;
    int reordered = order != NULL;
    cudnnStatus_t st;
    if (reordered) {
        order_first(hp, stored.n, k, order);
        for (int64_t s = 0; s < room; s++) arr[s] = host[s];
        for (int64_t s = 0; s < k; s++) arr[order[s]] = host[s];
        st = r->get(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, room, count, arr);
        /* Heuristics answer the same each time; if these did not, the
         * host still has every result, in an order we do not know. */
        if (st != CUDNN_STATUS_SUCCESS || !count || *count != k) reordered = 0;
    } else {
        st = r->get(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, room, count, host);
    }
    free(arr);
    if (st == CUDNN_STATUS_SUCCESS && count) *count += front;
    int64_t filled = st == CUDNN_STATUS_SUCCESS && count && *count > 0 ? *count : 0;
    if (filled > requested) filled = requested;
    int why = stored.n == 0 || st != CUDNN_STATUS_SUCCESS || reordered || front ? 0
              : !hp ? V8_REORDER_UNREAD : k > 0 ? V8_REORDER_CHANGED : 0;
    if (why && log_enabled()) {
        char detail[160];
        snprintf(detail, sizeof detail, "(count %lld, filled %lld, the host asked for %lld and got %lld)",
                 hp ? (long long)hp->counted : -1LL, hp ? (long long)hp->n : -1LL, (long long)requested,
                 count ? (long long)*count : -1LL);
        log_key(why == V8_REORDER_UNREAD ? "heuristics results could not be read ahead"
                                         : "heuristics results changed between reads",
                detail, g->key, g->key_len);
    }

    pthread_mutex_lock(&v8_mu);
    if (st == CUDNN_STATUS_SUCCESS) g->heur_seen = 1;
    /* For the log, should the graph stand aside (v8_serve.c). */
    if (hp && hp->unreadable) g->heur_unreadable = 1;
    if (why) g->reorder_skipped = why;
    for (int64_t s = 0; s < filled; s++) {
        struct v8_shadow *c = v8_shadow_get(elements[s]);
        if (!c || c->type != CUDNN_BACKEND_ENGINECFG_DESCRIPTOR) continue;
        if (c->g != g) {
            if (c->g) v8_graph_unref(c->g);
            v8_graph_ref(g);
            c->g = g;
        }
        c->finalized = 1;
        c->stored = front && s == 0 ? hp->fb_which : reordered && s - front < k ? hp->which[order[s - front]] : -1;
        if (c->stored >= 0) g->offered |= 1u << c->stored;
    }
    pthread_mutex_unlock(&v8_mu);
    free(order);
    return st;
}
