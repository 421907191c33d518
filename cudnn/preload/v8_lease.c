/*
 * Single flight for a graph nobody has benchmarked yet. A backend-API
 * benchmark is not one call but many (heuristics, a build per candidate,
 * the timing, the final choice), so it cannot run inside
 * convcache_get_or_create's builder on the host's thread. Instead a helper
 * thread calls convcache_get_or_create for the key, with a builder that
 * waits for the host's benchmark to finish:
 *
 *   host thread                      helper thread
 *   v8_lease_take ----- start -----> get_or_create(key, build)
 *     waits                            build() runs: this process leads
 *     <----------- LEASE_LEAD ------   build() waits ...
 *   benchmarks, then
 *   v8_lease_finish(value) --------> build() returns value: stored,
 *                                     other threads and processes get it
 *
 * or, when another thread or process leads, get_or_create waits for its
 * value (bounded by the build timeout, and released at once if that
 * process dies) and returns it: LEASE_VALUE, and the host serves it.
 * Everything else (a cache error, strict mode, no thread) is LEASE_NONE:
 * the host benchmarks alone, as without convcache.
 *
 * The lease follows the host's progress, not its lifetime: a leader's
 * builder waits while the host works on the graph (a heuristics query, a
 * plan finalize, an execute of one of its plans, each a call in flight or
 * one that ended less than $CONVCACHE_BUILD_IDLE_MS, 2 s by default, ago),
 * and at most the build timeout ($CONVCACHE_BUILD_TIMEOUT_MS, 60 s by
 * default) in all. A host that builds plans and then does something else
 * (runs them much later, or never) thus holds the other threads and
 * processes for about 2 s, not for the build timeout: past either bound
 * the builder stores nothing and lets the waiters build for themselves
 * (one of them leads next), and the host's choice, if it comes, is stored
 * with a plain insert.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "v8.h"

#define VALUE_CAP V8_VALUE_MAX

struct v8_lease {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs;   /* the host's side and the helper's */
    int state;  /* 0 waiting, then LEASE_LEAD, LEASE_VALUE or LEASE_NONE */
    int done;   /* the host finished (value or not) */
    int abandoned; /* the builder stopped waiting: the host's value is the host's to insert */
    int stored;    /* get_or_create returned: a value handed over is in the cache */
    /* The host's progress on the graph (atomics; v8_lease_progress): its
     * calls in flight, and when the last one began or ended (ms). */
    int busy;
    long long last_ms;
    convcache_handle *cache;
    unsigned char key[CONVCACHE_KEY_MAX];
    size_t key_len;
    unsigned char value[VALUE_CAP];
    size_t value_len;
};

/* env_ms reads a duration in milliseconds, 1 ms to a day, else def. */
static long long env_ms(const char *name, long long def) {
    const char *v = env_get(name);
    char *end;
    long long n = v ? strtoll(v, &end, 10) : 0;
    if (!v || end == v || *end || n < 1 || n > 86400000) n = def;
    return n;
}

static long long timeout_ms(void) { return env_ms("CONVCACHE_BUILD_TIMEOUT_MS", 60000); }

static long long mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* deadline_at is monotonic time ms (mono_ms) as the realtime deadline a
 * condition variable's timed wait takes. */
static void deadline_at(struct timespec *ts, long long ms) {
    long long now = mono_ms();
    clock_gettime(CLOCK_REALTIME, ts);
    long long d = ms > now ? ms - now : 0;
    ts->tv_sec += d / 1000;
    ts->tv_nsec += (d % 1000) * 1000000;
    if (ts->tv_nsec >= 1000000000) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000;
    }
}

void v8_lease_progress(struct v8_graph *g, int delta) {
    struct v8_lease *l = g ? g->lease : NULL;
    if (!l) return;
    __atomic_add_fetch(&l->busy, delta, __ATOMIC_RELAXED);
    __atomic_store_n(&l->last_ms, mono_ms(), __ATOMIC_RELAXED);
}

static void unref(struct v8_lease *l) {
    pthread_mutex_lock(&l->mu);
    int last = --l->refs == 0;
    pthread_mutex_unlock(&l->mu);
    if (!last) return;
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->mu);
    free(l);
}

static void set_state(struct v8_lease *l, int state) {
    if (l->state == 0) l->state = state;
    pthread_cond_broadcast(&l->cv);
}

/* build runs on the helper thread when this process leads the key: it
 * tells the host, then waits for its result. */
