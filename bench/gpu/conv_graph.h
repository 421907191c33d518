/*
 * conv_graph.h - one convolution (forward, backward data or backward filter)
 * as a cuDNN backend operation graph, its heuristics, plans and execution:
 * what PyTorch's Conv_v8.cpp does through cudnn_frontend, in plain C over
 * the backend functions, found at run time. Shared by the GPU check
 * (bench/gpu/v8_check.c), the v8 example and the v8 tests. Header-only
 * (static functions); include backend_api.h's directory (cudnn/engine).
 *
 * Tensors are NCHW, packed, with unique ids 'x', 'w', 'y' as PyTorch's:
 * x is the input (the gradient dx for backward data), w the filter (dw for
 * backward filter), y the output (dy for both backward operations).
 */
#ifndef CONVCACHE_CONV_GRAPH_H
#define CONVCACHE_CONV_GRAPH_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_api.h"

/* The cuDNN functions used, looked up with dlsym. */
struct cg_api {
    cc_get_version_fn version;
    cc_create_fn handle_create;
    cc_destroy_fn handle_destroy;
    cc_desc_create_fn create;
    cc_desc_destroy_fn destroy;
    cc_finalize_fn finalize;
    cc_set_attr_fn set;
    cc_get_attr_fn get;
    cc_execute_fn execute;
};

/* cg_api_load opens $CONVCACHE_CUDNN_LIBRARY, else libcudnn.so.9 (global,
 * so that libconvcache_engine finds the same copy). Returns 0 or -1 with
 * why filled. */
static inline int cg_api_load(struct cg_api *a, char *why, size_t cap) {
    const char *path = getenv("CONVCACHE_CUDNN_LIBRARY");
    if (!path || !*path) path = "libcudnn.so.9";
    void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
        snprintf(why, cap, "cannot load %s: %s", path, dlerror());
        return -1;
    }
#define CG_SYM(field, type, name) a->field = (type)dlsym(h, name)
    CG_SYM(version, cc_get_version_fn, "cudnnGetVersion");
    CG_SYM(handle_create, cc_create_fn, "cudnnCreate");
    CG_SYM(handle_destroy, cc_destroy_fn, "cudnnDestroy");
    CG_SYM(create, cc_desc_create_fn, "cudnnBackendCreateDescriptor");
    CG_SYM(destroy, cc_desc_destroy_fn, "cudnnBackendDestroyDescriptor");
    CG_SYM(finalize, cc_finalize_fn, "cudnnBackendFinalize");
    CG_SYM(set, cc_set_attr_fn, "cudnnBackendSetAttribute");
    CG_SYM(get, cc_get_attr_fn, "cudnnBackendGetAttribute");
    CG_SYM(execute, cc_execute_fn, "cudnnBackendExecute");
#undef CG_SYM
    if (!a->version || !a->handle_create || !a->handle_destroy || !a->create || !a->destroy || !a->finalize ||
        !a->set || !a->get || !a->execute) {
        snprintf(why, cap, "%s lacks the cuDNN backend API", path);
        return -1;
    }
    return 0;
}

enum { CG_FWD = 1, CG_BWD_DATA = 2, CG_BWD_FILTER = 3 };

/* One convolution problem: NCHW x, KCRS w, square padding and stride. */
struct cg_conv {
    int op;
    int64_t n, c, h, w, k, r, s, pad, stride;
};

static inline int64_t cg_out(int64_t in, int64_t k, int64_t pad, int64_t stride) {
    return (in + 2 * pad - k) / stride + 1;
}

/* cg_bytes: the bytes of x, w and y (float). */
static inline void cg_bytes(const struct cg_conv *cv, size_t *x, size_t *w, size_t *y) {
    *x = (size_t)(cv->n * cv->c * cv->h * cv->w) * 4;
    *w = (size_t)(cv->k * cv->c * cv->r * cv->s) * 4;
    *y = (size_t)(cv->n * cv->k * cg_out(cv->h, cv->r, cv->pad, cv->stride) *
                  cg_out(cv->w, cv->s, cv->pad, cv->stride)) * 4;
}

