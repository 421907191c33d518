/*
 * A libcudnn.so.9 whose backend functions do nothing but return success:
 * the floor under which the interposer's cost on cudnnBackendExecute is
 * measured (bench/v8/exec_overhead.c). Never used for anything else.
 */
#include <stddef.h>
#include <stdint.h>

static int descs[1 << 16];
static int next_desc;

size_t cudnnGetVersion(void) { return 91300; }
int cudnnBackendCreateDescriptor(int type, void **d) {
    (void)type;
    *d = &descs[next_desc++ & 0xFFFF];
    return 0;
}
int cudnnBackendDestroyDescriptor(void *d) { return d ? 0 : 2000; }
int cudnnBackendFinalize(void *d) { return d ? 0 : 2000; }
int cudnnBackendSetAttribute(void *d, int n, int t, int64_t c, const void *e) {
    (void)n, (void)t, (void)c, (void)e;
    return d ? 0 : 2000;
}
int cudnnBackendGetAttribute(void *d, int n, int t, int64_t r, int64_t *c, void *e) {
    (void)n, (void)t, (void)r, (void)e;
    if (c) *c = 0;
    return d ? 0 : 2000;
}
int cudnnBackendExecute(void *h, void *plan, void *pack) {
    (void)h, (void)pack;
    return plan ? 0 : 2000;
}
/* The same function under a name the interposer does not redirect: where
 * exec_overhead takes the real execute from (a dlsym of cudnnBackendExecute
 * in this library's handle is the interposer's under it). */
int fake_cudnn_execute(void *h, void *plan, void *pack) __attribute__((alias("cudnnBackendExecute")));
