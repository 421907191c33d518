/* A consumer of the installed package (C): insert, then find through a
 * second handle. Built linked (convcache::convcache, pkg-config) and with
 * the run-time loader (convcache::dynamic defines CONVCACHE_DYNAMIC).
 * Exits 0 when the value comes back. */
#include <stdio.h>
#include <string.h>

#include <convcache.h>

int main(void) {
    convcache *c = NULL;
    int rc = convcache_open(NULL, "consumer", &c); /* $CONVCACHE_PATH */
    if (rc < 0) {
        fprintf(stderr, "open: %s: %s\n", convcache_strerror(rc), convcache_last_error());
        return 1;
    }
    if (convcache_insert(c, "conv:3x3", 8, "winograd", 8) < 0) return 1;
    convcache_close(c);
    if (convcache_open(NULL, "consumer", &c) < 0) return 1;
    char v[16];
    size_t n = 0;
    rc = convcache_find(c, "conv:3x3", 8, v, sizeof v, &n);
    convcache_close(c);
    if (rc != CONVCACHE_HIT || n != 8 || memcmp(v, "winograd", 8) != 0) {
        fprintf(stderr, "find: got %d\n", rc);
        return 1;
    }
#ifdef CONVCACHE_DYNAMIC
    printf("consumer (C, run-time loaded): convcache %s: found the value\n", convcache_version());
#else
    printf("consumer (C): convcache %s: found the value\n", convcache_version());
#endif
    return convcache_version_number() == CONVCACHE_VERSION_NUMBER ? 0 : 1;
}
