/* CHECK for C tests that do not link libconvcache (tests/check.h's also
 * prints the library's last error): prints the failing check and exits 1. */
#ifndef CONVCACHE_TEST_CHECK_PLAIN_H
#define CONVCACHE_TEST_CHECK_PLAIN_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

#endif
