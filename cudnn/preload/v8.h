/*
 * What the backend-API ("v8") files of the interposer share (internal;
 * every name hidden). The design is drawn in cudnn/doc.go:
 *
 *   v8_calls.c    the six cudnnBackend* functions, and the real ones
 *   v8_shadow.c   what the interposer knows of each live descriptor
 *   v8_slab.c     the small shadows' memory: 32-byte slots of its own
 *   v8_leaf.c     tensors and convolutions: read back, not shadowed
 *   v8_key.c      a graph's key, from the attributes recorded
 *   v8_graph.c    one operation graph's life: look up, serve, record
 *   v8_reorder.c  the stored choices moved to the front of heuristics
 *   v8_lease.c    single flight: one benchmark of a new graph at a time
 *   v8_choices.c  the stored value: a short list of engine choices
 *   v8_time.c     where the time goes: wall time by phase, per graph and in all
 */
#ifndef CONVCACHE_PRELOAD_V8_H
#define CONVCACHE_PRELOAD_V8_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "backend_api.h"
#include "convcache_engine.h"
#include "engine.h"
#include "preload.h"

/* ---- the real functions (v8_calls.c) ------------------------------------ */

struct v8_real {
    cc_desc_create_fn create;
    cc_desc_destroy_fn destroy;
    cc_finalize_fn finalize;
    cc_set_attr_fn set;
    cc_get_attr_fn get;
    cc_execute_fn execute;
};

/* v8_real returns the real backend functions, all present, or NULL. */
const struct v8_real *v8_real(void);

/* ---- stored choices (v8_choices.c) -------------------------------------- */

#define V8_MAX_CHOICES 4
#define V8_VALUE_MAGIC 0x31564343u  /* "CCV1" */
#define V8_VALUE_MAGIC2 0x32564343u /* "CCV2": with what each choice's plans read as */
#define V8_VALUE_MAX (8 + V8_MAX_CHOICES * (sizeof(convcache_engine_choice) + 8))

/* The value stored under a graph's key: the choices the host made for it,
 * most preferred first. Several stay side by side when each was chosen
 * where the others were not on offer (deterministic and not, tf32 and
 * not, a workspace limit). Each choice is what the engine config the host
 * built its plan from reads as; plan_id is what that plan read as
 * (v8_choice_id), or 0 when the same. */
struct v8_choices {
    int n;
    int dropped; /* n 0: the choice last served failed after timing (stand aside) */
    convcache_engine_choice c[V8_MAX_CHOICES];
    uint64_t plan_id[V8_MAX_CHOICES];
};

/* v8_choice_id is a 64-bit digest of c's engine and knobs, never 0. */
uint64_t v8_choice_id(const convcache_engine_choice *c);

/* v8_choices_decode parses a stored value; 0, or -1 for anything that is
 * not a well-formed list of checked records (the value is then ignored). */
int v8_choices_decode(const void *value, size_t len, struct v8_choices *out);

/* v8_choices_encode writes the list; returns the length, or 0 if cap is short. */
size_t v8_choices_encode(const struct v8_choices *l, void *out, size_t cap);

/* v8_choices_find returns the index of the choice with c's engine and
 * knobs, or -1. */
int v8_choices_find(const struct v8_choices *l, const convcache_engine_choice *c);

/* v8_choice_runs reports whether plan (what a plan read as) is what the
 * plans of choice c run: as recorded in plan_id, else (0) c itself. */
int v8_choice_runs(const convcache_engine_choice *c, uint64_t plan_id, const convcache_engine_choice *plan);

/* v8_choices_merge is the list to store after the host chose w (w NULL:
 * the choice served failed in the host's run after timing, and the list
 * to store is the "dropped" one) (its
 * plan reading as w_plan, 0 when as w):
 * stored choices in drop (a bit per index: failed to finalize or run, or
 * no longer offered by heuristics) go; those the host did not build (its
 * own filters) stay ahead of w, as they win where they are allowed; w
 * replaces an equal one. */
