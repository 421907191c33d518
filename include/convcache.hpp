/*
 * convcache.hpp - C++17 interface to convcache, in two layers (after lmdb++):
 *
 *   1. Inline functions over the C API (convcache::open, find, insert, ...)
 *      that turn negative return codes into typed exceptions rooted at
 *      convcache::error.
 *   2. Classes: Cache (a move-only RAII handle exposing handle()),
 *      DeviceCaches (one handle per device model, opened on first use) and
 *      BenchmarkCache<Params, T, KeyPolicy>, a drop-in for PyTorch's cuDNN
 *      BenchmarkCache: bool find(const Params&, T*), void insert(const
 *      Params&, const T&), int load(), int save(), plus getOrCreate(params,
 *      builder) for OpenVINO-style executor caches.
 *
 * In C++ the C handle type is `convcache_handle` (convcache.h explains why:
 * the name `convcache` belongs to this namespace).
 *
 * Define CONVCACHE_DYNAMIC before including this header to load the library
 * at run time (convcache_dynamic.h): the classes work the same, and without
 * the library every find misses and every insert keeps values in memory.
 *
 * ---- BenchmarkCache: the hot path and what it allows --------------------
 *
 * find() first reads an in-process front map: an insert-only open-addressing
 * table (linear probing, load <= 0.8) of atomic node pointers that carry 4
 * bits of a 64-bit multiply-fold hash of the key bytes. Readers take no lock
 * and write no shared memory (but for one flag per entry per epoch, below);
 * writers (insert, and fills after a front-map miss) are serialised by a
 * mutex and publish a node, or a grown table, with one release store. A
 * node is the key and the value and 4 bytes, rounded up to 16 (160 bytes
 * for PyTorch's 104-byte key and 48-byte value). A front-map miss
 * asks the library, which also sees what other processes wrote to the file,
 * and copies a hit into the front map. insert() writes through: front map
 * first, then the library (which appends to the file before it returns).
 *
 * Staleness. A front-map hit does not look at the file, so it can return a
 * value that another process has since replaced (CONVCACHE_MODE_RECACHE, a
 * re-benchmark), or an entry that compaction has since evicted from the
 * file. It is harmless for benchmark results: every value stored under a key
 * is a measured, valid algorithm choice for exactly that problem in exactly
 * that scope (GPU model, driver, library versions), so the worst case is a
 * choice that was fastest in an earlier measurement. The window is bounded:
 * save() and load() start a new epoch, and the first front-map hit of each
 * entry in a new epoch asks the library once, refreshing the value and
 * marking the entry used for the engine's LRU eviction (front-map hits never
 * reach the engine otherwise). A reader racing with a table growth may also
 * miss an entry inserted at that moment; it then asks the library, which has
 * it.
 *
 * Errors. find() never throws on a miss. A stored value of another size than
 * T (a different build, a different struct) is a miss, and insert()
 * replaces it. insert() does not throw when the library kept the value
 * (CONVCACHE_PENDING: the lock was busy; CONVCACHE_E_READONLY: read-only
 * handle; CONVCACHE_E_NOSPC: disk full, retried later): the front map has it
 * in every case. In a child forked after the library started (a PyTorch
 * DataLoader worker) the library refuses every call; BenchmarkCache then
 * behaves like PyTorch's own in-memory map (hits from the front map, inserts
 * kept in memory) instead of throwing.
 *
 * Lifetimes. Destructors never throw and never save (inserts are already in
 * the file; call save() for durability against power loss). Cache is
 * move-only; a moved-from Cache is empty (handle() == nullptr) and may be
 * destroyed or assigned to. BenchmarkCache and DeviceCaches are neither
 * copyable nor movable: threads hold references to them, as to PyTorch's
 * global caches. A BenchmarkCache must not outlive the Cache or
 * DeviceCaches it was built on, and must not be destroyed while other
 * threads use it. Memory of the front map (nodes, and tables outgrown by a
 * growth) is freed by the destructor, never earlier, so that no reader can
 * see freed memory.
 */
#ifndef CONVCACHE_HPP
#define CONVCACHE_HPP

#include "convcache.h"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

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

/* The scope DeviceCaches uses by default: cudnn_scope(device), or, where
 * that is not available (no GPU or cuDNN), $CONVCACHE_SCOPE or "default". */
inline std::string cudnn_scope_or_default(int device) {
    try {
        return cudnn_scope(device);
    } catch (const error &) {
        const char *s = std::getenv("CONVCACHE_SCOPE");
        return s && *s ? std::string(s) : std::string("default");
    }
}

