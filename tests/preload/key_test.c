/*
 * A graph's key (cudnn/preload/v8_key.c), with the shadow table
 * (v8_shadow.c), compiled in alone: the key of a graph whose tensors,
 * convolution and operation keep their attributes packed is, byte for
 * byte, the canonical encoding a plain reference encoder here makes of
 * what the host set (every attribute type, extreme integers, empty and
 * longest lists, attributes set again, in any order), whether the
 * operation took each tensor and its convolution in by its shadow or as a
 * leaf (part read back, part kept: v8_leaf.c); and a tensor's kept
 * attributes fit a small shadow's slot; and
 * the small shadows' slabs (v8_slab.c) keep every shadow its own through
 * rounds of descriptors made and dropped in any order, slabs filling,
 * emptying and coming back.
 *
 *   key_test [ROUNDS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check_plain.h"
#include "v8.h"

/* v8_shadow.c's calls into the rest of the interposer: no graph, plan or
 * heuristics is made here. */
void v8_unwatch(struct v8_shadow *p) { (void)p; }
void v8_heur_plan_free(struct v8_heur_plan *hp) { (void)hp; }
void v8_graph_unref(struct v8_graph *g) { (void)g; }

/* ---- the reference: what the host set, encoded canonically -------------- */

#define MAX_ATTRS 12
#define MAX_BYTES (64 * 16)

struct ref_attr {
    int name, type, count;
    unsigned char bytes[MAX_BYTES]; /* values as set */
    struct ref_desc *subs[8];       /* descriptor attributes */
};

struct ref_desc {
    void *desc;
    int type, n;
    struct ref_attr a[MAX_ATTRS];
};

static size_t put16(unsigned char *p, unsigned v) {
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    return 2;
}

static size_t esize(int type) {
    switch (type) {
    case CUDNN_TYPE_BOOLEAN:
    case 24:
        return 1;
    case CUDNN_TYPE_INT64:
    case CUDNN_TYPE_DOUBLE:
        return 8;
    case 26:
        return 16;
    }
    return 4;
}

/* enc holds the reference's encodings: at most 3 tensors and a
 * convolution of 10 attributes of 64 16-byte elements each. */
static unsigned char enc[1 << 17];

/* encode writes d's canonical records, sorted by name. */
static size_t encode(const struct ref_desc *d, unsigned char *out) {
    size_t n = 0;
    int done[MAX_ATTRS] = {0};
    for (int k = 0; k < d->n; k++) {
        int best = -1;
        for (int i = 0; i < d->n; i++)
            if (!done[i] && (best < 0 || d->a[i].name < d->a[best].name)) best = i;
        done[best] = 1;
        const struct ref_attr *a = &d->a[best];
        size_t at = n;
        n += put16(out + n, (unsigned)a->name);
        out[n++] = (unsigned char)a->type;
        out[n++] = 0;
        n += put16(out + n, (unsigned)a->count);
        n += 2; /* length, below */
        if (a->type == CUDNN_TYPE_BACKEND_DESCRIPTOR) {
            for (int i = 0; i < a->count; i++) {
                size_t m = encode(a->subs[i], out + n + 4);
                n += put16(out + n, (unsigned)a->subs[i]->type);
                n += put16(out + n, (unsigned)m);
                n += m;
            }
        } else {
            size_t m = (size_t)a->count * esize(a->type);
            memcpy(out + n, a->bytes, m);
            n += m;
        }
        put16(out + at + 6, (unsigned)(n - at - 8));
    }
    return n;
}

/* ---- the host: sets through v8_attrs_put, as v8_calls.c does ------------ */

static unsigned long long rng = 0x9E3779B97F4A7C15ull;

static uint64_t next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* value is an integer of the kinds hosts and attackers set: small, large,
 * negative, the extremes. */
static int64_t value(void) {
    switch (next() % 8) {
    case 0:
        return INT64_MIN;
    case 1:
        return INT64_MAX;
    case 2:
        return -(int64_t)(next() % 1000);
    case 3:
        return (int64_t)next();
    case 4:
        return (int64_t)(next() % (1u << 24));
    default:
        return (int64_t)(next() % 300);
    }
}

