/*
 * The twelve cuDNN functions the interposer serves, for the stand-in
 * libraries that reference them as PyTorch's libtorch_cuda.so does
 * (tests/doctor/libtorch_cuda.c, tests/preload/enable_client.c): the six
 * legacy find functions of the v7 path and the six backend functions of
 * the v8 path. CUDNN_SERVED(X) expands X(name) for each. Written here, not
 * taken from the interposer, so that a name it forgets fails the tests.
 */
#ifndef CONVCACHE_TEST_CUDNN_SERVED_H
#define CONVCACHE_TEST_CUDNN_SERVED_H

#define CUDNN_SERVED(X)                             \
    X(cudnnFindConvolutionForwardAlgorithm)         \
    X(cudnnFindConvolutionForwardAlgorithmEx)       \
    X(cudnnFindConvolutionBackwardDataAlgorithm)    \
    X(cudnnFindConvolutionBackwardDataAlgorithmEx)  \
    X(cudnnFindConvolutionBackwardFilterAlgorithm)  \
    X(cudnnFindConvolutionBackwardFilterAlgorithmEx) \
    X(cudnnBackendCreateDescriptor)                 \
    X(cudnnBackendDestroyDescriptor)                \
    X(cudnnBackendSetAttribute)                     \
    X(cudnnBackendGetAttribute)                     \
    X(cudnnBackendFinalize)                         \
    X(cudnnBackendExecute)

/* Declared without their parameters: only the references matter. */
#define CUDNN_SERVED_DECLARE(name) int name(void);
CUDNN_SERVED(CUDNN_SERVED_DECLARE)

#endif
