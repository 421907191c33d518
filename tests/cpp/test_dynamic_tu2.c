/* A second translation unit of test_dynamic: it includes the dynamic header
 * on its own (convcache_dynamic.h alone), so it has its own loader state;
 * the missing-library warning must still be printed once per program. */
#include <string.h>

#include "convcache_dynamic.h"

int tu2_find_misses(void);
const char *tu2_version(void);

int tu2_find_misses(void) {
    convcache *c = NULL;
    if (convcache_open(NULL, "tu2", &c) != CONVCACHE_OK) return -1;
    char v[8];
    size_t n = 0;
    int rc = convcache_find(c, "k", 1, v, sizeof v, &n);
    convcache_close(c);
    return rc == 0 && convcache_dynamic_available() == 0 ? 1 : 0;
}

const char *tu2_version(void) { return convcache_version(); }
