/* Lifecycle torture (issue 22): every entry point of the C API, on handles
 * that other threads close and replace at any moment, from threads that
 * come and go, while peer processes insert, save and compact the same file.
 *
 * SLOTS shared slots each hold a handle. Worker threads (WORKERS alive at a
 * time) pick a slot and call, at random: find, peek, insert,
 * get_or_create, load, save, stats; or close the slot's handle (callers
 * then hold a closed one until someone replaces it), or open a new handle
 * and close the one it replaces. Each worker exits after a random number
 * of calls and a new one takes its place; one in four exits with a pthread
 * key whose destructor peeks (the library's own destructor has run by
 * then). PEERS processes (this program, exec'd) insert, find, save and
 * compact (CONVCACHE_COMPACT_JOURNAL at its minimum) until told to stop.
 *
 * Every answer is checked: a value found, peeked or built is one inserted
 * for that key (its key id, a version, the exact bytes); a key nobody
 * inserts never hits; every error is CONVCACHE_E_HANDLE (the handle was
 * closed before or during the call). At the end, with every handle closed,
 * no descriptor of this process is open on a file in the test's directory
 * and the library holds no pin, no published index and no retirement
 * (convcache_test_live, which only the test build of the library has:
 * mk/core.mk).
 *
 * Usage: test_lifecycle [calls [seconds]]: stop after calls calls (default
 * 40000) or, if seconds is given, after that long instead. The run goes on
 * until the file has been replaced at least MIN_REPLACED times. Nothing
 * sleeps to synchronise, and the outcome does not depend on timing.
 */
#include "check.h"

#include <dirent.h>
#include <stdarg.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/prctl.h>

void convcache_test_live(int64_t *pinners, int64_t *indexes, int64_t *waiting);

#define SLOTS 4
#define WORKERS 8
#define PEERS 2
#define KEYS 400
#define GHOSTS 40
#define VERSIONS 1000
#define VAL_MAX 120
#define MIN_REPLACED 3
#define WATCHDOG_SEC 3600

/* ---- keys and values: functions of their ids ---------------------------- */

static uint32_t mix(uint32_t a, uint32_t b) {
    uint64_t x = ((uint64_t)a << 32 | b) + 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return (uint32_t)(x ^ (x >> 31));
}

static uint32_t rnd(uint32_t *s) {
    *s ^= *s << 13, *s ^= *s >> 17, *s ^= *s << 5;
    return *s;
}

/* Key i: 104 bytes (PyTorch's shape) with its id at offset 88. */
static test_key key_of(uint32_t i) { return make_key(i); }

static size_t make_value(uint32_t key, uint32_t ver, unsigned char *out) {
    size_t n = 8 + mix(key, ver) % (VAL_MAX - 7);
    memcpy(out, &key, 4);
    memcpy(out + 4, &ver, 4);
    for (size_t j = 8; j < n; j++) out[j] = (unsigned char)mix(key ^ ver, (uint32_t)j);
    return n;
}

/* NULL if got is a value inserted for key (any version), else why not. */
static const char *check_value(uint32_t key, const unsigned char *got, size_t n) {
    uint32_t id, ver;
    unsigned char want[VAL_MAX];
    if (key >= KEYS) return "a hit on a key nobody inserts";
    if (n < 8) return "shorter than any value";
    memcpy(&id, got, 4);
    memcpy(&ver, got + 4, 4);
    if (id != key) return "another key's value";
    if (ver >= VERSIONS) return "a version never inserted";
    if (make_value(key, ver, want) != n || memcmp(want, got, n) != 0) return "other bytes than inserted";
    return NULL;
}

/* ---- failing ------------------------------------------------------------- */

static pid_t peers[PEERS];
static pthread_mutex_t fail_mu = PTHREAD_MUTEX_INITIALIZER;

