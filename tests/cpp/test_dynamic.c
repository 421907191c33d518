/*
 * Tests of include/convcache_dynamic.h: a C program built with no
 * -lconvcache. Run as
 *   test_dynamic present   (CONVCACHE_LIBRARY or LD_LIBRARY_PATH finds the library)
 *   test_dynamic absent    (CONVCACHE_LIBRARY names a missing file)
 *   test_dynamic quiet     (missing, with CONVCACHE_DISABLE=1: no warning)
 *   test_dynamic foreign   (CONVCACHE_LIBRARY names a library that is not convcache)
 *   test_dynamic relative  (built with a relative CONVCACHE_INSTALL_LIBDIR, run where
 *                           that relative path holds the library: it is never used)
 * Built also with CONVCACHE_INSTALL_LIBDIR set to the build directory
 * (mk/cxx.mk), "present" must find the library with no environment.
 * A second translation unit (test_dynamic_tu2.c) uses the header too, to
 * check that the warning is printed once per program.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CONVCACHE_DYNAMIC 1
#include "convcache.h"
#include "../tmpdir.h"

int tu2_find_misses(void);      /* test_dynamic_tu2.c */
const char *tu2_version(void);  /* test_dynamic_tu2.c */

#define CHECK(cond)                                                                       \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            fprintf(real_stderr ? real_stderr : stderr, "%s:%d: CHECK failed: %s\n", __FILE__, \
                    __LINE__, #cond);                                                     \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

static FILE *real_stderr;

/* ---- first use from many threads at once ---- */

static pthread_barrier_t barrier;
static int thread_versions[8];

static void *first_use(void *arg) {
    int i = (int)(size_t)arg;
    pthread_barrier_wait(&barrier);
    thread_versions[i] = convcache_version_number();
    return NULL;
}

static void race_first_use(void) {
    pthread_t t[8];
    pthread_barrier_init(&barrier, NULL, 8);
    for (size_t i = 0; i < 8; i++) CHECK(pthread_create(&t[i], NULL, first_use, (void *)i) == 0);
    for (int i = 0; i < 8; i++) pthread_join(t[i], NULL);
    for (int i = 1; i < 8; i++) CHECK(thread_versions[i] == thread_versions[0]);
}

/* ---- builders ---- */

static int builds;

static int build_ok(void *user, const void *key, size_t key_len, void *value, size_t cap, size_t *len) {
    (void)key;
    (void)key_len;
    builds++;
    const char *v = (const char *)user;
    size_t n = strlen(v);
    if (cap < n) {
        *len = n;
        return CONVCACHE_E_RANGE;
    }
    memcpy(value, v, n);
    *len = n;
    return 0;
}

static int build_user_error(void *user, const void *key, size_t key_len, void *value, size_t cap,
                            size_t *len) {
    (void)user, (void)key, (void)key_len, (void)value, (void)cap, (void)len;
    return CONVCACHE_E_USER - 5;
}

static int build_positive(void *user, const void *key, size_t key_len, void *value, size_t cap,
                          size_t *len) {
    (void)user, (void)key, (void)key_len, (void)value, (void)cap, (void)len;
    return 3;
}

static const char *tmpdir; /* removed at exit (tests/tmpdir.h) */

static void make_tmpdir(void) { tmpdir = test_tmpdir_named("convcache-dyn"); }

