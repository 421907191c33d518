// convcache.hpp over the run-time loader (CONVCACHE_DYNAMIC): built with no
// -lconvcache. Run as `test_hpp_dynamic present` with the library reachable
// and `test_hpp_dynamic absent` without it: the drop-in must keep working
// (from memory) and never throw for a missing library.
#define CONVCACHE_DYNAMIC 1
#include "convcache.hpp"

#include "check.hpp"

using namespace testutil;
namespace cc = convcache;

int main(int argc, char **argv) {
    CHECK(argc == 2);
    bool present = std::strcmp(argv[1], "present") == 0;
    CHECK(convcache_dynamic_available() == (present ? 1 : 0));
    std::string p = path("dyn.ccdb");
    Perf out{};
    {
        cc::Cache cache(p.c_str(), "d"); // opens (a placeholder when absent)
        CHECK(cache);
        cc::BenchmarkCache<Params, Perf> fwd(cache, "fwd");
        CHECK(!fwd.find(make_params(1), &out));
        fwd.insert(make_params(1), make_perf(1));
        CHECK(fwd.find(make_params(1), &out) && same(out, make_perf(1)));
        int builds = 0;
        auto r = fwd.getOrCreate(make_params(2), [&](const Params &) {
            builds++;
            return make_perf(2);
        });
        CHECK(!r.second && same(r.first, make_perf(2)) && builds == 1);
        CHECK(fwd.save() == 0);
        CHECK(fwd.load() == 0);
        if (present) {
            CHECK(cache.stats().entries == 2);
        } else {
            CHECK_THROWS(cache.stats(), cc::unavailable_error);
        }
    }
    // A fresh handle: the entries come back from the file only if the
    // library is there.
    cc::Cache cache(p.c_str(), "d");
    cc::BenchmarkCache<Params, Perf> fwd(cache, "fwd");
    CHECK(fwd.find(make_params(1), &out) == present);
    CHECK(fwd.find(make_params(2), &out) == present);
    std::printf("test_hpp_dynamic %s: all passed\n", argv[1]);
    return 0;
}
