/*
 * The six functions of cuDNN's backend API, interposed. Each calls the
 * real one (found as preload.c finds the find functions) and tells the
 * graph code what happened; every argument goes to cuDNN unchanged, so a
 * call cuDNN would refuse is refused by cuDNN.
 *
 * What a call costs the host:
 *   - cudnnBackendExecute of a plan that needs no look (v8_watch.c): a
 *     hash of its address and one load, then the real call (the warm path:
 *     PyTorch's own map answers and only executes reach cuDNN);
 *   - create, set, get, finalize, destroy: the real call, plus a lookup in
 *     the shadow table under one mutex for the descriptor types that make
 *     up a convolution graph and its plans (v8_shadow.c); a tensor's or a
 *     convolution's create and sets cost a look at the type or the
 *     attribute's name only (v8_leaf.c).
 *
 * Calls made while the interposer itself is inside cuDNN (in_real: cuDNN
 * calling its own exported functions, or the engine code reading a plan)
 * and every call in a child forked after libconvcache was loaded go
 * straight to cuDNN.
 */
#include <stdlib.h>
#include <string.h>

#include "v8.h"

static __thread int in_real __attribute__((tls_model("initial-exec")));

/* ---- the real functions ------------------------------------------------- */

static struct v8_real real_fns;
static int real_ok;

const char *const v8_func_names[N_V8_FUNCS] = {
    "cudnnBackendCreateDescriptor", "cudnnBackendDestroyDescriptor", "cudnnBackendFinalize",
    "cudnnBackendSetAttribute",     "cudnnBackendGetAttribute",      "cudnnBackendExecute",
};

static int resolve(void) {
    struct v8_real r = {
        .create = (cc_desc_create_fn)real_symbol(v8_func_names[0]),
        .destroy = (cc_desc_destroy_fn)real_symbol(v8_func_names[1]),
        .finalize = (cc_finalize_fn)real_symbol(v8_func_names[2]),
        .set = (cc_set_attr_fn)real_symbol(v8_func_names[3]),
        .get = (cc_get_attr_fn)real_symbol(v8_func_names[4]),
        .execute = (cc_execute_fn)real_symbol(v8_func_names[5]),
    };
    if (!r.create || !r.destroy || !r.finalize || !r.set || !r.get || !r.execute) return 0;
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&mu);
    if (!real_ok) {
        real_fns = r;
        /* The engine code reads and builds plans through these, never
         * through this library's own functions. */
        struct cce_backend b = {r.create, r.destroy, r.finalize, r.set, r.get};
        cce_backend_use(&b);
        __atomic_store_n(&real_ok, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&mu);
    return 1;
}

const struct v8_real *v8_real(void) {
    if (__atomic_load_n(&real_ok, __ATOMIC_ACQUIRE) || resolve()) return &real_fns;
    warn_once(W_REAL, "cuDNN's backend functions were not found");
    return NULL;
}

/* active: the calls may be looked at (not inside cuDNN, not a forked child). */
static int active(void) { return !in_real && library_usable(); }

#define REAL_OR(fail)                 \
    const struct v8_real *r = v8_real(); \
    if (!r) return (fail)

/* ---- the interposed functions -------------------------------------------- */

EXPORT cudnnStatus_t cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t type,
                                                  cudnnBackendDescriptor_t *desc) {
    REAL_OR(CUDNN_STATUS_NOT_INITIALIZED);
    if (!active()) return r->create(type, desc);
    in_real++;
    cudnnStatus_t st = r->create(type, desc);
    in_real--;
    if (st == CUDNN_STATUS_SUCCESS && desc && *desc && v8_shadow_tracked_type((int)type)) {
        v8_shadow_prefetch(*desc); /* while the lock is taken */
        pthread_mutex_lock(&v8_mu);
        v8_shadow_add(*desc, (int)type);
        pthread_mutex_unlock(&v8_mu);
    }
    return st;
}

EXPORT cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t desc) {
    REAL_OR(CUDNN_STATUS_NOT_INITIALIZED);
    if (in_real || library_forked()) return r->destroy(desc);
    v8_shadow_prefetch(desc);
    in_real++;
    cudnnStatus_t st;
    if (v8_destroying(desc, &st)) st = r->destroy(desc);
    in_real--;
    return st;
}

/* link makes s belong to the graph from belongs to. v8_mu held. */
static void link(struct v8_shadow *s, const struct v8_shadow *from, int stored) {
    struct v8_graph *g = v8_shadow_graph(from);
    if (!s || !g) return;
    if (s->g != g) {
        if (s->g) v8_graph_unref(s->g);
        v8_graph_ref(g);
        s->g = g;
    }
    s->stored = stored;
}

