// The v8 drop-in (include/convcache_v8.hpp) against the stand-in cuDNN:
// PyTorch's LRU semantics, persistent hits rebuilt and verified, rebuilds
// that fail or run something else, stale entries replaced, the device key,
// the LRU limit's parsing, a forged workspace size never passed on, and
// 2 processes x 4 threads with thread_local caches benchmarking each shape
// once in all: shapes with nothing stored, and shapes whose stored choice
// is stale (does not rebuild, does not check, or is too long).
#include "backend_api.h"
#include "conv_graph.h"

#include <convcache_v8.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "../cpp/check.hpp"

static cg_api api;

// A plan as the call site holds it: shares its graph and its backend plan.
struct Held {
    cg_graph graph{};
    cudnnBackendDescriptor_t raw = nullptr;
    convcache_engine_plan *rebuilt = nullptr;
    ~Held() {
        if (raw) api.destroy(raw);
        convcache_engine_plan_destroy(rebuilt);
        cg_graph_free(&api, &graph);
    }
};
struct Plan {
    std::shared_ptr<Held> h;
    void *get_raw_desc() const { return h->rebuilt ? convcache_engine_plan_descriptor(h->rebuilt) : h->raw; }
    int64_t engine() const {
        convcache_engine_choice c;
        CHECK(convcache_engine_from_plan(get_raw_desc(), &c, nullptr) == 0);
        return c.engine;
    }
};

struct Key { // a CacheKey-shaped pod with the device in params
    struct Params {
        int16_t device_id;
        int32_t shape[6];
    } params;
    int32_t op;
};
using DevKey = convcache::v8::nested_device_key<Key, &Key::params, &Key::Params::device_id>;
using Cache8 = convcache::v8::BenchmarkCache<Plan, Key, DevKey>;

static Key key_of(int device, const cg_conv &cv) {
    Key k;
    std::memset(&k, 0, sizeof k);
    k.params.device_id = static_cast<int16_t>(device);
    int32_t s[6] = {int32_t(cv.n), int32_t(cv.c), int32_t(cv.h), int32_t(cv.k), int32_t(cv.r), int32_t(cv.stride)};
    std::memcpy(k.params.shape, s, sizeof s);
    k.op = cv.op;
    return k;
}

static cg_conv shape(int i) {
    return cg_conv{1 + i % 3, 1, 4 + 4 * (i % 3), 8 + i, 8 + i, 8, 1 + 2 * (i % 2), 1 + 2 * (i % 2), i % 2, 1};
}

static std::atomic<int> benchmarks{0};
static int bench_ms; // $V8_TEST_BENCH_MS: each benchmark takes this long at least

// Heuristic config number `pick` (the stand-in's order), as a benchmark would pick a winner.
static Plan plan_for(cudnnHandle_t h, const cg_conv &cv, int pick = 0) {
    auto held = std::make_shared<Held>();
    CHECK(cg_build(&api, h, &cv, &held->graph) == 0);
    cudnnBackendDescriptor_t cfgs[16];
    int n = 0;
    CHECK(cg_heuristics(&api, held->graph.graph, CUDNN_HEUR_MODE_INSTANT, cfgs, 16, &n) == 0 && n > pick);
    CHECK(cg_plan(&api, h, cfgs[pick], &held->raw) == 0);
    for (int i = 0; i < n; i++) api.destroy(cfgs[i]);
    return Plan{held};
}

static Plan benchmark(cudnnHandle_t h, const cg_conv &cv) {
    benchmarks++;
    if (bench_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(bench_ms));
    return plan_for(h, cv, 1);
}

// The rebuild hook: a fresh graph, the stored choice.
static auto rebuilder(cudnnHandle_t h, const cg_conv &cv) {
    return [h, cv](const convcache_engine_choice &c) -> std::optional<Plan> {
        auto held = std::make_shared<Held>();
        if (cg_build(&api, h, &cv, &held->graph) ||
            convcache_engine_build_plan(&c, h, held->graph.graph, &held->rebuilt, nullptr))
            return std::nullopt;
        return Plan{held};
    };
}

static std::string same_model(int device) { return device < 4 ? "model-A" : "model-B"; }

