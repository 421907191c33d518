/* A library another user controls, for tests/test_secure.c: loading it
 * runs its constructor, which leaves a mark (the file named by
 * CONVCACHE_TEST_MARK). A privileged program must never load it because
 * of an environment variable. */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void mark(void) {
    const char *p = getenv("CONVCACHE_TEST_MARK");
    if (p) {
        int fd = open(p, O_WRONLY | O_CREAT, 0644);
        if (fd >= 0) close(fd);
    }
}
