/*
 * convcache.hpp - C++17 interface to convcache, in two layers (after lmdb++):
 *
 *   1. Inline functions over the C API (convcache::open, find, insert, ...)
 *      that turn negative return codes into typed exceptions rooted at
 *      convcache::error.
 *   2. Cache: a move-only RAII handle exposing handle().
 *
 * What is built on them has headers of its own, which this one includes at
 * its end (so `#include <convcache.hpp>` brings all of it):
 *   convcache_devices.hpp    DeviceCaches (one handle per device model) and
 *                            the key policies (identity_key, device_key);
 *   convcache_hash.hpp       hash_bytes, the drop-ins' in-process key hash;
 *   convcache_benchmark.hpp  BenchmarkCache<Params, T, KeyPolicy>, a drop-in
 *                            for PyTorch's cuDNN BenchmarkCache.
 * convcache_v8.hpp, the drop-in for PyTorch's cuDNN v8 path, is included on
 * its own.
 *
 * In C++ the C handle type is `convcache_handle` (convcache.h explains why:
 * the name `convcache` belongs to this namespace).
 *
 * Define CONVCACHE_DYNAMIC before including this header to load the library
 * at run time (convcache_dynamic.h): the classes work the same, and without
 * the library every find misses and every insert keeps values in memory.
 */
#ifndef CONVCACHE_HPP
#define CONVCACHE_HPP

#include "convcache.h"

#include <atomic>
#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace convcache {

/* ======================================================================== *
 * Layer 1: errors and inline wrappers                                      *
 * ======================================================================== */

/* The root of every exception this header throws. code() is the C code. */
class error : public std::runtime_error {
public:
    /* origin: the failed call. detail: what happened; nullptr takes the
     * calling thread's convcache_last_error(). */
    error(const char *origin, int code, const char *detail = nullptr)
        : std::runtime_error(describe(origin, code, detail)), code_(code) {}

    /* The CONVCACHE_E_* code (or a builder's own code <= CONVCACHE_E_USER). */
    int code() const noexcept { return code_; }

    /* Throws the exception class that matches code. */
    [[noreturn]] static void raise(const char *origin, int code);

private:
    static std::string describe(const char *origin, int code, const char *detail) {
        std::string s = origin ? origin : "convcache";
        s += ": ";
        const char *name = convcache_strerror(code);
        s += name ? name : "unknown code";
        s += " (" + std::to_string(code) + ")";
        if (!detail) detail = convcache_last_error();
        if (detail && *detail) {
            s += ": ";
            s += detail;
        }
        return s;
    }
    int code_;
};

/* The groups: misuse (arguments the library rejected), and the cache file
 * and its lock. */
class usage_error : public error { public: using error::error; };
class file_error : public error { public: using error::error; };

/* One class per CONVCACHE_E_* code, named and grouped in convcache.h's
 * CONVCACHE_ERROR_LIST (CONVCACHE_E_LOCK: lock_error, a file_error).
 * builder_error also stands for a builder's own codes (<= CONVCACHE_E_USER),
 * internal_error for codes this header does not know. */
#define CONVCACHE_HPP_CLASS_(name, message, cxx_class, cxx_group) \
    class cxx_class : public cxx_group { public: using cxx_group::cxx_group; };
CONVCACHE_ERROR_LIST(CONVCACHE_HPP_CLASS_)
#undef CONVCACHE_HPP_CLASS_

inline void error::raise(const char *origin, int code) {
#define CONVCACHE_HPP_RAISE_(name, message, cxx_class, cxx_group) \
    case CONVCACHE_E_##name: throw cxx_class(origin, code);
    switch (code) {
    CONVCACHE_ERROR_LIST(CONVCACHE_HPP_RAISE_)
    default:
        if (code <= CONVCACHE_E_USER) throw builder_error(origin, code);
        throw internal_error(origin, code);
    }
#undef CONVCACHE_HPP_RAISE_
}

/* True for insert results that mean the value was kept (in the file, or in
 * the library's memory until a later insert or save writes it). */
