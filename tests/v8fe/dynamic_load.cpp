// torch_like_dl: tests/v8fe/torch_like built with cudnn_frontend's dynamic
// loading (NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING), linked to no cuDNN and
// no CUDA runtime. The frontend takes every cuDNN function with
// dlsym(cudnn_dlhandle, name); this file opens cuDNN for it (RTLD_LOCAL, as
// DLOPEN_CUDNN names it, default "libcudnn.so.9"), and gives the few
// functions torch_conv.cpp calls itself (as PyTorch does) through dlsym as
// well: cudnnCreate, cudnnDestroy, cudnnBackendExecute from cuDNN's handle,
// cudaSetDevice, cudaMalloc, cudaFree from the CUDA runtime's.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

#include <cudnn.h>
#include <cuda_runtime_api.h>

namespace {

void *open_or_die(const char *name) {
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        std::fprintf(stderr, "torch_like_dl: dlopen %s: %s\n", name, dlerror());
        std::exit(3);
    }
    return h;
}

void *cudnn_lib() {
    static void *h = [] {
        const char *name = std::getenv("DLOPEN_CUDNN");
        return open_or_die(name && *name ? name : "libcudnn.so.9");
    }();
    return h;
}

void *cudart_lib() {
    static void *h = open_or_die("libcudart.so.13");
    return h;
}

template <typename F>
F take(void *lib, const char *name) {
    void *p = dlsym(lib, name);
    if (!p) {
        std::fprintf(stderr, "torch_like_dl: dlsym %s: %s\n", name, dlerror());
        std::exit(3);
    }
    return reinterpret_cast<F>(p);
}

} // namespace

namespace cudnn_frontend {
void *cudnn_dlhandle = cudnn_lib();
}

extern "C" {
cudnnStatus_t cudnnCreate(cudnnHandle_t *h) {
    return take<decltype(&cudnnCreate)>(cudnn_lib(), "cudnnCreate")(h);
}
cudnnStatus_t cudnnDestroy(cudnnHandle_t h) {
    return take<decltype(&cudnnDestroy)>(cudnn_lib(), "cudnnDestroy")(h);
}
cudnnStatus_t cudnnBackendExecute(cudnnHandle_t h, cudnnBackendDescriptor_t plan, cudnnBackendDescriptor_t pack) {
    static auto fn = take<decltype(&cudnnBackendExecute)>(cudnn_lib(), "cudnnBackendExecute");
    return fn(h, plan, pack);
}
cudaError_t cudaSetDevice(int d) { return take<decltype(&cudaSetDevice)>(cudart_lib(), "cudaSetDevice")(d); }
cudaError_t cudaMalloc(void **p, size_t n) { return take<decltype(&cudaMalloc)>(cudart_lib(), "cudaMalloc")(p, n); }
cudaError_t cudaFree(void *p) { return take<decltype(&cudaFree)>(cudart_lib(), "cudaFree")(p); }
}
