/* Hits under fire (issue 17): 8 reader threads find every key, in random
 * order, for as long as 4 writer processes insert, re-insert with new values,
 * save, load and compact the same file (CONVCACHE_COMPACT_JOURNAL at its
 * minimum: the file is replaced under the readers about 20 times). Every hit
 * is checked byte for byte: the value must be one that some process inserted
 * for that key (its key id, a version inserted for it, the exact length and
 * bytes): never garbage, never another key's value, never torn. One find in
 * 16 gets a buffer too small for most values: CONVCACHE_E_RANGE must then give
 * the length of a version inserted for the key and write nothing. No find may
 * write past value_cap. Written against the public API only, so it holds the
 * hit path to the same bar whether Go or C answers it.
 *
 * Keys: KEYS distinct keys of 1 to 300 bytes (a quarter of them PyTorch's
 * 104-byte ConvolutionParams shape), plus GHOSTS keys nobody inserts: a find
 * of one always misses, and so reads the file's new tail (changing the index)
 * while other threads hit. Values: 8 to 200 bytes, a function of (key,
 * version). The parent inserts the even keys (version 0) before anyone reads;
 * each key has one owning writer, which inserts the odd keys in round 0
 * (version 1) and re-inserts about half of its keys in each later round r
 * (version r + 1). One owner per key makes each key's last value known: a
 * fresh handle at the end, and A and B after a load, must hold exactly that.
 *
 * Handles in the parent: readers 0-3 share A (which inserted the even keys),
 * readers 4-6 share B (a second handle on the file), reader 7 opens a handle
 * of its own for every pass and closes it after, while the others read on A
 * and B; a maintenance thread calls convcache_load on A and B and
 * convcache_save on A, which also compacts. Writers read too: each reads back
 * exactly what it has just inserted, and checks a random key, in a process
 * whose own handle compacts.
 *
 * A miss is a failure for: a key the parent inserted before the readers
 * started; a key some reader here had found before the find began (it is in
 * the file, and a miss reads the file: the Live sharing guarantee); any key,
 * in a pass that began after every writer had exited. A ghost key must
 * always miss.
 *
 * Writers are fork+exec of this program ("writer" mode): the library refuses
 * calls in a child that was forked but not exec'd. The writers start together
 * when the parent closes a pipe (the gate) and report their counters on
 * another; the readers stop once waitpid has reaped every writer. No sleep
 * synchronises anything, and the outcome does not depend on timing.
 *
 * What it cannot see: a reader that reads memory the library has already
 * reclaimed still reads the right bytes until that memory is reused, which
 * the test does not control. `make hammer-tsan` builds it, with the
 * library's C code, under ThreadSanitizer (see mk/core.mk).
 */
#include "check.h"

#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/prctl.h>

#define READERS 8
#define WRITERS 4
#define KEYS 2000
#define GHOSTS 64
#define ALL_KEYS (KEYS + GHOSTS)
#define ROUNDS 48
#define KEY_LEN_MAX 300
#define VAL_LEN_MIN 8
#define VAL_LEN_MAX 200
#define VAL_CAP 256      /* the buffer a find gets: more than any value */
#define SMALL_CAP 24     /* and one that most values do not fit (E_RANGE) */
#define CANARY 64        /* bytes after VAL_CAP that a find must never write */
#define MIN_PASSES 2     /* each reader reads every key at least this often */
#define SCOPE "hammer"
#define WATCHDOG_SEC 240 /* only ends a hang; a run takes a few seconds */

/* ---- Keys and values: pure functions of their ids ---------------------- */

static uint32_t mix(uint32_t a, uint32_t b) { /* splitmix64's finaliser */
    uint64_t x = ((uint64_t)a << 32 | b) + 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return (uint32_t)(x ^ (x >> 31));
}

typedef struct {
    size_t len;
    unsigned char b[KEY_LEN_MAX];
} hkey;

static hkey keys[ALL_KEYS];

/* Distinct by construction: keys of 1 to 3 bytes start with their id (below
 * 48); 104-byte keys are check.h's ConvolutionParams (id at offset 88); every
 * other key is 4 to 300 bytes (never 104) and starts with its id. */
