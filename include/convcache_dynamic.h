/*
 * convcache_dynamic.h - use convcache with no link-time dependency: the
 * library is loaded at run time, and a host runs on without it.
 *
 * Use
 *     #define CONVCACHE_DYNAMIC 1
 *     #include "convcache.h"
 * (or include this header alone, which does the same). Every convcache_*
 * function of convcache.h then becomes a static function of your
 * translation unit, defined here, and nothing is linked: no -lconvcache.
 * On glibc before 2.34, link with -ldl -lpthread (CMake: ${CMAKE_DL_LIBS}
 * and Threads::Threads; the convcache::dynamic target carries both).
 *
 * Loading. The first call of any function, from any thread, loads the
 * library exactly once (pthread_once), from the first of these that
 * dlopen opens:
 *   1. the file or name in $CONVCACHE_LIBRARY, when that is set and not
 *      empty (then nothing else is tried);
 *   2. libconvcache.so.1 in CONVCACHE_INSTALL_LIBDIR, the library directory
 *      of the installation whose headers these are (as a run path would
 *      name it): a string literal the includer may define, which the CMake
 *      package's convcache::dynamic target defines, and which
 *      convcache_install.h, written beside this header by make install and
 *      cmake --install, defines for every other build (pkg-config's flags,
 *      a plain -I). Only an absolute path is used: a relative one is
 *      ignored, and convcache_dynamic_error() says so when nothing loads;
 *   2b. without CONVCACHE_INSTALL_LIBDIR (the wheel, which cannot know at
 *      build time where pip will put it, and a build tree):
 *      libconvcache.so.1 in ../lib of the directory this header was
 *      included from, as the compiler named it (__FILE__), when that is an
 *      absolute path: the wheel keeps include/ and lib/ side by side, so a
 *      program built with `convcache config --cflags` or the wheel's
 *      pkg-config flags finds the wheel's library by itself;
 *   3. libconvcache.so.1, found the usual way (LD_LIBRARY_PATH, the run
 *      path, ld.so.cache).
 * Each function is then resolved with dlsym. In a privileged process
 * (AT_SECURE: set-user-ID, set-group-ID or file capabilities) the
 * environment is ignored, as secure_getenv would: $CONVCACHE_LIBRARY and
 * $CONVCACHE_DISABLE are never read, so another user cannot make the
 * program load a library of theirs; the installation's directory, fixed
 * when the program was built, is still tried, as the dynamic loader still
 * follows an absolute run path. (No feature macro is needed from the
 * includer: getauxval comes from <sys/auxv.h>.) The library counts as
 * missing when none of these opens, when one of the functions of convcache
 * 1.0 is missing from the one that opened, or when its
 * convcache_version_number() has another major version than this header.
 *
 * With the library: every function behaves exactly as documented in
 * convcache.h. A function added to the API after 1.0 that an older library
 * lacks returns CONVCACHE_E_UNAVAILABLE (today: none).
 *
 * Without the library the cache is off, as with CONVCACHE_MODE_OFF, and the
 * host keeps running:
 *   - One line goes to stderr, once per program or shared object (per
 *     translation unit with compilers other than GCC and Clang), naming the
 *     file and dlerror(); not printed when CONVCACHE_DISABLE=1 is set.
 *   - convcache_open and convcache_open_ex return CONVCACHE_OK with a
 *     placeholder handle (never NULL, never dereferenced).
 *   - convcache_find returns 0 (a miss), even in strict mode.
 *   - convcache_insert, convcache_load and convcache_save return CONVCACHE_OK
 *     and store nothing. convcache_close does nothing.
 *   - convcache_get_or_create runs the builder on every call and returns
 *     CONVCACHE_OK (0, "this call ran the builder") with its value, or the
 *     builder's failure as the library would: its negative code,
 *     CONVCACHE_E_RANGE with *value_len set, or CONVCACHE_E_BUILDER (a
 *     positive code, or a length above value_cap). No single-flight.
 *   - convcache_stats and convcache_cudnn_scope return
 *     CONVCACHE_E_UNAVAILABLE (they report on the library itself).
 *   - convcache_strerror works (the names come from convcache.h's lists).
 *   - convcache_last_error returns why the library was not loaded.
 *   - convcache_version returns "0.0.0" and convcache_version_number 0.
 *   - convcache_options_init works (it needs no library).
 *   Arguments are still checked: NULL pointers give CONVCACHE_E_INVALID,
 *   a key_len of 0 or above CONVCACHE_KEY_MAX gives CONVCACHE_E_SIZE.
 *
 * Two functions exist only here:
 *   int convcache_dynamic_available(void)   1 if the library is loaded, 0 if not
 *   const char *convcache_dynamic_error(void) why not ("" when loaded)
 *
 * Handles belong to the translation unit's loader state only in the
 * missing case (placeholders); with the library loaded they are the
 * library's, and may be passed between translation units freely.
 */