/* A leaf an operation takes in, as read back before v8_mu was taken (its
 * records take at most 316 bytes: a convolution's, every list of
 * CUDNN_DIM_MAX elements; a tensor's at most 222). */
struct leaf {
    int type; /* 0: the attribute holds no leaf */
    size_t len;
    unsigned char enc[512];
};

/* record_set keeps what a successful SetAttribute said (v8_mu held). */
static void record_set(void *desc, int name, int type, int64_t count, const void *elements, const struct leaf *lf) {
    struct v8_shadow *s = v8_shadow_get(desc);
    if (!s) return;
    if (lf->type) {
        unsigned char kept[512];
        size_t k = v8_leaf_kept(*(void *const *)elements, lf->type, kept, sizeof kept);
        (void)v8_attrs_put_leaf(s, name, lf->type, kept, k, lf->enc, lf->len);
        return;
    }
    const struct v8_shadow *sub = NULL;
    if (type == CUDNN_TYPE_BACKEND_DESCRIPTOR && count == 1 && elements)
        sub = v8_shadow_get(*(void *const *)elements);
    switch (s->type) {
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
        if (name == CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH) {
            link(s, sub, -1);
            s->graph_desc = sub ? sub->desc : NULL;
        }
        if (name == CUDNN_ATTR_ENGINEHEUR_MODE && count == 1 && elements)
            memcpy(&s->heur_mode, elements, sizeof s->heur_mode);
        return;
    case CUDNN_BACKEND_ENGINE_DESCRIPTOR:
        if (name == CUDNN_ATTR_ENGINE_OPERATION_GRAPH) link(s, sub, -1);
        return;
    case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR:
        /* A config the host made itself: which choice it is, is not known. */
        if (name == CUDNN_ATTR_ENGINECFG_ENGINE) link(s, sub, -1);
        return;
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
        if (name == CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG) {
            link(s, sub, sub ? sub->stored : -1);
            s->cfg = sub ? sub->desc : NULL;
        }
        return;
    default: /* tensor, convolution, operation, graph */
        (void)v8_attrs_put(s, name, type, count, elements);
    }
}

/* set_done keeps what a successful SetAttribute said, but for a leaf's
 * attribute that is read back (kept out of line: a tensor's many sets
 * need none of it). */
static __attribute__((noinline)) void set_done(const struct v8_real *r, void *desc, int name, int type, int64_t count,
                                               const void *elements, int leaf, int leaf_type) {
    /* An operation taking a leaf in: the leaf is read back now, before
     * v8_mu is taken (a call into cuDNN). */
    struct leaf lf; /* (not zeroed: its buffer is written only when used) */
    lf.type = leaf ? 0 : v8_leaf_taken(name);
    if (lf.type && type == CUDNN_TYPE_BACKEND_DESCRIPTOR && count == 1 && elements) {
        in_real++;
        lf.len = v8_leaf_read(r, *(void *const *)elements, lf.type, lf.enc, sizeof lf.enc);
        in_real--;
    } else {
        lf.type = 0;
    }
    pthread_mutex_lock(&v8_mu);
    if (leaf) v8_leaf_set(desc, leaf_type, leaf == V8_LEAF_KEPT ? name : -1, type, count, elements);
    else record_set(desc, name, type, count, elements, &lf);
    pthread_mutex_unlock(&v8_mu);
}

EXPORT cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t desc, cudnnBackendAttributeName_t name,
                                              cudnnBackendAttributeType_t type, int64_t count,
                                              const void *elements) {
    REAL_OR(CUDNN_STATUS_NOT_INITIALIZED);
    if (!active()) return r->set(desc, name, type, count, elements);
    if (v8_names_destroyed(desc, (int)type, count, elements)) return cudnn_bad_param();
    /* A leaf's attribute that cuDNN reads back: nothing is kept (v8_leaf.c);
     * one kept makes the leaf's shadow, whose slot is loaded meanwhile. */
    int leaf_type, leaf = v8_leaf_attr((int)name, &leaf_type);
    if (leaf == V8_LEAF_KEPT) v8_shadow_prefetch(desc);
    in_real++;
    cudnnStatus_t st = r->set(desc, name, type, count, elements);
    in_real--;
    if (st == CUDNN_STATUS_SUCCESS && leaf != V8_LEAF_READ)
        set_done(r, desc, (int)name, (int)type, count, elements, leaf, leaf_type);
    return st;
}

