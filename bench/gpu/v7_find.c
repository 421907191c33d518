/*
 * bench/gpu/v7_find: ResNet-50's convolutions through cuDNN's legacy find
 * API (cudnnFindConvolution{Forward,BackwardData,BackwardFilter}
 * AlgorithmEx), as PyTorch's v7 path calls it with cudnn.benchmark = True.
 * make gpu-check (bench/gpu/run.sh) runs it under the interposer.
 *
 * It needs no header and links nothing but libdl: libcuda.so.1 and
 * libcudnn.so.9 are loaded at run time, cuDNN with RTLD_GLOBAL, and the
 * find functions are looked up in the global scope, as a program linked to
 * cuDNN binds them, so that an LD_PRELOAD interposer answers them. With
 * --handle it is a dlopen client instead, as ONNX Runtime's CUDA provider
 * is: cuDNN opened with RTLD_NOW | RTLD_LOCAL and the find functions taken
 * with dlsym on that handle (not RTLD_DEFAULT), which only the
 * interposer's dlsym (cudnn/preload/dlsym.c) can answer. The same
 * binary runs against the real libraries on a GPU and against the stand-ins
 * (tests/preload) on the CPU. Types and values carry NVIDIA's names; make
 * real-cudnn-check compiles this file against the real headers
 * (CONVCACHE_REAL_CUDNN) and checks them.
 *
 * usage: v7_find [--cudnn PATH] [--handle] [--batch N] [--sizes A,B,C] [--barrier DIR]
 *   --cudnn    libcudnn.so.9 to load (default: by name)
 *   --handle   cuDNN with dlopen(RTLD_NOW | RTLD_LOCAL), its find functions
 *              with dlsym on that handle
 *   --batch    batch size (default 16); --sizes input sizes (default 160,224,288)
 *   --barrier  after setting up, wait at the FIFO DIR/go (see barrier()):
 *              copies started with the same DIR begin their find calls at
 *              the same moment
 *
 * Output, one line per find call and a summary:
 *   find PHASE SIZE SHAPE MS ALGO HIT   (PHASE fwd|bwd-data|bwd-filter; HIT 1,
 *                                        0, or - without the interposer)
 *   stats CALLS HITS MISSES PASSTHROUGH  (the interposer's counters, or "stats -")
 *   cudnn VERSION
 *   lookup global|handle FILE            (how the find functions were taken,
 *                                        and the file the forward one is in)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef CONVCACHE_REAL_CUDNN
#include <cuda.h>
#include <cudnn.h>
#else
typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef unsigned long long CUdeviceptr;
typedef int cudnnStatus_t;
typedef int cudnnDataType_t;
typedef int cudnnTensorFormat_t;
typedef int cudnnConvolutionMode_t;
typedef int cudnnMathType_t;
typedef struct cudnnContext *cudnnHandle_t;
typedef struct cudnnTensorStruct *cudnnTensorDescriptor_t;
typedef struct cudnnFilterStruct *cudnnFilterDescriptor_t;
typedef struct cudnnConvolutionStruct *cudnnConvolutionDescriptor_t;
typedef struct {
    int algo;
    cudnnStatus_t status;
    float time;
    size_t memory;
    int determinism;
    int mathType;
    int reserved[3];
} cudnnConvolutionFwdAlgoPerf_t;
typedef cudnnConvolutionFwdAlgoPerf_t cudnnConvolutionBwdDataAlgoPerf_t;
typedef cudnnConvolutionFwdAlgoPerf_t cudnnConvolutionBwdFilterAlgoPerf_t;
#define CUDA_SUCCESS 0
#define CUDNN_STATUS_SUCCESS 0
#define CUDNN_DATA_FLOAT 0
#define CUDNN_TENSOR_NCHW 0
#define CUDNN_CROSS_CORRELATION 1
#define CUDNN_DEFAULT_MATH 0
#define CUDNN_CONVOLUTION_FWD_ALGO_COUNT 8
#define CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT 6
#define CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT 7
#endif

/* ---- the functions, found at run time ------------------------------------ */

