/*
 * What the stand-in backend's files share: standin_backend.c (descriptors
 * and the API functions), standin_schema.c (which attributes each
 * descriptor type has, and what finalizing checks and computes),
 * standin_engines.c (the engines, heuristics and execution).
 */
#ifndef STANDIN_BACKEND_H
#define STANDIN_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "backend_api.h"

#define MAX_ATTRS 12
#define MAX_ELEMS 64

struct attr {
    int name, type;
    int64_t count;
    void *data; /* count elements; descriptors are struct desc * copies */
};

struct desc {
    int type, finalized, nattr;
    struct attr attrs[MAX_ATTRS];
    struct desc *next; /* in the live set */
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
/* The operation of a finalized graph: its op descriptor, or NULL. */
const struct desc *sb_graph_op(const struct desc *graph);
int sb_engine_count(void);
/* sb_engine_finalize fills an engine's knob info; NOT_SUPPORTED when the
 * engine does not exist or does not run the graph's operation. */
cudnnStatus_t sb_engine_finalize(struct desc *engine);
cudnnStatus_t sb_config_finalize(struct desc *cfg);
cudnnStatus_t sb_heur_finalize(struct desc *heur);
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

#endif
