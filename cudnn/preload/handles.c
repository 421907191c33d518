/*
 * Which cache a call uses: libconvcache, loaded from this library's own
 * directory on the first call that needs it (never in a child forked after
 * it was loaded), and one handle per scope: $CONVCACHE_SCOPE for every
 * device when it is set (no device is looked up, so no CUDA driver is
 * needed), else the fingerprint of the device the handle's stream belongs
 * to, with that device's memory for the rules of perf.c.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convcache.h"
#include "preload.h"

#define CC_STR_(x) #x
#define CC_STR(x) CC_STR_(x)

/* ---- loading libconvcache ----------------------------------------------- */

enum { LIB_NONE, LIB_LOADING, LIB_READY, LIB_FAILED, LIB_FORKED };
static int lib_state = LIB_NONE;
static pthread_mutex_t lib_mu = PTHREAD_MUTEX_INITIALIZER;

struct convcache_api api;
static char own_dir[PATH_MAX];

/* The handles, one per distinct scope, and which one each device uses. */
#define MAX_DEVICES 64
#define MAX_SCOPES 16
enum { H_NONE, H_READY, H_FAILED };
static struct {
    int state;
    convcache *c;
    size_t memory; /* cuDeviceTotalMem; 0 when unknown */
} devices[MAX_DEVICES];
static struct {
    char *scope;
    convcache *c;
} scopes[MAX_SCOPES];

/* $CONVCACHE_SCOPE, read when the library loads: when set, the scope of
 * every device, and no device is looked up. */
static char env_scope[CONVCACHE_SCOPE_MAX + 1];
static int env_scope_set;
static struct {
    int state;
    convcache *c;
} env_scope_handle;

static void atfork_child(void) {
    counters_forked();
    int s = __atomic_load_n(&lib_state, __ATOMIC_RELAXED);
    if (s == LIB_LOADING || s == LIB_READY) {
        __atomic_store_n(&lib_state, LIB_FORKED, __ATOMIC_RELAXED);
        return;
    }
    /* The Go runtime never started in the parent: this child may load it.
     * A parent thread may have held the mutex at the fork. */
    pthread_mutex_init(&lib_mu, NULL);
}

__attribute__((constructor)) static void preload_init(void) {
    Dl_info info;
    if (dladdr((void *)&preload_init, &info) && info.dli_fname) {
        /* Resolve a relative LD_PRELOAD path now: the program may chdir. */
        char path[PATH_MAX];
        if (info.dli_fname[0] == '/' || !realpath(info.dli_fname, path))
            snprintf(path, sizeof path, "%s", info.dli_fname);
        char *slash = strrchr(path, '/');
        if (slash) {
            *slash = 0;
            snprintf(own_dir, sizeof own_dir, "%s", path[0] ? path : "/");
        }
    }
    pthread_atfork(NULL, NULL, atfork_child);
}

