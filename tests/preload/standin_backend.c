/*
 * The stand-in cuDNN's backend ("graph") API, part of the stand-in
 * libcudnn.so.9 (with standin_cudnn.c), for tests on machines without a GPU.
 *
 * Descriptors are attribute stores checked as the real ones are: an
 * attribute of another type, an element count out of range, a set after
 * finalizing or of a read-only attribute is CUDNN_STATUS_BAD_PARAM, a get
 * before finalizing CUDNN_STATUS_NOT_INITIALIZED; a tensor's alignment and
 * a convolution's mode are not read back, as in cuDNN 9.28. A descriptor-valued
 * attribute keeps a copy of the descriptors given; getting it fills
 * descriptors the caller created. Every descriptor argument is looked up
 * among the live ones first, so a destroyed or foreign pointer is
 * BAD_PARAM, never a crash.
 *
 * The "installed" engines (standin_engines.c) have knobs with ranges,
 * numerical notes and a simulated run time; executing a plan
 * (standin_plan.c) writes an output that depends only on (shape, engine,
 * knob choices, input bytes), so bit-identity is testable.
 *
 * Environment (faults first; a TAGS value is a list of engine/knob tags,
 * "eng3,eng1_k2:3_k14:4": standin_plan.c):
 *   STANDIN_ENGINE_COUNT    engines this cuDNN has (default 6, at most 6):
 *                           fewer, and the others vanish from heuristics
 *                           and fail to finalize (NOT_SUPPORTED)
 *   STANDIN_VANISH          TAGS: engines ("eng3") that are not installed,
 *                           configs (with knobs) heuristics no longer offer
 *   STANDIN_SUBSTITUTE      "engine" or "knob": a plan quietly runs another
 *                           engine or knob value than its config asked for
 *   STANDIN_PLAN_STATUS     finalizing any plan fails with this status
 *   STANDIN_FAIL_FINALIZE   TAGS: finalizing a plan of a matching config
 *                           fails (CUDNN_STATUS_NOT_SUPPORTED)
 *   STANDIN_FAIL_EXECUTE    TAGS: every execute of a plan that runs a
 *                           matching config fails (EXECUTION_FAILED)
 *   STANDIN_LIE             "count": descriptor-valued attributes report one
 *                           element too few when asked how many, and one
 *                           more than they wrote when filling; "heur":
 *                           heuristics results count two more than they
 *                           fill (cudnn_frontend trims its list to what
 *                           was filled; a cuDNN may do this)
 *   STANDIN_EXEC_US         microseconds an execution sleeps on average
 *                           (default 0); each (engine, knobs, shape) gets
 *                           0.5x to 1.5x of it, always the same
 *   STANDIN_BUILD_US        microseconds each plan finalize sleeps (default
 *                           0), outside the lock, as building costs
 *   STANDIN_REPORT          path: counts per shape at exit (standin_counters.c)
 *   STANDIN_TRACE           path: every backend call, appended (standin_trace.c)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "standin_backend.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct standin_backend_stats stats;

/* A test's hook (standin_backend_on_plan_built): called on the finalizing
 * thread after a plan's finalize succeeded, outside the lock; it may block,
 * as a long build would. */
static void (*plan_hook)(void *plan);

void standin_backend_on_plan_built(void (*fn)(void *plan)) { __atomic_store_n(&plan_hook, fn, __ATOMIC_RELEASE); }

void standin_backend_get_stats(struct standin_backend_stats *out) {
    pthread_mutex_lock(&mu);
    *out = stats;
    pthread_mutex_unlock(&mu);
}

/* ---- live descriptors: a pointer set ------------------------------------ */

/* Enough buckets that a host with a million live descriptors finds each
 * in one step, as cuDNN does (bench/v8/shadow_scale.c measures the
 * interposer's own table against this one). */
#define BUCKETS (1 << 20)
static struct desc *live[BUCKETS];

