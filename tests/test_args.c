/* Hostile arguments at the C boundary: sizes that cut a field in half,
 * capacities of SIZE_MAX. Each gets a documented answer, never a crash or
 * an internal error. */
#include <stddef.h>

#include "check.h"

static convcache *open_tmp(const char *name) {
    char *path = test_path(name);
    convcache *c;
    CHECK_RC(convcache_open(path, "args", &c), CONVCACHE_OK);
    free(path);
    return c;
}

/* convcache_options.struct_size must end on a whole field: a size that
 * cuts the scope pointer in half used to be copied, and the half pointer
 * dereferenced. */
static void test_open_ex_sizes(void) {
    char *path = test_path("sizes.ccdb");
    setenv("CONVCACHE_PATH", path, 1);
    convcache_options o;
    convcache *c;
    /* The scope pointer is garbage: a size that reaches into it, even by
     * half, must be refused before anything reads it; a size that stops
     * before it leaves it out. */
    size_t scope_at = offsetof(convcache_options, scope);
    for (size_t n = 1; n < scope_at + sizeof o.scope; n++) {
        convcache_options_init(&o);
        o.path = path;
        memset((char *)&o + scope_at, 0x41, sizeof o.scope);
        o.struct_size = n;
        c = (convcache *)&o;
        int rc = convcache_open_ex(&o, &c);
        if (n == sizeof o.struct_size || n == scope_at) {
            CHECK_RC(rc, CONVCACHE_OK);
            convcache_close(c);
        } else {
            CHECK_RC(rc, CONVCACHE_E_INVALID);
            CHECK(c == NULL);
            CHECK(strstr(convcache_last_error(), "struct_size") != NULL);
        }
    }
    /* Every size that ends on a field of a valid struct opens. */
    size_t ends[] = {offsetof(convcache_options, mode) + sizeof o.mode,
                     offsetof(convcache_options, lock_timeout_ms) + sizeof o.lock_timeout_ms,
                     offsetof(convcache_options, max_entries) + sizeof o.max_entries,
                     offsetof(convcache_options, remote) + sizeof o.remote,
                     sizeof o};
    for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++) {
        convcache_options_init(&o);
        o.path = path;
        o.struct_size = ends[i];
        CHECK_RC(convcache_open_ex(&o, &c), CONVCACHE_OK);
        convcache_close(c);
        o.struct_size = ends[i] - 1; /* one byte short of a field */
        CHECK_RC(convcache_open_ex(&o, &c), CONVCACHE_E_INVALID);
    }
    unsetenv("CONVCACHE_PATH");
    free(path);
}

/* Any value_cap works: values are at most CONVCACHE_VALUE_MAX bytes. */
static void test_value_cap_max(void) {
    convcache *c = open_tmp("cap.ccdb");
    test_key k = make_key(1);
    test_val v = make_val(1, 0), got;
    size_t n = 0;
    CHECK_RC(convcache_insert(c, &k, sizeof k, &v, sizeof v), CONVCACHE_OK);
    CHECK_RC(convcache_find(c, &k, sizeof k, &got, SIZE_MAX, &n), CONVCACHE_HIT);
    CHECK(n == sizeof v && memcmp(&got, &v, sizeof v) == 0);
    CHECK_RC(convcache_find(c, &k, sizeof k, &got, (size_t)1 << 62, &n), CONVCACHE_HIT);
    test_key k2 = make_key(2);
    CHECK_RC(convcache_find(c, &k2, sizeof k2, &got, SIZE_MAX, &n), 0);
    convcache_close(c);
}

static size_t seen_cap;

static int builder(void *user, const void *key, size_t key_len, void *value, size_t value_cap,
                   size_t *value_len) {
    (void)user, (void)key, (void)key_len;
    seen_cap = value_cap;
    test_val v = make_val(7, 0);
    memcpy(value, &v, sizeof v);
    *value_len = sizeof v;
    return 0;
}

static void test_get_or_create_cap_max(void) {
    convcache *c = open_tmp("goc.ccdb");
    test_key k = make_key(7);
    test_val v = make_val(7, 0), got;
    size_t n = 0;
    CHECK_RC(convcache_get_or_create(c, &k, sizeof k, builder, NULL, &got, SIZE_MAX, &n), CONVCACHE_OK);
    CHECK(n == sizeof v && memcmp(&got, &v, sizeof v) == 0);
    CHECK(seen_cap == CONVCACHE_VALUE_MAX); /* the builder is told the cap that counts */
    CHECK_RC(convcache_get_or_create(c, &k, sizeof k, builder, NULL, &got, SIZE_MAX, &n), CONVCACHE_HIT);
    convcache_close(c);
}

/* stats fills whole fields only, and takes any size above the minimum. */
static void test_stats_sizes(void) {
    convcache *c = open_tmp("stats.ccdb");
    union {
        struct convcache_stats st;
        unsigned char b[sizeof(struct convcache_stats) + 16];
    } u;
    size_t cut = offsetof(struct convcache_stats, misses) + 3;
    memset(&u, 0xee, sizeof u);
    u.st.struct_size = cut;
    CHECK_RC(convcache_stats(c, &u.st), CONVCACHE_OK);
    CHECK(u.st.struct_size == offsetof(struct convcache_stats, misses));
    for (size_t i = offsetof(struct convcache_stats, misses); i < sizeof u.b; i++) CHECK(u.b[i] == 0xee);
    cut = offsetof(struct convcache_stats, network_fs) + 1;
    u.st.struct_size = cut;
    CHECK_RC(convcache_stats(c, &u.st), CONVCACHE_OK);
    CHECK(u.st.struct_size == offsetof(struct convcache_stats, network_fs));
    memset(&u, 0xee, sizeof u);
    u.st.struct_size = SIZE_MAX;
    CHECK_RC(convcache_stats(c, &u.st), CONVCACHE_OK);
    CHECK(u.st.struct_size == sizeof u.st);
    for (size_t i = sizeof u.st; i < sizeof u.b; i++) CHECK(u.b[i] == 0xee);
    convcache_close(c);
}

/* convcache_cudnn_scope: any cap works; only the string is written. */
static void test_scope_cap_max(void) {
    char buf[16];
    memset(buf, 0x55, sizeof buf);
    setenv("CONVCACHE_SCOPE", "abc", 1);
    CHECK_RC(convcache_cudnn_scope(0, buf, SIZE_MAX), 3);
    CHECK(strcmp(buf, "abc") == 0 && (unsigned char)buf[4] == 0x55);
    CHECK_RC(convcache_cudnn_scope(0, buf, 3), CONVCACHE_E_RANGE);
    CHECK(buf[0] == 0);
    unsetenv("CONVCACHE_SCOPE");
}

int main(void) {
    unsetenv("CONVCACHE_DISABLE");
    unsetenv("CONVCACHE_MODE");
    test_open_ex_sizes();
    test_value_cap_max();
    test_get_or_create_cap_max();
    test_stats_sizes();
    test_scope_cap_max();
    printf("test_args: ok\n");
    return 0;
}
