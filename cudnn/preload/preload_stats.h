/*
 * The interposer's counters, as convcache_preload_stats copies them out (a
 * debug hook for tests: tests/preload/v8_hosts.c reads it with dlsym).
 * Fields are only ever appended.
 */
#ifndef CONVCACHE_PRELOAD_STATS_H
#define CONVCACHE_PRELOAD_STATS_H

struct convcache_preload_stats {
    unsigned long long calls;         /* intercepted find calls */
    unsigned long long hits;          /* answered from the cache */
    unsigned long long misses;        /* ran the real find through the cache */
    unsigned long long passthrough;   /* ran the real find without the cache */
    unsigned long long library_loads; /* attempts to dlopen libconvcache */
    unsigned long long errors;        /* cache errors and rejected entries */
    unsigned long long refused;       /* CONVCACHE_MODE=strict misses, not benchmarked */
    unsigned long long find_ns;       /* time the real find took on misses */
    double saved_ms;                  /* the hits' stored successful times, summed */
    /* The backend ("v8") API, per convolution graph the host finalized: */
    unsigned long long v8_graphs;         /* keyed: looked up in the cache */
    unsigned long long v8_passthrough;    /* not served: not a single convolution, or unkeyable */
    unsigned long long v8_hits;           /* the stored choice served: one plan timed */
    unsigned long long v8_misses;         /* new: the host benchmarked, its choice learnt */
    unsigned long long v8_aside;          /* a stored choice could not serve: the host benchmarked */
    unsigned long long v8_waited;         /* got a choice another thread or process benchmarked */
    unsigned long long v8_recorded;       /* choices stored */
    unsigned long long v8_refused_execs;  /* timing executes refused while serving */
    unsigned long long v8_refused_builds; /* plans refused in strict mode */
    unsigned long long v8_deferred_builds; /* plan finalizes deferred while serving (v8_plans.c) */
    unsigned long long v8_looked_execs;    /* executes that went through v8_execute (v8_watch.c) */
};

#endif
