/* The C API's contract: results, documented errors for bad input, handle
 * safety, scopes, default paths and environment variables. Every case runs
 * against the real libconvcache.so. */
#include "check.h"

#include <pwd.h>

static void test_versions(void) {
    CHECK(convcache_version_number() == CONVCACHE_VERSION_NUMBER);
    CHECK(strcmp(convcache_version(), CONVCACHE_VERSION_STRING) == 0);
    for (int code = 2; code >= CONVCACHE_E_INTERNAL; code--) {
        const char *s = convcache_strerror(code);
        CHECK(s && *s && strcmp(s, "unknown code") != 0);
    }
    CHECK(strcmp(convcache_strerror(-999), "unknown code") == 0);
    CHECK(strcmp(convcache_strerror(CONVCACHE_E_USER - 5), "builder error") == 0);

    /* The library names each code of the header's lists as they do, and no
     * two alike. */
    static const struct {
        int code;
        const char *message;
    } listed[] = {
#define ROW_STATUS(name, message) {CONVCACHE_##name, message},
#define ROW_ERROR(name, message, cxx_class, cxx_group) {CONVCACHE_E_##name, message},
        CONVCACHE_STATUS_LIST(ROW_STATUS) CONVCACHE_ERROR_LIST(ROW_ERROR)
#undef ROW_STATUS
#undef ROW_ERROR
    };
    size_t n = sizeof listed / sizeof listed[0];
    for (size_t i = 0; i < n; i++) {
        CHECK(strcmp(convcache_strerror(listed[i].code), listed[i].message) == 0);
        for (size_t j = 0; j < i; j++)
            CHECK(listed[i].code != listed[j].code && strcmp(listed[i].message, listed[j].message) != 0);
    }
}

static void test_roundtrip(void) {
    char *path = test_path("rt.ccdb");
    convcache *c = NULL;
    CHECK_RC(convcache_open(path, "scope-a", &c), CONVCACHE_OK);
    CHECK(c != NULL);
    test_key k = make_key(7);
    test_val v = make_val(7, 1), got;
    size_t n = 0;
    CHECK_RC(convcache_find(c, &k, sizeof k, &got, sizeof got, &n), 0);
    CHECK_RC(convcache_insert(c, &k, sizeof k, &v, sizeof v), CONVCACHE_OK);
    CHECK_RC(convcache_find(c, &k, sizeof k, &got, sizeof got, &n), CONVCACHE_HIT);
    CHECK(n == sizeof v && memcmp(&got, &v, sizeof v) == 0);
    /* Insert replaces. */
    test_val v2 = make_val(7, 2);
    CHECK_RC(convcache_insert(c, &k, sizeof k, &v2, sizeof v2), CONVCACHE_OK);
    CHECK_RC(convcache_find(c, &k, sizeof k, &got, sizeof got, &n), CONVCACHE_HIT);
    CHECK(memcmp(&got, &v2, sizeof v2) == 0);
    /* Empty values are values. */
    test_key k0 = make_key(8);
    CHECK_RC(convcache_insert(c, &k0, sizeof k0, NULL, 0), CONVCACHE_OK);
    CHECK_RC(convcache_find(c, &k0, sizeof k0, NULL, 0, &n), CONVCACHE_HIT);
    CHECK(n == 0);
    CHECK_RC(convcache_save(c), CONVCACHE_OK);
    CHECK_RC(convcache_load(c), CONVCACHE_OK);
    struct convcache_stats st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    CHECK_RC(convcache_stats(c, &st), CONVCACHE_OK);
    CHECK(st.struct_size == sizeof st);
    CHECK(st.hits == 3 && st.misses == 1 && st.entries == 2 && st.inserts == 3);
    /* An older, smaller struct gets only its prefix. */
    struct convcache_stats small;
    memset(&small, 0xAB, sizeof small);
    small.struct_size = offsetof(struct convcache_stats, misses);
    CHECK_RC(convcache_stats(c, &small), CONVCACHE_OK);
    CHECK(small.hits == 3 && small.misses == 0xABABABABABABABABull);
    convcache_close(c);

    /* A new handle reads it back from the file. */
    CHECK_RC(convcache_open(path, "scope-a", &c), CONVCACHE_OK);
    CHECK_RC(convcache_find(c, &k, sizeof k, &got, sizeof got, &n), CONVCACHE_HIT);
    CHECK(memcmp(&got, &v2, sizeof v2) == 0);
    convcache_close(c);

    /* The file and directory modes. */
    struct stat sb;
    CHECK(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0600);
    free(path);
}