void v8_choices_merge(const struct v8_choices *old, unsigned drop, const convcache_engine_choice *w,
                      uint64_t w_plan, struct v8_choices *out);

/* ---- shadows (v8_shadow.c) ---------------------------------------------- */

struct v8_graph;

/* What the interposer knows of one live descriptor it tracks. The common
 * part comes first (16 bytes); the part after it depends on the type and
 * is allocated only for the types that use it (v8_shadow.c): a small
 * descriptor (an operation, or a tensor or convolution that keeps an
 * attribute, v8_leaf.c) keeps its attributes packed (v8_key.c) right
 * after the common part, and has no graph, attribute pointer or
 * typed part. Read them through v8_shadow_graph and v8_shadow_attrs. */
struct v8_shadow {
    void *desc;
    uint16_t attrs_len;  /* the bytes of its encoded attributes */
    uint16_t attrs_room; /* small: the bytes after the common part */
    uint8_t type;
    /* bad: an attribute cannot be keyed. Plan: counted in the execute
     * filter (v8_watch.c); deferred: finalized for the host, not yet in
     * cuDNN (v8_plans.c), and being made real by one thread
     * (materializing). Engine config: the host destroyed it while a
     * deferred plan or a reader still needed it (cuDNN's destroy waits);
     * any later call on it is answered as for a destroyed descriptor. */
    uint8_t finalized : 1, bad : 1, watched : 1, deferred : 1, materializing : 1, destroy_pending : 1;
    int8_t stored; /* engine config, plan: index of the stored choice it is, -1 none */
    /* ---- small descriptors end here (V8_SHADOW_HEAD) ---- */
    /* The graph this descriptor belongs to (graph, heuristics, engine,
     * engine config, plan), counted in its refs. */
    struct v8_graph *g;
    /* Graph: its attributes as set, encoded (v8_key.c). */
    unsigned char *attrs;
    union {
        struct { /* graph: its handle and its one operation, encoded */
            cudnnHandle_t handle;
            int op_type, nops;
        };
        struct { /* heuristics: its mode, its graph, how its results are given */
            void *graph_desc;
            struct v8_heur_plan *heur_plan;
            int heur_mode;
        };
        struct { /* engine config: deferred plans built from it and readers of it */
            int holds;
        };
        struct { /* plan */
            /* executes that reached cuDNN and succeeded, refused executes */
            long long ok_runs, refused;
            void *cfg;           /* its engine config */
            int64_t reported_ws; /* deferred: the workspace its config reported */
            /* the status every execute gets (its finalize failed late, or
             * it needs more workspace than the host was told) */
            cudnnStatus_t blocked;
            /* the finalized plans of g, in a list (v8_shadow_plans) */
            struct v8_shadow *gnext, **gprev;
        };
    };
};

#define V8_SHADOW_HEAD 16
#define V8_SLOT 32 /* a small shadow's slot (v8_slab.c) */
_Static_assert(offsetof(struct v8_shadow, g) == V8_SHADOW_HEAD, "a small shadow's common part is 16 bytes");

/* v8_slab_alloc returns a zeroed V8_SLOT-byte slot, or NULL; v8_slab_free
 * gives one back (v8_mu held: v8_slab.c). */
void *v8_slab_alloc(void);
void v8_slab_free(void *slot);

/* v8_small_type reports whether descriptors of type are small: the many a
 * host makes of each graph (tensors, convolutions, operations), whose
 * shadow, where they have one, is the common part and their packed
 * attributes after it (v8_shadow.c, v8_key.c). v8_small is the same for
 * shadow s. */
static inline int v8_small_type(int type) {
    return type == CUDNN_BACKEND_TENSOR_DESCRIPTOR || type == CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR ||
           type == CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR ||
           type == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR ||
           type == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR;
}
static inline int v8_small(const struct v8_shadow *s) { return v8_small_type(s->type); }
/* v8_shadow_in_slab: s is in its slab's slot still (a small shadow that
 * outgrew the slot's room was moved to malloc's block, with more room). */
