/*
 * convcache_v8.hpp - a drop-in for PyTorch's cuDNN v8 BenchmarkCache
 * (aten/src/ATen/native/cudnn/Conv_v8.cpp), backed by convcache's
 * persistent engine-choice cache.
 *
 * PyTorch's v8 path keeps, per thread, an LRU map from a CacheKey
 * (ConvolutionParams + operation + x/w/y alignments) to a
 * cudnn_frontend::ExecutionPlan. A plan is tied to a cuDNN handle and cannot
 * be stored; the choice it was built from can (convcache_engine.h). So:
 *
 *   find(key)            the thread's own LRU, as PyTorch's: a pointer or
 *                        nullptr; never touches the file.
 *   find(key, rebuild)   the LRU; on a miss, the persistent cache: a stored
 *                        choice is handed to rebuild(choice), which builds
 *                        a plan from it (it needs the operation graph, which
 *                        only the call site has) and returns
 *                        std::optional<Plan>. The plan is verified
 *                        (convcache_engine_verify: the engine and every knob
 *                        as recorded) and kept in the LRU. A rebuild that
 *                        fails, throws or runs something else is a miss: the
 *                        caller benchmarks as before, and update() replaces
 *                        the stale entry. The choice rebuild gets has
 *                        workspace 0: a stored size is not verified, so it
 *                        is not passed on; allocate what the plan says it
 *                        needs (cudnn_frontend's getWorkspaceSize(), or
 *                        convcache_engine_plan_choice(p)->workspace for a
 *                        plan convcache_engine_build_plan made).
 *   update(key, plan)    the LRU (a copy, as PyTorch's), and the plan's
 *                        choice into the file (convcache_engine_from_plan);
 *                        update(key, plan, false) keeps it in the LRU only
 *                        (a plan that was not benchmarked).
 *   emplace(key, args..) as update, constructing the plan in place.
 *   get_or_benchmark(key, rebuild, benchmark)
 *                        find(key, rebuild), else benchmark() -> Plan under
 *                        convcache_get_or_create: threads and processes that
 *                        miss the same key together benchmark it once, and
 *                        so do those that meet the same stale choice (one
 *                        stored that does not rebuild or does not check):
 *                        they share a build under a key derived from the
 *                        stale value (the key, "\0stale", the value's
 *                        64-bit FNV-1a), whose value is the replacement;
 *                        the one that benchmarks also replaces the choice
 *                        stored under key.
 *
 * The LRU is bounded as TORCH_CUDNN_V8_API_LRU_CACHE_LIMIT bounds PyTorch's
 * (lru_limit_from_env: default 10000 entries; 0 unbounded; negative turns
 * the cache off: find always misses, update keeps nothing, and nothing is
 * read from or written to the file). A pointer from find stays valid until
 * the next update, emplace or find on the same cache (which may evict it).
 *
 * Threads: an instance belongs to one thread (PyTorch declares its cache
 * thread_local, since cuDNN plans are not thread-safe); the DeviceCaches or
 * Cache under it is shared and thread-safe. Constructing one is cheap and
 * does not open anything: a thread_local is fine. The destructor frees the
 * thread's plans and touches nothing else.
 *
 * Keys: Key is stored as its bytes (PyTorch's CacheKeyWrapper: a 112-byte
 * trivially copyable pod, zeroed before filling); KeyPolicy picks the
 * device's scope and normalises the key (device_key<...>, as for v7). A
 * key type with a .pod member (PyTorch's ParamsWrapper) is read through it.
 *
 * Plan: whatever the call site executes; PlanDesc(plan) gives its
 * CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR (default: plan.get_raw_desc(), as
 * cudnn_frontend::ExecutionPlan has). Link -lconvcache_engine -lconvcache.
 */
#ifndef CONVCACHE_V8_HPP
#define CONVCACHE_V8_HPP

#include "convcache.hpp"
#include "convcache_engine.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <list>
#include <optional>
#include <unordered_map>

