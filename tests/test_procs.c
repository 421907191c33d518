/* 4 processes each insert 5,000 distinct entries into one file at the same
 * time; afterwards a fresh process finds all 20,000 with the right values.
 * Children are started with fork+exec of this program, so each has its own
 * library instance, as separate programs would. */
#include "check.h"

#define PROCS 4
#define PER 5000

static int child_insert(const char *path, int id, int gate) {
    char go;
    CHECK(read(gate, &go, 1) == 0); /* wait until the parent opens the gate */
    convcache *c;
    CHECK_RC(convcache_open(path, "procs", &c), CONVCACHE_OK);
    for (uint32_t j = 0; j < PER; j++) {
        uint32_t i = (uint32_t)id * PER + j;
        test_key k = make_key(i);
        test_val v = make_val(i, 0);
        CHECK_RC(convcache_insert(c, &k, sizeof k, &v, sizeof v), CONVCACHE_OK);
    }
    CHECK_RC(convcache_save(c), CONVCACHE_OK);
    convcache_close(c);
    return 0;
}

static int child_verify(const char *path) {
    convcache *c;
    CHECK_RC(convcache_open(path, "procs", &c), CONVCACHE_OK);
    for (uint32_t i = 0; i < PROCS * PER; i++) {
        test_key k = make_key(i);
        test_val want = make_val(i, 0), got;
        size_t n;
        CHECK_RC(convcache_find(c, &k, sizeof k, &got, sizeof got, &n), CONVCACHE_HIT);
        CHECK(n == sizeof got && memcmp(&got, &want, sizeof got) == 0);
    }
    struct convcache_stats st = {.struct_size = sizeof st};
    CHECK_RC(convcache_stats(c, &st), CONVCACHE_OK);
    CHECK(st.entries == PROCS * PER && st.misses == 0);
    convcache_close(c);
    printf("verify: %d entries found, file %llu bytes\n", PROCS * PER,
           (unsigned long long)st.file_bytes);
    return 0;
}

static pid_t spawn(const char *self, char *const args[], int keep_fd) {
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        if (keep_fd >= 0) dup2(keep_fd, 3);
        close_range(keep_fd >= 0 ? 4 : 3, ~0U, 0); /* the gate's write end above all */
        execv(self, args);
        _exit(127);
    }
    return pid;
}

static void wait_ok(pid_t pid) {
    int status;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "insert") == 0) return child_insert(argv[2], atoi(argv[3]), 3);
    if (argc == 3 && strcmp(argv[1], "verify") == 0) return child_verify(argv[2]);
    /* Inserts must succeed here (CONVCACHE_OK, not PENDING): a loaded
     * machine must not turn lock contention into a lock timeout. */
    setenv("CONVCACHE_LOCK_TIMEOUT_MS", "600000", 1);
    char *path = test_path("procs.ccdb");
    int gate[2];
    CHECK(pipe(gate) == 0);
    pid_t kids[PROCS];
    double t0 = now_sec();
    for (int i = 0; i < PROCS; i++) {
        char id[16];
        snprintf(id, sizeof id, "%d", i);
        char *args[] = {argv[0], "insert", path, id, NULL};
        kids[i] = spawn(argv[0], args, gate[0]);
    }
    close(gate[0]);
    close(gate[1]); /* all children start inserting now */
    for (int i = 0; i < PROCS; i++) wait_ok(kids[i]);
    double t1 = now_sec();
    printf("%d processes x %d inserts: %.2fs (%.0f inserts/s overall)\n", PROCS, PER, t1 - t0,
           PROCS * PER / (t1 - t0));
    char *vargs[] = {argv[0], "verify", path, NULL};
    wait_ok(spawn(argv[0], vargs, -1));
    printf("test_procs: ok\n");
    return 0;
}
