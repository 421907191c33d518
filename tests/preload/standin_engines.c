/*
 * The stand-in cuDNN's engines: which operations each runs, its knobs (type,
 * range, stride), its workspace, its simulated run time, and heuristics that
 * rank them. Execution writes an output that depends only on the engine, its
 * knob choices and the input bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "standin_backend.h"

enum { FWD = 1, BWD_DATA = 2, BWD_FILTER = 4 };

struct knob_def {
    int type;
    int64_t lo, hi, stride;
};
static const struct engine_def {
    int ops, nknobs;
    struct knob_def knobs[2];
} engines[] = {
    {FWD | BWD_DATA | BWD_FILTER, 0, {{0}}},
    {FWD | BWD_DATA | BWD_FILTER, 2, {{CUDNN_KNOB_TYPE_TILE_SIZE, 0, 3, 1}, {CUDNN_KNOB_TYPE_STAGES, 1, 4, 1}}},
    {FWD | BWD_FILTER, 2, {{CUDNN_KNOB_TYPE_SPLIT_K_SLC, 1, 8, 1}, {CUDNN_KNOB_TYPE_TILEK, 0, 2, 1}}},
    {FWD | BWD_DATA | BWD_FILTER, 1, {{CUDNN_KNOB_TYPE_SWIZZLE, 0, 1, 1}}},
    {FWD, 2, {{CUDNN_KNOB_TYPE_TILE_SIZE, 0, 6, 2}, {CUDNN_KNOB_TYPE_EDGE, 0, 1, 1}}},
    {FWD | BWD_DATA | BWD_FILTER, 1, {{CUDNN_KNOB_TYPE_STAGES, 2, 8, 2}}},
};
#define N_ENGINES ((int)(sizeof engines / sizeof engines[0]))

static long long env_ll(const char *name, long long def) {
    const char *v = getenv(name);
    return v && *v ? atoll(v) : def;
}

int sb_engine_count(void) {
    long long n = env_ll("STANDIN_ENGINE_COUNT", N_ENGINES);
    return n < 0 ? 0 : n > N_ENGINES ? N_ENGINES : (int)n;
}

static uint64_t mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    h *= 0xBF58476D1CE4E5B9ull;
    return h ^ (h >> 31);
}

const struct desc *sb_graph_op(const struct desc *graph) {
    return graph ? sb_sub(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, 0) : NULL;
}

static int op_kind(const struct desc *op) {
    if (!op) return 0;
    switch (op->type) {
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR: return FWD;
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR: return BWD_DATA;
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR: return BWD_FILTER;
    }
    return 0;
}

/* The three tensors of an operation: inputs a, b and the output. */
static void op_tensors(const struct desc *op, const struct desc **a, const struct desc **b,
                       const struct desc **out) {
    switch (op_kind(op)) {
    case FWD: *a = sb_sub(op, 704, 0), *b = sb_sub(op, 703, 0), *out = sb_sub(op, 705, 0); return;
    case BWD_DATA: *a = sb_sub(op, 709, 0), *b = sb_sub(op, 711, 0), *out = sb_sub(op, 710, 0); return;
    default: *a = sb_sub(op, 716, 0), *b = sb_sub(op, 717, 0), *out = sb_sub(op, 715, 0); return;
    }
}

/* tensor_bytes is the span of a tensor in memory. */
static size_t tensor_bytes(const struct desc *t) {
    const struct attr *d = sb_attr(t, CUDNN_ATTR_TENSOR_DIMENSIONS), *s = sb_attr(t, CUDNN_ATTR_TENSOR_STRIDES);
    int64_t dt = sb_int(t, CUDNN_ATTR_TENSOR_DATA_TYPE, 0);
    size_t elem = dt == CUDNN_DATA_DOUBLE ? 8 : dt == CUDNN_DATA_HALF || dt == CUDNN_DATA_BFLOAT16 ? 2 : 4;
    size_t last = 0;
    for (int64_t i = 0; i < d->count; i++)
        last += (size_t)(((int64_t *)d->data)[i] - 1) * (size_t)((int64_t *)s->data)[i];
    return (last + 1) * elem;
}

/* shape_hash: the operation and its tensors' shapes. */
static uint64_t shape_hash(const struct desc *op) {
    const struct desc *t[3];
    op_tensors(op, &t[0], &t[1], &t[2]);
    uint64_t h = mix(0x5eed, (uint64_t)op->type);
    for (int i = 0; i < 3; i++) {
        const struct attr *d = sb_attr(t[i], CUDNN_ATTR_TENSOR_DIMENSIONS);
        for (int64_t j = 0; j < d->count; j++) h = mix(h, (uint64_t)((int64_t *)d->data)[j]);
    }
    return h;
}

static struct desc *temp(int type) {
    struct desc *d = calloc(1, sizeof *d);
    if (!d) abort();
    d->type = type;
    return d;
}

