// bench_stdmap - baseline (c): PyTorch's in-memory BenchmarkCache. Nothing
// persists: every process starts empty and benchmarks again.
#include "torch_map.hpp"
#include "workloads.hpp"

namespace {

struct StdMap {
    static constexpr const char *kName = "std::unordered_map";
    static constexpr bool kPersistent = false;
    static constexpr bool kWarmEveryKey = false;
    static void ready() {}

    bench::BenchmarkCache<bench::Value> cache;

    explicit StdMap(const std::string &) {}
    int load() { return 0; }
    bool find(const bench::Key &k, bench::Value *v) { return cache.find(k, v); }
    int insert(const bench::Key &k, const bench::Value &v) {
        cache.insert(k, v);
        return 0;
    }
    int save() { return 0; }
    void begin_bulk() {}
    void end_bulk() {}
    void begin_writer() {}
    static void after_prep(const std::string &) {}
    void finish_prep(uint64_t) {}

    struct Reader {
        StdMap &m;
        explicit Reader(StdMap &m_) : m(m_) {}
        bool find(const bench::Key &k, bench::Value *v) { return m.cache.find(k, v); }
    };
};

}  // namespace

int main(int argc, char **argv) { return bench::run<StdMap>(argc, argv); }
