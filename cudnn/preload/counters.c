/*
 * The interposer's counters, the debug hook that copies them out, and what
 * is printed at exit (docs/interposer.md, "What it prints"):
 *
 *   - the report, one line "convcache: ...", when CONVCACHE_REPORT is set
 *     (convcache run sets it to the cache file's path unless --quiet) and
 *     CONVCACHE_QUIET is not 1, in a process that made find calls or keyed
 *     graphs;
 *   - the summary under CONVCACHE_VERBOSE: its finds line only in a
 *     process that made find calls, its v8 line only in one that went
 *     through the backend API.
 *
 * Both are printed by this library's destructor, from these counters
 * only: it never calls into libconvcache (whose Go runtime may be stopping
 * or, in a forked child, not usable), allocates nothing and writes each
 * with one write(2). A child forked from such a process starts with its
 * counters at zero and prints nothing unless it makes calls of its own
 * (and a child leaving through _exit runs no destructor at all).
 */
#include <stdarg.h>
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

/* Why graphs stood aside, counted per reason (a static string) when their
 * window closes: the report names the most frequent. Lock-free (a slot is
 * claimed by compare-and-swap), so that the destructor never waits; reasons
 * past the table's room are counted in v8_aside only. */
#define N_REASONS 16
static struct {
    const char *why;
    unsigned long long n;
} asides[N_REASONS];

