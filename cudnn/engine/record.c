/* The record's rules: check, seal, compare, format, and the error names. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "engine.h"

_Static_assert(offsetof(convcache_engine_choice, engine) == 8, "layout");
_Static_assert(offsetof(convcache_engine_choice, workspace) == 16, "layout");
_Static_assert(offsetof(convcache_engine_choice, knob_count) == 24, "layout");
_Static_assert(offsetof(convcache_engine_choice, crc) == 28, "layout");
_Static_assert(offsetof(convcache_engine_choice, knobs) == 32, "layout");
_Static_assert(sizeof(convcache_engine_knob) == 16, "layout");

static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
        crc_table[i] = c;
    }
}

uint32_t cce_crc32(const void *p, size_t n) {
    pthread_once(&crc_once, crc_init);
    const unsigned char *b = p;
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) c = crc_table[(c ^ b[i]) & 0xFFu] ^ (c >> 8);
    return ~c;
}

static uint32_t record_crc(const convcache_engine_choice *c) {
    convcache_engine_choice t = *c;
    t.crc = 0;
    return cce_crc32(&t, sizeof t);
}

int cce_sort_knobs(convcache_engine_choice *c) {
    /* Insertion sort: at most 48 entries. */
    for (uint32_t i = 1; i < c->knob_count; i++) {
        convcache_engine_knob k = c->knobs[i];
        uint32_t j = i;
        while (j > 0 && c->knobs[j - 1].type > k.type) {
            c->knobs[j] = c->knobs[j - 1];
            j--;
        }
        c->knobs[j] = k;
    }
    for (uint32_t i = 1; i < c->knob_count; i++)
        if (c->knobs[i].type == c->knobs[i - 1].type) return -1;
    return 0;
}

/* fields_ok: the rules every field of a record obeys. */
static int fields_ok(const convcache_engine_choice *c) {
    if (c->knob_count > CONVCACHE_ENGINE_MAX_KNOBS || c->engine < 0 || c->workspace < 0) return 0;
    for (uint32_t i = 0; i < CONVCACHE_ENGINE_MAX_KNOBS; i++) {
        const convcache_engine_knob *k = &c->knobs[i];
        if (k->zero != 0) return 0;
        if (i >= c->knob_count && (k->type != 0 || k->value != 0)) return 0;
        if (i > 0 && i < c->knob_count && k->type <= c->knobs[i - 1].type) return 0;
    }
    return 1;
}

int convcache_engine_check(const void *bytes, size_t len, convcache_engine_choice *out) {
    if (!bytes) return CONVCACHE_ENGINE_E_INVALID;
    convcache_engine_choice c;
    uint32_t magic;
    uint16_t format;
    /* magic, then format, then length: a newer record may be of another size */
    if (len < sizeof magic) return CONVCACHE_ENGINE_E_TRUNCATED;
    memcpy(&magic, bytes, sizeof magic);
    if (magic != CONVCACHE_ENGINE_MAGIC) return CONVCACHE_ENGINE_E_FOREIGN;
    if (len < offsetof(convcache_engine_choice, size)) return CONVCACHE_ENGINE_E_TRUNCATED;
    memcpy(&format, (const unsigned char *)bytes + offsetof(convcache_engine_choice, format), sizeof format);
    if (format > CONVCACHE_ENGINE_FORMAT) return CONVCACHE_ENGINE_E_VERSION;
    if (format != CONVCACHE_ENGINE_FORMAT) return CONVCACHE_ENGINE_E_FOREIGN;
    if (len < sizeof c) return CONVCACHE_ENGINE_E_TRUNCATED;
    memcpy(&c, bytes, sizeof c);
    if (c.size != sizeof c || len != sizeof c) return CONVCACHE_ENGINE_E_FOREIGN;
    if (record_crc(&c) != c.crc || !fields_ok(&c)) return CONVCACHE_ENGINE_E_CORRUPT;
    if (out) *out = c;
    return CONVCACHE_ENGINE_OK;
}