/* A 64-bit hash of n bytes: 128-bit multiply-fold over 16-byte blocks (in the
 * manner of wyhash). Inlined with a constant n it costs a few ns for a
 * 104-byte ConvolutionParams, where PyTorch's byte-wise 32-bit FNV-1a costs
 * over 100 ns. Not for persistent use: it may change between versions. */
namespace detail {
inline std::uint64_t load64(const unsigned char *p) noexcept {
    std::uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
}
inline std::uint32_t load32(const unsigned char *p) noexcept {
    std::uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}
inline std::uint64_t fold(std::uint64_t a, std::uint64_t b) noexcept {
#if defined(__SIZEOF_INT128__)
    __uint128_t r = static_cast<__uint128_t>(a) * b;
    return static_cast<std::uint64_t>(r) ^ static_cast<std::uint64_t>(r >> 64);
#else
    std::uint64_t x = (a ^ (b >> 29)) * 0xbf58476d1ce4e5b9ULL;
    x ^= (x >> 31) ^ b;
    return x * 0x94d049bb133111ebULL ^ (x >> 29);
#endif
}
constexpr std::uint64_t k0 = 0xa0761d6478bd642fULL;
constexpr std::uint64_t k1 = 0xe7037ed1a0b428dbULL;
constexpr std::uint64_t k2 = 0x8ebc6af09c88c6e3ULL;
constexpr std::uint64_t k3 = 0x589965cc75374cc3ULL;
} // namespace detail

inline std::uint64_t hash_bytes(const void *data, std::size_t n,
                                std::uint64_t seed = 0x2d358dccaa6c78a5ULL) noexcept {
    const unsigned char *p = static_cast<const unsigned char *>(data);
    std::uint64_t h = seed ^ detail::fold(seed ^ detail::k0, n ^ detail::k1);
    std::size_t left = n;
    /* Two independent lanes over 32-byte strides keep the multiplier busy. */
    if (left > 32) {
        std::uint64_t h2 = h ^ detail::k3;
        do {
            h = detail::fold(detail::load64(p) ^ detail::k1, detail::load64(p + 8) ^ h);
            h2 = detail::fold(detail::load64(p + 16) ^ detail::k2, detail::load64(p + 24) ^ h2);
            p += 32;
            left -= 32;
        } while (left > 32);
        h ^= h2;
    }
    while (left > 16) {
        h = detail::fold(detail::load64(p) ^ detail::k1, detail::load64(p + 8) ^ h);
        p += 16;
        left -= 16;
    }
    std::uint64_t a = 0, b = 0;
    if (left >= 8) {
        a = detail::load64(p);
        b = detail::load64(p + left - 8);
    } else if (left >= 4) {
        a = detail::load32(p);
        b = detail::load32(p + left - 4);
    } else if (left > 0) {
        a = (static_cast<std::uint64_t>(p[0]) << 16) |
            (static_cast<std::uint64_t>(p[left >> 1]) << 8) | p[left - 1];
    }
    h = detail::fold(a ^ detail::k1, b ^ h);
    return detail::fold(h ^ detail::k2, n ^ detail::k3);
}

/* ======================================================================== *
 * Layer 2: classes                                                         *
 * ======================================================================== */

/*
 * Cache: an open cache file seen through one scope. Move-only; the
 * destructor closes the handle (convcache_close: writes what can be written
 * without waiting long, never throws). Safe to share between threads,
 * except that close(), moves and destruction must not race with other calls.
 */
class Cache {
public:
    /* An empty Cache (handle() == nullptr). */
    Cache() noexcept = default;

    /* Opens path (nullptr: the default file) under scope (nullptr:
     * $CONVCACHE_SCOPE or "default"); throws on failure. */
    explicit Cache(const char *path, const char *scope = nullptr) : h_(convcache::open(path, scope)) {}

    /* Opens with options; throws on failure. */
    explicit Cache(const convcache_options &opts) : h_(convcache::open(opts)) {}

    /* Takes ownership of an open handle. */
    static Cache adopt(convcache_handle *h) noexcept {
        Cache c;
        c.h_ = h;
        return c;
    }

    ~Cache() noexcept { close(); }

