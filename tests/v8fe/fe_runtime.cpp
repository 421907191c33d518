// The CUDA runtime, NVRTC and cuDNN entry points that cudnn_frontend's v1
// graph API links to beyond what the stand-ins (tests/preload) have, for
// tests/v8fe/frontend_hosts. A convolution graph calls three of them:
//   cudaDeviceGetAttribute            check_support reads the compute
//                                     capability: the stand-in driver's
//   cudaGetDriverEntryPointByVersion  execute looks for cuCtxGetCurrent:
//                                     "not found", so the frontend leaves
//                                     the thread's context alone
//   cudaStreamGetCaptureInfo          execute asks whether the stream is
//                                     being captured (to keep a plan whose
//                                     behavior notes are unknown alive in
//                                     the CUDA graph): it is not
// The others belong to paths a convolution does not take (runtime-compiled
// engines, CUDA graph capture, workspace overrides): each ends the program
// with a message, so that a new call is seen rather than answered wrongly.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <nvrtc.h>

#include <cstdio>
#include <cstdlib>

namespace {
[[noreturn]] void not_here(const char *name) {
    std::fprintf(stderr, "frontend_hosts: cudnn_frontend called %s, which tests/v8fe/fe_runtime.cpp leaves out\n",
                 name);
    std::abort();
}
} // namespace

extern "C" {

cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attr, int device) {
    // cudaDevAttr* and CU_DEVICE_ATTRIBUTE_* share their values; the runtime
    // initializes the driver first.
    CUresult r = cuInit(0);
    if (r == CUDA_SUCCESS) r = cuDeviceGetAttribute(value, static_cast<CUdevice_attribute>(attr), device);
    return r == CUDA_SUCCESS ? cudaSuccess : r == CUDA_ERROR_INVALID_DEVICE ? cudaErrorInvalidDevice : cudaErrorInvalidValue;
}

cudaError_t cudaGetDriverEntryPointByVersion(const char *, void **fn, unsigned int, unsigned long long,
                                             cudaDriverEntryPointQueryResult *result) {
    if (fn) *fn = nullptr;
    if (result) *result = cudaDriverEntryPointSymbolNotFound;
    return cudaSuccess;
}

// No stream is ever captured here.
cudaError_t cudaStreamGetCaptureInfo(cudaStream_t, cudaStreamCaptureStatus *status, unsigned long long *id,
                                     cudaGraph_t *graph, const cudaGraphNode_t **deps, const cudaGraphEdgeData **edges,
                                     size_t *ndeps) {
    if (status) *status = cudaStreamCaptureStatusNone;
    if (id) *id = 0;
    if (graph) *graph = nullptr;
    if (deps) *deps = nullptr;
    if (edges) *edges = nullptr;
    if (ndeps) *ndeps = 0;
    return cudaSuccess;
}

#define NOT_HERE(ret, name, ...) \
    ret name(__VA_ARGS__) { not_here(#name); }

NOT_HERE(cudaError_t, cudaGraphRetainUserObject, cudaGraph_t, cudaUserObject_t, unsigned int, unsigned int)
NOT_HERE(cudaError_t, cudaKernelSetAttributeForDevice, cudaKernel_t, cudaFuncAttribute, int, int)
NOT_HERE(cudaError_t, cudaLaunchKernel, const void *, dim3, dim3, void **, size_t, cudaStream_t)
NOT_HERE(cudaError_t, cudaLibraryGetKernel, cudaKernel_t *, cudaLibrary_t, const char *)
NOT_HERE(cudaError_t, cudaLibraryLoadData, cudaLibrary_t *, const void *, cudaJitOption *, void **, unsigned int,
         cudaLibraryOption *, void **, unsigned int)
NOT_HERE(cudaError_t, cudaLibraryUnload, cudaLibrary_t)
NOT_HERE(cudaError_t, cudaMemcpyAsync, void *, const void *, size_t, cudaMemcpyKind, cudaStream_t)
NOT_HERE(cudaError_t, cudaMemsetAsync, void *, int, size_t, cudaStream_t)
NOT_HERE(cudaError_t, cudaPointerGetAttributes, cudaPointerAttributes *, const void *)
NOT_HERE(cudaError_t, cudaUserObjectCreate, cudaUserObject_t *, void *, cudaHostFn_t, unsigned int, unsigned int)
NOT_HERE(cudaError_t, cudaUserObjectRelease, cudaUserObject_t, unsigned int)
NOT_HERE(cudnnStatus_t, cudnnGetExecutionPlanWorkspaceSize, cudnnHandle_t, cudnnBackendDescriptor_t,
         cudnnBackendDescriptor_t, size_t *)
NOT_HERE(nvrtcResult, nvrtcCompileProgram, nvrtcProgram, int, const char *const *)
NOT_HERE(nvrtcResult, nvrtcCreateProgram, nvrtcProgram *, const char *, const char *, int, const char *const *,
         const char *const *)
NOT_HERE(nvrtcResult, nvrtcDestroyProgram, nvrtcProgram *)
NOT_HERE(nvrtcResult, nvrtcGetCUBIN, nvrtcProgram, char *)
NOT_HERE(nvrtcResult, nvrtcGetCUBINSize, nvrtcProgram, size_t *)
NOT_HERE(nvrtcResult, nvrtcGetProgramLog, nvrtcProgram, char *)
NOT_HERE(nvrtcResult, nvrtcGetProgramLogSize, nvrtcProgram, size_t *)

} // extern "C"
