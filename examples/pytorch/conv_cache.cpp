// PyTorch-style integration of convcache: the cuDNN v7 convolution path's
// three BenchmarkCaches (forward, backward-data, backward-filter) replaced by
// convcache::BenchmarkCache, with PyTorch's exact 104-byte
// ConvolutionParams as the key and the 48-byte cuDNN perf structs as values.
//
// The change in aten/src/ATen/native/cudnn/Conv_v7.cpp is a few lines:
//
//   -template <typename T>
//   -struct BenchmarkCache {
//   -  std::mutex mutex;
//   -  std::unordered_map<ConvolutionParams, T, ParamsHash<ConvolutionParams>,
//   -                     ParamsEqual<ConvolutionParams>> map;
//   -  bool find(const ConvolutionParams& params, T* results) { ... }
//   -  void insert(const ConvolutionParams& params, const T& results) { ... }
//   -};
//   -BenchmarkCache<cudnnConvolutionFwdAlgoPerf_t> fwd_algos;
//   -BenchmarkCache<cudnnConvolutionBwdDataAlgoPerf_t> bwd_data_algos;
//   -BenchmarkCache<cudnnConvolutionBwdFilterAlgoPerf_t> bwd_filter_algos;
//   +#include <convcache.hpp>
//   +using TorchKey = convcache::device_key<ConvolutionParams, &ConvolutionParams::device_id>;
//   +template <typename T>
//   +using BenchmarkCache = convcache::BenchmarkCache<ConvolutionParams, T, TorchKey>;
//   +convcache::DeviceCaches conv_caches;  // default file; one scope per GPU model
//   +BenchmarkCache<cudnnConvolutionFwdAlgoPerf_t> fwd_algos(conv_caches, "torch.cudnn.v7.fwd");
//   +BenchmarkCache<cudnnConvolutionBwdDataAlgoPerf_t> bwd_data_algos(conv_caches, "torch.cudnn.v7.bwd_data");
//   +BenchmarkCache<cudnnConvolutionBwdFilterAlgoPerf_t> bwd_filter_algos(conv_caches, "torch.cudnn.v7.bwd_filter");
//
// and every cache.find / cache.insert call stays as it is.
//
// The key policy: ConvolutionParams::device_id is an index, meaningless in
// another run (DDP rank 3 uses device 3, and next run rank 0 may hold the
// same GPU). TorchKey picks the device's scope (its GPU model, driver, cuDNN
// and CUDA versions: convcache_cudnn_scope) and stores the key with
// device_id 0, so a result measured on device 3 is a hit on device 0 of
// the same model, and a miss on a different model.
//
// This machine may have no GPU: the cuDNN find call is simulated (a 2 ms
// sleep and a made-up result), and, without cuDNN (or with
// --simulated-gpus, as `make test` runs it), the scope names a simulated GPU
// model: devices 0-3 "A100", 4-7 "H100". The demo (make demo) makes real
// measurements.
//
// Usage: pytorch_conv --device N [--expect cold|warm] [--simulated-gpus]
//   cold: every distinct convolution is benchmarked once; warm: none is.
#include <convcache.hpp>

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

// ---- PyTorch's types (ConvShared.h, cudnn_cnn.h), layout for layout ----

// ConvolutionParams, MemoryFormat and the three 48-byte perf structs. make
// real-cudnn-check compiles this file with CONVCACHE_REAL_CUDNN against
// NVIDIA's cudnn.h, as PyTorch is: its types replace the stand-ins there.
#include "convolution_params.hpp"

// ---- the integration: the lines that change in Conv_v7.cpp ----

using TorchKey = convcache::device_key<ConvolutionParams, &ConvolutionParams::device_id>;
template <typename T>
using BenchmarkCache = convcache::BenchmarkCache<ConvolutionParams, T, TorchKey>;

// The scope of a device: what the GPU is, from the library; without a GPU
// (this example's usual machine), or with --simulated-gpus, a simulated model.
static bool simulated_gpus = false;
static std::string device_scope(int device) {
    if (!simulated_gpus) {
        try {
            return convcache::cudnn_scope(device);
        } catch (const convcache::unavailable_error &) {
        }
    }
    return std::string("cc1;gpu=") + (device < 4 ? "NVIDIA A100-SXM4-80GB" : "NVIDIA H100 80GB HBM3") +
           ";simulated-by=examples/pytorch";
}

// PyTorch keeps these as globals of Conv_v7.cpp. The file is $CONVCACHE_PATH
// or the default (~/.cache/convcache/cache.ccdb).
static convcache::DeviceCaches conv_caches(nullptr, device_scope);
static BenchmarkCache<cudnnConvolutionFwdAlgoPerf_t> fwd_algos(conv_caches, "torch.cudnn.v7.fwd");
static BenchmarkCache<cudnnConvolutionBwdDataAlgoPerf_t> bwd_data_algos(conv_caches, "torch.cudnn.v7.bwd_data");
static BenchmarkCache<cudnnConvolutionBwdFilterAlgoPerf_t> bwd_filter_algos(conv_caches,
                                                                             "torch.cudnn.v7.bwd_filter");

// ---- the rest of PyTorch's v7 path, unchanged in spirit ----

static int benchmarks_run = 0;