#ifndef CONVCACHE_DYNAMIC_H
#define CONVCACHE_DYNAMIC_H

#ifndef CONVCACHE_H
/* Included on its own: bring in the API in its dynamic form. convcache.h
 * includes this header again at its end; the guard above skips that. */
#ifndef CONVCACHE_DYNAMIC
#define CONVCACHE_DYNAMIC 1
#endif
#include "convcache.h"
#endif

#ifndef CONVCACHE_DYNAMIC
#error "convcache_dynamic.h: convcache.h was included without CONVCACHE_DYNAMIC; define it before the first include"
#endif

/* The installation's library directory, unless the includer gave it
 * (written by make install and cmake --install; absent from the build
 * tree and the wheel, whose CMake package defines it). The quoted form
 * looks beside this header first. */
#if !defined(CONVCACHE_INSTALL_LIBDIR) && defined(__has_include)
#if __has_include("convcache_install.h")
#include "convcache_install.h"
#endif
#endif

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__linux__) && defined(__has_include)
#if __has_include(<sys/auxv.h>)
#include <sys/auxv.h>
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define CONVCACHE_DYN_FN static __attribute__((unused))
#else
#define CONVCACHE_DYN_FN static
#endif

#define CONVCACHE_DYN_STR2_(x) #x
#define CONVCACHE_DYN_STR_(x) CONVCACHE_DYN_STR2_(x)
#define CONVCACHE_DYN_SONAME "libconvcache.so." CONVCACHE_DYN_STR_(CONVCACHE_VERSION_MAJOR)

/* The resolved API. */
struct convcache_dyn_api_ {
    int (*open)(const char *, const char *, convcache_handle **);
    int (*open_ex)(const convcache_options *, convcache_handle **);
    void (*close)(convcache_handle *);
    int (*find)(convcache_handle *, const void *, size_t, void *, size_t, size_t *);
    int (*peek)(convcache_handle *, const void *, size_t, void *, size_t, size_t *);
    int (*insert)(convcache_handle *, const void *, size_t, const void *, size_t);
    int (*load)(convcache_handle *);
    int (*save)(convcache_handle *);
    int (*get_or_create)(convcache_handle *, const void *, size_t, convcache_builder, void *, void *, size_t,
                         size_t *);
    int (*stats)(convcache_handle *, struct convcache_stats *);
    const char *(*strerror_)(int);
    const char *(*last_error)(void);
    const char *(*version)(void);
    int (*version_number)(void);
    /* Optional: absent from a library older than the function. */
    int (*cudnn_scope)(int, char *, size_t);
};

static struct convcache_dyn_api_ convcache_dyn_api_;
static int convcache_dyn_loaded_;      /* set once, under pthread_once */
static char convcache_dyn_why_[768];   /* why not loaded; "" when loaded */
static pthread_once_t convcache_dyn_once_ = PTHREAD_ONCE_INIT;
static char convcache_dyn_placeholder_; /* the address of the placeholder handle */

/* One warning per program or shared object, shared by every translation
 * unit that includes this header. */