/* bucket mixes all of p's bits (murmur3's finalizer): a multiplicative hash
 * alone sent the addresses of some allocation patterns (the descriptors
 * interleaved with a host's or an interposer's own allocations) to a few
 * buckets, and the chains, not the host, dominated the time. */
static size_t bucket(const void *p) {
    uint64_t h = (uint64_t)(uintptr_t)p;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return (size_t)h % BUCKETS;
}

struct desc *sb_live(const void *p) {
    if (!p) return NULL;
    for (struct desc *d = live[bucket(p)]; d; d = d->next)
        if (d == p) return d;
    stats.foreign++; /* a destroyed, never created or made-up pointer */
    return NULL;
}

static struct desc *desc_new(int type) {
    struct desc *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    d->type = type;
    size_t b = bucket(d);
    d->next = live[b];
    live[b] = d;
    return d;
}

static void attr_clear(struct attr *a);

static void desc_unlink_free(struct desc *d) {
    struct desc **pp = &live[bucket(d)];
    while (*pp && *pp != d) pp = &(*pp)->next;
    if (*pp) *pp = d->next;
    for (int i = 0; i < d->nattr; i++) attr_clear(&d->attrs[i]);
    free(d);
}

/* Copies of descriptors kept inside attributes are not live: callers never
 * see them. */
static struct desc *desc_clone(const struct desc *s);

static void attr_clear(struct attr *a) {
    if (a->type == CUDNN_TYPE_BACKEND_DESCRIPTOR) {
        struct desc **v = a->data;
        for (int64_t i = 0; i < a->count; i++) sb_free_copy(v[i]);
    }
    free(a->data);
    memset(a, 0, sizeof *a);
}

void sb_free_copy(struct desc *d) {
    for (int i = 0; i < d->nattr; i++) attr_clear(&d->attrs[i]);
    free(d);
}

static int attr_copy(struct attr *dst, const struct attr *src) {
    *dst = *src;
    size_t n = (size_t)src->count * sb_type_size(src->type);
    dst->data = malloc(n ? n : 1);
    if (!dst->data) return -1;
    if (src->type == CUDNN_TYPE_BACKEND_DESCRIPTOR) {
        struct desc *const *sv = src->data;
        struct desc **dv = dst->data;
        for (int64_t i = 0; i < src->count; i++) dv[i] = desc_clone(sv[i]);
    } else {
        memcpy(dst->data, src->data, n);
    }
    return 0;
}

static struct desc *desc_clone(const struct desc *s) {
    struct desc *d = calloc(1, sizeof *d);
    if (!d) abort(); /* a test double: out of memory ends the test */
    d->type = s->type;
    d->finalized = s->finalized;
    d->nattr = s->nattr;
    for (int i = 0; i < s->nattr; i++)
        if (attr_copy(&d->attrs[i], &s->attrs[i]) != 0) abort();
    return d;
}

/* ---- attributes --------------------------------------------------------- */

size_t sb_type_size(int type) {
    switch (type) {
    case CUDNN_TYPE_BOOLEAN: return 1;
    case CUDNN_TYPE_DATA_TYPE: case CUDNN_TYPE_FLOAT: case CUDNN_TYPE_CONVOLUTION_MODE:
    case CUDNN_TYPE_HEUR_MODE: case CUDNN_TYPE_KNOB_TYPE: case CUDNN_TYPE_NUMERICAL_NOTE:
    case CUDNN_TYPE_BEHAVIOR_NOTE: return 4;
    }
    return 8; /* HANDLE, INT64, DOUBLE, VOID_PTR, BACKEND_DESCRIPTOR */
}

const struct attr *sb_attr(const struct desc *d, int name) {
    for (int i = 0; i < d->nattr; i++)
        if (d->attrs[i].name == name) return &d->attrs[i];
    return NULL;
}

/* sb_put stores (name, type, count, data) in d, replacing an earlier value;
 * descriptor values are copied. */
