/* Single-flight builds (convcache_get_or_create).
 *   - 16 threads asking at once for one missing key run the builder once.
 *   - 8 processes asking at once run it once in total, and report how long
 *     until all had the value.
 *   - A builder whose process dies releases its waiters at once.
 *   - A waiter gives up after the build timeout and builds itself.
 *   - A failing builder stores nothing and its error reaches the caller.
 *   - A too-small buffer reports the size needed. */
#include "check.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>

static int builds;
static int build_ms = 100;
static const char *counter_file;

/* The "benchmark": slow, counts itself (in memory and, across processes, by
 * appending a byte to a file). The value is a function of the key. */
static int builder(void *user, const void *key, size_t key_len, void *value, size_t cap, size_t *len) {
    (void)user;
    __atomic_fetch_add(&builds, 1, __ATOMIC_SEQ_CST);
    if (counter_file) {
        int fd = open(counter_file, O_WRONLY | O_APPEND | O_CREAT, 0600);
        if (write(fd, "b", 1) != 1) return -1001;
        close(fd);
    }
    usleep(build_ms * 1000);
    if (cap < sizeof(test_val)) {
        *len = sizeof(test_val);
        return CONVCACHE_E_RANGE;
    }
    uint32_t id;
    memcpy(&id, (const char *)key + 88, 4);
    (void)key_len;
    test_val v = make_val(id, 7);
    memcpy(value, &v, sizeof v);
    *len = sizeof v;
    return 0;
}

static int failing(void *user, const void *key, size_t key_len, void *value, size_t cap, size_t *len) {
    (void)key, (void)key_len, (void)value, (void)cap, (void)len;
    __atomic_fetch_add(&builds, 1, __ATOMIC_SEQ_CST);
    return *(int *)user;
}

static int hang(void *user, const void *key, size_t key_len, void *value, size_t cap, size_t *len) {
    (void)key, (void)key_len, (void)value, (void)cap, (void)len;
    if (write(*(int *)user, "B", 1) != 1) return -1;
    for (;;) pause(); /* until killed */
}

typedef struct {
    convcache *c;
    int rc;
} job;

static void *ask(void *arg) {
    job *j = arg;
    test_key k = make_key(500);
    test_val got;
    size_t n = 0;
    j->rc = convcache_get_or_create(j->c, &k, sizeof k, builder, NULL, &got, sizeof got, &n);
    test_val want = make_val(500, 7);
    CHECK(n == sizeof got && memcmp(&got, &want, sizeof got) == 0);
    return NULL;
}

static void threads(const char *path) {
    convcache *c;
    CHECK_RC(convcache_open(path, "flight", &c), CONVCACHE_OK);
    pthread_t t[16];
    job j[16];
    builds = 0;
    for (int i = 0; i < 16; i++) {
        j[i] = (job){c, -99};
        CHECK(pthread_create(&t[i], NULL, ask, &j[i]) == 0);
    }
    int built = 0, hit = 0;
    for (int i = 0; i < 16; i++) {
        pthread_join(t[i], NULL);
        built += j[i].rc == CONVCACHE_OK;
        hit += j[i].rc == CONVCACHE_HIT;
    }
    CHECK(builds == 1 && built == 1 && hit == 15);
    struct convcache_stats st = {.struct_size = sizeof st};
    CHECK_RC(convcache_stats(c, &st), CONVCACHE_OK);
    CHECK(st.builds == 1);
    printf("16 threads, one missing key: %d build\n", builds);
    convcache_close(c);
}

static void errors_and_sizes(const char *path) {
    convcache *c;
    CHECK_RC(convcache_open(path, "flight", &c), CONVCACHE_OK);
    test_key k = make_key(600);
    test_val got;
    size_t n;
    int code = CONVCACHE_E_USER - 7;
    CHECK_RC(convcache_get_or_create(c, &k, sizeof k, failing, &code, &got, sizeof got, &n), CONVCACHE_E_USER - 7);
    code = 5;
    CHECK_RC(convcache_get_or_create(c, &k, sizeof k, failing, &code, &got, sizeof got, &n), CONVCACHE_E_BUILDER);
    CHECK_RC(convcache_find(c, &k, sizeof k, &got, sizeof got, &n), 0); /* nothing stored */
    unsigned char small[8];
    n = 0;
    CHECK_RC(convcache_get_or_create(c, &k, sizeof k, builder, NULL, small, sizeof small, &n), CONVCACHE_E_RANGE);
    CHECK(n == sizeof(test_val));
    CHECK_RC(convcache_get_or_create(c, &k, sizeof k, builder, NULL, &got, sizeof got, &n), CONVCACHE_OK);
    CHECK_RC(convcache_get_or_create(c, &k, sizeof k, builder, NULL, &got, sizeof got, &n), CONVCACHE_HIT);
    convcache_close(c);
}

