/*
 * convcache_engine.h - a cuDNN backend ("graph") API engine choice as a
 * fixed-size record, so that a benchmark's winner can be stored in convcache
 * and a plan rebuilt from it in another process in microseconds.
 *
 * An execution plan (CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR) cannot be
 * stored: it is tied to a cuDNN handle. What is portable is the choice it
 * was built from: the engine's global index, its knob choices and the
 * workspace it needs. That choice is valid for one operation graph shape on
 * one GPU model with one cuDNN version, which convcache's scope
 * (convcache_cudnn_scope) already separates.
 *
 * Link with -lconvcache_engine (a small C library; it does not need
 * libconvcache). cuDNN is never linked: its backend functions are found at
 * run time in the cuDNN the process has already loaded (libcudnn.so.9 or
 * libcudnn_graph.so.9), else in $CONVCACHE_CUDNN_LIBRARY, else in
 * libcudnn.so.9 from the loader's search path. The descriptors you pass must
 * come from that same cuDNN.
 *
 * Conventions (as convcache.h): 0 on success, a negative
 * CONVCACHE_ENGINE_E_* code on failure; the codes are fixed and
 * convcache_engine_strerror() names them. Nothing here aborts, exits or
 * keeps a pointer you passed. Every function is safe to call from many
 * threads at once (on distinct plans: cuDNN does not promise more).
 *
 * Descriptors are passed as void *: a cudnnBackendDescriptor_t and a
 * cudnnHandle_t convert to it in C and C++ without a cast.
 */
#ifndef CONVCACHE_ENGINE_H
#define CONVCACHE_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- The record --------------------------------------------------------- */

#define CONVCACHE_ENGINE_MAGIC     0x31454343u /* "CCE1" as little-endian bytes */
#define CONVCACHE_ENGINE_FORMAT    1           /* the format this header writes */
#define CONVCACHE_ENGINE_MAX_KNOBS 48          /* more than cuDNN 9's 46 knob types */

/* One knob choice: a cudnnBackendKnobType_t and its value. */
typedef struct convcache_engine_knob {
    int32_t type;     /* CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE */
    uint32_t zero;    /* always 0 */
    int64_t value;    /* CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE */
} convcache_engine_knob;

/*
 * An engine choice. Trivially copyable, 800 bytes, little-endian, no
 * pointers: store its bytes as they are.
 *
 *   offset  size  field
 *        0     4  magic      CONVCACHE_ENGINE_MAGIC
 *        4     2  format     CONVCACHE_ENGINE_FORMAT
 *        6     2  size       sizeof(convcache_engine_choice) = 800
 *        8     8  engine     CUDNN_ATTR_ENGINE_GLOBAL_INDEX
 *       16     8  workspace  CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, bytes
 *       24     4  knob_count 0..CONVCACHE_ENGINE_MAX_KNOBS
 *       28     4  crc        CRC-32 (IEEE 802.3, as zlib's crc32) of the 800
 *                            bytes with this field zero
 *       32   768  knobs      knob_count choices sorted by type, then zeros
 *
 * Every byte counts: the unused knob slots and the zero fields must be 0.
 * convcache_engine_check() tells a good record from a truncated, foreign,
 * damaged or newer one.
 */
typedef struct convcache_engine_choice {
    uint32_t magic;
    uint16_t format;
    uint16_t size;
    int64_t engine;
    int64_t workspace;
    uint32_t knob_count;
    uint32_t crc;
    convcache_engine_knob knobs[CONVCACHE_ENGINE_MAX_KNOBS];
} convcache_engine_choice;

/* ---- Error codes (fixed values) ------------------------------------------ */

#define CONVCACHE_ENGINE_OK              0
#define CONVCACHE_ENGINE_E_INVALID     (-1)  /* a NULL pointer or an invalid argument */
#define CONVCACHE_ENGINE_E_UNAVAILABLE (-2)  /* no cuDNN, or one without the backend API */
#define CONVCACHE_ENGINE_E_TRUNCATED   (-3)  /* fewer bytes than a record */
#define CONVCACHE_ENGINE_E_FOREIGN     (-4)  /* not an engine choice (wrong magic or size) */
#define CONVCACHE_ENGINE_E_VERSION     (-5)  /* a newer record format than this library reads */
#define CONVCACHE_ENGINE_E_CORRUPT     (-6)  /* bad checksum or a field out of range */
#define CONVCACHE_ENGINE_E_NO_ENGINE   (-7)  /* this cuDNN has no such engine for this graph */
#define CONVCACHE_ENGINE_E_KNOB        (-8)  /* a knob this engine lacks, or a value outside
                                                its range */
#define CONVCACHE_ENGINE_E_FINALIZE    (-9)  /* cuDNN refused to finalize the engine config
                                                or the plan */
#define CONVCACHE_ENGINE_E_MISMATCH    (-10) /* the finalized plan runs another engine or other
                                                knobs than recorded; it was destroyed */
#define CONVCACHE_ENGINE_E_TOO_MANY    (-11) /* the plan has more knob choices than a record
                                                holds (it cannot be recorded) */
#define CONVCACHE_ENGINE_E_CUDNN       (-12) /* another cuDNN call failed (see the status) */

/* ---- Functions ----------------------------------------------------------- */