/* set sets a value attribute on d, and records it in the reference. */
static void set(struct ref_desc *d, int name, int type, int count, const void *elements) {
    pthread_mutex_lock(&v8_mu);
    struct v8_shadow *s = v8_shadow_get(d->desc);
    CHECK(s != NULL);
    (void)v8_attrs_put(s, name, type, count, elements);
    s = v8_shadow_get(d->desc);
    CHECK(!s->bad); /* a small descriptor's size is checked where it is used */
    pthread_mutex_unlock(&v8_mu);
    struct ref_attr *a = NULL;
    for (int i = 0; i < d->n; i++)
        if (d->a[i].name == name) a = &d->a[i];
    if (!a) {
        CHECK(d->n < MAX_ATTRS);
        a = &d->a[d->n++];
    }
    a->name = name;
    a->type = type;
    a->count = count;
    memcpy(a->bytes, elements, (size_t)count * esize(type));
}

static struct ref_desc *made(void *desc, int type) {
    struct ref_desc *d = calloc(1, sizeof *d);
    CHECK(d != NULL);
    d->desc = desc;
    d->type = type;
    pthread_mutex_lock(&v8_mu);
    v8_shadow_add(desc, type);
    pthread_mutex_unlock(&v8_mu);
    return d;
}

static void finalize(struct ref_desc *d) {
    pthread_mutex_lock(&v8_mu);
    v8_shadow_get(d->desc)->finalized = 1;
    pthread_mutex_unlock(&v8_mu);
}

/* random_attrs sets n value attributes of every keyed type on d, some
 * twice (the second set replaces the first), names in any order; at most
 * one of the longest (64 elements), so that a graph is too long to be
 * keyed now and then, never one descriptor alone. */
static void random_attrs(struct ref_desc *d, int n) {
    int longest = 0;
    static const int types[] = {CUDNN_TYPE_INT64, 23, CUDNN_TYPE_DATA_TYPE, CUDNN_TYPE_FLOAT, CUDNN_TYPE_DOUBLE,
                                CUDNN_TYPE_BOOLEAN, 24, 26, CUDNN_TYPE_CONVOLUTION_MODE};
    for (int k = 0; k < n; k++) {
        int name = 900 + (int)(next() % 10), type = types[next() % (sizeof types / sizeof types[0])];
        int count = next() % 16 == 0 && !longest++ ? 64 : (int)(next() % 6);
        unsigned char b[MAX_BYTES];
        size_t es = esize(type);
        for (int i = 0; i < count; i++) {
            int64_t v = value();
            if (es == 8 || es == 16) memcpy(b + i * es, &v, 8);
            if (es == 16) memcpy(b + i * es + 8, &(int64_t){value()}, 8);
            if (es == 4) memcpy(b + i * 4, &(int32_t){(int32_t)v}, 4);
            if (es == 1) b[i] = (unsigned char)v;
        }
        set(d, name, type, count, b);
    }
}

/* ref_subs records a descriptor attribute of d in the reference. */
static void ref_subs(struct ref_desc *d, int name, struct ref_desc **subs, int count) {
    struct ref_attr *a = NULL;
    for (int i = 0; i < d->n; i++)
        if (d->a[i].name == name) a = &d->a[i];
    if (!a) a = &d->a[d->n++];
    a->name = name;
    a->type = CUDNN_TYPE_BACKEND_DESCRIPTOR;
    a->count = count;
    for (int i = 0; i < count; i++) a->subs[i] = subs[i];
}

/* set_subs sets a descriptor attribute on d, and records it in the
 * reference. */
static void set_subs(struct ref_desc *d, int name, struct ref_desc **subs, int count) {
    void *descs[8];
    for (int i = 0; i < count; i++) descs[i] = subs[i]->desc;
    pthread_mutex_lock(&v8_mu);
    struct v8_shadow *s = v8_shadow_get(d->desc);
    (void)v8_attrs_put(s, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, count, descs);
    pthread_mutex_unlock(&v8_mu);
    ref_subs(d, name, subs, count);
}

/* take_leaf has op take leaf t in as the interposer does (v8_leaf.c): a
 * random part of t's attributes read back (canonical records), the rest
 * kept in its shadow (none when nothing is kept), merged by
 * v8_attrs_put_leaf; the key must come out as if t had been shadowed
 * whole. Returns 0, doing nothing, for a t that holds a descriptor. */
