/* A process stopped (SIGSTOP) while it holds the file lock.
 *   - Other processes' finds keep answering without blocking.
 *   - insert waits at most CONVCACHE_LOCK_TIMEOUT_MS, then keeps the entry in
 *     memory and returns CONVCACHE_PENDING; later inserts do not wait the
 *     whole timeout again.
 *   - save reports CONVCACHE_E_LOCK while the holder is stopped, and persists
 *     the pending entries once it is gone.
 * The holder takes the lock exactly as the library does: an OFD write lock
 * on byte 0 of the sidecar file "<cache>.lock" (see lock/doc.go).
 *
 * Times are checked only where the outcome is certain: a wait of the whole
 * lock timeout takes at least that long; a call that must not wait is given
 * a full second of slack against one that would; a hang is caught by an
 * alarm() far beyond any normal duration. */
#include "check.h"

#include <signal.h>

static int holder(const char *path, int report) {
    char lockpath[600];
    snprintf(lockpath, sizeof lockpath, "%s.lock", path);
    int fd = open(lockpath, O_RDWR | O_CREAT, 0600);
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
    CHECK(fd >= 0 && fcntl(fd, F_OFD_SETLK, &fl) == 0);
    CHECK(write(report, "L", 1) == 1);
    raise(SIGSTOP);
    pause();
    return 0;
}

/* Another process: open and find under an alarm. Its lock timeout is an
 * hour, so a find that waited for the lock would hang until the alarm. */
static int reader(const char *path) {
    alarm(120);
    convcache *c;
    CHECK_RC(convcache_open(path, NULL, &c), CONVCACHE_OK);
    for (uint32_t i = 0; i < 100; i++) {
        test_key k = make_key(i);
        test_val v = make_val(i, 0), got;
        size_t n;
        CHECK_RC(convcache_find(c, &k, sizeof k, &got, sizeof got, &n), CONVCACHE_HIT);
        CHECK(memcmp(&got, &v, sizeof v) == 0);
    }
    test_key k = make_key(12345);
    test_val got;
    size_t n;
    CHECK_RC(convcache_find(c, &k, sizeof k, &got, sizeof got, &n), 0);
    convcache_close(c);
    return 0;
}

static int run(const char *self, const char *mode, const char *path) {
    pid_t pid = fork();
    if (pid == 0) {
        execl(self, self, mode, path, (char *)NULL);
        _exit(127);
    }
    int st;
    CHECK(waitpid(pid, &st, 0) == pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "reader") == 0) return reader(argv[2]);
    if (argc == 3 && strcmp(argv[1], "verify") == 0) {
        convcache *c;
        CHECK_RC(convcache_open(argv[2], NULL, &c), CONVCACHE_OK);
        for (uint32_t i = 0; i < 103; i++) {
            test_key k = make_key(i);
            test_val v = make_val(i, 0), got;
            size_t n;
            CHECK_RC(convcache_find(c, &k, sizeof k, &got, sizeof got, &n), CONVCACHE_HIT);
            CHECK(memcmp(&got, &v, sizeof v) == 0);
        }
        convcache_close(c);
        return 0;
    }
    char *path = test_path("stall.ccdb");
    convcache *c;
    CHECK_RC(convcache_open(path, NULL, &c), CONVCACHE_OK);
    for (uint32_t i = 0; i < 100; i++) {
        test_key k = make_key(i);
        test_val v = make_val(i, 0);
        CHECK_RC(convcache_insert(c, &k, sizeof k, &v, sizeof v), CONVCACHE_OK);
    }
    convcache_close(c);

    int p[2];
    CHECK(pipe(p) == 0);
    pid_t h = fork();
    if (h == 0) {
        close(p[0]);
        _exit(holder(path, p[1]));
    }
    close(p[1]);
    char b;
    CHECK(read(p[0], &b, 1) == 1);
    int st;
    CHECK(waitpid(h, &st, WUNTRACED) == h && WIFSTOPPED(st)); /* stopped, holding the lock */

    setenv("CONVCACHE_LOCK_TIMEOUT_MS", "3600000", 1);
    CHECK(run(argv[0], "reader", path) == 0); /* finds in another process: no blocking */

    setenv("CONVCACHE_LOCK_TIMEOUT_MS", "1000", 1);
    CHECK_RC(convcache_open(path, NULL, &c), CONVCACHE_OK);
    unsetenv("CONVCACHE_LOCK_TIMEOUT_MS");
    test_key k = make_key(100);
    test_val v = make_val(100, 0), got;
    size_t n;
    double t0 = now_sec();
    CHECK_RC(convcache_insert(c, &k, sizeof k, &v, sizeof v), CONVCACHE_PENDING);
    double waited = now_sec() - t0;
    CHECK(waited >= 1.0); /* the whole timeout */
    CHECK_RC(convcache_find(c, &k, sizeof k, &got, sizeof got, &n), CONVCACHE_HIT);
    t0 = now_sec();
    for (uint32_t i = 101; i < 103; i++) {
        test_key kk = make_key(i);
        test_val vv = make_val(i, 0);
        CHECK_RC(convcache_insert(c, &kk, sizeof kk, &vv, sizeof vv), CONVCACHE_PENDING);
    }
    double again = now_sec() - t0;
    CHECK(again < 1.0); /* no second full wait (1 s) per insert: each tries the lock once */
    CHECK_RC(convcache_save(c), CONVCACHE_E_LOCK);
    CHECK(strstr(convcache_last_error(), "CONVCACHE_LOCK_TIMEOUT_MS") != NULL);
    struct convcache_stats s = {.struct_size = sizeof s};
    CHECK_RC(convcache_stats(c, &s), CONVCACHE_OK);
    CHECK(s.pending == 3 && s.lock_waits >= 1 && s.lock_wait_ns >= 1000000000ull);
    printf("stalled holder: insert returned PENDING after %.0f ms (timeout 1000 ms), "
           "next inserts %.1f ms, save E_LOCK\n", waited * 1000, again * 1000);

    kill(h, SIGKILL); /* the holder goes away; its lock with it */
    waitpid(h, &st, 0);
    CHECK_RC(convcache_save(c), CONVCACHE_OK);
    CHECK_RC(convcache_stats(c, &s), CONVCACHE_OK);
    CHECK(s.pending == 0);
    convcache_close(c);
    CHECK(run(argv[0], "verify", path) == 0);
    printf("test_stall: ok\n");
    return 0;
}