cudnnStatus_t sb_engine_finalize(struct desc *e) {
    int64_t idx = sb_int(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, -1);
    const struct desc *op = sb_graph_op(sb_sub(e, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, 0));
    if (!op) return CUDNN_STATUS_BAD_PARAM;
    if (idx < 0 || idx >= sb_engine_count() || !(engines[idx].ops & op_kind(op))) return CUDNN_STATUS_NOT_SUPPORTED;
    const struct engine_def *def = &engines[idx];
    struct desc *info[2];
    for (int i = 0; i < def->nknobs; i++) {
        const struct knob_def *k = &def->knobs[i];
        info[i] = temp(CUDNN_BACKEND_KNOB_INFO_DESCRIPTOR);
        info[i]->finalized = 1;
        int32_t type = k->type;
        sb_put(info[i], CUDNN_ATTR_KNOB_INFO_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &type);
        sb_put(info[i], CUDNN_ATTR_KNOB_INFO_MINIMUM_VALUE, CUDNN_TYPE_INT64, 1, &k->lo);
        sb_put(info[i], CUDNN_ATTR_KNOB_INFO_MAXIMUM_VALUE, CUDNN_TYPE_INT64, 1, &k->hi);
        sb_put(info[i], CUDNN_ATTR_KNOB_INFO_STRIDE, CUDNN_TYPE_INT64, 1, &k->stride);
    }
    cudnnStatus_t st = sb_put(e, CUDNN_ATTR_ENGINE_KNOB_INFO, CUDNN_TYPE_BACKEND_DESCRIPTOR, def->nknobs, info);
    for (int i = 0; i < def->nknobs; i++) sb_free_copy(info[i]);
    return st;
}

/* config_parts: a finalized config's engine index, graph operation and
 * knob choices (type, value), up to cap. */
static int config_parts(const struct desc *cfg, int64_t *idx, const struct desc **op, int64_t (*knobs)[2],
                        int cap) {
    const struct desc *e = sb_sub(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, 0);
    *idx = sb_int(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, -1);
    *op = sb_graph_op(sb_sub(e, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, 0));
    const struct attr *a = sb_attr(cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES);
    int n = a ? (int)a->count : 0;
    for (int i = 0; i < n && i < cap; i++) {
        const struct desc *k = ((struct desc *const *)a->data)[i];
        knobs[i][0] = sb_int(k, CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, -1);
        knobs[i][1] = sb_int(k, CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, 0);
    }
    return n;
}

cudnnStatus_t sb_config_finalize(struct desc *cfg) {
    int64_t idx, knobs[MAX_ELEMS][2];
    const struct desc *op;
    int n = config_parts(cfg, &idx, &op, knobs, MAX_ELEMS);
    if (idx < 0 || idx >= N_ENGINES || !op) return CUDNN_STATUS_BAD_PARAM;
    const struct engine_def *def = &engines[idx];
    int64_t ws = 0;
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < i; j++)
            if (knobs[j][0] == knobs[i][0]) return CUDNN_STATUS_BAD_PARAM;
        const struct knob_def *k = NULL;
        for (int j = 0; j < def->nknobs; j++)
            if (def->knobs[j].type == knobs[i][0]) k = &def->knobs[j];
        int64_t v = knobs[i][1];
        if (!k || v < k->lo || v > k->hi || (v - k->lo) % k->stride) return CUDNN_STATUS_NOT_SUPPORTED;
        ws += v * 4096;
    }
    if (idx == 2) ws *= 16; /* split-K keeps partial sums */
    return sb_put(cfg, CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &ws);
}

cudnnStatus_t sb_plan_finalize(struct desc *plan) {
    long long fail = env_ll("STANDIN_PLAN_STATUS", 0);
    if (fail) return (cudnnStatus_t)fail;
    const struct attr *h = sb_attr(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE);
    if (!*(void *const *)h->data) return CUDNN_STATUS_BAD_PARAM;
    struct desc *cfg = (struct desc *)sb_sub(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, 0);
    /* A cuDNN that quietly runs something else than it was asked to. */
    const char *sub = getenv("STANDIN_SUBSTITUTE");
    if (sub && !strcmp(sub, "engine")) {
        struct desc *e = (struct desc *)sb_sub(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, 0);
        struct attr *a = (struct attr *)sb_attr(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX);
        ((int64_t *)a->data)[0] = (((int64_t *)a->data)[0] + 1) % N_ENGINES;
    } else if (sub && !strcmp(sub, "knob")) {
        const struct desc *k = sb_sub(cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, 0);
        if (k) ((int64_t *)sb_attr(k, CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE)->data)[0] ^= 1;
    }
    int64_t ws = sb_int(cfg, CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE, 0);
    return sb_put(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &ws);
}

/* Heuristics: every engine that runs the operation, in an order that
 * depends on the shape, each with knob choices that do too (FALLBACK: the
 * plain engine 0 only). */
