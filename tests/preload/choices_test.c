/*
 * The interposer's stored value (cudnn/preload/v8_choices.c), compiled in
 * alone: "CCV1" and "CCV2" round trips, what a forged or damaged value
 * gets (ignored as a whole), and how plan digests travel through a merge
 * and decide what may be served.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check_plain.h"
#include "v8.h"

static convcache_engine_choice choice(int64_t engine, int32_t type, int64_t value) {
    convcache_engine_choice c;
    memset(&c, 0, sizeof c);
    c.engine = engine;
    if (type) {
        c.knob_count = 1;
        c.knobs[0].type = type;
        c.knobs[0].value = value;
    }
    CHECK(convcache_engine_seal(&c) == CONVCACHE_ENGINE_OK);
    return c;
}

int main(void) {
    convcache_engine_choice a = choice(3, 2, 4), b = choice(7, 0, 0), a_plan = choice(3, 2, 5);
    unsigned char v[V8_VALUE_MAX + 16];
    struct v8_choices l, got;
    uint32_t magic;

    /* Plans that read as their configs: written as "CCV1". */
    memset(&l, 0, sizeof l);
    v8_choices_merge(&l, 0, &a, 0, &l);
    v8_choices_merge(&l, 0, &b, 0, &l);
    CHECK(l.n == 2 && convcache_engine_same(&l.c[0], &a) && convcache_engine_same(&l.c[1], &b));
    size_t n1 = v8_choices_encode(&l, v, sizeof v);
    memcpy(&magic, v, 4);
    CHECK(n1 == 8 + 2 * sizeof a && magic == V8_VALUE_MAGIC);
    CHECK(v8_choices_decode(v, n1, &got) == 0 && got.n == 2 && got.plan_id[0] == 0 && got.plan_id[1] == 0);
    CHECK(v8_choice_runs(&got.c[0], got.plan_id[0], &a) && !v8_choice_runs(&got.c[0], got.plan_id[0], &a_plan));

    /* A choice whose plan read otherwise: "CCV2", the digest kept through
     * a merge, and only a plan that reads as recorded is served. */
    /* The digest is part of the stored format: FNV-1a 64 over the engine
     * (8 bytes), the knob count (4) and each knob's type (4) and value (8),
     * little-endian; pinned here (computed independently in Python). */
    CHECK(v8_choice_id(&a) == 0x9105db75ef618bc1ull && v8_choice_id(&(convcache_engine_choice){0}) == 0x5467b0da1d106495ull);
    uint64_t id = v8_choice_id(&a_plan);
    CHECK(id != 0 && id != v8_choice_id(&a));
    memset(&l, 0, sizeof l);
    v8_choices_merge(&l, 0, &a, id, &l);
    v8_choices_merge(&l, 0, &b, 0, &l); /* b chosen where a was not on offer: a stays ahead */
    CHECK(l.n == 2 && l.plan_id[0] == id && l.plan_id[1] == 0);
    size_t n2 = v8_choices_encode(&l, v, sizeof v);
    memcpy(&magic, v, 4);
    CHECK(n2 == 8 + 2 * (sizeof a + 8) && magic == V8_VALUE_MAGIC2);
    CHECK(v8_choices_decode(v, n2, &got) == 0 && got.n == 2 && got.plan_id[0] == id && got.plan_id[1] == 0);
    CHECK(v8_choices_find(&got, &a) == 0 && v8_choices_find(&got, &a_plan) == -1);
    CHECK(v8_choice_runs(&got.c[0], got.plan_id[0], &a_plan) && !v8_choice_runs(&got.c[0], got.plan_id[0], &a));
    CHECK(v8_choice_runs(&got.c[1], got.plan_id[1], &b));
    /* The host chose a again, its plan now reading as a itself. */
    v8_choices_merge(&got, 0, &a, 0, &l);
    CHECK(l.n == 2 && convcache_engine_same(&l.c[1], &a) && l.plan_id[1] == 0 && l.plan_id[0] == 0);

    /* Damage: every variant is refused as a whole. */
    CHECK(v8_choices_decode(v, n2 - 1, &got) == -1 && got.n == 0);
    CHECK(v8_choices_decode(v, n2 + 1, &got) == -1);
    CHECK(v8_choices_decode(v, n2 - 16, &got) == -1); /* "CCV2" without its digests */
    unsigned char w[V8_VALUE_MAX + 16];
    memcpy(w, v, n2);
    magic = V8_VALUE_MAGIC;
    memcpy(w, &magic, 4);
    CHECK(v8_choices_decode(w, n2, &got) == -1);         /* "CCV1" with digests after it */
    CHECK(v8_choices_decode(w, n2 - 16, &got) == 0);     /* ...which are not "CCV1"'s */
    uint32_t count = 5;
    memcpy(w, v, n2);
    memcpy(w + 4, &count, 4);
    CHECK(v8_choices_decode(w, n2, &got) == -1);
    count = 0xFFFFFFFFu;
    memcpy(w + 4, &count, 4);
    CHECK(v8_choices_decode(w, n2, &got) == -1);
    memcpy(w, v, n2);
    w[8 + 40] ^= 1; /* a record's bit */
    CHECK(v8_choices_decode(w, n2, &got) == -1);
    CHECK(v8_choices_decode(NULL, n2, &got) == -1 && v8_choices_decode(v, 7, &got) == -1);
    /* Cap too small to encode: nothing written. */
    CHECK(v8_choices_encode(&l, v, 8 + sizeof a) == 0);
    /* A choice served that failed after timing: the list is dropped, and
     * reads back as no choice with the mark (the next process stands
     * aside); "CCV2" with no choice, or anything after the count, is not. */
    struct v8_choices none;
    v8_choices_merge(&l, 0, NULL, 0, &none);
    CHECK(none.n == 0 && none.dropped);
    size_t n0 = v8_choices_encode(&none, v, sizeof v);
    CHECK(n0 == 8 && v8_choices_decode(v, n0, &got) == 0 && got.n == 0 && got.dropped);
    CHECK(v8_choices_decode(v, n0 + 1, &got) == -1 && !got.dropped);
    uint32_t magic2 = V8_VALUE_MAGIC2;
    memcpy(v, &magic2, 4);
    CHECK(v8_choices_decode(v, n0, &got) == -1);
    /* Then the host's choice replaces it. */
    v8_choices_merge(&none, 0, &a, 0, &l);
    CHECK(l.n == 1 && !l.dropped);
    puts("choices_test: ok");
    return 0;
}
