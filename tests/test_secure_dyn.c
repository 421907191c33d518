/* The run-time loader under AT_SECURE (tests/test_secure.c runs it set-
 * user-ID): $CONVCACHE_LIBRARY is ignored, so another user's library is
 * never loaded into a privileged process; the installation's directory,
 * compiled in (CONVCACHE_INSTALL_LIBDIR, the build directory: mk/core.mk
 * gives no run path), is still tried: the library loads from it, or the
 * reason names it (where the user the test runs as cannot read it). Built
 * with -std=c11 and no feature macros: convcache_dynamic.h must not need
 * _GNU_SOURCE. */
#include <stdio.h>
#include <string.h>

#include "convcache_dynamic.h"

int main(void) {
    /* Whether the real library loads does not matter here; the evil one
     * must not. */
    const char *why = convcache_dynamic_error();
    if (strstr(why, "evil")) {
        fprintf(stderr, "test_secure_dyn: tried $CONVCACHE_LIBRARY: %s\n", why);
        return 1;
    }
#ifdef CONVCACHE_INSTALL_LIBDIR
    if (!convcache_dynamic_available() && !strstr(why, CONVCACHE_INSTALL_LIBDIR "/libconvcache.so.1")) {
        fprintf(stderr, "test_secure_dyn: did not try the installation's directory: %s\n", why);
        return 1;
    }
#endif
    printf("test_secure_dyn: ok (%s)\n", convcache_dynamic_available() ? "library loaded" : why);
    return 0;
}