static inline int v8_shadow_in_slab(const struct v8_shadow *s) {
    return v8_small(s) && s->attrs_room == V8_SLOT - V8_SHADOW_HEAD;
}

/* v8_shadow_graph is the graph s belongs to, or NULL (a small descriptor
 * belongs to none); v8_shadow_attrs is where s's encoded attributes are. */
static inline struct v8_graph *v8_shadow_graph(const struct v8_shadow *s) {
    return s && !v8_small(s) ? s->g : NULL;
}
static inline unsigned char *v8_shadow_attrs(const struct v8_shadow *s) {
    return v8_small(s) ? (unsigned char *)s + V8_SHADOW_HEAD : s->attrs;
}

/* One mutex guards every shadow and graph. It is never held across a
 * call into cuDNN that does work (finalize, execute, heuristics), nor
 * while waiting for another benchmark; a destroy under it is fine (calls
 * cuDNN makes back into this library pass straight through: in_real). */
extern pthread_mutex_t v8_mu;

/* v8_shadow_prefetch starts loading desc's slot of the table (v8_mu not
 * needed): a lookup that follows a call into cuDNN finds it in cache. */
void v8_shadow_prefetch(const void *desc);
/* v8_shadow_get returns desc's shadow or NULL (v8_mu held). */
struct v8_shadow *v8_shadow_get(const void *desc);
/* v8_shadow_typed is the same for a descriptor of type only: the typed
 * part of a shadow is read through it. */
struct v8_shadow *v8_shadow_typed(const void *desc, int type);
/* v8_shadow_attrs_grow makes room for cap bytes of s's encoded
 * attributes; it returns s, moved perhaps (the table follows), or NULL
 * with s unchanged when there is no memory (v8_mu held). */
struct v8_shadow *v8_shadow_attrs_grow(struct v8_shadow *s, size_t cap);
/* v8_shadow_tracked_type reports whether descriptors of type get a shadow. */
int v8_shadow_tracked_type(int type);
/* v8_shadow_add makes and tracks the shadow of a new descriptor of type
 * (v8_mu held); past the bound on live shadows, or out of memory, it
 * makes none (the descriptor is then unknown, and a graph made of it
 * passes through). */
void v8_shadow_add(void *desc, int type);
/* v8_shadow_get_or_add returns desc's shadow if it is of type, else makes
 * one as v8_shadow_add does; NULL where none can be made (v8_mu held). */
struct v8_shadow *v8_shadow_get_or_add(void *desc, int type);
/* v8_shadow_peek returns desc's shadow, or NULL with *w the word a leaf
 * keeps in place of a shadow (v8_leaf.c; 0: none); v8_shadow_set_word
 * gives desc that word (its low bit set), forgetting a shadow it had; 0
 * where it cannot (past the bound, no memory). v8_shadow_get answers NULL
 * for such a leaf, and v8_shadow_drop forgets it. (v8_mu held.) */
struct v8_shadow *v8_shadow_peek(const void *desc, uint64_t *w);
int v8_shadow_set_word(void *desc, uint64_t w);
/* v8_shadow_drop forgets desc (v8_mu held), dropping its graph reference. */
void v8_shadow_drop(const void *desc);
/* v8_shadow_plan_join puts plan p on its graph's list of finalized plans,
 * v8_shadow_plan_leave takes it off (v8_mu held; each at most once). */
void v8_shadow_plan_join(struct v8_shadow *p);
void v8_shadow_plan_leave(struct v8_shadow *p);
/* v8_shadow_live counts the live shadows (v8_mu held). */
long v8_shadow_live(void);

/* ---- leaves: tensors and convolutions (v8_leaf.c) ------------------------ */

/* v8_leaf_attr sorts an attribute a host set: not a leaf's (NONE), one a
 * leaf is read back with (READ: nothing to keep), one kept as set (KEPT),
 * or a leaf's that is not keyed (UNKEYED: the leaf is marked); *type is
 * the leaf's type, or 0. */
