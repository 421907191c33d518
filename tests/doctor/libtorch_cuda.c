/*
 * A stand-in for PyTorch's libtorch_cuda.so, for the tests of convcache
 * doctor (cmd/convcache/doctor_test.go). Like the real library, it imports
 * the functions of both of PyTorch's cuDNN convolution paths from
 * libcudnn.so.9 (here the stand-in in build/tests/preload): the six legacy
 * find functions of the v7 path and the six backend functions of the v8
 * path. The tests load it from a stand-in torch package, and the doctor
 * reads which functions it imports (its .dynsym) and where the loader
 * binds them (LD_BIND_NOW=1, LD_DEBUG=bindings). Nothing here is called.
 */

#include "../cudnn_served.h"

typedef int (*fn)(void);

/* Exported, so that the references are kept. */
#define REF(name) name,
__attribute__((visibility("default"))) const fn standin_torch_cuda_refs[] = {CUDNN_SERVED(REF)};
