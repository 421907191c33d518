/*
 * convcache_benchmark.hpp - BenchmarkCache<Params, T, KeyPolicy>, a drop-in
 * for PyTorch's cuDNN BenchmarkCache over convcache (C++17): bool
 * find(const Params&, T*), void insert(const Params&, const T&), int load(),
 * int save(), plus getOrCreate(params, builder) for OpenVINO-style executor
 * caches. Part of the C++ interface: convcache.hpp includes it, and it may
 * be included first. docs/cxx.md explains the design; in brief:
 *
 *   - find() asks the library, whose hit path is answered in C from the one
 *     index of the process (no Go, no lock): there is no second map, so a
 *     hit is as fresh as the library's and a drop-in process holds what a C
 *     process holds. A miss there sees what other processes wrote.
 *     insert() writes through to the library (the file, before it returns).
 *   - A local map holds only what the library cannot answer from memory:
 *     no handle for the device, a child forked after the library started (a
 *     PyTorch DataLoader worker: hits come from the index the parent had at
 *     the fork, through convcache_peek, and the child's own inserts stay in
 *     the child), CONVCACHE_MODE_RECACHE (which ignores the library's
 *     hits), a handle closed under it (CONVCACHE_E_HANDLE: a host whose
 *     static destructors close the Cache while its threads still run
 *     convolutions). It is empty otherwise.
 *   - find() never throws on a miss; a stored value of another size than T is
 *     a miss, which insert() replaces. insert() does not throw when the
 *     library kept the value (CONVCACHE_PENDING, E_READONLY, E_NOSPC).
 *   - Destructors never throw and never save. A BenchmarkCache is neither
 *     copyable nor movable, must not outlive the Cache or DeviceCaches it was
 *     built on, nor be destroyed while other threads use it.
 */
#include "convcache.hpp" /* first, outside the guard: see convcache.hpp's end */

#ifndef CONVCACHE_BENCHMARK_HPP
#define CONVCACHE_BENCHMARK_HPP

#include "convcache_devices.hpp"
#include "convcache_hash.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <mutex>
#include <new>
#include <string_view>
#include <type_traits>
#include <utility>

namespace convcache {

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
        convcache_handle *c = handle_for(params);
        if (!c) return local_find(params, results);
        KeyBuf k;
        std::size_t klen = library_key(params, k);
        alignas(T) unsigned char buf[sizeof(T)];
        std::size_t n = 0;
        int rc = convcache_find(c, k.b, klen, buf, sizeof buf, &n);
        if (rc == CONVCACHE_HIT && n == sizeof(T)) {
            std::memcpy(static_cast<void *>(results), buf, sizeof(T));
            return true;
        }
        if (local_find(params, results)) return true;
        if (rc == CONVCACHE_E_FORKED) {
            /* The child's own inserts (above) win over what the parent had. */
            if (convcache_peek(c, k.b, klen, buf, sizeof buf, &n) == CONVCACHE_HIT && n == sizeof(T)) {
                std::memcpy(static_cast<void *>(results), buf, sizeof(T));
                return true;
            }
            return false;
        }
        if (rc >= 0 || rc == CONVCACHE_E_RANGE || rc == CONVCACHE_E_HANDLE) return false;
        error::raise("convcache_find", rc);
    }

    /* Stores results for params in the library (appended to the file before
     * this returns). Throws only when the library could not keep the value
     * (io_error, format_error, ...); the local map has it even then. */
    void insert(const Params &params, const T &results) {
        convcache_handle *c = handle_for(params);
        if (c) {
            KeyBuf k;
            std::size_t klen = library_key(params, k);
            int rc = convcache_insert(c, k.b, klen, &results, sizeof(T));
            if (insert_kept(rc) && served(c, k, klen, results)) {
                if (count_.load(std::memory_order_relaxed)) put(params, results, false, true);
                return;
            }
            if (rc != CONVCACHE_E_FORKED && rc != CONVCACHE_E_HANDLE && !insert_kept(rc)) {
                put(params, results, true, false);
                error::raise("convcache_insert", rc);
            }
        }
        put(params, results, true, false);
    }

    /* Picks up what other processes wrote (convcache_load on each handle
     * opened so far). Returns 0, CONVCACHE_E_FORKED in a forked child, or
     * CONVCACHE_E_HANDLE for a handle closed under it; throws on failures
     * (io_error, format_error, corrupt_error). */
    int load() {
        int soft = 0;
        each_handle([&](convcache_handle *c) {
            int rc = convcache_load(c);
            if (rc == CONVCACHE_E_FORKED || rc == CONVCACHE_E_HANDLE) soft = rc;
            else if (rc < 0) error::raise("convcache_load", rc);
        });
        return soft;
    }

    /* Makes everything inserted durable (convcache_save on each handle).
     * Returns 0, or one of the
     * codes under which nothing is lost and the host should carry on:
     * CONVCACHE_E_LOCK (lock busy: retry later), CONVCACHE_E_READONLY,
     * CONVCACHE_E_NOSPC (kept in memory), CONVCACHE_E_FORKED,
     * CONVCACHE_E_HANDLE (a handle closed under it). Throws for other
     * failures (io_error, ...). */
    int save() {
        int soft = 0;
        each_handle([&](convcache_handle *c) {
            int rc = convcache_save(c);
            if (rc == CONVCACHE_E_LOCK || rc == CONVCACHE_E_READONLY || rc == CONVCACHE_E_NOSPC ||
                rc == CONVCACHE_E_FORKED || rc == CONVCACHE_E_HANDLE) {
                if (!soft) soft = rc;
            } else if (rc < 0) {
                error::raise("convcache_save", rc);
            }
        });
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
        T v{};
        if (local_find(params, &v)) return {v, true};
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
                if (rc == CONVCACHE_OK && !served(c, k, klen, v)) put(params, v, true, false);
                return {v, rc == CONVCACHE_HIT};
            }
            if (rc == CONVCACHE_E_FORKED &&
                convcache_peek(c, k.b, klen, &v, sizeof(T), &n) == CONVCACHE_HIT && n == sizeof(T))
                return {v, true};
            /* A value of another size, a forked child, a closed handle:
             * build it here. */
            if (rc < 0 && rc != CONVCACHE_E_RANGE && rc != CONVCACHE_E_FORKED && rc != CONVCACHE_E_HANDLE)
                error::raise("convcache_get_or_create", rc);
        }
        v = builder(params);
        insert(params, v);
        return {v, false};
    }

    /* Entries in the local map (what the library could not answer: see the
     * top of this file; 0 in normal use), and the bytes it holds (nodes,
     * live table and the tables it outgrew), for memory accounting. */
    std::size_t size() const noexcept { return count_.load(std::memory_order_relaxed); }
    std::size_t memory_bytes() const noexcept { return bytes_.load(std::memory_order_relaxed); }

    const KeyPolicy &policy() const noexcept { return policy_; }

