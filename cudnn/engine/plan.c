/*
 * An engine choice out of a finalized plan, and a plan out of a choice,
 * through cuDNN's backend descriptors:
 *
 *   plan --ENGINE_CONFIG--> engine config --ENGINE--> engine --GLOBAL_INDEX
 *                                         --KNOB_CHOICES--> (type, value)...
 *
 * Getting a descriptor-valued attribute fills descriptors the caller
 * created beforehand, of the right type; every descriptor made here is
 * destroyed on every path, or owned by the plan object returned.
 */
#include <stdlib.h>
#include <string.h>

#include "engine.h"

struct convcache_engine_plan {
    cudnnBackendDescriptor_t plan, config, engine;
    cudnnBackendDescriptor_t knobs[CONVCACHE_ENGINE_MAX_KNOBS];
    uint32_t knob_count;
    convcache_engine_choice choice;
};

/* Descriptors made for one call, destroyed together. */
struct descs {
    const struct cce_backend *api;
    cudnnBackendDescriptor_t d[72]; /* knob infos (64), or knob choices (48) and 4 more */
    int n;
};

static void descs_free(struct descs *s) {
    while (s->n > 0) s->api->destroy(s->d[--s->n]);
}

/* make creates count descriptors of type into out (recorded in s). */
static cudnnStatus_t make(struct descs *s, cudnnBackendDescriptorType_t type, int count,
                          cudnnBackendDescriptor_t *out) {
    for (int i = 0; i < count; i++) {
        if (s->n == (int)(sizeof s->d / sizeof s->d[0])) return CUDNN_STATUS_BAD_PARAM;
        cudnnBackendDescriptor_t d = NULL;
        cudnnStatus_t st = s->api->create(type, &d);
        if (st != CUDNN_STATUS_SUCCESS) return st;
        if (!d) return CUDNN_STATUS_INTERNAL_ERROR;
        s->d[s->n++] = d;
        out[i] = d;
    }
    return CUDNN_STATUS_SUCCESS;
}

static int fail(int *status, cudnnStatus_t st, int code) {
    if (status) *status = (int)st;
    return code;
}

/* get_int64 reads a one-element INT64 attribute. */
static cudnnStatus_t get_int64(const struct cce_backend *api, cudnnBackendDescriptor_t d,
                               cudnnBackendAttributeName_t name, int64_t *v) {
    int64_t n = 0;
    cudnnStatus_t st = api->get(d, name, CUDNN_TYPE_INT64, 1, &n, v);
    if (st == CUDNN_STATUS_SUCCESS && n != 1) st = CUDNN_STATUS_BAD_PARAM;
    return st;
}

/* get_one_desc fills *d (created by the caller) from a one-descriptor attribute. */
static cudnnStatus_t get_one_desc(const struct cce_backend *api, cudnnBackendDescriptor_t from,
                                  cudnnBackendAttributeName_t name, cudnnBackendDescriptor_t d) {
    int64_t n = 0;
    cudnnStatus_t st = api->get(from, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &d);
    if (st == CUDNN_STATUS_SUCCESS && n != 1) st = CUDNN_STATUS_BAD_PARAM;
    return st;
}

/* get_descs reads a descriptor-valued attribute of from into new
 * descriptors of type (recorded in s, into out, max of them at most), and
 * sets *got to the count cuDNN reports. It never asks how many there are:
 * cuDNN 9 answers that question for an engine config's knob choices with 0
 * (seen with cuDNN 9.19 on an H100), so it asks for 16, as many as an
 * engine has had, and for max when 16 came back full, or more than full
 * (a library may report how many it has rather than how many it wrote).
 * Only out[0 .. min(*got, max)) may be read: a count past max is the
 * caller's to judge, and never read past. */
static cudnnStatus_t get_descs(struct descs *s, cudnnBackendDescriptor_t from, cudnnBackendAttributeName_t name,
                               cudnnBackendDescriptorType_t type, int64_t max, cudnnBackendDescriptor_t *out,
                               int64_t *got) {
    int64_t want = max < 16 ? max : 16;
    for (;;) {
        int base = s->n;
        *got = 0;
        cudnnStatus_t st = make(s, type, (int)want, out);
        if (st == CUDNN_STATUS_SUCCESS)
            st = s->api->get(from, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, want, got, out);
        if (st == CUDNN_STATUS_SUCCESS && *got < 0) st = CUDNN_STATUS_BAD_PARAM;
        if (st != CUDNN_STATUS_SUCCESS || *got < want || want == max) return st;
        while (s->n > base) s->api->destroy(s->d[--s->n]); /* full: ask for max */
        want = max;
    }
}