#if defined(__GNUC__)
__attribute__((weak, visibility("hidden"))) int convcache_dyn_warned_ = 0;
#define CONVCACHE_DYN_FIRST_WARNING_() (__atomic_exchange_n(&convcache_dyn_warned_, 1, __ATOMIC_RELAXED) == 0)
#else
static int convcache_dyn_warned_ = 0;
#define CONVCACHE_DYN_FIRST_WARNING_() (convcache_dyn_warned_++ == 0)
#endif

static void *convcache_dyn_sym_(void *lib, const char *name, void *slot, size_t size) {
    /* memcpy: ISO C has no conversion from void * to a function pointer. */
    void *p = dlsym(lib, name);
    if (p) memcpy(slot, &p, size);
    return p;
}

/* getenv with secure_getenv's semantics, without _GNU_SOURCE: nothing is
 * set in a privileged process. AT_SECURE also covers file capabilities;
 * where there is no getauxval, set-ID is told by the ids. */
static const char *convcache_dyn_getenv_(const char *name) {
#if defined(AT_SECURE)
    if (getauxval(AT_SECURE)) return NULL;
#else
    if (getuid() != geteuid() || getgid() != getegid()) return NULL;
#endif
    return getenv(name);
}

/* The sizes convcache_open_ex accepts (as the library does): a size that
 * ends on a whole field of convcache_options. */
static int convcache_dyn_options_size_ok_(size_t n) {
#define CONVCACHE_DYN_END_(f) (offsetof(convcache_options, f) + sizeof(((convcache_options *)0)->f))
    const size_t ends[] = {
        CONVCACHE_DYN_END_(struct_size),     CONVCACHE_DYN_END_(path),
        CONVCACHE_DYN_END_(scope),           CONVCACHE_DYN_END_(mode),
        CONVCACHE_DYN_END_(lock_timeout_ms), CONVCACHE_DYN_END_(build_timeout_ms),
        CONVCACHE_DYN_END_(reserved0),       CONVCACHE_DYN_END_(max_bytes),
        CONVCACHE_DYN_END_(max_entries),     CONVCACHE_DYN_END_(system_path),
        CONVCACHE_DYN_END_(remote),          CONVCACHE_DYN_END_(remote_timeout_ms),
        CONVCACHE_DYN_END_(reserved1),       sizeof(convcache_options)};
#undef CONVCACHE_DYN_END_
    size_t i;
    for (i = 0; i < sizeof ends / sizeof ends[0]; i++)
        if (n == ends[i]) return 1;
    return 0;
}

/* dlopen the first of the places the header comment lists that opens;
 * *path is the one that did, else the last tried. Sets convcache_dyn_why_
 * when none did. */