    Cache(Cache &&o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
    Cache &operator=(Cache &&o) noexcept {
        if (this != &o) {
            close();
            h_ = std::exchange(o.h_, nullptr);
        }
        return *this;
    }
    Cache(const Cache &) = delete;
    Cache &operator=(const Cache &) = delete;

    /* The C handle, for the C API; nullptr when empty. Still owned here. */
    convcache_handle *handle() const noexcept { return h_; }
    explicit operator bool() const noexcept { return h_ != nullptr; }

    /* Gives up ownership of the handle and returns it. */
    convcache_handle *release() noexcept { return std::exchange(h_, nullptr); }

    /* Closes the handle now; the Cache becomes empty. */
    void close() noexcept {
        if (h_) convcache_close(std::exchange(h_, nullptr));
    }

    /* As convcache::find (on an empty Cache: invalid_error). */
    bool find(const void *key, std::size_t key_len, void *value, std::size_t value_cap,
              std::size_t *value_len) const {
        return convcache::find(h_, key, key_len, value, value_cap, value_len);
    }

    /* Typed find: the key is K's bytes; a hit whose value is not exactly
     * sizeof(V) bytes counts as a miss. */
    template <class K, class V>
    bool find(const K &key, V *value) const {
        static_assert(std::is_trivially_copyable<K>::value && std::is_trivially_copyable<V>::value,
                      "convcache keys and values are bytes: use trivially copyable types");
        std::size_t n = 0;
        int rc = convcache_find(h_, &key, sizeof key, value, sizeof *value, &n);
        if (rc == CONVCACHE_E_RANGE) return false;
        if (rc < 0) error::raise("convcache_find", rc);
        return rc == CONVCACHE_HIT && n == sizeof *value;
    }

    /* As convcache::insert. */
    int insert(const void *key, std::size_t key_len, const void *value, std::size_t value_len) {
        return convcache::insert(h_, key, key_len, value, value_len);
    }
    template <class K, class V>
    int insert(const K &key, const V &value) {
        static_assert(std::is_trivially_copyable<K>::value && std::is_trivially_copyable<V>::value,
                      "convcache keys and values are bytes: use trivially copyable types");
        return convcache::insert(h_, &key, sizeof key, &value, sizeof value);
    }

    void load() { convcache::load(h_); }
    void save() { convcache::save(h_); }
    struct convcache_stats stats() const { return convcache::stats(h_); }

private:
    convcache_handle *h_ = nullptr;
};

/*
 * DeviceCaches: one handle per device model on one file, opened on first use
 * of each device. scope_of(device) names the scope (by default
 * cudnn_scope_or_default: the GPU model, driver and library versions);
 * devices whose scopes are equal share one handle. This is what lets a DDP
 * rank on device 3 reuse what a rank on device 0 of the same GPU model
 * measured in another run (with a key policy that normalises device_id).
 *
 * try_handle() never throws: if a device's cache cannot be opened (read-only
 * home, foreign file...) it prints one line on stderr and returns nullptr
 * from then on, and BenchmarkCache keeps that device's entries in memory
 * only. handle() throws instead. Neither copyable nor movable; the
 * destructor closes every handle.
 */
class DeviceCaches {
public:
    static constexpr int max_devices = 256;
    using scope_function = std::function<std::string(int device)>;

    /* base: path, mode, timeouts...; its scope field is ignored. */
    explicit DeviceCaches(const convcache_options &base, scope_function scope_of = cudnn_scope_or_default)
        : base_(base), scope_of_(std::move(scope_of)) {
        /* Keep copies of the strings: the caller's may not outlive us. */
        base_.scope = nullptr;
        base_.path = keep(base.path, path_);
        base_.system_path = keep(base.system_path, system_path_);
        base_.remote = keep(base.remote, remote_);
        for (auto &s : slots_) s.store(nullptr, std::memory_order_relaxed);
        for (auto &f : failed_) f.store(0, std::memory_order_relaxed);
    }

    /* path: the cache file (nullptr: the default file). */
    explicit DeviceCaches(const char *path = nullptr, scope_function scope_of = cudnn_scope_or_default)
        : DeviceCaches(path_options(path), std::move(scope_of)) {}

    ~DeviceCaches() noexcept = default; /* the Caches close themselves */

    DeviceCaches(const DeviceCaches &) = delete;
    DeviceCaches &operator=(const DeviceCaches &) = delete;

    /* The handle for device, opened if needed; throws on failure (and
     * invalid_error for a device outside 0..max_devices-1). */
    convcache_handle *handle(int device) {
        if (device >= 0 && device < max_devices) {
            convcache_handle *h = slots_[device].load(std::memory_order_acquire);
            if (h) return h;
        }
        return open_slow(device, true);
    }