__attribute__((format(printf, 1, 2), noreturn)) static void fail(const char *fmt, ...) {
    pthread_mutex_lock(&fail_mu);
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "test_lifecycle: FAIL: ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    for (int p = 0; p < PEERS; p++)
        if (peers[p] > 0) kill(peers[p], SIGKILL);
    /* Other threads may still create files in the directory: _exit, and
     * leave its removal to the signal path, which runs rm from a child. */
    test_remove_dir_();
    _exit(1);
}

static void on_alarm(int sig) {
    static const char msg[] = "test_lifecycle: FAIL: still running after the watchdog's time: a hang\n";
    if (write(2, msg, sizeof msg - 1) < 0) { /* nothing more to do */
    }
    for (int p = 0; p < PEERS; p++)
        if (peers[p] > 0) kill(peers[p], SIGKILL);
    test_on_signal_(sig);
}

/* ---- one call, checked ---------------------------------------------------- */

enum { OP_FIND, OP_PEEK, OP_INSERT, OP_GET_OR_CREATE, OP_LOAD, OP_SAVE, OP_STATS, OP_CLOSE, OP_REPLACE, OPS };
static const char *op_names[OPS] = {"find", "peek", "insert", "get_or_create", "load", "save", "stats", "close", "open+close"};

static const char *cache_path;
static _Atomic(convcache *) slots[SLOTS];
static atomic_ullong calls[OPS], refused, hits, destructor_peeks, exits, opens;

static int builder(void *user, const void *key, size_t key_len, void *value, size_t cap, size_t *len) {
    (void)key_len;
    uint32_t id;
    memcpy(&id, (const unsigned char *)key + 88, 4);
    unsigned char v[VAL_MAX];
    size_t n = make_value(id, *(uint32_t *)user, v);
    if (n > cap) return CONVCACHE_E_RANGE;
    memcpy(value, v, n);
    *len = n;
    return 0;
}

static void expect(int ok, const char *op, uint32_t key, int rc) {
    if (rc == CONVCACHE_E_HANDLE) {
        atomic_fetch_add(&refused, 1);
        return;
    }
    if (!ok) fail("%s of key %u returned %d (%s): %s", op, key, rc, convcache_strerror(rc), convcache_last_error());
}

static void checked_value(const char *op, uint32_t key, const unsigned char *v, size_t n) {
    const char *bad = check_value(key, v, n);
    if (bad) fail("%s of key %u: %s", op, key, bad);
    atomic_fetch_add(&hits, 1);
}

static convcache *open_handle(void) {
    convcache *h;
    int rc = convcache_open(cache_path, "lifecycle", &h);
    if (rc != CONVCACHE_OK) fail("open returned %d: %s", rc, convcache_last_error());
    atomic_fetch_add(&opens, 1);
    return h;
}

