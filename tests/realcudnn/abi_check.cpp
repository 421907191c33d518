// The types convcache calls the real cuDNN and CUDA driver through, checked
// against NVIDIA's declarations (make real-cudnn-check). Compiled with
// CONVCACHE_REAL_CUDNN against the real cudnn.h and cuda.h.
//
// The interposer's own six functions are checked by the compiler when
// cudnn/preload/preload.c is compiled against the real header (a
// definition that differs from the declaration is an error). What is
// checked here are the function pointer types that the interposer and the
// demo call real functions through (found with dlsym): those use
// `const void *` for descriptors and `int` for enums, so they cannot equal
// the real types; they must have the same calling convention. abi::same
// says so when both have the same number of parameters and, for the return
// value and each parameter: both are pointers (to void, which stands for
// an opaque handle, or to compatible types), or both are integers or enums
// of the same size, or the same floating type. Structs are compared
// field by field.
//
// The program also runs: it checks the demo's algorithm names against the
// enum's values. Exit status 0 when every check passed.
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <type_traits>

extern "C" {
#include "preload.h" // CONVCACHE_REAL_CUDNN: includes the real cuda.h and cudnn.h
}
#include "cudnn_find.hpp"

#ifndef CONVCACHE_REAL_CUDNN
#error "compile with -DCONVCACHE_REAL_CUDNN against NVIDIA's headers"
#endif

namespace abi {

template <class T, class = void> struct complete : std::false_type {};
template <class T> struct complete<T, std::void_t<decltype(sizeof(T))>> : std::true_type {};

template <class A, class B> constexpr bool slot();

template <class A, class B> constexpr bool pointee() {
    using a = std::remove_cv_t<A>;
    using b = std::remove_cv_t<B>;
    if constexpr (std::is_void_v<a> || std::is_void_v<b>)
        return true; // void * for an opaque handle or a buffer
    else if constexpr (std::is_class_v<a> || std::is_class_v<b>) {
        if constexpr (std::is_same_v<a, b>)
            return true;
        else if constexpr (complete<a>::value && complete<b>::value)
            return sizeof(a) == sizeof(b); // the perf structs: fields checked below
        else
            return false;
    } else
        return slot<a, b>();
}

template <class A, class B> constexpr bool slot() {
    using a = std::remove_cv_t<A>;
    using b = std::remove_cv_t<B>;
    if constexpr (std::is_pointer_v<a> && std::is_pointer_v<b>)
        return pointee<std::remove_pointer_t<a>, std::remove_pointer_t<b>>();
    else if constexpr (std::is_pointer_v<a> || std::is_pointer_v<b>)
        return false;
    else if constexpr (std::is_floating_point_v<a> || std::is_floating_point_v<b>)
        return std::is_same_v<a, b>;
    else if constexpr ((std::is_integral_v<a> || std::is_enum_v<a>) && (std::is_integral_v<b> || std::is_enum_v<b>))
        return sizeof(a) == sizeof(b);
    else
        return std::is_same_v<a, b>;
}

template <class F, class G> struct fn : std::false_type {};
template <class R1, class... A, class R2, class... B> struct fn<R1 (*)(A...), R2 (*)(B...)> {
    static constexpr bool arity = sizeof...(A) == sizeof...(B);
    template <class X = void> static constexpr bool params() {
        if constexpr (sizeof...(A) == sizeof...(B))
            return (slot<A, B>() && ...);
        else
            return false;
    }
    static constexpr bool value = arity && slot<R1, R2>() && params();
};

template <class F, class G> constexpr bool same = fn<F, G>::value;

} // namespace abi

#define SAME(ours, real) static_assert(abi::same<ours, decltype(&real)>, #ours " calls " #real " with another ABI")