    /* The handle for device, or nullptr when it cannot be opened (one
     * warning on stderr per device). Never throws. */
    convcache_handle *try_handle(int device) noexcept {
        if (device >= 0 && device < max_devices) {
            convcache_handle *h = slots_[device].load(std::memory_order_acquire);
            if (h) return h;
            if (failed_[device].load(std::memory_order_relaxed)) return nullptr;
        }
        try {
            return open_slow(device, false);
        } catch (...) {
            return nullptr; /* open_slow(false) reports and does not throw; this is for bad_alloc */
        }
    }

    /* Calls f(convcache_handle*) for each distinct handle opened so far. */
    template <class F>
    void for_each_handle(F &&f) {
        std::vector<convcache_handle *> hs;
        {
            std::lock_guard<std::mutex> g(mu_);
            for (auto &e : opened_) hs.push_back(e.cache.handle());
        }
        for (auto *h : hs) f(h);
    }

    /* The scope of an opened device, or "" if it is not open. */
    std::string scope(int device) {
        std::lock_guard<std::mutex> g(mu_);
        for (auto &d : devices_)
            if (d.first == device) return opened_[d.second].scope;
        return std::string();
    }

private:
    struct Entry {
        std::string scope;
        Cache cache;
    };

    static const char *keep(const char *s, std::string &store) {
        if (!s) return nullptr;
        store = s;
        return store.c_str();
    }

    static convcache_options path_options(const char *path) noexcept {
        convcache_options o = options();
        o.path = path;
        return o;
    }

    convcache_handle *open_slow(int device, bool throwing) {
        if (device < 0 || device >= max_devices) {
            if (throwing)
                throw invalid_error("convcache::DeviceCaches", CONVCACHE_E_INVALID,
                                    "device index out of range 0..255");
            warn(device, "device index out of range 0..255; entries stay in memory");
            return nullptr;
        }
        std::lock_guard<std::mutex> g(mu_);
        convcache_handle *h = slots_[device].load(std::memory_order_relaxed);
        if (h) return h;
        try {
            std::string sc = scope_of_(device);
            std::size_t idx = 0;
            while (idx < opened_.size() && opened_[idx].scope != sc) idx++;
            if (idx == opened_.size()) {
                convcache_options o = base_;
                o.scope = sc.c_str();
                Cache c(o);
                opened_.push_back(Entry{std::move(sc), std::move(c)});
            }
            h = opened_[idx].cache.handle();
            devices_.emplace_back(device, idx);
            slots_[device].store(h, std::memory_order_release);
            return h;
        } catch (const std::exception &e) {
            if (throwing) throw;
            failed_[device].store(1, std::memory_order_relaxed);
            warn(device, e.what());
            return nullptr;
        }
    }

    static void warn(int device, const char *why) noexcept {
        std::fprintf(stderr, "convcache: device %d: cache not available, results stay in memory: %s\n",
                     device, why);
    }

    std::atomic<convcache_handle *> slots_[max_devices];
    std::atomic<unsigned char> failed_[max_devices];
    convcache_options base_;
    std::string path_, system_path_, remote_;
    scope_function scope_of_;
    std::mutex mu_;
    std::vector<Entry> opened_;
    std::vector<std::pair<int, std::size_t>> devices_;
};

/* Key policies say which device a key belongs to (to pick its scope in
 * DeviceCaches) and normalise the key before it is stored in the file. The
 * in-process front map keeps the caller's key unchanged. */

/* Every key as it is, all on device 0. */
template <class Params>
struct identity_key {
    int device(const Params &) const noexcept { return 0; }
    void normalize(Params &) const noexcept {}
};

/* The device index is the field DeviceField of Params (PyTorch:
 * &ConvolutionParams::device_id); it picks the scope and is stored as 0,
 * so that equal GPUs share results whatever their index. */
template <class Params, auto DeviceField>
struct device_key {
    int device(const Params &p) const noexcept { return static_cast<int>(p.*DeviceField); }
    void normalize(Params &p) const noexcept { p.*DeviceField = 0; }
};

/*
 * BenchmarkCache<Params, T, KeyPolicy>: PyTorch's cuDNN BenchmarkCache
 * interface over convcache. Params and T are stored as their bytes (callers
 * zero Params with memset, as PyTorch does, so padding is 0). name
 * separates caches that share a file and a key type (PyTorch's forward,
 * backward-data and backward-filter caches); it is stored in front of each
 * key, at most 64 bytes.
 *
 * All members are safe to call from many threads at once.
 */
template <class Params, class T, class KeyPolicy = identity_key<Params>>
class BenchmarkCache {
    static_assert(std::is_trivially_copyable<Params>::value,
                  "BenchmarkCache: Params is stored as its bytes; it must be trivially copyable");
    static_assert(std::is_trivially_copyable<T>::value,
                  "BenchmarkCache: T is stored as its bytes; it must be trivially copyable");
    static_assert(sizeof(Params) + 65 <= CONVCACHE_KEY_MAX, "BenchmarkCache: Params too large for a key");
    static_assert(sizeof(T) <= CONVCACHE_VALUE_MAX, "BenchmarkCache: T too large for a value");

public:
    static constexpr std::size_t max_name = 64;