/* The descriptors of one graph; cg_graph_free destroys them. */
struct cg_graph {
    cudnnBackendDescriptor_t t[3], conv, op, graph;
};

static inline void cg_graph_free(const struct cg_api *a, struct cg_graph *g) {
    cudnnBackendDescriptor_t *all[] = {&g->graph, &g->op, &g->conv, &g->t[0], &g->t[1], &g->t[2]};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (*all[i]) a->destroy(*all[i]), *all[i] = NULL;
}

#define CG_TRY(call)                                  \
    do {                                              \
        cudnnStatus_t st_ = (call);                   \
        if (st_ != CUDNN_STATUS_SUCCESS) return st_;  \
    } while (0)

static inline cudnnStatus_t cg_tensor(const struct cg_api *a, cudnnBackendDescriptor_t *t, int64_t uid,
                               int64_t d0, int64_t d1, int64_t d2, int64_t d3) {
    int64_t dims[4] = {d0, d1, d2, d3};
    int64_t strides[4] = {d1 * d2 * d3, d2 * d3, d3, 1};
    int64_t align = 16;
    cudnnDataType_t dt = CUDNN_DATA_FLOAT;
    CG_TRY(a->create(CUDNN_BACKEND_TENSOR_DESCRIPTOR, t));
    CG_TRY(a->set(*t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt));
    CG_TRY(a->set(*t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims));
    CG_TRY(a->set(*t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides));
    CG_TRY(a->set(*t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid));
    CG_TRY(a->set(*t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align));
    return a->finalize(*t);
}

/* cg_build makes the finalized operation graph of cv; on failure g holds
 * what was made (cg_graph_free it either way). */
