// PyTorch-style integration of convcache on PyTorch's default convolution
// path: the cuDNN v8/v9 backend API (aten/src/ATen/native/cudnn/Conv_v8.cpp),
// whose thread_local BenchmarkCache<cudnn_frontend::ExecutionPlan,
// CacheKeyWrapper> becomes convcache::v8::BenchmarkCache. The plans stay in
// the thread's LRU; what is stored in the file is each plan's engine choice
// (engine index, knobs, workspace: convcache_engine.h), rebuilt in another
// process instead of benchmarked again.
//
// The change in Conv_v8.cpp (as of the PyTorch 2.x file with
// CacheKeyWrapper, run_single_conv and try_plans; this example mirrors it):
//
//   +#include <convcache_v8.hpp>
//   ...
//   -thread_local BenchmarkCache<cudnn_frontend::ExecutionPlan, CacheKeyWrapper> benchmark_cache;
//   +convcache::DeviceCaches v8_caches;  // default file; one scope per GPU model; shared by threads
//   +using V8Key = convcache::v8::nested_device_key<CacheKey, &CacheKey::params, &ConvolutionParams::device_id>;
//   +thread_local convcache::v8::BenchmarkCache<cudnn_frontend::ExecutionPlan, CacheKeyWrapper, V8Key>
//   +    benchmark_cache(v8_caches, "torch.cudnn.v8");
//   +// A stored engine choice -> a plan for this graph, with the frontend's
//   +// builders (examples/pytorch/conv_v8_frontend.hpp, copied beside this
//   +// file; see plan_from_choice below for the same steps on the raw
//   +// backend API).
//   +#include "conv_v8_frontend.hpp"
//   +using convcache_example::plan_from_choice;
//    ...
//    void run_single_conv(...) {
//      cudnnHandle_t handle = getCudnnHandle();
//      CacheKeyWrapper key(operation, y, x, w, padding, stride, dilation, groups, deterministic, allow_tf32);
//   -  auto search = benchmark_cache.find(key);
//   +  auto search = benchmark_cache.find(key, [&](const convcache_engine_choice& c) {
//   +    auto opGraph = build_opgraph(handle, operation, x, y, w, key, padding, stride, dilation);
//   +    return plan_from_choice(handle, opGraph, c);
//   +  });
//    ...
//    bool try_configs(...) {              // the heuristics path (benchmark off)
//   -      benchmark_cache.update(key, plan);
//   +      benchmark_cache.update(key, plan, /*persist=*/false);  // a guess, not a measurement
//
// and nothing else: try_plans' benchmark_cache.update(key, plan) stores the
// benchmark's winner, and find's rebuild verifies (convcache_engine_verify)
// that the rebuilt plan runs exactly the stored engine and knobs. The
// frontend's plan_from_choice is in conv_v8_frontend.hpp: `make v8fe-test`
// compiles this file with it (-DCONVCACHE_EXAMPLE_FRONTEND) against
// NVIDIA's real cudnn_frontend 1.32 headers, and runs it against the
// stand-in cuDNN (tests/v8fe/torch_like --rebuild). Everything below is
// compiled and run against the stand-in cuDNN in `make test`, and compiled
// against NVIDIA's headers in `make v8-real-headers`.
//
// Usage: pytorch_conv_v8 [--expect cold|warm] [--threads N]
//   cold: every distinct convolution is benchmarked once in the process
//   warm: none is; each thread rebuilds each from the file instead
#include "backend_api.h"
#include "conv_graph.h"

#include <convcache_v8.hpp>

#ifdef CONVCACHE_EXAMPLE_FRONTEND // the patch's frontend lines (make v8fe-test)
#include "conv_v8_frontend.hpp"
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>

// ---- PyTorch's types, layout for layout (ConvShared.h, Conv_v8.cpp) ----

#include "convolution_params.hpp" // ConvolutionParams

struct CacheKey {
    ConvolutionParams params;
    cudnnBackendDescriptorType_t operation;
    uint8_t x_alignment;
    uint8_t w_alignment;
    uint8_t y_alignment;
};
static_assert(sizeof(CacheKey) == 112, "CacheKey: 112 bytes on x86-64");
static_assert(offsetof(CacheKey, operation) == 104 && offsetof(CacheKey, y_alignment) == 110, "layout");

