// Find-hit cost of convcache::BenchmarkCache beside PyTorch's own pattern
// (std::mutex + std::unordered_map keyed by the 104-byte ConvolutionParams
// with 32-bit FNV-1a over every byte, memcmp equality), from the same run:
// 100k entries, 48-byte values, random access, 1 and 2 threads, and the
// memory each map holds per entry. A measurement, not a test: it asserts
// nothing about speed. Usage: bench_front [entries] [finds-per-thread]
#include "convcache.hpp"

#include <algorithm>
#include <chrono>
#include <malloc.h>
#include <mutex>
#include <random>
#include <thread>
#include <unordered_map>
#include <vector>

#include "check.hpp"

using namespace testutil;
namespace cc = convcache;

// ---- the baseline: PyTorch's BenchmarkCache (Conv_v7.cpp, ConvShared.h) ----
// (ParamsHash and ParamsEqual: examples/pytorch/convolution_params.hpp.)

static std::atomic<uint64_t> g_sink{0};
static size_t g_counted = 0; // bytes the baseline's allocator handed out
template <class U>
struct Counting {
    using value_type = U;
    Counting() = default;
    template <class V>
    Counting(const Counting<V> &) {}
    U *allocate(size_t n) {
        g_counted += n * sizeof(U);
        return std::allocator<U>().allocate(n);
    }
    void deallocate(U *p, size_t n) {
        g_counted -= n * sizeof(U);
        std::allocator<U>().deallocate(p, n);
    }
    template <class V>
    bool operator==(const Counting<V> &) const { return true; }
    template <class V>
    bool operator!=(const Counting<V> &) const { return false; }
};

struct Baseline {
    std::mutex mutex;
    std::unordered_map<Params, Perf, ParamsHash<Params>, ParamsEqual<Params>, Counting<std::pair<const Params, Perf>>> map;
    bool find(const Params &params, Perf *results) {
        std::lock_guard<std::mutex> guard(mutex);
        auto it = map.find(params);
        if (it == map.end()) return false;
        *results = it->second;
        return true;
    }
    void insert(const Params &params, const Perf &results) {
        std::lock_guard<std::mutex> guard(mutex);
        map[params] = results;
    }
};

// ---- driver ----

static double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

template <class Map>
static double run(Map &m, const std::vector<Params> &keys, const std::vector<std::vector<uint32_t>> &orders,
                  int threads, size_t n) {
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::atomic<uint64_t> misses{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; t++) {
        ts.emplace_back([&, t] {
            const auto &ord = orders[t];
            ready.fetch_add(1);
            while (!go.load()) {
            }
            uint64_t miss = 0, sum = 0;
            for (size_t i = 0; i < n; i++) {
                Perf out;
                if (m.find(keys[ord[i % ord.size()]], &out)) sum += static_cast<uint64_t>(out.algo);
                else miss++;
            }
            misses.fetch_add(miss);
            g_sink.fetch_add(sum, std::memory_order_relaxed);
        });
    }
    while (ready.load() < threads) {
    }
    double t0 = now();
    go.store(true);
    for (auto &t : ts) t.join();
    double dt = now() - t0;
    CHECK(misses.load() == 0);
    return dt;
}

int main(int argc, char **argv) {
    size_t entries = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 100000;
    size_t finds = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 2000000;

    std::vector<Params> keys(entries);
    for (size_t i = 0; i < entries; i++) keys[i] = make_params(static_cast<uint32_t>(i));
    std::vector<std::vector<uint32_t>> orders(2, std::vector<uint32_t>(entries));
    std::mt19937 rng(42);
    for (auto &o : orders) {
        for (size_t i = 0; i < entries; i++) o[i] = static_cast<uint32_t>(i);
        std::shuffle(o.begin(), o.end(), rng);
    }

    // Baseline, with malloc's own view of what it holds.
    struct mallinfo2 m0 = mallinfo2();
    Baseline base;
    for (size_t i = 0; i < entries; i++) base.insert(keys[i], make_perf(static_cast<uint32_t>(i)));
    struct mallinfo2 m1 = mallinfo2();
    size_t base_heap = (m1.uordblks + m1.hblkhd) - (m0.uordblks + m0.hblkhd);

    // BenchmarkCache on a real file: inserts write through.
    std::string path = testutil::path("bench.ccdb");
    cc::Cache cache(path.c_str(), "bench");
    struct mallinfo2 m2 = mallinfo2();
    double ti = now();
    cc::BenchmarkCache<Params, Perf> fwd(cache, "fwd");
    for (size_t i = 0; i < entries; i++) fwd.insert(keys[i], make_perf(static_cast<uint32_t>(i)));
    ti = now() - ti;
    struct mallinfo2 m3 = mallinfo2();
    (void)m2;
    (void)m3;

    auto best = [&](auto &m, int threads) {
        double b = 1e9;
        for (int r = 0; r < 3; r++) b = std::min(b, run(m, keys, orders, threads, finds));
        return b;
    };
    double b1 = best(base, 1), f1 = best(fwd, 1);
    double b2 = best(base, 2), f2 = best(fwd, 2);
    double ns_b1 = b1 / finds * 1e9, ns_f1 = f1 / finds * 1e9;
    double ops_b2 = 2.0 * finds / b2, ops_f2 = 2.0 * finds / f2;

    std::printf("BenchmarkCache front map vs PyTorch baseline (std::mutex + unordered_map, FNV-1a 32)\n");
    std::printf("%zu entries, 104-byte keys, 48-byte values, random hits, best of 3\n", entries);
    std::printf("%-28s %14s %14s %8s\n", "", "baseline", "convcache", "ratio");
    std::printf("%-28s %11.1f ns %11.1f ns %7.2fx\n", "find hit, 1 thread", ns_b1, ns_f1, ns_f1 / ns_b1);
    std::printf("%-28s %10.2f M/s %10.2f M/s %7.2fx\n", "find hits, 2 threads", ops_b2 / 1e6, ops_f2 / 1e6,
                ops_f2 / ops_b2);
    std::printf("%-28s %10.1f B/e %10.1f B/e\n", "memory per entry (requested)",
                static_cast<double>(g_counted) / entries, static_cast<double>(fwd.memory_bytes()) / entries);
    std::printf("%-28s %10.1f B/e\n", "baseline incl. malloc headers", static_cast<double>(base_heap) / entries);
    std::printf("%-28s %10.0f /s   (write-through to the file)\n", "BenchmarkCache inserts", entries / ti);
    return 0;
}
