/*
 * Which dlsym and dlvsym lookups the interposer answers with its own
 * function (the entries are in dlsym_entry.S). A program that opens cuDNN
 * with dlopen and takes its functions with dlsym (ONNX Runtime, TensorFlow,
 * JAX, cudnn_frontend's dynamic loading) never sees an LD_PRELOAD
 * definition: dlsym on a library's handle searches that library and its
 * dependencies only. So a lookup is redirected when all of these hold, and
 * otherwise gets glibc's own answer, asked as the caller would have:
 *
 *   - the name is one of the functions this library serves (the six find
 *     functions, the six cudnnBackend* functions);
 *   - the caller is not this library (its own lookups of the real
 *     functions, preload.c's real_symbol, get glibc's answer), nor a cuDNN
 *     library (cuDNN 9's libcudnn.so.9 takes each function from its
 *     sub-library with dlsym: redirecting that would loop);
 *   - the handle is a cuDNN library's (its object's file name begins with
 *     "libcudnn" and holds ".so": libcudnn.so.9 or a sub-library, by any
 *     path) and glibc finds the name there, in a cuDNN library; or the
 *     handle is RTLD_DEFAULT, asked from the base namespace, and glibc's
 *     answer there is cuDNN's or already this library's; or RTLD_NEXT,
 *     asked from the base namespace by an object that does not define the
 *     name itself (an interposer wrapping what follows it gets glibc's
 *     answer), while a real cuDNN definition is loaded.
 *
 * A redirected lookup leaves dlerror as a successful one does (cleared),
 * and the cuDNN library it was made in is kept loaded until exit
 * (RTLD_NODELETE), as a linked one is: the interposer keeps pointers to
 * its functions, which a dlclose must not unmap.
 *
 * Cost: a name that does not begin with "cudnn" costs one comparison
 * before glibc's own dlsym; a served name, a few loader queries (rare:
 * once per function per library user).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <string.h>

#include "dlsym.h"
#include "preload.h"

/* The names served: the six find functions (preload.c's first six) and
 * the six backend functions (v8_calls.c). */
#define N_FINDS (F_BWD_FILTER_EX + 1)
#define N_SERVED (N_FINDS + N_V8_FUNCS)

static const char *served(int i) { return i < N_FINDS ? func_names[i] : v8_func_names[i - N_FINDS]; }

/* This library's own definitions of the served names (never the main
 * program's or another library's), and its load address. */
static void *own[N_SERVED];
static void *own_base;
static int own_ready;

