/*
 * What the stand-in backend's files share: standin_backend.c (descriptors
 * and the API functions), standin_schema.c (which attributes each
 * descriptor type has, and what finalizing checks and computes),
 * standin_engines.c (the engines and heuristics), standin_plan.c (plans,
 * their names, faults and execution), standin_counters.c (what happened
 * per shape, for tests) and standin_trace.c (STANDIN_TRACE).
 */
#ifndef STANDIN_BACKEND_H
#define STANDIN_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "backend_api.h"

#define MAX_ATTRS 12
#define MAX_ELEMS 64
#define SB_ENGINES 6  /* engines installed (STANDIN_ENGINE_COUNT: fewer) */
#define SB_SHAPE_MAX 128
#define SB_TAG_MAX 96

struct attr {
    int name, type;
    int64_t count;
    void *data; /* count elements; descriptors are struct desc * copies */
};

struct desc {
    int type, finalized, nattr;
    struct attr attrs[MAX_ATTRS];
    struct desc *next; /* in the live set */
    /* A finalized plan: its serial number, shape and tag (standin_plan.c). */
    unsigned long long serial;
    char shape[SB_SHAPE_MAX], tag[SB_TAG_MAX];
};

/* One attribute a descriptor type has. type -1: FLOAT or DOUBLE. */
struct attr_rule {
    int name, type, min, max, required, get_only;
    int sub_types[3]; /* accepted descriptor types (0 ends; none: any) */
};

/* Counters for tests (standin_backend_get_stats, exported). */
struct standin_backend_stats {
    unsigned long long plans, heuristics, executes;
    unsigned long long foreign; /* pointers passed that are not live descriptors */
};
void standin_backend_get_stats(struct standin_backend_stats *out);
/* standin_backend_on_plan_built sets a hook (NULL: none) called with each
 * plan whose finalize succeeded, on the finalizing thread, outside the
 * stand-in's lock, before the finalize returns (exported, for tests that
 * hold a build in flight). */
void standin_backend_on_plan_built(void (*fn)(void *plan));

/* Counts per shape (standin_backend_shapes, exported; STANDIN_REPORT writes
 * them at exit: standin_counters.c). A plan is timed when it executed
 * successfully between the two cudaEventRecord calls whose
 * cudaEventElapsedTime its thread then asked for (the stand-in CUDA
 * runtime, standin_cudart.c, reports both); each plan counts once. */
#define SB_TAGS_MAX 48
struct standin_shape_stats {
    char shape[SB_SHAPE_MAX];
    unsigned long long heuristics;   /* ENGINEHEUR descriptors finalized for it */
    unsigned long long built;        /* plans finalized */
    unsigned long long build_failed; /* plan finalizes that failed */
    unsigned long long timed;        /* plans timed */
    unsigned long long executes;     /* successful cudnnBackendExecute calls */
    unsigned long long exec_failed;  /* failed ones */
    long long timed_ws_max;          /* the largest workspace of a plan timed; -1: none */
    int ntimed, nexecuted;           /* distinct tags (at most SB_TAGS_MAX each) */
    char timed_tags[SB_TAGS_MAX][SB_TAG_MAX], executed_tags[SB_TAGS_MAX][SB_TAG_MAX];
    char last[SB_TAG_MAX];           /* the tag of the last plan executed */
};
/* standin_backend_shapes copies up to cap shapes' counts into out, in the
 * order first seen; returns how many shapes there are. */
int standin_backend_shapes(struct standin_shape_stats *out, int cap);
/* Hooks of the stand-in CUDA runtime: thread's record number seq was
 * recorded; the thread timed the window between its records start and stop. */
void standin_backend_on_record(uint64_t seq);
void standin_backend_on_window(uint64_t start, uint64_t stop);

