// bench_cabi - implementation (a): convcache through its C ABI, exactly as a
// C caller uses it (convcache.h, linked against libconvcache.so).
#include "convcache.h"
#include "workloads.hpp"

namespace {

// What convcache_cudnn_scope() writes is about this long.
const char *kScope = "cudnn-v1;gpu=NVIDIA H100 80GB HBM3;cc=9.0;sm=132;driver=13000;cudnn=91000;cudart=13000";

struct CAbi {
    static constexpr const char *kName = "convcache C ABI";
    static constexpr bool kPersistent = true;

    convcache *c = nullptr;

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

    // Leave the file fully compacted, for the bytes-per-entry figure. A save
    // compacts once the journal exceeds both 4 MiB and the snapshot; after
    // the fill, part of the entries can still sit in the journal. Each round
    // here finds every key and saves, which appends a touch record (8 bytes
    // per used entry) until a save compacts and the journal is empty.
    void finish_prep(uint64_t n) {
        for (int round = 0; round < 1000; round++) {
            struct convcache_stats st;
            std::memset(&st, 0, sizeof st);
            st.struct_size = sizeof st;
            if (convcache_stats(c, &st) != CONVCACHE_OK) bench::die("convcache_stats");
            if (st.journal_bytes == 0 && st.compactions > 0) return;
            bench::Value v;
            for (uint64_t i = 0; i < n; i++) find(bench::make_key(i), &v);
            if (convcache_save(c) != CONVCACHE_OK) bench::die("convcache_save", convcache_last_error());
        }
        bench::die("the file never compacted");
    }

    struct Reader {
        convcache *c;
        explicit Reader(CAbi &a) : c(a.c) {}
        bool find(const bench::Key &k, bench::Value *v) {
            size_t n = 0;
            return convcache_find(c, &k, sizeof k, v, sizeof *v, &n) == CONVCACHE_HIT;
        }
    };
};

}  // namespace

int main(int argc, char **argv) { return bench::run<CAbi>(argc, argv); }
