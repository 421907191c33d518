/*
 * convcache_devices.hpp - one cache handle per device model, and the key
 * policies that say which device a key belongs to (C++17). Part of the C++
 * interface: convcache.hpp includes it, and it may be included first.
 *
 * A cuDNN benchmark result is valid for a GPU model, driver and library
 * versions (the scope), not for a device index: DeviceCaches opens one
 * handle per distinct scope, and a key policy (device_key) picks the
 * device from the key and stores the key with the index zeroed, so that
 * equal GPUs share results whatever their index.
 */
#include "convcache.hpp" /* first, outside the guard: see convcache.hpp's end */

#ifndef CONVCACHE_DEVICES_HPP
#define CONVCACHE_DEVICES_HPP

#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace convcache {

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
 * local map keeps the caller's key unchanged. */

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

} // namespace convcache

#endif /* CONVCACHE_DEVICES_HPP */