namespace convcache {
namespace v8 {

/* The LRU limit from an environment variable, parsed as PyTorch parses
 * TORCH_CUDNN_V8_API_LRU_CACHE_LIMIT: an integer, else def with a warning. */
inline long lru_limit_from_env(const char *name = "TORCH_CUDNN_V8_API_LRU_CACHE_LIMIT", long def = 10000) {
    const char *v = std::getenv(name);
    if (!v) return def;
    char *end = nullptr;
    errno = 0;
    long n = std::strtol(v, &end, 10);
    if (end == v || *end || errno == ERANGE || n < INT_MIN || n > INT_MAX) {
        std::fprintf(stderr, "convcache: invalid %s, using the default LRU limit of %ld entries\n", name, def);
        return def;
    }
    return n;
}

/* The default PlanDesc: cudnn_frontend::ExecutionPlan::get_raw_desc(). */
struct raw_desc {
    template <class Plan>
    void *operator()(const Plan &p) const {
        return (void *)p.get_raw_desc();
    }
};

/* Counters of one instance (one thread). */
struct v8_stats {
    std::uint64_t lru_hits = 0;       /* find answered by the thread's LRU */
    std::uint64_t file_hits = 0;      /* misses rebuilt from a stored choice */
    std::uint64_t misses = 0;         /* misses with nothing usable stored */
    std::uint64_t rebuild_failed = 0; /* stored choices that did not rebuild here */
    std::uint64_t stored = 0;         /* choices written to the file */
    std::uint64_t not_recordable = 0; /* plans whose choice could not be read */
    std::uint64_t evictions = 0;      /* LRU evictions */
};

/* A key policy for a key whose device index sits in a member of a member
 * (PyTorch: CacheKey::params.device_id): it picks the device's scope and is
 * stored as 0, as convcache::device_key does for a flat key. */
template <class Pod, auto ParamsField, auto DeviceField>
struct nested_device_key {
    int device(const Pod &p) const noexcept { return static_cast<int>((p.*ParamsField).*DeviceField); }
    void normalize(Pod &p) const noexcept { (p.*ParamsField).*DeviceField = 0; }
};

namespace detail {
template <class K, class = void>
struct key_pod {
    using type = K;
    static const K &of(const K &k) noexcept { return k; }
};
template <class K>
struct key_pod<K, std::void_t<decltype(std::declval<const K &>().pod)>> {
    using type = std::remove_cv_t<std::remove_reference_t<decltype(std::declval<const K &>().pod)>>;
    static const type &of(const K &k) noexcept { return k.pod; }
};
} // namespace detail

template <class Plan, class Key, class KeyPolicy = identity_key<typename detail::key_pod<Key>::type>,
          class PlanDesc = raw_desc>
class BenchmarkCache {
    using Pod = typename detail::key_pod<Key>::type;
    static_assert(std::is_trivially_copyable<Pod>::value, "v8::BenchmarkCache: the key is stored as its bytes");
    static_assert(sizeof(Pod) + 65 + 14 <= CONVCACHE_KEY_MAX, "v8::BenchmarkCache: key too large");

public:
    static constexpr std::size_t max_name = 64;

    /* Entries go through the handle of their device's scope. */
    BenchmarkCache(DeviceCaches &caches, std::string_view name, long lru_limit = lru_limit_from_env(),
                   KeyPolicy policy = KeyPolicy(), PlanDesc desc = PlanDesc())
        : devices_(&caches), limit_(lru_limit), policy_(std::move(policy)), desc_(std::move(desc)) {
        init(name);
    }

    /* Entries go through cache (one scope for all devices). */
    BenchmarkCache(Cache &cache, std::string_view name, long lru_limit = lru_limit_from_env(),
                   KeyPolicy policy = KeyPolicy(), PlanDesc desc = PlanDesc())
        : fixed_(cache.handle()), limit_(lru_limit), policy_(std::move(policy)), desc_(std::move(desc)) {
        init(name);
    }

    BenchmarkCache(const BenchmarkCache &) = delete;
    BenchmarkCache &operator=(const BenchmarkCache &) = delete;