int sb_put(struct desc *d, int name, int type, int64_t count, const void *data) {
    struct attr a = {name, type, count, NULL};
    struct attr *slot = (struct attr *)sb_attr(d, name);
    if (!slot) {
        if (d->nattr == MAX_ATTRS) return CUDNN_STATUS_BAD_PARAM;
        slot = &d->attrs[d->nattr++];
    } else {
        attr_clear(slot);
    }
    a.data = (void *)data;
    if (attr_copy(slot, &a) != 0) {
        slot->count = 0;
        return CUDNN_STATUS_BAD_PARAM;
    }
    slot->name = name;
    return CUDNN_STATUS_SUCCESS;
}

int64_t sb_int(const struct desc *d, int name, int64_t def) {
    const struct attr *a = sb_attr(d, name);
    if (!a || a->count < 1) return def;
    if (a->type == CUDNN_TYPE_INT64) return ((const int64_t *)a->data)[0];
    if (sb_type_size(a->type) == 4 && a->type != CUDNN_TYPE_FLOAT) return ((const int32_t *)a->data)[0];
    return def;
}

const struct desc *sb_sub(const struct desc *d, int name, int64_t i) {
    const struct attr *a = sb_attr(d, name);
    if (!a || a->type != CUDNN_TYPE_BACKEND_DESCRIPTOR || i >= a->count) return NULL;
    return ((struct desc *const *)a->data)[i];
}

/* ---- the API ------------------------------------------------------------ */

/* Trace helpers: a descriptor's type by name (d may be NULL: a foreign one). */
#define TYPE_OF(d) ((d) ? sb_type_name((d)->type, tb, sizeof tb) : "?")
#define ATTR_OF(n) sb_attr_name(n, ab, sizeof ab)

cudnnStatus_t cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t type,
                                           cudnnBackendDescriptor_t *out) {
    char tb[32];
    if (!out || !sb_schema(type)) {
        sb_trace("create %s -> %d", sb_type_name(type, tb, sizeof tb), CUDNN_STATUS_BAD_PARAM);
        return CUDNN_STATUS_BAD_PARAM;
    }
    pthread_mutex_lock(&mu);
    struct desc *d = desc_new(type);
    pthread_mutex_unlock(&mu);
    *out = d;
    sb_trace("create %s %p -> %d", sb_type_name(type, tb, sizeof tb), (void *)d, d ? 0 : 1001);
    return d ? CUDNN_STATUS_SUCCESS : 1001;
}

cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t p) {
    char tb[32];
    pthread_mutex_lock(&mu);
    struct desc *d = sb_live(p);
    if (sb_tracing()) sb_trace("destroy %p(%s) -> %d", p, TYPE_OF(d), d ? 0 : CUDNN_STATUS_BAD_PARAM);
    if (d) desc_unlink_free(d);
    pthread_mutex_unlock(&mu);
    return d ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_BAD_PARAM;
}

cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t p, cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type, int64_t count,
                                       const void *elements) {
    cudnnStatus_t st = CUDNN_STATUS_BAD_PARAM;
    pthread_mutex_lock(&mu);
    struct desc *d = sb_live(p);
    const struct attr_rule *r = d ? sb_rule(d->type, name) : NULL;
    if (!d || d->finalized || !r || r->get_only || count < r->min || count > r->max ||
        (count > 0 && !elements) || !sb_type_ok(r, type))
        goto out;
    if (type == CUDNN_TYPE_BACKEND_DESCRIPTOR) {
        /* Each element a live, finalized descriptor of an accepted type. */
        struct desc *const *v = elements;
        for (int64_t i = 0; i < count; i++) {
            struct desc *e = sb_live(v[i]);
            if (!e || !e->finalized || !sb_sub_type_ok(r, e->type)) goto out;
        }
        struct desc *tmp[MAX_ELEMS];
        for (int64_t i = 0; i < count; i++) tmp[i] = sb_live(v[i]);
        st = sb_put(d, name, type, count, tmp);
    } else {
        st = sb_put(d, name, type, count, elements);
    }
out:
    if (sb_tracing()) {
        char tb[32], ab[48];
        sb_trace("set %p(%s) %s type=%d n=%lld -> %d", p, TYPE_OF(d), ATTR_OF(name), (int)type, (long long)count, st);
    }
    pthread_mutex_unlock(&mu);
    return st;
}

