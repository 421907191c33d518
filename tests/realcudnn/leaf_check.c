/*
 * leaf_check: the interposer's leaves (cudnn/preload/v8_leaf.c) read back
 * from NVIDIA's real cuDNN, with no GPU: a tensor and a convolution set up
 * as PyTorch sets them are read back whole (every attribute a leaf must
 * answer is answered, with the values set), two tensors that differ in one
 * dimension read back differently, a tensor not finalized cannot be read,
 * and the attributes the interposer keeps as set are indeed ones this cuDNN
 * does not give back as set (if a newer cuDNN does, keeping them is still
 * right; the line says so).
 *
 * Built by tests/realcudnn/run.sh against the real headers, with v8_leaf.c,
 * v8_key.c, v8_shadow.c and v8_slab.c; run with the stand-in CUDA driver
 * and bench/v8/cuda_extra.c preloaded (cuDNN's descriptors need a driver
 * to load, not a device).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "v8.h"

/* v8_shadow.c's calls into the rest of the interposer: no graph, plan or
 * heuristics is made here. */
void v8_unwatch(struct v8_shadow *p) { (void)p; }
void v8_heur_plan_free(struct v8_heur_plan *hp) { (void)hp; }
void v8_graph_unref(struct v8_graph *g) { (void)g; }

static int fails;
#define CHECK(c)                                                        \
    do {                                                                \
        if (!(c)) {                                                     \
            fprintf(stderr, "leaf_check:%d: failed: %s\n", __LINE__, #c); \
            fails++;                                                    \
        }                                                               \
    } while (0)

static const struct v8_real real = {cudnnBackendCreateDescriptor, cudnnBackendDestroyDescriptor, cudnnBackendFinalize,
                                    cudnnBackendSetAttribute,     cudnnBackendGetAttribute,      cudnnBackendExecute};

/* record finds attribute name among the canonical records enc (n bytes):
 * its data, *len bytes, or NULL. */
static const unsigned char *record(const unsigned char *enc, size_t n, int name, size_t *len) {
    for (size_t at = 0; at + 8 <= n;) {
        size_t l = (size_t)enc[at + 6] | (size_t)enc[at + 7] << 8;
        if (((int)enc[at] | (int)enc[at + 1] << 8) == name) {
            *len = l;
            return enc + at + 8;
        }
        at += 8 + l;
    }
    return NULL;
}

static int has(const unsigned char *enc, size_t n, int name, const void *want, size_t len) {
    size_t got;
    const unsigned char *d = record(enc, n, name, &got);
    return d && got == len && memcmp(d, want, len) == 0;
}

static cudnnBackendDescriptor_t tensor(int64_t c, int finalize) {
    cudnnBackendDescriptor_t t = NULL;
    int64_t dims[4] = {2, c, 16, 16}, strides[4] = {c * 256, 256, 16, 1}, uid = 'x', align = 16;
    cudnnDataType_t dt = CUDNN_DATA_FLOAT;
    if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, &t) ||
        cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt) ||
        cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims) ||
        cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides) ||
        cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid) ||
        cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align) ||
        (finalize && cudnnBackendFinalize(t))) {
        fprintf(stderr, "leaf_check: cuDNN refused a tensor (no driver preloaded?)\n");
        exit(1);
    }
    return t;
}

/* not_given_back reports whether cuDNN does not answer attribute name of d
 * as the type it was set as. */
static int not_given_back(cudnnBackendDescriptor_t d, int name, int type) {
    int64_t buf[8], n = 0;
    return cudnnBackendGetAttribute(d, name, type, 1, &n, buf) != CUDNN_STATUS_SUCCESS;
}

int main(void) {
    unsigned char enc[2048], enc2[2048];
    cudnnBackendDescriptor_t t = tensor(8, 1), t2 = tensor(9, 1), raw = tensor(8, 0);
    size_t n = v8_leaf_read(&real, t, CUDNN_BACKEND_TENSOR_DESCRIPTOR, enc, sizeof enc);
    size_t n2 = v8_leaf_read(&real, t2, CUDNN_BACKEND_TENSOR_DESCRIPTOR, enc2, sizeof enc2);
    CHECK(n != SIZE_MAX && n2 != SIZE_MAX);
    if (n != SIZE_MAX) {
        int64_t dims[4] = {2, 8, 16, 16}, strides[4] = {2048, 256, 16, 1}, uid = 'x';
        int32_t dt = CUDNN_DATA_FLOAT;
        CHECK(has(enc, n, CUDNN_ATTR_TENSOR_DATA_TYPE, &dt, 4));
        CHECK(has(enc, n, CUDNN_ATTR_TENSOR_DIMENSIONS, dims, sizeof dims));
        CHECK(has(enc, n, CUDNN_ATTR_TENSOR_STRIDES, strides, sizeof strides));
        CHECK(has(enc, n, CUDNN_ATTR_TENSOR_UNIQUE_ID, &uid, 8));
        CHECK(n2 == SIZE_MAX || n != n2 || memcmp(enc, enc2, n) != 0);
        printf("leaf_check: a tensor reads back as %zu bytes of records\n", n);
    }
    CHECK(v8_leaf_read(&real, raw, CUDNN_BACKEND_TENSOR_DESCRIPTOR, enc2, sizeof enc2) == SIZE_MAX);
    CHECK(v8_leaf_read(&real, t, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, enc2, sizeof enc2) == SIZE_MAX);

    cudnnBackendDescriptor_t c = NULL;
    int64_t two = 2, pad[2] = {1, 0}, stride[2] = {2, 1}, dil[2] = {1, 1};
    cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    CHECK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, &c) == 0);
    CHECK(cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp) == 0);
    CHECK(cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode) == 0);
    CHECK(cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &two) == 0);
    CHECK(cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dil) == 0);
    CHECK(cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, stride) == 0);
    CHECK(cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad) == 0);
    CHECK(cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad) == 0);
    CHECK(cudnnBackendFinalize(c) == 0);
    n = v8_leaf_read(&real, c, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, enc, sizeof enc);
    CHECK(n != SIZE_MAX);
    if (n != SIZE_MAX) {
        CHECK(has(enc, n, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, stride, sizeof stride));
        CHECK(has(enc, n, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, pad, sizeof pad));
        CHECK(has(enc, n, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, &two, 8));
        printf("leaf_check: a convolution reads back as %zu bytes of records\n", n);
    }

    /* What is kept as set: not given back as set, in this cuDNN. */
    struct {
        cudnnBackendDescriptor_t d;
        int name, type;
        const char *what;
    } kept[] = {{t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, "a tensor's byte alignment"},
                {t, CUDNN_ATTR_TENSOR_REORDERING_MODE, CUDNN_TYPE_TENSOR_REORDERING_MODE, "a tensor's reordering mode"},
                {c, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, "a convolution's mode"}};
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
        printf("leaf_check: %s, kept as set: %s\n", kept[i].what,
               not_given_back(kept[i].d, kept[i].name, kept[i].type) ? "this cuDNN does not give it back"
                                                                      : "this cuDNN gives it back (kept all the same)");
    cudnnBackendDescriptor_t all[] = {t, t2, raw, c};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) cudnnBackendDestroyDescriptor(all[i]);
    if (fails) return 1;
    printf("leaf_check: ok\n");
    return 0;
}
