// PyTorch's default convolution path on cudnn_frontend's legacy API: see
// torch_conv.hpp for the steps.
#include "torch_conv.hpp"

#include <cudnn_frontend.h>
#include <cudnn_frontend_find_plan.h>
#include <cudnn_frontend_get_plan.h>
#include <cuda_runtime_api.h>

#include "conv_v8_frontend.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <memory>

namespace v8fe {

// ---- device memory -------------------------------------------------------

namespace {

struct CudaFree {
    void operator()(void *p) const { cudaFree(p); }
};
using DeviceBuffer = std::unique_ptr<void, CudaFree>;

DeviceBuffer device_alloc(size_t bytes) {
    void *p = nullptr;
    if (bytes && cudaMalloc(&p, bytes) != cudaSuccess) throw std::runtime_error("cudaMalloc failed");
    return DeviceBuffer(p);
}

uint64_t fnv1a(const unsigned char *p, size_t n, uint64_t h = 0xcbf29ce484222325ull) {
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

constexpr unsigned char kSentinel = 0xCD;

} // namespace

size_t Tensors::bytes(char which) const {
    const Conv::Dims d = which == 'x' ? cv_.x() : which == 'w' ? cv_.w() : cv_.y();
    return static_cast<size_t>(Conv::elements(d)) * cv_.elem_bytes();
}

Tensors::Tensors(const Conv &cv) : x(nullptr), w(nullptr), y(nullptr), cv_(cv) {
    void **slots[3] = {&x, &w, &y};
    const char names[3] = {'x', 'w', 'y'};
    const std::string name = cv.name();
    for (int i = 0; i < 3; i++) {
        size_t n = bytes(names[i]);
        if (cudaMalloc(slots[i], n) != cudaSuccess) throw std::runtime_error("cudaMalloc failed");
        auto *p = static_cast<unsigned char *>(*slots[i]);
        if (names[i] == cv.output()) {
            std::memset(p, kSentinel, n);
            continue;
        }
        // Inputs: the same bytes for the same shape, in every thread and run.
        uint64_t h = fnv1a(reinterpret_cast<const unsigned char *>(name.data()), name.size()) ^ names[i];
        for (size_t j = 0; j < n; j++) {
            h = h * 6364136223846793005ull + 1442695040888963407ull;
            p[j] = static_cast<unsigned char>(h >> 56);
        }
    }
}

void Tensors::clear_output() {
    const char o = cv_.output();
    std::memset(o == 'x' ? x : o == 'w' ? w : y, kSentinel, bytes(o));
}

Tensors::~Tensors() {
    cudaFree(x), cudaFree(w), cudaFree(y);
}

uint64_t Tensors::output_checksum() const {
    const char o = cv_.output();
    const auto *p = static_cast<const unsigned char *>(o == 'x' ? x : o == 'w' ? w : y);
    size_t n = bytes(o), untouched = 0;
    for (size_t i = 0; i < n; i++) untouched += p[i] == kSentinel;
    if (untouched == n) throw std::runtime_error(cv_.name() + ": the output was not written");
    return fnv1a(p, n);
}

// ---- the key: the thread_local map's, zeroed and compared bytewise ----------

namespace {

struct Key {
    int32_t op, type;
    int64_t x[4], w[4], y[4];
    int64_t pad, stride, dilation;
    uint8_t deterministic, allow_tf32, x_align, w_align, y_align;
};
struct KeyLess {
    bool operator()(const Key &a, const Key &b) const { return std::memcmp(&a, &b, sizeof a) < 0; }
};

// alignment: the largest power of two up to 16 that divides the address.
int64_t alignment(const void *p) {
    auto a = reinterpret_cast<uintptr_t>(p);
    int64_t al = 1;
    while (al < 16 && a % static_cast<uintptr_t>(al * 2) == 0) al *= 2;
    return al;
}

Key key_of(const Conv &cv, const Options &o, const Tensors &t) {
    Key k;
    std::memset(&k, 0, sizeof k);
    k.op = static_cast<int32_t>(cv.op());
    k.type = static_cast<int32_t>(cv.l.type);
    const Conv::Dims x = cv.x(), w = cv.w(), y = cv.y();
    std::copy(x.begin(), x.end(), k.x), std::copy(w.begin(), w.end(), k.w), std::copy(y.begin(), y.end(), k.y);
    k.pad = cv.l.pad, k.stride = cv.l.stride, k.dilation = cv.l.dilation;
    k.deterministic = o.deterministic, k.allow_tf32 = o.allow_tf32;
    k.x_align = static_cast<uint8_t>(alignment(t.x));
    k.w_align = static_cast<uint8_t>(alignment(t.w));
    k.y_align = static_cast<uint8_t>(alignment(t.y));
    return k;
}

thread_local std::map<Key, cudnn_frontend::ExecutionPlan, KeyLess> benchmark_cache;

// An execute that failed (PyTorch's CuDNNError from AT_CUDNN_CHECK).
struct ExecuteError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// ---- step 1: the graph ------------------------------------------------------

cudnn_frontend::Tensor tensor(const Conv::Dims &d, int64_t uid, const void *data, cudnnDataType_t type) {
    const Conv::Dims s = Conv::packed_strides(d);
    return cudnn_frontend::TensorBuilder()
        .setDim(4, d.data())
        .setStride(4, s.data())
        .setId(uid)
        .setAlignment(alignment(data))
        .setDataType(type)
        .build();
}

cudnn_frontend::OperationGraph build_opgraph(cudnnHandle_t handle, const Conv &cv, const Tensors &t) {
    // Half and bfloat16 convolutions compute in float.
    const cudnnDataType_t compute =
        cv.l.type == CUDNN_DATA_HALF || cv.l.type == CUDNN_DATA_BFLOAT16 ? CUDNN_DATA_FLOAT : cv.l.type;
    const int64_t pad[2] = {cv.l.pad, cv.l.pad}, stride[2] = {cv.l.stride, cv.l.stride},
                  dilation[2] = {cv.l.dilation, cv.l.dilation};
    auto conv = cudnn_frontend::ConvDescBuilder()
                    .setComputeType(compute)
                    .setMathMode(CUDNN_CROSS_CORRELATION)
                    .setSpatialDimCount(2)
                    .setSpatialStride(2, stride)
                    .setPrePadding(2, pad)
                    .setPostPadding(2, pad)
                    .setDilation(2, dilation)
                    .build();
    auto op = cudnn_frontend::OperationBuilder(cv.op())
                  .setxDesc(tensor(cv.x(), 'x', t.x, cv.l.type))
                  .setyDesc(tensor(cv.y(), 'y', t.y, cv.l.type))
                  .setwDesc(tensor(cv.w(), 'w', t.w, cv.l.type))
                  .setcDesc(conv)
                  .build();
    std::array<cudnn_frontend::Operation const *, 1> ops = {&op};
    return cudnn_frontend::OperationGraphBuilder().setHandle(handle).setOperationGraph(1, ops.data()).build();
}

// ---- steps 2 and 3: engine configs, filtered ----------------------------------

// drop: PyTorch's filter (libcudnn cannot see it).
bool drop(const Options &o, cudnnDataType_t type, cudnnBackendDescriptor_t cfg) {
    if (o.deterministic && cudnn_frontend::hasNumericalNote<CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC>(cfg)) return true;
    if (cudnn_frontend::hasNumericalNote<CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS>(cfg)) return true;
    if (type == CUDNN_DATA_FLOAT && !o.allow_tf32 &&
        cudnn_frontend::hasNumericalNote<CUDNN_NUMERICAL_NOTE_TENSOR_CORE>(cfg))
        return true;
    return false;
}

std::vector<cudnn_frontend::GeneratorSource> sources(const Options &o, const Conv &cv) {
    auto keep = [&o, type = cv.l.type](cudnn_frontend::EngineConfigList &from) {
        cudnn_frontend::EngineConfigList to;
        cudnn_frontend::filter(from, to, [&](cudnnBackendDescriptor_t c) { return drop(o, type, c); });
        return to;
    };
    auto instant = [keep](cudnn_frontend::OperationGraph &graph) {
        auto heuristics = cudnn_frontend::EngineHeuristicsBuilder()
                              .setOperationGraph(graph)
                              .setHeurMode(CUDNN_HEUR_MODE_INSTANT)
                              .build();
        auto &configs = heuristics.getEngineConfig(heuristics.getEngineConfigCount());
        return keep(configs);
    };
    auto fallback = [keep, op = cv.op()](cudnn_frontend::OperationGraph &graph) {
        auto list = cudnn_frontend::EngineFallbackListBuilder().setOperationGraph(graph).setOperation(op).build();
        return keep(list.getFallbackList());
    };
    return {instant, fallback};
}

bool errata(const Options &o, const std::string &tag) {
    for (const std::string &e : o.errata)
        if (tag == e || tag.rfind(e + "_", 0) == 0) return true;
    return false;
}

// ---- execution ---------------------------------------------------------------------

// run_conv_plan: a workspace of the plan's size, a variant pack, an execute.
void run_conv_plan(cudnnHandle_t handle, const cudnn_frontend::ExecutionPlan &plan, Tensors &t) {
    DeviceBuffer ws = device_alloc(static_cast<size_t>(plan.getWorkspaceSize()));
    void *ptrs[3] = {t.x, t.y, t.w};
    int64_t uids[3] = {'x', 'y', 'w'};
    auto pack = cudnn_frontend::VariantPackBuilder()
                    .setWorkspacePointer(ws.get())
                    .setDataPointers(3, ptrs)
                    .setUids(3, uids)
                    .build();
    cudnnStatus_t st = cudnnBackendExecute(handle, plan.get_raw_desc(), pack.get_raw_desc());
    if (st != CUDNN_STATUS_SUCCESS) throw ExecuteError("cudnnBackendExecute failed with status " + std::to_string(st));
}

// tag_of: the plan's tag without the graph's ("ConvFwd_eng5_k14=4" ->
// "eng5_k14:4"), '=' as ':': the stand-in's names.
std::string tag_of(const cudnn_frontend::ExecutionPlan &plan) {
    std::string tag = plan.getTag();
    size_t eng = tag.find("eng");
    if (eng != std::string::npos) tag.erase(0, eng);
    std::replace(tag.begin(), tag.end(), '=', ':');
    return tag;
}

// choice_of reads a tag ("eng5_k14:4") back into an engine choice.
convcache_engine_choice choice_of(const std::string &tag) {
    convcache_engine_choice c;
    std::memset(&c, 0, sizeof c);
    const char *s = tag.c_str();
    char *end = nullptr;
    if (std::strncmp(s, "eng", 3) != 0) throw std::runtime_error("not a plan tag: " + tag);
    c.engine = std::strtoll(s + 3, &end, 10);
    while (*end == '_' && end[1] == 'k' && c.knob_count < CONVCACHE_ENGINE_MAX_KNOBS) {
        convcache_engine_knob &k = c.knobs[c.knob_count++];
        k.type = static_cast<int32_t>(std::strtol(end + 2, &end, 10));
        if (*end != ':') throw std::runtime_error("not a plan tag: " + tag);
        k.value = std::strtoll(end + 1, &end, 10);
    }
    if (*end) throw std::runtime_error("not a plan tag: " + tag);
    return c;
}

// rebuild: the patch route's plan_from_choice gives the chosen plan again:
// the same engine and knobs, the same output.
void rebuild(cudnnHandle_t handle, cudnn_frontend::OperationGraph &graph, Tensors &t, const Outcome &chosen) {
    auto plan = convcache_example::plan_from_choice(handle, graph, choice_of(chosen.tag));
    if (!plan) throw std::runtime_error("plan_from_choice could not rebuild " + chosen.tag);
    if (tag_of(*plan) != chosen.tag) throw std::runtime_error("rebuilt " + tag_of(*plan) + ", not " + chosen.tag);
    t.clear_output();
    run_conv_plan(handle, *plan, t);
    if (t.output_checksum() != chosen.checksum) throw std::runtime_error("the rebuilt " + chosen.tag + "'s output differs");
}

} // namespace

ConvRunner::ConvRunner(const Options &o) : opt_(o) {
    if (cudaSetDevice(0) != cudaSuccess) throw std::runtime_error("cudaSetDevice failed");
    if (cudnnCreate(&handle_) != CUDNN_STATUS_SUCCESS) throw std::runtime_error("cudnnCreate failed");
}

ConvRunner::~ConvRunner() {
    benchmark_cache.clear(); // the plans before their handle
    cudnnDestroy(handle_);
}

Outcome ConvRunner::run(const Conv &cv) {
    Tensors t(cv);
    const Key key = key_of(cv, opt_, t);
    Outcome out;
    auto hit = benchmark_cache.find(key);
    if (hit != benchmark_cache.end()) { // errors propagate, as PyTorch's do
        run_conv_plan(handle_, hit->second, t);
        out.tag = tag_of(hit->second), out.workspace = hit->second.getWorkspaceSize();
        out.checksum = t.output_checksum();
        return out;
    }
    out.miss = true;
    auto graph = build_opgraph(handle_, cv, t);
    auto srcs = sources(opt_, cv);
    cudnn_frontend::EngineConfigGenerator generator(static_cast<int>(srcs.size()), srcs.data());
    auto plans = generator.cudnnGetPlan(handle_, graph, [&](const cudnn_frontend::ExecutionPlan &plan) {
        out.built++;
        return errata(opt_, tag_of(plan));
    });
    // Plans whose workspace the allocator cannot give are dropped; the
    // largest workspace left is allocated for timing.
    cudnn_frontend::executionPlans_t valid;
    int64_t max_ws = 0;
    for (auto &plan : plans) {
        int64_t ws = plan.getWorkspaceSize();
        if (opt_.workspace_limit >= 0 && ws > opt_.workspace_limit) continue;
        max_ws = std::max(max_ws, ws);
        valid.push_back(std::move(plan));
    }
    plans.clear();
    out.candidates = valid.size();
    DeviceBuffer ws = device_alloc(static_cast<size_t>(max_ws));
    void *ptrs[3] = {t.x, t.y, t.w};
    int64_t uids[3] = {'x', 'y', 'w'};
    auto pack = cudnn_frontend::VariantPackBuilder()
                    .setDataPointers(3, ptrs)
                    .setUids(3, uids)
                    .setWorkspacePointer(max_ws ? ws.get() : nullptr)
                    .build();
    auto sorted = cudnn_frontend::time_sorted_plan<cudnn_frontend::CudnnFindSamplingTechnique::CUDNN_FIND_SAMPLE_ONCE>(
        handle_, std::move(valid), pack, opt_.limit ? opt_.limit : 10000);
    out.sorted = sorted.size();
    for (auto &plan : sorted) { // try_plans
        try {
            run_conv_plan(handle_, plan, t);
        } catch (const cudnn_frontend::cudnnException &) {
            continue;
        } catch (const ExecuteError &) {
            continue;
        }
        out.tag = tag_of(plan), out.workspace = plan.getWorkspaceSize();
        out.checksum = t.output_checksum();
        benchmark_cache.insert_or_assign(key, plan);
        if (opt_.rebuild) rebuild(handle_, graph, t, out), out.rebuilt++;
        return out;
    }
    throw FindError("FIND was unable to find an engine to execute this computation");
}

} // namespace v8fe