static void test_lru(cudnnHandle_t h) {
    convcache::DeviceCaches caches(testutil::path("lru.ccdb").c_str(), same_model);
    Cache8 c(caches, "lru", 2);
    Plan p0 = plan_for(h, shape(0)), p1 = plan_for(h, shape(1)), p2 = plan_for(h, shape(2));
    Key k0 = key_of(0, shape(0)), k1 = key_of(0, shape(1)), k2 = key_of(0, shape(2));
    CHECK(c.find(k0) == nullptr);
    c.update(k0, p0);
    c.update(k1, p1);
    CHECK(c.find(k0) != nullptr); // k0 is now the most recent: k1 goes first
    c.update(k2, p2);
    CHECK(c.size() == 2 && c.find(k1) == nullptr && c.find(k0) && c.find(k2));
    CHECK(c.stats().evictions == 1 && c.stats().stored == 3);
    CHECK(c.find(k0)->get_raw_desc() == p0.get_raw_desc());
    // Evicted from the LRU, not from the file: rebuilt from the stored choice.
    Plan *r = c.find(k1, rebuilder(h, shape(1)));
    CHECK(r && r->engine() == p1.engine() && c.stats().file_hits == 1);
    // 0: unbounded; negative: off (nothing kept, nothing read or written).
    Cache8 unbounded(caches, "lru0", 0);
    for (int i = 0; i < 5; i++) {
        Plan p = plan_for(h, shape(i));
        unbounded.update(key_of(0, shape(i)), p);
    }
    CHECK(unbounded.size() == 5 && unbounded.stats().evictions == 0);
    Cache8 off(caches, "lru", -1);
    off.update(k0, p0);
    CHECK(off.size() == 0 && off.find(k0) == nullptr && off.find(k0, rebuilder(h, shape(0))) == nullptr);
    CHECK(off.stats().stored == 0 && off.stats().file_hits == 0);
}

static void test_persistent(cudnnHandle_t h) {
    convcache::DeviceCaches caches(testutil::path("persist.ccdb").c_str(), same_model);
    const cg_conv cv = shape(4);
    Plan winner = plan_for(h, cv, 2);
    {
        Cache8 first(caches, "p");
        first.update(key_of(3, cv), winner); // a rank on device 3
    }
    Cache8 c(caches, "p");
    // PyTorch's find looks at the thread's LRU only.
    CHECK(c.find(key_of(0, cv)) == nullptr);
    // Device 0, the same GPU model: the choice made on device 3, rebuilt.
    Plan *p = c.find(key_of(0, cv), rebuilder(h, cv));
    CHECK(p && p->engine() == winner.engine() && c.stats().file_hits == 1);
    // Device 5, another model: a miss.
    CHECK(c.find(key_of(5, cv), rebuilder(h, cv)) == nullptr && c.stats().misses == 1);
    // A rebuild hook that fails, throws, or builds another engine: a miss.
    Cache8 d(caches, "p");
    CHECK(d.find(key_of(0, cv), [](const convcache_engine_choice &) -> std::optional<Plan> { return std::nullopt; }) == nullptr);
    CHECK(d.find(key_of(0, cv), [](const convcache_engine_choice &) -> std::optional<Plan> {
        throw std::runtime_error("cudnnException: CUDNN_STATUS_NOT_SUPPORTED");
    }) == nullptr);
    CHECK(d.find(key_of(0, cv), [&](const convcache_engine_choice &c) -> std::optional<Plan> {
        convcache_engine_choice other = c;
        other.engine = c.engine == 0 ? 3 : 0;
        other.knob_count = 0;
        if (other.engine == 3) other.knob_count = 1, other.knobs[0].type = CUDNN_KNOB_TYPE_SWIZZLE, other.knobs[0].value = 0;
        CHECK(convcache_engine_seal(&other) == 0);
        return rebuilder(h, cv)(other);
    }) == nullptr);
    CHECK(d.stats().rebuild_failed == 3 && d.size() == 0);
}

// A stored choice this cuDNN cannot rebuild: a miss, one benchmark, and
// update replaces it for the next process.
static void test_stale(cudnnHandle_t h) {
    convcache::DeviceCaches caches(testutil::path("stale.ccdb").c_str(), same_model);
    const cg_conv cv = shape(0); // forward: every engine runs it
    convcache_engine_choice e5;
    std::memset(&e5, 0, sizeof e5);
    e5.engine = 5, e5.knob_count = 1, e5.knobs[0].type = CUDNN_KNOB_TYPE_STAGES, e5.knobs[0].value = 2;
    CHECK(convcache_engine_seal(&e5) == 0);
    // Store engine 5's choice under the drop-in's key (name NUL normalised key).
    Key k = key_of(0, cv);
    std::string lk = std::string("s") + '\0' + std::string(reinterpret_cast<const char *>(&k), sizeof k);
    CHECK(convcache_insert(caches.handle(0), lk.data(), lk.size(), &e5, sizeof e5) == 0);
    setenv("STANDIN_ENGINE_COUNT", "3", 1);
    int before = benchmarks;
    Cache8 c(caches, "s");
    Plan *p = c.get_or_benchmark(k, rebuilder(h, cv), [&] { return benchmark(h, cv); });
    CHECK(p && p->engine() < 3 && benchmarks == before + 1 && c.stats().rebuild_failed == 1);
    Cache8 next(caches, "s");
    CHECK(next.find(k, rebuilder(h, cv)) != nullptr && next.stats().file_hits == 1);
    unsetenv("STANDIN_ENGINE_COUNT");
}

