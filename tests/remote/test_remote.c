/* The Redis cluster tier through the real C library: this program starts a
 * redis-server on a free loopback port in a temporary directory, runs
 * "nodes" (this program again, fork+exec, each with its own cache file and
 * its own library instance) against it with CONVCACHE_REMOTE set, and
 * stops the server at the end. It is skipped (exit 0, with a message) only
 * if redis-server is not installed.
 *
 *   two nodes        node B's first lookups are remote hits for node A's
 *                    inserts, then local hits from its own file
 *   single flight    4 nodes ask for one cold key; the builder runs once
 *   server down      a dead URL: every call works locally within the deadline
 *   server killed    mid-run; calls stay bounded; writes resume on restart
 *   options          convcache_options.remote overrides the environment,
 *                    "" disables the tier, a bad URL warns once and the
 *                    cache stays local; mode ro writes nothing remotely
 *   record MAC       the nodes above share a key (CONVCACHE_REMOTE_KEY_FILE),
 *                    so remote hits go to their files; without the key a
 *                    remote hit stays in the process's memory; a node with
 *                    the key rejects records written without it; a key file
 *                    others can read is refused: a warning, the local cache
 *   hostile server   replies announcing a 1 TiB string or a 2^31-element
 *                    array fail the call (a miss, an error counted) before
 *                    any allocation; the host process lives on
 */
#include "check.h" /* first: it defines _GNU_SOURCE */

#include <arpa/inet.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>

#define SCOPE "remote-test"
#define NODES 4

/* ---- A tiny Redis client: enough for PING and DBSIZE ------------------- */

static int resp_connect(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval tv = {.tv_sec = 30}; /* a bound for a hang, not a deadline */
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Sends an inline command and returns the first line of the reply in buf
 * (for example "+PONG" or ":12"), or NULL. */
static char *resp_cmd(int port, const char *cmd, char *buf, size_t cap) {
    int fd = resp_connect(port);
    if (fd < 0) return NULL;
    char line[256];
    int n = snprintf(line, sizeof line, "%s\r\n", cmd);
    char *ret = NULL;
    if (write(fd, line, (size_t)n) == n) {
        ssize_t got = read(fd, buf, cap - 1);
        if (got > 0) {
            buf[got] = 0;
            buf[strcspn(buf, "\r\n")] = 0;
            ret = buf;
        }
    }
    close(fd);
    return ret;
}

static long dbsize(int port) {
    char buf[128];
    CHECK(resp_cmd(port, "DBSIZE", buf, sizeof buf) && buf[0] == ':');
    return atol(buf + 1);
}

/* ---- redis-server ------------------------------------------------------- */

static const char *redis_bin(void) {
    static const char *paths[] = {"/usr/bin/redis-server", "/usr/local/bin/redis-server",
                                  "/usr/sbin/redis-server", NULL};
    for (int i = 0; paths[i]; i++)
        if (access(paths[i], X_OK) == 0) return paths[i];
    return NULL;
}

static int free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    CHECK(bind(fd, (struct sockaddr *)&a, sizeof a) == 0);
    CHECK(getsockname(fd, (struct sockaddr *)&a, &len) == 0);
    close(fd);
    return ntohs(a.sin_port);
}

static pid_t redis_pid, hostile_pid;
static int redis_port;

/* Starts redis-server on redis_port (a free one if 0). Returns 0 once it
 * answers PING, -1 if it exited (the port was taken). It has a minute to
 * start, which only a broken server needs. */
static int redis_launch(void) {
    char port[16], log[600];
    snprintf(port, sizeof port, "%d", redis_port);
    snprintf(log, sizeof log, "%s/redis-%d.log", test_tmpdir(), redis_port);
    char *args[] = {(char *)redis_bin(), "--port", port, "--bind", "127.0.0.1",
                    "--dir", (char *)test_tmpdir(), "--save", "", "--appendonly", "no",
                    "--logfile", log, NULL};
    pid_t parent = getpid();
    redis_pid = fork();
    CHECK(redis_pid >= 0);
    if (redis_pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* it dies with this test, however the test ends */
        if (getppid() != parent) _exit(1);
        execv(args[0], args);
        _exit(127);
    }
    for (int i = 0; i < 6000; i++) {
        char buf[64];
        if (resp_cmd(redis_port, "PING", buf, sizeof buf) && strcmp(buf, "+PONG") == 0) return 0;
        if (waitpid(redis_pid, NULL, WNOHANG) == redis_pid) return -1;
        usleep(10000);
    }
    fprintf(stderr, "redis-server did not answer on port %d\n", redis_port);
    exit(1);
}