static void test_limits(void) {
    char *path = test_path("limits.ccdb");
    convcache *c;
    CHECK_RC(convcache_open(path, NULL, &c), CONVCACHE_OK);
    static unsigned char big[CONVCACHE_VALUE_MAX + 1];
    static unsigned char out[CONVCACHE_VALUE_MAX + 1];
    unsigned char key[CONVCACHE_KEY_MAX + 1];
    memset(key, 'k', sizeof key);
    for (size_t i = 0; i < sizeof big; i++) big[i] = (unsigned char)(i * 31);
    size_t n = 0;
    /* The largest key and value are accepted. */
    CHECK_RC(convcache_insert(c, key, CONVCACHE_KEY_MAX, big, CONVCACHE_VALUE_MAX), CONVCACHE_OK);
    CHECK_RC(convcache_find(c, key, CONVCACHE_KEY_MAX, out, sizeof out, &n), CONVCACHE_HIT);
    CHECK(n == CONVCACHE_VALUE_MAX && memcmp(out, big, n) == 0);
    /* One more byte is refused. */
    CHECK_RC(convcache_insert(c, key, CONVCACHE_KEY_MAX + 1, big, 1), CONVCACHE_E_SIZE);
    CHECK_RC(convcache_insert(c, key, 1, big, CONVCACHE_VALUE_MAX + 1), CONVCACHE_E_SIZE);
    CHECK_RC(convcache_find(c, key, CONVCACHE_KEY_MAX + 1, out, sizeof out, &n), CONVCACHE_E_SIZE);
    CHECK_RC(convcache_insert(c, key, 0, big, 1), CONVCACHE_E_SIZE);
    CHECK_RC(convcache_find(c, key, 0, out, sizeof out, &n), CONVCACHE_E_SIZE);
    CHECK_RC(convcache_find(c, key, (size_t)-1, out, sizeof out, &n), CONVCACHE_E_SIZE);
    /* A too-small buffer: the size needed, and nothing written. */
    test_key k = make_key(1);
    test_val v = make_val(1, 0);
    CHECK_RC(convcache_insert(c, &k, sizeof k, &v, sizeof v), CONVCACHE_OK);
    unsigned char small[47];
    memset(small, 0x5A, sizeof small);
    n = 0;
    CHECK_RC(convcache_find(c, &k, sizeof k, small, sizeof small, &n), CONVCACHE_E_RANGE);
    CHECK(n == 48);
    for (size_t i = 0; i < sizeof small; i++) CHECK(small[i] == 0x5A);
    CHECK_RC(convcache_find(c, &k, sizeof k, NULL, 0, &n), CONVCACHE_E_RANGE);
    CHECK(n == 48);
    convcache_close(c);
    free(path);
}

