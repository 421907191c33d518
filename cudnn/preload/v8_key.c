/*
 * A graph's key: the graph's and its operation's attributes as the host set
 * them, and each leaf (tensor, convolution) the operation took in as
 * cuDNN reads it back, with what cuDNN does not give back as the host set
 * it (v8_leaf.c).
 *
 * Each tracked descriptor keeps its attributes encoded, sorted by name, in
 * canonical records:
 *
 *   u16 name, u8 type, u8 0, u16 count, u16 len, then len bytes:
 *     a value attribute: its count elements as set (little-endian);
 *     a descriptor attribute: for each element, u16 type, u16 len and
 *       that descriptor's own encoding (its content, never its address).
 *
 * A small descriptor (an operation; a leaf that keeps attributes) keeps
 * them packed instead, the same records in fewer bytes, and is unpacked to
 * canonical records where its content goes into another's:
 *
 *   u16 name, u8 type, u8 count, LEB128 len, then len bytes:
 *     an integer attribute (INT64, INT32, an enumerated type): count
 *       zigzag LEB128 varints (a tensor's dimension of 56 takes 1 byte,
 *       not 8);
 *     any other: its bytes as in the canonical record.
 *
 * The key of a graph that holds one convolution operation is
 *
 *   "ccg1", then the graph's encoding without its handle
 *
 * so it covers the operation's type and attributes, each tensor's
 * dimensions, strides, data type, unique id, virtual and by-value flags and
 * vector count as cuDNN reads them back, its byte alignment and reordering
 * mode as set, and the convolution's every attribute. A value of a type
 * that cannot be keyed (a pointer, a handle, a type this code does not
 * know), or a leaf's attribute on neither of v8_leaf.c's lists, makes the
 * descriptor, and any graph made of it, unkeyable: such graphs pass
 * through untouched. Layout also in cudnn/doc.go.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "v8.h"

#define ATTRS_MAX 2048 /* bytes of one descriptor's canonical encoding */
/* bytes of a small descriptor's packed one: its canonical encoding is
 * checked where it goes into another's (a varint takes at most 10 bytes
 * for an element's 8, so one past this bound is past ATTRS_MAX too) */
#define PACKED_MAX (2 * ATTRS_MAX)
#define ELEMS_MAX 64   /* elements of one value attribute */

/* elem_size is the size of one element of an attribute type, or 0 for one
 * that is not keyed. (Inlined: every set and every packed record asks.) */