    /* PyTorch's find: the thread's LRU only. */
    Plan *find(const Key &key) {
        if (limit_ < 0) return nullptr;
        auto it = map_.find(bytes_of(key));
        if (it == map_.end()) return nullptr;
        order_.splice(order_.end(), order_, it->second);
        stats_.lru_hits++;
        return &it->second->second;
    }

    /* find, then a stored choice rebuilt by rebuild(const
     * convcache_engine_choice &) -> std::optional<Plan>. */
    template <class Rebuild>
    Plan *find(const Key &key, Rebuild &&rebuild) {
        if (Plan *p = find(key)) return p;
        if (limit_ < 0) return nullptr;
        Stored s;
        load(key, s);
        return from_stored(key, s, rebuild);
    }

    /* PyTorch's update: keep a copy of plan, and store its choice (unless
     * persist is false: for plans that were not benchmarked, such as
     * PyTorch's heuristics-only path, so that a guess is never read back as
     * a measured winner). */
    void update(const Key &key, Plan &plan, bool persist = true) {
        if (limit_ < 0) return;
        if (persist) store(key, plan);
        put(key, Plan(plan));
    }

    /* As update, constructing the plan from args in place. */
    template <class... Args>
    Plan *emplace(const Key &key, Args &&...args) {
        if (limit_ < 0) return nullptr;
        Plan &p = put(key, Plan(std::forward<Args>(args)...));
        store(key, p);
        return &p;
    }

    /* find(key, rebuild), else benchmark() -> Plan, once among the threads
     * and processes that miss key together or meet the same stale choice
     * for it. benchmark's exceptions propagate; nothing is stored then. */
    template <class Rebuild, class Benchmark>
    Plan *get_or_benchmark(const Key &key, Rebuild &&rebuild, Benchmark &&benchmark) {
        if (Plan *p = find(key)) return p;
        if (limit_ < 0) return nullptr;
        Stored s;
        load(key, s);
        if (Plan *p = from_stored(key, s, rebuild)) return p;
        if (convcache_handle *h = handle_for(key)) {
            /* Nothing stored: single flight on key. A stale value: on the key
             * derived from it, since key itself holds a value and would be a
             * "hit" to get_or_create. */
            KeyBuf k;
            std::size_t klen = library_key(key, k);
            if (s.present) klen = stale_key(k, klen, s.digest);
            std::optional<Plan> mine;
            BenchCall<std::remove_reference_t<Benchmark>> call{&benchmark, &mine, desc_, nullptr};
            convcache_engine_choice c;
            std::size_t n = 0;
            int rc = convcache_get_or_create(h, k.b, klen, &decltype(call)::trampoline, &call, &c, sizeof c, &n);
            if (call.thrown) std::rethrow_exception(call.thrown);
            if (mine) { /* this call benchmarked (and stored the choice under k) */
                if (s.present)
                    store(key, *mine); /* replace the stale choice */
                else
                    stats_.stored += rc == CONVCACHE_OK;
                return &put(key, std::move(*mine));
            }
            convcache_engine_choice theirs;
            if (rc == CONVCACHE_HIT && convcache_engine_check(&c, n, &theirs) == CONVCACHE_ENGINE_OK) {
                /* another thread or process benchmarked: rebuild its choice */
                if (Plan *p = rebuild_choice(key, theirs, rebuild)) return p;
            }
        }
        /* No cache, or a choice that does not rebuild here: benchmark. */
        Plan plan = benchmark();
        store(key, plan);
        return &put(key, std::move(plan));
    }