static int take_leaf(struct ref_desc *op, int name, struct ref_desc *t) {
    static struct ref_desc read, kept;
    static unsigned char rec[1 << 16];
    read = (struct ref_desc){.desc = t->desc, .type = t->type};
    kept = read;
    for (int i = 0; i < t->n; i++) {
        if (t->a[i].type == CUDNN_TYPE_BACKEND_DESCRIPTOR) return 0;
        struct ref_desc *to = next() % 2 ? &read : &kept;
        to->a[to->n++] = t->a[i];
    }
    size_t n = encode(&read, rec);
    static unsigned char kbuf[1 << 12];
    pthread_mutex_lock(&v8_mu);
    v8_shadow_drop(t->desc);
    if (kept.n) {
        v8_shadow_add(t->desc, t->type);
        struct v8_shadow *s = v8_shadow_get(t->desc);
        for (int i = 0; i < kept.n; i++)
            s = v8_attrs_put(s, kept.a[i].name, kept.a[i].type, kept.a[i].count, kept.a[i].bytes);
    }
    size_t k = v8_leaf_kept(t->desc, t->type, kbuf, sizeof kbuf);
    (void)v8_attrs_put_leaf(v8_shadow_get(op->desc), name, t->type, kbuf, k, rec, n);
    pthread_mutex_unlock(&v8_mu);
    ref_subs(op, name, &t, 1);
    return 1;
}

/* take has op take sub in: as a leaf now and then, else by its shadow. */
static void take(struct ref_desc *op, int name, struct ref_desc *sub) {
    if (next() % 2 == 0 || !take_leaf(op, name, sub)) set_subs(op, name, &sub, 1);
}

/* words: what a leaf keeps (v8_leaf.c) reads as the reference encodes what
 * the host set, whether it fits the leaf's word (no shadow) or not (a
 * shadow, holding what the word held), and a marked leaf reads as
 * unkeyable. */