static void one_call(uint32_t *seed) {
    uint32_t r = rnd(seed) % 1000, key = rnd(seed) % (KEYS + GHOSTS), ver = rnd(seed) % VERSIONS;
    int op = r < 300 ? OP_FIND : r < 500 ? OP_PEEK : r < 650 ? OP_INSERT : r < 750 ? OP_GET_OR_CREATE
           : r < 800 ? OP_LOAD : r < 830 ? OP_SAVE : r < 950 ? OP_STATS : r < 960 ? OP_CLOSE : OP_REPLACE;
    _Atomic(convcache *) *slot = &slots[rnd(seed) % SLOTS];
    convcache *h = atomic_load(slot);
    test_key k = key_of(key);
    unsigned char v[VAL_MAX];
    size_t n = 0;
    int rc;
    atomic_fetch_add(&calls[op], 1);
    switch (op) {
    case OP_FIND:
        rc = convcache_find(h, &k, sizeof k, v, sizeof v, &n);
        if (rc == CONVCACHE_HIT) checked_value("find", key, v, n);
        expect(rc == CONVCACHE_HIT || rc == 0, "find", key, rc);
        break;
    case OP_PEEK:
        rc = convcache_peek(h, &k, sizeof k, v, sizeof v, &n);
        if (rc == CONVCACHE_HIT) checked_value("peek", key, v, n);
        if (rc != CONVCACHE_HIT && rc != 0) fail("peek of key %u returned %d", key, rc); /* never E_HANDLE */
        break;
    case OP_INSERT:
        if (key >= KEYS) key %= KEYS, k = key_of(key);
        n = make_value(key, ver, v);
        rc = convcache_insert(h, &k, sizeof k, v, n);
        expect(rc == CONVCACHE_OK, "insert", key, rc);
        break;
    case OP_GET_OR_CREATE:
        if (key >= KEYS) key %= KEYS, k = key_of(key);
        rc = convcache_get_or_create(h, &k, sizeof k, builder, &ver, v, sizeof v, &n);
        if (rc == CONVCACHE_HIT || rc == CONVCACHE_OK) checked_value("get_or_create", key, v, n);
        expect(rc == CONVCACHE_HIT || rc == CONVCACHE_OK, "get_or_create", key, rc);
        break;
    case OP_LOAD:
        rc = convcache_load(h);
        expect(rc == CONVCACHE_OK, "load", key, rc);
        break;
    case OP_SAVE:
        rc = convcache_save(h);
        expect(rc == CONVCACHE_OK, "save", key, rc);
        break;
    case OP_STATS: {
        struct convcache_stats st = {.struct_size = sizeof st};
        rc = convcache_stats(h, &st);
        expect(rc == CONVCACHE_OK, "stats", key, rc);
        break;
    }
    case OP_CLOSE: /* the slot keeps the closed handle until it is replaced */
        convcache_close(h);
        break;
    case OP_REPLACE: {
        convcache *old = atomic_exchange(slot, open_handle());
        convcache_close(old);
        break;
    }
    }
}

/* ---- workers: threads that come and go ------------------------------------ */

static atomic_ullong calls_left;
static atomic_int stopping;
static pthread_key_t exit_key;

struct exit_peek {
    convcache *h;
    uint32_t key;
};

/* Runs at thread exit, after the library's own destructor. */
static void peek_at_exit(void *p) {
    struct exit_peek *e = p;
    test_key k = key_of(e->key);
    unsigned char v[VAL_MAX];
    size_t n = 0;
    int rc = convcache_peek(e->h, &k, sizeof k, v, sizeof v, &n);
    if (rc == CONVCACHE_HIT) checked_value("peek at thread exit", e->key, v, n);
    else if (rc != 0) fail("peek at thread exit returned %d", rc);
    atomic_fetch_add(&destructor_peeks, 1);
    free(e);
}

static void *worker(void *arg) {
    uint32_t seed = (uint32_t)(uintptr_t)arg | 1;
    uint32_t budget = 20 + rnd(&seed) % 600;
    for (uint32_t i = 0; i < budget && !atomic_load(&stopping); i++) {
        if (atomic_fetch_sub(&calls_left, 1) <= 1) {
            atomic_store(&calls_left, 0);
            break;
        }
        one_call(&seed);
    }
    if (rnd(&seed) % 4 == 0) {
        struct exit_peek *e = malloc(sizeof *e);
        if (!e) fail("malloc");
        e->h = atomic_load(&slots[rnd(&seed) % SLOTS]);
        e->key = rnd(&seed) % KEYS;
        pthread_setspecific(exit_key, e);
    }
    atomic_fetch_add(&exits, 1);
    return NULL;
}

/* ---- peers: processes that write and compact ------------------------------ */

struct peer_report {
    uint64_t inserts, finds, saves;
};

