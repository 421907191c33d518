/*
 * Leaves: the tensors and convolution descriptors an operation is made
 * of. They are the many descriptors a host keeps (a million live tensors
 * is a host the interposer must not slow), so it keeps as little of them
 * as it can: when an operation takes a leaf in (its X, W, Y, dX, dY, dW or
 * convolution), the leaf's attributes are read back from cuDNN and go into
 * the operation's encoding by content (v8_key.c). Their create and the
 * sets of what is read back go to cuDNN untouched but for a look at the
 * type or the attribute's name.
 *
 * Each leaf type has a fixed list of attributes, in name order, each one
 *   - read back: cuDNN answers it (with its own default where the host set
 *     none), so one graph set up the same way reads the same under one
 *     cuDNN, whose version is in the scope. One without which a leaf is
 *     not what it was (a tensor's dimensions) must be answered, or the
 *     leaf and every graph made of it go unkeyed (they pass through); an
 *     optional one a cuDNN does not answer is left out;
 *   - or kept as set: cuDNN 9 does not give it back (a tensor's byte
 *     alignment and reordering mode; a convolution's mode, which cuDNN
 *     9.28 reads back only as a data type). A leaf whose host sets one
 *     gets, at that set, a word in its slot of the shadow table that holds
 *     it (below), or a small shadow where it does not fit (v8_shadow.c).
 * A leaf's canonical encoding is the records of both, merged by name.
 *
 * A leaf on which the host sets an attribute of its type that is not on
 * the list (one a newer cuDNN added, a ragged offset, a by-value constant)
 * gets a shadow marked unkeyable, so graphs made of it pass through; if a
 * leaf's word or shadow cannot be made (no memory, the table full), no leaf is
 * read back any more: no key ever leaves out something the host set.
 */
#include <stdint.h>
#include <string.h>

#include "v8.h"

/* One attribute of a leaf: its name, the type it is read as (kept: the
 * type a host sets it as, which fits the leaf's word), how many elements
 * it may have, and whether a leaf must answer it, may, or it is kept. */
enum { OPTIONAL, NEED, KEPT };
struct leaf_attr {
    uint16_t name;
    uint8_t type, max, how;
};

static const struct leaf_attr tensor_attrs[] = {
    {CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, KEPT},
    {CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, NEED},
    {CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, CUDNN_DIM_MAX, NEED},
    {CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, CUDNN_DIM_MAX, NEED},
    {CUDNN_ATTR_TENSOR_VECTOR_COUNT, CUDNN_TYPE_INT64, 1, OPTIONAL},
    {CUDNN_ATTR_TENSOR_VECTORIZED_DIMENSION, CUDNN_TYPE_INT64, 1, OPTIONAL},
    {CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, NEED},
    {CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, OPTIONAL},
    {CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, OPTIONAL},
    {CUDNN_ATTR_TENSOR_REORDERING_MODE, CUDNN_TYPE_TENSOR_REORDERING_MODE, 1, KEPT},
};

static const struct leaf_attr conv_attrs[] = {
    {CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, NEED},
    {CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, KEPT},
    {CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, CUDNN_DIM_MAX, NEED},
    {CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, CUDNN_DIM_MAX, NEED},
    {CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, CUDNN_DIM_MAX, NEED},
    {CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, CUDNN_DIM_MAX, NEED},
    {CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, NEED},
};

#define N(a) (sizeof(a) / sizeof(a)[0])

/* list is the attributes read back from a leaf of type, or NULL. */
static const struct leaf_attr *list(int type, size_t *n) {
    switch (type) {
    case CUDNN_BACKEND_TENSOR_DESCRIPTOR:
        *n = N(tensor_attrs);
        return tensor_attrs;
    case CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR:
        *n = N(conv_attrs);
        return conv_attrs;
    }
    *n = 0;
    return NULL;
}

/* Set once a leaf that needed a shadow could not get one: from then on no
 * leaf is read back. */
static int shadows_lost;

uint8_t v8_leaf_kinds[2][100];

/* v8_leaf_kinds, from the lists: what each attribute name of a leaf's
 * hundred is (0: not on the list). */
__attribute__((constructor)) static void leaf_kinds(void) {
    for (int t = 0; t < 2; t++) {
        size_t n;
        const struct leaf_attr *a = list(t ? CUDNN_BACKEND_TENSOR_DESCRIPTOR : CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, &n);
        for (size_t i = 0; i < n; i++) v8_leaf_kinds[t][a[i].name % 100] = a[i].how == KEPT ? V8_LEAF_KEPT : V8_LEAF_READ;
    }
}

int v8_leaf_taken(int name) {
    switch (name) {
    case CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W:
    case CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X:
    case CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y:
    case CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W:
    case CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX:
    case CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY:
    case CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW:
    case CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X:
    case CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY:
        return CUDNN_BACKEND_TENSOR_DESCRIPTOR;
    case CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC:
    case CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC:
    case CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC:
        return CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR;
    }
    return 0;
}

/* ---- what a leaf keeps: a word, or a shadow ------------------------------ */

/* A leaf's kept values fit one word in its table slot (v8_shadow.c) when
 * each is set as its usual type, one element, and small:
 *
 *   bit 0: 1 (a word, not a shadow)    bit 1: a tensor (else a convolution)
 *   bits 2, 3: kept value 0, 1 set     bits 8-31: value 1   bits 32-63: value 0
 *
 * where kept value k is the k-th kept attribute of the leaf's list (a
 * tensor: 0 its byte alignment, 1 its reordering mode; a convolution: 0
 * its mode). Anything else makes the leaf a shadow that holds its kept
 * attributes as records (v8_key.c), the word's among them. */
