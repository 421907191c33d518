/*
 * The stand-in cuDNN's engines: which operations each runs, its knobs (type,
 * range, stride), its numerical notes, its workspace, and heuristics that
 * rank its configs. Plans and their execution are in standin_plan.c.
 *
 *   engine  runs                    knobs                          notes
 *   0       all three               none                           none
 *   1       all three               TILE_SIZE 0-3, STAGES 1-4      TENSOR_CORE
 *   2       forward, bwd filter     SPLIT_K_SLC 1-8, TILEK 0-2     NONDETERMINISTIC
 *   3       all three               SWIZZLE 0-1                    TENSOR_CORE, DOWN_CONVERT_INPUTS
 *   4       forward                 TILE_SIZE 0-6 step 2, EDGE 0-1 FFT (behaviour: RUNTIME_COMPILATION)
 *   5       all three               STAGES 2-8 step 2              NONDETERMINISTIC
 *
 * So PyTorch's filters change the set: deterministic drops 2 and 5, every
 * run drops 3 (DOWN_CONVERT_INPUTS), fp32 without TF32 drops 1 and 3.
 * A config's workspace is 4096 bytes per knob unit (the sum of its knob
 * values), 16 times that for engine 2 (split-K keeps partial sums): 0 for
 * engine 0, up to 1.5 MiB.
 *
 * Heuristics, mode INSTANT (and A, B): up to 4 configs of each engine that
 * runs the operation (as many as it has knob combinations), each engine's
 * best first: the engines in an order and with knob values that depend on
 * the shape, interleaved by rank (engine order, then each engine's second
 * config, ...). 19 configs for a forward convolution, 15 for backward
 * filter, 11 for backward data. FALLBACK: engine 0, engine 1 with its
 * lowest knobs, engine 5 with its lowest knob; the first, and sometimes
 * the others, repeat an INSTANT config (as the real fallback list can).
 * Engines past STANDIN_ENGINE_COUNT, and those STANDIN_VANISH names alone
 * ("eng3"), are not installed: in neither list, and their engine
 * descriptors do not finalize. Configs STANDIN_VANISH names with knobs are
 * left out of both lists, but still build when asked for.
 */
#include <stdlib.h>
#include <string.h>

#include "standin_backend.h"

struct knob_def {
    int type;
    int64_t lo, hi, stride;
};
static const struct engine_def {
    int ops, nknobs;
    struct knob_def knobs[2];
    int nnotes;
    int notes[2];
    int behavior; /* a behaviour note, or -1 */
} engines[SB_ENGINES] = {
    {SB_FWD | SB_BWD_DATA | SB_BWD_FILTER, 0, {{0}}, 0, {0}, -1},
    {SB_FWD | SB_BWD_DATA | SB_BWD_FILTER, 2, {{CUDNN_KNOB_TYPE_TILE_SIZE, 0, 3, 1}, {CUDNN_KNOB_TYPE_STAGES, 1, 4, 1}},
     1, {CUDNN_NUMERICAL_NOTE_TENSOR_CORE}, -1},
    {SB_FWD | SB_BWD_FILTER, 2, {{CUDNN_KNOB_TYPE_SPLIT_K_SLC, 1, 8, 1}, {CUDNN_KNOB_TYPE_TILEK, 0, 2, 1}},
     1, {CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC}, -1},
    {SB_FWD | SB_BWD_DATA | SB_BWD_FILTER, 1, {{CUDNN_KNOB_TYPE_SWIZZLE, 0, 1, 1}},
     2, {CUDNN_NUMERICAL_NOTE_TENSOR_CORE, CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS}, -1},
    {SB_FWD, 2, {{CUDNN_KNOB_TYPE_TILE_SIZE, 0, 6, 2}, {CUDNN_KNOB_TYPE_EDGE, 0, 1, 1}},
     1, {CUDNN_NUMERICAL_NOTE_FFT}, CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION},
    {SB_FWD | SB_BWD_DATA | SB_BWD_FILTER, 1, {{CUDNN_KNOB_TYPE_STAGES, 2, 8, 2}},
     1, {CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC}, -1},
};

long long sb_env_ll(const char *name, long long def) {
    const char *v = getenv(name);
    return v && *v ? atoll(v) : def;
}

int sb_engine_count(void) {
    long long n = sb_env_ll("STANDIN_ENGINE_COUNT", SB_ENGINES);
    return n < 0 ? 0 : n > SB_ENGINES ? SB_ENGINES : (int)n;
}

/* installed: engine idx is in this cuDNN (STANDIN_ENGINE_COUNT, STANDIN_VANISH). */
static int installed(int64_t idx) {
    return idx >= 0 && idx < sb_engine_count() && !sb_engine_selected("STANDIN_VANISH", idx);
}

uint64_t sb_mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    h *= 0xBF58476D1CE4E5B9ull;
    return h ^ (h >> 31);
}

const struct desc *sb_graph_op(const struct desc *graph) {
    return graph ? sb_sub(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, 0) : NULL;
}

int sb_op_kind(const struct desc *op) {
    if (!op) return 0;
    switch (op->type) {
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR: return SB_FWD;
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR: return SB_BWD_DATA;
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR: return SB_BWD_FILTER;
    }
    return 0;
}