/* read_engine reads the global index of config cfg's engine. */
static cudnnStatus_t read_engine(struct descs *s, cudnnBackendDescriptor_t cfg, int64_t *engine) {
    cudnnBackendDescriptor_t e;
    cudnnStatus_t st;
    if ((st = make(s, CUDNN_BACKEND_ENGINE_DESCRIPTOR, 1, &e)) ||
        (st = get_one_desc(s->api, cfg, CUDNN_ATTR_ENGINECFG_ENGINE, e)))
        return st;
    return get_int64(s->api, e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, engine);
}

/* read_config fills c's engine and knobs (unsealed, workspace 0) from a
 * finalized engine config. */
static int read_config(struct descs *s, cudnnBackendDescriptor_t cfg, convcache_engine_choice *c,
                       int *status) {
    const struct cce_backend *api = s->api;
    cudnnBackendDescriptor_t knobs[CONVCACHE_ENGINE_MAX_KNOBS + 1];
    cudnnStatus_t st;
    memset(c, 0, sizeof *c);
    if ((st = read_engine(s, cfg, &c->engine))) return fail(status, st, CONVCACHE_ENGINE_E_CUDNN);
    /* Ask for one more than a record holds, to tell "too many" apart. */
    int64_t got = 0;
    if ((st = get_descs(s, cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR,
                        CONVCACHE_ENGINE_MAX_KNOBS + 1, knobs, &got)))
        return fail(status, st, CONVCACHE_ENGINE_E_CUDNN);
    if (got > CONVCACHE_ENGINE_MAX_KNOBS) return fail(status, 0, CONVCACHE_ENGINE_E_TOO_MANY);
    for (int64_t i = 0; i < got; i++) {
        cudnnBackendKnobType_t type;
        int64_t n = 0;
        st = api->get(knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &n, &type);
        if (st == CUDNN_STATUS_SUCCESS && n != 1) st = CUDNN_STATUS_BAD_PARAM;
        if (st == CUDNN_STATUS_SUCCESS) st = get_int64(api, knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE,
                                                       &c->knobs[i].value);
        if (st) return fail(status, st, CONVCACHE_ENGINE_E_CUDNN);
        c->knobs[i].type = (int32_t)type;
    }
    c->knob_count = (uint32_t)got;
    if (c->engine < 0 || cce_sort_knobs(c) != 0)
        return fail(status, CUDNN_STATUS_BAD_PARAM, CONVCACHE_ENGINE_E_CUDNN);
    return CONVCACHE_ENGINE_OK;
}

/* read_choice fills c (unsealed) from a finalized plan. */
static int read_choice(struct descs *s, cudnnBackendDescriptor_t plan, convcache_engine_choice *c,
                       int *status) {
    const struct cce_backend *api = s->api;
    cudnnBackendDescriptor_t cfg;
    cudnnStatus_t st;
    int64_t workspace = 0;
    memset(c, 0, sizeof *c);
    if ((st = get_int64(api, plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, &workspace)) ||
        (st = make(s, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, 1, &cfg)) ||
        (st = get_one_desc(api, plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, cfg)))
        return fail(status, st, CONVCACHE_ENGINE_E_CUDNN);
    int rc = read_config(s, cfg, c, status);
    if (rc != CONVCACHE_ENGINE_OK) return rc;
    if (workspace < 0) return fail(status, CUDNN_STATUS_BAD_PARAM, CONVCACHE_ENGINE_E_CUDNN);
    c->workspace = workspace;
    return CONVCACHE_ENGINE_OK;
}

int cce_config_choice(void *cfg, convcache_engine_choice *out, int *status) {
    if (status) *status = 0;
    if (!out) return CONVCACHE_ENGINE_E_INVALID;
    memset(out, 0, sizeof *out);
    if (!cfg) return CONVCACHE_ENGINE_E_INVALID;
    struct descs s = {.api = cce_backend()};
    if (!s.api) return CONVCACHE_ENGINE_E_UNAVAILABLE;
    int rc = read_config(&s, cfg, out, status);
    descs_free(&s);
    if (rc == CONVCACHE_ENGINE_OK) rc = convcache_engine_seal(out);
    if (rc != CONVCACHE_ENGINE_OK) memset(out, 0, sizeof *out);
    return rc;
}

int cce_config_engine(void *cfg, int64_t *engine) {
    if (!cfg || !engine) return CONVCACHE_ENGINE_E_INVALID;
    *engine = -1;
    struct descs s = {.api = cce_backend()};
    if (!s.api) return CONVCACHE_ENGINE_E_UNAVAILABLE;
    int rc = read_engine(&s, cfg, engine) || *engine < 0 ? CONVCACHE_ENGINE_E_CUDNN : CONVCACHE_ENGINE_OK;
    descs_free(&s);
    if (rc != CONVCACHE_ENGINE_OK) *engine = -1;
    return rc;
}

