/* The run-time loader under AT_SECURE (tests/test_secure.c runs it set-
 * user-ID): $CONVCACHE_LIBRARY is ignored, so another user's library is
 * never loaded into a privileged process. Built with -std=c11 and no
 * feature macros: convcache_dynamic.h must not need _GNU_SOURCE. */
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
    printf("test_secure_dyn: ok (%s)\n", convcache_dynamic_available() ? "library loaded" : why);
    return 0;
}
