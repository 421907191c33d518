/*
 * The second reader of a finalized plan's engine and knobs (v8_check.c):
 * written apart from the engine code that stores them (cudnn/engine/plan.c),
 * so that a reading bug there cannot hide by being made twice. Where that
 * code asks for 16 knob choices, then for more when 16 came back full,
 * this asks for PR_MAX_KNOBS at once, and it sorts by knob type on its
 * own. The text: "eng=E t:v t:v ..." (knobs by type), or "unreadable (step)".
 */
#ifndef CONVCACHE_PLAN_READER_H
#define CONVCACHE_PLAN_READER_H

#include <stdio.h>
#include <stdlib.h>

#include "conv_graph.h"

#define PR_MAX_KNOBS 64

struct pr_knob {
    long long type, value;
};

static int pr_cmp(const void *a, const void *b) {
    const struct pr_knob *x = a, *y = b;
    return (x->type > y->type) - (x->type < y->type);
}

static inline void pr_read(const struct cg_api *a, cudnnBackendDescriptor_t plan, char *out, size_t cap) {
    cudnnBackendDescriptor_t cfg = NULL, eng = NULL, k[PR_MAX_KNOBS] = {0};
    struct pr_knob kv[PR_MAX_KNOBS];
    int64_t n = 0, e = -1, got = 0;
    const char *fail = NULL;
    int made = 0;
    if (a->create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfg) || a->create(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng))
        fail = "create";
    else if (a->get(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &cfg) ||
             n != 1)
        fail = "config";
    else if (a->get(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &eng) || n != 1 ||
             a->get(eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, &e) || n != 1)
        fail = "engine";
    while (!fail && made < PR_MAX_KNOBS && !a->create(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, &k[made])) made++;
    if (!fail && made < PR_MAX_KNOBS) fail = "create knobs";
    if (!fail && (a->get(cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR, PR_MAX_KNOBS, &got, k) ||
                  got < 0 || got > PR_MAX_KNOBS))
        fail = "knob choices";
    for (int64_t i = 0; !fail && i < got; i++) {
        cudnnBackendKnobType_t t;
        int64_t v = 0;
        if (a->get(k[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &n, &t) || n != 1 ||
            a->get(k[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1, &n, &v) || n != 1)
            fail = "knob";
        kv[i].type = (long long)t, kv[i].value = (long long)v;
    }
    for (int i = 0; i < made; i++) a->destroy(k[i]);
    if (eng) a->destroy(eng);
    if (cfg) a->destroy(cfg);
    if (fail) {
        snprintf(out, cap, "unreadable (%s)", fail);
        return;
    }
    qsort(kv, (size_t)got, sizeof kv[0], pr_cmp);
    int w = snprintf(out, cap, "eng=%lld", (long long)e);
    for (int64_t i = 0; i < got && w > 0 && (size_t)w < cap; i++)
        w += snprintf(out + w, cap - (size_t)w, " %lld:%lld", kv[i].type, kv[i].value);
}

#endif
