/*
 * How the engine-choice code reads an engine config's knob choices, against
 * a fake backend (cce_backend_use) whose counts can be set: cuDNN 9.19 on an
 * H100 answered a count query of the knob choices with 0, which once left
 * every stored choice without knobs. Checked, for 0 to 60 knobs and for a
 * library that reports how many it wrote, how many it has, or one more than
 * it wrote: the choice read is exactly the config's (or E_TOO_MANY past what
 * a record holds, or a clean error); no count query is made; no descriptor
 * that was not filled is taken for a knob; every descriptor made is
 * destroyed, also when making one fails midway.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check_plain.h"
#include "engine.h"

enum { REPORT_WRITTEN, REPORT_TOTAL, REPORT_ONE_MORE };

struct fake {
    int type, live, filled;
    int64_t engine;
    int32_t ktype;
    int64_t kval;
};

static struct {
    int nknobs, report, fail_after, creates, destroys, count_queries;
    struct fake cfg;
} F;

static cudnnStatus_t f_create(cudnnBackendDescriptorType_t type, cudnnBackendDescriptor_t *out) {
    if (F.fail_after >= 0 && F.creates >= F.fail_after) return CUDNN_STATUS_INTERNAL_ERROR;
    struct fake *d = calloc(1, sizeof *d);
    CHECK(d);
    d->type = (int)type;
    d->live = 1;
    F.creates++;
    *out = d;
    return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t f_destroy(cudnnBackendDescriptor_t p) {
    struct fake *d = p;
    CHECK(d && d->live);
    d->live = 0;
    free(d);
    F.destroys++;
    return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t f_finalize(cudnnBackendDescriptor_t p) {
    (void)p;
    return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t f_set(cudnnBackendDescriptor_t p, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                           int64_t n, const void *elements) {
    (void)p, (void)name, (void)type, (void)n, (void)elements;
    return CUDNN_STATUS_NOT_SUPPORTED;
}

/* The config's knob i: types in descending order (the reader sorts them). */
static int32_t knob_type(int i) { return (int32_t)(F.nknobs - i); }
static int64_t knob_value(int i) { return 3 * (int64_t)i - 1; }

static cudnnStatus_t f_get(cudnnBackendDescriptor_t const p, cudnnBackendAttributeName_t name,
                           cudnnBackendAttributeType_t type, int64_t requested, int64_t *count, void *elements) {
    const struct fake *d = p;
    CHECK(d && (d == &F.cfg || d->live));
    if (d == &F.cfg && name == CUDNN_ATTR_ENGINECFG_ENGINE) {
        CHECK(type == CUDNN_TYPE_BACKEND_DESCRIPTOR && requested == 1 && elements);
        struct fake *e = *(struct fake **)elements;
        CHECK(e->live && e->type == CUDNN_BACKEND_ENGINE_DESCRIPTOR);
        e->engine = d->engine;
        e->filled = 1;
        *count = 1;
        return CUDNN_STATUS_SUCCESS;
    }
    if (name == CUDNN_ATTR_ENGINE_GLOBAL_INDEX) {
        if (!d->filled) return CUDNN_STATUS_NOT_INITIALIZED;
        memcpy(elements, &d->engine, 8);
        *count = 1;
        return CUDNN_STATUS_SUCCESS;
    }
    if (d == &F.cfg && name == CUDNN_ATTR_ENGINECFG_KNOB_CHOICES) {
        if (requested == 0 || !elements) { /* as cuDNN 9.19 answers */
            F.count_queries++;
            *count = 0;
            return CUDNN_STATUS_SUCCESS;
        }
        int64_t n = requested < F.nknobs ? requested : F.nknobs;
        struct fake **out = elements;
        for (int64_t i = 0; i < n; i++) {
            CHECK(out[i]->live && out[i]->type == CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR);
            out[i]->ktype = knob_type((int)i);
            out[i]->kval = knob_value((int)i);
            out[i]->filled = 1;
        }
        *count = F.report == REPORT_TOTAL ? F.nknobs : F.report == REPORT_ONE_MORE ? n + 1 : n;
        return CUDNN_STATUS_SUCCESS;
    }
    if (name == CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE || name == CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE) {
        if (!d->filled) return CUDNN_STATUS_NOT_INITIALIZED;
        if (name == CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE) memcpy(elements, &d->ktype, 4);
        else memcpy(elements, &d->kval, 8);
        *count = 1;
        return CUDNN_STATUS_SUCCESS;
    }
    return CUDNN_STATUS_BAD_PARAM;
}