    /* Entries go through cache (all devices in its one scope). */
    BenchmarkCache(Cache &cache, std::string_view name, KeyPolicy policy = KeyPolicy())
        : fixed_(cache.handle()), policy_(std::move(policy)) {
        init(name);
    }

    /* Entries go through the handle of their device's scope. */
    BenchmarkCache(DeviceCaches &caches, std::string_view name, KeyPolicy policy = KeyPolicy())
        : devices_(&caches), policy_(std::move(policy)) {
        init(name);
    }

    ~BenchmarkCache() noexcept {
        Table *t = table_.load(std::memory_order_relaxed);
        while (t) {
            Table *prev = t->retired;
            ::operator delete(static_cast<void *>(t));
            t = prev;
        }
        Block *b = blocks_;
        while (b) {
            Block *next = b->next;
            ::operator delete(static_cast<void *>(b), std::align_val_t(alignof(Block)));
            b = next;
        }
    }

    BenchmarkCache(const BenchmarkCache &) = delete;
    BenchmarkCache &operator=(const BenchmarkCache &) = delete;

    /* true and *results set on a hit; false on a miss. Never throws on a
     * miss; throws miss_error in strict mode, and error for real failures
     * of the library (not for a forked child: see the top of this file). */
    bool find(const Params &params, T *results) {
        const std::uint64_t h = hash_bytes(&params, sizeof(Params));
        if (front_find(params, h, results)) return true;
        return find_slow(params, h, results);
    }

    /* Stores results for params: in the front map, then in the library
     * (appended to the file before this returns). Throws only when the
     * library could not keep the value (io_error, format_error, ...); the
     * front map has it even then. */
    void insert(const Params &params, const T &results) {
        const std::uint64_t h = hash_bytes(&params, sizeof(Params));
        put(params, h, results, true);
        convcache_handle *c = handle_for(params);
        if (!c) return;
        KeyBuf k;
        std::size_t klen = library_key(params, k);
        int rc = convcache_insert(c, k.b, klen, &results, sizeof(T));
        if (rc == CONVCACHE_E_FORKED || insert_kept(rc)) return;
        error::raise("convcache_insert", rc);
    }

    /* Picks up what other processes wrote (convcache_load on each handle
     * opened so far) and starts a new epoch, so that front-map entries are
     * re-read from the library on their next hit. Returns 0, or
     * CONVCACHE_E_FORKED in a forked child; throws on failures (io_error,
     * format_error, corrupt_error). */
    int load() {
        int soft = 0;
        each_handle([&](convcache_handle *c) {
            int rc = convcache_load(c);
            if (rc == CONVCACHE_E_FORKED) soft = rc;
            else if (rc < 0) error::raise("convcache_load", rc);
        });
        epoch_.fetch_add(1, std::memory_order_relaxed);
        return soft;
    }

    /* Makes everything inserted durable (convcache_save on each handle) and
     * starts a new epoch (see LRU at the top). Returns 0, or one of the
     * codes under which nothing is lost and the host should carry on:
     * CONVCACHE_E_LOCK (lock busy: retry later), CONVCACHE_E_READONLY,
     * CONVCACHE_E_NOSPC (kept in memory), CONVCACHE_E_FORKED. Throws for
     * other failures (io_error, ...). */
    int save() {
        int soft = 0;
        each_handle([&](convcache_handle *c) {
            int rc = convcache_save(c);
            if (rc == CONVCACHE_E_LOCK || rc == CONVCACHE_E_READONLY || rc == CONVCACHE_E_NOSPC ||
                rc == CONVCACHE_E_FORKED) {
                if (!soft) soft = rc;
            } else if (rc < 0) {
                error::raise("convcache_save", rc);
            }
        });
        epoch_.fetch_add(1, std::memory_order_relaxed);
        return soft;
    }

