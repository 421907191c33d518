/*
 * The CUDA driver functions NVIDIA's cuDNN 9 sublibraries name that the
 * stand-in driver (tests/preload/standin_cuda.c) does not define, each
 * answering that there is no device: with it preloaded beside the stand-in,
 * the real libcudnn.so.9 loads on a machine with no GPU, and its backend
 * descriptors (created, set, finalized and destroyed on the CPU) are
 * shadow_scale's baseline in bench/v8/run.sh.
 */
#define CUDA_ERROR_NO_DEVICE 100

int cuGetErrorString(int error, const char **s) {
    (void)error;
    *s = "no CUDA device (convcache's benchmark stub)";
    return 0;
}
int cuModuleGetFunction(void) { return CUDA_ERROR_NO_DEVICE; }
int cuModuleLoadData(void) { return CUDA_ERROR_NO_DEVICE; }
int cuModuleUnload(void) { return CUDA_ERROR_NO_DEVICE; }
int cuTensorMapEncodeIm2col(void) { return CUDA_ERROR_NO_DEVICE; }
int cuTensorMapEncodeTiled(void) { return CUDA_ERROR_NO_DEVICE; }