void sb_op_tensors(const struct desc *op, const struct desc **a, const struct desc **b, const struct desc **out) {
    switch (sb_op_kind(op)) {
    case SB_FWD: *a = sb_sub(op, 704, 0), *b = sb_sub(op, 703, 0), *out = sb_sub(op, 705, 0); return;
    case SB_BWD_DATA: *a = sb_sub(op, 709, 0), *b = sb_sub(op, 711, 0), *out = sb_sub(op, 710, 0); return;
    default: *a = sb_sub(op, 716, 0), *b = sb_sub(op, 717, 0), *out = sb_sub(op, 715, 0); return;
    }
}

uint64_t sb_shape_hash(const struct desc *op) {
    const struct desc *t[3];
    sb_op_tensors(op, &t[0], &t[1], &t[2]);
    uint64_t h = sb_mix(0x5eed, (uint64_t)op->type);
    for (int i = 0; i < 3; i++) {
        const struct attr *d = sb_attr(t[i], CUDNN_ATTR_TENSOR_DIMENSIONS);
        for (int64_t j = 0; j < d->count; j++) h = sb_mix(h, (uint64_t)((int64_t *)d->data)[j]);
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
    if (!installed(idx) || !(engines[idx].ops & sb_op_kind(op))) return CUDNN_STATUS_NOT_SUPPORTED;
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
    int32_t notes[2] = {def->notes[0], def->notes[1]}, behavior = def->behavior;
    if (!st) st = sb_put(e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE, def->nnotes, notes);
    if (!st) st = sb_put(e, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE, behavior < 0 ? 0 : 1, &behavior);
    return st;
}

int sb_config_parts(const struct desc *cfg, int64_t *idx, const struct desc **op, int64_t (*knobs)[2], int cap) {
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
    int n = sb_config_parts(cfg, &idx, &op, knobs, MAX_ELEMS);
    if (idx < 0 || idx >= SB_ENGINES || !op) return CUDNN_STATUS_BAD_PARAM;
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

/* ---- heuristics ------------------------------------------------------------ */

/* combos is how many knob combinations engine idx has. */
static int64_t combos(int64_t idx) {
    int64_t n = 1;
    for (int i = 0; i < engines[idx].nknobs; i++) {
        const struct knob_def *k = &engines[idx].knobs[i];
        n *= (k->hi - k->lo) / k->stride + 1;
    }
    return n;
}

/* make_config returns a finalized config (a temporary) of engine idx for
 * graph, with knob combination c (mixed radix over the knobs' steps). */
static struct desc *make_config(const struct desc *graph, int64_t idx, int64_t c) {
    struct desc *e = temp(CUDNN_BACKEND_ENGINE_DESCRIPTOR), *k[2];
    sb_put(e, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph);
    sb_put(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &idx);
    sb_engine_finalize(e);
    e->finalized = 1;
    struct desc *cfg = temp(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    sb_put(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &e);
    const struct engine_def *def = &engines[idx];
    for (int i = 0; i < def->nknobs; i++) {
        const struct knob_def *kd = &def->knobs[i];
        int32_t type = kd->type;
        int64_t steps = (kd->hi - kd->lo) / kd->stride + 1;
        int64_t v = kd->lo + kd->stride * (c % steps);
        c /= steps;
        k[i] = temp(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR);
        k[i]->finalized = 1;
        sb_put(k[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &type);
        sb_put(k[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1, &v);
    }
    sb_put(cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR, def->nknobs, k);
    sb_config_finalize(cfg);
    cfg->finalized = 1;
    sb_free_copy(e);
    for (int i = 0; i < def->nknobs; i++) sb_free_copy(k[i]);
    return cfg;
}

#define PER_ENGINE 4

cudnnStatus_t sb_heur_finalize(struct desc *heur) {
    const struct desc *graph = sb_sub(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, 0);
    const struct desc *op = sb_graph_op(graph);
    if (!op) return CUDNN_STATUS_BAD_PARAM;
    int64_t mode = sb_int(heur, CUDNN_ATTR_ENGINEHEUR_MODE, 0);
    uint64_t h = sb_shape_hash(op);
    struct desc *cfgs[SB_ENGINES * PER_ENGINE];
    int n = 0, kind = sb_op_kind(op);
    if (mode == CUDNN_HEUR_MODE_FALLBACK) {
        static const int64_t fallback[] = {0, 1, 5};
        for (int i = 0; i < 3; i++)
            if (installed(fallback[i]) && (engines[fallback[i]].ops & kind))
                cfgs[n++] = make_config(graph, fallback[i], 0);
    } else {
        for (int rank = 0; rank < PER_ENGINE; rank++) {
            for (int r = 0; r < SB_ENGINES; r++) {
                int64_t idx = (int64_t)((h + (uint64_t)r) % SB_ENGINES), all = combos(idx);
                if (!installed(idx) || !(engines[idx].ops & kind) || rank >= all) continue;
                /* 7 is prime to every engine's count: the ranks' combinations differ. */
                int64_t c = (int64_t)((sb_mix(h, (uint64_t)idx) + (uint64_t)rank * 7) % (uint64_t)all);
                cfgs[n++] = make_config(graph, idx, c);
            }
        }
    }
    /* Configs heuristics no longer offer (they still build when asked for). */
    int kept = 0;
    for (int i = 0; i < n; i++) {
        if (sb_selected("STANDIN_VANISH", cfgs[i])) sb_free_copy(cfgs[i]);
        else cfgs[kept++] = cfgs[i];
    }
    n = kept;
    cudnnStatus_t st = sb_put(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, n, cfgs);
    for (int i = 0; i < n; i++) sb_free_copy(cfgs[i]);
    return st;
}
