/*
 * A graph's key, from the attributes the host set, as it set them (a
 * descriptor cannot be trusted to read back what defines it: cuDNN may
 * normalize, and the host's own values are what it will set again).
 *
 * Each tracked descriptor keeps its attributes encoded, sorted by name:
 *
 *   u16 name, u8 type, u8 0, u16 count, u16 len, then len bytes:
 *     a value attribute: its count elements as set (little-endian);
 *     a descriptor attribute: for each element, u16 type, u16 len and
 *       that descriptor's own encoding (its content, never its address).
 *
 * The key of a graph that holds one convolution operation is
 *
 *   "ccg1", then the graph's encoding without its handle
 *
 * so it covers the operation's type, each tensor's dimensions, strides,
 * data type, byte alignment, unique id, virtual flag and anything else the
 * host set on them, and the convolution's every attribute. A value of a
 * type that cannot be keyed (a pointer, a handle, a type this code does not
 * know) makes the descriptor, and any graph made of it, unkeyable: such
 * graphs pass through untouched. Layout also in cudnn/doc.go.
 */
#include <stdlib.h>
#include <string.h>

#include "v8.h"

#define ATTRS_MAX 2048 /* bytes of one descriptor's encoding */
#define ELEMS_MAX 64   /* elements of one value attribute */

/* elem_size is the size of one element of an attribute type, or 0 for one
 * that is not keyed. */
static size_t elem_size(int type) {
    switch (type) {
    case CUDNN_TYPE_BOOLEAN:
    case 24: /* CHAR */
        return 1;
    case CUDNN_TYPE_INT64:
    case CUDNN_TYPE_DOUBLE:
        return 8;
    case 26: /* FRACTION: two int64 */
        return 16;
    case CUDNN_TYPE_FLOAT:
    case 23: /* INT32 */
        return 4;
    case CUDNN_TYPE_HANDLE:
    case CUDNN_TYPE_VOID_PTR:
    case CUDNN_TYPE_BACKEND_DESCRIPTOR:
        return 0;
    default:
        /* The enumerated types, 4 bytes each, up to the last one cuDNN 9.28
         * defines (33): a newer type is not keyed. */
        return type >= 0 && type <= 33 ? 4 : 0;
    }
}

static void put16(unsigned char *p, unsigned v) {
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

static unsigned get16(const unsigned char *p) { return (unsigned)p[0] | (unsigned)p[1] << 8; }

/* record_len is the length of the record at p (8-byte header + data). */
static size_t record_len(const unsigned char *p) { return 8 + get16(p + 6); }

/* capacity is the size of the buffer for an encoding of len bytes: grown
 * by doubling, so that the few sets of a tensor cost few reallocations. */
static size_t capacity(size_t len) {
    size_t c = 128;
    while (c < len) c *= 2;
    return c;
}

/* replace puts rec (n bytes, name first) into s's sorted encoding; it
 * returns s, which may have moved. */
static struct v8_shadow *replace(struct v8_shadow *s, const unsigned char *rec, size_t n) {
    unsigned name = get16(rec);
    size_t at = 0, old = 0;
    while (at < s->attrs_len) {
        unsigned have = get16(s->attrs + at);
        if (have == name) {
            old = record_len(s->attrs + at);
            break;
        }
        if (have > name) break;
        at += record_len(s->attrs + at);
    }
    size_t len = s->attrs_len - old + n;
    if (len > ATTRS_MAX) {
        s->bad = 1;
        return s;
    }
    /* In place, the room there is; apart, at least capacity(attrs_len). */
    size_t room = s->inline_attrs ? s->attrs_room : s->attrs ? capacity(s->attrs_len) : 0;
    if (len > room) {
        struct v8_shadow *t = v8_shadow_attrs_grow(s, capacity(len));
        if (!t) {
            s->bad = 1;
            return s;
        }
        s = t;
    }
    memmove(s->attrs + at + n, s->attrs + at + old, s->attrs_len - at - old);
    memcpy(s->attrs + at, rec, n);
    s->attrs_len = (uint16_t)len;
    return s;
}

struct v8_shadow *v8_attrs_put(struct v8_shadow *s, int name, int type, int64_t count, const void *elements) {
    unsigned char rec[8 + ATTRS_MAX];
    size_t n = 8;
    if (name < 0 || name > 0xFFFF || count < 0 || (count > 0 && !elements)) {
        s->bad = 1;
        return s;
    }
    if (s->type == CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR && type == CUDNN_TYPE_HANDLE &&
        name == CUDNN_ATTR_OPERATIONGRAPH_HANDLE) {
        if (count == 1) memcpy(&s->handle, elements, sizeof s->handle);
        return s; /* which device, not what is computed: not in the key */
    }
    if (type == CUDNN_TYPE_BACKEND_DESCRIPTOR) {
        if (count > 8) {
            s->bad = 1;
            return s;
        }
        void *const *subs = elements;
        for (int64_t i = 0; i < count; i++) {
            const struct v8_shadow *sub = v8_shadow_get(subs[i]);
            if (!sub || sub->bad || !sub->finalized || n + 4 + sub->attrs_len > sizeof rec) {
                s->bad = 1;
                return s;
            }
            put16(rec + n, (unsigned)sub->type);
            put16(rec + n + 2, (unsigned)sub->attrs_len);
            memcpy(rec + n + 4, sub->attrs, sub->attrs_len);
            n += 4 + sub->attrs_len;
            if (s->type == CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR && name == CUDNN_ATTR_OPERATIONGRAPH_OPS)
                s->op_type = sub->type;
        }
        if (s->type == CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR && name == CUDNN_ATTR_OPERATIONGRAPH_OPS)
            s->nops = (int)count;
    } else {
        size_t es = elem_size(type);
        if (!es || count > ELEMS_MAX) {
            s->bad = 1;
            return s;
        }
        memcpy(rec + n, elements, (size_t)count * es);
        n += (size_t)count * es;
    }
    if (n - 8 > 0xFFFF) {
        s->bad = 1;
        return s;
    }
    put16(rec, (unsigned)name);
    rec[2] = (unsigned char)type;
    rec[3] = 0;
    put16(rec + 4, (unsigned)count);
    put16(rec + 6, (unsigned)(n - 8));
    return replace(s, rec, n);
}

static int is_conv_op(int type) {
    return type == CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR ||
           type == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR ||
           type == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR;
}

size_t v8_key(const struct v8_shadow *g, unsigned char *out, size_t cap) {
    if (g->bad || g->nops != 1 || !is_conv_op(g->op_type) || 4 + (size_t)g->attrs_len > cap) return 0;
    memcpy(out, "ccg1", 4);
    memcpy(out + 4, g->attrs, g->attrs_len);
    return 4 + g->attrs_len;
}