static void test_present(void) {
    race_first_use();
    CHECK(convcache_dynamic_available() == 1);
    CHECK(strcmp(convcache_dynamic_error(), "") == 0);
    CHECK(convcache_version_number() == CONVCACHE_VERSION_NUMBER);
    CHECK(strcmp(convcache_version(), CONVCACHE_VERSION_STRING) == 0);
    CHECK(strcmp(convcache_strerror(CONVCACHE_E_LOCK), "timed out waiting for the cache lock") == 0);

    char path[400];
    snprintf(path, sizeof path, "%s/dyn.ccdb", tmpdir);
    convcache *c = NULL;
    CHECK(convcache_open(path, "dyn", &c) == CONVCACHE_OK && c != NULL);
    char v[64];
    size_t n = 0;
    CHECK(convcache_find(c, "k1", 2, v, sizeof v, &n) == 0);
    CHECK(convcache_insert(c, "k1", 2, "value-1", 7) == CONVCACHE_OK);
    CHECK(convcache_find(c, "k1", 2, v, sizeof v, &n) == CONVCACHE_HIT && n == 7 && memcmp(v, "value-1", 7) == 0);
    /* Real library semantics: too small a buffer reports the size. */
    CHECK(convcache_find(c, "k1", 2, v, 3, &n) == CONVCACHE_E_RANGE && n == 7);
    CHECK(convcache_find(c, "k1", 0, v, sizeof v, &n) == CONVCACHE_E_SIZE);
    CHECK(convcache_find(NULL, "k1", 2, v, sizeof v, &n) == CONVCACHE_E_INVALID);
    CHECK(strlen(convcache_last_error()) > 0);

    builds = 0;
    CHECK(convcache_get_or_create(c, "k2", 2, build_ok, "built", v, sizeof v, &n) == CONVCACHE_OK);
    CHECK(n == 5 && memcmp(v, "built", 5) == 0 && builds == 1);
    CHECK(convcache_get_or_create(c, "k2", 2, build_ok, "other", v, sizeof v, &n) == CONVCACHE_HIT);
    CHECK(n == 5 && memcmp(v, "built", 5) == 0 && builds == 1);

    struct convcache_stats st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    CHECK(convcache_stats(c, &st) == CONVCACHE_OK);
    CHECK(st.inserts >= 1 && st.hits >= 1 && st.entries == 2);
    CHECK(convcache_save(c) == CONVCACHE_OK);
    CHECK(convcache_load(c) == CONVCACHE_OK);
    convcache_close(c);

    /* The file holds it: a fresh handle (through the other translation
     * unit's loader state too) sees it. */
    convcache_options o;
    convcache_options_init(&o);
    o.path = path;
    o.scope = "dyn";
    CHECK(convcache_open_ex(&o, &c) == CONVCACHE_OK);
    CHECK(convcache_find(c, "k1", 2, v, sizeof v, &n) == CONVCACHE_HIT && n == 7);
    convcache_close(c);
    CHECK(strcmp(tu2_version(), CONVCACHE_VERSION_STRING) == 0);

    /* No GPU is the usual case here; either answer is documented. */
    char scope[CONVCACHE_SCOPE_MAX + 1];
    int r = convcache_cudnn_scope(0, scope, sizeof scope);
    CHECK(r > 0 || r == CONVCACHE_E_UNAVAILABLE);
}

/* Redirects stderr to a file; returns what was written when restored. */
static char captured[4096];
static int saved_fd = -1;
static char capture_path[400];

static void capture_stderr(void) {
    fflush(stderr);
    real_stderr = fdopen(dup(2), "w");
    snprintf(capture_path, sizeof capture_path, "%s/stderr.txt", tmpdir);
    CHECK(freopen(capture_path, "w", stderr) != NULL);
    saved_fd = 1;
}

static const char *captured_stderr(void) {
    fflush(stderr);
    FILE *f = fopen(capture_path, "r");
    CHECK(f);
    size_t n = fread(captured, 1, sizeof captured - 1, f);
    captured[n] = 0;
    fclose(f);
    return captured;
}

