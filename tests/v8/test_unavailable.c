/*
 * Without cuDNN's backend API (no cuDNN loaded, and $CONVCACHE_CUDNN_LIBRARY
 * naming a missing file or a library without it), every function that needs
 * cuDNN returns CONVCACHE_ENGINE_E_UNAVAILABLE without touching the
 * pointers it was given, and the record functions still work.
 * usage: test_unavailable (run by make v8-test with CONVCACHE_CUDNN_LIBRARY set)
 */
#include <stdio.h>
#include <string.h>

#include "convcache_engine.h"

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c); return 1; } } while (0)

int main(void) {
    convcache_engine_choice c, out;
    memset(&c, 0, sizeof c);
    c.engine = 3;
    CHECK(convcache_engine_seal(&c) == 0);
    CHECK(convcache_engine_check(&c, sizeof c, &out) == 0 && convcache_engine_same(&c, &out));
    /* Pointers that must never be followed: they point at nothing cuDNN made. */
    void *bogus = (void *)&c;
    int status = -1;
    CHECK(convcache_engine_from_plan(bogus, &out, &status) == CONVCACHE_ENGINE_E_UNAVAILABLE && status == 0);
    convcache_engine_plan *p = (convcache_engine_plan *)bogus;
    CHECK(convcache_engine_build_plan(&c, bogus, bogus, &p, &status) == CONVCACHE_ENGINE_E_UNAVAILABLE && !p);
    CHECK(convcache_engine_verify(bogus, &c, NULL) == CONVCACHE_ENGINE_E_UNAVAILABLE);
    /* A bad record is reported as such before cuDNN is needed. */
    c.crc ^= 1;
    CHECK(convcache_engine_build_plan(&c, bogus, bogus, &p, NULL) == CONVCACHE_ENGINE_E_CORRUPT);
    printf("test_unavailable: ok\n");
    return 0;
}
