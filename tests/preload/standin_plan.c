/*
 * The stand-in cuDNN's execution plans: finalizing one (with the faults the
 * environment injects: standin_backend.c lists them), naming it (its shape
 * and its engine and knobs, as the counters, the report and the fault
 * selectors name them), and executing it: an output that depends only on
 * the shape, the engine, its knob choices and the input bytes.
 *
 * Names:
 *   shape  <op>:<type>:<x dims>:<w dims>:<y dims>, e.g.
 *          fprop:f32:2x3x32x32:16x3x3x3:2x16x32x32; op is fprop, dgrad or
 *          wgrad, type f32, f64, f16 or bf16; x, w and y as PyTorch names
 *          them (x is dx for dgrad, w is dw for wgrad, y is dy for both)
 *   tag    eng<index>_k<type>:<value>... in the config's knob order, e.g.
 *          eng1_k2:3_k14:4 (cudnn_frontend's plan tag, eng1_k2=3_k14=4,
 *          with ':' for '=')
 * A fault selector is a comma-separated list of tags, each matching the
 * configs of its engine that have (at least) its knob values: "eng3" is
 * every config of engine 3 (and, for STANDIN_VANISH, the engine itself).
 * '=' may stand for ':'.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "standin_backend.h"

/* ---- names ------------------------------------------------------------------ */

static int dims_name(const struct desc *t, char *buf, size_t cap) {
    const struct attr *d = t ? sb_attr(t, CUDNN_ATTR_TENSOR_DIMENSIONS) : NULL;
    size_t n = 0;
    for (int64_t i = 0; d && i < d->count && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? "x" : "", (long long)((int64_t *)d->data)[i]);
    return (int)n;
}

void sb_shape_name(const struct desc *op, char *buf, size_t cap) {
    const struct desc *x, *w, *y;
    const char *kind;
    switch (sb_op_kind(op)) {
    case SB_FWD: kind = "fprop", x = sb_sub(op, 704, 0), w = sb_sub(op, 703, 0), y = sb_sub(op, 705, 0); break;
    case SB_BWD_DATA: kind = "dgrad", x = sb_sub(op, 710, 0), w = sb_sub(op, 709, 0), y = sb_sub(op, 711, 0); break;
    case SB_BWD_FILTER: kind = "wgrad", x = sb_sub(op, 716, 0), w = sb_sub(op, 715, 0), y = sb_sub(op, 717, 0); break;
    default: snprintf(buf, cap, "other"); return;
    }
    int64_t dt = sb_int(x, CUDNN_ATTR_TENSOR_DATA_TYPE, -1);
    const char *type = dt == CUDNN_DATA_FLOAT ? "f32" : dt == CUDNN_DATA_DOUBLE ? "f64" : dt == CUDNN_DATA_HALF ? "f16"
                       : dt == CUDNN_DATA_BFLOAT16 ? "bf16" : "t?";
    char xs[64], ws[64], ys[64];
    dims_name(x, xs, sizeof xs), dims_name(w, ws, sizeof ws), dims_name(y, ys, sizeof ys);
    snprintf(buf, cap, "%s:%s:%s:%s:%s", kind, type, xs, ws, ys);
}

void sb_config_tag(const struct desc *cfg, char *buf, size_t cap) {
    int64_t idx, knobs[MAX_ELEMS][2];
    const struct desc *op;
    int n = sb_config_parts(cfg, &idx, &op, knobs, MAX_ELEMS);
    size_t len = (size_t)snprintf(buf, cap, "eng%lld", (long long)idx);
    for (int i = 0; i < n && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "_k%lld:%lld", (long long)knobs[i][0], (long long)knobs[i][1]);
}

/* number reads a decimal integer at *p (advanced past it); -1: none. */
static long long number(const char **p) {
    if (!isdigit((unsigned char)**p)) return -1;
    long long v = 0;
    while (isdigit((unsigned char)**p) && v < 1000000000) v = v * 10 + (*(*p)++ - '0');
    return v;
}

/* selector_matches: does one selector (at s, up to ',' or the end) match
 * engine idx with knobs? A malformed selector matches nothing. */
static int selector_matches(const char *s, int64_t idx, int64_t (*knobs)[2], int n) {
    if (strncmp(s, "eng", 3) != 0) return 0;
    s += 3;
    if (number(&s) != idx) return 0;
    while (*s == '_') {
        s++;
        if (*s++ != 'k') return 0;
        long long type = number(&s);
        if (*s != ':' && *s != '=') return 0;
        s++;
        long long value = number(&s);
        int found = 0;
        for (int i = 0; i < n; i++) found |= knobs[i][0] == type && knobs[i][1] == value;
        if (type < 0 || value < 0 || !found) return 0;
    }
    return *s == ',' || *s == 0;
}