/* A NULL count is not written; NULL elements (or none requested) ask how
 * many there are (answered 0 for knob choices and knob info, see below). */
cudnnStatus_t cudnnBackendGetAttribute(cudnnBackendDescriptor_t const p, cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type, int64_t requested,
                                       int64_t *count, void *elements) {
    cudnnStatus_t st = CUDNN_STATUS_BAD_PARAM;
    int64_t got = 0;
    pthread_mutex_lock(&mu);
    struct desc *d = sb_live(p);
    const struct attr_rule *r = d ? sb_rule(d->type, name) : NULL;
    if (!d || !r || requested < 0 || !sb_type_ok(r, type)) goto out;
    if (!d->finalized) {
        st = CUDNN_STATUS_NOT_INITIALIZED;
        goto out;
    }
    /* As cuDNN 9.28 (seen on the CPU): a tensor's byte alignment is not
     * read back (NOT_SUPPORTED), a convolution's mode not as the type it
     * is set as (BAD_PARAM_ATTRIBUTE_TYPE). */
    if (name == CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT) {
        st = CUDNN_STATUS_NOT_SUPPORTED;
        goto out;
    }
    if (name == CUDNN_ATTR_CONVOLUTION_CONV_MODE) {
        st = 2010; /* CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE */
        goto out;
    }
    const struct attr *a = sb_attr(d, name);
    int64_t have = a ? a->count : 0;
    if (a && a->type != (int)type) goto out; /* FLOAT set, DOUBLE asked */
    /* STANDIN_LIE=count: a library whose counts are wrong (too few when
     * asked how many, more than asked for when filling). */
    const char *lie = getenv("STANDIN_LIE");
    int lying = lie && !strcmp(lie, "count") && type == CUDNN_TYPE_BACKEND_DESCRIPTOR && have > 0;
    if (requested == 0 || !elements) {
        /* cuDNN 9 (seen: 9.19 on an H100) answers a count query of an
         * engine config's knob choices with 0, and the stand-in does the
         * same for them and for an engine's knob info: a caller must ask
         * for as many as it can take, as cudnn_frontend does. */
        int quiet = name == CUDNN_ATTR_ENGINECFG_KNOB_CHOICES || name == CUDNN_ATTR_ENGINE_KNOB_INFO;
        int padded = lie && !strcmp(lie, "heur") && name == CUDNN_ATTR_ENGINEHEUR_RESULTS;
        got = quiet ? 0 : lying ? have - 1 : padded ? have + 2 : have;
        st = CUDNN_STATUS_SUCCESS;
        goto out;
    }
    int64_t n = have < requested ? have : requested;
    if (type == CUDNN_TYPE_BACKEND_DESCRIPTOR) {
        cudnnBackendDescriptor_t *out = elements;
        for (int64_t i = 0; i < n; i++) {
            struct desc *dst = sb_live(out[i]);
            const struct desc *src = ((struct desc *const *)a->data)[i];
            if (!dst || dst->type != src->type || dst == src) goto out;
        }
        for (int64_t i = 0; i < n; i++) {
            struct desc *dst = sb_live(out[i]);
            struct desc *c = desc_clone(((struct desc *const *)a->data)[i]);
            struct desc *next = dst->next;
            for (int j = 0; j < dst->nattr; j++) attr_clear(&dst->attrs[j]);
            memcpy(dst, c, sizeof *dst);
            dst->next = next;
            free(c);
        }
    } else if (n > 0) {
        memcpy(elements, a->data, (size_t)n * sb_type_size(type));
    }
    got = lying ? n + 1 : n;
    st = CUDNN_STATUS_SUCCESS;
out:
    if (st == CUDNN_STATUS_SUCCESS && count) *count = got;
    if (sb_tracing()) {
        char tb[32], ab[48];
        sb_trace("get %p(%s) %s type=%d req=%lld%s -> %d n=%lld", p, TYPE_OF(d), ATTR_OF(name), (int)type,
                 (long long)requested, elements ? "" : " elements=NULL", st, (long long)got);
    }
    pthread_mutex_unlock(&mu);
    return st;
}