// ---- the interposer (cudnn/preload/preload.h) --------------------------------
SAME(find_fn, cudnnFindConvolutionForwardAlgorithm);
SAME(find_fn, cudnnFindConvolutionBackwardDataAlgorithm);
SAME(find_fn, cudnnFindConvolutionBackwardFilterAlgorithm);
SAME(find_ex_fn, cudnnFindConvolutionForwardAlgorithmEx);
SAME(find_ex_fn, cudnnFindConvolutionBackwardDataAlgorithmEx);
SAME(find_ex_fn, cudnnFindConvolutionBackwardFilterAlgorithmEx);
SAME(get_tensor_fn, cudnnGetTensorNdDescriptor);
SAME(get_filter_fn, cudnnGetFilterNdDescriptor);
SAME(get_conv_fn, cudnnGetConvolutionNdDescriptor);
SAME(get_int_fn, cudnnGetConvolutionMathType);
SAME(get_int_fn, cudnnGetConvolutionGroupCount);
SAME(get_int_fn, cudnnGetConvolutionReorderType);
SAME(get_stream_fn, cudnnGetStream);
SAME(get_version_fn, cudnnGetVersion);
SAME(cu_ctx_get_device_fn, cuCtxGetDevice);
SAME(cu_stream_get_ctx_fn, cuStreamGetCtx);
SAME(cu_ctx_push_fn, cuCtxPushCurrent_v2);
SAME(cu_ctx_pop_fn, cuCtxPopCurrent_v2);
SAME(cu_device_total_mem_fn, cuDeviceTotalMem_v2);

// libconvcache's functions, as the interposer loads them: exactly.
static_assert(std::is_same_v<decltype(convcache_api::open), decltype(&convcache_open)> &&
                  std::is_same_v<decltype(convcache_api::get_or_create), decltype(&convcache_get_or_create)> &&
                  std::is_same_v<decltype(convcache_api::insert), decltype(&convcache_insert)> &&
                  std::is_same_v<decltype(convcache_api::cudnn_scope), decltype(&convcache_cudnn_scope)> &&
                  std::is_same_v<decltype(convcache_api::last_error), decltype(&convcache_last_error)>,
              "the interposer's view of libconvcache differs from convcache.h");

// The check itself must be able to fail.
static_assert(!abi::same<find_fn, decltype(&cudnnFindConvolutionForwardAlgorithmEx)>, "arity");
static_assert(!abi::same<size_t (*)(void), int (*)(void)>, "integer size");
static_assert(!abi::same<int (*)(float), int (*)(int)>, "float vs integer");
static_assert(!abi::same<int (*)(int *), int (*)(int)>, "pointer vs integer");
static_assert(!abi::same<int (*)(cc_perf *), int (*)(int *)>, "struct vs int pointee");

