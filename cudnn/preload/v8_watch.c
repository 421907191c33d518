/*
 * The execute filter: which plans' executes the interposer must look at.
 *
 * An execute is the one call a warm host makes over and over, so it must
 * not take v8_mu, nor look a shadow up, unless that plan needs it: a plan
 * of a graph being benchmarked (the first execute of each plan decides
 * serving, refusing, learning), a deferred plan (finalized in cuDNN before
 * it first runs) or a blocked one (its deferred finalize failed). Those
 * plans are counted in a table of slots by address; an execute whose slot
 * is 0 goes straight to cuDNN. Slots are only ever nonzero for a plan from
 * before the host could run it (the plan's finalize puts it in) until it
 * needs no look (taken out under v8_mu), so a 0 is always right; a nonzero
 * slot shared with another plan only sends that plan the slow way, where
 * it is found not to need anything.
 */
#include "v8.h"

unsigned v8_watch_slots[1u << V8_WATCH_BITS];

void v8_watch(struct v8_shadow *p) {
    if (p->watched) return;
    p->watched = 1;
    __atomic_fetch_add(&v8_watch_slots[v8_watch_slot(p->desc)], 1, __ATOMIC_RELEASE);
}

void v8_unwatch(struct v8_shadow *p) {
    if (!p->watched) return;
    p->watched = 0;
    __atomic_fetch_sub(&v8_watch_slots[v8_watch_slot(p->desc)], 1, __ATOMIC_RELEASE);
}

/* needs_look reports whether an execute of plan p must be decided. */
static int needs_look(const struct v8_shadow *p) {
    if (p->deferred || p->blocked != CUDNN_STATUS_SUCCESS) return 1;
    const struct v8_graph *g = p->g;
    if (!p->finalized || !v8_graph_open(g)) return 0;
    switch (g->phase) {
    case G_IDLE:
        return 1;
    case G_SERVING:
        /* The candidate's run in earnest, and the first execute of every
         * other plan (refused while the host times the candidate). */
        return p->desc == g->candidate || (p->ok_runs == 0 && p->refused == 0);
    default: /* learning the host's choice: every execute counts */
        return 1;
    }
}

void v8_watch_update(struct v8_shadow *p) {
    if (needs_look(p)) v8_watch(p);
    else v8_unwatch(p);
}