static void test_null_and_handles(void) {
    convcache *c = NULL;
    test_key k = make_key(1);
    test_val v = make_val(1, 0);
    size_t n;
    CHECK_RC(convcache_open("/tmp/x", NULL, NULL), CONVCACHE_E_INVALID);
    CHECK_RC(convcache_open_ex(NULL, &c), CONVCACHE_E_INVALID);
    CHECK(c == NULL);
    convcache_options o;
    memset(&o, 0, sizeof o);
    CHECK_RC(convcache_open_ex(&o, &c), CONVCACHE_E_INVALID); /* struct_size 0 */
    o.struct_size = sizeof o + 64;
    CHECK_RC(convcache_open_ex(&o, &c), CONVCACHE_E_INVALID); /* from the future */
    convcache_options_init(&o);
    o.mode = 99;
    CHECK_RC(convcache_open_ex(&o, &c), CONVCACHE_E_INVALID);
    convcache_options_init(&o);
    o.lock_timeout_ms = -1;
    CHECK_RC(convcache_open_ex(&o, &c), CONVCACHE_E_INVALID);

    CHECK_RC(convcache_find(NULL, &k, sizeof k, &v, sizeof v, &n), CONVCACHE_E_INVALID);
    CHECK_RC(convcache_insert(NULL, &k, sizeof k, &v, sizeof v), CONVCACHE_E_INVALID);
    CHECK_RC(convcache_load(NULL), CONVCACHE_E_INVALID);
    CHECK_RC(convcache_save(NULL), CONVCACHE_E_INVALID);
    CHECK_RC(convcache_stats(NULL, NULL), CONVCACHE_E_INVALID);
    convcache_close(NULL);

    char *path = test_path("handles.ccdb");
    CHECK_RC(convcache_open(path, NULL, &c), CONVCACHE_OK);
    CHECK_RC(convcache_find(c, NULL, sizeof k, &v, sizeof v, &n), CONVCACHE_E_INVALID);
    CHECK_RC(convcache_find(c, &k, sizeof k, NULL, sizeof v, &n), CONVCACHE_E_INVALID);
    CHECK_RC(convcache_find(c, &k, sizeof k, &v, sizeof v, NULL), CONVCACHE_E_INVALID);
    CHECK_RC(convcache_insert(c, NULL, sizeof k, &v, sizeof v), CONVCACHE_E_INVALID);
    CHECK_RC(convcache_insert(c, &k, sizeof k, NULL, sizeof v), CONVCACHE_E_INVALID);
    CHECK_RC(convcache_get_or_create(c, &k, sizeof k, NULL, NULL, &v, sizeof v, &n), CONVCACHE_E_INVALID);
    struct convcache_stats st = {0};
    CHECK_RC(convcache_stats(c, &st), CONVCACHE_E_INVALID); /* struct_size not set */
    convcache_close(c);
    /* A closed handle, a double close, and garbage are rejected, not followed. */
    CHECK_RC(convcache_find(c, &k, sizeof k, &v, sizeof v, &n), CONVCACHE_E_HANDLE);
    CHECK_RC(convcache_insert(c, &k, sizeof k, &v, sizeof v), CONVCACHE_E_HANDLE);
    CHECK_RC(convcache_save(c), CONVCACHE_E_HANDLE);
    convcache_close(c);
    convcache *garbage = (convcache *)(uintptr_t)0xdeadbeefcafeULL;
    CHECK_RC(convcache_find(garbage, &k, sizeof k, &v, sizeof v, &n), CONVCACHE_E_HANDLE);
    CHECK_RC(convcache_load(garbage), CONVCACHE_E_HANDLE);
    convcache_close(garbage);
    CHECK(strstr(convcache_last_error(), "not an open handle") != NULL);
    /* A reopened slot does not revive the old handle. */
    convcache *c2;
    CHECK_RC(convcache_open(path, NULL, &c2), CONVCACHE_OK);
    CHECK(c2 != c);
    CHECK_RC(convcache_load(c), CONVCACHE_E_HANDLE);
    CHECK_RC(convcache_load(c2), CONVCACHE_OK);
    convcache_close(c2);
    free(path);
}

static void test_scopes(void) {
    char *path = test_path("scopes.ccdb");
    convcache *a, *b, *d;
    CHECK_RC(convcache_open(path, "H100|driver 580|cudnn 91000", &a), CONVCACHE_OK);
    CHECK_RC(convcache_open(path, "A100|driver 580|cudnn 91000", &b), CONVCACHE_OK);
    CHECK_RC(convcache_open(path, NULL, &d), CONVCACHE_OK); /* "default" */
    test_key k = make_key(42);
    test_val va = make_val(42, 1), vb = make_val(42, 2), got;
    size_t n;
    CHECK_RC(convcache_insert(a, &k, sizeof k, &va, sizeof va), CONVCACHE_OK);
    CHECK_RC(convcache_find(b, &k, sizeof k, &got, sizeof got, &n), 0);
    CHECK_RC(convcache_find(d, &k, sizeof k, &got, sizeof got, &n), 0);
    CHECK_RC(convcache_insert(b, &k, sizeof k, &vb, sizeof vb), CONVCACHE_OK);
    CHECK_RC(convcache_find(a, &k, sizeof k, &got, sizeof got, &n), CONVCACHE_HIT);
    CHECK(memcmp(&got, &va, sizeof va) == 0);
    CHECK_RC(convcache_find(b, &k, sizeof k, &got, sizeof got, &n), CONVCACHE_HIT);
    CHECK(memcmp(&got, &vb, sizeof vb) == 0);
    CHECK_RC(convcache_save(a), CONVCACHE_OK);
    convcache_close(a);
    convcache_close(b);
    convcache_close(d);
    /* After reopening, each scope still sees only its own value. */
    CHECK_RC(convcache_open(path, "A100|driver 580|cudnn 91000", &b), CONVCACHE_OK);
    CHECK_RC(convcache_find(b, &k, sizeof k, &got, sizeof got, &n), CONVCACHE_HIT);
    CHECK(memcmp(&got, &vb, sizeof vb) == 0);
    convcache_close(b);
    CHECK_RC(convcache_open(path, "H100|driver 581|cudnn 91000", &a), CONVCACHE_OK);
    CHECK_RC(convcache_find(a, &k, sizeof k, &got, sizeof got, &n), 0);
    convcache_close(a);
    /* A scope that is too long. */
    static char longscope[CONVCACHE_SCOPE_MAX + 2];
    memset(longscope, 's', CONVCACHE_SCOPE_MAX + 1);
    CHECK_RC(convcache_open(path, longscope, &a), CONVCACHE_E_SIZE);
    CHECK(a == NULL);
    free(path);
}

