/* The hit path answered in C (capi/hit.c): hits counted, cold entries left to
 * Go once and answered in C after, values too long for the buffer, modes
 * that answer no hits in C, closed handles and reused handle slots,
 * convcache_peek (in a forked child too), and many handles opened and
 * closed while other threads hit. */
#include "check.h"

#include <pthread.h>

static struct convcache_stats stats(convcache *c) {
    struct convcache_stats st = {.struct_size = sizeof st};
    CHECK_RC(convcache_stats(c, &st), CONVCACHE_OK);
    return st;
}

static void find_ok(convcache *c, uint32_t i) {
    test_key k = make_key(i);
    test_val want = make_val(i, 0), got;
    size_t n = 0;
    CHECK_RC(convcache_find(c, &k, sizeof k, &got, sizeof got, &n), CONVCACHE_HIT);
    CHECK(n == sizeof got && memcmp(&got, &want, sizeof got) == 0);
}

/* Inserts keys 0..n-1 with version 0 of their values. */
static void insert_keys(convcache *c, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        test_key k = make_key(i);
        test_val v = make_val(i, 0);
        CHECK_RC(convcache_insert(c, &k, sizeof k, &v, sizeof v), CONVCACHE_OK);
    }
}

/* Hits through the C path count in the handle's statistics, as Go's do;
 * entries loaded from the file are answered by Go once (which moves them),
 * by C after; E_RANGE still says how long the value is. */
static void test_counts_and_cold_entries(void) {
    char *path = test_path("hits.ccdb");
    convcache *c;
    CHECK_RC(convcache_open(path, "h", &c), CONVCACHE_OK);
    insert_keys(c, 100);
    for (uint32_t i = 0; i < 100; i++) find_ok(c, i);
    struct convcache_stats st = stats(c);
    CHECK(st.hits == 100 && st.hits_memory == 100 && st.misses == 0);

    convcache *d; /* the same entries, loaded from the file: cold */
    CHECK_RC(convcache_open(path, "h", &d), CONVCACHE_OK);
    for (int round = 0; round < 3; round++)
        for (uint32_t i = 0; i < 100; i++) find_ok(d, i);
    st = stats(d);
    CHECK(st.hits == 300 && st.hits_file == 300 && st.misses == 0);

    test_key k = make_key(5);
    unsigned char small[8];
    size_t n = 0;
    CHECK_RC(convcache_find(d, &k, sizeof k, small, sizeof small, &n), CONVCACHE_E_RANGE);
    CHECK(n == sizeof(test_val));
    CHECK_RC(convcache_peek(d, &k, sizeof k, small, sizeof small, &n), 0);

    test_key absent = make_key(100000);
    test_val got;
    CHECK_RC(convcache_find(d, &absent, sizeof absent, &got, sizeof got, &n), 0);
    CHECK_RC(convcache_peek(d, &absent, sizeof absent, &got, sizeof got, &n), 0);
    convcache_close(c);
    convcache_close(d);
}

/* Recache answers no hits at all; a verbose log sees every hit, so those go
 * through Go, and still hit. Peek answers neither. */
static void test_modes(void) {
    char *path = test_path("modes.ccdb");
    convcache *c;
    CHECK_RC(convcache_open(path, "m", &c), CONVCACHE_OK);
    test_key k = make_key(1);
    test_val v = make_val(1, 0), got;
    size_t n = 0;
    CHECK_RC(convcache_insert(c, &k, sizeof k, &v, sizeof v), CONVCACHE_OK);
    convcache_close(c);

    convcache_options o;
    convcache_options_init(&o);
    o.path = path;
    o.scope = "m";
    o.mode = CONVCACHE_MODE_RECACHE;
    CHECK_RC(convcache_open_ex(&o, &c), CONVCACHE_OK);
    CHECK_RC(convcache_find(c, &k, sizeof k, &got, sizeof got, &n), 0);
    CHECK_RC(convcache_insert(c, &k, sizeof k, &v, sizeof v), CONVCACHE_OK);
    CHECK_RC(convcache_find(c, &k, sizeof k, &got, sizeof got, &n), 0);
    CHECK_RC(convcache_peek(c, &k, sizeof k, &got, sizeof got, &n), 0);
    struct convcache_stats st = stats(c); /* each find a miss, and nothing else */
    CHECK(st.hits == 0 && st.misses == 2);
    convcache_close(c);
}

/* A closed handle's token answers nothing, in C or in Go, even when its
 * slot has been reused by a new handle on another file. */
static void test_closed_and_reused(void) {
    char *pa = test_path("a.ccdb"), *pb = test_path("b.ccdb");
    convcache *a, *b;
    test_key k = make_key(7);
    test_val va = make_val(7, 1), vb = make_val(7, 2), got;
    size_t n = 0;
    CHECK_RC(convcache_open(pa, "r", &a), CONVCACHE_OK);
    CHECK_RC(convcache_insert(a, &k, sizeof k, &va, sizeof va), CONVCACHE_OK);
    CHECK_RC(convcache_find(a, &k, sizeof k, &got, sizeof got, &n), CONVCACHE_HIT);
    convcache_close(a);
    CHECK_RC(convcache_find(a, &k, sizeof k, &got, sizeof got, &n), CONVCACHE_E_HANDLE);
    CHECK_RC(convcache_peek(a, &k, sizeof k, &got, sizeof got, &n), 0);
    CHECK_RC(convcache_open(pb, "r", &b), CONVCACHE_OK); /* takes a's slot */
    CHECK(((uintptr_t)a & 0xffffff) == ((uintptr_t)b & 0xffffff));
    CHECK_RC(convcache_insert(b, &k, sizeof k, &vb, sizeof vb), CONVCACHE_OK);
    CHECK_RC(convcache_find(a, &k, sizeof k, &got, sizeof got, &n), CONVCACHE_E_HANDLE);
    CHECK_RC(convcache_peek(a, &k, sizeof k, &got, sizeof got, &n), 0);
    CHECK_RC(convcache_find(b, &k, sizeof k, &got, sizeof got, &n), CONVCACHE_HIT);
    CHECK(memcmp(&got, &vb, sizeof got) == 0);
    convcache_close(b);
}

