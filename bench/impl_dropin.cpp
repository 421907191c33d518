// bench_dropin - implementation (b): convcache through the C++ drop-in for
// PyTorch's BenchmarkCache (include/convcache.hpp): the same find/insert
// calls PyTorch makes. The drop-in calls the library's C hit path
// (convcache_find) directly and keeps no private map of its own (issue 17),
// so a drop-in process holds one index, the library's, as a C ABI process
// does.
#include "convcache.hpp"
#include "convcache_prep.hpp"
#include "workloads.hpp"

namespace {

// As bench_cabi: about the length of what convcache_cudnn_scope() writes.
const char *kScope = "cudnn-v1;gpu=NVIDIA H100 80GB HBM3;cc=9.0;sm=132;driver=13000;cudnn=91000;cudart=13000";

struct DropIn {
    static constexpr const char *kName = "convcache C++ drop-in";
    static constexpr bool kPersistent = true;
    static constexpr bool kWarmEveryKey = true;  // see bench_cabi
    static void ready() { bench::runtime_ready(); }

    convcache::Cache cache;
    convcache::BenchmarkCache<bench::Key, bench::Value> bc;

    explicit DropIn(const std::string &path) : cache(path.c_str(), kScope), bc(cache, "fwd") {}

    int load() { return bc.load(); }
    bool find(const bench::Key &k, bench::Value *v) { return bc.find(k, v); }
    int insert(const bench::Key &k, const bench::Value &v) {
        try {
            bc.insert(k, v);
            return 0;
        } catch (const convcache::error &e) {
            return e.code() < 0 ? e.code() : -1;
        }
    }
    int save() { return bc.save() < 0 ? -1 : 0; }
    void begin_bulk() {}
    void end_bulk() {}
    void begin_writer() {}

    void finish_prep(uint64_t) {}
    static void after_prep(const std::string &path) { bench::compact_convcache(path, kScope); }

    struct Reader {
        DropIn &d;
        explicit Reader(DropIn &d_) : d(d_) {}
        bool find(const bench::Key &k, bench::Value *v) { return d.bc.find(k, v); }
    };
};

}  // namespace

int main(int argc, char **argv) { return bench::run<DropIn>(argc, argv); }
