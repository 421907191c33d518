/*
 * Heuristics results with the stored choices first. The host builds a plan
 * for each config heuristics give it, in their order (after its own
 * filters), and times them in that order; moving the stored choices to the
 * front makes the first plan the host times the stored one when the host
 * keeps it, so that the interposer knows whether it runs before it refuses
 * any other plan's timing (v8_graph.c).
 *
 * The host's engine config descriptors are filled by cuDNN, not by the
 * interposer (it cannot copy one). So the results are read once into
 * scratch configs to learn which is which, and then a second time straight
 * into the host's configs, passed in the order that makes result i land in
 * the host's slot perm(i). The host gets exactly the configs heuristics
 * give, each once: only their order differs.
 */
#include <stdlib.h>
#include <string.h>

#include "v8.h"

#define MAX_HEUR_RESULTS 1024

/* identify reads which stored choice each of n configs is (-1: none). */
static void identify(const struct v8_choices *stored, void **cfg, int64_t n, int *which) {
    for (int64_t i = 0; i < n; i++) {
        convcache_engine_choice c;
        which[i] = cce_config_choice(cfg[i], &c, NULL) == CONVCACHE_ENGINE_OK ? v8_choices_find(stored, &c) : -1;
    }
}

cudnnStatus_t v8_reorder(struct v8_graph *g, void *heur, int64_t requested, int64_t *count,
                         void **elements) {
    const struct v8_real *r = v8_real();
    struct v8_choices stored;
    pthread_mutex_lock(&v8_mu);
    stored = g->stored;
    pthread_mutex_unlock(&v8_mu);

    int64_t n = 0;
    int *which = NULL, *order = NULL;
    void **scratch = NULL, **arr = NULL;
    int reordered = 0;
    if (stored.n > 0 && requested > 0 && requested <= MAX_HEUR_RESULTS &&
        (scratch = calloc((size_t)requested, sizeof *scratch)) &&
        (arr = calloc((size_t)requested, sizeof *arr)) &&
        (which = calloc((size_t)requested, sizeof *which)) &&
        (order = calloc((size_t)requested, sizeof *order))) {
        int64_t made = 0;
        while (made < requested &&
               r->create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &scratch[made]) == CUDNN_STATUS_SUCCESS)
            made++;
        if (made == requested &&
            r->get(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, requested, &n,
                   scratch) == CUDNN_STATUS_SUCCESS &&
            n >= 0 && n <= requested) {
            identify(&stored, scratch, n, which);
            /* order: the stored choices, in their order, then the rest. */
            int k = 0;
            for (int j = 0; j < stored.n; j++)
                for (int64_t i = 0; i < n; i++)
                    if (which[i] == j) {
                        order[k++] = (int)i;
                        break;
                    }
            for (int64_t i = 0; i < n; i++) {
                int taken = 0;
                for (int m = 0; m < k && !taken; m++) taken = order[m] == i;
                if (!taken) order[k++] = (int)i;
            }
            for (int64_t s = 0; s < requested; s++) arr[s] = elements[s];
            for (int64_t s = 0; s < n; s++) arr[order[s]] = elements[s];
            reordered = 1;
        }
        for (int64_t i = 0; i < made; i++) r->destroy(scratch[i]);
    }
    cudnnStatus_t st;
    if (reordered) {
        st = r->get(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, requested, count, arr);
        /* Heuristics answer the same twice; if this one did not, the host
         * still has every result, in an order we do not know. */
        if (st != CUDNN_STATUS_SUCCESS || *count != n) reordered = 0;
    } else {
        st = r->get(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, requested, count,
                    elements);
    }
    int64_t filled = st == CUDNN_STATUS_SUCCESS && count && *count > 0 ? *count : 0;
    if (filled > requested) filled = requested;
    pthread_mutex_lock(&v8_mu);
    if (st == CUDNN_STATUS_SUCCESS) g->heur_seen = 1;
    for (int64_t s = 0; s < filled; s++) {
        struct v8_shadow *c = v8_shadow_get(elements[s]);
        if (!c || c->type != CUDNN_BACKEND_ENGINECFG_DESCRIPTOR) continue;
        if (c->g != g) {
            if (c->g) v8_graph_unref(c->g);
            v8_graph_ref(g);
            c->g = g;
        }
        c->finalized = 1;
        c->stored = reordered ? which[order[s]] : -1;
        if (c->stored >= 0) g->offered |= 1u << c->stored;
    }
    pthread_mutex_unlock(&v8_mu);
    free(scratch);
    free(arr);
    free(which);
    free(order);
    return st;
}