static int build(void *user, const void *key, size_t key_len, void *value, size_t cap, size_t *len) {
    (void)key;
    (void)key_len;
    struct v8_lease *l = user;
    long long start = mono_ms(), idle = env_ms("CONVCACHE_BUILD_IDLE_MS", 2000);
    long long until = start + timeout_ms();
    __atomic_store_n(&l->last_ms, start, __ATOMIC_RELAXED);
    struct v8_timer tw;
    v8_time_begin(&tw, V8T_HELPER_WAIT);
    pthread_mutex_lock(&l->mu);
    set_state(l, LEASE_LEAD);
    while (!l->done) {
        long long now = mono_ms(), last = __atomic_load_n(&l->last_ms, __ATOMIC_RELAXED);
        int busy = __atomic_load_n(&l->busy, __ATOMIC_RELAXED) > 0;
        if (now >= until || (!busy && now - last >= idle)) break;
        long long wake = busy ? now + idle : last + idle;
        struct timespec ts;
        deadline_at(&ts, wake < until ? wake : until);
        pthread_cond_timedwait(&l->cv, &l->mu, &ts);
    }
    v8_time_end(&tw);
    if (!l->done) l->abandoned = 1;
    int ok = l->done && l->value_len > 0 && l->value_len <= cap;
    if (ok) {
        memcpy(value, l->value, l->value_len);
        *len = l->value_len;
    }
    pthread_mutex_unlock(&l->mu);
    return ok ? 0 : CONVCACHE_E_USER; /* nothing stored */
}

static void *helper(void *arg) {
    struct v8_lease *l = arg;
    unsigned char value[VALUE_CAP];
    size_t len = 0;
    int rc = V8_TIMED(V8T_HELPER_CACHE,
                      api.get_or_create(l->cache, l->key, l->key_len, build, l, value, sizeof value, &len));
    pthread_mutex_lock(&l->mu);
    if (rc == CONVCACHE_HIT && len <= sizeof l->value && l->state == 0) {
        memcpy(l->value, value, len);
        l->value_len = len;
        set_state(l, LEASE_VALUE);
    } else {
        set_state(l, LEASE_NONE);
    }
    l->stored = 1;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
    unref(l);
    return NULL;
}

int v8_lease_take(convcache_handle *cache, const unsigned char *key, size_t key_len,
                  struct v8_lease **out, unsigned char *value, size_t cap, size_t *len) {
    *out = NULL;
    if (key_len == 0 || key_len > CONVCACHE_KEY_MAX) return LEASE_NONE;
    struct v8_lease *l = calloc(1, sizeof *l);
    if (!l) return LEASE_NONE;
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
    l->refs = 2;
    l->cache = cache;
    memcpy(l->key, key, key_len);
    l->key_len = key_len;
    pthread_attr_t attr;
    pthread_t t;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int started = pthread_create(&t, &attr, helper, l) == 0;
    pthread_attr_destroy(&attr);
    if (!started) {
        l->refs = 1;
        unref(l);
        return LEASE_NONE;
    }
    /* get_or_create itself waits at most the build timeout for another
     * builder; this bound only guards against a helper that never says. */
    struct timespec until;
    deadline_at(&until, mono_ms() + timeout_ms() + 10000);
    struct v8_timer tw;
    v8_time_begin(&tw, V8T_LEASE);
    pthread_mutex_lock(&l->mu);
    int rc = 0;
    while (l->state == 0 && rc != ETIMEDOUT) rc = pthread_cond_timedwait(&l->cv, &l->mu, &until);
    int state = l->state ? l->state : LEASE_NONE;
    if (state == LEASE_VALUE && l->value_len <= cap) {
        memcpy(value, l->value, l->value_len);
        *len = l->value_len;
    } else if (state == LEASE_VALUE) {
        state = LEASE_NONE;
    }
    if (state == LEASE_NONE || state == LEASE_VALUE) l->done = 1;
    pthread_mutex_unlock(&l->mu);
    v8_time_end(&tw);
    if (state == LEASE_LEAD) {
        *out = l;
        return state;
    }
    unref(l);
    return state;
}

int v8_lease_finish(struct v8_lease *l, const void *value, size_t len) {
    if (!l) return 0;
    pthread_mutex_lock(&l->mu);
    int taken = !l->abandoned && value && len <= sizeof l->value;
    if (taken) {
        memcpy(l->value, value, len);
        l->value_len = len;
    }
    l->done = 1;
    pthread_cond_broadcast(&l->cv);
    /* A value handed over is stored before the host goes on (a program
     * that exits next must not lose it), waiting at most a few seconds
     * for a file lock. */
    struct timespec until;
    deadline_at(&until, mono_ms() + 5000);
    int rc = 0;
    while (taken && !l->stored && rc != ETIMEDOUT) rc = pthread_cond_timedwait(&l->cv, &l->mu, &until);
    pthread_mutex_unlock(&l->mu);
    unref(l);
    return taken;
}
