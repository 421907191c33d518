// bench_cabi - implementation (a): convcache through its C ABI, exactly as a
// C caller uses it (convcache.h, linked against libconvcache.so).
#include "convcache.h"
#include "convcache_prep.hpp"
#include "workloads.hpp"

namespace {

// What convcache_cudnn_scope() writes is about this long.
const char *kScope = "cudnn-v1;gpu=NVIDIA H100 80GB HBM3;cc=9.0;sm=132;driver=13000;cudnn=91000;cudart=13000";

struct CAbi {
    static constexpr const char *kName = "convcache C ABI";
    static constexpr bool kPersistent = true;
    // The store may open lazily (the snapshot mapped, entries decoded on
    // demand or in the background): the hit workload asks every key once
    // before it times hits or reads the resident memory.
    static constexpr bool kWarmEveryKey = true;
    static void ready() { bench::runtime_ready(); }

    convcache_handle *c = nullptr;

    explicit CAbi(const std::string &path) {
        int rc = convcache_open(path.c_str(), kScope, &c);
        if (rc != CONVCACHE_OK) bench::die("convcache_open", convcache_last_error());
    }
    ~CAbi() { convcache_close(c); }

    // convcache_open read the file; load() picks up anything newer.
    int load() { return convcache_load(c); }

    bool find(const bench::Key &k, bench::Value *v) {
        size_t n = 0;
        return convcache_find(c, &k, sizeof k, v, sizeof *v, &n) == CONVCACHE_HIT;
    }

    int insert(const bench::Key &k, const bench::Value &v) {
        return convcache_insert(c, &k, sizeof k, &v, sizeof v);
    }

    int save() { return convcache_save(c); }
    void begin_bulk() {}
    void end_bulk() {}
    void begin_writer() {}

    void finish_prep(uint64_t) {}
    static void after_prep(const std::string &path) { bench::compact_convcache(path, kScope); }

    struct Reader {
        convcache_handle *c;
        explicit Reader(CAbi &a) : c(a.c) {}
        bool find(const bench::Key &k, bench::Value *v) {
            size_t n = 0;
            return convcache_find(c, &k, sizeof k, v, sizeof *v, &n) == CONVCACHE_HIT;
        }
    };
};

}  // namespace

int main(int argc, char **argv) { return bench::run<CAbi>(argc, argv); }