int convcache_engine_from_plan(void *plan, convcache_engine_choice *out, int *status) {
    if (status) *status = 0;
    if (!out) return CONVCACHE_ENGINE_E_INVALID;
    memset(out, 0, sizeof *out);
    if (!plan) return CONVCACHE_ENGINE_E_INVALID;
    struct descs s = {.api = cce_backend()};
    if (!s.api) return CONVCACHE_ENGINE_E_UNAVAILABLE;
    int rc = read_choice(&s, plan, out, status);
    descs_free(&s);
    if (rc == CONVCACHE_ENGINE_OK) rc = convcache_engine_seal(out);
    if (rc != CONVCACHE_ENGINE_OK) memset(out, 0, sizeof *out);
    return rc;
}

int convcache_engine_verify(void *plan, const convcache_engine_choice *choice, int *status) {
    if (status) *status = 0;
    convcache_engine_choice want, have;
    int rc = choice ? convcache_engine_check(choice, sizeof *choice, &want) : CONVCACHE_ENGINE_E_INVALID;
    if (rc == CONVCACHE_ENGINE_OK) rc = convcache_engine_from_plan(plan, &have, status);
    if (rc == CONVCACHE_ENGINE_OK && !convcache_engine_same(&want, &have)) rc = CONVCACHE_ENGINE_E_MISMATCH;
    return rc;
}

/* knobs_supported checks c's knobs against the engine's knob info: each
 * type offered, each value in [min, max] on the stride. When this cuDNN
 * does not describe its knobs it says yes: finalizing and reading the plan
 * back still catch what it would have. */
static int knobs_supported(const struct cce_backend *api, cudnnBackendDescriptor_t engine,
                           const convcache_engine_choice *c) {
    enum { MAX_INFO = 64 };
    struct descs s = {.api = api};
    cudnnBackendDescriptor_t info[MAX_INFO];
    int64_t got = 0;
    int ok = 1; /* unknown counts as yes; none described: no knob is the engine's */
    if (get_descs(&s, engine, CUDNN_ATTR_ENGINE_KNOB_INFO, CUDNN_BACKEND_KNOB_INFO_DESCRIPTOR, MAX_INFO, info, &got) ||
        got > MAX_INFO)
        goto done;
    for (uint32_t k = 0; k < c->knob_count && ok; k++) {
        int found = 0;
        for (int64_t i = 0; i < got && !found; i++) {
            cudnnBackendKnobType_t type;
            int64_t n = 0, lo, hi, stride;
            if (api->get(info[i], CUDNN_ATTR_KNOB_INFO_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &n, &type) || n != 1 ||
                get_int64(api, info[i], CUDNN_ATTR_KNOB_INFO_MINIMUM_VALUE, &lo) ||
                get_int64(api, info[i], CUDNN_ATTR_KNOB_INFO_MAXIMUM_VALUE, &hi) ||
                get_int64(api, info[i], CUDNN_ATTR_KNOB_INFO_STRIDE, &stride)) {
                ok = 1;
                goto done;
            }
            if ((int32_t)type != c->knobs[k].type) continue;
            found = 1;
            int64_t v = c->knobs[k].value;
            if (v < lo || v > hi || (stride > 0 && (v - lo) % stride != 0)) ok = 0;
        }
        if (!found) ok = 0;
    }
done:
    descs_free(&s);
    return ok;
}

static int status_is_not_supported(cudnnStatus_t st) { return st >= 3000 && st < 4000; }