typedef CUresult (*cu_init_fn)(unsigned int);
typedef CUresult (*cu_device_get_fn)(CUdevice *, int);
typedef CUresult (*cu_primary_ctx_retain_fn)(CUcontext *, CUdevice);
typedef CUresult (*cu_ctx_set_current_fn)(CUcontext);
typedef CUresult (*cu_ctx_synchronize_fn)(void);
typedef CUresult (*cu_mem_alloc_fn)(CUdeviceptr *, size_t);
typedef cudnnStatus_t (*create_fn)(cudnnHandle_t *);
typedef cudnnStatus_t (*create_tensor_fn)(cudnnTensorDescriptor_t *);
typedef cudnnStatus_t (*create_filter_fn)(cudnnFilterDescriptor_t *);
typedef cudnnStatus_t (*create_conv_fn)(cudnnConvolutionDescriptor_t *);
typedef cudnnStatus_t (*set_tensor_fn)(cudnnTensorDescriptor_t, cudnnDataType_t, int, const int[],
                                       const int[]);
typedef cudnnStatus_t (*set_filter_fn)(cudnnFilterDescriptor_t, cudnnDataType_t, cudnnTensorFormat_t,
                                       int, const int[]);
typedef cudnnStatus_t (*set_conv_fn)(cudnnConvolutionDescriptor_t, int, const int[], const int[],
                                     const int[], cudnnConvolutionMode_t, cudnnDataType_t);
typedef cudnnStatus_t (*set_math_fn)(cudnnConvolutionDescriptor_t, cudnnMathType_t);
typedef size_t (*version_fn)(void);
typedef cudnnStatus_t (*find_fwd_fn)(cudnnHandle_t, const cudnnTensorDescriptor_t, const void *,
                                     const cudnnFilterDescriptor_t, const void *,
                                     const cudnnConvolutionDescriptor_t,
                                     const cudnnTensorDescriptor_t, void *, const int, int *,
                                     cudnnConvolutionFwdAlgoPerf_t *, void *, size_t);
typedef cudnnStatus_t (*find_bwd_data_fn)(cudnnHandle_t, const cudnnFilterDescriptor_t,
                                          const void *, const cudnnTensorDescriptor_t,
                                          const void *, const cudnnConvolutionDescriptor_t,
                                          const cudnnTensorDescriptor_t, void *, const int, int *,
                                          cudnnConvolutionBwdDataAlgoPerf_t *, void *, size_t);
typedef cudnnStatus_t (*find_bwd_filter_fn)(cudnnHandle_t, const cudnnTensorDescriptor_t,
                                            const void *, const cudnnTensorDescriptor_t,
                                            const void *, const cudnnConvolutionDescriptor_t,
                                            const cudnnFilterDescriptor_t, void *, const int,
                                            int *, cudnnConvolutionBwdFilterAlgoPerf_t *, void *,
                                            size_t);

#ifdef CONVCACHE_REAL_CUDNN
#define SAME_TYPE(fn, name) \
    _Static_assert(__builtin_types_compatible_p(fn, __typeof__(&name)), #name)
SAME_TYPE(cu_init_fn, cuInit);
SAME_TYPE(cu_device_get_fn, cuDeviceGet);
SAME_TYPE(cu_primary_ctx_retain_fn, cuDevicePrimaryCtxRetain);
SAME_TYPE(cu_ctx_set_current_fn, cuCtxSetCurrent);
SAME_TYPE(cu_ctx_synchronize_fn, cuCtxSynchronize);
SAME_TYPE(cu_mem_alloc_fn, cuMemAlloc_v2);
SAME_TYPE(create_fn, cudnnCreate);
SAME_TYPE(create_tensor_fn, cudnnCreateTensorDescriptor);
SAME_TYPE(create_filter_fn, cudnnCreateFilterDescriptor);
SAME_TYPE(create_conv_fn, cudnnCreateConvolutionDescriptor);
SAME_TYPE(set_tensor_fn, cudnnSetTensorNdDescriptor);
SAME_TYPE(set_filter_fn, cudnnSetFilterNdDescriptor);
SAME_TYPE(set_conv_fn, cudnnSetConvolutionNdDescriptor);
SAME_TYPE(set_math_fn, cudnnSetConvolutionMathType);
SAME_TYPE(version_fn, cudnnGetVersion);
SAME_TYPE(find_fwd_fn, cudnnFindConvolutionForwardAlgorithmEx);
SAME_TYPE(find_bwd_data_fn, cudnnFindConvolutionBackwardDataAlgorithmEx);
SAME_TYPE(find_bwd_filter_fn, cudnnFindConvolutionBackwardFilterAlgorithmEx);
#endif

static void die(const char *fmt, const char *a, long b) {
    fprintf(stderr, "v7_find: ");
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, "\n");
    exit(1);
}

