/* Which attributes each descriptor type has (cudnn_graph.h's documentation),
 * and what finalizing a descriptor checks. */
#include <string.h>

#include "standin_backend.h"

#define DESC CUDNN_TYPE_BACKEND_DESCRIPTOR
#define I64 CUDNN_TYPE_INT64
#define FD (-1) /* FLOAT or DOUBLE */
enum { TENSOR = CUDNN_BACKEND_TENSOR_DESCRIPTOR, CONV = CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR };
#define OPS CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, \
            CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR, \
            CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR

/* {name, type, min, max, required, get_only, {descriptor types}} */
static const struct attr_rule tensor[] = {
    {CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, I64, 1, 1, 1, 0, {0}},
    {CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, 1, 1, 0, {0}},
    {CUDNN_ATTR_TENSOR_DIMENSIONS, I64, 1, CUDNN_DIM_MAX, 1, 0, {0}},
    {CUDNN_ATTR_TENSOR_STRIDES, I64, 1, CUDNN_DIM_MAX, 1, 0, {0}},
    {CUDNN_ATTR_TENSOR_UNIQUE_ID, I64, 1, 1, 1, 0, {0}},
    {CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, 1, 0, 0, {0}},
    /* (RAGGED_OFFSET_MULTIPLIER: an attribute the interposer does not key) */
    {914, I64, 1, 1, 0, 0, {0}},
    {0}};
static const struct attr_rule conv[] = {
    {CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, 1, 1, 0, {0}},
    {CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, 1, 1, 0, {0}},
    {CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, I64, 1, 1, 1, 0, {0}},
    {CUDNN_ATTR_CONVOLUTION_DILATIONS, I64, 1, CUDNN_DIM_MAX - 2, 1, 0, {0}},
    {CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, I64, 1, CUDNN_DIM_MAX - 2, 1, 0, {0}},
    {CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, I64, 1, CUDNN_DIM_MAX - 2, 1, 0, {0}},
    {CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, I64, 1, CUDNN_DIM_MAX - 2, 1, 0, {0}},
    {0}};
