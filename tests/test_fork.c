/* fork() after the library is in use: PyTorch forks DataLoader workers. The
 * child must never enter the Go runtime (its threads are gone: a Go call can
 * hang), so every call returns CONVCACHE_E_FORKED at once, under an alarm
 * that would kill a hang. The parent carries on unharmed. Forking while
 * other threads are inside the library is covered too. */
#include "check.h"

#include <pthread.h>
#include <signal.h>

static int builder(void *user, const void *key, size_t key_len, void *value, size_t cap, size_t *len) {
    (void)user, (void)key, (void)key_len, (void)value, (void)cap;
    *len = 0;
    return 0;
}

static void in_child(convcache *c) {
    alarm(60); /* a hang is a failure (every call here returns at once) */
    test_key k = make_key(1);
    test_val v = make_val(1, 0), got;
    size_t n;
    convcache *c2 = (convcache *)1;
    CHECK_RC(convcache_open(test_path("child.ccdb"), NULL, &c2), CONVCACHE_E_FORKED);
    CHECK(c2 == NULL);
    convcache_options o;
    convcache_options_init(&o);
    CHECK_RC(convcache_open_ex(&o, &c2), CONVCACHE_E_FORKED);
    CHECK_RC(convcache_find(c, &k, sizeof k, &got, sizeof got, &n), CONVCACHE_E_FORKED);
    CHECK_RC(convcache_insert(c, &k, sizeof k, &v, sizeof v), CONVCACHE_E_FORKED);
    CHECK_RC(convcache_load(c), CONVCACHE_E_FORKED);
    CHECK_RC(convcache_save(c), CONVCACHE_E_FORKED);
    CHECK_RC(convcache_get_or_create(c, &k, sizeof k, builder, NULL, &got, sizeof got, &n), CONVCACHE_E_FORKED);
    struct convcache_stats st = {.struct_size = sizeof st};
    CHECK_RC(convcache_stats(c, &st), CONVCACHE_E_FORKED);
    char scope[256];
    CHECK_RC(convcache_cudnn_scope(0, scope, sizeof scope), CONVCACHE_E_FORKED);
    CHECK(strstr(convcache_last_error(), "fork") != NULL);
    convcache_close(c); /* a no-op in the child */
    /* Pure C functions keep working. */
    CHECK(strcmp(convcache_version(), CONVCACHE_VERSION_STRING) == 0);
    CHECK(strcmp(convcache_strerror(CONVCACHE_E_FORKED), "called in a forked child") == 0);
    _exit(0);
}

static void fork_and_check(convcache *c) {
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) in_child(c);
    int st;
    CHECK(waitpid(pid, &st, 0) == pid);
    if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0))
        fprintf(stderr, "child status %d (signal %d)\n", st, WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static volatile int stop;

static void *hammer(void *arg) {
    convcache *c = arg;
    for (uint32_t i = 0; !stop; i++) {
        test_key k = make_key(1000 + i % 500);
        test_val v = make_val(1000 + i % 500, 0), got;
        size_t n;
        if (convcache_find(c, &k, sizeof k, &got, sizeof got, &n) != CONVCACHE_HIT)
            CHECK_RC(convcache_insert(c, &k, sizeof k, &v, sizeof v), CONVCACHE_OK);
    }
    return NULL;
}

int main(void) {
    char *path = test_path("fork.ccdb");
    convcache *c;
    CHECK_RC(convcache_open(path, NULL, &c), CONVCACHE_OK);
    test_key k = make_key(1);
    test_val v = make_val(1, 0), got;
    size_t n;
    CHECK_RC(convcache_insert(c, &k, sizeof k, &v, sizeof v), CONVCACHE_OK);
    CHECK_RC(convcache_find(c, &k, sizeof k, &got, sizeof got, &n), CONVCACHE_HIT);

    fork_and_check(c);

    /* Fork while two threads are inside the library. */
    pthread_t t[2];
    for (int i = 0; i < 2; i++) CHECK(pthread_create(&t[i], NULL, hammer, c) == 0);
    for (int i = 0; i < 20; i++) {
        usleep(2000);
        fork_and_check(c);
    }
    stop = 1;
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);

    /* The parent is unharmed. */
    CHECK_RC(convcache_find(c, &k, sizeof k, &got, sizeof got, &n), CONVCACHE_HIT);
    test_key k2 = make_key(2);
    CHECK_RC(convcache_insert(c, &k2, sizeof k2, &v, sizeof v), CONVCACHE_OK);
    CHECK_RC(convcache_save(c), CONVCACHE_OK);
    convcache_close(c);
    printf("test_fork: ok (21 forks, every call in the children returned CONVCACHE_E_FORKED)\n");
    return 0;
}