    /*
     * getOrCreate: the value for params, built by builder(params) -> T if no
     * one has it. Builds are single-flight across the threads of this
     * process and the processes sharing the file (convcache_get_or_create).
     * Returns {value, true} when it came from the cache or another builder,
     * {value, false} when this call built it. An exception thrown by the
     * builder propagates to this caller, and nothing is stored. Where the
     * library cannot help (no handle for the device, a forked child, the
     * library missing under CONVCACHE_DYNAMIC) the builder runs in the
     * calling thread, without single flight, and the value is kept in
     * memory.
     */
    template <class Builder>
    std::pair<T, bool> getOrCreate(const Params &params, Builder &&builder) {
        static_assert(std::is_default_constructible<T>::value,
                      "BenchmarkCache::getOrCreate needs a default-constructible T");
        const std::uint64_t h = hash_bytes(&params, sizeof(Params));
        T v{};
        if (front_find(params, h, &v)) return {v, true};
        convcache_handle *c = handle_for(params);
        if (c) {
            KeyBuf k;
            std::size_t klen = library_key(params, k);
            using Call = BuildCall<std::remove_reference_t<Builder>>;
            Call call{&builder, &params, nullptr};
            std::size_t n = 0;
            int rc = convcache_get_or_create(c, k.b, klen, &Call::trampoline, &call, &v, sizeof(T), &n);
            if (call.thrown) std::rethrow_exception(call.thrown);
            if ((rc == CONVCACHE_HIT || rc == CONVCACHE_OK) && n == sizeof(T)) {
                put(params, h, v, rc == CONVCACHE_OK);
                return {v, rc == CONVCACHE_HIT};
            }
            /* A value of another size, or a forked child: build it here. */
            if (rc < 0 && rc != CONVCACHE_E_RANGE && rc != CONVCACHE_E_FORKED)
                error::raise("convcache_get_or_create", rc);
        }
        v = builder(params);
        insert(params, v);
        return {v, false};
    }

    /* Entries in the front map, and the bytes it holds (nodes, live table and
     * the tables it outgrew), for memory accounting. */
    std::size_t size() const noexcept { return count_.load(std::memory_order_relaxed); }
    std::size_t memory_bytes() const noexcept { return bytes_.load(std::memory_order_relaxed); }

    const KeyPolicy &policy() const noexcept { return policy_; }

private:
    /* An immutable entry, except for seen. Replaced, never modified.
     * Aligned to 16 so that a slot can carry 4 bits of the hash beside the
     * pointer. */
    struct alignas(16) Node {
        Params key;
        T value;
        mutable std::atomic<std::uint32_t> seen; /* the epoch of its last library touch */
    };

    /* A slot is a Node pointer with the top 4 bits of the key's hash in its
     * low bits (0 = empty): most probes past other keys never touch their
     * node. The table's mask and slots share one allocation. */
    using Slot = std::atomic<std::uintptr_t>;
    static constexpr std::uintptr_t tag_mask = 15;
    static std::uintptr_t tag_of(std::uint64_t h) noexcept { return static_cast<std::uintptr_t>(h >> 60); }
    static const Node *node_of(std::uintptr_t s) noexcept {
        return reinterpret_cast<const Node *>(s & ~tag_mask);
    }

    struct Table {
        std::size_t mask;
        Table *retired; /* the table this one replaced */
        Slot *slots() noexcept { return reinterpret_cast<Slot *>(this + 1); }
    };
    static_assert(sizeof(Table) % alignof(Slot) == 0, "slot alignment");

    struct alignas(alignof(Node)) Block {
        Block *next;
        std::size_t used, cap;
        Node *nodes() noexcept { return reinterpret_cast<Node *>(this + 1); }
    };

    struct KeyBuf {
        unsigned char b[max_name + 1 + sizeof(Params)];
    };

    template <class Builder>
    struct BuildCall {
        Builder *builder;
        const Params *params;
        std::exception_ptr thrown;

        /* Called by the library (possibly on this thread only); no exception
         * may cross into it. */
        static int trampoline(void *user, const void *, std::size_t, void *value, std::size_t cap,
                              std::size_t *len) noexcept {
            auto *self = static_cast<BuildCall *>(user);
            try {
                T t = (*self->builder)(*self->params);
                if (cap < sizeof(T)) {
                    *len = sizeof(T);
                    return CONVCACHE_E_RANGE;
                }
                std::memcpy(value, &t, sizeof(T));
                *len = sizeof(T);
                return 0;
            } catch (...) {
                self->thrown = std::current_exception();
                return CONVCACHE_E_USER - 1;
            }
        }
    };

