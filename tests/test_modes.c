/* CONVCACHE_MODE (one case per mode), the verbose log and the read-only
 * system tier, through the real library and its environment variables. */
#include "check.h"

static test_key K1, K2, K9;
static test_val V1, V2, V1new;

static size_t snapshot(const char *path, unsigned char *buf, size_t cap) { return read_file(path, buf, cap); }

static convcache *open_mode(const char *path, const char *mode) {
    if (mode) setenv("CONVCACHE_MODE", mode, 1);
    else unsetenv("CONVCACHE_MODE");
    convcache *c;
    CHECK_RC(convcache_open(path, NULL, &c), CONVCACHE_OK);
    unsetenv("CONVCACHE_MODE");
    return c;
}

static int builds;
static int builder(void *user, const void *key, size_t key_len, void *value, size_t cap, size_t *len) {
    (void)user, (void)key, (void)key_len;
    builds++;
    if (cap < sizeof V2) return -1001;
    memcpy(value, &V2, sizeof V2);
    *len = sizeof V2;
    return 0;
}

int main(void) {
    K1 = make_key(1), K2 = make_key(2), K9 = make_key(9);
    V1 = make_val(1, 0), V2 = make_val(2, 0), V1new = make_val(1, 5);
    char *path = test_path("modes.ccdb");
    test_val got;
    size_t n;
    static unsigned char before[1 << 16], after[1 << 16];

    /* rw: the default. */
    convcache *c = open_mode(path, "rw");
    CHECK_RC(convcache_insert(c, &K1, sizeof K1, &V1, sizeof V1), CONVCACHE_OK);
    CHECK_RC(convcache_find(c, &K1, sizeof K1, &got, sizeof got, &n), CONVCACHE_HIT);
    convcache_close(c);

    /* ro: finds, never writes; inserts stay in memory. */
    size_t nb = snapshot(path, before, sizeof before);
    c = open_mode(path, "ro");
    CHECK_RC(convcache_find(c, &K1, sizeof K1, &got, sizeof got, &n), CONVCACHE_HIT);
    CHECK_RC(convcache_insert(c, &K2, sizeof K2, &V2, sizeof V2), CONVCACHE_E_READONLY);
    CHECK_RC(convcache_find(c, &K2, sizeof K2, &got, sizeof got, &n), CONVCACHE_HIT);
    CHECK_RC(convcache_save(c), CONVCACHE_E_READONLY);
    convcache_close(c);
    CHECK(snapshot(path, after, sizeof after) == nb && memcmp(before, after, nb) == 0);

    /* off: misses, inserts succeed, nothing is read or written. */
    c = open_mode(path, "off");
    CHECK_RC(convcache_find(c, &K1, sizeof K1, &got, sizeof got, &n), 0);
    CHECK_RC(convcache_insert(c, &K2, sizeof K2, &V2, sizeof V2), CONVCACHE_OK);
    CHECK_RC(convcache_save(c), CONVCACHE_OK);
    convcache_close(c);
    CHECK(snapshot(path, after, sizeof after) == nb && memcmp(before, after, nb) == 0);

    /* recache: hits are ignored, fresh results overwrite old ones. */
    c = open_mode(path, "recache");
    CHECK_RC(convcache_find(c, &K1, sizeof K1, &got, sizeof got, &n), 0);
    CHECK_RC(convcache_insert(c, &K1, sizeof K1, &V1new, sizeof V1new), CONVCACHE_OK);
    builds = 0;
    CHECK_RC(convcache_get_or_create(c, &K1, sizeof K1, builder, NULL, &got, sizeof got, &n), CONVCACHE_OK);
    CHECK(builds == 1); /* measured again */
    CHECK_RC(convcache_insert(c, &K1, sizeof K1, &V1new, sizeof V1new), CONVCACHE_OK);
    convcache_close(c);
    c = open_mode(path, NULL);
    CHECK_RC(convcache_find(c, &K1, sizeof K1, &got, sizeof got, &n), CONVCACHE_HIT);
    CHECK(memcmp(&got, &V1new, sizeof got) == 0);
    convcache_close(c);

    /* strict: a miss is an error, and nothing is built. */
    c = open_mode(path, "strict");
    CHECK_RC(convcache_find(c, &K1, sizeof K1, &got, sizeof got, &n), CONVCACHE_HIT);
    CHECK_RC(convcache_find(c, &K9, sizeof K9, &got, sizeof got, &n), CONVCACHE_E_MISS);
    builds = 0;
    CHECK_RC(convcache_get_or_create(c, &K9, sizeof K9, builder, NULL, &got, sizeof got, &n), CONVCACHE_E_MISS);
    CHECK(builds == 0);
    struct convcache_stats st = {.struct_size = sizeof st};
    CHECK_RC(convcache_stats(c, &st), CONVCACHE_OK);
    CHECK(st.misses == 2);
    convcache_close(c);

    /* An explicit mode in convcache_open_ex beats the environment;
     * CONVCACHE_DISABLE beats everything. */
    setenv("CONVCACHE_MODE", "strict", 1);
    convcache_options o;
    convcache_options_init(&o);
    o.path = path;
    o.mode = CONVCACHE_MODE_RW;
    CHECK_RC(convcache_open_ex(&o, &c), CONVCACHE_OK);
    CHECK_RC(convcache_find(c, &K9, sizeof K9, &got, sizeof got, &n), 0);
    convcache_close(c);
    setenv("CONVCACHE_DISABLE", "1", 1);
    CHECK_RC(convcache_open_ex(&o, &c), CONVCACHE_OK);
    CHECK_RC(convcache_find(c, &K1, sizeof K1, &got, sizeof got, &n), 0);
    convcache_close(c);
    unsetenv("CONVCACHE_DISABLE");
    unsetenv("CONVCACHE_MODE");

    /* The verbose log, to a file. */
    char *logpath = test_path("events.log");
    setenv("CONVCACHE_VERBOSE", "1", 1);
    setenv("CONVCACHE_LOG", logpath, 1);
    c = open_mode(path, NULL);
    CHECK_RC(convcache_find(c, &K1, sizeof K1, &got, sizeof got, &n), CONVCACHE_HIT);
    CHECK_RC(convcache_find(c, &K9, sizeof K9, &got, sizeof got, &n), 0);
    CHECK_RC(convcache_insert(c, &K9, sizeof K9, &V2, sizeof V2), CONVCACHE_OK);
    CHECK_RC(convcache_find(c, &K9, sizeof K9, &got, sizeof got, &n), CONVCACHE_HIT);
    convcache_close(c);
    unsetenv("CONVCACHE_VERBOSE");
    unsetenv("CONVCACHE_LOG");
    char logbuf[4096];
    size_t ln = read_file(logpath, logbuf, sizeof logbuf - 1);
    logbuf[ln] = 0;
    CHECK(strncmp(logbuf, "convcache,persistent_hit,", 25) == 0);
    CHECK(strstr(logbuf, "\nconvcache,miss,") && strstr(logbuf, "\nconvcache,insert,") &&
          strstr(logbuf, "\nconvcache,hit,"));
    int lines = 0;
    for (char *p = logbuf; *p; p++) lines += *p == '\n';
    CHECK(lines == 4);

    /* The system tier: a read-only cache behind the user's. */
    char *user = test_path("user.ccdb");
    setenv("CONVCACHE_SYSTEM_PATH", path, 1);
    c = open_mode(user, NULL);
    CHECK_RC(convcache_find(c, &K1, sizeof K1, &got, sizeof got, &n), CONVCACHE_HIT);
    CHECK(memcmp(&got, &V1new, sizeof got) == 0);
    CHECK_RC(convcache_stats(c, &st), CONVCACHE_OK);
    CHECK(st.hits_system == 1 && st.entries == 1);
    convcache_close(c);
    unsigned char ub[4096];
    CHECK(read_file(user, ub, sizeof ub) == 32); /* not copied without CONVCACHE_PROMOTE */
    setenv("CONVCACHE_PROMOTE", "1", 1);
    c = open_mode(user, NULL);
    CHECK_RC(convcache_find(c, &K1, sizeof K1, &got, sizeof got, &n), CONVCACHE_HIT);
    convcache_close(c);
    unsetenv("CONVCACHE_PROMOTE");
    unsetenv("CONVCACHE_SYSTEM_PATH");
    CHECK(read_file(user, ub, sizeof ub) > 32); /* promoted */
    c = open_mode(user, NULL);
    CHECK_RC(convcache_find(c, &K1, sizeof K1, &got, sizeof got, &n), CONVCACHE_HIT);
    convcache_close(c);

    printf("test_modes: ok\n");
    return 0;
}
