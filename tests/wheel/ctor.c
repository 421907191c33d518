/* Built the way the wheel's convcache command is (glibc_floor.h,
 * -Wl,--wrap=__libc_start_main and libc_start.a): its constructor must run
 * exactly once, and main must get its arguments (tests/wheel/run.sh). */
#include <stdio.h>
#include <string.h>

static int runs;

__attribute__((constructor)) static void count(int argc, char **argv, char **envp) {
    (void)argc;
    (void)argv;
    (void)envp;
    runs++;
}

int main(int argc, char **argv) {
    printf("constructor ran %d time%s; argc %d\n", runs, runs == 1 ? "" : "s", argc);
    return runs == 1 && argc == 3 && strcmp(argv[2], "two") == 0 ? 0 : 1;
}