static int count_lines(const char *s) {
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

static void test_missing(const char *mode) {
    capture_stderr();
    race_first_use();
    CHECK(thread_versions[0] == 0);
    CHECK(convcache_dynamic_available() == 0);
    const char *why = convcache_dynamic_error();
    /* What the reason names: the file tried, or that a relative
     * CONVCACHE_INSTALL_LIBDIR was not used. */
    const char *lib = strcmp(mode, "relative") == 0 ? "ignored: not an absolute path" : getenv("CONVCACHE_LIBRARY");
    CHECK(lib && strstr(why, lib) != NULL);
    if (strcmp(mode, "foreign") == 0) CHECK(strstr(why, "has no convcache_open") != NULL);
    CHECK(strcmp(convcache_last_error(), why) == 0);
    CHECK(strcmp(convcache_version(), "0.0.0") == 0 && convcache_version_number() == 0);
    CHECK(strcmp(convcache_strerror(CONVCACHE_E_LOCK), "timed out waiting for the cache lock") == 0);
    CHECK(strcmp(convcache_strerror(CONVCACHE_E_USER - 3), "builder error") == 0);

    convcache *c = NULL;
    CHECK(convcache_open(NULL, NULL, &c) == CONVCACHE_OK && c != NULL);
    CHECK(convcache_open(NULL, NULL, NULL) == CONVCACHE_E_INVALID);
    char v[64];
    size_t n = 99;
    CHECK(convcache_insert(c, "k1", 2, "value-1", 7) == CONVCACHE_OK);
    CHECK(convcache_find(c, "k1", 2, v, sizeof v, &n) == 0); /* nothing is stored */
    CHECK(convcache_find(c, "k1", 0, v, sizeof v, &n) == CONVCACHE_E_SIZE);
    CHECK(convcache_find(c, "k1", CONVCACHE_KEY_MAX + 1, v, sizeof v, &n) == CONVCACHE_E_SIZE);
    CHECK(convcache_find(NULL, "k1", 2, v, sizeof v, &n) == CONVCACHE_E_INVALID);
    CHECK(convcache_find(c, "k1", 2, NULL, 4, &n) == CONVCACHE_E_INVALID);
    CHECK(convcache_insert(c, "k1", 2, NULL, 3) == CONVCACHE_E_INVALID);
    CHECK(convcache_insert(c, "k1", 2, "v", CONVCACHE_VALUE_MAX + 1) == CONVCACHE_E_SIZE);
    CHECK(convcache_load(c) == CONVCACHE_OK && convcache_save(c) == CONVCACHE_OK);
    CHECK(convcache_load(NULL) == CONVCACHE_E_INVALID && convcache_save(NULL) == CONVCACHE_E_INVALID);

    /* get_or_create builds every time. */
    builds = 0;
    CHECK(convcache_get_or_create(c, "k2", 2, build_ok, "built", v, sizeof v, &n) == CONVCACHE_OK);
    CHECK(n == 5 && memcmp(v, "built", 5) == 0);
    CHECK(convcache_get_or_create(c, "k2", 2, build_ok, "built", v, sizeof v, &n) == CONVCACHE_OK);
    CHECK(builds == 2);
    CHECK(convcache_get_or_create(c, "k2", 2, build_ok, "built", v, 2, &n) == CONVCACHE_E_RANGE && n == 5);
    CHECK(convcache_get_or_create(c, "k2", 2, build_user_error, NULL, v, sizeof v, &n) == CONVCACHE_E_USER - 5);
    CHECK(convcache_get_or_create(c, "k2", 2, build_positive, NULL, v, sizeof v, &n) == CONVCACHE_E_BUILDER);
    CHECK(convcache_get_or_create(c, "k2", 2, NULL, NULL, v, sizeof v, &n) == CONVCACHE_E_INVALID);

    struct convcache_stats st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    CHECK(convcache_stats(c, &st) == CONVCACHE_E_UNAVAILABLE);
    char scope[64] = "x";
    CHECK(convcache_cudnn_scope(0, scope, sizeof scope) == CONVCACHE_E_UNAVAILABLE && scope[0] == 0);
    CHECK(convcache_cudnn_scope(-1, scope, sizeof scope) == CONVCACHE_E_INVALID);

    convcache_options o;
    convcache_options_init(&o);
    CHECK(o.struct_size == sizeof o);
    convcache *c2 = NULL;
    CHECK(convcache_open_ex(&o, &c2) == CONVCACHE_OK && c2 != NULL);
    o.struct_size = 0;
    CHECK(convcache_open_ex(&o, &c2) == CONVCACHE_E_INVALID && c2 == NULL);
    convcache_close(c);
    convcache_close(NULL);

    CHECK(tu2_find_misses() == 1); /* the other translation unit's loader */

    const char *err = captured_stderr();
    if (strcmp(mode, "quiet") == 0) {
        CHECK(err[0] == 0);
    } else {
        if (count_lines(err) != 1) fprintf(real_stderr, "stderr was:\n%s", err);
        CHECK(count_lines(err) == 1);
        CHECK(strncmp(err, "convcache: ", 11) == 0);
        CHECK(strstr(err, lib) != NULL);
        CHECK(strstr(err, "running without the cache") != NULL);
    }
    fprintf(real_stderr, "test_dynamic %s: warning line was: %s", mode, err[0] ? err : "(none)\n");
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_dynamic present|absent|quiet|foreign|relative\n");
        return 2;
    }
    make_tmpdir();
    if (strcmp(argv[1], "present") == 0) test_present();
    else test_missing(argv[1]);
    (void)saved_fd;
    printf("test_dynamic %s: all passed\n", argv[1]);
    return 0;
}
