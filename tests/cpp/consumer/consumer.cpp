// A consumer of the installed package (C++17): the drop-in BenchmarkCache,
// an insert through one Cache, a find through a fresh one.
#include <convcache.hpp>

#include <cstdio>
#include <cstring>

struct Params {
    int32_t n, c, h, w, k;
};
struct Perf {
    int32_t algo;
    float ms;
};

int main() {
    Params p;
    std::memset(&p, 0, sizeof p);
    p.n = 8, p.c = 64, p.h = 56, p.w = 56, p.k = 64;
    {
        convcache::Cache cache(nullptr, "consumer-cxx"); // $CONVCACHE_PATH
        convcache::BenchmarkCache<Params, Perf> algos(cache, "fwd");
        algos.insert(p, Perf{6, 0.25f});
    }
    convcache::Cache cache(nullptr, "consumer-cxx");
    convcache::BenchmarkCache<Params, Perf> algos(cache, "fwd");
    Perf out{};
    if (!algos.find(p, &out) || out.algo != 6) {
        std::fprintf(stderr, "consumer (C++): the value did not come back\n");
        return 1;
    }
    std::printf("consumer (C++): convcache %s: found the value\n", convcache_version());
    return 0;
}