/* load_library dlopens libconvcache from our directory; lib_mu is held. */
static void load_library(void) {
    __atomic_store_n(&lib_state, LIB_LOADING, __ATOMIC_RELEASE);
    COUNT(library_loads);
    const char *scope = env_get("CONVCACHE_SCOPE");
    if (scope && scope[0]) {
        env_scope_set = 1;
        if (strlen(scope) >= sizeof env_scope) {
            warn_once(W_SCOPE, "CONVCACHE_SCOPE is longer than %d bytes; find calls run "
                      "uncached", CONVCACHE_SCOPE_MAX);
            env_scope_handle.state = H_FAILED;
        } else {
            memcpy(env_scope, scope, strlen(scope) + 1);
        }
    }
    static const char *const names[] = {"libconvcache.so." CC_STR(CONVCACHE_VERSION_MAJOR),
                                        "libconvcache.so"};
    char path[PATH_MAX + 64], first_err[PATH_MAX + 256] = "";
    void *h = NULL;
    if (!own_dir[0]) {
        snprintf(first_err, sizeof first_err, "cannot tell this library's own directory");
    } else {
        for (int i = 0; i < 2 && !h; i++) {
            snprintf(path, sizeof path, "%s/%s", own_dir, names[i]);
            h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
            if (!h && i == 0) snprintf(first_err, sizeof first_err, "%s", dlerror());
        }
    }
    if (h) {
        api.open = (int (*)(const char *, const char *, convcache **))dlsym(h, "convcache_open");
        api.get_or_create = (int (*)(convcache *, const void *, size_t, convcache_builder, void *,
                                     void *, size_t, size_t *))dlsym(h, "convcache_get_or_create");
        api.insert = (int (*)(convcache *, const void *, size_t, const void *, size_t))dlsym(
            h, "convcache_insert");
        api.find = (int (*)(convcache *, const void *, size_t, void *, size_t, size_t *))dlsym(
            h, "convcache_find");
        api.cudnn_scope = (int (*)(int, char *, size_t))dlsym(h, "convcache_cudnn_scope");
        api.last_error = (const char *(*)(void))dlsym(h, "convcache_last_error");
        if (!api.open || !api.get_or_create || !api.insert || !api.find || !api.cudnn_scope ||
            !api.last_error) {
            snprintf(first_err, sizeof first_err, "%s lacks convcache_cudnn_scope or another "
                     "function (an older library?)", path);
            h = NULL;
        }
    }
    if (!h) {
        warn_once(W_LOAD, "cannot load libconvcache.so from %s (%s); cuDNN find calls run "
                  "uncached", own_dir[0] ? own_dir : "?", first_err);
        __atomic_store_n(&lib_state, LIB_FAILED, __ATOMIC_RELEASE);
        return;
    }
    __atomic_store_n(&lib_state, LIB_READY, __ATOMIC_RELEASE);
}

/* ---- the handle's device ------------------------------------------------ */

/* handle_device sets *dev to the CUDA device of the handle's stream (the
 * current device when the stream is the default one). Returns 0 or -1. */
static int handle_device(cudnnHandle_t handle, int *dev) {
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!cuda) return -1;
    cu_ctx_get_device_fn get_device = (cu_ctx_get_device_fn)dlsym(cuda, "cuCtxGetDevice");
    cu_stream_get_ctx_fn stream_ctx = (cu_stream_get_ctx_fn)dlsym(cuda, "cuStreamGetCtx");
    cu_ctx_push_fn push = (cu_ctx_push_fn)dlsym(cuda, "cuCtxPushCurrent_v2");
    cu_ctx_pop_fn pop = (cu_ctx_pop_fn)dlsym(cuda, "cuCtxPopCurrent_v2");
    int rc = -1;
    if (get_device) {
        get_stream_fn get_stream = (get_stream_fn)real_func(F_GET_STREAM);
        cudaStream_t s = NULL;
        CUcontext ctx = NULL, popped = NULL;
        if (get_stream && stream_ctx && push && pop && get_stream(handle, &s) == 0 && s &&
            stream_ctx(s, &ctx) == 0 && ctx && push(ctx) == 0) {
            rc = get_device(dev) == 0 ? 0 : -1;
            pop(&popped);
        }
        if (rc != 0) rc = get_device(dev) == 0 ? 0 : -1;
    }
    dlclose(cuda); /* drops only the reference NOLOAD took */
    return rc;
}

/* device_memory is cuDeviceTotalMem of device dev, or 0 when the driver
 * cannot tell. */
static size_t device_memory(int dev) {
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!cuda) return 0;
    cu_device_total_mem_fn total = (cu_device_total_mem_fn)dlsym(cuda, "cuDeviceTotalMem_v2");
    size_t bytes = 0;
    if (!total || total(&bytes, dev) != 0) bytes = 0;
    dlclose(cuda);
    return bytes;
}

/* scope_handle returns the open handle for scope, opening it if needed,
 * or NULL. lib_mu is held. */