static void *sym(void *lib, const char *name) {
    void *p = dlsym(lib, name);
    if (!p) die("%s not found (%ld)", name, 0);
    return p;
}

#define CU(call)                                                     \
    do {                                                             \
        CUresult rc_ = (call);                                       \
        if (rc_ != CUDA_SUCCESS) die("%s failed: CUresult %ld", #call, (long)rc_); \
    } while (0)
#define DNN(call)                                                    \
    do {                                                             \
        cudnnStatus_t st_ = (call);                                  \
        if (st_ != CUDNN_STATUS_SUCCESS) die("%s failed: cudnnStatus_t %ld", #call, (long)st_); \
    } while (0)

/* ---- ResNet-50's convolutions ---------------------------------------------- */

/* One convolution: channels in and out, kernel, stride, and the input's
 * side as a divisor of the image's (the stem sees the image, layer1 1/4). */
struct conv {
    int c, k, r, stride, div;
};

/* Every distinct convolution of torchvision's resnet50 (v1.5: the stride is
 * in the 3x3), in order; the downsample of layer1 has the shape of its
 * third 1x1, so it is not repeated. */
static const struct conv resnet50[] = {
    {3, 64, 7, 2, 1},                                                     /* stem */
    {64, 64, 1, 1, 4}, {64, 64, 3, 1, 4}, {64, 256, 1, 1, 4}, {256, 64, 1, 1, 4}, /* layer1 */
    {256, 128, 1, 1, 4}, {128, 128, 3, 2, 4}, {128, 512, 1, 1, 8}, {256, 512, 1, 2, 4},
    {512, 128, 1, 1, 8}, {128, 128, 3, 1, 8},                             /* layer2 */
    {512, 256, 1, 1, 8}, {256, 256, 3, 2, 8}, {256, 1024, 1, 1, 16}, {512, 1024, 1, 2, 8},
    {1024, 256, 1, 1, 16}, {256, 256, 3, 1, 16},                          /* layer3 */
    {1024, 512, 1, 1, 16}, {512, 512, 3, 2, 16}, {512, 2048, 1, 1, 32}, {1024, 2048, 1, 2, 16},
    {2048, 512, 1, 1, 32}, {512, 512, 3, 1, 32},                          /* layer4 */
};
#define N_CONVS ((int)(sizeof resnet50 / sizeof resnet50[0]))

struct stats {
    unsigned long long calls, hits, misses, passthrough;
};

static int (*stats_fn)(struct stats *, size_t);

static unsigned long long hits_now(void) {
    struct stats s = {0};
    if (stats_fn) stats_fn(&s, sizeof s);
    return s.hits;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* barrier: the starter holds DIR/go (a FIFO) open for writing while the
 * copies start. Each copy opens it (at once: a writer exists), says it is
 * ready, and reads: the read returns (end of file) when the starter closes
 * its end, for every copy at the same moment. */
static void barrier(const char *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/go", dir);
    int go = open(path, O_RDONLY);
    if (go < 0) die("cannot open %s (%ld)", path, errno);
    snprintf(path, sizeof path, "%s/ready.%ld", dir, (long)getpid());
    int fd = open(path, O_CREAT | O_WRONLY, 0600);
    if (fd < 0) die("cannot create %s (%ld)", path, errno);
    close(fd);
    char c;
    while (read(go, &c, 1) != 0) {} /* returns 0 when the starter lets go */
    close(go);
}

int main(int argc, char **argv) {
    const char *cudnn_path = "libcudnn.so.9", *barrier_dir = NULL;
    int batch = 16, sizes[3] = {160, 224, 288}, by_handle = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--cudnn") && i + 1 < argc) cudnn_path = argv[++i];
        else if (!strcmp(argv[i], "--handle")) by_handle = 1;
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc) batch = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--barrier") && i + 1 < argc) barrier_dir = argv[++i];
        else if (!strcmp(argv[i], "--sizes") && i + 1 < argc) {
            if (sscanf(argv[++i], "%d,%d,%d", &sizes[0], &sizes[1], &sizes[2]) != 3)
                die("--sizes wants A,B,C (%s%ld)", "", 0);
        } else die("unknown argument %s (%ld)", argv[i], i);
    }
    if (batch < 1 || batch > 256) die("--batch %s%ld out of range", "", batch);
    for (int i = 0; i < 3; i++)
        if (sizes[i] < 32 || sizes[i] > 1024 || sizes[i] % 32) die("size %s%ld: a multiple of 32 from 32 to 1024", "", sizes[i]);

    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!cuda) die("cannot load libcuda.so.1: %s (%ld)", dlerror(), 0);
    void *dnn = dlopen(cudnn_path, by_handle ? RTLD_NOW | RTLD_LOCAL : RTLD_NOW | RTLD_GLOBAL);
    if (!dnn) die("cannot load cuDNN: %s (%ld)", dlerror(), 0);
    CUdevice dev;
    CUcontext ctx;
    CU(((cu_init_fn)sym(cuda, "cuInit"))(0));
    CU(((cu_device_get_fn)sym(cuda, "cuDeviceGet"))(&dev, 0));
    CU(((cu_primary_ctx_retain_fn)sym(cuda, "cuDevicePrimaryCtxRetain"))(&ctx, dev));
    CU(((cu_ctx_set_current_fn)sym(cuda, "cuCtxSetCurrent"))(ctx));
    cu_mem_alloc_fn mem_alloc = (cu_mem_alloc_fn)sym(cuda, "cuMemAlloc_v2");
    cu_ctx_synchronize_fn sync = (cu_ctx_synchronize_fn)sym(cuda, "cuCtxSynchronize");

    /* The find functions from the global scope: the interposer's when it
     * is preloaded, as for a program linked to cuDNN; with --handle, from
     * cuDNN's own handle, as a dlopen client takes them. */
    void *from = by_handle ? dnn : RTLD_DEFAULT;
    find_fwd_fn find_fwd = (find_fwd_fn)sym(from, "cudnnFindConvolutionForwardAlgorithmEx");
    find_bwd_data_fn find_bwd_data =
        (find_bwd_data_fn)sym(from, "cudnnFindConvolutionBackwardDataAlgorithmEx");
    find_bwd_filter_fn find_bwd_filter =
        (find_bwd_filter_fn)sym(from, "cudnnFindConvolutionBackwardFilterAlgorithmEx");
    stats_fn = (int (*)(struct stats *, size_t))dlsym(RTLD_DEFAULT, "convcache_preload_stats");
    set_tensor_fn set_tensor = (set_tensor_fn)sym(dnn, "cudnnSetTensorNdDescriptor");
    set_filter_fn set_filter = (set_filter_fn)sym(dnn, "cudnnSetFilterNdDescriptor");
    set_conv_fn set_conv = (set_conv_fn)sym(dnn, "cudnnSetConvolutionNdDescriptor");
    set_math_fn set_math = (set_math_fn)sym(dnn, "cudnnSetConvolutionMathType");

    cudnnHandle_t h;
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
    DNN(((create_fn)sym(dnn, "cudnnCreate"))(&h));
    DNN(((create_tensor_fn)sym(dnn, "cudnnCreateTensorDescriptor"))(&x));
    DNN(((create_tensor_fn)sym(dnn, "cudnnCreateTensorDescriptor"))(&y));
    DNN(((create_filter_fn)sym(dnn, "cudnnCreateFilterDescriptor"))(&w));
    DNN(((create_conv_fn)sym(dnn, "cudnnCreateConvolutionDescriptor"))(&conv));

    /* Buffers for the largest convolution; the workspace offered is the
     * same for every call (it is part of what the interposer keys on). */
    size_t max_x = 0, max_w = 0, max_y = 0;
    int top = sizes[0];
    for (int i = 1; i < 3; i++) top = sizes[i] > top ? sizes[i] : top;
    for (int i = 0; i < N_CONVS; i++) {
        const struct conv *c = &resnet50[i];
        size_t side = (size_t)(top / c->div), out = side / (size_t)c->stride;
        size_t nx = (size_t)batch * (size_t)c->c * side * side;
        size_t nw = (size_t)c->k * (size_t)c->c * (size_t)c->r * (size_t)c->r;
        size_t ny = (size_t)batch * (size_t)c->k * out * out;
        max_x = nx > max_x ? nx : max_x;
        max_w = nw > max_w ? nw : max_w;
        max_y = ny > max_y ? ny : max_y;
    }
    const size_t ws_size = (size_t)256 << 20;
    CUdeviceptr dx, dw, dy, dws;
    CU(mem_alloc(&dx, max_x * sizeof(float)));
    CU(mem_alloc(&dw, max_w * sizeof(float)));
    CU(mem_alloc(&dy, max_y * sizeof(float)));
    CU(mem_alloc(&dws, ws_size));
    void *px = (void *)(uintptr_t)dx, *pw = (void *)(uintptr_t)dw, *py = (void *)(uintptr_t)dy,
         *pws = (void *)(uintptr_t)dws;

    if (barrier_dir) barrier(barrier_dir);

    cudnnConvolutionFwdAlgoPerf_t fwd[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    cudnnConvolutionBwdDataAlgoPerf_t bwd_data[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    cudnnConvolutionBwdFilterAlgoPerf_t bwd_filter[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    for (int s = 0; s < 3; s++) {
        for (int i = 0; i < N_CONVS; i++) {
            const struct conv *c = &resnet50[i];
            int side = sizes[s] / c->div, pad = c->r / 2;
            int out = (side + 2 * pad - c->r) / c->stride + 1;
            int xd[4] = {batch, c->c, side, side}, xs[4] = {c->c * side * side, side * side, side, 1};
            int yd[4] = {batch, c->k, out, out}, ys[4] = {c->k * out * out, out * out, out, 1};
            int wd[4] = {c->k, c->c, c->r, c->r};
            int pads[2] = {pad, pad}, strides[2] = {c->stride, c->stride}, dil[2] = {1, 1};
            DNN(set_tensor(x, CUDNN_DATA_FLOAT, 4, xd, xs));
            DNN(set_tensor(y, CUDNN_DATA_FLOAT, 4, yd, ys));
            DNN(set_filter(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 4, wd));
            DNN(set_conv(conv, 2, pads, strides, dil, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
            DNN(set_math(conv, CUDNN_DEFAULT_MATH));
            for (int phase = 0; phase < 3; phase++) {
                int n = 0, algo = -1;
                unsigned long long before = hits_now();
                double t0 = now_ms();
                cudnnStatus_t st;
                if (phase == 0) {
                    st = find_fwd(h, x, px, w, pw, conv, y, py, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n,
                                  fwd, pws, ws_size);
                    algo = (int)fwd[0].algo;
                } else if (phase == 1) {
                    st = find_bwd_data(h, w, pw, y, py, conv, x, px,
                                       CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, bwd_data, pws,
                                       ws_size);
                    algo = (int)bwd_data[0].algo;
                } else {
                    st = find_bwd_filter(h, x, px, y, py, conv, w, pw,
                                         CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n, bwd_filter,
                                         pws, ws_size);
                    algo = (int)bwd_filter[0].algo;
                }
                CU(sync());
                double ms = now_ms() - t0;
                if (st != CUDNN_STATUS_SUCCESS || n < 1)
                    die("a find call failed: cudnnStatus_t %s%ld", "", (long)st);
                static const char *const phases[] = {"fwd", "bwd-data", "bwd-filter"};
                if (stats_fn)
                    printf("find %s %d %d %.3f %d %d\n", phases[phase], sizes[s], i, ms, algo,
                           hits_now() > before);
                else
                    printf("find %s %d %d %.3f %d -\n", phases[phase], sizes[s], i, ms, algo);
            }
        }
    }
    struct stats st = {0};
    if (stats_fn && stats_fn(&st, sizeof st) == 0)
        printf("stats %llu %llu %llu %llu\n", st.calls, st.hits, st.misses, st.passthrough);
    else
        printf("stats -\n");
    printf("cudnn %zu\n", ((version_fn)sym(dnn, "cudnnGetVersion"))());
    Dl_info where;
    const char *file = dladdr((void *)find_fwd, &where) && where.dli_fname ? where.dli_fname : "?";
    const char *base = strrchr(file, '/');
    printf("lookup %s %s\n", by_handle ? "handle" : "global", base ? base + 1 : file);
    return 0;
}
