/*
 * Runs a command and reports its peak resident memory and its time, for the
 * hostile-file harness (tests/hostile/harness).
 *
 *   rss TIMEOUT_MS COMMAND [ARGS...]
 *
 * The command runs in its own process group with stdout and stderr as
 * given. When it ends, one line goes to file descriptor 3:
 *
 *   maxrss_kb=N ms=N exit=N        (or signal=N, or timeout=1)
 *
 * ru_maxrss is taken from wait4. It is measured here, in a small C process,
 * rather than by a Go parent: a child that execs keeps the high-water mark
 * of the memory it was forked from (Go forks with the parent's address
 * space), which would add the harness's own size to every figure. On a
 * timeout the whole process group is killed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: rss TIMEOUT_MS COMMAND [ARGS...]\n");
        return 2;
    }
    FILE *out = fdopen(3, "w");
    if (!out) {
        perror("rss: file descriptor 3");
        return 2;
    }
    long timeout = atol(argv[1]);
    double start = now_ms();
    pid_t pid = fork();
    if (pid < 0) {
        perror("rss: fork");
        return 2;
    }
    if (pid == 0) {
        setpgid(0, 0);
        close(3);
        execvp(argv[2], argv + 2);
        perror("rss: exec");
        _exit(127);
    }
    setpgid(pid, pid);
    int status = 0, timed_out = 0;
    struct rusage ru;
    for (;;) {
        pid_t r = wait4(pid, &status, WNOHANG, &ru);
        if (r == pid) break;
        if (r < 0 && errno != EINTR) {
            perror("rss: wait4");
            return 2;
        }
        if (!timed_out && now_ms() - start > timeout) {
            timed_out = 1;
            kill(-pid, SIGKILL);
        }
        struct timespec d = {0, 2 * 1000 * 1000};
        nanosleep(&d, NULL);
    }
    if (timed_out) kill(-pid, SIGKILL); /* anything it left behind */
    fprintf(out, "maxrss_kb=%ld ms=%.0f ", ru.ru_maxrss, now_ms() - start);
    if (timed_out)
        fprintf(out, "timeout=1\n");
    else if (WIFSIGNALED(status))
        fprintf(out, "signal=%d\n", WTERMSIG(status));
    else
        fprintf(out, "exit=%d\n", WEXITSTATUS(status));
    fclose(out);
    return 0;
}
