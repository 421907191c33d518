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
#include <stdlib.h>
#include <string.h>

#include "v8.h"

#define MAX_HEUR_RESULTS 1024

struct v8_heur_plan {
    int64_t n;        /* the real results' count */
    int *which;       /* each result's stored index, -1 */
    int *order;       /* the result for each of the host's slots */
    void *fb;         /* our fallback heuristics, when a choice comes from there */
    int64_t fb_index; /* which of its results */
    int fb_which;     /* and which stored choice that is */
    int unreadable;   /* results whose choice could not be read */
};

void v8_heur_plan_free(struct v8_heur_plan *hp) {
    if (!hp) return;
    if (hp->fb) v8_real()->destroy(hp->fb);
    free(hp->which);
    free(hp->order);
    free(hp);
}

/* identify reads which stored choice each of n configs is (-1: none);
 * returns how many could not be read. */
static int identify(const struct v8_choices *stored, void **cfg, int64_t n, int *which) {
    int unreadable = 0;
    for (int64_t i = 0; i < n; i++) {
        convcache_engine_choice c;
        int ok = cce_config_choice(cfg[i], &c, NULL) == CONVCACHE_ENGINE_OK;
        which[i] = ok ? v8_choices_find(stored, &c) : -1;
        unreadable += !ok;
    }
    return unreadable;
}

/* read_results reads heur's results into fresh scratch configs and says
 * which stored choice each is (and how many could not be read, into
 * *unreadable unless NULL); returns their count, or -1. */
static int64_t read_results(void *heur, const struct v8_choices *stored, int **which, int *unreadable) {
    const struct v8_real *r = v8_real();
    int64_t n = -1, got = -1;
    *which = NULL;
    if (r->get(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &n, NULL) !=
            CUDNN_STATUS_SUCCESS || n < 0 || n > MAX_HEUR_RESULTS)
        return -1;
    void **scratch = calloc((size_t)n + 1, sizeof *scratch);
    *which = calloc((size_t)n + 1, sizeof **which);
    int64_t made = 0;
    while (scratch && made < n && r->create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &scratch[made]) == CUDNN_STATUS_SUCCESS)
        made++;
    int filled = *which && made == n &&
                 (n == 0 || (r->get(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, n, &got,
                                    scratch) == CUDNN_STATUS_SUCCESS && got == n));
    if (filled) {
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
        m = read_results(fb, stored, &which, NULL);
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
    hp->n = read_results(heur, stored, &hp->which, &hp->unreadable);
    if (hp->n < 0 || !(hp->order = calloc((size_t)hp->n + 1, sizeof *hp->order))) {
        v8_heur_plan_free(hp);
        return NULL;
    }
    /* The stored choices, in their order, then the rest. */
    int64_t k = 0;
    int found = 0;
    for (int j = 0; j < stored->n; j++)
        for (int64_t i = 0; i < hp->n; i++)
            if (hp->which[i] == j) {
                hp->order[k++] = (int)i;
                found = 1;
                break;
            }
    for (int64_t i = 0; i < hp->n; i++) {
        int taken = 0;
        for (int64_t m = 0; m < k && !taken; m++) taken = hp->order[m] == i;
        if (!taken) hp->order[k++] = (int)i;
    }
    if (!found && mode != CUDNN_HEUR_MODE_FALLBACK) fallback_for(graph, stored, hp);
    return hp;
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
        hp = make_plan(heur, graph, mode, &stored);
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
    if (front && (requested < hp->n + 1 || fill_front(hp, elements[0]) != CUDNN_STATUS_SUCCESS)) front = 0;
    void **host = elements + front;
    int64_t room = requested - front;
    int reordered = hp && room >= hp->n;
    void **arr = reordered ? calloc((size_t)room, sizeof *arr) : NULL;
    cudnnStatus_t st;
    if (arr) {
        for (int64_t s = 0; s < room; s++) arr[s] = host[s];
        for (int64_t s = 0; s < hp->n; s++) arr[hp->order[s]] = host[s];
        st = r->get(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, room, count, arr);
        /* Heuristics answer the same each time; if these did not, the
         * host still has every result, in an order we do not know. */
        if (st != CUDNN_STATUS_SUCCESS || !count || *count != hp->n) reordered = 0;
        free(arr);
    } else {
        reordered = 0;
        st = r->get(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, room, count, host);
    }
    if (st == CUDNN_STATUS_SUCCESS && count) *count += front;
    int64_t filled = st == CUDNN_STATUS_SUCCESS && count && *count > 0 ? *count : 0;
    if (filled > requested) filled = requested;

    pthread_mutex_lock(&v8_mu);
    if (st == CUDNN_STATUS_SUCCESS) g->heur_seen = 1;
    /* For the log, should the graph stand aside (v8_serve.c). */
    if (hp && hp->unreadable) g->heur_unreadable = 1;
    if (stored.n > 0 && st == CUDNN_STATUS_SUCCESS && !reordered && !front) g->reorder_skipped = 1;
    for (int64_t s = 0; s < filled; s++) {
        struct v8_shadow *c = v8_shadow_get(elements[s]);
        if (!c || c->type != CUDNN_BACKEND_ENGINECFG_DESCRIPTOR) continue;
        if (c->g != g) {
            if (c->g) v8_graph_unref(c->g);
            v8_graph_ref(g);
            c->g = g;
        }
        c->finalized = 1;
        c->stored = front && s == 0 ? hp->fb_which : reordered ? hp->which[hp->order[s - front]] : -1;
        if (c->stored >= 0) g->offered |= 1u << c->stored;
    }
    pthread_mutex_unlock(&v8_mu);
    return st;
}