static void make_keys(void) {
    for (uint32_t i = 0; i < ALL_KEYS; i++) {
        hkey *k = &keys[i];
        if (i < 48) {
            k->len = 1 + i % 3;
            memset(k->b, 0xA5, k->len);
            k->b[0] = (unsigned char)i;
        } else if (i % 4 == 0) {
            test_key t = make_key(i);
            k->len = sizeof t;
            memcpy(k->b, &t, sizeof t);
        } else {
            k->len = 4 + mix(i, 0xC0FFEE) % (KEY_LEN_MAX - 3);
            if (k->len == sizeof(test_key)) k->len++;
            memcpy(k->b, &i, 4);
            for (size_t j = 4; j < k->len; j++) k->b[j] = (unsigned char)mix(i, (uint32_t)j);
        }
    }
}

static size_t val_len(uint32_t key, uint32_t ver) {
    return VAL_LEN_MIN + mix(key ^ 0x5EED0000u, ver) % (VAL_LEN_MAX - VAL_LEN_MIN + 1);
}

/* The value of (key, version): its ids, then a stream seeded by both. */
static size_t make_value(uint32_t key, uint32_t ver, unsigned char *out) {
    size_t n = val_len(key, ver);
    memcpy(out, &key, 4);
    memcpy(out + 4, &ver, 4);
    uint32_t s = mix(key, ver) | 1;
    for (size_t j = 8; j < n; j++) {
        s ^= s << 13, s ^= s >> 17, s ^= s << 5; /* xorshift32 */
        out[j] = (unsigned char)s;
    }
    return n;
}

/* ---- Who inserts what --------------------------------------------------- */

static int preinserted(uint32_t key) { return key < KEYS && key % 2 == 0; }
static uint32_t owner(uint32_t key) { return mix(key, 7) % WRITERS; }
/* Round r >= 1 re-inserts about half the keys, each by its owner. */
static int touched(uint32_t key, uint32_t round) { return mix(key, 100 + round) % 2 == 0; }
/* What the owner inserts in round r, at version r + 1. */
static int writes(uint32_t key, uint32_t round) {
    return key < KEYS && (round == 0 ? !preinserted(key) : touched(key, round));
}

static int legit(uint32_t key, uint32_t ver) {
    if (ver == 0) return preinserted(key);
    return ver - 1 < ROUNDS && writes(key, ver - 1);
}

/* Whether some version inserted for key is n bytes long. */
static int legit_len(uint32_t key, size_t n) {
    for (uint32_t ver = 0; ver <= ROUNDS; ver++)
        if (legit(key, ver) && val_len(key, ver) == n) return 1;
    return 0;
}

static uint32_t final_version(uint32_t key) {
    for (uint32_t r = ROUNDS - 1; r >= 1; r--)
        if (touched(key, r)) return r + 1;
    return preinserted(key) ? 0 : 1;
}

/* NULL if got[0..n) is a value some process inserted for key, else what is
 * wrong with it (in a buffer of the calling thread's). */
static const char *check_value(uint32_t key, const unsigned char *got, size_t n) {
    static __thread char why[160];
    uint32_t id, ver;
    if (n < VAL_LEN_MIN) return "shorter than any value inserted";
    memcpy(&id, got, 4);
    memcpy(&ver, got + 4, 4);
    if (id != key) {
        snprintf(why, sizeof why, "the value of %s %u (version %u)", id < ALL_KEYS ? "key" : "no key", id, ver);
        return why;
    }
    if (!legit(key, ver)) {
        snprintf(why, sizeof why, "version %u, never inserted for this key", ver);
        return why;
    }
    unsigned char want[VAL_LEN_MAX];
    size_t wn = make_value(key, ver, want);
    if (n != wn) {
        snprintf(why, sizeof why, "version %u with %zu bytes, inserted with %zu", ver, n, wn);
        return why;
    }
    for (size_t j = 0; j < n; j++)
        if (got[j] != want[j]) {
            snprintf(why, sizeof why, "version %u, byte %zu is %#x, inserted as %#x", ver, j, got[j], want[j]);
            return why;
        }
    return NULL;
}

/* ---- Failing cleanly --------------------------------------------------- *
 * exit() removes the directory (tmpdir.h): before that, the writers are
 * killed and this process's other threads parked, so that nothing creates a
 * file in it (a lock file, a compaction's new file) while it is removed. */

static _Atomic pid_t writer_pids[WRITERS];
static pthread_mutex_t fail_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_int failing;      /* set by fail(): readers and maintenance park */
static atomic_int busy_threads; /* readers and maintenance, started and not parked */
static __thread int busy;       /* the calling thread is counted in busy_threads */

static void not_busy(void) {
    if (busy) atomic_fetch_sub(&busy_threads, 1);
    busy = 0;
}