/*
 * convcache_engine_from_plan - record the choice a finalized execution plan
 * was built from: its engine config's engine global index and knob choices
 * (sorted by knob type), and its workspace size. out is sealed (magic,
 * format, size, crc) and ready to store.
 *
 * plan    a finalized CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR.
 * status  if not NULL, receives the cudnnStatus_t of the failed cuDNN call
 *         (0 when none failed).
 *
 * Returns 0, or CONVCACHE_ENGINE_E_INVALID (NULL plan or out),
 * CONVCACHE_ENGINE_E_UNAVAILABLE, CONVCACHE_ENGINE_E_TOO_MANY,
 * CONVCACHE_ENGINE_E_CUDNN (for example a plan not finalized).
 * On failure *out is zeroed.
 */
int convcache_engine_from_plan(void *plan, convcache_engine_choice *out, int *status);

/* A plan built from a choice, with the descriptors it was built from (the
 * engine, its knob choices and its engine config), which are kept alive as
 * long as the plan, as cudnn_frontend does. Opaque. */
typedef struct convcache_engine_plan convcache_engine_plan;

/*
 * convcache_engine_build_plan - build and finalize an execution plan from a
 * recorded choice: engine (graph + index) -> knob choices -> engine config
 * -> plan (handle + config). The index is checked against the graph's
 * engine count and the knobs against the engine's knob info first, and
 * after finalizing, the plan's engine config is read back: its engine index
 * and every knob choice must equal the record's, or the plan is destroyed
 * and CONVCACHE_ENGINE_E_MISMATCH returned. So a plan returned here runs
 * exactly the recorded engine and knobs.
 *
 * choice  a record (checked as convcache_engine_check does).
 * handle  a cudnnHandle_t.
 * graph   a finalized CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR. It stays the
 *         caller's, and must outlive the plan.
 * out     receives the plan (convcache_engine_plan_descriptor gives the
 *         CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR to execute); free it with
 *         convcache_engine_plan_destroy. NULL on failure.
 * status  if not NULL, receives the cudnnStatus_t of the failed cuDNN call
 *         (0 when none failed).
 *
 * Returns 0, or CONVCACHE_ENGINE_E_INVALID, E_UNAVAILABLE, E_TRUNCATED,
 * E_FOREIGN, E_VERSION, E_CORRUPT (a bad record), E_NO_ENGINE (an index
 * out of this cuDNN's range for the graph, or an engine that refuses the
 * graph), E_KNOB, E_FINALIZE, E_MISMATCH, E_CUDNN. On any error nothing is
 * left allocated; the caller benchmarks again and replaces the entry.
 */
int convcache_engine_build_plan(const convcache_engine_choice *choice, void *handle, void *graph,
                                convcache_engine_plan **out, int *status);

/* convcache_engine_plan_descriptor - the finalized execution plan of p (a
 * cudnnBackendDescriptor_t, owned by p), or NULL for a NULL p. */
void *convcache_engine_plan_descriptor(const convcache_engine_plan *p);

/* convcache_engine_plan_choice - the choice p was built from, sealed, with
 * the workspace size this plan needs on this cuDNN; NULL for a NULL p. */
const convcache_engine_choice *convcache_engine_plan_choice(const convcache_engine_plan *p);

/* convcache_engine_plan_destroy - destroy the plan and the descriptors it
 * was built from. Accepts NULL. */
void convcache_engine_plan_destroy(convcache_engine_plan *p);

/*
 * convcache_engine_verify - whether a finalized plan runs exactly the
 * recorded engine and knob choices (for plans built by other means, such as
 * cudnn_frontend's builders). The workspace size is not compared.
 *
 * Returns 0 when they match, CONVCACHE_ENGINE_E_MISMATCH when they do not,
 * or an error of convcache_engine_from_plan / convcache_engine_check.
 */
int convcache_engine_verify(void *plan, const convcache_engine_choice *choice, int *status);

/*
 * convcache_engine_check - validate len bytes read from storage as a record,
 * in this order: magic (E_FOREIGN; fewer than 4 bytes: E_TRUNCATED), format
 * (E_VERSION when newer: checked before the length, as a newer record may
 * be of another size), length (E_TRUNCATED when short), size field and
 * exact length (E_FOREIGN), checksum (E_CORRUPT), fields: knob_count, zero
 * fields and unused slots, knobs sorted by type without repeats, engine and
 * workspace not negative (E_CORRUPT). On success copies the record to *out (which may
 * be NULL). bytes may be unaligned.
 */
int convcache_engine_check(const void *bytes, size_t len, convcache_engine_choice *out);

/*
 * convcache_engine_seal - sort c's knobs by type, zero everything unused,
 * and set magic, format, size and crc. For records made by hand (tests,
 * tools). Returns 0, or E_INVALID (NULL) or E_CORRUPT (knob_count too large,
 * negative engine or workspace, a knob type repeated).
 */
int convcache_engine_seal(convcache_engine_choice *c);

/* convcache_engine_same - 1 when a and b name the same engine and the same
 * knob choices (workspace ignored), else 0. Both must be sealed or checked. */
int convcache_engine_same(const convcache_engine_choice *a, const convcache_engine_choice *b);

/* convcache_engine_format - write a choice as text, in the manner of
 * cudnn_frontend's plan tag: "eng<N>_k<T>=<V>..." followed by " ws=<bytes>".
 * Returns the length it needed (as snprintf). */
int convcache_engine_format(const convcache_engine_choice *c, char *buf, size_t cap);

/* convcache_engine_strerror - a static name for a return code. */
const char *convcache_engine_strerror(int code);

#ifdef __cplusplus
}
#endif

#ifdef __cplusplus
static_assert(sizeof(convcache_engine_choice) == 800, "convcache_engine_choice is 800 bytes");
#else
_Static_assert(sizeof(convcache_engine_choice) == 800, "convcache_engine_choice is 800 bytes");
#endif

#endif /* CONVCACHE_ENGINE_H */