/* Opening a file that is not ours must fail with the documented code and
 * leave the file exactly as it was. */
static void expect_refused(const char *name, const void *data, size_t len, int want) {
    char *path = test_path(name);
    write_file(path, data, len);
    convcache *c = (convcache *)1;
    CHECK_RC(convcache_open(path, NULL, &c), want);
    CHECK(c == NULL);
    CHECK(strstr(convcache_last_error(), path) != NULL); /* the message names the file */
    static unsigned char back[4096];
    CHECK(read_file(path, back, sizeof back) == len && memcmp(back, data, len) == 0);
    free(path);
}

static void test_bad_files(void) {
    /* A real file's first bytes, to build damaged variants. */
    char *path = test_path("real.ccdb");
    convcache *c;
    CHECK_RC(convcache_open(path, NULL, &c), CONVCACHE_OK);
    convcache_close(c);
    unsigned char hdr[64];
    size_t hl = read_file(path, hdr, sizeof hdr);
    CHECK(hl == 32);

    expect_refused("empty.ccdb", "", 0, CONVCACHE_E_FORMAT);
    expect_refused("truncated.ccdb", hdr, 10, CONVCACHE_E_CORRUPT);
    const char foreign[] = "this is a text file someone put here, not a cache\n";
    expect_refused("foreign.ccdb", foreign, sizeof foreign - 1, CONVCACHE_E_FORMAT);
    unsigned char elf[64] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
    expect_refused("elf.ccdb", elf, sizeof elf, CONVCACHE_E_FORMAT);
    unsigned char newer[32];
    memcpy(newer, hdr, 32);
    newer[8] = 99;   /* format version 99 */
    newer[28] ^= 1; /* sealed by its writer: not the checksum of a version 1 header */
    expect_refused("newer.ccdb", newer, 32, CONVCACHE_E_FORMAT);
    CHECK(strstr(convcache_last_error(), "newer") != NULL);
    unsigned char flipped[32];
    memcpy(flipped, hdr, 32);
    flipped[20] ^= 0x10; /* the created time: only the header checksum notices */
    expect_refused("badsum.ccdb", flipped, 32, CONVCACHE_E_CORRUPT);

    /* A directory, and a path below a regular file. */
    CHECK_RC(convcache_open(test_tmpdir(), NULL, &c), CONVCACHE_E_INVALID);
    char under[600];
    snprintf(under, sizeof under, "%s/sub/cache.ccdb", path); /* path is a file */
    CHECK_RC(convcache_open(under, NULL, &c), CONVCACHE_E_IO);
    CHECK(strstr(convcache_last_error(), "CONVCACHE_PATH") != NULL); /* says what to do */
    free(path);
}

static void test_default_paths(void) {
    convcache *c;
    char want[600];
    struct stat sb;
    /* $CONVCACHE_PATH, with directories created 0700. */
    char *p = test_path("env/a/b/c.ccdb");
    setenv("CONVCACHE_PATH", p, 1);
    CHECK_RC(convcache_open(NULL, NULL, &c), CONVCACHE_OK);
    convcache_close(c);
    CHECK(stat(p, &sb) == 0 && (sb.st_mode & 0777) == 0600);
    snprintf(want, sizeof want, "%s/env/a/b", test_tmpdir());
    CHECK(stat(want, &sb) == 0 && (sb.st_mode & 0777) == 0700);
    unsetenv("CONVCACHE_PATH");
    /* $XDG_CACHE_HOME. */
    char *xdg = test_path("xdg");
    setenv("XDG_CACHE_HOME", xdg, 1);
    CHECK_RC(convcache_open(NULL, NULL, &c), CONVCACHE_OK);
    convcache_close(c);
    snprintf(want, sizeof want, "%s/convcache/cache.ccdb", xdg);
    CHECK(stat(want, &sb) == 0);
    unsetenv("XDG_CACHE_HOME");
    /* ~/.cache. */
    char *home = test_path("home");
    mkdir(home, 0700);
    char *old = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    setenv("HOME", home, 1);
    CHECK_RC(convcache_open(NULL, NULL, &c), CONVCACHE_OK);
    convcache_close(c);
    snprintf(want, sizeof want, "%s/.cache/convcache/cache.ccdb", home);
    CHECK(stat(want, &sb) == 0);
    if (old) setenv("HOME", old, 1);
    free(p);
    free(xdg);
    free(home);
}