/* Readers and the maintenance thread call this before each library call. */
static void park_if_failing(void) {
    if (!atomic_load(&failing)) return;
    not_busy();
    for (;;) pause(); /* until fail()'s exit */
}

static void kill_writers(void) {
    for (int w = 0; w < WRITERS; w++) {
        pid_t pid = atomic_exchange(&writer_pids[w], 0);
        if (pid > 0) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
        }
    }
}

__attribute__((format(printf, 1, 2), noreturn)) static void fail(const char *fmt, ...) {
    not_busy();
    pthread_mutex_lock(&fail_mu); /* one report; a second failing thread waits here until exit */
    atomic_store(&failing, 1);
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "test_hammer: FAIL: ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    kill_writers();
    /* Every call the others may be in returns soon: finds never wait, and no
     * writer is left to hold the file lock. */
    while (atomic_load(&busy_threads) > 0) sched_yield();
    exit(1);
}

static void on_alarm(int sig) {
    static const char msg[] = "test_hammer: FAIL: still running after the watchdog's time: a hang\n";
    if (write(2, msg, sizeof msg - 1) < 0) { /* nothing more to do */
    }
    for (int w = 0; w < WRITERS; w++) {
        pid_t pid = atomic_load(&writer_pids[w]);
        if (pid > 0) kill(pid, SIGKILL); /* async-signal-safe; init reaps them */
    }
    test_on_signal_(sig); /* tmpdir.h: remove the directory, die of the signal */
}

/* ---- Writers (separate processes) --------------------------------------- */

struct writer_report {
    uint64_t inserts, hits, misses, compactions;
};

/* fd 3: the gate (EOF when everyone may start); fd 4: the report pipe. */
static int writer(const char *path, uint32_t id, pid_t parent) {
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive a parent that died */
    if (getppid() != parent) return 1;
    char go;
    CHECK(read(3, &go, 1) == 0);
    convcache *c;
    CHECK_RC(convcache_open(path, SCOPE, &c), CONVCACHE_OK);
    uint32_t seed = mix(id, 42) | 1;
    unsigned char buf[VAL_CAP], val[VAL_LEN_MAX];
    struct writer_report rep = {0};
    for (uint32_t r = 0; r < ROUNDS; r++) {
        for (uint32_t key = 0; key < KEYS; key++) {
            if (owner(key) != id || !writes(key, r)) continue;
            size_t vn = make_value(key, r + 1, val);
            CHECK_RC(convcache_insert(c, keys[key].b, keys[key].len, val, vn), CONVCACHE_OK);
            rep.inserts++;
            /* Read your writes: nobody else writes this key. */
            size_t n = 0;
            CHECK_RC(convcache_find(c, keys[key].b, keys[key].len, buf, sizeof buf, &n), CONVCACHE_HIT);
            if (n != vn || memcmp(buf, val, vn) != 0)
                fprintf(stderr, "writer %u: key %u read back as %s\n", id, key,
                        check_value(key, buf, n) ? check_value(key, buf, n) : "an older version");
            CHECK(n == vn && memcmp(buf, val, vn) == 0);
            /* And any key: a valid value, or a miss where one may be. */
            seed ^= seed << 13, seed ^= seed >> 17, seed ^= seed << 5;
            uint32_t other = seed % ALL_KEYS;
            int rc = convcache_find(c, keys[other].b, keys[other].len, buf, sizeof buf, &n);
            if (rc == CONVCACHE_HIT) {
                const char *bad = check_value(other, buf, n);
                if (bad) fprintf(stderr, "writer %u: key %u holds %s\n", id, other, bad);
                CHECK(bad == NULL && other < KEYS);
                rep.hits++;
            } else {
                CHECK_RC(rc, 0);
                CHECK(!preinserted(other));
                rep.misses++;
            }
        }
        CHECK_RC(convcache_save(c), CONVCACHE_OK);
        if (r % 3 == 1) CHECK_RC(convcache_load(c), CONVCACHE_OK);
    }
    struct convcache_stats st = {.struct_size = sizeof st};
    CHECK_RC(convcache_stats(c, &st), CONVCACHE_OK);
    rep.compactions = st.compactions;
    convcache_close(c);
    CHECK(write(4, &rep, sizeof rep) == sizeof rep); /* below PIPE_BUF: one piece */
    return 0;
}