static void words(void) {
    static char d[4];
    static unsigned char got[256], want[256];
    struct {
        int type, name, atype;
        int64_t v;
        int word; /* still a word after this set */
    } steps[] = {
        {CUDNN_BACKEND_TENSOR_DESCRIPTOR, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 16, 1},
        {CUDNN_BACKEND_TENSOR_DESCRIPTOR, CUDNN_ATTR_TENSOR_REORDERING_MODE, CUDNN_TYPE_TENSOR_REORDERING_MODE, 2, 1},
        {CUDNN_BACKEND_TENSOR_DESCRIPTOR, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 0xFFFFFFFFll, 1},
        {CUDNN_BACKEND_TENSOR_DESCRIPTOR, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1ll << 40, 0},
        {CUDNN_BACKEND_TENSOR_DESCRIPTOR, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 8, 0},
    };
    /* Each prefix of steps, on a fresh tensor: the sets so far, as kept. */
    for (size_t upto = 1; upto <= sizeof steps / sizeof steps[0]; upto++) {
        struct ref_desc ref = {.desc = &d[0], .type = CUDNN_BACKEND_TENSOR_DESCRIPTOR};
        pthread_mutex_lock(&v8_mu);
        for (size_t i = 0; i < upto; i++) {
            int32_t e = (int32_t)steps[i].v;
            const void *el = steps[i].atype == CUDNN_TYPE_INT64 ? (const void *)&steps[i].v : (const void *)&e;
            v8_leaf_set(&d[0], steps[i].type, steps[i].name, steps[i].atype, 1, el);
            struct ref_attr *a = NULL;
            for (int j = 0; j < ref.n; j++)
                if (ref.a[j].name == steps[i].name) a = &ref.a[j];
            if (!a) a = &ref.a[ref.n++];
            *a = (struct ref_attr){.name = steps[i].name, .type = steps[i].atype, .count = 1};
            memcpy(a->bytes, el, esize(steps[i].atype));
        }
        size_t k = v8_leaf_kept(&d[0], CUDNN_BACKEND_TENSOR_DESCRIPTOR, got, sizeof got);
        size_t w = encode(&ref, want);
        CHECK(k == w && memcmp(got, want, w) == 0);
        CHECK((v8_shadow_get(&d[0]) == NULL) == steps[upto - 1].word);
        CHECK(v8_shadow_live() == 1);
        CHECK(v8_leaf_kept(&d[0], CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, got, sizeof got) == SIZE_MAX);
        v8_leaf_set(&d[0], CUDNN_BACKEND_TENSOR_DESCRIPTOR, -1, 0, 0, NULL); /* marked */
        CHECK(v8_leaf_kept(&d[0], CUDNN_BACKEND_TENSOR_DESCRIPTOR, got, sizeof got) == SIZE_MAX);
        v8_shadow_drop(&d[0]);
        CHECK(v8_shadow_live() == 0);
        pthread_mutex_unlock(&v8_mu);
    }
    /* A convolution's mode; a leaf that keeps nothing reads as none. */
    int mode = 1;
    pthread_mutex_lock(&v8_mu);
    CHECK(v8_leaf_kept(&d[1], CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, got, sizeof got) == 0);
    v8_leaf_set(&d[1], CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, CUDNN_ATTR_CONVOLUTION_CONV_MODE,
                CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
    CHECK(v8_shadow_get(&d[1]) == NULL);
    struct ref_desc ref = {.desc = &d[1], .type = CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, .n = 1};
    ref.a[0] = (struct ref_attr){.name = CUDNN_ATTR_CONVOLUTION_CONV_MODE, .type = CUDNN_TYPE_CONVOLUTION_MODE, .count = 1};
    memcpy(ref.a[0].bytes, &mode, 4);
    size_t k = v8_leaf_kept(&d[1], CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, got, sizeof got), w = encode(&ref, want);
    CHECK(k == w && memcmp(got, want, w) == 0);
    v8_shadow_drop(&d[1]);
    CHECK(v8_shadow_live() == 0);
    pthread_mutex_unlock(&v8_mu);
    printf("key_test: a leaf's kept values read as set, in its word or, past it, its shadow: ok\n");
}

/* elems is how many elements churn's descriptor i sets. */
static int elems(int i) { return i % 8 == 0 ? 8 : 1; }

/* churn makes and drops small shadows, several slabs' worth, in random
 * order, some grown out of their slot; each still reads as its own. */
static void churn(void) {
    enum { N = 5000 };
    static char descs[N];
    static int alive[N];
    long made = 0, dropped = 0;
    pthread_mutex_lock(&v8_mu);
    for (int round = 0; round < 40; round++) {
        for (int k = 0; k < N; k++) {
            int i = (int)(next() % N);
            if (!alive[i]) {
                v8_shadow_add(&descs[i], CUDNN_BACKEND_TENSOR_DESCRIPTOR);
                struct v8_shadow *t = v8_shadow_get(&descs[i]);
                CHECK(t && v8_small(t) && t->attrs_len == 0);
                int64_t v[8];
                for (int e = 0; e < 8; e++) v[e] = i;
                /* every 8th grows out of its slot: 8 varints of up to 3
                 * bytes, 5 times; the others fit: one varint, once */
                int sets = i % 8 == 0 ? 5 : 1;
                for (int a = 0; a < sets; a++) t = v8_attrs_put(t, 900 + a, CUDNN_TYPE_INT64, elems(i), v);
                alive[i] = 1;
                made++;
            } else if (next() % 2) {
                v8_shadow_drop(&descs[i]);
                alive[i] = 0;
                dropped++;
            }
        }
        long n = 0;
        for (int i = 0; i < N; i++) {
            const struct v8_shadow *t = v8_shadow_get(&descs[i]);
            CHECK(!t == !alive[i]);
            if (!t) continue;
            n++;
            CHECK(t->desc == &descs[i] && t->type == CUDNN_BACKEND_TENSOR_DESCRIPTOR && !t->bad);
            /* its first record: attribute 900, INT64, its elements, the
             * data's length, each element i as a zigzag varint */
            unsigned char want[5 + 8 * 3];
            size_t w = 5;
            want[0] = 900 & 0xFF;
            want[1] = 900 >> 8;
            want[2] = CUDNN_TYPE_INT64;
            want[3] = (unsigned char)elems(i);
            for (int e = 0; e < elems(i); e++)
                for (unsigned z = 2u * (unsigned)i;; z >>= 7) {
                    want[w++] = (unsigned char)(z > 0x7F ? (z & 0x7F) | 0x80 : z);
                    if (z <= 0x7F) break;
                }
            want[4] = (unsigned char)(w - 5);
            CHECK(t->attrs_len >= w && memcmp(v8_shadow_attrs(t), want, w) == 0);
            CHECK(v8_shadow_in_slab(t) == (i % 8 != 0));
        }
        CHECK(n == v8_shadow_live());
    }
    for (int i = 0; i < N; i++)
        if (alive[i]) v8_shadow_drop(&descs[i]);
    CHECK(v8_shadow_live() == 0);
    pthread_mutex_unlock(&v8_mu);
    printf("key_test: %ld small shadows made and %ld dropped in random order: each its own\n", made, dropped);
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 2000;
    static char addresses[64];
    int unkeyed = 0;
    for (int r = 0; r < rounds; r++) {
        struct ref_desc *t[3], *conv, *op, *graph;
        for (int i = 0; i < 3; i++) {
            t[i] = made(&addresses[i], CUDNN_BACKEND_TENSOR_DESCRIPTOR);
            random_attrs(t[i], 1 + (int)(next() % 10));
            /* now and then a tensor that holds another (as a ragged
             * offset does): a descriptor attribute in a packed record */
            if (i > 0 && next() % 4 == 0) set_subs(t[i], 913 /* CUDNN_ATTR_TENSOR_RAGGED_OFFSET_DESC */, &t[0], 1);
            finalize(t[i]);
        }
        conv = made(&addresses[3], CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
        random_attrs(conv, (int)(next() % 8));
        finalize(conv);
        op = made(&addresses[4], CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
        take(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, t[0]);
        random_attrs(op, (int)(next() % 3));
        take(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, t[1]);
        take(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, t[2]);
        take(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, conv);
        finalize(op);
        graph = made(&addresses[5], CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
        set_subs(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, &op, 1);

        unsigned char got[CONVCACHE_KEY_MAX];
        memcpy(enc, "ccg1", 4);
        size_t wn = 4 + encode(graph, enc + 4);
        pthread_mutex_lock(&v8_mu);
        size_t gn = v8_key(v8_shadow_get(graph->desc), got, sizeof got);
        for (int i = 0; i < 6; i++) v8_shadow_drop(&addresses[i]);
        CHECK(v8_shadow_live() == 0);
        pthread_mutex_unlock(&v8_mu);
        if (wn - 4 > 2048) {
            CHECK(gn == 0); /* longer than a descriptor's encoding may be: not served */
            unkeyed++;
        } else {
            CHECK(gn == wn);
            CHECK(memcmp(got, enc, wn) == 0);
        }
        for (int i = 0; i < 3; i++) free(t[i]);
        free(conv);
        free(op);
        free(graph);
    }

    /* A convolution's tensor as the interposer keeps it (v8_leaf.c): only
     * what cuDNN does not read back, its byte alignment and reordering
     * mode, fits in its slot. */
    struct ref_desc *x = made(&addresses[0], CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    int64_t align = 16;
    int reorder = 1; /* CUDNN_TENSOR_REORDERING_INT8x32 */
    set(x, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
    set(x, CUDNN_ATTR_TENSOR_REORDERING_MODE, CUDNN_TYPE_TENSOR_REORDERING_MODE, 1, &reorder);
    pthread_mutex_lock(&v8_mu);
    const struct v8_shadow *s = v8_shadow_get(x->desc);
    printf("key_test: a tensor's kept attributes: %u bytes packed, %u of room after a %d-byte common part\n",
           s->attrs_len, s->attrs_room, V8_SHADOW_HEAD);
    CHECK(s->attrs_len <= s->attrs_room && s->attrs_room == V8_SLOT - V8_SHADOW_HEAD);
    v8_shadow_drop(x->desc);
    pthread_mutex_unlock(&v8_mu);
    free(x);
    churn();
    words();
    printf("key_test: %d graphs keyed as the reference encodes them (%d too long to be keyed, as it "
           "says): ok\n",
           rounds - unkeyed, unkeyed);
    CHECK(unkeyed < rounds / 2);
    return 0;
}