/* read sets up a config of nknobs knobs and reads it. */
static int read(int nknobs, int report, int fail_after, convcache_engine_choice *c, int *status) {
    memset(&F, 0, sizeof F);
    F.nknobs = nknobs;
    F.report = report;
    F.fail_after = fail_after;
    F.cfg.type = CUDNN_BACKEND_ENGINECFG_DESCRIPTOR;
    F.cfg.engine = 7;
    int rc = cce_config_choice(&F.cfg, c, status);
    CHECK(F.creates == F.destroys); /* nothing made is left */
    CHECK(F.count_queries == 0);
    return rc;
}

int main(void) {
    struct cce_backend fake = {f_create, f_destroy, f_finalize, f_set, f_get};
    cce_backend_use(&fake);
    CHECK(cce_backend() && cce_backend()->get == f_get);
    int checked = 0;
    const int sizes[] = {0, 1, 2, 15, 16, 17, 31, 47, 48};
    for (int r = REPORT_WRITTEN; r <= REPORT_TOTAL; r++)
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            convcache_engine_choice c;
            int k = sizes[i], status = -1;
            CHECK(read(k, r, -1, &c, &status) == CONVCACHE_ENGINE_OK && status == 0);
            CHECK(c.engine == 7 && c.knob_count == (uint32_t)k);
            for (int j = 0; j < k; j++) { /* sorted by type: knob k-1-j of the config */
                CHECK(c.knobs[j].type == j + 1 && c.knobs[j].value == knob_value(k - 1 - j));
            }
            CHECK(convcache_engine_check(&c, sizeof c, NULL) == CONVCACHE_ENGINE_OK);
            checked++;
        }
    /* More knobs than a record holds. */
    for (int r = REPORT_WRITTEN; r <= REPORT_TOTAL; r++) {
        convcache_engine_choice c;
        CHECK(read(49, r, -1, &c, NULL) == CONVCACHE_ENGINE_E_TOO_MANY);
        CHECK(read(60, r, -1, &c, NULL) == CONVCACHE_ENGINE_E_TOO_MANY);
        CHECK(c.knob_count == 0 && c.engine == 0); /* cleared on error */
    }
    /* A library that reports one more than it wrote: a descriptor it did
     * not fill is never taken for a knob (and 48 + 1 is too many). */
    const int liars[] = {0, 2, 15, 16, 47};
    for (size_t i = 0; i < sizeof liars / sizeof liars[0]; i++) {
        convcache_engine_choice c;
        int status = 0;
        CHECK(read(liars[i], REPORT_ONE_MORE, -1, &c, &status) == CONVCACHE_ENGINE_E_CUDNN &&
              status == CUDNN_STATUS_NOT_INITIALIZED);
    }
    convcache_engine_choice c48;
    CHECK(read(48, REPORT_ONE_MORE, -1, &c48, NULL) == CONVCACHE_ENGINE_E_TOO_MANY);
    /* Making a descriptor fails midway (at each point in turn). */
    for (int at = 0; at < 20; at++) {
        convcache_engine_choice c;
        int status = 0;
        CHECK(read(17, REPORT_WRITTEN, at, &c, &status) == CONVCACHE_ENGINE_E_CUDNN &&
              status == CUDNN_STATUS_INTERNAL_ERROR);
    }
    printf("test_knob_reads: ok (%d configs read, 0 count queries)\n", checked);
    return 0;
}