static inline cudnnStatus_t cg_build(const struct cg_api *a, cudnnHandle_t handle, const struct cg_conv *cv,
                              struct cg_graph *g) {
    memset(g, 0, sizeof *g);
    int64_t p = cg_out(cv->h, cv->r, cv->pad, cv->stride), q = cg_out(cv->w, cv->s, cv->pad, cv->stride);
    CG_TRY(cg_tensor(a, &g->t[0], 'x', cv->n, cv->c, cv->h, cv->w));
    CG_TRY(cg_tensor(a, &g->t[1], 'w', cv->k, cv->c, cv->r, cv->s));
    CG_TRY(cg_tensor(a, &g->t[2], 'y', cv->n, cv->k, p, q));
    int64_t two = 2, pad[2] = {cv->pad, cv->pad}, stride[2] = {cv->stride, cv->stride}, dil[2] = {1, 1};
    cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    CG_TRY(a->create(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, &g->conv));
    CG_TRY(a->set(g->conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp));
    CG_TRY(a->set(g->conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode));
    CG_TRY(a->set(g->conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &two));
    CG_TRY(a->set(g->conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dil));
    CG_TRY(a->set(g->conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, stride));
    CG_TRY(a->set(g->conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad));
    CG_TRY(a->set(g->conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad));
    CG_TRY(a->finalize(g->conv));
    /* (type, alpha, beta, conv, then the x, w, y attributes in the op's terms) */
    cudnnBackendDescriptorType_t type;
    cudnnBackendAttributeName_t base, xa, wa, ya;
    if (cv->op == CG_FWD) {
        type = CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR;
        base = CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA;
        xa = CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X;
        wa = CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W;
        ya = CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y;
    } else if (cv->op == CG_BWD_DATA) {
        type = CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR;
        base = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA;
        xa = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX;
        wa = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W;
        ya = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY;
    } else {
        type = CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR;
        base = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA;
        xa = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X;
        wa = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW;
        ya = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY;
    }
    float alpha = 1.0f, beta = 0.0f;
    CG_TRY(a->create(type, &g->op));
    CG_TRY(a->set(g->op, base, CUDNN_TYPE_FLOAT, 1, &alpha));
    CG_TRY(a->set(g->op, (cudnnBackendAttributeName_t)(base + 1), CUDNN_TYPE_FLOAT, 1, &beta));
    CG_TRY(a->set(g->op, (cudnnBackendAttributeName_t)(base + 2), CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g->conv));
    CG_TRY(a->set(g->op, xa, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g->t[0]));
    CG_TRY(a->set(g->op, wa, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g->t[1]));
    CG_TRY(a->set(g->op, ya, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g->t[2]));
    CG_TRY(a->finalize(g->op));
    CG_TRY(a->create(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &g->graph));
    /* Deprecated in cuDNN 9.x headers, required before: set it, and go on
     * if a newer cuDNN refuses it. */
    (void)a->set(g->graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
    CG_TRY(a->set(g->graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g->op));
    return a->finalize(g->graph);
}

/* cg_heuristics fills cfgs (up to cap, created here: destroy each) with
 * the engine configs of heuristics mode `mode`; *n is how many. */
static inline cudnnStatus_t cg_heuristics(const struct cg_api *a, cudnnBackendDescriptor_t graph, int mode,
                                   cudnnBackendDescriptor_t *cfgs, int cap, int *n) {
    cudnnBackendDescriptor_t heur = NULL;
    cudnnBackendHeurMode_t m = (cudnnBackendHeurMode_t)mode;
    int64_t count = 0;
    *n = 0;
    cudnnStatus_t st = a->create(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur);
    if (!st) st = a->set(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph);
    if (!st) st = a->set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &m);
    if (!st) st = a->finalize(heur);
    if (!st) st = a->get(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, NULL);
    if (!st && count > cap) count = cap;
    for (int64_t i = 0; !st && i < count; i++) {
        st = a->create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfgs[i]);
        if (!st) *n = (int)i + 1;
    }
    if (!st && count > 0) st = a->get(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count,
                                      &count, cfgs);
    if (heur) a->destroy(heur);
    if (st) {
        for (int i = 0; i < *n; i++) a->destroy(cfgs[i]);
        *n = 0;
    } else {
        for (int64_t i = count; i < *n; i++) a->destroy(cfgs[i]);
        *n = (int)count;
    }
    return st;
}

/* cg_plan finalizes a plan from an engine config. */
static inline cudnnStatus_t cg_plan(const struct cg_api *a, cudnnHandle_t handle, cudnnBackendDescriptor_t cfg,
                             cudnnBackendDescriptor_t *plan) {
    *plan = NULL;
    cudnnStatus_t st = a->create(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, plan);
    if (!st) (void)a->set(*plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle); /* see cg_build */
    if (!st) st = a->set(*plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg);
    if (!st) st = a->finalize(*plan);
    if (st && *plan) a->destroy(*plan), *plan = NULL;
    return st;
}

static inline int64_t cg_workspace(const struct cg_api *a, cudnnBackendDescriptor_t plan) {
    int64_t ws = -1, n = 0;
    if (a->get(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n, &ws) || n != 1) return -1;
    return ws;
}

/* cg_execute runs plan on device pointers x, w, y with a workspace. */
static inline cudnnStatus_t cg_execute(const struct cg_api *a, cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
                                void *x, void *w, void *y, void *workspace) {
    cudnnBackendDescriptor_t pack = NULL;
    void *ptrs[3] = {x, w, y};
    int64_t uids[3] = {'x', 'w', 'y'};
    cudnnStatus_t st = a->create(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack);
    if (!st) st = a->set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, ptrs);
    if (!st) st = a->set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids);
    if (!st) st = a->set(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
    if (!st) st = a->finalize(pack);
    if (!st) st = a->execute(handle, plan, pack);
    if (pack) a->destroy(pack);
    return st;
}

#endif