constexpr bool insert_kept(int code) noexcept {
    return code >= 0 || code == CONVCACHE_E_READONLY || code == CONVCACHE_E_NOSPC;
}

/* convcache_open; throws on failure. The caller owns the handle. */
inline convcache_handle *open(const char *path = nullptr, const char *scope = nullptr) {
    convcache_handle *c = nullptr;
    int rc = convcache_open(path, scope, &c);
    if (rc < 0) error::raise("convcache_open", rc);
    return c;
}

/* convcache_open_ex; throws on failure. The caller owns the handle. */
inline convcache_handle *open(const convcache_options &opts) {
    convcache_handle *c = nullptr;
    int rc = convcache_open_ex(&opts, &c);
    if (rc < 0) error::raise("convcache_open_ex", rc);
    return c;
}

/* A convcache_options with its struct_size set and every other field zero. */
inline convcache_options options() noexcept {
    convcache_options o;
    std::memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    return o;
}

/* convcache_close; accepts nullptr. */
inline void close(convcache_handle *c) noexcept { convcache_close(c); }

/* convcache_find: true on a hit, false on a miss; throws on errors,
 * including range_error (value_cap too small; *value_len is set). */
inline bool find(convcache_handle *c, const void *key, std::size_t key_len, void *value,
                 std::size_t value_cap, std::size_t *value_len) {
    int rc = convcache_find(c, key, key_len, value, value_cap, value_len);
    if (rc < 0) error::raise("convcache_find", rc);
    return rc == CONVCACHE_HIT;
}

/* convcache_insert: returns CONVCACHE_OK, CONVCACHE_PENDING,
 * CONVCACHE_E_READONLY or CONVCACHE_E_NOSPC (each: the value was kept; see
 * insert_kept) and throws on every other failure. */
inline int insert(convcache_handle *c, const void *key, std::size_t key_len, const void *value,
                  std::size_t value_len) {
    int rc = convcache_insert(c, key, key_len, value, value_len);
    if (!insert_kept(rc)) error::raise("convcache_insert", rc);
    return rc;
}

/* convcache_load; throws on failure. */
inline void load(convcache_handle *c) {
    int rc = convcache_load(c);
    if (rc < 0) error::raise("convcache_load", rc);
}

/* convcache_save; throws on failure (lock_error, read_only_error, ...). */
inline void save(convcache_handle *c) {
    int rc = convcache_save(c);
    if (rc < 0) error::raise("convcache_save", rc);
}

/* convcache_get_or_create: true when the value came from the cache or
 * another builder, false when this call ran the builder; throws on errors
 * (a builder's own negative code as builder_error). */
inline bool get_or_create(convcache_handle *c, const void *key, std::size_t key_len,
                          convcache_builder build, void *user, void *value,
                          std::size_t value_cap, std::size_t *value_len) {
    int rc = convcache_get_or_create(c, key, key_len, build, user, value, value_cap, value_len);
    if (rc < 0) error::raise("convcache_get_or_create", rc);
    return rc == CONVCACHE_HIT;
}

/* convcache_stats, with every field the header knows; throws on failure. */
inline struct convcache_stats stats(convcache_handle *c) {
    struct convcache_stats s;
    std::memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    int rc = convcache_stats(c, &s);
    if (rc < 0) error::raise("convcache_stats", rc);
    return s;
}

/* convcache_cudnn_scope for a device; throws unavailable_error on a machine
 * without a driver, cuDNN or that device. */
inline std::string cudnn_scope(int device) {
    std::string buf(1024, '\0');
    int n = convcache_cudnn_scope(device, &buf[0], buf.size());
    if (n == CONVCACHE_E_RANGE) {
        buf.assign(CONVCACHE_SCOPE_MAX + 1, '\0');
        n = convcache_cudnn_scope(device, &buf[0], buf.size());
    }
    if (n < 0) error::raise("convcache_cudnn_scope", n);
    buf.resize(static_cast<std::size_t>(n));
    return buf;
}

/* ======================================================================== *
 * Layer 2: Cache, the RAII handle                                          *
 * ======================================================================== */