#define CONV_OP(P)                                                              \
    {CUDNN_ATTR_OPERATION_CONVOLUTION_##P##_ALPHA, FD, 1, 1, 1, 0, {0}},        \
    {CUDNN_ATTR_OPERATION_CONVOLUTION_##P##_BETA, FD, 1, 1, 1, 0, {0}},         \
    {CUDNN_ATTR_OPERATION_CONVOLUTION_##P##_CONV_DESC, DESC, 1, 1, 1, 0, {CONV}}
static const struct attr_rule op_fwd[] = {
    CONV_OP(FORWARD),
    {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, DESC, 1, 1, 1, 0, {TENSOR}},
    {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, DESC, 1, 1, 1, 0, {TENSOR}},
    {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, DESC, 1, 1, 1, 0, {TENSOR}},
    {0}};
static const struct attr_rule op_bwd_data[] = {
    CONV_OP(BWD_DATA),
    {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, DESC, 1, 1, 1, 0, {TENSOR}},
    {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, DESC, 1, 1, 1, 0, {TENSOR}},
    {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, DESC, 1, 1, 1, 0, {TENSOR}},
    {0}};
static const struct attr_rule op_bwd_filter[] = {
    CONV_OP(BWD_FILTER),
    {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, DESC, 1, 1, 1, 0, {TENSOR}},
    {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, DESC, 1, 1, 1, 0, {TENSOR}},
    {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, DESC, 1, 1, 1, 0, {TENSOR}},
    {0}};
static const struct attr_rule graph[] = {
    {CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, 1, 0, 0, {0}},
    {CUDNN_ATTR_OPERATIONGRAPH_OPS, DESC, 1, 1, 1, 0, {OPS}},
    {CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT, I64, 1, 1, 0, 1, {0}},
    {0}};
static const struct attr_rule heur[] = {
    {CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, DESC, 1, 1, 1, 0, {CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR}},
    {CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, 1, 1, 0, {0}},
    {CUDNN_ATTR_ENGINEHEUR_RESULTS, DESC, 0, MAX_ELEMS, 0, 1, {CUDNN_BACKEND_ENGINECFG_DESCRIPTOR}},
    {0}};
static const struct attr_rule engine[] = {
    {CUDNN_ATTR_ENGINE_OPERATION_GRAPH, DESC, 1, 1, 1, 0, {CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR}},
    {CUDNN_ATTR_ENGINE_GLOBAL_INDEX, I64, 1, 1, 1, 0, {0}},
    {CUDNN_ATTR_ENGINE_KNOB_INFO, DESC, 0, MAX_ELEMS, 0, 1, {CUDNN_BACKEND_KNOB_INFO_DESCRIPTOR}},
    {CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE, 0, 8, 0, 1, {0}},
    {CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE, 0, 8, 0, 1, {0}},
    {0}};
static const struct attr_rule cfg[] = {
    {CUDNN_ATTR_ENGINECFG_ENGINE, DESC, 1, 1, 1, 0, {CUDNN_BACKEND_ENGINE_DESCRIPTOR}},
    {CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, DESC, 0, MAX_ELEMS, 0, 0, {CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR}},
    {CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE, I64, 1, 1, 0, 1, {0}},
    {0}};
static const struct attr_rule knob_choice[] = {
    {CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, 1, 1, 0, {0}},
    {CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, I64, 1, 1, 1, 0, {0}},
    {0}};
static const struct attr_rule knob_info[] = {
    {CUDNN_ATTR_KNOB_INFO_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, 1, 0, 1, {0}},
    {CUDNN_ATTR_KNOB_INFO_MAXIMUM_VALUE, I64, 1, 1, 0, 1, {0}},
    {CUDNN_ATTR_KNOB_INFO_MINIMUM_VALUE, I64, 1, 1, 0, 1, {0}},
    {CUDNN_ATTR_KNOB_INFO_STRIDE, I64, 1, 1, 0, 1, {0}},
    {0}};
static const struct attr_rule plan[] = {
    /* Deprecated in cuDNN 9; cudnn_frontend 1.32 does not set it. */
    {CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, 1, 0, 0, {0}},
    {CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, DESC, 1, 1, 1, 0, {CUDNN_BACKEND_ENGINECFG_DESCRIPTOR}},
    {CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, I64, 1, 1, 0, 1, {0}},
    {0}};
static const struct attr_rule pack[] = {
    {CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, I64, 1, 16, 1, 0, {0}},
    {CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 1, 16, 1, 0, {0}},
    {CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, 1, 0, 0, {0}},
    {0}};

const struct attr_rule *sb_schema(int t) {
    switch (t) {
    case TENSOR: return tensor;
    case CONV: return conv;
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR: return op_fwd;
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR: return op_bwd_data;
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR: return op_bwd_filter;
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR: return graph;
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR: return heur;
    case CUDNN_BACKEND_ENGINE_DESCRIPTOR: return engine;
    case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR: return cfg;
    case CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR: return knob_choice;
    case CUDNN_BACKEND_KNOB_INFO_DESCRIPTOR: return knob_info;
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: return plan;
    case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR: return pack;
    }
    return NULL;
}

const struct attr_rule *sb_rule(int t, int name) {
    const struct attr_rule *r = sb_schema(t);
    for (; r && r->name; r++)
        if (r->name == name) return r;
    return NULL;
}

int sb_type_ok(const struct attr_rule *r, int type) {
    return r->type == FD ? type == CUDNN_TYPE_FLOAT || type == CUDNN_TYPE_DOUBLE : type == r->type;
}

int sb_sub_type_ok(const struct attr_rule *r, int t) {
    if (!r->sub_types[0]) return 1;
    for (int i = 0; i < 3 && r->sub_types[i]; i++)
        if (r->sub_types[i] == t) return 1;
    return 0;
}

int sb_required_set(const struct desc *d) {
    for (const struct attr_rule *r = sb_schema(d->type); r && r->name; r++)
        if (r->required && !sb_attr(d, r->name)) return 0;
    return 1;
}

/* ---- finalize checks ----------------------------------------------------- */

static int64_t ints(const struct desc *d, int name, int64_t *v, int cap) {
    const struct attr *a = sb_attr(d, name);
    if (!a || a->type != I64 || a->count > cap) return -1;
    memcpy(v, a->data, (size_t)a->count * 8);
    return a->count;
}

static cudnnStatus_t tensor_ok(const struct desc *d) {
    int64_t dims[CUDNN_DIM_MAX], strides[CUDNN_DIM_MAX];
    int64_t n = ints(d, CUDNN_ATTR_TENSOR_DIMENSIONS, dims, CUDNN_DIM_MAX);
    if (n < 3 || ints(d, CUDNN_ATTR_TENSOR_STRIDES, strides, CUDNN_DIM_MAX) != n) return CUDNN_STATUS_BAD_PARAM;
    for (int i = 0; i < n; i++)
        if (dims[i] < 1 || strides[i] < 1 || dims[i] > (1 << 20)) return CUDNN_STATUS_BAD_PARAM;
    int64_t align = sb_int(d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, 0);
    return align >= 1 && (align & (align - 1)) == 0 ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_BAD_PARAM;
}

static cudnnStatus_t conv_ok(const struct desc *d) {
    int64_t v[CUDNN_DIM_MAX], n = sb_int(d, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, 0);
    static const int arrays[] = {CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES,
                                 CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS};
    if (n < 1 || n > CUDNN_DIM_MAX - 2) return CUDNN_STATUS_BAD_PARAM;
    for (int i = 0; i < 4; i++) {
        if (ints(d, arrays[i], v, CUDNN_DIM_MAX) != n) return CUDNN_STATUS_BAD_PARAM;
        for (int j = 0; j < n; j++)
            if (v[j] < (i < 2 ? 1 : 0)) return CUDNN_STATUS_BAD_PARAM;
    }
    return CUDNN_STATUS_SUCCESS;
}

/* op_ok: x, w and y (for a backward operation: dx/dw/dy) make a convolution
 * under the conv descriptor: y = (x + pre + post - dil*(r-1) - 1)/stride + 1. */
static cudnnStatus_t op_ok(const struct desc *d) {
    int base = d->type == CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR ? 700
               : d->type == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR ? 706 : 712;
    const struct desc *c = sb_sub(d, base + 2, 0), *x, *w, *y;
    if (base == 700) w = sb_sub(d, 703, 0), x = sb_sub(d, 704, 0), y = sb_sub(d, 705, 0);
    else if (base == 706) w = sb_sub(d, 709, 0), x = sb_sub(d, 710, 0), y = sb_sub(d, 711, 0);
    else w = sb_sub(d, 715, 0), x = sb_sub(d, 716, 0), y = sb_sub(d, 717, 0);
    int64_t xd[8], wd[8], yd[8], pre[6], post[6], st[6], dil[6];
    int64_t n = sb_int(c, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, 0);
    if (ints(x, CUDNN_ATTR_TENSOR_DIMENSIONS, xd, 8) != n + 2 || ints(w, CUDNN_ATTR_TENSOR_DIMENSIONS, wd, 8) != n + 2 ||
        ints(y, CUDNN_ATTR_TENSOR_DIMENSIONS, yd, 8) != n + 2)
        return CUDNN_STATUS_BAD_PARAM;
    ints(c, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, pre, 6);
    ints(c, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, post, 6);
    ints(c, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, st, 6);
    ints(c, CUDNN_ATTR_CONVOLUTION_DILATIONS, dil, 6);
    if (xd[0] != yd[0] || wd[0] != yd[1] || xd[1] % wd[1] != 0) return CUDNN_STATUS_BAD_PARAM;
    for (int i = 0; i < n; i++) {
        int64_t span = xd[2 + i] + pre[i] + post[i] - dil[i] * (wd[2 + i] - 1) - 1;
        if (span < 0 || span / st[i] + 1 != yd[2 + i]) return CUDNN_STATUS_BAD_PARAM;
    }
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t sb_finalize(struct desc *d) {
    switch (d->type) {
    case TENSOR: return tensor_ok(d);
    case CONV: return conv_ok(d);
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR: return op_ok(d);
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR: {
        int64_t n = sb_engine_count();
        return sb_put(d, CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT, I64, 1, &n);
    }
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR: return sb_heur_finalize(d);
    case CUDNN_BACKEND_ENGINE_DESCRIPTOR: return sb_engine_finalize(d);
    case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR: return sb_config_finalize(d);
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: return sb_plan_finalize(d);
    case CUDNN_BACKEND_KNOB_INFO_DESCRIPTOR: return CUDNN_STATUS_NOT_SUPPORTED; /* read-only */
    case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR: {
        const struct attr *u = sb_attr(d, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS);
        const struct attr *p = sb_attr(d, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS);
        return u->count == p->count ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_BAD_PARAM;
    }
    }
    return CUDNN_STATUS_SUCCESS; /* knob choice: both attributes set */
}
