/*
 * What the files of libconvcache_engine share (internal). backend.c finds
 * cuDNN's backend functions at run time, record.c holds the record's rules
 * (check, seal, checksum, text), plan.c reads a choice out of a plan and
 * builds a plan from one.
 */
#ifndef CONVCACHE_ENGINE_INTERNAL_H
#define CONVCACHE_ENGINE_INTERNAL_H

#include "backend_api.h"
#include "convcache_engine.h"

#define CCE_HIDDEN __attribute__((visibility("hidden")))

/* The backend functions, all present, or NULL from cce_backend(). */
struct cce_backend {
    cc_desc_create_fn create;
    cc_desc_destroy_fn destroy;
    cc_finalize_fn finalize;
    cc_set_attr_fn set;
    cc_get_attr_fn get;
};

/* cce_backend returns the functions of the cuDNN the process uses (see
 * convcache_engine.h for which), found once; NULL when there is none. */
CCE_HIDDEN const struct cce_backend *cce_backend(void);

/* cce_backend_use makes cce_backend() return b's functions (all present)
 * instead of looking them up, if called before the first cce_backend():
 * the interposer passes the real functions it resolved, so that the engine
 * code never calls the interposed ones, nor another cuDNN. */
CCE_HIDDEN void cce_backend_use(const struct cce_backend *b);

/* cce_config_choice records the choice a finalized engine config holds:
 * its engine's global index and its knob choices, sealed, workspace 0 (a
 * config does not say what a plan of it needs). Errors as
 * convcache_engine_from_plan's. For the interposer, which meets configs
 * that heuristics filled before any plan exists. */
CCE_HIDDEN int cce_config_choice(void *cfg, convcache_engine_choice *out, int *status);

/* cce_config_engine reads only the global index of a finalized engine
 * config's engine into *engine (3 calls into cuDNN, where
 * cce_config_choice makes some 20): enough to tell most of a heuristics
 * list's configs from a stored choice. Errors as cce_config_choice's. */
CCE_HIDDEN int cce_config_engine(void *cfg, int64_t *engine);

/* cce_crc32 is CRC-32 (IEEE 802.3, reflected, as zlib's crc32) of n bytes. */
CCE_HIDDEN uint32_t cce_crc32(const void *p, size_t n);

/* cce_sort_knobs sorts c's knob_count knobs by type; returns -1 when a type
 * repeats. */
CCE_HIDDEN int cce_sort_knobs(convcache_engine_choice *c);

#endif