// The drop-in's key in the file: name NUL normalised key.
static std::string library_key(const char *name, Key k) {
    k.params.device_id = 0;
    return std::string(name) + '\0' + std::string(reinterpret_cast<const char *>(&k), sizeof k);
}

// A stored choice whose workspace size was forged: the rebuild hook never
// sees it (it gets 0), and the plan handed out needs what cuDNN says.
static void test_forged_workspace(cudnnHandle_t h) {
    convcache::DeviceCaches caches(testutil::path("forged.ccdb").c_str(), same_model);
    const cg_conv cv = shape(2);
    convcache_engine_choice real, forged;
    real.workspace = 0;
    for (int pick = 0; pick < 8 && real.workspace == 0; pick++) { // a winner that needs a workspace
        Plan winner = plan_for(h, cv, pick);
        CHECK(convcache_engine_from_plan(winner.get_raw_desc(), &real, nullptr) == 0);
    }
    CHECK(real.workspace > 0);
    forged = real;
    forged.workspace = int64_t(1) << 50;
    CHECK(convcache_engine_seal(&forged) == 0);
    Key k = key_of(0, cv);
    std::string lk = library_key("f", k);
    CHECK(convcache_insert(caches.handle(0), lk.data(), lk.size(), &forged, sizeof forged) == 0);
    int64_t seen = -1;
    auto hook = [&](const convcache_engine_choice &c) {
        seen = c.workspace;
        CHECK(c.engine == real.engine && c.knob_count == real.knob_count);
        return rebuilder(h, cv)(c);
    };
    auto needs = [](const Plan &p) {
        convcache_engine_choice c;
        CHECK(convcache_engine_from_plan(p.get_raw_desc(), &c, nullptr) == 0);
        CHECK(c.workspace == cg_workspace(&api, (cudnnBackendDescriptor_t)p.get_raw_desc()));
        CHECK(convcache_engine_plan_choice(p.h->rebuilt)->workspace == c.workspace);
        return c.workspace;
    };
    Cache8 c(caches, "f");
    Plan *p = c.find(k, hook);
    CHECK(p && c.stats().file_hits == 1);
    std::printf("test_v8: forged workspace %lld: the hook got %lld, the plan needs %lld\n", (long long)forged.workspace,
                (long long)seen, (long long)needs(*p));
    CHECK(seen == 0 && needs(*p) == real.workspace);
    Cache8 d(caches, "f"); // get_or_benchmark's way in
    seen = -1;
    int before = benchmarks;
    p = d.get_or_benchmark(k, hook, [&] { return benchmark(h, cv); });
    CHECK(p && seen == 0 && needs(*p) == real.workspace && benchmarks == before && d.stats().file_hits == 1);
}

static void test_lru_limit_env() {
    setenv("V8_TEST_LIMIT", "25", 1);
    CHECK(convcache::v8::lru_limit_from_env("V8_TEST_LIMIT") == 25);
    setenv("V8_TEST_LIMIT", "-1", 1);
    CHECK(convcache::v8::lru_limit_from_env("V8_TEST_LIMIT") == -1);
    for (const char *bad : {"", "12x", "99999999999999999999", "ten"}) {
        setenv("V8_TEST_LIMIT", bad, 1);
        CHECK(convcache::v8::lru_limit_from_env("V8_TEST_LIMIT", 10000) == 10000);
    }
    unsetenv("V8_TEST_LIMIT");
    CHECK(convcache::v8::lru_limit_from_env("V8_TEST_LIMIT", 7) == 7);
}

// ---- 2 processes x 4 threads, thread_local caches ----

static convcache::DeviceCaches *shared_caches;
static constexpr int kShapes = 12, kThreads = 4;
static char ran[kThreads][kShapes][128];

static void worker(int t) {
    thread_local Cache8 cache(*shared_caches, "shared");
    cudnnHandle_t h;
    CHECK(api.handle_create(&h) == 0);
    for (int i = 0; i < kShapes; i++) {
        int s = (t % 2 ? kShapes - 1 - i + 5 * t : i + 5 * t) % kShapes;
        const cg_conv cv = shape(s);
        Plan *p = cache.get_or_benchmark(key_of(t, cv), rebuilder(h, cv), [&] { return benchmark(h, cv); });
        CHECK(p);
        convcache_engine_choice c;
        CHECK(convcache_engine_from_plan(p->get_raw_desc(), &c, nullptr) == 0);
        convcache_engine_format(&c, ran[t][s], sizeof ran[t][s]);
        CHECK(cache.find(key_of(t, cv)) == p); // now in this thread's LRU
    }
    api.handle_destroy(h);
}