/* Runs fn with stderr captured; returns what was written. */
static char *capture_stderr(void (*fn)(void)) {
    static char buf[8192];
    char *tmp = test_path("stderr.txt");
    fflush(stderr);
    int saved = dup(2);
    int fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    fn();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    size_t n = read_file(tmp, buf, sizeof buf - 1);
    buf[n] = 0;
    close(fd);
    free(tmp);
    return buf;
}

static void open_and_use(void) {
    char *path = test_path("envtest.ccdb");
    convcache *c;
    CHECK_RC(convcache_open(path, NULL, &c), CONVCACHE_OK);
    test_key k = make_key(5);
    test_val v = make_val(5, 0);
    CHECK_RC(convcache_insert(c, &k, sizeof k, &v, sizeof v), CONVCACHE_OK);
    convcache_close(c);
    free(path);
}

static void test_env(void) {
    /* CONVCACHE_DISABLE=1: misses, inserts succeed, nothing is written. */
    setenv("CONVCACHE_DISABLE", "1", 1);
    char *path = test_path("disabled/never.ccdb");
    convcache *c;
    CHECK_RC(convcache_open(path, NULL, &c), CONVCACHE_OK);
    test_key k = make_key(3);
    test_val v = make_val(3, 0), got;
    size_t n;
    CHECK_RC(convcache_insert(c, &k, sizeof k, &v, sizeof v), CONVCACHE_OK);
    CHECK_RC(convcache_find(c, &k, sizeof k, &got, sizeof got, &n), 0);
    CHECK_RC(convcache_save(c), CONVCACHE_OK);
    convcache_close(c);
    struct stat sb;
    CHECK(stat(path, &sb) != 0 && errno == ENOENT);
    unsetenv("CONVCACHE_DISABLE");
    free(path);

    /* Nonsense values: one warning line each, and the default. */
    setenv("CONVCACHE_LOCK_TIMEOUT_MS", "banana", 1);
    setenv("CONVCACHE_DISABLE", "maybe", 1);
    setenv("CONVCACHE_MODE", "fast", 1);
    setenv("CONVCACHE_MAX_BYTES", "-5", 1);
    setenv("CONVCACHE_MAX_ENTRIES", "1e9", 1);
    setenv("CONVCACHE_BUILD_TIMEOUT_MS", "0", 1);
    setenv("CONVCACHE_TRUST_SHARED", "perhaps", 1);
    char *err = capture_stderr(open_and_use);
    const char *vars[] = {"CONVCACHE_LOCK_TIMEOUT_MS", "CONVCACHE_DISABLE", "CONVCACHE_MODE",
                          "CONVCACHE_MAX_BYTES", "CONVCACHE_MAX_ENTRIES",
                          "CONVCACHE_BUILD_TIMEOUT_MS", "CONVCACHE_TRUST_SHARED"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        char *at = strstr(err, vars[i]);
        if (!at) fprintf(stderr, "no warning for %s in:\n%s\n", vars[i], err);
        CHECK(at != NULL);
    }
    int lines = 0;
    for (char *s = err; *s; s++) lines += *s == '\n';
    CHECK(lines == (int)(sizeof vars / sizeof *vars)); /* one line each, nothing else */
    /* Warned once per process, not on every open. */
    err = capture_stderr(open_and_use);
    CHECK(err[0] == 0);
    unsetenv("CONVCACHE_LOCK_TIMEOUT_MS");
    unsetenv("CONVCACHE_DISABLE");
    unsetenv("CONVCACHE_MODE");
    unsetenv("CONVCACHE_MAX_BYTES");
    unsetenv("CONVCACHE_MAX_ENTRIES");
    unsetenv("CONVCACHE_BUILD_TIMEOUT_MS");
    unsetenv("CONVCACHE_TRUST_SHARED");
}

/* Permission cases run in a child that re-executes this program as an
 * unprivileged user (root ignores file permissions). */