enum { V8_LEAF_NONE, V8_LEAF_READ, V8_LEAF_KEPT, V8_LEAF_UNKEYED };
extern uint8_t v8_leaf_kinds[2][100]; /* [tensor?][name % 100], from v8_leaf.c's lists */
static inline int v8_leaf_attr(int name, int *type) {
    /* cudnn_graph.h numbers each type's attributes in its own hundred:
     * every set of every tensor asks, so a load answers. */
    unsigned c = (unsigned)name - 100u, t = (unsigned)name - 900u;
    if (c >= 100 && t >= 100) {
        *type = 0;
        return V8_LEAF_NONE;
    }
    *type = c < 100 ? CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR : CUDNN_BACKEND_TENSOR_DESCRIPTOR;
    int k = c < 100 ? v8_leaf_kinds[0][c] : v8_leaf_kinds[1][t];
    return k ? k : V8_LEAF_UNKEYED;
}
/* v8_leaf_taken is the type of leaf an operation's attribute name holds
 * (a tensor, a convolution), or 0. */
int v8_leaf_taken(int name);
/* v8_leaf_set keeps a KEPT attribute the host set on leaf desc of type,
 * in its word or, when it does not fit one, its shadow; name -1 marks the
 * leaf unkeyable instead (v8_mu held). */
void v8_leaf_set(void *desc, int type, int name, int atype, int64_t count, const void *elements);
/* v8_leaf_kept writes the canonical records of what leaf desc of type
 * keeps as set (its word's or its shadow's) into out (cap bytes); returns
 * their length (0: none), or SIZE_MAX when it is marked unkeyable or is
 * not of type (v8_mu held). */
size_t v8_leaf_kept(const void *desc, int type, unsigned char *out, size_t cap);
/* v8_leaf_read writes the canonical records of leaf desc of type that are
 * read back from cuDNN through r into out (cap bytes); returns their
 * length, or SIZE_MAX when the leaf cannot be keyed. v8_mu not held (it
 * calls cuDNN). */
size_t v8_leaf_read(const struct v8_real *r, void *leaf, int type, unsigned char *out, size_t cap);

/* ---- the execute filter (v8_watch.c) ------------------------------------ */

/* Executes of the plans that need a look (a plan of a graph being
 * benchmarked, a deferred or blocked plan) go through v8_execute; every
 * other execute goes straight to cuDNN after v8_watched, one load. It is a
 * counting filter over plan addresses: a plan that shares a slot with a
 * watched one takes the slow path too (and is then let through), never the
 * other way round. */
#define V8_WATCH_BITS 16
extern unsigned v8_watch_slots[1u << V8_WATCH_BITS];

static inline unsigned v8_watch_slot(const void *plan) {
    uint64_t v = (uint64_t)(uintptr_t)plan;
    v ^= v >> 17;
    v *= 0x9E3779B97F4A7C15ull;
    return (unsigned)(v >> (64 - V8_WATCH_BITS));
}

static inline int v8_watched(const void *plan) {
    return __atomic_load_n(&v8_watch_slots[v8_watch_slot(plan)], __ATOMIC_RELAXED) != 0;
}

/* v8_watch and v8_unwatch put a plan in and out of the filter (v8_mu
 * held; idempotent: the shadow's watched bit says). */
void v8_watch(struct v8_shadow *p);
void v8_unwatch(struct v8_shadow *p);
/* v8_watch_update sets p's place in the filter from its state: watched
 * while its graph is benchmarked and it may still need deciding, or while
 * it is deferred or blocked (v8_mu held). */
void v8_watch_update(struct v8_shadow *p);

/* ---- keys (v8_key.c) ---------------------------------------------------- */

/* v8_attrs_put records one attribute in s's encoding; sub-descriptors are
 * encoded by content (their shadows' encodings). s may move (returned). */
struct v8_shadow *v8_attrs_put(struct v8_shadow *s, int name, int type, int64_t count, const void *elements);

