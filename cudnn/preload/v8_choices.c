/*
 * The value stored under a graph's key:
 *
 *   offset  size        field
 *        0     4        magic "CCV1" (V8_VALUE_MAGIC, little-endian)
 *        4     4        n, 1..V8_MAX_CHOICES
 *        8   800 * n    n engine choices (convcache_engine.h), most
 *                       preferred first, each checked on its own
 *
 * A value that breaks any rule is ignored as a whole: the graph is then
 * benchmarked as if new, and the value replaced.
 */
#include <string.h>

#include "v8.h"

#define REC sizeof(convcache_engine_choice)

int v8_choices_decode(const void *value, size_t len, struct v8_choices *out) {
    const unsigned char *p = value;
    memset(out, 0, sizeof *out);
    if (!p || len < 8) return -1;
    uint32_t magic, n;
    memcpy(&magic, p, 4);
    memcpy(&n, p + 4, 4);
    if (magic != V8_VALUE_MAGIC || n < 1 || n > V8_MAX_CHOICES || len != 8 + n * REC) return -1;
    for (uint32_t i = 0; i < n; i++) {
        if (convcache_engine_check(p + 8 + i * REC, REC, &out->c[i]) != CONVCACHE_ENGINE_OK) goto bad;
        for (uint32_t j = 0; j < i; j++)
            if (convcache_engine_same(&out->c[i], &out->c[j])) goto bad;
    }
    out->n = (int)n;
    return 0;
bad:
    memset(out, 0, sizeof *out);
    return -1;
}

size_t v8_choices_encode(const struct v8_choices *l, void *out, size_t cap) {
    size_t need = 8 + (size_t)l->n * REC;
    if (l->n < 1 || l->n > V8_MAX_CHOICES || cap < need) return 0;
    unsigned char *p = out;
    uint32_t magic = V8_VALUE_MAGIC, n = (uint32_t)l->n;
    memcpy(p, &magic, 4);
    memcpy(p + 4, &n, 4);
    memcpy(p + 8, l->c, (size_t)l->n * REC);
    return need;
}

int v8_choices_find(const struct v8_choices *l, const convcache_engine_choice *c) {
    for (int i = 0; i < l->n; i++)
        if (convcache_engine_same(&l->c[i], c)) return i;
    return -1;
}

void v8_choices_merge(const struct v8_choices *old, unsigned drop, const convcache_engine_choice *w,
                      struct v8_choices *out) {
    struct v8_choices r = {0};
    /* Those the host could not build here stay ahead: where they are on
     * offer they won against w's kind before (or were never timed against
     * it), and the host's filters, not speed, kept them out this time. */
    for (int i = 0; i < old->n && r.n < V8_MAX_CHOICES - 1; i++) {
        if (drop & (1u << i) || convcache_engine_same(&old->c[i], w)) continue;
        r.c[r.n++] = old->c[i];
    }
    r.c[r.n++] = *w;
    *out = r;
}