int convcache_engine_seal(convcache_engine_choice *c) {
    if (!c) return CONVCACHE_ENGINE_E_INVALID;
    if (c->knob_count > CONVCACHE_ENGINE_MAX_KNOBS || c->engine < 0 || c->workspace < 0)
        return CONVCACHE_ENGINE_E_CORRUPT;
    for (uint32_t i = 0; i < CONVCACHE_ENGINE_MAX_KNOBS; i++) {
        c->knobs[i].zero = 0;
        if (i >= c->knob_count) c->knobs[i].type = 0, c->knobs[i].value = 0;
    }
    if (cce_sort_knobs(c) != 0) return CONVCACHE_ENGINE_E_CORRUPT;
    c->magic = CONVCACHE_ENGINE_MAGIC;
    c->format = CONVCACHE_ENGINE_FORMAT;
    c->size = (uint16_t)sizeof *c;
    c->crc = record_crc(c);
    return CONVCACHE_ENGINE_OK;
}

int convcache_engine_same(const convcache_engine_choice *a, const convcache_engine_choice *b) {
    if (!a || !b || a->engine != b->engine || a->knob_count != b->knob_count ||
        a->knob_count > CONVCACHE_ENGINE_MAX_KNOBS)
        return 0;
    return memcmp(a->knobs, b->knobs, sizeof a->knobs[0] * a->knob_count) == 0;
}

int convcache_engine_format(const convcache_engine_choice *c, char *buf, size_t cap) {
    if (!c || (!buf && cap)) return CONVCACHE_ENGINE_E_INVALID;
    char tmp[64];
    size_t need = 0;
    if (cap) buf[0] = 0;
#define PUT(...)                                                   \
    do {                                                           \
        int n_ = snprintf(tmp, sizeof tmp, __VA_ARGS__);           \
        if (need + (size_t)n_ < cap) memcpy(buf + need, tmp, (size_t)n_ + 1); \
        need += (size_t)n_;                                        \
    } while (0)
    PUT("eng%" PRId64, c->engine);
    uint32_t n = c->knob_count <= CONVCACHE_ENGINE_MAX_KNOBS ? c->knob_count : 0;
    for (uint32_t i = 0; i < n; i++) PUT("_k%" PRId32 "=%" PRId64, c->knobs[i].type, c->knobs[i].value);
    PUT(" ws=%" PRId64, c->workspace);
#undef PUT
    return (int)need;
}

const char *convcache_engine_strerror(int code) {
    switch (code) {
    case CONVCACHE_ENGINE_OK: return "ok";
    case CONVCACHE_ENGINE_E_INVALID: return "invalid argument";
    case CONVCACHE_ENGINE_E_UNAVAILABLE: return "cuDNN's backend API is not available";
    case CONVCACHE_ENGINE_E_TRUNCATED: return "engine choice record truncated";
    case CONVCACHE_ENGINE_E_FOREIGN: return "not an engine choice record";
    case CONVCACHE_ENGINE_E_VERSION: return "engine choice record of a newer format";
    case CONVCACHE_ENGINE_E_CORRUPT: return "engine choice record damaged";
    case CONVCACHE_ENGINE_E_NO_ENGINE: return "no such engine in this cuDNN for this graph";
    case CONVCACHE_ENGINE_E_KNOB: return "knob not supported by the engine, or value out of range";
    case CONVCACHE_ENGINE_E_FINALIZE: return "cuDNN refused to finalize the engine config or plan";
    case CONVCACHE_ENGINE_E_MISMATCH: return "plan runs another engine or other knobs than recorded";
    case CONVCACHE_ENGINE_E_TOO_MANY: return "plan has more knob choices than a record holds";
    case CONVCACHE_ENGINE_E_CUDNN: return "a cuDNN call failed";
    }
    return "unknown code";
}