static int as_nobody(const char *dir) {
    char path[600];
    convcache *c;
    /* A directory this user may not write: a clear error, no crash. */
    snprintf(path, sizeof path, "%s/locked/sub/cache.ccdb", dir);
    CHECK_RC(convcache_open(path, NULL, &c), CONVCACHE_E_ACCESS);
    CHECK(strstr(convcache_last_error(), "locked") != NULL);
    /* Someone else's file: opened read-only, finds work, inserts stay in memory. */
    snprintf(path, sizeof path, "%s/rootfile.ccdb", dir);
    CHECK_RC(convcache_open(path, NULL, &c), CONVCACHE_OK);
    test_key k = make_key(11);
    test_val v = make_val(11, 0), got;
    size_t n;
    CHECK_RC(convcache_find(c, &k, sizeof k, &got, sizeof got, &n), CONVCACHE_HIT);
    CHECK(memcmp(&got, &v, sizeof v) == 0);
    test_key k2 = make_key(12);
    CHECK_RC(convcache_insert(c, &k2, sizeof k2, &v, sizeof v), CONVCACHE_E_READONLY);
    CHECK_RC(convcache_find(c, &k2, sizeof k2, &got, sizeof got, &n), CONVCACHE_HIT);
    CHECK_RC(convcache_save(c), CONVCACHE_E_READONLY);
    struct convcache_stats st = {.struct_size = sizeof st};
    CHECK_RC(convcache_stats(c, &st), CONVCACHE_OK);
    CHECK(st.read_only == 1);
    convcache_close(c);
    /* A file anyone may write is not used: the open succeeds (a host fails
     * open), finds miss, inserts stay in memory, and the reason is given. */
    snprintf(path, sizeof path, "%s/worldfile.ccdb", dir);
    CHECK_RC(convcache_open(path, NULL, &c), CONVCACHE_OK);
    CHECK_RC(convcache_find(c, &k, sizeof k, &got, sizeof got, &n), 0);
    CHECK_RC(convcache_insert(c, &k2, sizeof k2, &v, sizeof v), CONVCACHE_E_READONLY);
    CHECK(strstr(convcache_last_error(), "writable by group or others") != NULL);
    CHECK_RC(convcache_find(c, &k2, sizeof k2, &got, sizeof got, &n), CONVCACHE_HIT);
    CHECK_RC(convcache_stats(c, &st), CONVCACHE_OK);
    CHECK(st.read_only == 1);
    convcache_close(c);
    return 0;
}

static void test_permissions(const char *self) {
    if (geteuid() != 0) {
        fprintf(stderr, "test_permissions: not root; run as root to test other users\n");
        return;
    }
    struct passwd *pw = getpwnam("nobody");
    CHECK(pw != NULL);
    char dir[600], locked[700], rootfile[700];
    snprintf(dir, sizeof dir, "%s/perm", test_tmpdir());
    CHECK(mkdir(dir, 0755) == 0);
    chmod(test_tmpdir(), 0755);
    snprintf(locked, sizeof locked, "%s/locked", dir);
    CHECK(mkdir(locked, 0755) == 0);
    snprintf(rootfile, sizeof rootfile, "%s/rootfile.ccdb", dir);
    convcache *c;
    CHECK_RC(convcache_open(rootfile, NULL, &c), CONVCACHE_OK);
    test_key k = make_key(11);
    test_val v = make_val(11, 0);
    CHECK_RC(convcache_insert(c, &k, sizeof k, &v, sizeof v), CONVCACHE_OK);
    convcache_close(c);
    chmod(rootfile, 0644);
    char worldfile[700];
    snprintf(worldfile, sizeof worldfile, "%s/worldfile.ccdb", dir);
    CHECK_RC(convcache_open(worldfile, NULL, &c), CONVCACHE_OK);
    CHECK_RC(convcache_insert(c, &k, sizeof k, &v, sizeof v), CONVCACHE_OK);
    convcache_close(c);
    chmod(worldfile, 0666);
    pid_t pid = fork();
    if (pid == 0) {
        if (setgid(pw->pw_gid) != 0 || setuid(pw->pw_uid) != 0) _exit(3);
        execl(self, self, "--as-nobody", dir, (char *)NULL);
        _exit(4);
    }
    int status;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--as-nobody") == 0) return as_nobody(argv[2]);
    unsetenv("CONVCACHE_PATH");
    unsetenv("CONVCACHE_DISABLE");
    unsetenv("CONVCACHE_MODE");
    test_versions();
    test_roundtrip();
    test_limits();
    test_null_and_handles();
    test_scopes();
    test_bad_files();
    test_default_paths();
    test_env();
    test_permissions(argv[0]);
    printf("test_api: ok\n");
    return 0;
}