private:
    /* The local map: an insert-only open-addressing table (linear probing,
     * load at most 0.8) of node pointers, read without a lock, written under
     * mu_. A node is immutable: replaced, never modified. Aligned to 16 so
     * that a slot can carry 4 bits of the hash beside the pointer. */
    struct alignas(16) Node {
        Params key;
        T value;
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

    /* Whether the library answers key with value from memory (a peek): not
     * in CONVCACHE_MODE_RECACHE, nor with a verbose log, nor in a child. */
    static bool served(convcache_handle *c, const KeyBuf &k, std::size_t klen, const T &value) noexcept {
        alignas(T) unsigned char buf[sizeof(T)];
        std::size_t n = 0;
        return convcache_peek(c, k.b, klen, buf, sizeof buf, &n) == CONVCACHE_HIT && n == sizeof(T) &&
               std::memcmp(buf, &value, sizeof(T)) == 0;
    }

    bool local_find(const Params &p, T *results) const noexcept {
        if (!count_.load(std::memory_order_acquire)) return false;
        const Node *n = lookup(p, hash_bytes(&p, sizeof(Params)));
        if (!n) return false;
        std::memcpy(static_cast<void *>(results), &n->value, sizeof(T));
        return true;
    }

    /* No lock, no shared write. */
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

    /* Publishes params -> value in the local map. replace: overwrite an
     * existing entry; only_existing: change nothing if the key is absent
     * (the library has it). Tables grow at a load of 0.8. */
    void put(const Params &p, const T &value, bool replace, bool only_existing) {
        const std::uint64_t h = hash_bytes(&p, sizeof(Params));
        std::lock_guard<std::mutex> g(mu_);
        Table *t = table_.load(std::memory_order_relaxed);
        const std::uintptr_t tag = tag_of(h);
        std::size_t i = static_cast<std::size_t>(h) & t->mask;
        for (;; i = (i + 1) & t->mask) {
            std::uintptr_t v = t->slots()[i].load(std::memory_order_relaxed);
            if (!v) break;
            const Node *n = node_of(v);
            if ((v & tag_mask) == tag && std::memcmp(&n->key, &p, sizeof(Params)) == 0) {
                if (!replace && !only_existing) return;
                if (std::memcmp(&n->value, &value, sizeof(T)) == 0) return;
                t->slots()[i].store(make_slot(p, h, value), std::memory_order_release);
                return; /* the old node stays allocated: readers may hold it */
            }
        }
        if (only_existing) return;
        std::size_t count = count_.load(std::memory_order_relaxed) + 1;
        if (count * 5 > (t->mask + 1) * 4) {
            t = grow(t);
            i = static_cast<std::size_t>(h) & t->mask;
            while (t->slots()[i].load(std::memory_order_relaxed)) i = (i + 1) & t->mask;
        }
        t->slots()[i].store(make_slot(p, h, value), std::memory_order_release);
        count_.store(count, std::memory_order_release);
    }

    std::uintptr_t make_slot(const Params &p, std::uint64_t h, const T &value) {
        Node *n = alloc_node();
        std::memcpy(static_cast<void *>(&n->key), &p, sizeof(Params));
        std::memcpy(static_cast<void *>(&n->value), &value, sizeof(T));
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

    /* Read by every find: kept apart from what writers change. */
    alignas(64) std::atomic<Table *> table_{nullptr};
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

#endif /* CONVCACHE_BENCHMARK_HPP */