// ParamsWrapper<CacheKey> (ATen/native/utils/ParamsHash.h): the pod, zeroed.
struct CacheKeyWrapper {
    CacheKey pod;
    CacheKeyWrapper(cudnnBackendDescriptorType_t operation, const cg_conv &cv, int device) {
        std::memset(&pod, 0, sizeof pod);
        ConvolutionParams &p = pod.params;
        p.device_id = static_cast<int16_t>(device);
        p.dataType = CUDNN_DATA_FLOAT;
        p.input_dim = 4;
        int in[4] = {int(cv.n), int(cv.c), int(cv.h), int(cv.w)}, wt[4] = {int(cv.k), int(cv.c), int(cv.r), int(cv.s)};
        for (int i = 0; i < 4; i++) p.input_size[i] = in[i], p.weight_size[i] = wt[i];
        for (int i = 0; i < 2; i++) p.padding[i] = int(cv.pad), p.stride[i] = int(cv.stride), p.dilation[i] = 1;
        p.groups = 1;
        p.allow_tf32 = true;
        pod.operation = operation;
        pod.x_alignment = pod.w_alignment = pod.y_alignment = 16;
    }
};

// ---- a stand-in for cudnn_frontend::ExecutionPlan: copyable, shares the
// backend plan and the graph it was built for, as the frontend's does ----

static cg_api api;

struct Graph { // an operation graph, shared by the plans built for it
    cg_graph g{};
    ~Graph() { cg_graph_free(&api, &g); }
};
struct Owned { // a finalized plan and what it needs alive
    std::shared_ptr<Graph> graph;
    cudnnBackendDescriptor_t raw = nullptr;   // from heuristics (benchmark)
    convcache_engine_plan *rebuilt = nullptr; // from a stored choice
    ~Owned() { // the plan first, then (as a member) the graph
        if (raw) api.destroy(raw);
        convcache_engine_plan_destroy(rebuilt);
    }
};
class ExecutionPlan {
public:
    explicit ExecutionPlan(std::shared_ptr<Owned> o) : o_(std::move(o)) {}
    cudnnBackendDescriptor_t get_raw_desc() const {
        return o_->rebuilt ? convcache_engine_plan_descriptor(o_->rebuilt) : o_->raw;
    }
    int64_t getWorkspaceSize() const { return cg_workspace(&api, get_raw_desc()); }
private:
    std::shared_ptr<Owned> o_;
};

// ---- the integration: the lines that change in Conv_v8.cpp ----

static convcache::DeviceCaches v8_caches; // the default file ($CONVCACHE_PATH)
using V8Key = convcache::v8::nested_device_key<CacheKey, &CacheKey::params, &ConvolutionParams::device_id>;
thread_local convcache::v8::BenchmarkCache<ExecutionPlan, CacheKeyWrapper, V8Key> benchmark_cache(v8_caches,
                                                                                                  "torch.cudnn.v8");

// The raw backend-API equivalent of the frontend's plan_from_choice above.
static std::optional<ExecutionPlan> plan_from_choice(cudnnHandle_t handle, std::shared_ptr<Graph> g,
                                                     const convcache_engine_choice &c) {
    auto o = std::make_shared<Owned>();
    o->graph = std::move(g);
    if (convcache_engine_build_plan(&c, handle, o->graph->g.graph, &o->rebuilt, nullptr) != CONVCACHE_ENGINE_OK)
        return std::nullopt;
    return ExecutionPlan(std::move(o));
}

// ---- the rest of PyTorch's v8 path, unchanged in spirit ----

static std::atomic<int> benchmarks{0}, rebuilds{0};

struct Tensors { // device memory: host memory for the stand-in
    std::vector<unsigned char> x, w, y;
    explicit Tensors(const cg_conv &cv) {
        size_t xb, wb, yb;
        cg_bytes(&cv, &xb, &wb, &yb);
        x.assign(xb, 1), w.assign(wb, 2), y.assign(yb, 3);
    }
};

static std::shared_ptr<Graph> build_opgraph(cudnnHandle_t handle, const cg_conv &cv) {
    auto g = std::make_shared<Graph>();
    if (cg_build(&api, handle, &cv, &g->g) != CUDNN_STATUS_SUCCESS) throw std::runtime_error("graph");
    return g;
}

static void run_conv_plan(cudnnHandle_t handle, Tensors &t, const ExecutionPlan &plan) {
    std::vector<unsigned char> ws(static_cast<size_t>(plan.getWorkspaceSize()) + 1);
    if (cg_execute(&api, handle, plan.get_raw_desc(), t.x.data(), t.w.data(), t.y.data(), ws.data()))
        throw std::runtime_error("cudnnBackendExecute failed");
}