static pid_t spawn_writer(const char *self, const char *path, int id, int gate, int report) {
    char ids[16], ppid[16];
    snprintf(ids, sizeof ids, "%d", id);
    snprintf(ppid, sizeof ppid, "%d", (int)getpid());
    char *args[] = {(char *)self, "writer", (char *)path, ids, ppid, NULL};
    pid_t pid = fork();
    if (pid < 0) fail("fork: %s", strerror(errno));
    if (pid == 0) { /* only async-signal-safe calls until exec */
        int g = fcntl(gate, F_DUPFD, 10), r = fcntl(report, F_DUPFD, 10);
        if (g < 0 || r < 0 || dup2(g, 3) != 3 || dup2(r, 4) != 4) _exit(126);
        close_range(5, ~0U, 0);
        execv(self, args);
        _exit(127);
    }
    return pid;
}

/* ---- Readers (threads of the parent) ------------------------------------- */

static convcache *shared_a, *shared_b;
static const char *cache_path;
static atomic_int writers_done;
static atomic_uchar seen[ALL_KEYS]; /* some reader here has had a hit on the key */

typedef struct {
    int id;
    pthread_t thread;
    uint64_t hits, too_small, misses, passes, reopens;
} reader;

/* all_written: every writer had exited before the pass began. */
static void read_pass(reader *r, convcache *h, uint32_t *order, uint32_t *seed, int all_written) {
    for (uint32_t i = ALL_KEYS - 1; i > 0; i--) { /* Fisher-Yates: a new order each pass */
        *seed ^= *seed << 13, *seed ^= *seed >> 17, *seed ^= *seed << 5;
        uint32_t j = *seed % (i + 1), t = order[i];
        order[i] = order[j], order[j] = t;
    }
    unsigned char buf[VAL_CAP + CANARY];
    for (uint32_t i = 0; i < ALL_KEYS; i++) {
        uint32_t key = order[i];
        int must_hit = key < KEYS && (preinserted(key) || all_written || atomic_load(&seen[key]));
        /* One find in 16 gets a buffer that most values do not fit. */
        size_t cap = i % 16 == 15 ? SMALL_CAP : VAL_CAP, n = 0;
        memset(buf, 0xEE, cap + CANARY);
        park_if_failing();
        int rc = convcache_find(h, keys[key].b, keys[key].len, buf, cap, &n);
        for (size_t j = rc == CONVCACHE_E_RANGE ? 0 : cap; j < cap + CANARY; j++)
            if (buf[j] != 0xEE)
                fail("reader %d: find of key %u (value_cap %zu, returned %d) wrote byte %zu", r->id, key, cap, rc, j);
        if (rc == CONVCACHE_HIT || rc == CONVCACHE_E_RANGE) {
            const char *bad = key >= KEYS             ? "a value for a key nobody inserted"
                              : rc == CONVCACHE_HIT   ? check_value(key, buf, n)
                              : n <= cap              ? "a length that fits the buffer"
                              : !legit_len(key, n)    ? "a length no version inserted for it has"
                                                      : NULL;
            if (bad)
                fail("reader %d: key %u (%zu-byte key, value_cap %zu, returned %d, length %zu) holds %s", r->id,
                     key, keys[key].len, cap, rc, n, bad);
            if (!atomic_load_explicit(&seen[key], memory_order_relaxed)) atomic_store(&seen[key], 1);
            if (rc == CONVCACHE_HIT) r->hits++;
            else r->too_small++;
        } else if (rc == 0) {
            if (must_hit)
                fail("reader %d: key %u missed, though %s", r->id, key,
                     preinserted(key) ? "it was inserted before the readers started"
                     : all_written    ? "every writer had exited"
                                      : "a reader of this process had found it");
            r->misses++;
        } else {
            fail("reader %d: convcache_find of key %u returned %d: %s", r->id, key, rc, convcache_last_error());
        }
    }
    r->passes++;
}

static void *reader_main(void *arg) {
    reader *r = arg;
    busy = 1; /* counted by main before the thread was created */
    static __thread uint32_t order[ALL_KEYS];
    for (uint32_t i = 0; i < ALL_KEYS; i++) order[i] = i;
    uint32_t seed = mix((uint32_t)r->id, 99) | 1;
    /* Until a pass that began after the writers were done, and at least
     * MIN_PASSES. */
    for (int done = 0; !done || r->passes < MIN_PASSES;) {
        done = atomic_load(&writers_done);
        if (r->id == READERS - 1) {
            /* A handle of its own, opened and closed while the others read. */
            convcache *h;
            park_if_failing();
            int rc = convcache_open(cache_path, SCOPE, &h);
            if (rc != CONVCACHE_OK) fail("reader %d: convcache_open returned %d: %s", r->id, rc, convcache_last_error());
            read_pass(r, h, order, &seed, done);
            park_if_failing();
            convcache_close(h);
            r->reopens++;
        } else {
            read_pass(r, r->id < 4 ? shared_a : shared_b, order, &seed, done);
        }
    }
    not_busy();
    return NULL;
}