static void *convcache_dyn_open_(const char **path) {
    const char *env = convcache_dyn_getenv_("CONVCACHE_LIBRARY");
    if (env && *env) {
        *path = env;
        void *lib = dlopen(env, RTLD_NOW | RTLD_LOCAL);
        const char *e = lib ? NULL : dlerror();
        if (!lib)
            snprintf(convcache_dyn_why_, sizeof convcache_dyn_why_, "convcache: %s not loaded: %s", env,
                     e ? e : "dlopen failed");
        return lib;
    }
    char tried[384] = "";
#ifdef CONVCACHE_INSTALL_LIBDIR
    {
        static char installed[4096];
        const char *dir = CONVCACHE_INSTALL_LIBDIR;
        int n = snprintf(installed, sizeof installed, "%s/%s", dir, CONVCACHE_DYN_SONAME);
        if (dir[0] != '/') {
            snprintf(tried, sizeof tried, " (CONVCACHE_INSTALL_LIBDIR \"%.200s\" ignored: not an absolute path)", dir);
        } else if (n < 0 || (size_t)n >= sizeof installed) {
            snprintf(tried, sizeof tried, " (CONVCACHE_INSTALL_LIBDIR ignored: longer than %u bytes)",
                     (unsigned)sizeof installed);
        } else {
            *path = installed;
            void *lib = dlopen(installed, RTLD_NOW | RTLD_LOCAL);
            if (lib) return lib;
            const char *e = dlerror();
            snprintf(tried, sizeof tried, " (also tried %.300s)", e ? e : installed);
        }
    }
#else
    {
        /* ../lib beside the directory this header was included from. */
        static char beside[4096];
        static const char header[] = __FILE__;
        const char *slash = strrchr(header, '/');
        if (header[0] == '/' && slash &&
            (size_t)(slash - header) + sizeof "/../lib/" + sizeof CONVCACHE_DYN_SONAME < sizeof beside) {
            memcpy(beside, header, (size_t)(slash - header));
            snprintf(beside + (slash - header), sizeof beside - (size_t)(slash - header), "/../lib/%s",
                     CONVCACHE_DYN_SONAME);
            void *lib = dlopen(beside, RTLD_NOW | RTLD_LOCAL);
            if (lib) {
                *path = beside;
                return lib;
            }
            (void)dlerror();
        }
    }
#endif
    *path = CONVCACHE_DYN_SONAME;
    void *lib = dlopen(CONVCACHE_DYN_SONAME, RTLD_NOW | RTLD_LOCAL);
    const char *e = lib ? NULL : dlerror();
    if (!lib)
        snprintf(convcache_dyn_why_, sizeof convcache_dyn_why_, "convcache: %s not loaded: %s%s",
                 CONVCACHE_DYN_SONAME, e ? e : "dlopen failed", tried);
    return lib;
}

static void convcache_dyn_load_(void) {
    const char *path = CONVCACHE_DYN_SONAME;
    struct convcache_dyn_api_ api;
    memset(&api, 0, sizeof api);
    const char *missing = NULL;
    void *lib = convcache_dyn_open_(&path);
    if (lib) {
#define CONVCACHE_DYN_NEED_(field, name)                                                   \
    if (!missing && !convcache_dyn_sym_(lib, name, &api.field, sizeof api.field)) missing = name
        CONVCACHE_DYN_NEED_(open, "convcache_open");
        CONVCACHE_DYN_NEED_(open_ex, "convcache_open_ex");
        CONVCACHE_DYN_NEED_(close, "convcache_close");
        CONVCACHE_DYN_NEED_(find, "convcache_find");
        CONVCACHE_DYN_NEED_(insert, "convcache_insert");
        CONVCACHE_DYN_NEED_(load, "convcache_load");
        CONVCACHE_DYN_NEED_(save, "convcache_save");
        CONVCACHE_DYN_NEED_(get_or_create, "convcache_get_or_create");
        CONVCACHE_DYN_NEED_(stats, "convcache_stats");
        CONVCACHE_DYN_NEED_(strerror_, "convcache_strerror");
        CONVCACHE_DYN_NEED_(last_error, "convcache_last_error");
        CONVCACHE_DYN_NEED_(version, "convcache_version");
        CONVCACHE_DYN_NEED_(version_number, "convcache_version_number");
#undef CONVCACHE_DYN_NEED_
        convcache_dyn_sym_(lib, "convcache_cudnn_scope", &api.cudnn_scope, sizeof api.cudnn_scope);
        convcache_dyn_sym_(lib, "convcache_peek", &api.peek, sizeof api.peek); /* 1.x later */
        if (missing) {
            snprintf(convcache_dyn_why_, sizeof convcache_dyn_why_,
                     "convcache: %.400s not used: it has no %s (not a convcache library?)", path, missing);
        } else if (api.version_number() / 10000 != CONVCACHE_VERSION_MAJOR) {
            snprintf(convcache_dyn_why_, sizeof convcache_dyn_why_,
                     "convcache: %.400s not used: it is version %.40s, this program was built for %d.x", path,
                     api.version(), CONVCACHE_VERSION_MAJOR);
            missing = "version";
        }
        /* A library that failed a check stays mapped: a Go runtime, once
         * started, cannot be unloaded (and it is linked -z nodelete). */
    }
    if (lib && !missing) {
        convcache_dyn_api_ = api;
        convcache_dyn_loaded_ = 1;
        return;
    }
    const char *off = convcache_dyn_getenv_("CONVCACHE_DISABLE");
    int quiet = off && off[0] == '1' && off[1] == 0;
    if (!quiet && CONVCACHE_DYN_FIRST_WARNING_())
        fprintf(stderr, "%s; running without the cache (lookups miss, nothing is stored)\n",
                convcache_dyn_why_);
}