// get_plans_from_find + time_sorted_plan: every heuristic config, timed.
static std::vector<ExecutionPlan> get_plans_from_find(cudnnHandle_t handle, const cg_conv &cv, Tensors &t) {
    benchmarks++;
    auto g = build_opgraph(handle, cv);
    cudnnBackendDescriptor_t cfgs[16];
    int n = 0;
    if (cg_heuristics(&api, g->g.graph, CUDNN_HEUR_MODE_INSTANT, cfgs, 16, &n)) throw std::runtime_error("heur");
    std::vector<std::pair<double, ExecutionPlan>> timed;
    for (int i = 0; i < n; i++) {
        auto o = std::make_shared<Owned>();
        o->graph = g;
        if (cg_plan(&api, handle, cfgs[i], &o->raw) == CUDNN_STATUS_SUCCESS) {
            ExecutionPlan plan(o);
            auto t0 = std::chrono::steady_clock::now();
            run_conv_plan(handle, t, plan);
            timed.emplace_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), plan);
        }
        api.destroy(cfgs[i]);
    }
    std::stable_sort(timed.begin(), timed.end(), [](const auto &a, const auto &b) { return a.first < b.first; });
    std::vector<ExecutionPlan> plans;
    for (auto &p : timed) plans.push_back(p.second);
    return plans;
}

static void try_plans(std::vector<ExecutionPlan> &plans, const CacheKeyWrapper &key, cudnnHandle_t handle, Tensors &t) {
    for (auto &plan : plans) {
        try {
            run_conv_plan(handle, t, plan);
            benchmark_cache.update(key, plan);
            return;
        } catch (const std::runtime_error &) {
        }
    }
    throw std::runtime_error("FIND was unable to find an engine to execute this computation");
}

static void run_single_conv(cudnnBackendDescriptorType_t operation, const cg_conv &cv, Tensors &t,
                            cudnnHandle_t handle) {
    CacheKeyWrapper key(operation, cv, 0);
    auto search = benchmark_cache.find(key, [&](const convcache_engine_choice &c) {
        auto opGraph = build_opgraph(handle, cv);
        rebuilds++;
        return plan_from_choice(handle, opGraph, c);
    });
    if (search) {
        run_conv_plan(handle, t, *search);
        return;
    }
    auto plans = get_plans_from_find(handle, cv, t);
    try_plans(plans, key, handle, t);
}

// The convolutions of a ResNet-50's stem and first stages (batch 2, 56x56
// after the stem: small, the stand-in runs on the CPU).
static const cg_conv kLayers[] = {
    {0, 2, 3, 64, 64, 64, 7, 7, 3, 2},    {0, 2, 64, 16, 16, 64, 1, 1, 0, 1},
    {0, 2, 64, 16, 16, 64, 3, 3, 1, 1},   {0, 2, 64, 16, 16, 256, 1, 1, 0, 1},
    {0, 2, 256, 16, 16, 128, 1, 1, 0, 1}, {0, 2, 128, 16, 16, 128, 3, 3, 1, 2},
};

static void train(int iterations) {
    cudnnHandle_t handle;
    if (api.handle_create(&handle)) throw std::runtime_error("cudnnCreate");
    static const cudnnBackendDescriptorType_t ops[3] = {
        CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
        CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
        CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR};
    for (int it = 0; it < iterations; it++) {
        for (const cg_conv &layer : kLayers) {
            for (int op = 0; op < 3; op++) {
                cg_conv cv = layer;
                cv.op = op + 1;
                Tensors t(cv);
                run_single_conv(ops[op], cv, t, handle);
            }
        }
    }
    api.handle_destroy(handle);
}

int main(int argc, char **argv) {
    const char *expect = nullptr;
    int threads = 1;
    for (int i = 1; i < argc; i++) {
        if (!std::strcmp(argv[i], "--expect") && i + 1 < argc) expect = argv[++i];
        else if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::atoi(argv[++i]);
        else {
            std::fprintf(stderr, "usage: %s [--expect cold|warm] [--threads N]\n", argv[0]);
            return 2;
        }
    }
    char why[512];
    if (cg_api_load(&api, why, sizeof why)) {
        std::fprintf(stderr, "%s\n", why);
        return 1;
    }
    const int distinct = 3 * static_cast<int>(sizeof kLayers / sizeof kLayers[0]);
    auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int i = 0; i < threads; i++) pool.emplace_back(train, 3);
    for (auto &t : pool) t.join();
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%d threads x %d convolutions: %d benchmarked, %d rebuilt from stored choices, %.1f ms (scope \"%s\")\n",
                threads, distinct, benchmarks.load(), rebuilds.load(), ms, v8_caches.scope(0).c_str());
    if (expect && !std::strcmp(expect, "cold") && (benchmarks < distinct || benchmarks > threads * distinct)) {
        std::fprintf(stderr, "expected each of %d convolutions benchmarked on a cold cache, ran %d\n", distinct,
                     benchmarks.load());
        return 1;
    }
    if (expect && !std::strcmp(expect, "warm") && (benchmarks != 0 || rebuilds != threads * distinct)) {
        std::fprintf(stderr, "expected no benchmarks and %d rebuilds on a warm cache, got %d and %d\n",
                     threads * distinct, benchmarks.load(), rebuilds.load());
        return 1;
    }
    return 0;
}