cudnnStatus_t sb_heur_finalize(struct desc *heur) {
    const struct desc *graph = sb_sub(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, 0);
    const struct desc *op = sb_graph_op(graph);
    if (!op) return CUDNN_STATUS_BAD_PARAM;
    int64_t mode = sb_int(heur, CUDNN_ATTR_ENGINEHEUR_MODE, 0);
    uint64_t h = shape_hash(op);
    struct desc *cfgs[N_ENGINES];
    int n = 0, count = sb_engine_count();
    for (int r = 0; r < N_ENGINES; r++) {
        int64_t idx = (int64_t)((h + (uint64_t)r) % N_ENGINES);
        if (mode == CUDNN_HEUR_MODE_FALLBACK) idx = r;
        if (idx >= count || !(engines[idx].ops & op_kind(op)) || (mode == CUDNN_HEUR_MODE_FALLBACK && idx)) continue;
        struct desc *e = temp(CUDNN_BACKEND_ENGINE_DESCRIPTOR), *k[2];
        sb_put(e, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph);
        sb_put(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &idx);
        sb_engine_finalize(e);
        e->finalized = 1;
        struct desc *c = temp(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
        sb_put(c, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &e);
        const struct engine_def *def = &engines[idx];
        for (int i = 0; i < def->nknobs; i++) {
            const struct knob_def *kd = &def->knobs[i];
            int32_t type = kd->type;
            int64_t steps = (kd->hi - kd->lo) / kd->stride + 1;
            int64_t v = kd->lo + kd->stride * (int64_t)(mix(h, (uint64_t)(idx * 8 + i)) % (uint64_t)steps);
            k[i] = temp(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR);
            k[i]->finalized = 1;
            sb_put(k[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &type);
            sb_put(k[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1, &v);
        }
        sb_put(c, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR, def->nknobs, k);
        sb_config_finalize(c);
        c->finalized = 1;
        cfgs[n++] = c;
        sb_free_copy(e);
        for (int i = 0; i < def->nknobs; i++) sb_free_copy(k[i]);
    }
    cudnnStatus_t st = sb_put(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, n, cfgs);
    for (int i = 0; i < n; i++) sb_free_copy(cfgs[i]);
    return st;
}

/* ---- execution ------------------------------------------------------------ */

static const void *pointer_of(const struct desc *pack, const struct desc *t) {
    int64_t uid = sb_int(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, -1);
    const struct attr *u = sb_attr(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS);
    const struct attr *p = sb_attr(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS);
    for (int64_t i = 0; i < u->count; i++)
        if (((int64_t *)u->data)[i] == uid) return ((void *const *)p->data)[i];
    return NULL;
}

cudnnStatus_t sb_prepare_run(const struct desc *plan, const struct desc *pack, struct sb_run *run) {
    const struct desc *cfg = sb_sub(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, 0), *op, *a, *b, *out;
    int64_t idx, knobs[MAX_ELEMS][2];
    int n = config_parts(cfg, &idx, &op, knobs, MAX_ELEMS);
    if (!op) return CUDNN_STATUS_BAD_PARAM;
    op_tensors(op, &a, &b, &out);
    memset(run, 0, sizeof *run);
    run->in[0] = pointer_of(pack, a);
    run->in[1] = pointer_of(pack, b);
    run->out = (void *)pointer_of(pack, out);
    const struct attr *ws = sb_attr(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE);
    int have_ws = ws && *(void *const *)ws->data;
    if (!run->in[0] || !run->in[1] || !run->out ||
        (sb_int(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, 0) > 0 && !have_ws))
        return CUDNN_STATUS_BAD_PARAM;
    run->in_bytes[0] = tensor_bytes(a);
    run->in_bytes[1] = tensor_bytes(b);
    run->out_bytes = tensor_bytes(out);
    uint64_t h = mix(shape_hash(op), (uint64_t)idx);
    uint64_t k = 0; /* the knobs as a set: their order in the config does not matter */
    for (int i = 0; i < n; i++) k += mix(mix(1, (uint64_t)knobs[i][0]), (uint64_t)knobs[i][1]);
    h = mix(h, k);
    run->seed = h;
    long long us = env_ll("STANDIN_EXEC_US", 0);
    run->sleep_us = us <= 0 ? 0 : us / 2 + (long long)(mix(h, 7) % (uint64_t)(us + 1));
    return CUDNN_STATUS_SUCCESS;
}

static uint64_t hash_bytes(uint64_t h, const unsigned char *p, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0x9E3779B97F4A7C15ull;
        h ^= h >> 29;
    }
    for (; i < n; i++) h = (h ^ p[i]) * 0x100000001B3ull;
    return mix(h, n);
}

void sb_compute(const struct sb_run *run) {
    uint64_t h = run->seed;
    for (int i = 0; i < 2; i++) h = hash_bytes(h, run->in[i], run->in_bytes[i]);
    unsigned char *o = run->out;
    for (size_t i = 0; i < run->out_bytes; i += 8) {
        uint64_t w = mix(h, i);
        size_t k = run->out_bytes - i < 8 ? run->out_bytes - i : 8;
        memcpy(o + i, &w, k);
    }
}