/* v8_attrs_put_leaf records a leaf of type an operation takes in (name:
 * its X, W, Y or convolution): its records read back (enc, n bytes, from
 * v8_leaf_read) merged with those it keeps (kept, k bytes, from
 * v8_leaf_kept); either SIZE_MAX makes s unkeyable. s may move. */
struct v8_shadow *v8_attrs_put_leaf(struct v8_shadow *s, int name, int type, const unsigned char *kept, size_t k,
                                    const unsigned char *enc, size_t n);
/* v8_canonical writes s's encoding as the key has it (canonical records,
 * sorted by name) into out (cap bytes); returns its length, or SIZE_MAX
 * when it does not fit. */
size_t v8_canonical(const struct v8_shadow *s, unsigned char *out, size_t cap);
/* v8_record writes one canonical record (count elements of an attribute
 * type) into out (cap bytes); returns its length, or 0 when it does not
 * fit, has no element or the type is not keyed. */
size_t v8_record(unsigned char *out, size_t cap, int name, int type, unsigned count, const void *elements);

/* v8_key builds graph's key into out (CONVCACHE_KEY_MAX) from its one
 * operation; returns the length, or 0 when the graph is not one the
 * interposer serves (not a single convolution, or something unkeyable). */
size_t v8_key(const struct v8_shadow *graph, unsigned char *out, size_t cap);

/* ---- one graph (v8_graph.c) --------------------------------------------- */

enum {
    G_IDLE,      /* built, no plan executed yet */
    G_SERVING,   /* the stored choice ran first and well: others' timing refused */
    G_ASIDE,     /* a stored choice could not serve: the host benchmarks as without us */
    G_RECORDING, /* a new graph: the host benchmarks, the interposer learns its choice */
    G_DONE       /* nothing more to watch */
};

struct v8_lease;

/* ---- time by phase (v8_time.c) ------------------------------------------- */

enum {
    V8T_CALLS,        /* the interposed calls, whole (never a timer's phase) */
    V8T_OWN,          /* the interposer's own work inside them */
    V8T_HEUR,         /* heuristics: finalize and results queries */
    V8T_HEUR_OURS,    /* of them, the interposer's own: results read ahead, its fallback query */
    V8T_FIN_STORED,   /* a stored choice's plan finalized */
    V8T_FIN_OTHER,    /* any other plan finalized (deferred ones when made real) */
    V8T_EXEC_WARMUP,  /* a watched plan's first execute */
    V8T_EXEC_TIMING,  /* its later ones while its graph is watched */
    V8T_EXEC_OTHER,   /* executes of unwatched plans while some graph is watched */
    V8T_LEASE,        /* waits for another thread's or process's benchmark */
    V8T_CACHE,        /* the cache's find and insert */
    V8T_DESC,         /* cuDNN's create, set, get, destroy, other finalizes */
    V8T_SETUP,        /* loading libconvcache, a device's cache opened */
    V8T_HELPER_CACHE, /* get_or_create on lease helper threads (outside the calls) */
    V8T_HELPER_WAIT,  /* its builder waiting for the host's benchmark (not reported) */
    V8T_N
};

/* One interval, on the thread's stack of nested ones. */
struct v8_timer {
    uint64_t t0, child;
    int phase, skip;
    int exec_phase, fin_phase; /* a root's: what an execute or finalize of its descriptor is */
    struct v8_timer *up;
    struct v8_graph *g;  /* a root's graph, referenced */
    uint64_t by[V8T_N];  /* a root's: its intervals' own time by phase */
};

/* A graph's figures (v8_mu held): summed as each call ends. */
struct v8_graph_time {
    uint64_t ns[V8T_N];
    int logged;
};

/* v8_time_begin and v8_time_end bracket one interval of phase, nested in
 * whatever interval the thread is in; v8_mu not held. */
void v8_time_begin(struct v8_timer *t, int phase);
void v8_time_end(struct v8_timer *t);
/* v8_time_call and v8_time_call_end bracket one interposed call (a root;
 * its own time is V8T_OWN) about desc (NULL: no graph's). */