static int convcache_dyn_ready_(void) {
    pthread_once(&convcache_dyn_once_, convcache_dyn_load_);
    return convcache_dyn_loaded_;
}

CONVCACHE_DYN_FN int convcache_dynamic_available(void) { return convcache_dyn_ready_(); }

CONVCACHE_DYN_FN const char *convcache_dynamic_error(void) {
    convcache_dyn_ready_();
    return convcache_dyn_why_;
}

CONVCACHE_DYN_FN void convcache_options_init(convcache_options *opts) {
    if (!opts) return;
    memset(opts, 0, sizeof *opts);
    opts->struct_size = sizeof *opts;
}

CONVCACHE_DYN_FN int convcache_open(const char *path, const char *scope, convcache_handle **out) {
    if (convcache_dyn_ready_()) return convcache_dyn_api_.open(path, scope, out);
    if (!out) return CONVCACHE_E_INVALID;
    *out = (convcache_handle *)(void *)&convcache_dyn_placeholder_;
    return CONVCACHE_OK;
}

CONVCACHE_DYN_FN int convcache_open_ex(const convcache_options *opts, convcache_handle **out) {
    if (convcache_dyn_ready_()) return convcache_dyn_api_.open_ex(opts, out);
    if (!out) return CONVCACHE_E_INVALID;
    *out = NULL;
    if (!opts || !convcache_dyn_options_size_ok_(opts->struct_size)) return CONVCACHE_E_INVALID;
    *out = (convcache_handle *)(void *)&convcache_dyn_placeholder_;
    return CONVCACHE_OK;
}

CONVCACHE_DYN_FN void convcache_close(convcache_handle *c) {
    if (convcache_dyn_ready_()) convcache_dyn_api_.close(c);
}

CONVCACHE_DYN_FN int convcache_find(convcache_handle *c, const void *key, size_t key_len, void *value,
                                    size_t value_cap, size_t *value_len) {
    if (convcache_dyn_ready_())
        return convcache_dyn_api_.find(c, key, key_len, value, value_cap, value_len);
    if (!c || !key || !value_len || (!value && value_cap)) return CONVCACHE_E_INVALID;
    if (key_len == 0 || key_len > CONVCACHE_KEY_MAX) return CONVCACHE_E_SIZE;
    return 0;
}

/* A library without convcache_peek (older 1.x) answers it as a miss. */
CONVCACHE_DYN_FN int convcache_peek(convcache_handle *c, const void *key, size_t key_len, void *value,
                                    size_t value_cap, size_t *value_len) {
    if (convcache_dyn_ready_() && convcache_dyn_api_.peek)
        return convcache_dyn_api_.peek(c, key, key_len, value, value_cap, value_len);
    if (!c || !key || !value_len || (!value && value_cap)) return CONVCACHE_E_INVALID;
    if (key_len == 0 || key_len > CONVCACHE_KEY_MAX) return CONVCACHE_E_SIZE;
    return 0;
}

CONVCACHE_DYN_FN int convcache_insert(convcache_handle *c, const void *key, size_t key_len, const void *value,
                                      size_t value_len) {
    if (convcache_dyn_ready_()) return convcache_dyn_api_.insert(c, key, key_len, value, value_len);
    if (!c || !key || (!value && value_len)) return CONVCACHE_E_INVALID;
    if (key_len == 0 || key_len > CONVCACHE_KEY_MAX || value_len > CONVCACHE_VALUE_MAX)
        return CONVCACHE_E_SIZE;
    return CONVCACHE_OK;
}

