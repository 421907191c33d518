/*
 * glibc_floor.h - binds the wheel's binaries to glibc 2.17's symbol
 * versions (the manylinux2014 floor) while they are built with a newer
 * glibc's headers and libraries (Debian 12's 2.36).
 *
 * mk/wheel.mk forces this header into every C file of the wheel's build
 * (-include, CGO_CFLAGS too, so Go's runtime/cgo and net get it). glibc
 * 2.32 to 2.34 moved these functions from libpthread, libdl and libresolv
 * into libc and gave them new versions; libc still carries the old versions
 * as compatibility symbols, the same functions with the same ABI. Each
 * .symver below makes a reference bind to the old version, which an old
 * glibc finds in libpthread.so.0, libdl.so.2 or libresolv.so.2 (the wheel
 * links those with --no-as-needed; on glibc >= 2.34 they are empty stubs).
 *
 * Only what Go's runtime and net packages and convcache's C code call is
 * listed: wheel/check_elf.py fails the build on any reference above the
 * floor, naming the symbol, so a new one is added here, never missed.
 * The executable's start-up (__libc_start_main) is wheel/libc_start.c.
 */
#ifndef CONVCACHE_GLIBC_FLOOR_H
#define CONVCACHE_GLIBC_FLOOR_H
#ifndef __ASSEMBLER__ /* runtime/cgo's .S files get CGO_CFLAGS too */

#if defined(__x86_64__)
#define CONVCACHE_GLIBC_BASE "GLIBC_2.2.5"
#elif defined(__aarch64__)
#define CONVCACHE_GLIBC_BASE "GLIBC_2.17"
#else
#error "glibc_floor.h: no glibc base version known for this architecture"
#endif

#define CONVCACHE_GLIBC_PIN(sym, old) __asm__(".symver " #sym "," #old "@" CONVCACHE_GLIBC_BASE)

/* libpthread until 2.32 (pthread_sigmask, pthread_getattr_np) or 2.34. */
CONVCACHE_GLIBC_PIN(pthread_create, pthread_create);
CONVCACHE_GLIBC_PIN(pthread_key_create, pthread_key_create);
CONVCACHE_GLIBC_PIN(pthread_setspecific, pthread_setspecific);
CONVCACHE_GLIBC_PIN(pthread_attr_getstack, pthread_attr_getstack);
CONVCACHE_GLIBC_PIN(pthread_attr_getstacksize, pthread_attr_getstacksize);
CONVCACHE_GLIBC_PIN(pthread_getattr_np, pthread_getattr_np);
CONVCACHE_GLIBC_PIN(pthread_sigmask, pthread_sigmask);
CONVCACHE_GLIBC_PIN(pthread_once, pthread_once);
CONVCACHE_GLIBC_PIN(pthread_join, pthread_join);
/* libdl until 2.34. */
CONVCACHE_GLIBC_PIN(dlopen, dlopen);
CONVCACHE_GLIBC_PIN(dlsym, dlsym);
CONVCACHE_GLIBC_PIN(dlerror, dlerror);
CONVCACHE_GLIBC_PIN(dladdr, dladdr);
CONVCACHE_GLIBC_PIN(dlclose, dlclose);
/* libdl until 2.34 too, added in 2.3.3 (the interposer's dlsym.c). */
#if defined(__x86_64__)
#define CONVCACHE_GLIBC_2_3_3 "GLIBC_2.3.3"
#else
#define CONVCACHE_GLIBC_2_3_3 CONVCACHE_GLIBC_BASE
#endif
__asm__(".symver dladdr1,dladdr1@" CONVCACHE_GLIBC_2_3_3);
__asm__(".symver dlinfo,dlinfo@" CONVCACHE_GLIBC_2_3_3);
/* libresolv until 2.34, where resolv.h named it __res_search (Go's
 * resolver calls it through cgo). */
CONVCACHE_GLIBC_PIN(res_search, __res_search);

#endif /* __ASSEMBLER__ */
#endif