/* fd 3: closed by the parent when it is time to stop; fd 4: the report. */
static int peer(uint32_t id, pid_t parent) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) return 1;
    uint32_t seed = mix(id, 77) | 1;
    struct peer_report rep = {0};
    struct pollfd stop = {.fd = 3, .events = POLLIN};
    while (poll(&stop, 1, 0) == 0) {
        convcache *h;
        CHECK_RC(convcache_open(cache_path, "lifecycle", &h), CONVCACHE_OK);
        for (int i = 0; i < 200; i++) {
            uint32_t key = rnd(&seed) % KEYS, ver = rnd(&seed) % VERSIONS;
            test_key k = key_of(key);
            unsigned char v[VAL_MAX];
            size_t n = make_value(key, ver, v);
            CHECK_RC(convcache_insert(h, &k, sizeof k, v, n), CONVCACHE_OK);
            rep.inserts++;
            key = rnd(&seed) % (KEYS + GHOSTS), k = key_of(key);
            int rc = convcache_find(h, &k, sizeof k, v, sizeof v, &n);
            if (rc == CONVCACHE_HIT && check_value(key, v, n)) {
                fprintf(stderr, "peer %u: key %u: %s\n", id, key, check_value(key, v, n));
                return 1;
            }
            CHECK(rc == CONVCACHE_HIT || rc == 0);
            rep.finds++;
            if (i % 50 == 49) {
                CHECK_RC(convcache_save(h), CONVCACHE_OK); /* compacts when the journal calls for it */
                rep.saves++;
            }
        }
        convcache_close(h);
    }
    CHECK(write(4, &rep, sizeof rep) == sizeof rep);
    return 0;
}

static pid_t spawn_peer(const char *self, int id, int stop, int report) {
    char ids[16], ppid[16];
    snprintf(ids, sizeof ids, "%d", id);
    snprintf(ppid, sizeof ppid, "%d", (int)getpid());
    char *args[] = {(char *)self, "peer", (char *)cache_path, ids, ppid, NULL};
    pid_t pid = fork();
    if (pid < 0) fail("fork: %s", strerror(errno));
    if (pid == 0) {
        int s = fcntl(stop, F_DUPFD, 10), r = fcntl(report, F_DUPFD, 10);
        if (s < 0 || r < 0 || dup2(s, 3) != 3 || dup2(r, 4) != 4) _exit(126);
        close_range(5, ~0U, 0);
        execv(self, args);
        _exit(127);
    }
    return pid;
}

/* ---- the run -------------------------------------------------------------- */

/* Descriptors of this process open on files in dir. */
static int open_in(const char *dir) {
    DIR *d = opendir("/proc/self/fd");
    if (!d) fail("opendir /proc/self/fd: %s", strerror(errno));
    int n = 0;
    size_t len = strlen(dir);
    for (struct dirent *e; (e = readdir(d));) {
        char link[300], target[600];
        snprintf(link, sizeof link, "/proc/self/fd/%s", e->d_name);
        ssize_t t = readlink(link, target, sizeof target - 1);
        if (t <= 0) continue;
        target[t] = 0;
        if (strncmp(target, dir, len) == 0 && target[len] == '/') {
            fprintf(stderr, "test_lifecycle: still open: fd %s -> %s\n", e->d_name, target);
            n++;
        }
    }
    closedir(d);
    return n;
}

