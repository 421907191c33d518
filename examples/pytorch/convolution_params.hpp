// convolution_params.hpp - PyTorch's cuDNN convolution cache types, layout for
// layout, for the examples, tests and benchmarks that stand in for PyTorch.
// The one copy: each includes this file.
//
//   ConvolutionParams    the key (aten/src/ATen/native/cudnn/ConvShared.h):
//                        104 bytes on x86-64, zeroed with memset before it
//                        is filled, so that its padding bytes are 0.
//   ParamsHash,          PyTorch's BenchmarkCache map's hash and equality
//   ParamsEqual          (aten/src/ATen/native/utils/ParamsHash.h): 32-bit
//                        FNV-1a over every byte, and memcmp.
//   AlgoPerf<Kind>       the values: cudnnConvolution{Fwd,BwdData,BwdFilter}
//                        AlgoPerf_t (cudnn_cnn.h), one 48-byte layout.
//
// With CONVCACHE_REAL_CUDNN (make real-cudnn-check, make v8-real-headers),
// NVIDIA's cudnn.h provides cudnnDataType_t and the perf structs, and each
// perf struct is checked to have AlgoPerf's layout. Without it, the three
// cudnnConvolution*AlgoPerf_t names are AlgoPerf<0..2>, and cudnnDataType_t
// is an int, as in cudnn/engine/backend_api.h's stand-in.
#ifndef CONVCACHE_EXAMPLES_CONVOLUTION_PARAMS_HPP
#define CONVCACHE_EXAMPLES_CONVOLUTION_PARAMS_HPP

#include <cstddef>
#include <cstdint>
#include <cstring>

#ifdef CONVCACHE_REAL_CUDNN
#include <cudnn.h>
#else
typedef int cudnnDataType_t; // CUDNN_DATA_FLOAT = 0, HALF = 2, BFLOAT16 = 9
#endif

// ---- the key --------------------------------------------------------------

enum class MemoryFormat : int8_t { Contiguous, Preserve, ChannelsLast, ChannelsLast3d };
constexpr int max_dim = 3;

struct ConvolutionParams {
    int16_t device_id; // c10::DeviceIndex
    cudnnDataType_t dataType;
    int input_size[2 + max_dim];
    uint8_t input_dim;
    MemoryFormat memory_format;
    int weight_size[2 + max_dim];
    int padding[max_dim];
    int stride[max_dim];
    int dilation[max_dim];
    int64_t groups;
    bool deterministic;
    bool allow_tf32;
    // NB: transposed purposely omitted: transposed just swaps forward and
    // backward, so the same cache serves both.
};
static_assert(sizeof(ConvolutionParams) == 104, "ConvolutionParams: 104 bytes on x86-64");
static_assert(offsetof(ConvolutionParams, dataType) == 4, "layout");
static_assert(offsetof(ConvolutionParams, input_size) == 8, "layout");
static_assert(offsetof(ConvolutionParams, input_dim) == 28, "layout");
static_assert(offsetof(ConvolutionParams, memory_format) == 29, "layout");
static_assert(offsetof(ConvolutionParams, weight_size) == 32, "layout");
static_assert(offsetof(ConvolutionParams, padding) == 52, "layout");
static_assert(offsetof(ConvolutionParams, stride) == 64, "layout");
static_assert(offsetof(ConvolutionParams, dilation) == 76, "layout");
static_assert(offsetof(ConvolutionParams, groups) == 88, "layout");
static_assert(offsetof(ConvolutionParams, deterministic) == 96, "layout");
static_assert(offsetof(ConvolutionParams, allow_tf32) == 97, "layout");

// ---- PyTorch's map's hash and equality (the baseline's) -------------------

template <typename Params>
struct ParamsHash {
    size_t operator()(const Params &params) const {
        auto ptr = reinterpret_cast<const uint8_t *>(&params);
        uint32_t value = 0x811C9DC5;
        for (size_t i = 0; i < sizeof(Params); ++i) {
            value ^= ptr[i];
            value *= 0x01000193;
        }
        return (size_t)value;
    }
};

template <typename Params>
struct ParamsEqual {
    bool operator()(const Params &a, const Params &b) const {
        auto ptr1 = reinterpret_cast<const uint8_t *>(&a);
        auto ptr2 = reinterpret_cast<const uint8_t *>(&b);
        return std::memcmp(ptr1, ptr2, sizeof(Params)) == 0;
    }
};

// ---- the values -----------------------------------------------------------

// cudnnConvolution{Fwd,BwdData,BwdFilter}AlgoPerf_t: one layout, 48 bytes.
template <int Kind>
struct AlgoPerf {
    int algo;        // cudnnConvolution*Algo_t
    int status;      // cudnnStatus_t
    float time;      // ms
    size_t memory;   // workspace bytes
    int determinism; // cudnnDeterminism_t
    int mathType;    // cudnnMathType_t
    int reserved[3];
};
static_assert(sizeof(AlgoPerf<0>) == 48, "cuDNN perf struct: 48 bytes");
static_assert(offsetof(AlgoPerf<0>, memory) == 16, "layout");
static_assert(offsetof(AlgoPerf<0>, determinism) == 24, "layout");
static_assert(offsetof(AlgoPerf<0>, reserved) == 32, "layout");

#ifndef CONVCACHE_REAL_CUDNN
using cudnnConvolutionFwdAlgoPerf_t = AlgoPerf<0>;
using cudnnConvolutionBwdDataAlgoPerf_t = AlgoPerf<1>;
using cudnnConvolutionBwdFilterAlgoPerf_t = AlgoPerf<2>;
#else
#define CONVCACHE_SAME_LAYOUT(T)                                                                           \
    static_assert(sizeof(T) == sizeof(AlgoPerf<0>) && offsetof(T, algo) == offsetof(AlgoPerf<0>, algo) &&  \
                      offsetof(T, status) == offsetof(AlgoPerf<0>, status) &&                              \
                      offsetof(T, time) == offsetof(AlgoPerf<0>, time) &&                                  \
                      offsetof(T, memory) == offsetof(AlgoPerf<0>, memory) &&                              \
                      offsetof(T, determinism) == offsetof(AlgoPerf<0>, determinism) &&                    \
                      offsetof(T, mathType) == offsetof(AlgoPerf<0>, mathType) &&                          \
                      offsetof(T, reserved) == offsetof(AlgoPerf<0>, reserved),                            \
                  #T " has AlgoPerf's layout")
CONVCACHE_SAME_LAYOUT(cudnnConvolutionFwdAlgoPerf_t);
CONVCACHE_SAME_LAYOUT(cudnnConvolutionBwdDataAlgoPerf_t);
CONVCACHE_SAME_LAYOUT(cudnnConvolutionBwdFilterAlgoPerf_t);
#undef CONVCACHE_SAME_LAYOUT
#endif

#endif
