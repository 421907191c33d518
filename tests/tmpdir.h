/* The temporary directory of a C or C++ test: $TMPDIR/<prefix>-XXXXXX (or
 * under /tmp), made on first use and removed with everything in it when the
 * process that made it exits: by exit() (a failed CHECK too), or by SIGINT,
 * SIGTERM, SIGHUP or SIGALRM (an alarm() watchdog). A forked child never
 * removes it; a child that execs a test program gets a directory of its own.
 * Included by tests/check.h, tests/cpp/check.hpp and tests/cpp/test_dynamic.c. */
#ifndef CONVCACHE_TEST_TMPDIR_H
#define CONVCACHE_TEST_TMPDIR_H

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static char test_dir_[256];
static pid_t test_dir_owner_;

/* Async-signal-safe (it also runs from the signal handler): fork and exec
 * rm rather than walk the tree. */
static inline void test_remove_dir_(void) {
    if (!test_dir_[0] || getpid() != test_dir_owner_) return;
    pid_t pid = fork();
    if (pid == 0) {
        execl("/bin/rm", "rm", "-rf", test_dir_, (char *)NULL);
        _exit(127);
    }
    if (pid > 0) waitpid(pid, NULL, 0);
    test_dir_[0] = 0;
}

static inline void test_on_signal_(int sig) {
    test_remove_dir_();
    signal(sig, SIG_DFL);
    raise(sig);
}

static inline const char *test_tmpdir_named(const char *prefix) {
    if (!test_dir_[0]) {
        const char *base = getenv("TMPDIR");
        snprintf(test_dir_, sizeof test_dir_, "%s/%s-XXXXXX", base && *base ? base : "/tmp", prefix);
        if (!mkdtemp(test_dir_)) {
            perror("mkdtemp");
            exit(1);
        }
        test_dir_owner_ = getpid();
        atexit(test_remove_dir_);
        const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGALRM};
        for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
            struct sigaction sa;
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = test_on_signal_;
            sa.sa_flags = SA_ONSTACK; /* the signal may land on a Go thread */
            sigaction(sigs[i], &sa, NULL);
        }
    }
    return test_dir_;
}

#endif