    void init(std::string_view name) {
        if (name.size() > max_name || name.find('\0') != std::string_view::npos)
            throw invalid_error("convcache::BenchmarkCache", CONVCACHE_E_INVALID,
                                "name longer than 64 bytes or with a NUL");
        name_len_ = name.size();
        std::memcpy(name_, name.data(), name.size());
        table_.store(new_table(64), std::memory_order_relaxed);
    }

    Table *new_table(std::size_t cap) {
        std::size_t bytes = sizeof(Table) + cap * sizeof(Slot);
        void *mem = ::operator new(bytes);
        Table *t = new (mem) Table{cap - 1, nullptr};
        for (std::size_t i = 0; i < cap; i++) new (&t->slots()[i]) Slot(0);
        bytes_.fetch_add(bytes, std::memory_order_relaxed);
        return t;
    }

    bool front_find(const Params &p, std::uint64_t h, T *results) noexcept {
        const Node *n = lookup(p, h);
        if (!n) return false;
        std::memcpy(static_cast<void *>(results), &n->value, sizeof(T));
        std::uint32_t e = epoch_.load(std::memory_order_relaxed);
        if (n->seen.load(std::memory_order_relaxed) != e) touch(n, e);
        return true;
    }

    /* The hot path: no lock, no shared write. */
    const Node *lookup(const Params &p, std::uint64_t h) const noexcept {
        Table *t = table_.load(std::memory_order_acquire);
        Slot *s = t->slots();
        const std::uintptr_t tag = tag_of(h);
        for (std::size_t i = static_cast<std::size_t>(h) & t->mask;; i = (i + 1) & t->mask) {
            std::uintptr_t v = s[i].load(std::memory_order_acquire);
            if (!v) return nullptr;
            if ((v & tag_mask) == tag) {
                const Node *n = node_of(v);
                if (std::memcmp(&n->key, &p, sizeof(Params)) == 0) return n;
            }
        }
    }

    Node *alloc_node() {
        Block *b = blocks_;
        if (!b || b->used == b->cap) {
            std::size_t cap = b ? (b->cap < 4096 ? b->cap * 2 : 4096) : 16;
            std::size_t bytes = sizeof(Block) + cap * sizeof(Node);
            void *mem = ::operator new(bytes, std::align_val_t(alignof(Block)));
            b = new (mem) Block{blocks_, 0, cap};
            blocks_ = b;
            bytes_.fetch_add(bytes, std::memory_order_relaxed);
        }
        return b->nodes() + b->used++;
    }

    /* Publishes params -> value. replace: overwrite an existing entry (an
     * insert); otherwise keep it (a fill from the library must not undo a
     * newer insert that raced with it). Tables grow at a load of 0.8. */
    void put(const Params &p, std::uint64_t h, const T &value, bool replace) {
        std::lock_guard<std::mutex> g(mu_);
        Table *t = table_.load(std::memory_order_relaxed);
        const std::uintptr_t tag = tag_of(h);
        std::size_t i = static_cast<std::size_t>(h) & t->mask;
        for (;; i = (i + 1) & t->mask) {
            std::uintptr_t v = t->slots()[i].load(std::memory_order_relaxed);
            if (!v) break;
            const Node *n = node_of(v);
            if ((v & tag_mask) == tag && std::memcmp(&n->key, &p, sizeof(Params)) == 0) {
                if (!replace || std::memcmp(&n->value, &value, sizeof(T)) == 0) return;
                t->slots()[i].store(make_slot(p, h, value), std::memory_order_release);
                return; /* the old node stays allocated: readers may hold it */
            }
        }
        std::size_t count = count_.load(std::memory_order_relaxed) + 1;
        if (count * 5 > (t->mask + 1) * 4) {
            t = grow(t);
            i = static_cast<std::size_t>(h) & t->mask;
            while (t->slots()[i].load(std::memory_order_relaxed)) i = (i + 1) & t->mask;
        }
        t->slots()[i].store(make_slot(p, h, value), std::memory_order_release);
        count_.store(count, std::memory_order_relaxed);
    }

    std::uintptr_t make_slot(const Params &p, std::uint64_t h, const T &value) {
        Node *n = alloc_node();
        std::memcpy(static_cast<void *>(&n->key), &p, sizeof(Params));
        std::memcpy(static_cast<void *>(&n->value), &value, sizeof(T));
        new (&n->seen) std::atomic<std::uint32_t>(epoch_.load(std::memory_order_relaxed));
        return reinterpret_cast<std::uintptr_t>(n) | tag_of(h);
    }