static inline __attribute__((always_inline)) size_t elem_size(int type) {
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

/* ---- packed records (small descriptors) ---------------------------------- */

/* varint_type reports whether an attribute type's elements are integers a
 * packed record holds as zigzag varints (INT64, INT32 and the enumerated
 * types); the rest keep their bytes. */
static inline __attribute__((always_inline)) int varint_type(int type) {
    size_t es = elem_size(type);
    return (es == 8 && type == CUDNN_TYPE_INT64) || (es == 4 && type != CUDNN_TYPE_FLOAT);
}

/* put_uvarint writes z as LEB128 (1 to 10 bytes); returns its length. */
static size_t put_uvarint(unsigned char *p, uint64_t z) {
    size_t n = 0;
    for (; z >= 0x80; z >>= 7) p[n++] = (unsigned char)(z | 0x80);
    p[n++] = (unsigned char)z;
    return n;
}

/* get_uvarint reads one LEB128 of at most avail bytes into *z; returns
 * its length, or 0 when it runs past avail. */
static size_t get_uvarint(const unsigned char *p, size_t avail, uint64_t *z) {
    uint64_t v = 0;
    for (size_t n = 0; n < avail && n < 10; n++) {
        v |= (uint64_t)(p[n] & 0x7F) << (7 * n);
        if (!(p[n] & 0x80)) {
            *z = v;
            return n + 1;
        }
    }
    return 0;
}

/* pack writes a packed record into out: u16 name, u8 type, u8 count, the
 * data's length (a LEB128), then the data: an integer attribute's
 * elements as zigzag varints, any other's bytes as a canonical record has
 * them (len bytes at data: a descriptor attribute's canonical encodings,
 * values as set). Returns its length. */
static size_t pack(int name, int type, unsigned count, const unsigned char *data, size_t len, unsigned char *out) {
    unsigned char ints[ELEMS_MAX * 10];
    if (varint_type(type)) {
        size_t es = elem_size(type), m = 0;
        for (unsigned i = 0; i < count; i++) {
            int64_t v;
            if (es == 8) {
                memcpy(&v, data + i * 8, 8);
            } else {
                int32_t w;
                memcpy(&w, data + i * 4, 4);
                v = w;
            }
            m += put_uvarint(ints + m, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
        }
        data = ints;
        len = m;
    }
    put16(out, (unsigned)name);
    out[2] = (unsigned char)type;
    out[3] = (unsigned char)count; /* at most ELEMS_MAX, or 8 descriptors */
    size_t m = 4 + put_uvarint(out + 4, len);
    memcpy(out + m, data, len);
    return m + len;
}

/* packed_head reads the header of the packed record at p (at most avail
 * bytes): the data's length into *dlen; returns the header's length (4
 * and the LEB128), or 0 when the record runs past avail. */
static size_t packed_head(const unsigned char *p, size_t avail, uint64_t *dlen) {
    size_t k = avail >= 4 ? get_uvarint(p + 4, avail - 4, dlen) : 0;
    return k && *dlen <= avail - 4 - k ? 4 + k : 0;
}

/* unpack writes the canonical form of the packed record at p (at most
 * avail bytes) into out (cap bytes); *used is the packed length. Returns
 * the canonical length, or 0 when either does not fit or the record is
 * not one pack wrote. */
static size_t unpack(const unsigned char *p, size_t avail, unsigned char *out, size_t cap, size_t *used) {
    uint64_t dlen;
    size_t head = packed_head(p, avail, &dlen);
    if (!head) return 0;
    int type = p[2];
    unsigned count = p[3];
    const unsigned char *data = p + head;
    size_t es = elem_size(type);
    int ints = varint_type(type);
    size_t len = ints ? count * es : dlen; /* the canonical data's */
    *used = head + dlen;
    if (8 + len > cap) return 0;
    if (!ints) {
        memcpy(out + 8, data, len);
    } else {
        size_t in = 0;
        for (unsigned i = 0; i < count; i++) {
            uint64_t z;
            size_t m = get_uvarint(data + in, dlen - in, &z);
            if (!m) return 0;
            in += m;
            int64_t v = (int64_t)(z >> 1) ^ -(int64_t)(z & 1);
            if (es == 8) {
                memcpy(out + 8 + i * 8, &v, 8);
            } else {
                int32_t w = (int32_t)v;
                memcpy(out + 8 + i * 4, &w, 4);
            }
        }
        if (in != dlen) return 0;
    }
    memcpy(out, p, 3);
    out[3] = 0;
    put16(out + 4, count);
    put16(out + 6, (unsigned)len);
    return 8 + len;
}

/* record_len is the length of s's record at p (at most avail bytes): a
 * canonical record's 8-byte header and data, or a packed one's (its
 * header, the data's length as a LEB128, the data; avail when that does
 * not hold, as for bytes the interposer did not pack). */
static size_t record_len(const struct v8_shadow *s, const unsigned char *p, size_t avail) {
    if (!v8_small(s)) return 8 + get16(p + 6);
    uint64_t dlen;
    size_t head = packed_head(p, avail, &dlen);
    return head ? head + (size_t)dlen : avail;
}

size_t v8_canonical(const struct v8_shadow *s, unsigned char *out, size_t cap) {
    const unsigned char *a = v8_shadow_attrs(s);
    if (!v8_small(s)) {
        if (s->attrs_len > cap) return SIZE_MAX;
        memcpy(out, a, s->attrs_len);
        return s->attrs_len;
    }
    size_t at = 0, n = 0;
    while (at < s->attrs_len) {
        size_t used = 0, m = unpack(a + at, s->attrs_len - at, out + n, cap - n, &used);
        if (!m) return SIZE_MAX;
        at += used;
        n += m;
    }
    return n;
}

/* ---- one descriptor's records --------------------------------------------- */

/* capacity is the size of the buffer for an encoding of len bytes: grown
 * by doubling, so that the few sets of a graph cost few reallocations. */
static size_t capacity(size_t len) {
    size_t c = 128;
    while (c < len) c *= 2;
    return c;
}

/* replace puts rec (n bytes, name first, in s's format) into s's sorted
 * encoding; it returns s, which may have moved. */
static struct v8_shadow *replace(struct v8_shadow *s, const unsigned char *rec, size_t n) {
    unsigned name = get16(rec);
    unsigned char *a = v8_shadow_attrs(s);
    size_t at = 0, old = 0;
    while (at < s->attrs_len) {
        unsigned have = get16(a + at);
        size_t m = record_len(s, a + at, s->attrs_len - at);
        if (have == name) {
            old = m;
            break;
        }
        if (have > name) break;
        at += m;
    }
    size_t len = s->attrs_len - old + n;
    if (len > (v8_small(s) ? PACKED_MAX : ATTRS_MAX)) {
        s->bad = 1;
        return s;
    }
    /* In place, the room there is; apart, at least capacity(attrs_len). */
    size_t room = v8_small(s) ? s->attrs_room : s->attrs ? capacity(s->attrs_len) : 0;
    if (len > room) {
        struct v8_shadow *t = v8_shadow_attrs_grow(s, v8_small(s) ? len : capacity(len));
        if (!t) {
            s->bad = 1;
            return s;
        }
        s = t;
        a = v8_shadow_attrs(s);
    }
    memmove(a + at + n, a + at + old, s->attrs_len - at - old);
    memcpy(a + at, rec, n);
    s->attrs_len = (uint16_t)len;
    return s;
}

/* head writes a canonical record's header. */
static void head(unsigned char *p, int name, int type, unsigned count, size_t len) {
    put16(p, (unsigned)name);
    p[2] = (unsigned char)type;
    p[3] = 0;
    put16(p + 4, count);
    put16(p + 6, (unsigned)len);
}

size_t v8_record(unsigned char *out, size_t cap, int name, int type, unsigned count, const void *elements) {
    size_t len = count * elem_size(type);
    if (!len || count > ELEMS_MAX || len > ATTRS_MAX || 8 + len > cap) return 0;
    head(out, name, type, count, len);
    memcpy(out + 8, elements, len);
    return 8 + len;
}

/* put records one attribute: its data (len bytes, as a canonical record
 * holds them) in s's format. */
static struct v8_shadow *put(struct v8_shadow *s, int name, int type, unsigned count, const unsigned char *data,
                             size_t len) {
    unsigned char rec[8 + ATTRS_MAX];
    if (v8_small(s)) {
        /* A first attribute that surely fits (a leaf's alignment): packed
         * in place. (A packed record takes at most 6 bytes of header, and
         * 10 a varint, or its bytes.) */
        size_t most = 6 + (varint_type(type) ? 10 * (size_t)count : len);
        if (!s->attrs_len && most <= s->attrs_room) {
            s->attrs_len = (uint16_t)pack(name, type, count, data, len, v8_shadow_attrs(s));
            return s;
        }
        return replace(s, rec, pack(name, type, count, data, len, rec));
    }
    head(rec, name, type, count, len);
    memcpy(rec + 8, data, len);
    return replace(s, rec, 8 + len);
}

/* sub_head writes the header of one descriptor in a descriptor
 * attribute's data: its type and the length of its encoding. */
static void sub_head(unsigned char *p, int type, size_t len) {
    put16(p, (unsigned)type);
    put16(p + 2, (unsigned)len);
}

/* put_descs records a descriptor attribute: each descriptor's canonical
 * encoding, by content. */
static struct v8_shadow *put_descs(struct v8_shadow *s, int name, int64_t count, void *const *subs) {
    unsigned char data[ATTRS_MAX];
    size_t n = 0;
    if (count > 8) {
        s->bad = 1;
        return s;
    }
    for (int64_t i = 0; i < count; i++) {
        const struct v8_shadow *sub = v8_shadow_get(subs[i]);
        size_t m = sub && !sub->bad && sub->finalized && n + 4 <= sizeof data
                       ? v8_canonical(sub, data + n + 4, sizeof data - n - 4)
                       : SIZE_MAX;
        if (m == SIZE_MAX) {
            s->bad = 1;
            return s;
        }
        sub_head(data + n, sub->type, m);
        n += 4 + m;
        if (s->type == CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR && name == CUDNN_ATTR_OPERATIONGRAPH_OPS)
            s->op_type = sub->type;
    }
    if (s->type == CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR && name == CUDNN_ATTR_OPERATIONGRAPH_OPS)
        s->nops = (int)count;
    return put(s, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, (unsigned)count, data, n);
}

struct v8_shadow *v8_attrs_put_leaf(struct v8_shadow *s, int name, int type, const unsigned char *kept, size_t k,
                                    const unsigned char *enc, size_t n) {
    unsigned char data[ATTRS_MAX];
    if (n == SIZE_MAX || k == SIZE_MAX || n + k > sizeof data - 4) {
        s->bad = 1; /* not read back, or marked unkeyable */
        return s;
    }
    /* Both are canonical records sorted by name, never the same name. */
    size_t i = 0, j = 0, at = 4;
    while (i < n || j < k) {
        int mine = j >= k || (i < n && get16(enc + i) < get16(kept + j));
        const unsigned char *r = mine ? enc + i : kept + j;
        size_t left = mine ? n - i : k - j, len = left < 8 ? SIZE_MAX : 8 + get16(r + 6);
        if (len > left) {
            s->bad = 1;
            return s;
        }
        memcpy(data + at, r, len);
        at += len;
        *(mine ? &i : &j) += len;
    }
    sub_head(data, type, n + k);
    return put(s, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, data, at);
}

struct v8_shadow *v8_attrs_put(struct v8_shadow *s, int name, int type, int64_t count, const void *elements) {
    if (name < 0 || name > 0xFFFF || count < 0 || (count > 0 && !elements)) {
        s->bad = 1;
        return s;
    }
    if (s->type == CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR && type == CUDNN_TYPE_HANDLE &&
        name == CUDNN_ATTR_OPERATIONGRAPH_HANDLE) {
        if (count == 1) memcpy(&s->handle, elements, sizeof s->handle);
        return s; /* which device, not what is computed: not in the key */
    }
    if (type == CUDNN_TYPE_BACKEND_DESCRIPTOR) return put_descs(s, name, count, elements);
    size_t es = elem_size(type);
    if (!es || count > ELEMS_MAX) {
        s->bad = 1;
        return s;
    }
    return put(s, name, type, (unsigned)count, elements, (size_t)count * es);
}

static int is_conv_op(int type) {
    return type == CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR ||
           type == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR ||
           type == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR;
}

size_t v8_key(const struct v8_shadow *g, unsigned char *out, size_t cap) {
    if (g->bad || g->nops != 1 || !is_conv_op(g->op_type) || 4 + (size_t)g->attrs_len > cap) return 0;
    memcpy(out, "ccg1", 4);
    memcpy(out + 4, v8_shadow_attrs(g), g->attrs_len);
    return 4 + g->attrs_len;
}