    std::size_t size() const noexcept { return map_.size(); }
    const v8_stats &stats() const noexcept { return stats_; }
    long lru_limit() const noexcept { return limit_; }

private:
    /* name NUL key, and for a stale value's flight "\0stale" and its digest */
    static constexpr char stale_tag[] = {'\0', 's', 't', 'a', 'l', 'e'};
    struct KeyBuf {
        unsigned char b[max_name + 1 + sizeof(Pod) + sizeof stale_tag + 8];
    };
    /* What the file holds for a key. */
    struct Stored {
        bool present = false;     /* a value is stored */
        bool usable = false;      /* and it checks as a choice: c */
        std::uint64_t digest = 0; /* of the value (of its length when longer than a choice) */
        convcache_engine_choice c;
    };
    /* The key's bytes: equality as PyTorch's memcmp, no allocation per find. */
    struct Bytes {
        unsigned char b[sizeof(Pod)];
        bool operator==(const Bytes &o) const noexcept { return std::memcmp(b, o.b, sizeof b) == 0; }
    };
    struct BytesHash {
        std::size_t operator()(const Bytes &k) const noexcept {
            return static_cast<std::size_t>(hash_bytes(k.b, sizeof k.b));
        }
    };
    using Order = std::list<std::pair<Bytes, Plan>>;

    template <class Benchmark>
    struct BenchCall {
        Benchmark *benchmark;
        std::optional<Plan> *out;
        PlanDesc desc;
        std::exception_ptr thrown;
        static int trampoline(void *user, const void *, std::size_t, void *value, std::size_t cap,
                              std::size_t *len) noexcept {
            auto *self = static_cast<BenchCall *>(user);
            try {
                self->out->emplace((*self->benchmark)());
                convcache_engine_choice c;
                if (cap < sizeof c || convcache_engine_from_plan(self->desc(**self->out), &c, nullptr) != 0)
                    return CONVCACHE_E_USER - 2; /* keep the plan, store nothing */
                std::memcpy(value, &c, sizeof c);
                *len = sizeof c;
                return 0;
            } catch (...) {
                self->thrown = std::current_exception();
                return CONVCACHE_E_USER - 1;
            }
        }
    };

    void init(std::string_view name) {
        if (name.size() > max_name || name.find('\0') != std::string_view::npos)
            throw invalid_error("convcache::v8::BenchmarkCache", CONVCACHE_E_INVALID,
                                "name longer than 64 bytes or with a NUL");
        name_.assign(name.data(), name.size());
    }

    static Bytes bytes_of(const Key &key) {
        Bytes b;
        std::memcpy(b.b, &detail::key_pod<Key>::of(key), sizeof(Pod));
        return b;
    }

    Plan &put(const Key &key, Plan &&plan) {
        Bytes b = bytes_of(key);
        auto it = map_.find(b);
        if (it != map_.end()) {
            order_.erase(it->second);
            map_.erase(it);
        } else if (limit_ > 0 && map_.size() >= static_cast<std::size_t>(limit_)) {
            map_.erase(order_.front().first);
            order_.pop_front();
            stats_.evictions++;
        }
        order_.emplace_back(b, std::move(plan));
        auto last = std::prev(order_.end());
        map_.emplace(b, last);
        return last->second;
    }

    convcache_handle *handle_for(const Key &key) noexcept {
        return devices_ ? devices_->try_handle(policy_.device(detail::key_pod<Key>::of(key))) : fixed_;
    }

    /* name NUL normalised-key, as convcache::BenchmarkCache stores keys */
    std::size_t library_key(const Key &key, KeyBuf &k) const {
        std::memcpy(k.b, name_.data(), name_.size());
        k.b[name_.size()] = 0;
        Pod q;
        std::memcpy(static_cast<void *>(&q), &detail::key_pod<Key>::of(key), sizeof(Pod));
        policy_.normalize(q);
        std::memcpy(k.b + name_.size() + 1, &q, sizeof(Pod));
        return name_.size() + 1 + sizeof(Pod);
    }

    /* stale_key: k (klen bytes) followed by stale_tag and digest. */
    static std::size_t stale_key(KeyBuf &k, std::size_t klen, std::uint64_t digest) noexcept {
        std::memcpy(k.b + klen, stale_tag, sizeof stale_tag);
        for (int i = 0; i < 8; i++) k.b[klen + sizeof stale_tag + i] = static_cast<unsigned char>(digest >> (8 * i));
        return klen + sizeof stale_tag + 8;
    }