    /* Builds a table twice the size and publishes it. Hashes are not kept
     * in nodes (to keep them small); they are recomputed here, under the
     * writers' mutex. */
    Table *grow(Table *old) {
        Table *t = new_table((old->mask + 1) * 2);
        for (std::size_t j = 0; j <= old->mask; j++) {
            std::uintptr_t v = old->slots()[j].load(std::memory_order_relaxed);
            if (!v) continue;
            std::uint64_t h = hash_bytes(&node_of(v)->key, sizeof(Params));
            std::size_t i = static_cast<std::size_t>(h) & t->mask;
            while (t->slots()[i].load(std::memory_order_relaxed)) i = (i + 1) & t->mask;
            t->slots()[i].store(v, std::memory_order_relaxed);
        }
        t->retired = old; /* freed by the destructor: readers may still be in it */
        table_.store(t, std::memory_order_release);
        return t;
    }

    convcache_handle *handle_for(const Params &p) noexcept {
        return devices_ ? devices_->try_handle(policy_.device(p)) : fixed_;
    }

    template <class F>
    void each_handle(F &&f) {
        if (devices_) devices_->for_each_handle(f);
        else if (fixed_) f(fixed_);
    }

    /* name NUL normalised-params */
    std::size_t library_key(const Params &p, KeyBuf &k) const {
        std::memcpy(k.b, name_, name_len_);
        k.b[name_len_] = 0;
        Params q;
        std::memcpy(static_cast<void *>(&q), &p, sizeof(Params));
        policy_.normalize(q);
        std::memcpy(k.b + name_len_ + 1, &q, sizeof(Params));
        return name_len_ + 1 + sizeof(Params);
    }

    bool find_slow(const Params &p, std::uint64_t h, T *results) {
        convcache_handle *c = handle_for(p);
        if (!c) return false;
        KeyBuf k;
        std::size_t klen = library_key(p, k);
        alignas(T) unsigned char buf[sizeof(T)];
        std::size_t n = 0;
        int rc = convcache_find(c, k.b, klen, buf, sizeof buf, &n);
        if (rc == CONVCACHE_HIT) {
            if (n != sizeof(T)) return false;
            T v;
            std::memcpy(static_cast<void *>(&v), buf, sizeof(T));
            put(p, h, v, false);
            /* Return what the front map holds: a racing insert wins. */
            if (const Node *node = lookup(p, h)) {
                std::memcpy(static_cast<void *>(results), &node->value, sizeof(T));
            } else {
                std::memcpy(static_cast<void *>(results), buf, sizeof(T));
            }
            return true;
        }
        if (rc >= 0 || rc == CONVCACHE_E_RANGE || rc == CONVCACHE_E_FORKED) return false;
        error::raise("convcache_find", rc);
    }

    /* The first front-map hit of a node in an epoch: ask the library once,
     * so it marks the entry used (LRU) and a newer value replaces ours. */
    void touch(const Node *n, std::uint32_t e) noexcept {
        if (n->seen.exchange(e, std::memory_order_relaxed) == e) return;
        try {
            convcache_handle *c = handle_for(n->key);
            if (!c) return;
            KeyBuf k;
            std::size_t klen = library_key(n->key, k);
            alignas(T) unsigned char buf[sizeof(T)];
            std::size_t len = 0;
            int rc = convcache_find(c, k.b, klen, buf, sizeof buf, &len);
            if (rc == CONVCACHE_HIT && len == sizeof(T) && std::memcmp(buf, &n->value, sizeof(T)) != 0) {
                T v;
                std::memcpy(static_cast<void *>(&v), buf, sizeof(T));
                put(n->key, hash_bytes(&n->key, sizeof(Params)), v, true);
            }
        } catch (...) {
            /* Best effort: a failed touch only weakens LRU. */
        }
    }

    /* Read by every find: kept apart from what writers change. */
    alignas(64) std::atomic<Table *> table_{nullptr};
    std::atomic<std::uint32_t> epoch_{1};
    convcache_handle *fixed_ = nullptr;
    DeviceCaches *devices_ = nullptr;
    KeyPolicy policy_;
    std::size_t name_len_ = 0;
    char name_[max_name];

    alignas(64) std::mutex mu_;
    std::atomic<std::size_t> count_{0};
    std::atomic<std::size_t> bytes_{0};
    Block *blocks_ = nullptr;
};

} // namespace convcache

#endif /* CONVCACHE_HPP */