void count_aside_reason(const char *why) {
    if (!why) why = "unknown";
    for (int i = 0; i < N_REASONS; i++) {
        const char *cur = __atomic_load_n(&asides[i].why, __ATOMIC_ACQUIRE);
        if (!cur && __atomic_compare_exchange_n(&asides[i].why, &cur, why, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            cur = why;
        if (cur == why || strcmp(cur, why) == 0) {
            __atomic_fetch_add(&asides[i].n, 1, __ATOMIC_RELAXED);
            return;
        }
    }
}

/* top_aside returns the most frequent reason, or NULL. */
static const char *top_aside(void) {
    const char *top = NULL;
    unsigned long long most = 0;
    for (int i = 0; i < N_REASONS; i++) {
        const char *why = __atomic_load_n(&asides[i].why, __ATOMIC_ACQUIRE);
        unsigned long long n = __atomic_load_n(&asides[i].n, __ATOMIC_RELAXED);
        if (why && n > most) top = why, most = n;
    }
    return top;
}

/* The child has one thread: nothing else reads or writes the counters. */
void counters_forked(void) {
    memset(&counters, 0, sizeof counters);
    memset(asides, 0, sizeof asides);
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

/* flag reads a variable that is on when it is a number from lo to hi, as
 * libconvcache reads CONVCACHE_VERBOSE (anything else is off). */
static int flag(const char *name, long lo, long hi) {
    const char *v = env_get(name);
    if (!v) return 0;
    char *end;
    long n = strtol(v, &end, 10);
    while (*end == ' ' || *end == '\t' || *end == '\n') end++;
    return end != v && *end == 0 && n >= lo && n <= hi;
}

/* put appends to line (of size cap, n used; n stays at most cap - 1). */
static void put(char *line, size_t cap, size_t *n, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void put(char *line, size_t cap, size_t *n, const char *fmt, ...) {
    if (*n >= cap - 1) return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(line + *n, cap - *n, fmt, ap);
    va_end(ap);
    if (w > 0) *n += (size_t)w < cap - *n ? (size_t)w : cap - *n - 1;
}

/* emit writes line, ending it with a newline (the last byte when full). */
static void emit(char *line, size_t cap, size_t n) {
    if (n >= cap - 1) n = cap - 2;
    line[n++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, n);
    (void)w;
}

/* report prints the one line convcache run asks for (CONVCACHE_REPORT, the
 * cache file's path, printed with control characters as '?'). */
static void report(const struct convcache_preload_stats *s) {
    const char *path = env_get("CONVCACHE_REPORT");
    if (!path || !path[0] || flag("CONVCACHE_QUIET", 1, 1)) return;
    if (s->calls == 0 && s->v8_graphs == 0 && s->v8_passthrough == 0) return;
    char line[1024];
    size_t n = 0;
    put(line, sizeof line, &n, "convcache:");
    if (s->v8_graphs || s->v8_passthrough) {
        unsigned long long other = s->v8_graphs - s->v8_hits - s->v8_misses - s->v8_aside;
        put(line, sizeof line, &n, " %llu graphs: %llu served from the cache, %llu benchmarked", s->v8_graphs,
            s->v8_hits, s->v8_misses + s->v8_aside);
        if (s->v8_aside) {
            const char *why = top_aside();
            put(line, sizeof line, &n, " (%llu of them stood aside%s%s)", s->v8_aside, why ? ", mostly: " : "",
                why ? why : "");
        }
        put(line, sizeof line, &n, ", %llu stored", s->v8_recorded);
        if (s->v8_graphs >= s->v8_hits + s->v8_misses + s->v8_aside && other)
            put(line, sizeof line, &n, ", %llu not benchmarked by the program", other);
        if (s->v8_refused_builds) put(line, sizeof line, &n, ", %llu plans refused (strict)", s->v8_refused_builds);
        if (s->v8_passthrough) put(line, sizeof line, &n, ", %llu other graphs passed through", s->v8_passthrough);
        put(line, sizeof line, &n, ";");
    }
    if (s->calls) {
        put(line, sizeof line, &n, " %llu finds: %llu served from the cache, %llu benchmarked and stored", s->calls,
            s->hits, s->misses);
        if (s->passthrough) put(line, sizeof line, &n, ", %llu passed through", s->passthrough);
        if (s->refused) put(line, sizeof line, &n, ", %llu refused (strict)", s->refused);
        if (s->errors) put(line, sizeof line, &n, ", %llu errors", s->errors);
        if (s->hits) put(line, sizeof line, &n, "; benchmark time saved >= %.1f ms", s->saved_ms < 1e15 ? s->saved_ms : 1e15);
        put(line, sizeof line, &n, ";");
    }
    put(line, sizeof line, &n, " cache ");
    for (const char *p = path; *p && n < sizeof line - 1; p++) line[n++] = (unsigned char)*p < 0x20 || *p == 0x7f ? '?' : *p;
    emit(line, sizeof line, n);
}

/* summary prints CONVCACHE_VERBOSE's lines. */
static void summary(const struct convcache_preload_stats *s) {
    if (!flag("CONVCACHE_VERBOSE", 1, 2)) return;
    char line[512];
    size_t n = 0;
    if (s->calls) {
        put(line, sizeof line, &n,
            "convcache-preload: summary: finds %llu, hits %llu, misses %llu, passthrough %llu, strict refusals %llu, "
            "errors %llu; cuDNN find time on misses %.3f ms; benchmark time saved by hits >= %.3f ms",
            s->calls, s->hits, s->misses, s->passthrough, s->refused, s->errors, (double)s->find_ns / 1e6,
            s->saved_ms < 1e15 ? s->saved_ms : 1e15);
        emit(line, sizeof line, n);
    }
    if (s->v8_graphs || s->v8_passthrough) {
        n = 0;
        put(line, sizeof line, &n,
            "convcache-preload: v8: graphs %llu, hits %llu, misses %llu, stand-asides %llu, from other builders %llu, "
            "stored %llu, builds deferred %llu, timings refused %llu, strict refusals %llu, not served %llu",
            s->v8_graphs, s->v8_hits, s->v8_misses, s->v8_aside, s->v8_waited, s->v8_recorded, s->v8_deferred_builds,
            s->v8_refused_execs, s->v8_refused_builds, s->v8_passthrough);
        emit(line, sizeof line, n);
    }
    char times[1024]; /* the time by phase (v8_time.c), a line of its own */
    int k = v8_time_format(times, sizeof times);
    if (k > 0) {
        ssize_t w = write(STDERR_FILENO, times, (size_t)k);
        (void)w;
    }
}

__attribute__((destructor)) static void print_at_exit(void) {
    struct convcache_preload_stats s;
    snapshot(&s);
    summary(&s);
    report(&s);
}
