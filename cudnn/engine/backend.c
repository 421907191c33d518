/*
 * Which cuDNN: the one the process already has (the descriptors it is given
 * were made by it: another copy would not know them), else the file named
 * by $CONVCACHE_CUDNN_LIBRARY, else libcudnn.so.9 from the loader's path.
 * Looked up once; never closed (cuDNN must not be unloaded under its users).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

#include "engine.h"

static struct cce_backend api, forced;
static int api_ok, api_forced;
static pthread_once_t api_once = PTHREAD_ONCE_INIT;

void cce_backend_use(const struct cce_backend *b) {
    if (!b || !b->create || !b->destroy || !b->finalize || !b->set || !b->get) return;
    forced = *b;
    __atomic_store_n(&api_forced, 1, __ATOMIC_RELEASE);
}

static int resolve(void *h) {
    api.create = (cc_desc_create_fn)dlsym(h, "cudnnBackendCreateDescriptor");
    api.destroy = (cc_desc_destroy_fn)dlsym(h, "cudnnBackendDestroyDescriptor");
    api.finalize = (cc_finalize_fn)dlsym(h, "cudnnBackendFinalize");
    api.set = (cc_set_attr_fn)dlsym(h, "cudnnBackendSetAttribute");
    api.get = (cc_get_attr_fn)dlsym(h, "cudnnBackendGetAttribute");
    return api.create && api.destroy && api.finalize && api.set && api.get;
}

static void load(void) {
    if (__atomic_load_n(&api_forced, __ATOMIC_ACQUIRE)) {
        api = forced;
        api_ok = 1;
        return;
    }
    static const char *const names[] = {"libcudnn.so.9", "libcudnn_graph.so.9", "libcudnn.so.8"};
    const int n = (int)(sizeof names / sizeof names[0]);
    for (int i = 0; i < n; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
        if (h && resolve(h)) {
            api_ok = 1;
            return;
        }
    }
    const char *path = secure_getenv("CONVCACHE_CUDNN_LIBRARY");
    void *h = path && *path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : dlopen(names[0], RTLD_NOW | RTLD_LOCAL);
    api_ok = h && resolve(h);
}

const struct cce_backend *cce_backend(void) {
    pthread_once(&api_once, load);
    return api_ok ? &api : NULL;
}
