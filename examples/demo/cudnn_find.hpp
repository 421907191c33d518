// cudnn_find.hpp - the demo's GPU path: cuDNN's own benchmark.
//
// Where a CUDA device and cuDNN are present, the demo does what PyTorch's
// benchmark mode does on a miss: cudnnFindConvolutionForwardAlgorithm on the
// layer's real shape, keeping the fastest result. The cached value is then
// cuDNN's own 48-byte cudnnConvolutionFwdAlgoPerf_t, in the scope of the
// device's fingerprint (convcache_cudnn_scope), exactly as an integration
// into PyTorch would store it.
//
// cuDNN is loaded at run time ($CONVCACHE_CUDNN_LIBRARY, else libcudnn.so.9,
// then .8), so the demo needs no CUDA to build and runs everywhere; without
// a device or cuDNN it says why and uses its CPU autotuner instead.
#ifndef CONVCACHE_DEMO_CUDNN_FIND_HPP
#define CONVCACHE_DEMO_CUDNN_FIND_HPP

#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "kernels.hpp"

namespace demo {

// cudnnConvolutionFwdAlgoPerf_t (cuDNN 8 and 9): 48 bytes.
struct CudnnPerf {
    int32_t algo;
    int32_t status;
    float time_ms;
    uint64_t memory;
    int32_t determinism;
    int32_t math_type;
    int32_t reserved[3];
};
static_assert(sizeof(CudnnPerf) == 48, "cudnnConvolutionFwdAlgoPerf_t is 48 bytes");

inline const char *cudnn_fwd_algo_name(int a) {
    static const char *names[] = {"IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT",
                                  "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
    return a >= 0 && a < 8 ? names[a] : "?";
}

class CudnnFinder {
public:
    // open loads cuDNN and creates a handle on the current device, or
    // returns null and says why.
    static std::unique_ptr<CudnnFinder> open(std::string *why) {
        std::unique_ptr<CudnnFinder> f(new CudnnFinder);
        const char *env = std::getenv("CONVCACHE_CUDNN_LIBRARY");
        const char *names[] = {env && *env ? env : "libcudnn.so.9", "libcudnn.so.8"};
        for (const char *n : names)
            if (!f->lib_ && n) f->lib_ = dlopen(n, RTLD_NOW | RTLD_LOCAL);
        if (!f->lib_) {
            *why = "no cuDNN (libcudnn.so.9 or .8) could be loaded";
            return nullptr;
        }
        if (!f->bind()) {
            *why = "the cuDNN library lacks a function the demo needs";
            return nullptr;
        }
        if (int st = f->create_(&f->handle_)) {
            *why = "cudnnCreate failed with status " + std::to_string(st) + " (no usable GPU?)";
            return nullptr;
        }
        if (f->create_tensor_(&f->x_) || f->create_tensor_(&f->y_) || f->create_filter_(&f->w_) ||
            f->create_conv_(&f->conv_)) {
            *why = "cuDNN could not create descriptors";
            return nullptr;
        }
        return f;
    }

    ~CudnnFinder() {
        if (x_) destroy_tensor_(x_);
        if (y_) destroy_tensor_(y_);
        if (w_) destroy_filter_(w_);
        if (conv_) destroy_conv_(conv_);
        if (handle_) destroy_(handle_);
        // The library stays loaded: cuDNN does not support being unloaded.
    }

    // find benchmarks every forward algorithm on s (float, NCHW) and returns
    // the fastest, as cuDNN reports it. ok is false if cuDNN failed.
    CudnnPerf find(const ConvShape &s, bool *ok) {
        CudnnPerf perf[8] = {};
        *ok = false;
        const int x[4] = {s.n, s.c, s.h, s.w}, y[4] = {s.n, s.k, s.oh(), s.ow()}, w[4] = {s.k, s.c, s.r, s.r};
        int xs[4], ys[4];
        strides(x, xs);
        strides(y, ys);
        const int pad[2] = {s.pad, s.pad}, stride[2] = {s.stride, s.stride}, dil[2] = {1, 1};
        if (set_tensor_(x_, kFloat, 4, x, xs) || set_tensor_(y_, kFloat, 4, y, ys) ||
            set_filter_(w_, kFloat, kNCHW, 4, w) ||
            set_conv_(conv_, 2, pad, stride, dil, kCrossCorrelation, kFloat))
            return perf[0];
        int returned = 0;
        calls_++;
        if (find_(handle_, x_, w_, conv_, y_, 8, &returned, perf) != 0 || returned < 1) return perf[0];
        *ok = perf[0].status == 0;
        return perf[0];
    }

    int calls() const { return calls_; }

    // cuDNN's values (CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW,
    // CUDNN_CROSS_CORRELATION), checked against the real cudnn.h by make
    // real-cudnn-check (tests/realcudnn/abi_check.cpp), as are the function
    // types below and CudnnPerf's layout.
    enum : int { kFloat = 0, kNCHW = 0, kCrossCorrelation = 1 };

private:
    friend struct RealCudnnCheck;
    CudnnFinder() = default;

    static void strides(const int d[4], int s[4]) {
        s[3] = 1;
        for (int i = 2; i >= 0; i--) s[i] = s[i + 1] * d[i + 1];
    }

    template <typename F> bool sym(F *f, const char *name) {
        *f = reinterpret_cast<F>(dlsym(lib_, name));
        return *f != nullptr;
    }

    bool bind() {
        return sym(&create_, "cudnnCreate") && sym(&destroy_, "cudnnDestroy") &&
               sym(&create_tensor_, "cudnnCreateTensorDescriptor") &&
               sym(&destroy_tensor_, "cudnnDestroyTensorDescriptor") &&
               sym(&create_filter_, "cudnnCreateFilterDescriptor") &&
               sym(&destroy_filter_, "cudnnDestroyFilterDescriptor") &&
               sym(&create_conv_, "cudnnCreateConvolutionDescriptor") &&
               sym(&destroy_conv_, "cudnnDestroyConvolutionDescriptor") &&
               sym(&set_tensor_, "cudnnSetTensorNdDescriptor") &&
               sym(&set_filter_, "cudnnSetFilterNdDescriptor") &&
               sym(&set_conv_, "cudnnSetConvolutionNdDescriptor") &&
               sym(&find_, "cudnnFindConvolutionForwardAlgorithm");
    }

    void *lib_ = nullptr;
    void *handle_ = nullptr, *x_ = nullptr, *y_ = nullptr, *w_ = nullptr, *conv_ = nullptr;
    int calls_ = 0;
    int (*create_)(void **) = nullptr;
    int (*destroy_)(void *) = nullptr;
    int (*create_tensor_)(void **) = nullptr;
    int (*destroy_tensor_)(void *) = nullptr;
    int (*create_filter_)(void **) = nullptr;
    int (*destroy_filter_)(void *) = nullptr;
    int (*create_conv_)(void **) = nullptr;
    int (*destroy_conv_)(void *) = nullptr;
    int (*set_tensor_)(void *, int, int, const int *, const int *) = nullptr;
    int (*set_filter_)(void *, int, int, int, const int *) = nullptr;
    int (*set_conv_)(void *, int, const int *, const int *, const int *, int, int) = nullptr;
    int (*find_)(void *, void *, void *, void *, void *, int, int *, CudnnPerf *) = nullptr;
};

} // namespace demo

#endif
