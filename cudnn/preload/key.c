/*
 * The find key (layout "ccf1", drawn in cudnn/doc.go): the operation, the
 * requested count, the Ex workspace size and the full content of every
 * descriptor as the real cuDNN's getters report it.
 *
 * The getters' answers are not trusted: a dimension count out of range
 * makes the call pass through, and the arrays start zeroed so that a getter
 * that reports fewer values than it counts still gives the same key.
 */
#include <string.h>

#include "preload.h"

static void put32(struct key *k, int32_t v) {
    if (k->n + 4 > sizeof k->b) {
        k->bad = 1;
        return;
    }
    uint32_t u = (uint32_t)v;
    for (int i = 0; i < 4; i++) k->b[k->n++] = (unsigned char)(u >> (8 * i));
}

static void put64(struct key *k, uint64_t v) {
    put32(k, (int32_t)(uint32_t)v);
    put32(k, (int32_t)(uint32_t)(v >> 32));
}

static void put_tensor(struct key *k, const void *d) {
    int dt = 0, nb = 0, dims[CUDNN_DIM_MAX] = {0}, strides[CUDNN_DIM_MAX] = {0};
    get_tensor_fn f = (get_tensor_fn)real_func(F_GET_TENSOR);
    if (!f || !d || f(d, CUDNN_DIM_MAX, &dt, &nb, dims, strides) != 0 || nb < 0 ||
        nb > CUDNN_DIM_MAX) {
        k->bad = 1;
        return;
    }
    put32(k, dt);
    put32(k, nb);
    for (int i = 0; i < nb; i++) put32(k, dims[i]);
    for (int i = 0; i < nb; i++) put32(k, strides[i]);
}

static void put_filter(struct key *k, const void *d) {
    int dt = 0, fmt = 0, nb = 0, dims[CUDNN_DIM_MAX] = {0};
    get_filter_fn f = (get_filter_fn)real_func(F_GET_FILTER);
    if (!f || !d || f(d, CUDNN_DIM_MAX, &dt, &fmt, &nb, dims) != 0 || nb < 0 ||
        nb > CUDNN_DIM_MAX) {
        k->bad = 1;
        return;
    }
    put32(k, dt);
    put32(k, fmt);
    put32(k, nb);
    for (int i = 0; i < nb; i++) put32(k, dims[i]);
}

static void put_conv(struct key *k, const void *d) {
    enum { N = CUDNN_DIM_MAX - 2 };
    int n = 0, pad[N] = {0}, stride[N] = {0}, dil[N] = {0}, mode = 0, ctype = 0, math = 0,
        groups = 0, reorder = -1;
    get_conv_fn f = (get_conv_fn)real_func(F_GET_CONV);
    get_int_fn fm = (get_int_fn)real_func(F_GET_MATH), fg = (get_int_fn)real_func(F_GET_GROUPS),
               fr = (get_int_fn)real_func(F_GET_REORDER);
    if (!f || !fm || !fg || !d || f(d, N, &n, pad, stride, dil, &mode, &ctype) != 0 || n < 0 ||
        n > N || fm(d, &math) != 0 || fg(d, &groups) != 0) {
        k->bad = 1;
        return;
    }
    if (fr && fr(d, &reorder) != 0) reorder = -1;
    put32(k, n);
    for (int i = 0; i < n; i++) put32(k, pad[i]);
    for (int i = 0; i < n; i++) put32(k, stride[i]);
    for (int i = 0; i < n; i++) put32(k, dil[i]);
    put32(k, mode);
    put32(k, ctype);
    put32(k, math);
    put32(k, groups);
    put32(k, reorder);
}

/* Descriptor kinds in argument order, per operation. */
enum { D_TENSOR, D_FILTER, D_CONV };
static const int desc_kinds[4][4] = {
    {0},
    {D_TENSOR, D_FILTER, D_CONV, D_TENSOR}, /* x, w, conv, y */
    {D_FILTER, D_TENSOR, D_CONV, D_TENSOR}, /* w, dy, conv, dx */
    {D_TENSOR, D_TENSOR, D_CONV, D_FILTER}, /* x, dy, conv, dw */
};

int build_key(const struct call *c, struct key *k) {
    k->n = 0;
    k->bad = 0;
    memcpy(k->b, "ccf1", 4);
    k->n = 4;
    k->b[k->n++] = (unsigned char)c->op;
    k->b[k->n++] = (unsigned char)c->ex;
    k->b[k->n++] = 0;
    k->b[k->n++] = 0;
    put32(k, c->requested);
    put64(k, c->ex ? (uint64_t)c->workspace_size : 0);
    for (int i = 0; i < 4 && !k->bad; i++) {
        switch (desc_kinds[c->op][i]) {
        case D_TENSOR: put_tensor(k, c->desc[i]); break;
        case D_FILTER: put_filter(k, c->desc[i]); break;
        case D_CONV: put_conv(k, c->desc[i]); break;
        }
    }
    return k->bad ? -1 : 0;
}