    /* FNV-1a, 64 bits: part of the stale flight's key, so fixed for good. */
    static std::uint64_t fnv1a(const unsigned char *p, std::size_t n) noexcept {
        std::uint64_t h = 0xcbf29ce484222325ULL;
        for (std::size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ULL;
        return h;
    }

    /* load: what is stored for key. A forked child, a missing library or a
     * handle closed under us read as nothing stored. */
    void load(const Key &key, Stored &s) {
        convcache_handle *h = handle_for(key);
        if (!h) return;
        KeyBuf k;
        std::size_t klen = library_key(key, k), n = 0;
        unsigned char buf[sizeof(convcache_engine_choice)];
        int rc = convcache_find(h, k.b, klen, buf, sizeof buf, &n);
        if (rc == CONVCACHE_HIT) {
            s.present = true;
            s.digest = fnv1a(buf, n);
            s.usable = convcache_engine_check(buf, n, &s.c) == CONVCACHE_ENGINE_OK;
            return;
        }
        if (rc == CONVCACHE_E_RANGE) { /* longer than any choice: not one */
            unsigned char len[8];
            for (int i = 0; i < 8; i++) len[i] = static_cast<unsigned char>(static_cast<std::uint64_t>(n) >> (8 * i));
            s.present = true;
            s.digest = fnv1a(len, sizeof len);
            return;
        }
        if (rc >= 0 || rc == CONVCACHE_E_FORKED || rc == CONVCACHE_E_HANDLE) return;
        error::raise("convcache_find", rc);
    }

    /* from_stored: the plan rebuilt from a usable stored choice, else a
     * miss (nullptr). */
    template <class Rebuild>
    Plan *from_stored(const Key &key, const Stored &s, Rebuild &rebuild) {
        Plan *p = s.usable ? rebuild_choice(key, s.c, rebuild) : nullptr;
        if (!p) stats_.misses++;
        return p;
    }

    /* rebuild_choice: rebuild(c) verified to run c's engine and knobs, kept
     * in the LRU; nullptr when it fails, throws or runs something else. The
     * hook gets c with workspace 0: a stored size is unverified, and the
     * plan has its own. */
    template <class Rebuild>
    Plan *rebuild_choice(const Key &key, const convcache_engine_choice &c, Rebuild &rebuild) {
        convcache_engine_choice asked = c;
        asked.workspace = 0;
        std::optional<Plan> plan;
        if (convcache_engine_seal(&asked) == CONVCACHE_ENGINE_OK) {
            try {
                plan = rebuild(static_cast<const convcache_engine_choice &>(asked));
            } catch (const std::exception &) {
                plan.reset(); /* cudnn_frontend throws when cuDNN refuses: a miss */
            }
        }
        if (!plan || convcache_engine_verify(desc_(*plan), &asked, nullptr) != CONVCACHE_ENGINE_OK) {
            stats_.rebuild_failed++;
            return nullptr;
        }
        stats_.file_hits++;
        return &put(key, std::move(*plan));
    }

    /* store: the plan's choice into the file (replacing a stale one). */
    void store(const Key &key, const Plan &plan) {
        convcache_handle *h = handle_for(key);
        if (!h) return;
        convcache_engine_choice c;
        if (convcache_engine_from_plan(desc_(plan), &c, nullptr) != CONVCACHE_ENGINE_OK) {
            stats_.not_recordable++;
            return;
        }
        KeyBuf k;
        std::size_t klen = library_key(key, k);
        int rc = convcache_insert(h, k.b, klen, &c, sizeof c);
        if (rc == CONVCACHE_E_FORKED || rc == CONVCACHE_E_HANDLE || insert_kept(rc)) {
            stats_.stored += rc >= 0;
            return;
        }
        error::raise("convcache_insert", rc);
    }

    DeviceCaches *devices_ = nullptr;
    convcache_handle *fixed_ = nullptr;
    long limit_;
    KeyPolicy policy_;
    PlanDesc desc_;
    std::string name_;
    Order order_;
    std::unordered_map<Bytes, typename Order::iterator, BytesHash> map_;
    v8_stats stats_;
};

} // namespace v8
} // namespace convcache

#endif /* CONVCACHE_V8_HPP */