int main(int argc, char **argv) {
    if (argc == 5 && strcmp(argv[1], "peer") == 0) {
        cache_path = argv[2];
        return peer((uint32_t)atoi(argv[3]), (pid_t)atoi(argv[4]));
    }
    unsigned long long budget = argc > 1 ? strtoull(argv[1], NULL, 10) : 40000;
    double seconds = argc > 2 ? atof(argv[2]) : 0;
    setenv("CONVCACHE_LOCK_TIMEOUT_MS", "600000", 1); /* every insert and save gets the lock */
    setenv("CONVCACHE_COMPACT_JOURNAL", "4K", 1);
    cache_path = test_path("lifecycle.ccdb");
    struct sigaction sa = {.sa_handler = on_alarm, .sa_flags = SA_ONSTACK};
    sigaction(SIGALRM, &sa, NULL);
    alarm(WATCHDOG_SEC);
    double t0 = now_sec();
    if (pthread_key_create(&exit_key, peek_at_exit) != 0) fail("pthread_key_create");
    for (int s = 0; s < SLOTS; s++) atomic_store(&slots[s], open_handle());

    int stop[2], report[2];
    if (pipe(stop) != 0 || pipe(report) != 0) fail("pipe: %s", strerror(errno));
    for (int p = 0; p < PEERS; p++) peers[p] = spawn_peer(argv[0], p, stop[0], report[1]);
    close(stop[0]);
    close(report[1]);

    /* Keep WORKERS threads alive until the calls are made (or the time is
     * up) and the file has been replaced often enough. */
    atomic_store(&calls_left, seconds > 0 ? ~0ull >> 1 : budget);
    pthread_t threads[WORKERS];
    uint32_t spawned = 0, replaced = 0;
    struct stat st0;
    ino_t ino = stat(cache_path, &st0) == 0 ? st0.st_ino : 0;
    for (int w = 0; w < WORKERS; w++)
        if (pthread_create(&threads[w], NULL, worker, (void *)(uintptr_t)mix(++spawned, 1)) != 0) fail("pthread_create");
    for (int w = 0;; w = (w + 1) % WORKERS) {
        pthread_join(threads[w], NULL);
        struct stat st;
        if (stat(cache_path, &st) == 0 && st.st_ino != ino) ino = st.st_ino, replaced++;
        int done = seconds > 0 ? now_sec() - t0 >= seconds : atomic_load(&calls_left) == 0;
        if (done && replaced >= MIN_REPLACED) {
            atomic_store(&stopping, 1);
            for (int o = 1; o < WORKERS; o++) pthread_join(threads[(w + o) % WORKERS], NULL);
            break;
        }
        if (done) atomic_store(&calls_left, 1000); /* more calls, until the file is replaced */
        if (pthread_create(&threads[w], NULL, worker, (void *)(uintptr_t)mix(++spawned, 1)) != 0) fail("pthread_create");
    }
    double t1 = now_sec();

    close(stop[1]);
    struct peer_report sum = {0}, rep;
    for (int p = 0; p < PEERS; p++) {
        int status;
        if (waitpid(peers[p], &status, 0) != peers[p]) fail("waitpid: %s", strerror(errno));
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) fail("peer %d failed (status %#x)", p, status);
        peers[p] = 0;
    }
    for (int p = 0; p < PEERS; p++) {
        if (read(report[0], &rep, sizeof rep) != sizeof rep) fail("peer %d sent no report", p);
        sum.inserts += rep.inserts, sum.finds += rep.finds, sum.saves += rep.saves;
    }
    close(report[0]);

    for (int s = 0; s < SLOTS; s++) convcache_close(atomic_load(&slots[s]));
    int fds = open_in(test_tmpdir());
    int64_t pinners = -1, indexes = -1, waiting = -1;
    convcache_test_live(&pinners, &indexes, &waiting);

    unsigned long long total = 0;
    printf("test_lifecycle: %.2fs, %u threads started (%llu exited, %llu peeked from a thread-exit destructor), "
           "%llu handles opened, file replaced %u+ times\n",
           t1 - t0, spawned, (unsigned long long)exits, (unsigned long long)destructor_peeks,
           (unsigned long long)opens, replaced);
    printf("test_lifecycle: calls:");
    for (int op = 0; op < OPS; op++) {
        printf(" %s %llu", op_names[op], (unsigned long long)calls[op]);
        total += calls[op];
    }
    printf("\ntest_lifecycle: %llu calls, %llu closes, %llu values checked, %llu refused with CONVCACHE_E_HANDLE; "
           "peers: %llu inserts, %llu finds, %llu saves\n",
           total, (unsigned long long)(calls[OP_CLOSE] + calls[OP_REPLACE] + SLOTS),
           (unsigned long long)hits, (unsigned long long)refused, (unsigned long long)sum.inserts,
           (unsigned long long)sum.finds, (unsigned long long)sum.saves);
    printf("test_lifecycle: left at the end: %d descriptors, %lld Pinners, %lld published indexes, %lld retirements\n",
           fds, (long long)pinners, (long long)indexes, (long long)waiting);
    if (fds != 0 || pinners != 0 || indexes != 0 || waiting != 0) fail("something leaked (above)");
    if (refused == 0 || hits == 0) fail("no call was refused, or none hit: the torture tested nothing");
    printf("test_lifecycle: ok (%.2fs)\n", now_sec() - t0);
    return 0;
}
