/*
 * The interposer's counters, the debug hook that copies them out, and the
 * one summary line printed at exit under CONVCACHE_VERBOSE.
 *
 * The summary is printed by this library's destructor, from these counters
 * only: it never calls into libconvcache (whose Go runtime may be stopping
 * or, in a forked child, not usable), allocates nothing and writes with one
 * write(2). It is printed only by a process that made find calls or loaded
 * libconvcache: a child forked from one starts with its counters at zero
 * and prints nothing unless it makes calls of its own (and a child leaving
 * through _exit runs no destructor at all).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "convcache.h"
#include "preload.h"

struct convcache_preload_stats counters;

uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void count_saved_ms(double ms) {
    double old, sum;
    __atomic_load(&counters.saved_ms, &old, __ATOMIC_RELAXED);
    do {
        sum = old + ms;
    } while (!__atomic_compare_exchange(&counters.saved_ms, &old, &sum, 1, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED));
}

/* The child has one thread: nothing else reads or writes the counters. */
void counters_forked(void) {
    memset(&counters, 0, sizeof counters);
    v8_time_forked();
}

static void snapshot(struct convcache_preload_stats *s) {
    s->calls = __atomic_load_n(&counters.calls, __ATOMIC_RELAXED);
    s->hits = __atomic_load_n(&counters.hits, __ATOMIC_RELAXED);
    s->misses = __atomic_load_n(&counters.misses, __ATOMIC_RELAXED);
    s->passthrough = __atomic_load_n(&counters.passthrough, __ATOMIC_RELAXED);
    s->library_loads = __atomic_load_n(&counters.library_loads, __ATOMIC_RELAXED);
    s->errors = __atomic_load_n(&counters.errors, __ATOMIC_RELAXED);
    s->refused = __atomic_load_n(&counters.refused, __ATOMIC_RELAXED);
    s->find_ns = __atomic_load_n(&counters.find_ns, __ATOMIC_RELAXED);
    __atomic_load(&counters.saved_ms, &s->saved_ms, __ATOMIC_RELAXED);
    s->v8_graphs = __atomic_load_n(&counters.v8_graphs, __ATOMIC_RELAXED);
    s->v8_passthrough = __atomic_load_n(&counters.v8_passthrough, __ATOMIC_RELAXED);
    s->v8_hits = __atomic_load_n(&counters.v8_hits, __ATOMIC_RELAXED);
    s->v8_misses = __atomic_load_n(&counters.v8_misses, __ATOMIC_RELAXED);
    s->v8_aside = __atomic_load_n(&counters.v8_aside, __ATOMIC_RELAXED);
    s->v8_waited = __atomic_load_n(&counters.v8_waited, __ATOMIC_RELAXED);
    s->v8_recorded = __atomic_load_n(&counters.v8_recorded, __ATOMIC_RELAXED);
    s->v8_refused_execs = __atomic_load_n(&counters.v8_refused_execs, __ATOMIC_RELAXED);
    s->v8_refused_builds = __atomic_load_n(&counters.v8_refused_builds, __ATOMIC_RELAXED);
    s->v8_deferred_builds = __atomic_load_n(&counters.v8_deferred_builds, __ATOMIC_RELAXED);
    s->v8_looked_execs = __atomic_load_n(&counters.v8_looked_execs, __ATOMIC_RELAXED);
}

/* convcache_preload_stats copies the counters (at most size bytes). Tests
 * find it with dlsym(RTLD_DEFAULT, ...) to tell that the interposer is
 * active and whether it loaded libconvcache. Returns 0. */
EXPORT int convcache_preload_stats(struct convcache_preload_stats *out, size_t size) {
    struct convcache_preload_stats s;
    snapshot(&s);
    if (!out) return CONVCACHE_E_INVALID;
    memcpy(out, &s, size < sizeof s ? size : sizeof s);
    return 0;
}

/* verbose reads CONVCACHE_VERBOSE as libconvcache does: an integer from 0
 * to 2; anything else (which libconvcache warns about) is 0. */
static int verbose(void) {
    const char *v = env_get("CONVCACHE_VERBOSE");
    if (!v) return 0;
    char *end;
    long n = strtol(v, &end, 10);
    while (*end == ' ' || *end == '\t' || *end == '\n') end++;
    return end != v && *end == 0 && n >= 1 && n <= 2;
}

__attribute__((destructor)) static void print_summary(void) {
    struct convcache_preload_stats s;
    snapshot(&s);
    if ((s.calls == 0 && s.library_loads == 0) || !verbose()) return;
    char line[2048];
    int n = snprintf(line, sizeof line,
                     "convcache-preload: summary: finds %llu, hits %llu, misses %llu, "
                     "passthrough %llu, strict refusals %llu, errors %llu; cuDNN find time on "
                     "misses %.3f ms; benchmark time saved by hits >= %.3f ms\n",
                     s.calls, s.hits, s.misses, s.passthrough, s.refused, s.errors,
                     (double)s.find_ns / 1e6, s.saved_ms < 1e15 ? s.saved_ms : 1e15);
    if (n > 0 && (size_t)n < sizeof line && (s.v8_graphs || s.v8_passthrough))
        n += snprintf(line + n, sizeof line - (size_t)n,
                      "convcache-preload: v8: graphs %llu, hits %llu, misses %llu, stand-asides %llu, "
                      "from other builders %llu, stored %llu, builds deferred %llu, timings refused %llu, "
                      "strict refusals %llu, not served %llu\n",
                      s.v8_graphs, s.v8_hits, s.v8_misses, s.v8_aside, s.v8_waited, s.v8_recorded,
                      s.v8_deferred_builds, s.v8_refused_execs, s.v8_refused_builds, s.v8_passthrough);
    if (n > 0 && (size_t)n < sizeof line) n += v8_time_format(line + n, sizeof line - (size_t)n);
    if (n <= 0) return;
    if ((size_t)n >= sizeof line) {
        n = sizeof line - 1;
        line[n - 1] = '\n';
    }
    ssize_t w = write(STDERR_FILENO, line, (size_t)n);
    (void)w;
}
