/* Kill -9 and damaged tails.
 *
 * A writer process acknowledges each insert that returned 0 on a pipe; the
 * parent SIGKILLs it at a random moment. Every acknowledged entry must then
 * be in the file with its exact value, and no key may hold a value that was
 * never inserted for it. Then garbage and a half-written record are appended
 * to the file: every good record must still load, and writers must carry on
 * past the damage. */
#include "check.h"

#include <signal.h>

#define ROUNDS 20
#define PER_ROUND 100000

static int writer(const char *path, uint32_t start) {
    convcache *c;
    CHECK_RC(convcache_open(path, "kill", &c), CONVCACHE_OK);
    for (uint32_t i = start; i < start + PER_ROUND; i++) {
        test_key k = make_key(i);
        test_val v = make_val(i, 0);
        CHECK_RC(convcache_insert(c, &k, sizeof k, &v, sizeof v), CONVCACHE_OK);
        if (write(3, &i, sizeof i) != sizeof i) return 1; /* acknowledge */
    }
    return 0;
}

static uint8_t acked[ROUNDS * PER_ROUND + 1000];

/* Checks the file in a fresh process: what was acknowledged is there, and
 * nothing else is wrong. */
static int verify(const char *path, const char *ackfile, uint32_t issued) {
    static uint8_t want[ROUNDS * PER_ROUND + 1000];
    CHECK(read_file(ackfile, want, sizeof want) == issued);
    convcache *c;
    CHECK_RC(convcache_open(path, "kill", &c), CONVCACHE_OK);
    uint32_t found = 0, need = 0;
    for (uint32_t i = 0; i < issued; i++) {
        test_key k = make_key(i);
        test_val v = make_val(i, 0), got;
        size_t n;
        int rc = convcache_find(c, &k, sizeof k, &got, sizeof got, &n);
        CHECK(rc == 0 || rc == CONVCACHE_HIT);
        if (rc == CONVCACHE_HIT) {
            CHECK(n == sizeof v && memcmp(&got, &v, sizeof v) == 0);
            found++;
        }
        if (want[i]) {
            need++;
            if (rc != CONVCACHE_HIT) fprintf(stderr, "acknowledged key %u is missing\n", i);
            CHECK(rc == CONVCACHE_HIT);
        }
    }
    convcache_close(c);
    printf("verify: %u acknowledged, %u present\n", need, found);
    return 0;
}

static void run_verify(const char *self, const char *path, const char *ackfile, uint32_t issued) {
    char n[16];
    snprintf(n, sizeof n, "%u", issued);
    pid_t pid = fork();
    if (pid == 0) {
        execl(self, self, "verify", path, ackfile, n, (char *)NULL);
        _exit(127);
    }
    int st;
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void append(const char *path, const void *data, size_t n) {
    int fd = open(path, O_WRONLY | O_APPEND);
    CHECK(fd >= 0 && write(fd, data, n) == (ssize_t)n);
    close(fd);
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "writer") == 0) return writer(argv[2], (uint32_t)atoi(argv[3]));
    if (argc == 5 && strcmp(argv[1], "verify") == 0)
        return verify(argv[2], argv[3], (uint32_t)atoi(argv[4]));

    char *path = test_path("kill.ccdb"), *ackfile = test_path("acks.bin");
    srand((unsigned)getpid());
    uint32_t issued = 0;
    int kills = 0;
    for (int r = 0; r < ROUNDS; r++) {
        int p[2];
        CHECK(pipe(p) == 0);
        char start[16];
        snprintf(start, sizeof start, "%u", issued);
        pid_t pid = fork();
        if (pid == 0) {
            dup2(p[1], 3);
            close_range(4, ~0U, 0);
            execl(argv[0], argv[0], "writer", path, start, (char *)NULL);
            _exit(127);
        }
        close(p[1]);
        int target = 1 + rand() % 2000, got = 0;
        uint32_t i;
        while (got < target && read(p[0], &i, sizeof i) == sizeof i) {
            acked[i] = 1;
            got++;
        }
        kill(pid, SIGKILL); /* mid-insert, most likely */
        while (read(p[0], &i, sizeof i) == sizeof i) acked[i] = 1;
        close(p[0]);
        int st;
        CHECK(waitpid(pid, &st, 0) == pid);
        if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) kills++;
        issued += PER_ROUND;
    }
    printf("%d writers killed\n", kills);
    CHECK(kills == ROUNDS);
    write_file(ackfile, acked, issued);
    run_verify(argv[0], path, ackfile, issued);

    /* Garbage at the end of the file. */
    unsigned char junk[1000];
    for (size_t j = 0; j < sizeof junk; j++) junk[j] = (unsigned char)rand();
    append(path, junk, sizeof junk);
    run_verify(argv[0], path, ackfile, issued);

    /* Half of a real record at the end: a write torn by a crash. */
    char *one = test_path("one.ccdb");
    convcache *c;
    CHECK_RC(convcache_open(one, "kill", &c), CONVCACHE_OK);
    test_key k = make_key(issued);
    test_val v = make_val(issued, 0);
    CHECK_RC(convcache_insert(c, &k, sizeof k, &v, sizeof v), CONVCACHE_OK);
    convcache_close(c);
    unsigned char rec[1024];
    size_t n = read_file(one, rec, sizeof rec);
    CHECK(n > 64);
    append(path, rec + 32, (n - 32) / 2);
    run_verify(argv[0], path, ackfile, issued);

    /* Writers carry on after the damage, and readers find what they add. */
    CHECK_RC(convcache_open(path, "kill", &c), CONVCACHE_OK);
    for (uint32_t j = issued; j < issued + 100; j++) {
        test_key kk = make_key(j);
        test_val vv = make_val(j, 0);
        CHECK_RC(convcache_insert(c, &kk, sizeof kk, &vv, sizeof vv), CONVCACHE_OK);
        acked[j] = 1;
    }
    CHECK_RC(convcache_save(c), CONVCACHE_OK);
    convcache_close(c);
    write_file(ackfile, acked, issued + 100);
    run_verify(argv[0], path, ackfile, issued + 100);
    printf("test_kill: ok\n");
    return 0;
}