static void test_peek_args(void) {
    test_key k = make_key(1);
    test_val got;
    size_t n;
    convcache *c;
    CHECK_RC(convcache_open(test_path("args.ccdb"), "a", &c), CONVCACHE_OK);
    CHECK_RC(convcache_peek(NULL, &k, sizeof k, &got, sizeof got, &n), CONVCACHE_E_INVALID);
    CHECK_RC(convcache_peek(c, NULL, sizeof k, &got, sizeof got, &n), CONVCACHE_E_INVALID);
    CHECK_RC(convcache_peek(c, &k, sizeof k, NULL, sizeof got, &n), CONVCACHE_E_INVALID);
    CHECK_RC(convcache_peek(c, &k, sizeof k, &got, sizeof got, NULL), CONVCACHE_E_INVALID);
    CHECK_RC(convcache_peek(c, &k, 0, &got, sizeof got, &n), CONVCACHE_E_SIZE);
    CHECK_RC(convcache_peek(c, &k, CONVCACHE_KEY_MAX + 1, &got, sizeof got, &n), CONVCACHE_E_SIZE);
    CHECK_RC(convcache_peek(c, &k, sizeof k, &got, SIZE_MAX, &n), 0);
    CHECK_RC(convcache_peek(c, &k, sizeof k, NULL, 0, &n), 0);
    CHECK_RC(convcache_peek((convcache *)(uintptr_t)0x7fff123456, &k, sizeof k, &got, sizeof got, &n), 0);
    convcache_close(c);
}

/* In a forked child find refuses, and peek answers from the index the
 * parent had at the fork: entries it used, and entries it never used (cold,
 * loaded from the file). */
static void test_peek_in_forked_child(void) {
    char *path = test_path("fork.ccdb");
    convcache *c;
    CHECK_RC(convcache_open(path, "f", &c), CONVCACHE_OK);
    insert_keys(c, 50);
    convcache_close(c);
    CHECK_RC(convcache_open(path, "f", &c), CONVCACHE_OK);
    for (uint32_t i = 0; i < 25; i++) find_ok(c, i); /* the rest stay cold */
    fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        alarm(60);
        for (uint32_t i = 0; i < 50; i++) {
            test_key k = make_key(i);
            test_val want = make_val(i, 0), got;
            size_t n = 0;
            CHECK_RC(convcache_find(c, &k, sizeof k, &got, sizeof got, &n), CONVCACHE_E_FORKED);
            CHECK_RC(convcache_peek(c, &k, sizeof k, &got, sizeof got, &n), CONVCACHE_HIT);
            CHECK(n == sizeof got && memcmp(&got, &want, sizeof got) == 0);
        }
        test_key absent = make_key(999);
        test_val got;
        size_t n = 0;
        CHECK_RC(convcache_peek(c, &absent, sizeof absent, &got, sizeof got, &n), 0);
        _exit(0);
    }
    int st;
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    convcache_close(c);
}

/* Handles opened, used and closed again and again while other threads hit
 * on a handle that stays open: closed handles' memory is reclaimed under
 * readers, and no reader sees another handle's entries. */
static convcache *shared_c;
static volatile int stop_readers;

static void *reader(void *arg) {
    (void)arg;
    uint64_t hits = 0;
    for (uint32_t i = 0; !stop_readers; i = (i + 1) % 200) {
        find_ok(shared_c, i);
        hits++;
    }
    return (void *)(uintptr_t)hits;
}

static void test_open_close_under_readers(void) {
    char *path = test_path("churn.ccdb");
    CHECK_RC(convcache_open(path, "c", &shared_c), CONVCACHE_OK);
    insert_keys(shared_c, 200);
    pthread_t t[4];
    for (int i = 0; i < 4; i++) CHECK(pthread_create(&t[i], NULL, reader, NULL) == 0);
    char *other = test_path("other.ccdb");
    for (int round = 0; round < 200; round++) {
        convcache *c;
        CHECK_RC(convcache_open(round % 2 ? path : other, "c", &c), CONVCACHE_OK);
        test_key k = make_key(10000 + (uint32_t)round);
        test_val v = make_val(10000 + (uint32_t)round, 0), got;
        size_t n = 0;
        CHECK_RC(convcache_insert(c, &k, sizeof k, &v, sizeof v), CONVCACHE_OK);
        CHECK_RC(convcache_find(c, &k, sizeof k, &got, sizeof got, &n), CONVCACHE_HIT);
        if (round % 2) find_ok(c, (uint32_t)round % 200);
        convcache_close(c);
    }
    stop_readers = 1;
    uint64_t hits = 0;
    for (int i = 0; i < 4; i++) {
        void *r;
        CHECK(pthread_join(t[i], &r) == 0);
        hits += (uintptr_t)r;
    }
    CHECK(hits > 0);
    struct convcache_stats st = stats(shared_c);
    CHECK(st.hits >= hits && st.misses == 0);
    convcache_close(shared_c);
}

int main(void) {
    test_counts_and_cold_entries();
    test_modes();
    test_closed_and_reused();
    test_peek_args();
    test_peek_in_forked_child();
    test_open_close_under_readers();
    printf("test_hits: ok\n");
    return 0;
}