static int child(const char *path) {
    if (const char *ms = std::getenv("V8_TEST_BENCH_MS")) bench_ms = std::atoi(ms);
    convcache::DeviceCaches caches(path, same_model);
    shared_caches = &caches;
    std::vector<std::thread> pool;
    for (int t = 0; t < kThreads; t++) pool.emplace_back(worker, t);
    for (auto &t : pool) t.join();
    for (int s = 0; s < kShapes; s++) {
        for (int t = 1; t < kThreads; t++) CHECK(std::strcmp(ran[t][s], ran[0][s]) == 0);
        std::printf("shape %d %s\n", s, ran[0][s]);
    }
    std::printf("benchmarks %d\n", benchmarks.load());
    return 0;
}

// Runs 2 children on the file at path; returns the benchmarks they ran.
static int two_processes(const char *self, const std::string &path, const char *what) {
    std::string cmd = std::string("'") + self + "' --child '" + path + "'";
    FILE *out[2] = {popen(cmd.c_str(), "r"), popen(cmd.c_str(), "r")};
    char lines[2][kShapes + 1][160];
    int total = 0, each[2] = {-1, -1};
    for (int i = 0; i < 2; i++) {
        CHECK(out[i]);
        for (int l = 0; l <= kShapes; l++) CHECK(std::fgets(lines[i][l], sizeof lines[i][l], out[i]));
        CHECK(pclose(out[i]) == 0);
        CHECK(std::sscanf(lines[i][kShapes], "benchmarks %d", &each[i]) == 1);
        total += each[i];
    }
    for (int l = 0; l < kShapes; l++) CHECK(std::strcmp(lines[0][l], lines[1][l]) == 0);
    std::printf("test_v8: %d shapes %s, %d benchmarks (%d + %d) in 2 processes x %d threads (thread_local caches)\n",
                kShapes, what, total, each[0], each[1], kThreads);
    return total;
}

static void test_two_processes(const char *self) {
    CHECK(two_processes(self, testutil::path("shared.ccdb"), "with nothing stored") == kShapes);
}

// Every shape's stored choice is stale: one this cuDNN lacks the engine of
// (STANDIN_ENGINE_COUNT=3), one that fails its check, one too long to be a
// choice. The threads and processes that meet one share its benchmark,
// however long it takes, and the stale choice is replaced.
static void test_two_processes_stale(const char *self, cudnnHandle_t h) {
    std::string path = testutil::path("stale-shared.ccdb");
    {
        convcache::DeviceCaches caches(path.c_str(), same_model);
        convcache_engine_choice e5;
        std::memset(&e5, 0, sizeof e5);
        e5.engine = 5, e5.knob_count = 1, e5.knobs[0].type = CUDNN_KNOB_TYPE_STAGES, e5.knobs[0].value = 2;
        CHECK(convcache_engine_seal(&e5) == 0);
        for (int s = 0; s < kShapes; s++) {
            std::string lk = library_key("shared", key_of(0, shape(s)));
            std::string v(reinterpret_cast<const char *>(&e5), sizeof e5);
            if (s % 3 == 1) v[28] ^= 1;                  // a bad checksum
            if (s % 3 == 2) v.append(200, char(s));      // longer than a choice
            CHECK(convcache_insert(caches.handle(0), lk.data(), lk.size(), v.data(), v.size()) == 0);
        }
    }
    setenv("STANDIN_ENGINE_COUNT", "3", 1);
    setenv("V8_TEST_BENCH_MS", "30", 1); // ample time for every thread to meet each stale choice
    int total = two_processes(self, path, "with a stale choice stored");
    unsetenv("V8_TEST_BENCH_MS");
    CHECK(total == kShapes);
    // The next process rebuilds every shape from the replacement.
    convcache::DeviceCaches caches(path.c_str(), same_model);
    Cache8 next(caches, "shared");
    for (int s = 0; s < kShapes; s++) {
        Plan *p = next.find(key_of(0, shape(s)), rebuilder(h, shape(s)));
        CHECK(p && p->engine() < 3);
    }
    CHECK(next.stats().file_hits == kShapes);
    unsetenv("STANDIN_ENGINE_COUNT");
}

int main(int argc, char **argv) {
    char why[512];
    CHECK(cg_api_load(&api, why, sizeof why) == 0);
    if (argc == 3 && !std::strcmp(argv[1], "--child")) return child(argv[2]);
    cudnnHandle_t h;
    CHECK(api.handle_create(&h) == 0);
    test_lru(h);
    test_persistent(h);
    test_stale(h);
    test_forged_workspace(h);
    test_lru_limit_env();
    test_two_processes(argv[0]);
    test_two_processes_stale(argv[0], h);
    api.handle_destroy(h);
    std::string rm = "rm -rf '" + testutil::tmpdir() + "'";
    CHECK(std::system(rm.c_str()) == 0);
    std::printf("test_v8: ok\n");
    return 0;
}
