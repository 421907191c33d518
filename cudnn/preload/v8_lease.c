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
 * A leader's builder waits at most the build timeout
 * ($CONVCACHE_BUILD_TIMEOUT_MS, 60 s by default) for the host; past that
 * it stores nothing and lets the waiters build for themselves, and the
 * host's choice is stored when it comes with a plain insert.
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
    convcache_handle *cache;
    unsigned char key[CONVCACHE_KEY_MAX];
    size_t key_len;
    unsigned char value[VALUE_CAP];
    size_t value_len;
};

static long long timeout_ms(void) {
    const char *v = env_get("CONVCACHE_BUILD_TIMEOUT_MS");
    char *end;
    long long n = v ? strtoll(v, &end, 10) : 0;
    if (!v || end == v || *end || n < 1 || n > 86400000) n = 60000;
    return n;
}

static void deadline_in(struct timespec *ts, long long ms) {
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (ms % 1000) * 1000000;
    if (ts->tv_nsec >= 1000000000) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000;
    }
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
    struct timespec until;
    deadline_in(&until, timeout_ms());
    struct v8_timer tw;
    v8_time_begin(&tw, V8T_HELPER_WAIT);
    pthread_mutex_lock(&l->mu);
    set_state(l, LEASE_LEAD);
    int rc = 0;
    while (!l->done && rc != ETIMEDOUT) rc = pthread_cond_timedwait(&l->cv, &l->mu, &until);
    v8_time_end(&tw);
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
    deadline_in(&until, timeout_ms() + 10000);
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

void v8_lease_finish(struct v8_lease *l, const void *value, size_t len) {
    if (!l) return;
    pthread_mutex_lock(&l->mu);
    if (value && len <= sizeof l->value) {
        memcpy(l->value, value, len);
        l->value_len = len;
    }
    l->done = 1;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
    unref(l);
}
