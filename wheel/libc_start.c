/*
 * libc_start.c - the start-up of the wheel's convcache executable on glibc
 * 2.17 and later (see glibc_floor.h for the rest of the floor).
 *
 * Since glibc 2.34, crt1.o calls __libc_start_main@GLIBC_2.34 with no
 * init function: libc runs the program's constructors itself. An older
 * glibc has no such version, and its __libc_start_main runs only what the
 * init argument runs. mk/wheel.mk links the executable with
 * -Wl,--wrap=__libc_start_main, so crt1.o calls the function below, which
 * calls the old version with an init function that does what glibc's
 * __libc_csu_init did: _init, then every .init_array entry. glibc >= 2.34
 * keeps this contract for old binaries (a non-NULL init is called, and
 * libc then runs no constructors of the program itself), so they run once
 * on either (checked by tests/wheel/run.sh on this machine's glibc).
 * DT_PREINIT_ARRAY and the destructors are the dynamic loader's, as before.
 */
#include <stddef.h>

#include "glibc_floor.h"

typedef int (*convcache_main_fn)(int, char **, char **);
typedef void (*convcache_init_fn)(int, char **, char **);

extern void _init(void);
extern convcache_init_fn __init_array_start[] __attribute__((visibility("hidden")));
extern convcache_init_fn __init_array_end[] __attribute__((visibility("hidden")));

int convcache_libc_start_main_old(convcache_main_fn main, int argc, char **argv, convcache_init_fn init,
                                  void (*fini)(void), void (*rtld_fini)(void), void *stack_end);
__asm__(".symver convcache_libc_start_main_old,__libc_start_main@" CONVCACHE_GLIBC_BASE);

static void convcache_csu_init(int argc, char **argv, char **envp) {
    _init();
    size_t n = (size_t)(__init_array_end - __init_array_start);
    for (size_t i = 0; i < n; i++) __init_array_start[i](argc, argv, envp);
}

__attribute__((visibility("hidden"))) int __wrap___libc_start_main(convcache_main_fn main, int argc, char **argv,
                                                                   convcache_init_fn init, void (*fini)(void),
                                                                   void (*rtld_fini)(void), void *stack_end) {
    (void)init; /* NULL from crt1.o of glibc >= 2.34 */
    (void)fini;
    return convcache_libc_start_main_old(main, argc, argv, convcache_csu_init, NULL, rtld_fini, stack_end);
}