// Every perf struct convcache declares has cuDNN's layout, field by field.
#define FIELD(ours, real, f)                                                                           \
    static_assert(offsetof(ours, f) == offsetof(real, f) && abi::slot<decltype(ours::f), decltype(real::f)>(), \
                  #ours "." #f " differs from " #real)
#define SAME_PERF(ours, real)                                                                          \
    static_assert(sizeof(ours) == sizeof(real), #ours " is not the size of " #real);                   \
    FIELD(ours, real, algo);                                                                           \
    FIELD(ours, real, status);                                                                         \
    FIELD(ours, real, time);                                                                           \
    FIELD(ours, real, memory);                                                                         \
    FIELD(ours, real, determinism);                                                                    \
    FIELD(ours, real, mathType);                                                                       \
    static_assert(offsetof(ours, reserved) == offsetof(real, reserved) &&                              \
                      sizeof(ours::reserved) == sizeof(real::reserved),                                \
                  #ours ".reserved differs from " #real)
SAME_PERF(cc_perf, cudnnConvolutionFwdAlgoPerf_t);
SAME_PERF(cc_perf, cudnnConvolutionBwdDataAlgoPerf_t);
SAME_PERF(cc_perf, cudnnConvolutionBwdFilterAlgoPerf_t);
static_assert(sizeof(cudnnStatus_t) == sizeof(int) && sizeof(cudnnDataType_t) == sizeof(int),
              "the interposer reads cuDNN enums as int");

// ---- the demo (examples/demo/cudnn_find.hpp) ---------------------------------
namespace demo {
struct RealCudnnCheck {
    using F = CudnnFinder;
    SAME(decltype(F::create_), cudnnCreate);
    SAME(decltype(F::destroy_), cudnnDestroy);
    SAME(decltype(F::create_tensor_), cudnnCreateTensorDescriptor);
    SAME(decltype(F::destroy_tensor_), cudnnDestroyTensorDescriptor);
    SAME(decltype(F::create_filter_), cudnnCreateFilterDescriptor);
    SAME(decltype(F::destroy_filter_), cudnnDestroyFilterDescriptor);
    SAME(decltype(F::create_conv_), cudnnCreateConvolutionDescriptor);
    SAME(decltype(F::destroy_conv_), cudnnDestroyConvolutionDescriptor);
    SAME(decltype(F::set_tensor_), cudnnSetTensorNdDescriptor);
    SAME(decltype(F::set_filter_), cudnnSetFilterNdDescriptor);
    SAME(decltype(F::set_conv_), cudnnSetConvolutionNdDescriptor);
    SAME(decltype(F::find_), cudnnFindConvolutionForwardAlgorithm);
    static_assert(int(F::kFloat) == int(CUDNN_DATA_FLOAT) && int(F::kNCHW) == int(CUDNN_TENSOR_NCHW) &&
                      int(F::kCrossCorrelation) == int(CUDNN_CROSS_CORRELATION),
                  "the demo's cuDNN values");
};
} // namespace demo

#define SAME_DEMO_PERF(real)                                                                           \
    static_assert(sizeof(demo::CudnnPerf) == sizeof(real) && offsetof(demo::CudnnPerf, algo) == offsetof(real, algo) && \
                      offsetof(demo::CudnnPerf, status) == offsetof(real, status) &&                   \
                      offsetof(demo::CudnnPerf, time_ms) == offsetof(real, time) &&                    \
                      offsetof(demo::CudnnPerf, memory) == offsetof(real, memory) &&                   \
                      offsetof(demo::CudnnPerf, determinism) == offsetof(real, determinism) &&         \
                      offsetof(demo::CudnnPerf, math_type) == offsetof(real, mathType) &&              \
                      offsetof(demo::CudnnPerf, reserved) == offsetof(real, reserved),                 \
                  "demo::CudnnPerf differs from " #real)
SAME_DEMO_PERF(cudnnConvolutionFwdAlgoPerf_t);

int main() {
    // The demo names forward algorithms by their enum value.
    static const struct {
        int value;
        const char *name;
    } fwd[] = {
        {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, "IMPLICIT_GEMM"},
        {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, "IMPLICIT_PRECOMP_GEMM"},
        {CUDNN_CONVOLUTION_FWD_ALGO_GEMM, "GEMM"},
        {CUDNN_CONVOLUTION_FWD_ALGO_DIRECT, "DIRECT"},
        {CUDNN_CONVOLUTION_FWD_ALGO_FFT, "FFT"},
        {CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING, "FFT_TILING"},
        {CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD, "WINOGRAD"},
        {CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED, "WINOGRAD_NONFUSED"},
    };
    static_assert(sizeof fwd / sizeof fwd[0] == CUDNN_CONVOLUTION_FWD_ALGO_COUNT, "every forward algorithm");
    int bad = 0;
    for (const auto &a : fwd)
        if (std::strcmp(demo::cudnn_fwd_algo_name(a.value), a.name) != 0) {
            std::fprintf(stderr, "abi_check: the demo names algorithm %d %s, cuDNN %s\n", a.value,
                         demo::cudnn_fwd_algo_name(a.value), a.name);
            bad = 1;
        }
    if (std::strcmp(demo::cudnn_fwd_algo_name(CUDNN_CONVOLUTION_FWD_ALGO_COUNT), "?") != 0) bad = 1;
    if (!bad) std::printf("abi_check: every function type, perf struct and value matches cuDNN %d\n", CUDNN_VERSION);
    return bad;
}
