/*
 * The part of cuDNN 9's backend API that convcache's engine-choice code, its
 * stand-in (tests/preload/standin_backend.c), its tests, the v8 example and
 * the GPU check use: the names and values of cudnn_graph.h, written out so
 * that none of them needs NVIDIA's headers to build.
 *
 * With CONVCACHE_REAL_CUDNN defined, <cudnn.h> provides every name instead,
 * and each value and function type below is checked against it at compile
 * time (make v8-real-headers): a name spelt wrong, a value that differs or a
 * prototype that does not match fails the build.
 */
#ifndef CONVCACHE_BACKEND_API_H
#define CONVCACHE_BACKEND_API_H

#include <stddef.h>
#include <stdint.h>

/* X(name, value): every constant used, with cudnn_graph.h's value. */
#define CC_BACKEND_CONSTANTS(X)                                   \
    X(CUDNN_STATUS_SUCCESS, 0)                                    \
    X(CUDNN_STATUS_NOT_INITIALIZED, 1001)                         \
    X(CUDNN_STATUS_BAD_PARAM, 2000)                               \
    X(CUDNN_STATUS_NOT_SUPPORTED, 3000)                           \
    X(CUDNN_STATUS_INTERNAL_ERROR, 4000)                          \
    X(CUDNN_STATUS_EXECUTION_FAILED, 5000)                        \
    X(CUDNN_DATA_FLOAT, 0)                                        \
    X(CUDNN_DATA_DOUBLE, 1)                                       \
    X(CUDNN_DATA_HALF, 2)                                         \
    X(CUDNN_DATA_BFLOAT16, 9)                                     \
    X(CUDNN_CROSS_CORRELATION, 1)                                 \
    X(CUDNN_HEUR_MODE_INSTANT, 0)                                 \
    X(CUDNN_HEUR_MODE_B, 1)                                       \
    X(CUDNN_HEUR_MODE_FALLBACK, 2)                                \
    X(CUDNN_HEUR_MODE_A, 3)                                       \
    X(CUDNN_KNOB_TYPE_SWIZZLE, 1)                                 \
    X(CUDNN_KNOB_TYPE_TILE_SIZE, 2)                               \
    X(CUDNN_KNOB_TYPE_EDGE, 4)                                    \
    X(CUDNN_KNOB_TYPE_TILEK, 13)                                  \
    X(CUDNN_KNOB_TYPE_STAGES, 14)                                 \
    X(CUDNN_KNOB_TYPE_SPLIT_K_SLC, 17)                            \
    X(CUDNN_KNOB_TYPE_COUNTS, 46)                                 \
    X(CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC, 4)                   \
    X(CUDNN_TYPE_HANDLE, 0)                                       \
    X(CUDNN_TYPE_DATA_TYPE, 1)                                    \
    X(CUDNN_TYPE_BOOLEAN, 2)                                      \
    X(CUDNN_TYPE_INT64, 3)                                        \
    X(CUDNN_TYPE_FLOAT, 4)                                        \
    X(CUDNN_TYPE_DOUBLE, 5)                                       \
    X(CUDNN_TYPE_VOID_PTR, 6)                                     \
    X(CUDNN_TYPE_CONVOLUTION_MODE, 7)                             \
    X(CUDNN_TYPE_HEUR_MODE, 8)                                    \
    X(CUDNN_TYPE_KNOB_TYPE, 9)                                    \
    X(CUDNN_TYPE_NUMERICAL_NOTE, 11)                              \
    X(CUDNN_TYPE_BACKEND_DESCRIPTOR, 15)                          \
    X(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, 1)                    \
    X(CUDNN_BACKEND_ENGINE_DESCRIPTOR, 2)                         \
    X(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, 3)                      \
    X(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, 4)                     \
    X(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, 5)                 \
    X(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, 7)                    \
    X(CUDNN_BACKEND_KNOB_INFO_DESCRIPTOR, 8)                      \
    X(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, 10) \
    X(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR, 11) \
    X(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR, 12)   \
    X(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, 15)                \
    X(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, 16)                  \
    X(CUDNN_BACKEND_TENSOR_DESCRIPTOR, 17)                        \
    X(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, 100)                      \
    X(CUDNN_ATTR_CONVOLUTION_CONV_MODE, 101)                      \
    X(CUDNN_ATTR_CONVOLUTION_DILATIONS, 102)                      \
    X(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, 103)                 \
    X(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, 104)                  \
    X(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, 105)                   \
    X(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, 106)                   \
    X(CUDNN_ATTR_ENGINEHEUR_MODE, 200)                            \
    X(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, 201)                 \
    X(CUDNN_ATTR_ENGINEHEUR_RESULTS, 202)                         \
    X(CUDNN_ATTR_ENGINECFG_ENGINE, 300)                           \
    X(CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, 302)                     \
    X(CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE, 303)                   \
    X(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, 400)                      \
    X(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, 401)               \
    X(CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, 402)              \
    X(CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, 600)                      \
    X(CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, 601)                     \
    X(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, 700)        \
    X(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, 701)         \
    X(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, 702)    \
    X(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, 703)            \
    X(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, 704)            \
    X(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, 705)            \
    X(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, 706)       \
    X(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA, 707)        \
    X(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, 708)   \
    X(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, 709)           \
    X(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, 710)          \
    X(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, 711)          \
    X(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, 712)     \
    X(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA, 713)      \
    X(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC, 714) \
    X(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, 715)        \
    X(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, 716)         \
    X(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, 717)        \
    X(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, 800)                      \
    X(CUDNN_ATTR_OPERATIONGRAPH_OPS, 801)                         \
    X(CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT, 802)         \
    X(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, 900)                      \
    X(CUDNN_ATTR_TENSOR_DATA_TYPE, 901)                           \
    X(CUDNN_ATTR_TENSOR_DIMENSIONS, 902)                          \
    X(CUDNN_ATTR_TENSOR_STRIDES, 903)                             \
    X(CUDNN_ATTR_TENSOR_VECTOR_COUNT, 904)                        \
    X(CUDNN_ATTR_TENSOR_VECTORIZED_DIMENSION, 905)                \
    X(CUDNN_ATTR_TENSOR_UNIQUE_ID, 906)                           \
    X(CUDNN_ATTR_TENSOR_IS_VIRTUAL, 907)                          \
    X(CUDNN_ATTR_TENSOR_IS_BY_VALUE, 908)                         \
    X(CUDNN_ATTR_TENSOR_REORDERING_MODE, 909)                     \
    X(CUDNN_TYPE_TENSOR_REORDERING_MODE, 20)                      \
    X(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, 1000)                   \
    X(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, 1001)                \
    X(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, 1003)                    \
    X(CUDNN_ATTR_KNOB_INFO_TYPE, 1200)                            \
    X(CUDNN_ATTR_KNOB_INFO_MAXIMUM_VALUE, 1201)                   \
    X(CUDNN_ATTR_KNOB_INFO_MINIMUM_VALUE, 1202)                   \
    X(CUDNN_ATTR_KNOB_INFO_STRIDE, 1203)                          \
    X(CUDNN_ATTR_ENGINE_OPERATION_GRAPH, 1300)                    \
    X(CUDNN_ATTR_ENGINE_GLOBAL_INDEX, 1301)                       \
    X(CUDNN_ATTR_ENGINE_KNOB_INFO, 1302)                          \
    X(CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, 1303)                     \
    /* The stand-in's notes (tests/preload/standin_engines.c) */ \
    X(CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, 1305)                      \
    X(CUDNN_TYPE_BEHAVIOR_NOTE, 19)                               \
    X(CUDNN_NUMERICAL_NOTE_TENSOR_CORE, 0)                        \
    X(CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS, 1)                \
    X(CUDNN_NUMERICAL_NOTE_FFT, 3)                                \
    X(CUDNN_NUMERICAL_NOTE_TYPE_COUNT, 10)                        \
    X(CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION, 0)