/* A child: say it is ready (fd 4), wait at the gate (fd 3), ask for the
 * key, check the value. */
static int child_ask(const char *path, int gate, int ready) {
    char go;
    CHECK(write(ready, "r", 1) == 1);
    close(ready);
    CHECK(read(gate, &go, 1) == 0);
    convcache *c;
    CHECK_RC(convcache_open(path, "flight", &c), CONVCACHE_OK);
    test_key k = make_key(700);
    test_val got, want = make_val(700, 7);
    size_t n;
    int rc = convcache_get_or_create(c, &k, sizeof k, builder, NULL, &got, sizeof got, &n);
    CHECK(rc == CONVCACHE_OK || rc == CONVCACHE_HIT);
    CHECK(n == sizeof got && memcmp(&got, &want, sizeof got) == 0);
    convcache_close(c);
    return 0;
}

/* Runs argv with fd3 and fd4 (when >= 0) as its fds 3 and 4. */
static pid_t spawn(char *const argv[], int fd3, int fd4) {
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        /* Out of the way first, so that neither dup2 clobbers the other. */
        int a = fd3 >= 0 ? fcntl(fd3, F_DUPFD, 100) : -1, b = fd4 >= 0 ? fcntl(fd4, F_DUPFD, 100) : -1;
        if (a >= 0) dup2(a, 3);
        if (b >= 0) dup2(b, 4);
        close_range(b >= 0 ? 5 : a >= 0 ? 4 : 3, ~0U, 0);
        execv(argv[0], argv);
        _exit(127);
    }
    return pid;
}

static int wait_status(pid_t pid) {
    int st;
    CHECK(waitpid(pid, &st, 0) == pid);
    return st;
}