/* shape_of_plan names the shape of a plan's engine config (standin_plan.c). */
static void shape_of_plan(const struct desc *plan, char *buf, size_t cap) {
    const struct desc *cfg = sb_sub(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, 0);
    const struct desc *e = cfg ? sb_sub(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, 0) : NULL;
    const struct desc *op = e ? sb_graph_op(sb_sub(e, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, 0)) : NULL;
    if (op) sb_shape_name(op, buf, cap);
    else snprintf(buf, cap, "other");
}

static void sleep_us(long long us) {
    if (us <= 0) return;
    struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t p) {
    cudnnStatus_t st = CUDNN_STATUS_BAD_PARAM;
    int is_plan = 0;
    pthread_mutex_lock(&mu);
    struct desc *d = sb_live(p);
    if (d && !d->finalized && sb_required_set(d)) {
        st = sb_finalize(d);
        is_plan = d->type == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR;
        char shape[SB_SHAPE_MAX];
        if (is_plan) {
            if (st == CUDNN_STATUS_SUCCESS) snprintf(shape, sizeof shape, "%s", d->shape);
            else shape_of_plan(d, shape, sizeof shape);
            sb_count_build(d, shape, st == CUDNN_STATUS_SUCCESS);
        }
        if (st == CUDNN_STATUS_SUCCESS) {
            d->finalized = 1;
            if (is_plan) stats.plans++;
            if (d->type == CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR) {
                stats.heuristics++;
                const struct desc *op = sb_graph_op(sb_sub(d, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, 0));
                sb_shape_name(op, shape, sizeof shape);
                sb_count_heuristics(shape);
            }
        }
    }
    if (sb_tracing()) {
        char tb[32];
        sb_trace("finalize %p(%s) -> %d", p, TYPE_OF(d), st);
    }
    pthread_mutex_unlock(&mu);
    /* Building a plan takes time (outside the lock: threads build at once). */
    if (is_plan) sleep_us(sb_env_ll("STANDIN_BUILD_US", 0));
    void (*hook)(void *) = __atomic_load_n(&plan_hook, __ATOMIC_ACQUIRE);
    if (is_plan && st == CUDNN_STATUS_SUCCESS && hook) hook(p);
    return st;
}

cudnnStatus_t cudnnBackendExecute(cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
                                  cudnnBackendDescriptor_t pack) {
    struct sb_run run;
    pthread_mutex_lock(&mu);
    struct desc *p = sb_live(plan), *v = sb_live(pack);
    cudnnStatus_t st = CUDNN_STATUS_BAD_PARAM;
    int is_plan = p && p->finalized && p->type == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR;
    if (handle && is_plan && v && v->finalized && v->type == CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR)
        st = sb_prepare_run(p, v, &run);
    if (st == CUDNN_STATUS_SUCCESS) stats.executes++;
    if (is_plan) sb_count_execute(p, sb_int(p, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, 0), st == CUDNN_STATUS_SUCCESS);
    sb_trace("execute %p %p -> %d", plan, pack, st);
    pthread_mutex_unlock(&mu);
    if (st != CUDNN_STATUS_SUCCESS) return st;
    /* Outside the lock: threads run their plans at the same time. */
    sb_compute(&run);
    sleep_us(run.sleep_us);
    return CUDNN_STATUS_SUCCESS;
}