#define CUDNN_DIM_MAX_ 8 /* CUDNN_DIM_MAX */

#ifdef CONVCACHE_REAL_CUDNN

#include <cudnn.h>

#ifdef __cplusplus
#define CC_STATIC_ASSERT static_assert
#else
#define CC_STATIC_ASSERT _Static_assert
#endif
#define CC_CHECK_VALUE(name, value) CC_STATIC_ASSERT((long long)(name) == (value), #name " differs from cudnn_graph.h");
CC_BACKEND_CONSTANTS(CC_CHECK_VALUE)
#undef CC_CHECK_VALUE
CC_STATIC_ASSERT(CUDNN_DIM_MAX == CUDNN_DIM_MAX_, "CUDNN_DIM_MAX");

#else /* the same names, without NVIDIA's headers */

typedef int cudnnStatus_t;
typedef struct cudnnContext *cudnnHandle_t;
typedef void *cudnnBackendDescriptor_t;
typedef struct CUstream_st *cudaStream_t;
typedef int cudnnBackendDescriptorType_t;
typedef int cudnnBackendAttributeName_t;
typedef int cudnnBackendAttributeType_t;
typedef int cudnnBackendKnobType_t;
typedef int cudnnBackendHeurMode_t;
typedef int cudnnDataType_t;
typedef int cudnnConvolutionMode_t;
typedef int cudnnBackendNumericalNote_t;

