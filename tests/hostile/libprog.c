/*
 * The library's side of the hostile-file harness (tests/hostile/harness):
 * open a cache file another user may have planted, find, insert, save
 * (compacting: the harness sets CONVCACHE_COMPACT_JOURNAL and
 * CONVCACHE_MAX_BYTES small), load, close, reopen and find again.
 *
 *   libprog FILE SCOPE
 *
 * Exits 0 when every call returned a documented status and every entry it
 * inserted reads back exactly; 1 with the failing step otherwise. A crash,
 * an abort or a hang is the harness's to see.
 */
#include "../check.h"

#define N 20

static void key_of(int i, char *k, size_t cap) { snprintf(k, cap, "libprog-key-%02d", i); }
static void value_of(int i, char *v, size_t cap) { snprintf(v, cap, "libprog-value-%02d-%s", i, "x"); }

/* find_all checks every inserted entry reads back exactly. */
static void find_all(convcache_handle *h, const char *when) {
    for (int i = 0; i < N; i++) {
        char k[64], want[64], got[64];
        size_t n = 0;
        key_of(i, k, sizeof k);
        value_of(i, want, sizeof want);
        int rc = convcache_find(h, k, strlen(k), got, sizeof got, &n);
        if (rc != CONVCACHE_HIT || n != strlen(want) || memcmp(got, want, n) != 0) {
            fprintf(stderr, "libprog: %s: find %s returned %d (%s), %zu bytes\n", when, k, rc,
                    convcache_strerror(rc), n);
            exit(1);
        }
    }
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: libprog FILE SCOPE\n");
        return 2;
    }
    convcache_handle *h = NULL;
    CHECK_RC(convcache_open(argv[1], argv[2], &h), CONVCACHE_OK);
    /* Keys the classes hold, keys they do not, and a key of every length
     * class: each call must return a hit, a miss or E_RANGE, nothing else. */
    const char *probes[] = {"before", "after", "k", "own", "missing", "inserted", "bomb-00000000",
                            "max-00000000"};
    char small[8];
    for (size_t i = 0; i < sizeof probes / sizeof *probes; i++) {
        size_t n = 0;
        int rc = convcache_find(h, probes[i], strlen(probes[i]), small, sizeof small, &n);
        CHECK(rc == 0 || rc == CONVCACHE_HIT || rc == CONVCACHE_E_RANGE);
    }
    for (int i = 0; i < N; i++) {
        char k[64], v[64];
        key_of(i, k, sizeof k);
        value_of(i, v, sizeof v);
        CHECK_RC(convcache_insert(h, k, strlen(k), v, strlen(v)), CONVCACHE_OK);
    }
    find_all(h, "after insert");
    CHECK_RC(convcache_save(h), CONVCACHE_OK);
    CHECK_RC(convcache_load(h), CONVCACHE_OK);
    find_all(h, "after save");
    struct convcache_stats st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    CHECK_RC(convcache_stats(h, &st), CONVCACHE_OK);
    convcache_close(h);
    CHECK_RC(convcache_open(argv[1], argv[2], &h), CONVCACHE_OK);
    find_all(h, "after reopen");
    convcache_close(h);
    printf("compactions %llu\n", (unsigned long long)st.compactions);
    return 0;
}