/*
 * Cache: an open cache file seen through one scope. Move-only; the
 * destructor closes the handle (convcache_close: writes what can be written
 * without waiting long, never throws). Safe to share between threads. A
 * call racing close() completes as before the close or throws handle_error
 * (or, once the Cache is empty, invalid_error), as convcache.h says of the
 * handle; moves and destruction must not race with other calls.
 */
class Cache {
public:
    /* An empty Cache (handle() == nullptr). */
    Cache() noexcept = default;

    /* Opens path (nullptr: the default file) under scope (nullptr:
     * $CONVCACHE_SCOPE or "default"); throws on failure. */
    explicit Cache(const char *path, const char *scope = nullptr) : h_{convcache::open(path, scope)} {}

    /* Opens with options; throws on failure. */
    explicit Cache(const convcache_options &opts) : h_{convcache::open(opts)} {}

    /* Takes ownership of an open handle. */
    static Cache adopt(convcache_handle *h) noexcept {
        Cache c;
        c.h_.store(h, std::memory_order_release);
        return c;
    }

    ~Cache() noexcept { close(); }

    Cache(Cache &&o) noexcept : h_{o.release()} {}
    Cache &operator=(Cache &&o) noexcept {
        if (this != &o) {
            close();
            h_.store(o.release(), std::memory_order_release);
        }
        return *this;
    }
    Cache(const Cache &) = delete;
    Cache &operator=(const Cache &) = delete;

    /* The C handle, for the C API; nullptr when empty. Still owned here. */
    convcache_handle *handle() const noexcept { return h_.load(std::memory_order_acquire); }
    explicit operator bool() const noexcept { return handle() != nullptr; }

    /* Gives up ownership of the handle and returns it. */
    convcache_handle *release() noexcept { return h_.exchange(nullptr, std::memory_order_acq_rel); }

    /* Closes the handle now; the Cache becomes empty. */
    void close() noexcept {
        if (convcache_handle *h = release()) convcache_close(h);
    }

    /* As convcache::find (on an empty Cache: invalid_error). */
    bool find(const void *key, std::size_t key_len, void *value, std::size_t value_cap,
              std::size_t *value_len) const {
        return convcache::find(handle(), key, key_len, value, value_cap, value_len);
    }

    /* Typed find: the key is K's bytes; a hit whose value is not exactly
     * sizeof(V) bytes counts as a miss. */
    template <class K, class V>
    bool find(const K &key, V *value) const {
        static_assert(std::is_trivially_copyable<K>::value && std::is_trivially_copyable<V>::value,
                      "convcache keys and values are bytes: use trivially copyable types");
        std::size_t n = 0;
        int rc = convcache_find(handle(), &key, sizeof key, value, sizeof *value, &n);
        if (rc == CONVCACHE_E_RANGE) return false;
        if (rc < 0) error::raise("convcache_find", rc);
        return rc == CONVCACHE_HIT && n == sizeof *value;
    }

    /* As convcache::insert. */
    int insert(const void *key, std::size_t key_len, const void *value, std::size_t value_len) {
        return convcache::insert(handle(), key, key_len, value, value_len);
    }
    template <class K, class V>
    int insert(const K &key, const V &value) {
        static_assert(std::is_trivially_copyable<K>::value && std::is_trivially_copyable<V>::value,
                      "convcache keys and values are bytes: use trivially copyable types");
        return convcache::insert(handle(), &key, sizeof key, &value, sizeof value);
    }

    void load() { convcache::load(handle()); }
    void save() { convcache::save(handle()); }
    struct convcache_stats stats() const { return convcache::stats(handle()); }

private:
    std::atomic<convcache_handle *> h_{nullptr}; /* atomic: close() may race other calls */
};

} // namespace convcache

/* The rest of the C++ interface (see the top). convcache_devices.hpp and
 * convcache_benchmark.hpp include this header first, outside their guards,
 * so that whichever one a program includes first, all is defined in this
 * order. */
#include "convcache_devices.hpp"
#include "convcache_hash.hpp"
#include "convcache_benchmark.hpp"

#endif /* CONVCACHE_HPP */