void v8_time_call(struct v8_timer *t, const void *desc);
void v8_time_call_end(struct v8_timer *t);
/* The phase of a finalize of shadow s (v8_mu held; s may be NULL). */
int v8_time_fin_phase(const struct v8_shadow *s);
/* v8_time_execute is v8_execute as one timed call (out of line: the
 * execute's fast path keeps its small frame). */
cudnnStatus_t v8_time_execute(cudnnHandle_t h, void *plan, void *pack);
/* V8_TIMED evaluates expr as one interval of phase. */
#define V8_TIMED(phase, expr)                      \
    __extension__({                                \
        struct v8_timer t_;                        \
        v8_time_begin(&t_, (phase));               \
        __typeof__(expr) r_ = (expr);              \
        v8_time_end(&t_);                          \
        r_;                                        \
    })

struct v8_graph {
    int refs;
    unsigned char *key;
    size_t key_len;
    convcache_handle *cache;
    int strict;           /* CONVCACHE_MODE=strict: never benchmark */
    struct v8_choices stored;
    unsigned offered;     /* stored choices heuristics offered */
    unsigned failed;      /* stored choices that failed to finalize, run or match */
    struct v8_lease *lease;
    int phase;
    struct v8_shadow *plan_list; /* its finalized plans (v8_shadow_plan_join) */
    void *candidate;      /* G_SERVING: the plan that serves */
    int candidate_idx;
    int plans;            /* finalized plans alive */
    int stored_plans;     /* of them, stored choices */
    unsigned timed;       /* stored choices the host timed (not serving) */
    int heur_seen;        /* heuristics results were read */
    int heur_unreadable;  /* a result's choice could not be read */
    int reorder_skipped;  /* results given in cuDNN's order: V8_REORDER_* */
    int lease_tried;
    int graph_gone, post, executed, recorded;
    int built, ran, refused; /* plans finalized, plans run (timed), executes refused */
    int deferred;            /* plans whose finalize was deferred */
    const char *aside_why;   /* G_ASIDE: why, for the log (a static string) */
    int earnest;             /* G_SERVING: timing is over; the candidate's next run is in earnest */
    void *last_run;          /* the plan that ran last */
    int revisit;             /* it had run before another did */
    struct v8_graph_time time; /* v8_time.c */
};

/* Hooks, called by v8_calls.c around the real calls, v8_mu not held. */
void v8_graph_finalized(void *graph);      /* after a successful finalize */
void v8_heur_finalized(void *heur);        /* after a successful finalize; may wait */
cudnnStatus_t v8_execute(cudnnHandle_t h, void *plan, void *pack);
/* v8_destroying runs before the real destroy, and reports whether cuDNN's
 * destroy is to happen now; if not (a deferred plan still needs the
 * config, or the host destroyed it already), *st is the host's answer. */
int v8_destroying(void *desc, cudnnStatus_t *st);

/* Plans (v8_plans.c): finalizing one (strict refusal, deferral), reading
 * a deferred one (1: answered), making a deferred one real before it
 * runs (the status its execute gets, or SUCCESS), and letting go of it. */
cudnnStatus_t v8_plan_finalize(void *plan);
int v8_plan_get(void *plan, int name, int type, int64_t requested, int64_t *count, void *elements,
                cudnnStatus_t *st);
cudnnStatus_t v8_plan_materialize(void *plan);
/* v8_config_destroy_pending marks engine config c destroyed by the host
 * while cuDNN's destroy of it waits (v8_mu held); 1 if it was already. */
int v8_config_destroy_pending(struct v8_shadow *c);
/* v8_names_destroyed reports whether a call on desc, with these elements,
 * names an engine config the host destroyed (whose cuDNN destroy waits):
 * cuDNN would answer it as for any destroyed descriptor. v8_mu not held;
 * one load when there is none (v8_destroys_pending counts them). */