static void find_own(void) {
    if (__atomic_load_n(&own_ready, __ATOMIC_ACQUIRE)) return;
    Dl_info me;
    if (!dladdr((void *)&find_own, &me) || !me.dli_fname) return;
    void *h = dlopen(me.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (!h) return;
    /* Threads that get here together store the same values. */
    for (int i = 0; i < N_SERVED; i++) {
        Dl_info at;
        void *p = libc_dlsym(h, served(i));
        __atomic_store_n(&own[i], p && dladdr(p, &at) && at.dli_fbase == me.dli_fbase ? p : NULL,
                         __ATOMIC_RELAXED);
    }
    dlclose(h);
    __atomic_store_n(&own_base, me.dli_fbase, __ATOMIC_RELAXED);
    __atomic_store_n(&own_ready, 1, __ATOMIC_RELEASE);
}

static void *own_fn(int i) { return __atomic_load_n(&own[i], __ATOMIC_RELAXED); }

static int served_index(const char *name) {
    for (int i = 0; i < N_SERVED; i++)
        if (strcmp(name, served(i)) == 0) return i;
    return -1;
}

/* cudnn_file reports whether a file name's last component is a cuDNN
 * library's: "libcudnn" then anything holding ".so". */
static int cudnn_file(const char *path) {
    if (!path) return 0;
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    return strncmp(b, "libcudnn", 8) == 0 && strstr(b + 8, ".so") != NULL;
}

/* in_cudnn reports whether p lies in a cuDNN library; its file in *file. */
static int in_cudnn(void *p, const char **file) {
    Dl_info info;
    if (!p || !dladdr(p, &info) || !cudnn_file(info.dli_fname)) return 0;
    if (file) *file = info.dli_fname;
    return 1;
}

/* keep makes the loaded object named file stay until exit. */
static void keep(const char *file) {
    void *h = dlopen(file, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
    if (h) dlclose(h);
}

/* caller_map: the loaded object the return address lies in, in the base
 * namespace, or NULL (code outside any object, another namespace). */
static struct link_map *caller_map(void *caller) {
    Dl_info info;
    struct link_map *m = NULL;
    Lmid_t ns = -1;
    if (!dladdr1(caller, &info, (void **)&m, RTLD_DL_LINKMAP) || !m) return NULL;
    if (dlinfo(m, RTLD_DI_LMID, &ns) != 0 || ns != LM_ID_BASE) return NULL;
    return m;
}

static void *lookup(void *handle, const char *name, const char *version) {
    return version ? libc_dlvsym(handle, name, version) : libc_dlsym(handle, name);
}

/* defines reports whether the object m defines name itself (1 when that
 * cannot be told: the caller then gets glibc's answer). A link map is not
 * a handle to search: an object loaded at start (LD_PRELOAD, a needed
 * library) has no search list of its own until dlopen gives it one. */
static int defines(struct link_map *m, const char *name, const char *version) {
    void *h = dlopen(m->l_name && m->l_name[0] ? m->l_name : NULL, RTLD_LAZY | RTLD_NOLOAD);
    if (!h) return 1;
    void *p = lookup(h, name, version);
    dlclose(h);
    Dl_info info;
    struct link_map *at = NULL;
    return p && dladdr1(p, &info, (void **)&at, RTLD_DL_LINKMAP) && at == m;
}

static void *decide(void *handle, const char *name, const char *version, void *caller, int i) {
    const char *file = NULL;
    void *mine = own_fn(i);
    if (handle == RTLD_DEFAULT || handle == RTLD_NEXT) {
        struct link_map *m = caller_map(caller);
        if (!m) return NULL;
        if (handle == RTLD_NEXT) {
            if (defines(m, name, version)) return NULL;
            void *real = real_symbol(name);
            return in_cudnn(real, &file) ? (keep(file), mine) : NULL;
        }
        void *p = lookup(RTLD_DEFAULT, name, version);
        if (p == mine) return mine;
        return in_cudnn(p, &file) ? (keep(file), mine) : NULL;
    }
    void *p = lookup(handle, name, version);
    if (!p) return NULL; /* glibc's own failure, asked again as the caller */
    if (p == mine) return mine;
    struct link_map *m = NULL;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &m) != 0 || !m || !cudnn_file(m->l_name)) return NULL;
    if (!in_cudnn(p, &file)) return NULL;
    keep(m->l_name);
    keep(file);
    return mine;
}

void *dlsym_hook(void *handle, const char *name, const char *version, void *caller) {
    if (__builtin_expect(!__atomic_load_n(&libc_dlsym, __ATOMIC_ACQUIRE), 0) && !dlsym_libc_find())
        return NULL;
    if (!name || !dl_has_prefix(name, "cudnn")) return NULL; /* (dlsym.h: no strncmp here) */
    int i = served_index(name);
    if (i < 0) return NULL;
    find_own();
    if (!__atomic_load_n(&own_ready, __ATOMIC_ACQUIRE) || !own_fn(i)) return NULL;
    /* A lookup made by this library, or by cuDNN itself (libcudnn.so.9
     * takes its sub-libraries' functions with dlsym: redirected, the
     * interposer would call itself through cuDNN), gets glibc's answer. */
    Dl_info at;
    if (!dladdr(caller, &at) || at.dli_fbase == __atomic_load_n(&own_base, __ATOMIC_RELAXED) ||
        cudnn_file(at.dli_fname))
        return NULL;
    void *p = decide(handle, name, version, caller, i);
    /* A redirected lookup is a successful one: dlerror says nothing, as
     * after glibc's success (the loader queries above may have set it). */
    if (p) dlerror();
    return p;
}