static int listed(const char *env, int64_t idx, int64_t (*knobs)[2], int n) {
    const char *list = getenv(env);
    if (!list || !*list) return 0;
    for (const char *s = list; s; s = strchr(s, ',') ? strchr(s, ',') + 1 : NULL)
        if (selector_matches(s, idx, knobs, n)) return 1;
    return 0;
}

int sb_selected(const char *env, const struct desc *cfg) {
    if (!cfg) return 0;
    int64_t idx, knobs[MAX_ELEMS][2];
    const struct desc *op;
    int n = sb_config_parts(cfg, &idx, &op, knobs, MAX_ELEMS);
    return listed(env, idx, knobs, n < MAX_ELEMS ? n : MAX_ELEMS);
}

int sb_engine_selected(const char *env, int64_t idx) { return listed(env, idx, NULL, 0); }

/* ---- finalizing ----------------------------------------------------------------- */

cudnnStatus_t sb_plan_finalize(struct desc *plan) {
    long long fail = sb_env_ll("STANDIN_PLAN_STATUS", 0);
    if (fail) return (cudnnStatus_t)fail;
    /* The handle is deprecated in cuDNN 9 (cudnn_frontend 1.32 does not set
     * it); when set, it must be one. */
    const struct attr *h = sb_attr(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE);
    if (h && !*(void *const *)h->data) return CUDNN_STATUS_BAD_PARAM;
    struct desc *cfg = (struct desc *)sb_sub(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, 0);
    if (sb_selected("STANDIN_FAIL_FINALIZE", cfg)) return CUDNN_STATUS_NOT_SUPPORTED;
    /* A cuDNN that quietly runs something else than it was asked to. */
    const char *sub = getenv("STANDIN_SUBSTITUTE");
    if (sub && !strcmp(sub, "engine")) {
        struct desc *e = (struct desc *)sb_sub(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, 0);
        struct attr *a = (struct attr *)sb_attr(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX);
        ((int64_t *)a->data)[0] = (((int64_t *)a->data)[0] + 1) % SB_ENGINES;
    } else if (sub && !strcmp(sub, "knob")) {
        const struct desc *k = sb_sub(cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, 0);
        if (k) ((int64_t *)sb_attr(k, CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE)->data)[0] ^= 1;
    }
    int64_t ws = sb_int(cfg, CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE, 0);
    cudnnStatus_t st = sb_put(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &ws);
    if (st == CUDNN_STATUS_SUCCESS) {
        const struct desc *e = sb_sub(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, 0);
        sb_shape_name(sb_graph_op(sb_sub(e, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, 0)), plan->shape, sizeof plan->shape);
        sb_config_tag(cfg, plan->tag, sizeof plan->tag); /* what runs, substituted or not */
    }
    return st;
}

/* ---- execution --------------------------------------------------------------- */

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
    int n = sb_config_parts(cfg, &idx, &op, knobs, MAX_ELEMS);
    if (!op) return CUDNN_STATUS_BAD_PARAM;
    sb_op_tensors(op, &a, &b, &out);
    memset(run, 0, sizeof *run);
    run->in[0] = pointer_of(pack, a);
    run->in[1] = pointer_of(pack, b);
    run->out = (void *)pointer_of(pack, out);
    const struct attr *ws = sb_attr(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE);
    int have_ws = ws && *(void *const *)ws->data;
    if (!run->in[0] || !run->in[1] || !run->out ||
        (sb_int(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, 0) > 0 && !have_ws))
        return CUDNN_STATUS_BAD_PARAM;
    if (sb_selected("STANDIN_FAIL_EXECUTE", cfg)) return CUDNN_STATUS_EXECUTION_FAILED;
    run->in_bytes[0] = tensor_bytes(a);
    run->in_bytes[1] = tensor_bytes(b);
    run->out_bytes = tensor_bytes(out);
    uint64_t h = sb_mix(sb_shape_hash(op), (uint64_t)idx);
    uint64_t k = 0; /* the knobs as a set: their order in the config does not matter */
    for (int i = 0; i < n; i++) k += sb_mix(sb_mix(1, (uint64_t)knobs[i][0]), (uint64_t)knobs[i][1]);
    h = sb_mix(h, k);
    run->seed = h;
    long long us = sb_env_ll("STANDIN_EXEC_US", 0);
    run->sleep_us = us <= 0 ? 0 : us / 2 + (long long)(sb_mix(h, 7) % (uint64_t)(us + 1));
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
    return sb_mix(h, n);
}

void sb_compute(const struct sb_run *run) {
    uint64_t h = run->seed;
    for (int i = 0; i < 2; i++) h = hash_bytes(h, run->in[i], run->in_bytes[i]);
    unsigned char *o = run->out;
    for (size_t i = 0; i < run->out_bytes; i += 8) {
        uint64_t w = sb_mix(h, i);
        size_t k = run->out_bytes - i < 8 ? run->out_bytes - i : 8;
        memcpy(o + i, &w, k);
    }
}