#define CC_DEFINE_VALUE(name, value) name = (value),
enum { CC_BACKEND_CONSTANTS(CC_DEFINE_VALUE) };
#undef CC_DEFINE_VALUE
#define CUDNN_DIM_MAX CUDNN_DIM_MAX_

#ifdef __cplusplus
extern "C" {
#endif
size_t cudnnGetVersion(void);
cudnnStatus_t cudnnCreate(cudnnHandle_t *handle);
cudnnStatus_t cudnnDestroy(cudnnHandle_t handle);
cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream);
cudnnStatus_t cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t type,
                                           cudnnBackendDescriptor_t *descriptor);
cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t descriptor);
cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t descriptor);
cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t descriptor,
                                       cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type, int64_t count,
                                       const void *elements);
cudnnStatus_t cudnnBackendGetAttribute(cudnnBackendDescriptor_t const descriptor,
                                       cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type, int64_t requested,
                                       int64_t *count, void *elements);
cudnnStatus_t cudnnBackendExecute(cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
                                  cudnnBackendDescriptor_t variant_pack);
#ifdef __cplusplus
}
#endif

#endif /* CONVCACHE_REAL_CUDNN */

/* The types of the functions looked up at run time (dlsym). */
typedef size_t (*cc_get_version_fn)(void);
typedef cudnnStatus_t (*cc_create_fn)(cudnnHandle_t *);
typedef cudnnStatus_t (*cc_destroy_fn)(cudnnHandle_t);
typedef cudnnStatus_t (*cc_set_stream_fn)(cudnnHandle_t, cudaStream_t);
typedef cudnnStatus_t (*cc_desc_create_fn)(cudnnBackendDescriptorType_t, cudnnBackendDescriptor_t *);
typedef cudnnStatus_t (*cc_desc_destroy_fn)(cudnnBackendDescriptor_t);
typedef cudnnStatus_t (*cc_finalize_fn)(cudnnBackendDescriptor_t);
typedef cudnnStatus_t (*cc_set_attr_fn)(cudnnBackendDescriptor_t, cudnnBackendAttributeName_t,
                                        cudnnBackendAttributeType_t, int64_t, const void *);
typedef cudnnStatus_t (*cc_get_attr_fn)(cudnnBackendDescriptor_t const, cudnnBackendAttributeName_t,
                                        cudnnBackendAttributeType_t, int64_t, int64_t *, void *);
typedef cudnnStatus_t (*cc_execute_fn)(cudnnHandle_t, cudnnBackendDescriptor_t, cudnnBackendDescriptor_t);

#ifdef CONVCACHE_REAL_CUDNN
/* Each type above is exactly the real function's type. */
#ifdef __cplusplus
#include <type_traits>
#define CC_SAME_TYPE(fn, type) static_assert(std::is_same<decltype(&fn), type>::value, #fn);
#else
#define CC_SAME_TYPE(fn, type) \
    _Static_assert(__builtin_types_compatible_p(__typeof__(&fn), type), #fn " has another prototype");
#endif
CC_SAME_TYPE(cudnnGetVersion, cc_get_version_fn)
CC_SAME_TYPE(cudnnCreate, cc_create_fn)
CC_SAME_TYPE(cudnnDestroy, cc_destroy_fn)
CC_SAME_TYPE(cudnnSetStream, cc_set_stream_fn)
CC_SAME_TYPE(cudnnBackendCreateDescriptor, cc_desc_create_fn)
CC_SAME_TYPE(cudnnBackendDestroyDescriptor, cc_desc_destroy_fn)
CC_SAME_TYPE(cudnnBackendFinalize, cc_finalize_fn)
CC_SAME_TYPE(cudnnBackendSetAttribute, cc_set_attr_fn)
CC_SAME_TYPE(cudnnBackendGetAttribute, cc_get_attr_fn)
CC_SAME_TYPE(cudnnBackendExecute, cc_execute_fn)
#undef CC_SAME_TYPE
#endif

#endif /* CONVCACHE_BACKEND_API_H */