/* Loads A and B, and saves A (the record of used entries: it appends, and
 * compacts when the journal calls for it) while the readers hit. */
static void *maintain(void *arg) {
    uint64_t *rounds = arg;
    busy = 1;
    while (!atomic_load(&writers_done)) {
        int rc;
        park_if_failing();
        if ((rc = convcache_load(shared_a)) != CONVCACHE_OK) fail("load A returned %d: %s", rc, convcache_last_error());
        park_if_failing();
        if ((rc = convcache_load(shared_b)) != CONVCACHE_OK) fail("load B returned %d: %s", rc, convcache_last_error());
        park_if_failing();
        if (++*rounds % 8 == 0 && (rc = convcache_save(shared_a)) != CONVCACHE_OK) fail("save A returned %d: %s", rc, convcache_last_error());
        /* Pacing only (a save fsyncs): nothing waits for this thread. */
        nanosleep(&(struct timespec){.tv_nsec = 2 * 1000 * 1000}, NULL);
    }
    not_busy();
    return NULL;
}

/* ---- The run ------------------------------------------------------------- */

static void expect_final(convcache *h, const char *what) {
    unsigned char buf[VAL_CAP], want[VAL_LEN_MAX];
    for (uint32_t key = 0; key < ALL_KEYS; key++) {
        size_t n = 0;
        int rc = convcache_find(h, keys[key].b, keys[key].len, buf, sizeof buf, &n);
        if (key >= KEYS) {
            if (rc != 0) fail("%s: ghost key %u: find returned %d, want a miss: %s", what, key, rc, convcache_last_error());
            continue;
        }
        if (rc != CONVCACHE_HIT) fail("%s: key %u: find returned %d, want a hit: %s", what, key, rc, convcache_last_error());
        size_t wn = make_value(key, final_version(key), want);
            if (n != wn || memcmp(buf, want, wn) != 0) {
            const char *bad = check_value(key, buf, n);
            uint32_t ver;
            memcpy(&ver, buf + 4, 4);
            fail("%s: key %u holds %s, want its last version %u", what, key,
                 bad ? bad : ver != final_version(key) ? "an earlier version" : "other bytes", final_version(key));
        }
    }
}

