/* A torture writer: inserts unique keys (acknowledging each that returned 0
 * on fd 3), asks for shared keys with get_or_create, and saves, until it is
 * killed. Keys carry their id; every value is a function of its key, so a
 * verifier can tell a wrong value from a right one. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "convcache.h"

typedef struct { unsigned char b[104]; } key_t_;
typedef struct { unsigned char b[48]; } val_t_;

static key_t_ make_key(uint64_t id) {
    key_t_ k;
    memset(&k, 0, sizeof k);
    memcpy(k.b + 8, &id, 8);
    k.b[28] = 4;
    for (int i = 0; i < 4; i++) k.b[32 + 4 * i] = (unsigned char)(id >> (8 * i)) | 1;
    return k;
}

static val_t_ make_val(uint64_t id) {
    val_t_ v;
    uint64_t x = id * 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < 6; i++) {
        x ^= x >> 29;
        x *= 0xBF58476D1CE4E5B9ull;
        memcpy(v.b + 8 * i, &x, 8);
    }
    return v;
}

static int build(void *user, const void *key, size_t key_len, void *value, size_t cap, size_t *len) {
    (void)user, (void)key_len;
    uint64_t id;
    memcpy(&id, (const char *)key + 8, 8);
    if (cap < sizeof(val_t_)) return -1001;
    usleep((unsigned)(rand() % 1000));
    val_t_ v = make_val(id);
    memcpy(value, &v, sizeof v);
    *len = sizeof v;
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 4) return 2;
    uint64_t writer = strtoull(argv[2], NULL, 10), seq = strtoull(argv[3], NULL, 10);
    srand((unsigned)(getpid() ^ seq));
    convcache *c;
    int rc = convcache_open(argv[1], "torture", &c);
    if (rc != 0) {
        fprintf(stderr, "writer: open: %s: %s\n", convcache_strerror(rc), convcache_last_error());
        return 4;
    }
    for (;;) {
        int r = rand() % 100;
        if (r < 75) {
            uint64_t id = (writer << 40) | seq++;
            key_t_ k = make_key(id);
            val_t_ v = make_val(id);
            rc = convcache_insert(c, &k, sizeof k, &v, sizeof v);
            if (rc == 0 && write(3, &id, sizeof id) != sizeof id) return 5;
            if (rc < 0) {
                fprintf(stderr, "writer: insert: %s: %s\n", convcache_strerror(rc), convcache_last_error());
                return 6;
            }
        } else if (r < 95) {
            uint64_t id = (uint64_t)(rand() % 64); /* shared keys, writer 0 */
            key_t_ k = make_key(id);
            val_t_ got, want = make_val(id);
            size_t n;
            rc = convcache_get_or_create(c, &k, sizeof k, build, NULL, &got, sizeof got, &n);
            if (rc < 0 || n != sizeof got || memcmp(&got, &want, sizeof got) != 0) {
                fprintf(stderr, "writer: get_or_create: rc %d, wrong value\n", rc);
                return 3;
            }
        } else {
            rc = convcache_save(c);
            if (rc != 0 && rc != CONVCACHE_E_LOCK) {
                fprintf(stderr, "writer: save: %s: %s\n", convcache_strerror(rc), convcache_last_error());
                return 7;
            }
        }
    }
}