#define WORD_BITS1 24

/* kept_attr is the k-th kept attribute of type's list, or NULL. */
static const struct leaf_attr *kept_attr(int type, int k) {
    size_t n;
    const struct leaf_attr *a = list(type, &n);
    for (size_t i = 0; i < n; i++)
        if (a[i].how == KEPT && k-- == 0) return &a[i];
    return NULL;
}

static int word_type(uint64_t w) {
    return w & 2 ? CUDNN_BACKEND_TENSOR_DESCRIPTOR : CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR;
}

static int64_t word_value(uint64_t w, int k) {
    return k ? (int64_t)((w >> 8) & ((1u << WORD_BITS1) - 1)) : (int64_t)(w >> 32);
}

/* word_element is kept value k of word w as an element of attribute a (an
 * INT64 in *v, or a 4-byte enumerated value in *e). */
static const void *word_element(uint64_t w, int k, const struct leaf_attr *a, int64_t *v, int32_t *e) {
    *v = word_value(w, k);
    *e = (int32_t)*v;
    return a->type == CUDNN_TYPE_INT64 ? (const void *)v : (const void *)e;
}

/* word_with puts attribute name (count elements of atype) into word w of a
 * leaf of type; 0 when it does not fit a word. */
static int word_with(uint64_t *w, int type, int name, int atype, int64_t count, const void *elements) {
    for (int k = 0; k < 2; k++) {
        const struct leaf_attr *a = kept_attr(type, k);
        if (!a || a->name != name) continue;
        if (atype != a->type || count != 1 || !elements) return 0;
        int64_t v;
        if (atype == CUDNN_TYPE_INT64) {
            memcpy(&v, elements, 8);
        } else {
            int32_t e;
            memcpy(&e, elements, 4);
            v = e;
        }
        if (v < 0 || v >= (k ? (int64_t)1 << WORD_BITS1 : (int64_t)1 << 32)) return 0;
        *w = k ? (*w & ~((uint64_t)((1u << WORD_BITS1) - 1) << 8)) | (uint64_t)v << 8
               : (*w & 0xFFFFFFFFull) | (uint64_t)v << 32;
        *w |= 4u << k;
        return 1;
    }
    return 0;
}

/* word_records writes the canonical records of word w (cap bytes). */
static size_t word_records(uint64_t w, unsigned char *out, size_t cap) {
    size_t at = 0;
    for (int k = 0; k < 2; k++) {
        const struct leaf_attr *a = kept_attr(word_type(w), k);
        if (!a || !(w & (4u << k))) continue;
        int64_t v;
        int32_t e;
        size_t m = v8_record(out + at, cap - at, a->name, a->type, 1, word_element(w, k, a, &v, &e));
        if (!m) return SIZE_MAX;
        at += m;
    }
    return at;
}

void v8_leaf_set(void *desc, int type, int name, int atype, int64_t count, const void *elements) {
    uint64_t was;
    struct v8_shadow *s = v8_shadow_peek(desc, &was);
    if (s && s->type != type) s = NULL; /* another's, not seen freed */
    if (was && word_type(was) != type) was = 0;
    if (!s && name >= 0) { /* in its word, if it fits */
        uint64_t w = was ? was : 1 | (type == CUDNN_BACKEND_TENSOR_DESCRIPTOR ? 2 : 0);
        if (word_with(&w, type, name, atype, count, elements)) {
            if (!v8_shadow_set_word(desc, w)) __atomic_store_n(&shadows_lost, 1, __ATOMIC_RELAXED);
            return;
        }
    }
    if (!s) { /* else a shadow, in place of the word, holding what it held */
        s = v8_shadow_get_or_add(desc, type);
        for (int k = 0; s && k < 2; k++) {
            const struct leaf_attr *a = kept_attr(type, k);
            int64_t v;
            int32_t e;
            if (a && (was & (4u << k))) s = v8_attrs_put(s, a->name, a->type, 1, word_element(was, k, a, &v, &e));
        }
    }
    if (!s) __atomic_store_n(&shadows_lost, 1, __ATOMIC_RELAXED);
    else if (name < 0) s->bad = 1;
    else (void)v8_attrs_put(s, name, atype, count, elements);
}

size_t v8_leaf_kept(const void *desc, int type, unsigned char *out, size_t cap) {
    uint64_t w;
    const struct v8_shadow *s = v8_shadow_peek(desc, &w);
    if (s) return s->bad || s->type != type ? SIZE_MAX : v8_canonical(s, out, cap);
    if (!w) return 0;
    return word_type(w) == type ? word_records(w, out, cap) : SIZE_MAX;
}

size_t v8_leaf_read(const struct v8_real *r, void *leaf, int type, unsigned char *out, size_t cap) {
    size_t n, at = 0;
    const struct leaf_attr *a = list(type, &n);
    if (!leaf || !a || __atomic_load_n(&shadows_lost, __ATOMIC_RELAXED)) return SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
        if (a[i].how == KEPT) continue;
        int64_t buf[CUDNN_DIM_MAX] = {0}, got = -1;
        cudnnStatus_t st = r->get(leaf, a[i].name, a[i].type, a[i].max, &got, buf);
        if (st == CUDNN_STATUS_SUCCESS && got == 0 && a[i].how == OPTIONAL) continue; /* not set, no default */
        if (st != CUDNN_STATUS_SUCCESS || got < 1 || got > a[i].max) {
            if (a[i].how == NEED) return SIZE_MAX;
            continue; /* this cuDNN does not answer it */
        }
        size_t m = v8_record(out + at, cap - at, a[i].name, a[i].type, (unsigned)got, buf);
        if (!m) return SIZE_MAX;
        at += m;
    }
    return at;
}