/* ---- standin_backend.c ---- */
struct desc *sb_live(const void *p);
size_t sb_type_size(int type);
const struct attr *sb_attr(const struct desc *d, int name);
int sb_put(struct desc *d, int name, int type, int64_t count, const void *data);
int64_t sb_int(const struct desc *d, int name, int64_t def);
const struct desc *sb_sub(const struct desc *d, int name, int64_t i);
/* sb_free_copy frees a descriptor that is not live (a copy, or a temporary). */
void sb_free_copy(struct desc *d);

/* ---- standin_schema.c ---- */
const struct attr_rule *sb_schema(int desc_type); /* NULL: not a type we have */
const struct attr_rule *sb_rule(int desc_type, int name);
int sb_type_ok(const struct attr_rule *r, int type);
int sb_sub_type_ok(const struct attr_rule *r, int desc_type);
int sb_required_set(const struct desc *d);
/* sb_finalize checks d and fills its computed attributes. */
cudnnStatus_t sb_finalize(struct desc *d);

/* ---- standin_engines.c ---- */
enum { SB_FWD = 1, SB_BWD_DATA = 2, SB_BWD_FILTER = 4 };
long long sb_env_ll(const char *name, long long def);
uint64_t sb_mix(uint64_t h, uint64_t v);
/* The operation of a finalized graph: its op descriptor, or NULL. */
const struct desc *sb_graph_op(const struct desc *graph);
int sb_op_kind(const struct desc *op); /* SB_FWD...; 0: not a convolution */
/* The three tensors of an operation: inputs a, b and the output. */
void sb_op_tensors(const struct desc *op, const struct desc **a, const struct desc **b, const struct desc **out);
uint64_t sb_shape_hash(const struct desc *op); /* the operation and its tensors' dims */
int sb_engine_count(void);
/* sb_config_parts: a finalized config's engine index, graph operation and
 * knob choices (type, value), up to cap; returns the knob count. */
int sb_config_parts(const struct desc *cfg, int64_t *idx, const struct desc **op, int64_t (*knobs)[2], int cap);
/* sb_engine_finalize fills an engine's knob info and notes; NOT_SUPPORTED
 * when the engine does not exist or does not run the graph's operation. */
cudnnStatus_t sb_engine_finalize(struct desc *engine);
cudnnStatus_t sb_config_finalize(struct desc *cfg);
cudnnStatus_t sb_heur_finalize(struct desc *heur);

/* ---- standin_plan.c ---- */
void sb_shape_name(const struct desc *op, char *buf, size_t cap);
void sb_config_tag(const struct desc *cfg, char *buf, size_t cap);
/* sb_selected: does cfg match the fault selector in environment variable
 * env? sb_engine_selected: does the selector name engine idx alone ("eng3")? */
int sb_selected(const char *env, const struct desc *cfg);
int sb_engine_selected(const char *env, int64_t idx);
cudnnStatus_t sb_plan_finalize(struct desc *plan);

/* One execution, prepared under the lock and computed outside it. */
struct sb_run {
    const void *in[2];
    size_t in_bytes[2];
    void *out;
    size_t out_bytes;
    uint64_t seed;
    long long sleep_us;
};
cudnnStatus_t sb_prepare_run(const struct desc *plan, const struct desc *pack, struct sb_run *run);
void sb_compute(const struct sb_run *run);

/* ---- standin_counters.c (its own lock; called with the backend's held or not) ---- */
void sb_count_heuristics(const char *shape);
/* sb_count_build: a plan finalize of shape ended; ok: it succeeded, and
 * plan (its shape and tag filled) gets its serial number. */
void sb_count_build(struct desc *plan, const char *shape, int ok);
/* sb_count_execute: plan executed (ok) or failed. */
void sb_count_execute(const struct desc *plan, int64_t workspace, int ok);

/* ---- standin_trace.c ---- */
int sb_tracing(void); /* STANDIN_TRACE is set (and could be opened) */
void sb_trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *sb_type_name(int desc_type, char *buf, size_t cap);
const char *sb_attr_name(int attr, char *buf, size_t cap);

#endif
