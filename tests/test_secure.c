/* A privileged host: a set-user-ID copy of this program, run by another
 * user, has AT_SECURE set, and its environment belongs to that user. Every
 * CONVCACHE_* variable (and HOME) must be ignored: CONVCACHE_CUDA_LIBRARY
 * must not load the caller's library (its constructor would run with the
 * program's privileges), CONVCACHE_PATH and CONVCACHE_LOG must not name
 * files the program creates, and the run-time loader must ignore
 * CONVCACHE_LIBRARY.
 *
 * Needs root (to make the set-user-ID copy); prints why and passes
 * otherwise. */
#include "check.h" /* first: it sets the feature macros */

#include <libgen.h>
#include <pwd.h>
#include <sys/auxv.h>

static const char *dir;
static char mark[600], victim[600], logpath[600], own[600];

/* The child: set-user-ID root, run by nobody. */
static int child(void) {
    CHECK(getauxval(AT_SECURE) != 0);
    char buf[512];
    int rc = convcache_cudnn_scope(0, buf, sizeof buf);
    CHECK(rc != 3 || strcmp(buf, "env") != 0); /* $CONVCACHE_SCOPE ignored */
    CHECK(access(mark, F_OK) != 0);            /* the caller's library never loaded */
    convcache *c;
    /* No usable default path: CONVCACHE_PATH, XDG_CACHE_HOME and HOME are
     * the caller's. */
    CHECK_RC(convcache_open(NULL, NULL, &c), CONVCACHE_E_INVALID);
    CHECK(strstr(convcache_last_error(), "AT_SECURE") != NULL);
    CHECK(access(victim, F_OK) != 0);
    /* An explicit path works; the caller's log and mode do not apply. */
    CHECK_RC(convcache_open(own, NULL, &c), CONVCACHE_OK);
    test_key k = make_key(1);
    test_val v = make_val(1, 0);
    CHECK_RC(convcache_insert(c, &k, sizeof k, &v, sizeof v), CONVCACHE_OK); /* not off */
    convcache_close(c);
    CHECK(access(logpath, F_OK) != 0);
    printf("test_secure child: ok\n");
    return 0;
}

/* Copies src to dst, mode 04755 (set-user-ID; root owns it). */
static void copy_setuid(const char *src, const char *dst) {
    static char buf[1 << 16];
    int in = open(src, O_RDONLY), out = open(dst, O_WRONLY | O_CREAT | O_EXCL, 0755);
    CHECK(in >= 0 && out >= 0);
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0) CHECK(write(out, buf, n) == n);
    close(in);
    close(out);
    CHECK(chmod(dst, 04755) == 0);
}

/* Runs prog as nobody with the caller's hostile environment; returns its
 * exit status. */
static int run_as_nobody(const char *prog, const char *evil) {
    struct passwd *pw = getpwnam("nobody");
    CHECK(pw != NULL);
    char e1[700], e2[700], e3[700], e4[700], e5[700];
    snprintf(e1, sizeof e1, "CONVCACHE_CUDA_LIBRARY=%s", evil);
    snprintf(e2, sizeof e2, "CONVCACHE_LIBRARY=%s", evil);
    snprintf(e3, sizeof e3, "CONVCACHE_TEST_MARK=%s", mark);
    snprintf(e4, sizeof e4, "CONVCACHE_PATH=%s", victim);
    snprintf(e5, sizeof e5, "CONVCACHE_LOG=%s", logpath);
    char *envp[] = {e1, e2, e3, e4, e5, "CONVCACHE_CUDNN_LIBRARY=/nonexistent/libcudnn.so",
                    "CONVCACHE_VERBOSE=1", "CONVCACHE_MODE=off", "CONVCACHE_SCOPE=env",
                    "HOME=/root", "XDG_CACHE_HOME=/root/.cache", NULL};
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        if (setgid(pw->pw_gid) != 0 || setuid(pw->pw_uid) != 0) _exit(3);
        char *argv[] = {(char *)prog, "--child", (char *)dir, NULL};
        execve(prog, argv, envp);
        _exit(4);
    }
    int st;
    CHECK(waitpid(pid, &st, 0) == pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void paths(void) {
    snprintf(mark, sizeof mark, "%s/evil-constructor-ran", dir);
    snprintf(victim, sizeof victim, "%s/victim.ccdb", dir);
    snprintf(logpath, sizeof logpath, "%s/victim.log", dir);
    snprintf(own, sizeof own, "%s/own.ccdb", dir);
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--child") == 0) {
        dir = argv[2];
        paths();
        return child();
    }
    if (geteuid() != 0) {
        printf("test_secure: not root, cannot make a set-user-ID program; skipped\n");
        return 0;
    }
    dir = test_tmpdir();
    CHECK(chmod(dir, 01777) == 0); /* like /tmp: the unprivileged control run may write */
    paths();
    char self[512], bindir[512], evil[600], dyn[600], prog[600], dynprog[600];
    CHECK(realpath(argv[0], self) != NULL);
    snprintf(bindir, sizeof bindir, "%s", self);
    snprintf(evil, sizeof evil, "%s/libccevil.so", dirname(bindir));
    snprintf(dyn, sizeof dyn, "%s/test_secure_dyn", bindir);
    CHECK(access(evil, R_OK) == 0 && access(dyn, X_OK) == 0);

    /* Control: run unprivileged, the evil library is loaded (the test can
     * tell). */
    snprintf(prog, sizeof prog, "%s/plain", dir);
    copy_setuid(dyn, prog);
    CHECK(chmod(prog, 0755) == 0);
    CHECK(run_as_nobody(prog, evil) != 0);
    CHECK(access(mark, F_OK) == 0);
    CHECK(unlink(mark) == 0);

    snprintf(prog, sizeof prog, "%s/test_secure", dir);
    copy_setuid(self, prog);
    CHECK_RC(run_as_nobody(prog, evil), 0);
    snprintf(dynprog, sizeof dynprog, "%s/test_secure_dyn", dir);
    copy_setuid(dyn, dynprog);
    CHECK_RC(run_as_nobody(dynprog, evil), 0);
    CHECK(access(mark, F_OK) != 0);
    printf("test_secure: ok\n");
    return 0;
}