int convcache_engine_build_plan(const convcache_engine_choice *choice, void *handle, void *graph,
                                convcache_engine_plan **out, int *status) {
    if (status) *status = 0;
    if (!out) return CONVCACHE_ENGINE_E_INVALID;
    *out = NULL;
    if (!choice || !handle || !graph) return CONVCACHE_ENGINE_E_INVALID;
    convcache_engine_choice c;
    int rc = convcache_engine_check(choice, sizeof c, &c);
    if (rc != CONVCACHE_ENGINE_OK) return rc;
    struct descs s = {.api = cce_backend()};
    if (!s.api) return CONVCACHE_ENGINE_E_UNAVAILABLE;
    const struct cce_backend *api = s.api;
    cudnnStatus_t st;
    cudnnBackendDescriptor_t engine, knobs[CONVCACHE_ENGINE_MAX_KNOBS], cfg, plan;
    cudnnHandle_t h = (cudnnHandle_t)handle;
    cudnnBackendDescriptor_t g = graph;

    /* An index past the graph's engine count is a clean miss, not a failure. */
    int64_t count = -1;
    if (get_int64(api, g, CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT, &count) == CUDNN_STATUS_SUCCESS &&
        c.engine >= count) {
        rc = CONVCACHE_ENGINE_E_NO_ENGINE;
        goto out;
    }
    if ((st = make(&s, CUDNN_BACKEND_ENGINE_DESCRIPTOR, 1, &engine)) ||
        (st = api->set(engine, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g)) ||
        (st = api->set(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &c.engine))) {
        rc = fail(status, st, CONVCACHE_ENGINE_E_CUDNN);
        goto out;
    }
    if ((st = api->finalize(engine))) {
        rc = fail(status, st, status_is_not_supported(st) ? CONVCACHE_ENGINE_E_NO_ENGINE : CONVCACHE_ENGINE_E_CUDNN);
        goto out;
    }
    if (!knobs_supported(api, engine, &c)) {
        rc = CONVCACHE_ENGINE_E_KNOB;
        goto out;
    }
    int first_knob = s.n;
    if ((st = make(&s, CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, (int)c.knob_count, knobs))) {
        rc = fail(status, st, CONVCACHE_ENGINE_E_CUDNN);
        goto out;
    }
    for (uint32_t i = 0; i < c.knob_count; i++) {
        cudnnBackendKnobType_t type = (cudnnBackendKnobType_t)c.knobs[i].type;
        if ((st = api->set(knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &type)) ||
            (st = api->set(knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1, &c.knobs[i].value)) ||
            (st = api->finalize(knobs[i]))) {
            rc = fail(status, st, CONVCACHE_ENGINE_E_KNOB);
            goto out;
        }
    }
    if ((st = make(&s, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, 1, &cfg)) ||
        (st = api->set(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &engine)) ||
        (c.knob_count && (st = api->set(cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                        (int64_t)c.knob_count, knobs)))) {
        rc = fail(status, st, CONVCACHE_ENGINE_E_CUDNN);
        goto out;
    }
    if ((st = api->finalize(cfg))) {
        rc = fail(status, st, CONVCACHE_ENGINE_E_FINALIZE);
        goto out;
    }
    /* The plan's handle attribute is required before cuDNN 9 and marked
     * deprecated in 9.x headers (the handle comes with cudnnBackendExecute):
     * set it, and go on if a newer cuDNN refuses it. */
    if ((st = make(&s, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, 1, &plan)) ||
        ((void)api->set(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h), 0) ||
        (st = api->set(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg))) {
        rc = fail(status, st, CONVCACHE_ENGINE_E_CUDNN);
        goto out;
    }
    if ((st = api->finalize(plan))) {
        rc = fail(status, st, CONVCACHE_ENGINE_E_FINALIZE);
        goto out;
    }
    /* What runs is what the plan's engine config says: read it back. */
    {
        struct descs r = {.api = api};
        convcache_engine_choice have;
        rc = read_choice(&r, plan, &have, status);
        descs_free(&r);
        if (rc == CONVCACHE_ENGINE_OK && !convcache_engine_same(&c, &have)) rc = CONVCACHE_ENGINE_E_MISMATCH;
        if (rc != CONVCACHE_ENGINE_OK) goto out;
        c.workspace = have.workspace; /* what this plan needs, on this cuDNN */
        if (convcache_engine_seal(&c) != CONVCACHE_ENGINE_OK) {
            rc = CONVCACHE_ENGINE_E_CORRUPT;
            goto out;
        }
    }
    convcache_engine_plan *p = calloc(1, sizeof *p);
    if (!p) {
        rc = fail(status, CUDNN_STATUS_SUCCESS, CONVCACHE_ENGINE_E_CUDNN);
        goto out;
    }
    p->plan = plan;
    p->config = cfg;
    p->engine = engine;
    p->knob_count = c.knob_count;
    for (uint32_t i = 0; i < c.knob_count; i++) p->knobs[i] = s.d[first_knob + (int)i];
    p->choice = c;
    s.n = 0; /* p owns them now */
    *out = p;
out:
    descs_free(&s);
    return rc;
}

void *convcache_engine_plan_descriptor(const convcache_engine_plan *p) { return p ? p->plan : NULL; }

const convcache_engine_choice *convcache_engine_plan_choice(const convcache_engine_plan *p) {
    return p ? &p->choice : NULL;
}

void convcache_engine_plan_destroy(convcache_engine_plan *p) {
    if (!p) return;
    const struct cce_backend *api = cce_backend();
    if (api) {
        /* The plan first, then what it was built from. */
        api->destroy(p->plan);
        api->destroy(p->config);
        for (uint32_t i = 0; i < p->knob_count; i++) api->destroy(p->knobs[i]);
        api->destroy(p->engine);
    }
    free(p);
}