CONVCACHE_DYN_FN int convcache_load(convcache_handle *c) {
    if (convcache_dyn_ready_()) return convcache_dyn_api_.load(c);
    return c ? CONVCACHE_OK : CONVCACHE_E_INVALID;
}

CONVCACHE_DYN_FN int convcache_save(convcache_handle *c) {
    if (convcache_dyn_ready_()) return convcache_dyn_api_.save(c);
    return c ? CONVCACHE_OK : CONVCACHE_E_INVALID;
}

CONVCACHE_DYN_FN int convcache_get_or_create(convcache_handle *c, const void *key, size_t key_len,
                                             convcache_builder build, void *user, void *value,
                                             size_t value_cap, size_t *value_len) {
    if (convcache_dyn_ready_())
        return convcache_dyn_api_.get_or_create(c, key, key_len, build, user, value, value_cap, value_len);
    if (!c || !key || !build || !value_len || (!value && value_cap)) return CONVCACHE_E_INVALID;
    if (key_len == 0 || key_len > CONVCACHE_KEY_MAX) return CONVCACHE_E_SIZE;
    size_t n = 0;
    int rc = build(user, key, key_len, value, value_cap, &n);
    if (rc == CONVCACHE_E_RANGE) {
        *value_len = n;
        return CONVCACHE_E_RANGE;
    }
    if (rc < 0) return rc;
    if (rc > 0 || n > value_cap) return CONVCACHE_E_BUILDER;
    *value_len = n;
    return CONVCACHE_OK;
}

CONVCACHE_DYN_FN int convcache_stats(convcache_handle *c, struct convcache_stats *out) {
    if (convcache_dyn_ready_()) return convcache_dyn_api_.stats(c, out);
    if (!c || !out) return CONVCACHE_E_INVALID;
    return CONVCACHE_E_UNAVAILABLE;
}

CONVCACHE_DYN_FN int convcache_cudnn_scope(int device, char *buf, size_t cap) {
    if (convcache_dyn_ready_() && convcache_dyn_api_.cudnn_scope)
        return convcache_dyn_api_.cudnn_scope(device, buf, cap);
    if (!buf || device < 0) return CONVCACHE_E_INVALID;
    if (cap > 0) buf[0] = 0;
    return CONVCACHE_E_UNAVAILABLE;
}

/* Without the library, the names of convcache.h's lists, as it has them. */
CONVCACHE_DYN_FN const char *convcache_strerror(int code) {
    if (convcache_dyn_ready_()) return convcache_dyn_api_.strerror_(code);
#define CONVCACHE_DYN_STATUS_(name, message) case CONVCACHE_##name: return message;
#define CONVCACHE_DYN_ERROR_(name, message, cxx_class, cxx_group) case CONVCACHE_E_##name: return message;
    switch (code) {
    CONVCACHE_STATUS_LIST(CONVCACHE_DYN_STATUS_)
    CONVCACHE_ERROR_LIST(CONVCACHE_DYN_ERROR_)
    }
#undef CONVCACHE_DYN_STATUS_
#undef CONVCACHE_DYN_ERROR_
    return code <= CONVCACHE_E_USER ? CONVCACHE_STRERROR_USER : CONVCACHE_STRERROR_UNKNOWN;
}

CONVCACHE_DYN_FN const char *convcache_last_error(void) {
    if (convcache_dyn_ready_()) return convcache_dyn_api_.last_error();
    return convcache_dyn_why_;
}

CONVCACHE_DYN_FN const char *convcache_version(void) {
    if (convcache_dyn_ready_()) return convcache_dyn_api_.version();
    return "0.0.0";
}

CONVCACHE_DYN_FN int convcache_version_number(void) {
    if (convcache_dyn_ready_()) return convcache_dyn_api_.version_number();
    return 0;
}

#ifdef __cplusplus
}
#endif

#endif /* CONVCACHE_DYNAMIC_H */