static convcache *scope_handle(const char *scope) {
    int i = 0;
    for (; i < MAX_SCOPES && scopes[i].scope; i++)
        if (strcmp(scopes[i].scope, scope) == 0) return scopes[i].c;
    if (i == MAX_SCOPES) {
        warn_once(W_OPEN, "more than %d device kinds; the others' find calls run uncached",
                  MAX_SCOPES);
        return NULL;
    }
    convcache *c = NULL;
    if (api.open(NULL, scope, &c) < 0) {
        warn_once(W_OPEN, "cannot open the cache (%s); find calls run uncached",
                  api.last_error());
        return NULL;
    }
    scopes[i].scope = strdup(scope); /* NULL: the slot stays free, c stays open */
    scopes[i].c = c;
    return c;
}

convcache *cache_for_handle(cudnnHandle_t handle, int *devp, size_t *mem) {
    *devp = -1;
    if (mem) *mem = 0;
    if (env_scope_set) {
        if (__atomic_load_n(&env_scope_handle.state, __ATOMIC_ACQUIRE) == H_READY)
            return env_scope_handle.c;
        pthread_mutex_lock(&lib_mu);
        if (env_scope_handle.state == H_NONE) {
            env_scope_handle.c = scope_handle(env_scope);
            __atomic_store_n(&env_scope_handle.state, env_scope_handle.c ? H_READY : H_FAILED,
                             __ATOMIC_RELEASE);
        }
        convcache *h = env_scope_handle.state == H_READY ? env_scope_handle.c : NULL;
        pthread_mutex_unlock(&lib_mu);
        return h;
    }
    int dev = -1;
    if (handle_device(handle, &dev) != 0 || dev < 0 || dev >= MAX_DEVICES) {
        warn_once(W_SCOPE, "cannot tell the CUDA device of a cuDNN handle; its calls run "
                  "uncached (set CONVCACHE_SCOPE to use one scope for every device)");
        return NULL;
    }
    *devp = dev;
    if (__atomic_load_n(&devices[dev].state, __ATOMIC_ACQUIRE) != H_READY) {
        pthread_mutex_lock(&lib_mu);
        if (devices[dev].state == H_NONE) {
            char scope[CONVCACHE_SCOPE_MAX + 1];
            convcache *h = NULL;
            if (api.cudnn_scope(dev, scope, sizeof scope) < 0) {
                warn_once(W_SCOPE, "cannot fingerprint CUDA device %d (%s); its calls run "
                          "uncached", dev, api.last_error());
            } else {
                h = scope_handle(scope);
                devices[dev].memory = device_memory(dev); /* the fingerprint started the driver */
            }
            devices[dev].c = h;
            __atomic_store_n(&devices[dev].state, h ? H_READY : H_FAILED, __ATOMIC_RELEASE);
        }
        pthread_mutex_unlock(&lib_mu);
        if (__atomic_load_n(&devices[dev].state, __ATOMIC_ACQUIRE) != H_READY) return NULL;
    }
    if (mem) *mem = devices[dev].memory;
    return devices[dev].c;
}

convcache *cache_for(struct call *c) { return cache_for_handle(c->handle, &c->dev, &c->mem_limit); }

int library_forked(void) { return __atomic_load_n(&lib_state, __ATOMIC_ACQUIRE) == LIB_FORKED; }

int library_usable(void) {
    int s = __atomic_load_n(&lib_state, __ATOMIC_ACQUIRE);
    return s != LIB_FORKED && s != LIB_FAILED;
}

int library_ready(void) {
    if (__atomic_load_n(&lib_state, __ATOMIC_ACQUIRE) == LIB_READY) return 1;
    pthread_mutex_lock(&lib_mu);
    if (__atomic_load_n(&lib_state, __ATOMIC_ACQUIRE) == LIB_NONE) load_library();
    pthread_mutex_unlock(&lib_mu);
    return __atomic_load_n(&lib_state, __ATOMIC_ACQUIRE) == LIB_READY;
}