int main(int argc, char **argv) {
    make_keys();
    if (argc == 5 && strcmp(argv[1], "writer") == 0)
        return writer(argv[2], (uint32_t)atoi(argv[3]), (pid_t)atoi(argv[4]));

    /* Inserts and saves must succeed (not PENDING or E_LOCK) on a loaded
     * machine; the smallest journal compacts as often as the file allows. */
    setenv("CONVCACHE_LOCK_TIMEOUT_MS", "600000", 1);
    setenv("CONVCACHE_COMPACT_JOURNAL", "4K", 1);
    cache_path = test_path("hammer.ccdb");
    struct sigaction sa = {.sa_handler = on_alarm, .sa_flags = SA_ONSTACK};
    sigaction(SIGALRM, &sa, NULL);
    alarm(WATCHDOG_SEC);
    double t0 = now_sec();

    int rc;
    if ((rc = convcache_open(cache_path, SCOPE, &shared_a)) != CONVCACHE_OK) fail("open A returned %d: %s", rc, convcache_last_error());
    unsigned char val[VAL_LEN_MAX];
    for (uint32_t key = 0; key < KEYS; key++)
        if (preinserted(key)) {
            size_t vn = make_value(key, 0, val);
            if ((rc = convcache_insert(shared_a, keys[key].b, keys[key].len, val, vn)) != CONVCACHE_OK)
                fail("insert of key %u returned %d: %s", key, rc, convcache_last_error());
        }
    if ((rc = convcache_save(shared_a)) != CONVCACHE_OK) fail("save A returned %d: %s", rc, convcache_last_error());
    if ((rc = convcache_open(cache_path, SCOPE, &shared_b)) != CONVCACHE_OK) fail("open B returned %d: %s", rc, convcache_last_error());

    int gate[2], report[2];
    if (pipe(gate) != 0 || pipe(report) != 0) fail("pipe: %s", strerror(errno));
    for (int w = 0; w < WRITERS; w++) atomic_store(&writer_pids[w], spawn_writer(argv[0], cache_path, w, gate[0], report[1]));
    close(gate[0]);
    close(report[1]);

    static reader readers[READERS];
    for (int i = 0; i < READERS; i++) {
        readers[i].id = i;
        atomic_fetch_add(&busy_threads, 1);
        if (pthread_create(&readers[i].thread, NULL, reader_main, &readers[i]) != 0) {
            atomic_fetch_sub(&busy_threads, 1);
            fail("pthread_create");
        }
    }
    pthread_t maint;
    uint64_t maint_rounds = 0;
    atomic_fetch_add(&busy_threads, 1);
    if (pthread_create(&maint, NULL, maintain, &maint_rounds) != 0) {
        atomic_fetch_sub(&busy_threads, 1);
        fail("pthread_create");
    }
    close(gate[1]); /* the writers start now */

    for (int w = 0; w < WRITERS; w++) {
        int st;
        pid_t pid = atomic_load(&writer_pids[w]);
        if (waitpid(pid, &st, 0) != pid) fail("waitpid: %s", strerror(errno));
        atomic_store(&writer_pids[w], 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            fail("writer %d: %s %d", w, WIFEXITED(st) ? "exit status" : "killed by signal",
                 WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
    }
    double t1 = now_sec();
    atomic_store(&writers_done, 1);
    pthread_join(maint, NULL);
    uint64_t hits = 0, too_small = 0, misses = 0, passes = 0;
    for (int i = 0; i < READERS; i++) {
        pthread_join(readers[i].thread, NULL);
        hits += readers[i].hits, too_small += readers[i].too_small;
        misses += readers[i].misses, passes += readers[i].passes;
    }

    struct writer_report sum = {0}, rep;
    int reports = 0;
    while (read(report[0], &rep, sizeof rep) == sizeof rep) {
        sum.inserts += rep.inserts, sum.hits += rep.hits, sum.misses += rep.misses;
        sum.compactions += rep.compactions;
        reports++;
    }
    close(report[0]);
    if (reports != WRITERS) fail("%d writer reports, want %d", reports, WRITERS);

    struct convcache_stats st = {.struct_size = sizeof st};
    if ((rc = convcache_stats(shared_a, &st)) != CONVCACHE_OK) fail("stats A returned %d: %s", rc, convcache_last_error());
    if (st.hits == 0) fail("handle A counted no hits");
    if (sum.compactions == 0) fail("no writer compacted: the file was never replaced under the readers");

    /* The end state, through a fresh handle and through A and B after a load. */
    convcache *fresh;
    if ((rc = convcache_open(cache_path, SCOPE, &fresh)) != CONVCACHE_OK) fail("open returned %d: %s", rc, convcache_last_error());
    expect_final(fresh, "fresh handle");
    convcache_close(fresh);
    if ((rc = convcache_load(shared_a)) != CONVCACHE_OK) fail("load A returned %d: %s", rc, convcache_last_error());
    if ((rc = convcache_load(shared_b)) != CONVCACHE_OK) fail("load B returned %d: %s", rc, convcache_last_error());
    expect_final(shared_a, "handle A");
    expect_final(shared_b, "handle B");
    convcache_close(shared_a);
    convcache_close(shared_b);

    printf("test_hammer: %d writers: %llu inserts, %llu compactions (plus %llu by A), %llu finds checked; "
           "%.2fs\n",
           WRITERS, (unsigned long long)sum.inserts, (unsigned long long)sum.compactions,
           (unsigned long long)st.compactions, (unsigned long long)(sum.hits + sum.misses), t1 - t0);
    printf("test_hammer: %d readers: %llu passes over %d keys (%llu by a reopened handle), %llu hits checked, "
           "%llu value_cap too small (length checked), %llu misses; A: %llu hits; %llu loads of A and B\n",
           READERS, (unsigned long long)passes, ALL_KEYS, (unsigned long long)readers[READERS - 1].reopens,
           (unsigned long long)hits, (unsigned long long)too_small, (unsigned long long)misses,
           (unsigned long long)st.hits,
           (unsigned long long)maint_rounds);
    printf("test_hammer: ok (%.2fs)\n", now_sec() - t0);
    return 0;
}