static void processes(const char *self, const char *path) {
    char *counter = test_path("builds.txt");
    setenv("FLIGHT_COUNTER", counter, 1);
    int gate[2], ready[2];
    CHECK(pipe(gate) == 0 && pipe(ready) == 0);
    pid_t kids[8];
    for (int i = 0; i < 8; i++) {
        char *args[] = {(char *)self, "ask", (char *)path, NULL};
        kids[i] = spawn(args, gate[0], ready[1]);
    }
    close(gate[0]);
    close(ready[1]);
    char r[8];
    for (size_t got = 0; got < sizeof r;) { /* all 8 are at the gate */
        ssize_t n = read(ready[0], r, sizeof r - got);
        CHECK(n > 0);
        got += (size_t)n;
    }
    close(ready[0]);
    double t0 = now_sec();
    close(gate[1]);
    for (int i = 0; i < 8; i++) {
        int st = wait_status(kids[i]);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    double took = now_sec() - t0;
    char buf[64];
    size_t nb = read_file(counter, buf, sizeof buf);
    printf("8 processes, one cold key: %zu build(s), all 8 had the value after %.0f ms (one build takes %d ms)\n",
           nb, took * 1000, build_ms);
    CHECK(nb == 1);
    unsetenv("FLIGHT_COUNTER");
}

/* A child that starts building key `id` and never finishes (until killed),
 * holding the key's lock; it reports on fd 3 once it is building. */
static int child_hang(const char *path, uint32_t id, int report) {
    convcache *c;
    CHECK_RC(convcache_open(path, "flight", &c), CONVCACHE_OK);
    test_key k = make_key(id);
    test_val got;
    size_t n;
    convcache_get_or_create(c, &k, sizeof k, hang, &report, &got, sizeof got, &n);
    return 1; /* never reached */
}

static pid_t spawn_hang(const char *self, const char *path, const char *id) {
    int p[2];
    CHECK(pipe(p) == 0);
    char *args[] = {(char *)self, "hang", (char *)path, (char *)id, NULL};
    pid_t pid = spawn(args, p[1], -1);
    close(p[1]);
    char b;
    CHECK(read(p[0], &b, 1) == 1); /* it is building, holding the key lock */
    close(p[0]);
    return pid;
}

typedef struct {
    convcache *c;
    uint32_t id;
    int rc;
    double done;  /* read after the join */
    int finished; /* atomic: set when the call returned */
} waiter;

static void *wait_for_key(void *arg) {
    waiter *w = arg;
    test_key k = make_key(w->id);
    test_val got;
    size_t n;
    w->rc = convcache_get_or_create(w->c, &k, sizeof k, builder, NULL, &got, sizeof got, &n);
    w->done = now_sec();
    __atomic_store_n(&w->finished, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

/* The builder's process dies while another process waits for it: the
 * waiter goes on at once, not after its build timeout. The timeout is an
 * hour and an alarm ends the test long before: returning at all shows that
 * the death released the waiter. */
static void dead_builder(const char *self, const char *path) {
    pid_t holder = spawn_hang(self, path, "800");
    setenv("CONVCACHE_BUILD_TIMEOUT_MS", "3600000", 1);
    convcache *c;
    CHECK_RC(convcache_open(path, "flight", &c), CONVCACHE_OK);
    unsetenv("CONVCACHE_BUILD_TIMEOUT_MS");
    builds = 0;
    waiter w = {c, 800, -99, 0, 0};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, wait_for_key, &w) == 0);
    /* The waiter's miss is counted just before it starts waiting for the
     * holder's key lock, which it cannot get while the holder lives. */
    struct convcache_stats st = {.struct_size = sizeof st};
    do {
        sched_yield();
        CHECK_RC(convcache_stats(c, &st), CONVCACHE_OK);
    } while (st.misses == 0);
    CHECK(__atomic_load_n(&w.finished, __ATOMIC_SEQ_CST) == 0 &&
          __atomic_load_n(&builds, __ATOMIC_SEQ_CST) == 0); /* still waiting for the holder */
    alarm(300); /* far below the hour: only the holder's death can release the waiter in time */
    double killed = now_sec();
    kill(holder, SIGKILL);
    pthread_join(t, NULL);
    alarm(0);
    double took = w.done - killed;
    CHECK(w.rc == CONVCACHE_OK && builds == 1);
    printf("builder killed while another process waited: the waiter built it itself %.0f ms later "
           "(build timeout 1 h)\n", took * 1000);
    int hs = wait_status(holder);
    CHECK(WIFSIGNALED(hs));
    convcache_close(c);
}

/* A slow builder in another process: a waiter builds the value itself once
 * the build timeout has passed. */
static void wait_timeout(const char *self, const char *path) {
    pid_t holder = spawn_hang(self, path, "801"); /* holds key 801's lock, never finishes */
    setenv("CONVCACHE_BUILD_TIMEOUT_MS", "300", 1);
    convcache *c;
    CHECK_RC(convcache_open(path, "flight", &c), CONVCACHE_OK);
    unsetenv("CONVCACHE_BUILD_TIMEOUT_MS");
    test_key k = make_key(801);
    test_val got;
    size_t n;
    builds = 0;
    double t0 = now_sec();
    int rc = convcache_get_or_create(c, &k, sizeof k, builder, NULL, &got, sizeof got, &n);
    double took = now_sec() - t0;
    CHECK(rc == CONVCACHE_OK && builds == 1);
    CHECK(took >= 0.3);
    printf("slow builder elsewhere: built after %.0f ms (build timeout 300 ms)\n", took * 1000);
    kill(holder, SIGKILL);
    wait_status(holder);
    convcache_close(c);
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "ask") == 0) {
        counter_file = getenv("FLIGHT_COUNTER");
        build_ms = 200;
        return child_ask(argv[2], 3, 4);
    }
    if (argc == 4 && strcmp(argv[1], "hang") == 0) return child_hang(argv[2], (uint32_t)atoi(argv[3]), 3);
    char *path = test_path("flight.ccdb");
    threads(path);
    errors_and_sizes(path);
    build_ms = 200;
    processes(argv[0], path);
    build_ms = 10;
    dead_builder(argv[0], path);
    wait_timeout(argv[0], path);
    printf("test_flight: ok\n");
    return 0;
}