static void redis_start(void) {
    for (int try = 0; try < 5; try++) {
        redis_port = free_port();
        if (redis_launch() == 0) return;
    }
    fprintf(stderr, "redis-server would not start\n");
    exit(1);
}

static void redis_stop(void) {
    if (redis_pid > 0) {
        kill(redis_pid, SIGKILL);
        waitpid(redis_pid, NULL, 0);
        redis_pid = 0;
    }
}

static void redis_restart(void) {
    for (int try = 0; try < 50; try++) {
        if (redis_launch() == 0) return;
        usleep(100000);
    }
    fprintf(stderr, "redis-server would not restart on port %d\n", redis_port);
    exit(1);
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

/* At the parent's exit, failed or not: stop the server, then remove the
 * temporary directory (the nodes are other programs, exec'd). */
static void at_exit_stop(void) {
    redis_stop();
    if (hostile_pid > 0) {
        kill(hostile_pid, SIGKILL);
        waitpid(hostile_pid, NULL, 0);
    }
    nftw(test_tmpdir(), remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- Nodes ---------------------------------------------------------------- */

static convcache *open_node(const char *path, const char *remote, int set_remote, int timeout_ms) {
    convcache_options o;
    convcache_options_init(&o);
    o.path = path;
    o.scope = SCOPE;
    if (set_remote) o.remote = remote; /* else NULL: $CONVCACHE_REMOTE */
    o.remote_timeout_ms = timeout_ms;
    convcache *c;
    CHECK_RC(convcache_open_ex(&o, &c), CONVCACHE_OK);
    return c;
}

static struct convcache_stats stats(convcache *c) {
    struct convcache_stats st = {.struct_size = sizeof st};
    CHECK_RC(convcache_stats(c, &st), CONVCACHE_OK);
    return st;
}

/* The remote deadline of nodes whose test is not about it: a loaded machine
 * must not make a healthy server look down (the tier would fail open). */
#define RELAXED_MS 30000

static int node_insert(const char *path, int n) {
    convcache *c = open_node(path, NULL, 0, RELAXED_MS);
    for (int i = 0; i < n; i++) {
        test_key k = make_key((uint32_t)i);
        test_val v = make_val((uint32_t)i, 1);
        CHECK_RC(convcache_insert(c, &k, sizeof k, &v, sizeof v), CONVCACHE_OK);
    }
    CHECK_RC(convcache_save(c), CONVCACHE_OK);
    struct convcache_stats st = stats(c);
    CHECK(st.remote_writes == (uint64_t)n && st.remote_errors == 0 && st.remote_dropped == 0);
    convcache_close(c);
    return 0;
}

/* Finds keys 0..n-1; want_remote is how many must come from the remote
 * tier. remote: NULL = the environment, else convcache_options.remote. */
static int node_find(const char *path, int n, int want_remote, const char *remote) {
    convcache *c = open_node(path, remote, remote != NULL, RELAXED_MS);
    for (int i = 0; i < n; i++) {
        test_key k = make_key((uint32_t)i);
        test_val want = make_val((uint32_t)i, 1), got;
        size_t len;
        CHECK_RC(convcache_find(c, &k, sizeof k, &got, sizeof got, &len), CONVCACHE_HIT);
        CHECK(len == sizeof got && memcmp(&got, &want, sizeof got) == 0);
    }
    struct convcache_stats st = stats(c);
    if (st.remote_hits != (uint64_t)want_remote || st.misses != 0) {
        fprintf(stderr, "find: remote_hits %llu misses %llu, want %d and 0\n",
                (unsigned long long)st.remote_hits, (unsigned long long)st.misses, want_remote);
        exit(1);
    }
    convcache_close(c);
    return 0;
}

struct build_ctx {
    const char *count_path;
};

static int slow_builder(void *user, const void *key, size_t key_len, void *value, size_t cap,
                        size_t *len) {
    (void)key, (void)key_len;
    struct build_ctx *b = user;
    int fd = open(b->count_path, O_WRONLY | O_APPEND | O_CREAT, 0600);
    CHECK(fd >= 0);
    CHECK(write(fd, "x\n", 2) == 2);
    close(fd);
    usleep(300000); /* the benchmark */
    int n = snprintf(value, cap, "built by %d", (int)getpid());
    *len = (size_t)n + 1;
    return 0;
}

static int node_race(const char *path, const char *count_path, int gate, int ready) {
    convcache *c = open_node(path, NULL, 0, RELAXED_MS);
    char go;
    CHECK(write(ready, "r", 1) == 1);
    close(ready);
    CHECK(read(gate, &go, 1) == 0); /* all nodes start together */
    test_key k = make_key(777777);
    char value[64];
    size_t len;
    struct build_ctx b = {count_path};
    int rc = convcache_get_or_create(c, &k, sizeof k, slow_builder, &b, value, sizeof value, &len);
    CHECK(rc == CONVCACHE_OK || rc == CONVCACHE_HIT);
    printf("%s\n", value);
    convcache_close(c);
    return 0;
}

/* Bad settings: a warning each, once, and a working local cache. */
static int node_badurl(const char *path) {
    for (int round = 0; round < 3; round++) {
        convcache *a = open_node(path, "http://not-redis:80", 1, 0); /* bad option */
        convcache *b = open_node(path, NULL, 0, 70000);              /* bad $CONVCACHE_REMOTE, timeout */
        test_key k = make_key(5);
        test_val v = make_val(5, 0), got;
        size_t len;
        CHECK_RC(convcache_insert(a, &k, sizeof k, &v, sizeof v), CONVCACHE_OK);
        CHECK_RC(convcache_find(b, &k, sizeof k, &got, sizeof got, &len), CONVCACHE_HIT);
        CHECK(stats(a).remote_errors == 0 && stats(b).remote_hits == 0);
        convcache_close(a);
        convcache_close(b);
    }
    return 0;
}

/* Finds keys 0..n-1 with every remote record rejected: misses. */
static int node_find_rejected(const char *path, int n) {
    convcache *c = open_node(path, NULL, 0, 2000);
    for (int i = 0; i < n; i++) {
        test_key k = make_key((uint32_t)i);
        test_val got;
        size_t len;
        CHECK_RC(convcache_find(c, &k, sizeof k, &got, sizeof got, &len), 0);
    }
    struct convcache_stats st = stats(c);
    if (st.remote_rejected != (uint64_t)n || st.remote_hits != 0) {
        fprintf(stderr, "find-rejected: remote_rejected %llu hits %llu, want %d and 0\n",
                (unsigned long long)st.remote_rejected, (unsigned long long)st.remote_hits, n);
        exit(1);
    }
    convcache_close(c);
    return 0;
}

/* An unusable key file: no remote tier at all, a working local cache. */
static int node_badkey(const char *path) {
    convcache *c = open_node(path, NULL, 0, 2000);
    test_key k = make_key(0), miss = make_key(123456);
    test_val v = make_val(0, 3), got;
    size_t len;
    CHECK_RC(convcache_find(c, &miss, sizeof miss, &got, sizeof got, &len), 0);
    CHECK_RC(convcache_insert(c, &k, sizeof k, &v, sizeof v), CONVCACHE_OK);
    CHECK_RC(convcache_find(c, &k, sizeof k, &got, sizeof got, &len), CONVCACHE_HIT);
    struct convcache_stats st = stats(c);
    CHECK(st.remote_hits == 0 && st.remote_misses == 0 && st.remote_errors == 0 && st.remote_writes == 0);
    convcache_close(c);
    return 0;
}

/* A server that refuses HELLO, as Redis 5 does, and answers every other
 * command with reply: forked, its pid in hostile_pid. Returns its port. */
static int hostile_server(const char *reply) {
    pid_t *pid = &hostile_pid;
    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    CHECK(l >= 0 && bind(l, (struct sockaddr *)&a, sizeof a) == 0 && listen(l, 16) == 0);
    CHECK(getsockname(l, (struct sockaddr *)&a, &len) == 0);
    *pid = fork();
    CHECK(*pid >= 0);
    if (*pid == 0) {
        signal(SIGPIPE, SIG_IGN);
        dup2(l, 3); /* keep only the listener */
        close_range(4, ~0U, 0);
        l = 3;
        for (;;) {
            int c = accept(l, NULL, NULL);
            if (c < 0) continue;
            char buf[4096];
            ssize_t n;
            while ((n = read(c, buf, sizeof buf)) > 0) {
                int hello = memmem(buf, (size_t)n, "HELLO", 5) || memmem(buf, (size_t)n, "hello", 5);
                const char *r = hello ? "-ERR unknown command 'HELLO'\r\n" : reply;
                if (write(c, r, strlen(r)) < 0) break;
            }
            close(c);
        }
    }
    close(l);
    return ntohs(a.sin_port);
}

/* A node against a hostile server: misses, errors counted, a local cache. */
static int node_hostile(const char *path, const char *url) {
    convcache *c = open_node(path, url, 1, 2000);
    test_key k = make_key(1);
    test_val v = make_val(1, 4), got;
    size_t len;
    CHECK_RC(convcache_find(c, &k, sizeof k, &got, sizeof got, &len), 0);
    CHECK_RC(convcache_insert(c, &k, sizeof k, &v, sizeof v), CONVCACHE_OK);
    CHECK_RC(convcache_find(c, &k, sizeof k, &got, sizeof got, &len), CONVCACHE_HIT);
    struct convcache_stats st = stats(c);
    CHECK(st.remote_errors >= 1 && st.remote_hits == 0);
    convcache_close(c);
    return 0;
}

/* Mode ro: reads through, writes nothing remotely. */
static int node_ro(const char *path, int port) {
    long before = dbsize(port);
    convcache *c = open_node(path, NULL, 0, RELAXED_MS);
    test_key k = make_key(3); /* inserted by node A */
    test_val got;
    size_t len;
    CHECK_RC(convcache_find(c, &k, sizeof k, &got, sizeof got, &len), CONVCACHE_HIT);
    CHECK(stats(c).remote_hits == 1);
    for (uint32_t i = 900000; i < 900010; i++) {
        test_key nk = make_key(i);
        test_val v = make_val(i, 0);
        CHECK_RC(convcache_insert(c, &nk, sizeof nk, &v, sizeof v), CONVCACHE_E_READONLY);
    }
    struct build_ctx b = {"/dev/null"};
    char value[64];
    test_key ck = make_key(888888);
    CHECK_RC(convcache_get_or_create(c, &ck, sizeof ck, slow_builder, &b, value, sizeof value, &len),
             CONVCACHE_OK);
    convcache_save(c);
    convcache_close(c);
    CHECK(dbsize(port) == before);
    return 0;
}

/* ---- The parent: scenarios ---------------------------------------------- */

static pid_t spawn(char *const args[], int keep_fd, const char *stderr_path) {
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        if (keep_fd >= 0) dup2(keep_fd, 3);
        if (stderr_path) {
            int fd = open(stderr_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
            dup2(fd, 2);
        }
        close_range(keep_fd >= 0 ? 4 : 3, ~0U, 0);
        execv(args[0], args);
        _exit(127);
    }
    return pid;
}

static void wait_ok(pid_t pid) {
    int status;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void run(char *const args[]) { wait_ok(spawn(args, -1, NULL)); }

static void two_nodes(char *self) {
    char *a = test_path("a.ccdb"), *b = test_path("b.ccdb");
    run((char *[]){self, "insert", a, "100", NULL});
    CHECK(dbsize(redis_port) == 100);
    run((char *[]){self, "find", b, "100", "100", NULL}); /* all remote hits */
    run((char *[]){self, "find", b, "100", "0", NULL});   /* now in B's file */
    /* "" disables the tier even with $CONVCACHE_REMOTE set. */
    run((char *[]){self, "find-none", b, "100", "0", NULL});
    printf("two nodes: node B's first lookups were remote hits, then local: ok\n");
}

static void single_flight(char *self) {
    char *count = test_path("builds");
    int gate[2], ready[2];
    CHECK(pipe(gate) == 0 && pipe(ready) == 0);
    pid_t kids[NODES];
    int outs[NODES];
    for (int i = 0; i < NODES; i++) {
        char name[32], out[32];
        snprintf(name, sizeof name, "race%d.ccdb", i);
        snprintf(out, sizeof out, "race%d.out", i);
        char *path = test_path(name), *outp = test_path(out);
        outs[i] = open(outp, O_RDWR | O_CREAT | O_TRUNC, 0600);
        CHECK(outs[i] >= 0);
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            int g = fcntl(gate[0], F_DUPFD, 100), r = fcntl(ready[1], F_DUPFD, 100);
            dup2(g, 3);
            dup2(r, 4);
            dup2(outs[i], 1);
            close_range(5, ~0U, 0);
            execv(self, (char *[]){self, "race", path, count, NULL});
            _exit(127);
        }
        kids[i] = pid;
    }
    close(gate[0]);
    close(ready[1]);
    char r[NODES];
    for (size_t got = 0; got < sizeof r;) { /* every node has opened its cache */
        ssize_t n = read(ready[0], r, sizeof r - got);
        CHECK(n > 0);
        got += (size_t)n;
    }
    close(ready[0]);
    close(gate[1]);
    for (int i = 0; i < NODES; i++) wait_ok(kids[i]);
    char buf[64] = {0};
    CHECK(read_file(count, buf, sizeof buf - 1) == 2); /* "x\n": one build */
    char first[64] = {0};
    for (int i = 0; i < NODES; i++) {
        char v[64] = {0};
        CHECK(pread(outs[i], v, sizeof v - 1, 0) > 0);
        if (i == 0) memcpy(first, v, sizeof v);
        CHECK(strcmp(v, first) == 0); /* everyone got the one value */
        close(outs[i]);
    }
    printf("single flight: %d nodes, 1 build (%.*s): ok\n", NODES, (int)strcspn(first, "\n"), first);
}

/* Every kind of call against a dead server, each within the deadline plus
 * 2 s of slack for a loaded machine: what this catches is a call that keeps
 * waiting for the server (retries, reconnects). The Go tests (remote/)
 * check the deadline itself against a server that answers 3 s late. */
#define SLACK_S 2.0
static void bounded_calls(convcache *c, uint32_t base, int timeout_ms, double *worst) {
    for (uint32_t i = base; i < base + 20; i++) {
        test_key k = make_key(i), miss = make_key(i + 500000);
        test_val v = make_val(i, 2), got;
        size_t len;
        char value[64];
        struct build_ctx b = {"/dev/null"};
        double t0 = now_sec();
        CHECK_RC(convcache_insert(c, &k, sizeof k, &v, sizeof v), CONVCACHE_OK);
        double t1 = now_sec();
        CHECK_RC(convcache_find(c, &k, sizeof k, &got, sizeof got, &len), CONVCACHE_HIT);
        CHECK_RC(convcache_find(c, &miss, sizeof miss, &got, sizeof got, &len), 0);
        double t2 = now_sec();
        test_key ck = make_key(i + 700000);
        CHECK_RC(convcache_get_or_create(c, &ck, sizeof ck, slow_builder, &b, value, sizeof value, &len),
                 CONVCACHE_OK);
        double t3 = now_sec() - 0.3; /* less the builder's own 300 ms */
        CHECK_RC(convcache_save(c), CONVCACHE_OK);
        double t4 = now_sec();
        double d[] = {t1 - t0, t2 - t1, t3 - t2, t4 - (t3 + 0.3)};
        for (int j = 0; j < 4; j++)
            if (d[j] > *worst) *worst = d[j];
    }
    if (*worst > timeout_ms / 1000.0 + SLACK_S) {
        fprintf(stderr, "a call took %.0f ms with the server down; deadline %d ms\n", *worst * 1e3,
                timeout_ms);
        exit(1);
    }
}

static void server_down(void) {
    char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d/0", free_port()); /* nothing listens */
    convcache *c = open_node(test_path("down.ccdb"), url, 1, 100);
    double worst = 0;
    bounded_calls(c, 1000, 100, &worst);
    struct convcache_stats st = stats(c);
    CHECK(st.remote_errors > 0 && st.remote_hits == 0 && st.remote_writes == 0);
    convcache_close(c);
    printf("server down: slowest call %.1f ms (deadline 100 ms), %llu errors counted: ok\n",
           worst * 1e3, (unsigned long long)st.remote_errors);
}

static void server_killed(void) {
    convcache *c = open_node(test_path("killed.ccdb"), NULL, 0, 100);
    test_key k = make_key(1);
    test_val v = make_val(1, 9);
    CHECK_RC(convcache_insert(c, &k, sizeof k, &v, sizeof v), CONVCACHE_OK);
    CHECK_RC(convcache_save(c), CONVCACHE_OK);
    uint64_t w0 = stats(c).remote_writes;
    CHECK(w0 >= 1);
    redis_stop();
    double worst = 0;
    bounded_calls(c, 2000, 100, &worst);
    CHECK(stats(c).remote_errors > 0);
    redis_restart(); /* empty */
    /* Writes resume: the entries inserted while the server was down were
     * queued, and reach it after the tier reconnects. */
    int ok = 0;
    for (int i = 0; i < 1000 && !ok; i++) {
        usleep(10000);
        convcache_save(c);
        ok = dbsize(redis_port) >= 40; /* 20 inserts + 20 builds while down */
    }
    struct convcache_stats st = stats(c);
    if (!ok) {
        fprintf(stderr, "writes did not resume: dbsize %ld, writes %llu, dropped %llu\n", dbsize(redis_port),
                (unsigned long long)st.remote_writes, (unsigned long long)st.remote_dropped);
        exit(1);
    }
    convcache_close(c);
    printf("server killed mid-run: slowest call %.1f ms (deadline 100 ms); %llu writes after the "
           "restart: ok\n", worst * 1e3, (unsigned long long)(st.remote_writes - w0));
}

static void bad_settings(char *self) {
    char *err = test_path("badurl.err");
    char url_saved[128];
    snprintf(url_saved, sizeof url_saved, "%s", getenv("CONVCACHE_REMOTE"));
    setenv("CONVCACHE_REMOTE", "redis://host:99999/0", 1);
    wait_ok(spawn((char *[]){self, "badurl", test_path("bad.ccdb"), NULL}, -1, err));
    char buf[4096] = {0};
    read_file(err, buf, sizeof buf - 1);
    int lines = 0;
    for (char *p = buf; (p = strchr(p, '\n')); p++) lines++;
    if (lines != 3 || !strstr(buf, "convcache_options.remote=") || !strstr(buf, "CONVCACHE_REMOTE=") ||
        !strstr(buf, "remote_timeout_ms")) {
        fprintf(stderr, "want three warnings (option, variable, timeout), once each; got:\n%s", buf);
        exit(1);
    }
    setenv("CONVCACHE_REMOTE", url_saved, 1);
    printf("bad settings: one warning each, local cache works:\n%s", buf);
}

static void record_mac(char *self, const char *key_file) {
    char *k = test_path("keyless.ccdb"), *r = test_path("rejecting.ccdb");
    /* The server restarted empty above: the cluster writes again. */
    run((char *[]){self, "insert", test_path("keyed-writer.ccdb"), "100", NULL});
    unsetenv("CONVCACHE_REMOTE_KEY_FILE");
    /* Without the key, the cluster's records are read, unauthenticated:
     * every run asks the server again, since none reach the file. */
    run((char *[]){self, "find", k, "100", "100", NULL});
    run((char *[]){self, "find", k, "100", "100", NULL});
    /* A node without the key overwrites them with records without a MAC;
     * a node with the key rejects every one. */
    run((char *[]){self, "insert", test_path("keyless-writer.ccdb"), "100", NULL});
    setenv("CONVCACHE_REMOTE_KEY_FILE", key_file, 1);
    run((char *[]){self, "find-rejected", r, "100", NULL});
    /* A key file others can read: a warning, and the local cache only. */
    char *open_key = test_path("open.key"), *err = test_path("badkey.err");
    const char *open_secret = "sixteen bytes or more of key\n";
    write_file(open_key, open_secret, strlen(open_secret));
    CHECK(chmod(open_key, 0644) == 0);
    setenv("CONVCACHE_REMOTE_KEY_FILE", open_key, 1);
    wait_ok(spawn((char *[]){self, "badkey", test_path("badkey.ccdb"), NULL}, -1, err));
    char buf[4096] = {0};
    read_file(err, buf, sizeof buf - 1);
    if (!strstr(buf, "CONVCACHE_REMOTE_KEY_FILE=") || !strstr(buf, "mode 0644") || !strstr(buf, "local cache only")) {
        fprintf(stderr, "want a warning about the key file's mode; got:\n%s", buf);
        exit(1);
    }
    setenv("CONVCACHE_REMOTE_KEY_FILE", key_file, 1);
    printf("record MAC: keyless hits stay in memory, unsigned records rejected with the key, "
           "an open key file refused:\n%s", buf);
}

static void hostile(char *self) {
    const char *replies[] = {"$1099511627776\r\n", "*2147483648\r\n"};
    for (int i = 0; i < 2; i++) {
        char url[64], name[32], *err = test_path("hostile.err");
        snprintf(url, sizeof url, "redis://127.0.0.1:%d/0", hostile_server(replies[i]));
        snprintf(name, sizeof name, "hostile%d.ccdb", i);
        pid_t node = spawn((char *[]){self, "hostile", test_path(name), url, NULL}, -1, err);
        int status;
        CHECK(waitpid(node, &status, 0) == node);
        kill(hostile_pid, SIGKILL);
        waitpid(hostile_pid, NULL, 0);
        hostile_pid = 0;
        char buf[4096] = {0};
        read_file(err, buf, sizeof buf - 1);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "the node against a hostile server (%s) failed:\n%s", replies[i], buf);
            exit(1);
        }
        if (!strstr(buf, "reply out of bounds")) {
            fprintf(stderr, "want a warning naming the reply bound; got:\n%s", buf);
            exit(1);
        }
        printf("hostile server (%.*s): a miss, then local: ok\n%s", (int)strcspn(replies[i], "\r"),
               replies[i], buf);
    }
}

static void read_only(char *self) {
    char port[16];
    snprintf(port, sizeof port, "%d", redis_port);
    setenv("CONVCACHE_MODE", "ro", 1);
    run((char *[]){self, "ro", test_path("ro.ccdb"), port, NULL});
    unsetenv("CONVCACHE_MODE");
    printf("mode ro: read through, wrote nothing remotely: ok\n");
}

int main(int argc, char **argv) {
    if (argc >= 4 && strcmp(argv[1], "insert") == 0) return node_insert(argv[2], atoi(argv[3]));
    if (argc >= 5 && strcmp(argv[1], "find") == 0) return node_find(argv[2], atoi(argv[3]), atoi(argv[4]), NULL);
    if (argc >= 5 && strcmp(argv[1], "find-none") == 0)
        return node_find(argv[2], atoi(argv[3]), atoi(argv[4]), "");
    if (argc >= 4 && strcmp(argv[1], "race") == 0) return node_race(argv[2], argv[3], 3, 4);
    if (argc >= 3 && strcmp(argv[1], "badurl") == 0) return node_badurl(argv[2]);
    if (argc >= 4 && strcmp(argv[1], "ro") == 0) return node_ro(argv[2], atoi(argv[3]));
    if (argc >= 4 && strcmp(argv[1], "find-rejected") == 0) return node_find_rejected(argv[2], atoi(argv[3]));
    if (argc >= 3 && strcmp(argv[1], "badkey") == 0) return node_badkey(argv[2]);
    if (argc >= 4 && strcmp(argv[1], "hostile") == 0) return node_hostile(argv[2], argv[3]);

    if (!redis_bin()) {
        printf("test_remote: SKIPPED: redis-server is not installed (apt-get install redis-server)\n");
        return 0;
    }
    unsetenv("CONVCACHE_MODE");
    unsetenv("CONVCACHE_DISABLE");
    unsetenv("CONVCACHE_REMOTE_KEY");
    atexit(at_exit_stop);
    /* The cluster's record MAC key, in a file only this user can read. */
    char *key_file = test_path("cluster.key");
    const char *secret = "the cluster's record key, 32 B.\n";
    write_file(key_file, secret, strlen(secret));
    CHECK(chmod(key_file, 0600) == 0);
    setenv("CONVCACHE_REMOTE_KEY_FILE", key_file, 1);
    redis_start();
    char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d/0", redis_port);
    setenv("CONVCACHE_REMOTE", url, 1);
    printf("redis-server on port %d\n", redis_port);

    two_nodes(argv[0]);
    single_flight(argv[0]);
    read_only(argv[0]);
    server_down();
    server_killed();
    bad_settings(argv[0]);
    record_mac(argv[0], key_file);
    hostile(argv[0]);
    printf("test_remote: ok\n");
    return 0;
}
