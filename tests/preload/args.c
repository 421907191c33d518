/*
 * preload_prog's tests of hostile arguments and descriptors: whatever the
 * caller passes, or cuDNN's getters report, that the interposer cannot key
 * or must not answer for goes to the real cuDNN, which gives its own answer.
 *
 *   nulls    NULL handle, count, results, descriptor, Ex data or workspace,
 *            and requests below 1, reach cuDNN even for a stored problem
 *   getters  descriptor getters reporting a dimension count out of range
 *            pass every call through
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prog.h"

#define BAD_PARAM 2000
#define MIB (1u << 20)

static char mem[64]; /* stands for device memory; never read */

/* reaches runs one call and checks that cuDNN itself answered it with
 * BAD_PARAM. */
#define REACHES(what, expr)                                                               \
    do {                                                                                  \
        int before_ = standin_find_calls();                                               \
        int st_ = (expr);                                                                 \
        CHECK(st_ == BAD_PARAM && standin_find_calls() == before_ + 1,                    \
              "%s: status %d, %d calls reached cuDNN: want cuDNN's BAD_PARAM", what, st_, \
              standin_find_calls() - before_);                                            \
    } while (0)

int nulls(void) {
    D h = NULL;
    cudnnCreate(&h);
    const struct problem p = make(16, 32, 28, 32, 3, 1, 1);
    struct descs d = {0};
    set(&d, &p);
    /* Stored first: a NULL argument must not turn into a hit. */
    call("fwd, stored", 0, &p, 8, 0, 1);
    call("fwd, stored, again", 0, &p, 8, 0, 0);
    call("fwd-ex, stored", 1, &p, 8, MIB, 1);
    call("fwd-ex, stored, again", 1, &p, 8, MIB, 0);
    perf_t perf[8];
    int n = 0;
    REACHES("a NULL handle",
            cudnnFindConvolutionForwardAlgorithm(NULL, d.x, d.w, d.conv, d.y, 8, &n, perf));
    REACHES("a NULL count",
            cudnnFindConvolutionForwardAlgorithm(h, d.x, d.w, d.conv, d.y, 8, NULL, perf));
    REACHES("NULL results",
            cudnnFindConvolutionForwardAlgorithm(h, d.x, d.w, d.conv, d.y, 8, &n, NULL));
    REACHES("a NULL descriptor",
            cudnnFindConvolutionForwardAlgorithm(h, NULL, d.w, d.conv, d.y, 8, &n, perf));
    REACHES("requested 0",
            cudnnFindConvolutionForwardAlgorithm(h, d.x, d.w, d.conv, d.y, 0, &n, perf));
    REACHES("requested -1",
            cudnnFindConvolutionForwardAlgorithm(h, d.x, d.w, d.conv, d.y, -1, &n, perf));
    REACHES("Ex: a NULL handle",
            cudnnFindConvolutionForwardAlgorithmEx(NULL, d.x, mem, d.w, mem, d.conv, d.y, mem, 8,
                                                   &n, perf, mem, MIB));
    REACHES("Ex: NULL x", cudnnFindConvolutionForwardAlgorithmEx(
                              h, d.x, NULL, d.w, mem, d.conv, d.y, mem, 8, &n, perf, mem, MIB));
    REACHES("Ex: NULL w", cudnnFindConvolutionForwardAlgorithmEx(
                              h, d.x, mem, d.w, NULL, d.conv, d.y, mem, 8, &n, perf, mem, MIB));
    REACHES("Ex: NULL y", cudnnFindConvolutionForwardAlgorithmEx(
                              h, d.x, mem, d.w, mem, d.conv, d.y, NULL, 8, &n, perf, mem, MIB));
    REACHES("Ex: a NULL workspace of 1 MiB",
            cudnnFindConvolutionForwardAlgorithmEx(h, d.x, mem, d.w, mem, d.conv, d.y, mem, 8,
                                                   &n, perf, NULL, MIB));
    /* A NULL workspace of 0 bytes is valid. */
    call("Ex with no workspace", 1, &p, 8, 0, 1);
    struct preload_stats s;
    CHECK(get_stats(&s) && s.errors == 0, "%llu errors", s.errors);
    return failures ? 1 : 0;
}

int getters(void) {
    static const char *const kinds[] = {"tensor", "filter", "conv", "negative"};
    const struct problem p = make(16, 32, 28, 32, 3, 1, 1);
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        setenv("STANDIN_BAD_DIMS", kinds[i], 1);
        for (int fn = 0; fn < 6; fn++) {
            char what[96];
            snprintf(what, sizeof what, "function %d, getter reporting bad dims (%s)", fn,
                     kinds[i]);
            call(what, fn, &p, counts[fn], MIB, 1);
            call(what, fn, &p, counts[fn], MIB, 1); /* never stored */
        }
    }
    unsetenv("STANDIN_BAD_DIMS");
    struct preload_stats s;
    CHECK(get_stats(&s) && s.calls == 48 && s.passthrough == 48 && s.errors == 0,
          "%llu calls, %llu passed through, %llu errors: want 48, 48, 0", s.calls, s.passthrough,
          s.errors);
    return failures ? 1 : 0;
}