EXPORT cudnnStatus_t cudnnBackendGetAttribute(cudnnBackendDescriptor_t const desc,
                                              cudnnBackendAttributeName_t name,
                                              cudnnBackendAttributeType_t type, int64_t requested,
                                              int64_t *count, void *elements) {
    REAL_OR(CUDNN_STATUS_NOT_INITIALIZED);
    if (!active()) return r->get(desc, name, type, requested, count, elements);
    if (v8_names_destroyed(desc, -1, 0, NULL)) return cudnn_bad_param();
    cudnnStatus_t answered;
    /* Timed (v8_time.c): heuristics results queries. */
    int heur = name == CUDNN_ATTR_ENGINEHEUR_RESULTS;
    struct v8_timer tc = {0};
    if (heur) v8_time_call(&tc, desc);
    in_real++;
    int done = v8_plan_get(desc, (int)name, (int)type, requested, count, elements, &answered);
    in_real--;
    if (done) {
        if (heur) v8_time_call_end(&tc);
        return answered;
    }
    struct v8_graph *g = NULL;
    if (name == CUDNN_ATTR_ENGINEHEUR_RESULTS && type == CUDNN_TYPE_BACKEND_DESCRIPTOR &&
        ((requested > 0 && count && elements) || (requested == 0 && count))) {
        pthread_mutex_lock(&v8_mu);
        struct v8_shadow *h = v8_shadow_get(desc);
        if (h && h->type == CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR && h->g) {
            g = h->g;
            v8_graph_ref(g);
            v8_lease_progress(g, 1);
        }
        pthread_mutex_unlock(&v8_mu);
    }
    in_real++;
    cudnnStatus_t st = V8_TIMED(heur ? V8T_HEUR : V8T_DESC,
                                g ? v8_reorder(g, desc, requested, count, elements)
                                  : r->get(desc, name, type, requested, count, elements));
    in_real--;
    if (g) {
        pthread_mutex_lock(&v8_mu);
        v8_lease_progress(g, -1);
        v8_graph_unref(g);
        pthread_mutex_unlock(&v8_mu);
    }
    if (heur) v8_time_call_end(&tc);
    return st;
}

EXPORT cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t desc) {
    REAL_OR(CUDNN_STATUS_NOT_INITIALIZED);
    if (!active()) return r->finalize(desc);
    if (v8_names_destroyed(desc, -1, 0, NULL)) return cudnn_bad_param();
    pthread_mutex_lock(&v8_mu);
    struct v8_shadow *s = v8_shadow_get(desc);
    int type = s ? s->type : -1;
    /* The descriptors that only say what they are (operations, engines,
     * configs, a leaf that has a shadow) are marked finalized now, and
     * unmarked in the rare case that cuDNN refuses: one lock, not two.
     * (The host uses a descriptor once its finalize returned.) */
    int marked = s && !s->finalized && type != CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR &&
                 type != CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR && type != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR;
    if (marked) s->finalized = 1;
    pthread_mutex_unlock(&v8_mu);
    /* Timed (v8_time.c): the finalizes of graphs, heuristics and plans. */
    struct v8_timer tc = {0};
    int timed = type == CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR || type == CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR ||
                type == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR;
    if (timed) v8_time_call(&tc, desc);
    in_real++;
    cudnnStatus_t st = V8_TIMED(timed ? tc.fin_phase : V8T_DESC,
                                type == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR ? v8_plan_finalize(desc)
                                                                               : r->finalize(desc));
    switch (type) {
    case -1:
        break;
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
        if (st == CUDNN_STATUS_SUCCESS) v8_graph_finalized(desc);
        break;
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
        if (st == CUDNN_STATUS_SUCCESS) v8_heur_finalized(desc);
        break;
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
        break;
    default:
        if (st != CUDNN_STATUS_SUCCESS && marked) {
            pthread_mutex_lock(&v8_mu);
            struct v8_shadow *t = v8_shadow_get(desc);
            if (t) t->finalized = 0;
            pthread_mutex_unlock(&v8_mu);
        }
    }
    in_real--;
    if (timed) v8_time_call_end(&tc);
    return st;
}

EXPORT cudnnStatus_t cudnnBackendExecute(cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
                                         cudnnBackendDescriptor_t pack) {
    if (__atomic_load_n(&real_ok, __ATOMIC_ACQUIRE) && !v8_watched(plan))
        return real_fns.execute(handle, plan, pack);
    REAL_OR(CUDNN_STATUS_NOT_INITIALIZED);
    if (!active()) return r->execute(handle, plan, pack);
    in_real++;
    cudnnStatus_t st = v8_time_execute(handle, plan, pack);
    in_real--;
    return st;
}