extern int v8_destroys_pending;
int v8_names_destroyed_look(const void *desc, int type, int64_t count, const void *elements);
static inline int v8_names_destroyed(const void *desc, int type, int64_t count, const void *elements) {
    return __atomic_load_n(&v8_destroys_pending, __ATOMIC_RELAXED) &&
           v8_names_destroyed_look(desc, type, count, elements);
}
/* v8_plan_release lets go of a deferred plan's config (v8_mu held); it
 * returns the config when cuDNN's destroy of it, asked for meanwhile, is
 * now due (the caller makes it, v8_mu released), else NULL. */
void *v8_plan_release(struct v8_shadow *p);

/* References and the end of watching (v8_mu held). v8_close_window ends
 * the benchmark window: nothing is refused or learnt any more, and the
 * graph's plans leave the execute filter but for deferred and blocked ones. */
void v8_graph_ref(struct v8_graph *g);
void v8_graph_unref(struct v8_graph *g);
void v8_close_window(struct v8_graph *g);
/* v8_graph_open reports whether g's window is open. */
static inline int v8_graph_open(const struct v8_graph *g) { return g && g->phase != G_DONE; }

/* v8_moved_on is called when this thread starts on graph g (a graph or
 * heuristics finalized, a plan of it executed): the window of a graph
 * whose stored choice this thread was timing closes, since a timing loop
 * does not leave its graph before it ends (v8_mu held). */
void v8_moved_on(struct v8_graph *g);

/* v8_plan_choice reads the choice a plan runs (engine code): 0 or -1. */
int v8_plan_choice(void *plan, convcache_engine_choice *out);
/* v8_plan_config_choice reads the choice the engine config a plan was
 * built from holds (as heuristics results are read), holding the config
 * alive meanwhile: 0, or -1 (unknown config, or unreadable). */
int v8_plan_config_choice(void *plan, convcache_engine_choice *out);

/* ---- reordering heuristics (v8_reorder.c) ------------------------------- */

/* Why a graph's heuristics results reached the host in cuDNN's order
 * (v8_graph.reorder_skipped; v8_serve.c says it when the graph stands
 * aside). */
enum {
    V8_REORDER_UNREAD = 1, /* they could not be read ahead */
    V8_REORDER_CHANGED,    /* the host's read filled other than the read ahead */
};

/* v8_reorder answers a heuristics results query of g's (requested 0: the
 * count) so that g's stored choices come first, in their order; *count as
 * the real call sets it, or one more when a choice only the fallback list
 * offers is put in front. Marks the stored choices offered and tags each
 * config's shadow with the stored index it is. */
struct v8_heur_plan;
cudnnStatus_t v8_reorder(struct v8_graph *g, void *heur, int64_t requested, int64_t *count,
                         void **elements);
void v8_heur_plan_free(struct v8_heur_plan *hp);

/* ---- single flight (v8_lease.c) ----------------------------------------- */

enum { LEASE_LEAD = 1, LEASE_VALUE, LEASE_NONE };

/* v8_lease_take asks for key: it returns LEASE_LEAD (this caller benchmarks
 * it and must call v8_lease_finish), LEASE_VALUE (another thread or process
 * did: *value holds it) or LEASE_NONE (no lease: benchmark alone). It
 * waits, bounded, while another benchmarks the key. */
int v8_lease_take(convcache_handle *cache, const unsigned char *key, size_t key_len,
                  struct v8_lease **out, unsigned char *value, size_t cap, size_t *len);

/* v8_lease_finish hands the value to store (NULL: store nothing) and lets
 * the waiters go. The lease is freed by whichever side finishes last. It
 * reports whether the value was taken to be stored; 0 for a value means
 * the builder stopped waiting (the host made no progress for a while, or
 * the build timeout passed), and the caller stores it itself. */
int v8_lease_finish(struct v8_lease *l, const void *value, size_t len);

/* v8_lease_progress notes a call of the host's on g beginning (delta 1)
 * or ending (-1), when g holds a lease (v8_mu held). */
void v8_lease_progress(struct v8_graph *g, int delta);

/* ---- counters ------------------------------------------------------------ */

#define COUNT_V8(field) __atomic_fetch_add(&counters.field, 1, __ATOMIC_RELAXED)

#endif
