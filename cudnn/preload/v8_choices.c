/*
 * The value stored under a graph's key:
 *
 *   offset      size        field
 *        0         4        magic "CCV1" or "CCV2" (little-endian)
 *        4         4        n, 1..V8_MAX_CHOICES (0: see below)
 *        8     800 * n      n engine choices (convcache_engine.h), most
 *                           preferred first, each checked on its own:
 *                           what the engine config the host built the
 *                           plan from reads as (heuristics results are
 *                           matched against them)
 *   "CCV2" only:
 *   8+800n     8 * n        for each, what a plan of it reads as
 *                           (v8_choice_id), or 0 when the same as the
 *                           config: some cuDNN engines' plans read
 *                           otherwise than their configs
 *
 * A list whose plans all read as their configs is written as "CCV1", as
 * before "CCV2" existed. "CCV1" with n 0 and nothing after it says that
 * the choice last served failed in the host's run after timing
 * (v8_serve.c): the next process stands aside and benchmarks in full, and
 * its choice replaces the value. (An interposer older than this reads it
 * as damaged, and does the same.) A value that breaks any rule is ignored as a
 * whole: the graph is then benchmarked as if new, and the value replaced.
 */
#include <string.h>

#include "v8.h"

#define REC sizeof(convcache_engine_choice)

uint64_t v8_choice_id(const convcache_engine_choice *c) {
    /* FNV-1a over the engine and the knobs, never 0 (0 is "as the config"). */
    uint64_t h = 0xcbf29ce484222325ull;
    unsigned char b[24];
    uint32_t n = c->knob_count <= CONVCACHE_ENGINE_MAX_KNOBS ? c->knob_count : 0;
    memcpy(b, &c->engine, 8);
    memcpy(b + 8, &n, 4);
    for (int i = 0; i < 12; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    for (uint32_t k = 0; k < n; k++) {
        memcpy(b, &c->knobs[k].type, 4);
        memcpy(b + 4, &c->knobs[k].value, 8);
        for (int i = 0; i < 12; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    }
    return h ? h : 1;
}

int v8_choices_decode(const void *value, size_t len, struct v8_choices *out) {
    const unsigned char *p = value;
    memset(out, 0, sizeof *out);
    if (!p || len < 8) return -1;
    uint32_t magic, n;
    memcpy(&magic, p, 4);
    memcpy(&n, p + 4, 4);
    int ids = magic == V8_VALUE_MAGIC2;
    if (magic == V8_VALUE_MAGIC && n == 0 && len == 8) {
        out->dropped = 1;
        return 0;
    }
    if ((magic != V8_VALUE_MAGIC && !ids) || n < 1 || n > V8_MAX_CHOICES ||
        len != 8 + n * REC + (ids ? 8 * (size_t)n : 0))
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        if (convcache_engine_check(p + 8 + i * REC, REC, &out->c[i]) != CONVCACHE_ENGINE_OK) goto bad;
        for (uint32_t j = 0; j < i; j++)
            if (convcache_engine_same(&out->c[i], &out->c[j])) goto bad;
        if (ids) memcpy(&out->plan_id[i], p + 8 + n * REC + 8 * i, 8);
    }
    out->n = (int)n;
    return 0;
bad:
    memset(out, 0, sizeof *out);
    return -1;
}

size_t v8_choices_encode(const struct v8_choices *l, void *out, size_t cap) {
    if (l->n == 0 && l->dropped && cap >= 8) {
        uint32_t head[2] = {V8_VALUE_MAGIC, 0};
        memcpy(out, head, 8);
        return 8;
    }
    if (l->n < 1 || l->n > V8_MAX_CHOICES) return 0;
    int ids = 0;
    for (int i = 0; i < l->n; i++) ids |= l->plan_id[i] != 0;
    size_t need = 8 + (size_t)l->n * (REC + (ids ? 8 : 0));
    if (cap < need) return 0;
    unsigned char *p = out;
    uint32_t magic = ids ? V8_VALUE_MAGIC2 : V8_VALUE_MAGIC, n = (uint32_t)l->n;
    memcpy(p, &magic, 4);
    memcpy(p + 4, &n, 4);
    memcpy(p + 8, l->c, (size_t)l->n * REC);
    if (ids) memcpy(p + 8 + (size_t)l->n * REC, l->plan_id, 8 * (size_t)l->n);
    return need;
}

int v8_choices_find(const struct v8_choices *l, const convcache_engine_choice *c) {
    for (int i = 0; i < l->n; i++)
        if (convcache_engine_same(&l->c[i], c)) return i;
    return -1;
}

int v8_choice_runs(const convcache_engine_choice *c, uint64_t plan_id, const convcache_engine_choice *plan) {
    return plan_id ? v8_choice_id(plan) == plan_id : convcache_engine_same(c, plan);
}

void v8_choices_merge(const struct v8_choices *old, unsigned drop, const convcache_engine_choice *w,
                      uint64_t w_plan, struct v8_choices *out) {
    struct v8_choices r;
    memset(&r, 0, sizeof r);
    if (!w) { /* a choice that failed after timing: nothing is served next time */
        r.dropped = 1;
        *out = r;
        return;
    }
    /* Those the host could not build here stay ahead: where they are on
     * offer they won against w's kind before (or were never timed against
     * it), and the host's filters, not speed, kept them out this time. */
    for (int i = 0; i < old->n && r.n < V8_MAX_CHOICES - 1; i++) {
        if (drop & (1u << i) || convcache_engine_same(&old->c[i], w)) continue;
        r.plan_id[r.n] = old->plan_id[i];
        r.c[r.n++] = old->c[i];
    }
    r.plan_id[r.n] = w_plan;
    r.c[r.n++] = *w;
    *out = r;
}