// cudnnFind*AlgorithmEx, simulated: takes time and returns the fastest.
template <typename perf_t>
static perf_t simulated_cudnn_find(const ConvolutionParams &p) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    benchmarks_run++;
    perf_t best;
    std::memset(&best, 0, sizeof best);
    best.algo = static_cast<decltype(best.algo)>((p.weight_size[2] == 1) ? 1 : (p.input_size[2] >= 56 ? 6 : 7));
    best.time = 0.01f * static_cast<float>(p.input_size[0] * p.weight_size[0]) / 64.0f;
    best.memory = p.weight_size[2] == 1 ? 0 : static_cast<size_t>(p.input_size[1]) << 12;
    best.mathType = static_cast<decltype(best.mathType)>(p.allow_tf32 ? 2 : 0);
    return best;
}

template <typename perf_t>
static perf_t getBestAlgorithm(BenchmarkCache<perf_t> &cache, const ConvolutionParams &params) {
    perf_t algoPerf;
    if (cache.find(params, &algoPerf)) return algoPerf; // the hot path
    algoPerf = simulated_cudnn_find<perf_t>(params);
    cache.insert(params, algoPerf);
    return algoPerf;
}

// setConvolutionParams (Conv_v7.cpp), for NCHW float tensors.
static void setConvolutionParams(ConvolutionParams *params, int device, const int input[4], const int weight[4],
                                 int pad, int stride, int dilation, int64_t groups, bool deterministic,
                                 bool allow_tf32, MemoryFormat memory_format) {
    std::memset(params, 0, sizeof(ConvolutionParams)); // padding bytes are part of the key
    params->device_id = static_cast<int16_t>(device);
    params->dataType = static_cast<cudnnDataType_t>(0); // CUDNN_DATA_FLOAT
    params->input_dim = 4;
    params->memory_format = memory_format;
    for (int i = 0; i != 4; ++i) {
        params->input_size[i] = input[i];
        params->weight_size[i] = weight[i];
    }
    for (int i = 0; i != 2; ++i) {
        params->padding[i] = pad;
        params->stride[i] = stride;
        params->dilation[i] = dilation;
    }
    params->groups = groups;
    params->deterministic = deterministic;
    params->allow_tf32 = allow_tf32;
}

struct Conv {
    int cin, hw, cout, k, stride, pad;
};

// The convolutions of a ResNet-50's stem and first bottleneck stage
// (batch 32, 224x224), each run forward, backward-data and backward-filter.
static const Conv kLayers[] = {
    {3, 224, 64, 7, 2, 3},   // conv1
    {64, 56, 64, 1, 1, 0},   // layer1 conv1
    {64, 56, 64, 3, 1, 1},   // layer1 conv2
    {64, 56, 256, 1, 1, 0},  // layer1 conv3 and downsample
    {256, 56, 64, 1, 1, 0},  // layer1.1 conv1
    {256, 56, 128, 1, 1, 0}, // layer2 conv1
    {128, 56, 128, 3, 2, 1}, // layer2 conv2 (stride 2)
    {128, 28, 512, 1, 1, 0}, // layer2 conv3
};

int main(int argc, char **argv) {
    int device = 0;
    const char *expect = nullptr;
    for (int i = 1; i < argc; i++) {
        if (!std::strcmp(argv[i], "--device") && i + 1 < argc) device = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--expect") && i + 1 < argc) expect = argv[++i];
        else if (!std::strcmp(argv[i], "--simulated-gpus")) simulated_gpus = true;
        else {
            std::fprintf(stderr, "usage: %s --device N [--expect cold|warm] [--simulated-gpus]\n", argv[0]);
            return 2;
        }
    }
    const int batch = 32, iterations = 3;
    const int distinct = static_cast<int>(sizeof kLayers / sizeof kLayers[0]);
    int finds = 0;
    auto t0 = std::chrono::steady_clock::now();
    for (int it = 0; it < iterations; it++) {
        for (const Conv &c : kLayers) {
            int input[4] = {batch, c.cin, c.hw, c.hw};
            int weight[4] = {c.cout, c.cin, c.k, c.k};
            ConvolutionParams params;
            setConvolutionParams(&params, device, input, weight, c.pad, c.stride, 1, 1, false, true,
                                 MemoryFormat::Contiguous);
            auto fwd = getBestAlgorithm(fwd_algos, params);
            auto bwd_data = getBestAlgorithm(bwd_data_algos, params);
            auto bwd_filter = getBestAlgorithm(bwd_filter_algos, params);
            finds += 3;
            if (it == 0)
                std::printf("  conv %3dx%-3d k%d s%d -> fwd algo %d, bwd-data algo %d, bwd-filter algo %d\n", c.cin,
                            c.cout, c.k, c.stride, fwd.algo, bwd_data.algo, bwd_filter.algo);
        }
    }
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    int rc = fwd_algos.save();
    if (rc != 0) std::printf("save: %s (kept in memory)\n", convcache_strerror(rc));

    std::printf("device %d (scope \"%s\"): %d cache lookups, %d cuDNN benchmarks run, %.1f ms\n", device,
                conv_caches.scope(device).c_str(), finds, benchmarks_run, ms);
    if (expect && !std::strcmp(expect, "cold") && benchmarks_run != 3 * distinct) {
        std::fprintf(stderr, "expected %d benchmarks on a cold cache, ran %d\n", 3 * distinct, benchmarks_run);
        return 1;
    }
    if (expect && !std::strcmp(expect, "warm") && benchmarks_run != 0) {
        std::fprintf(stderr, "expected no benchmarks on a warm cache, ran %d\n", benchmarks_run);
        return 1;
    }
    return 0;
}
