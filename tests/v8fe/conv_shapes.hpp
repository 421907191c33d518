// The convolutions torch_like runs: small layers, each in the three
// directions PyTorch sends to cuDNN's backend API, with the tensors PyTorch
// passes (NCHW, packed): x the input (dx for backward data), w the filter
// (dw for backward filter), y the output (dy for both backward directions).
#pragma once

#include <cudnn.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace v8fe {

enum class Dir { fprop, dgrad, wgrad };

struct Layer {
    int64_t n, c, h, w, k, r, s, pad, stride, dilation;
    cudnnDataType_t type;
};

struct Conv {
    Layer l;
    Dir dir;

    using Dims = std::array<int64_t, 4>;
    int64_t out_extent(int64_t in, int64_t f) const {
        return (in + 2 * l.pad - l.dilation * (f - 1) - 1) / l.stride + 1;
    }
    Dims x() const { return {l.n, l.c, l.h, l.w}; }
    Dims w() const { return {l.k, l.c, l.r, l.s}; }
    Dims y() const { return {l.n, l.k, out_extent(l.h, l.r), out_extent(l.w, l.s)}; }
    static Dims packed_strides(const Dims &d) { return {d[1] * d[2] * d[3], d[2] * d[3], d[3], 1}; }
    static int64_t elements(const Dims &d) { return d[0] * d[1] * d[2] * d[3]; }
    size_t elem_bytes() const {
        return l.type == CUDNN_DATA_DOUBLE ? 8 : l.type == CUDNN_DATA_HALF || l.type == CUDNN_DATA_BFLOAT16 ? 2 : 4;
    }
    cudnnBackendDescriptorType_t op() const {
        return dir == Dir::fprop   ? CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR
               : dir == Dir::dgrad ? CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR
                                   : CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR;
    }
    // The output is y for fprop, x (dx) for dgrad, w (dw) for wgrad.
    char output() const { return dir == Dir::fprop ? 'y' : dir == Dir::dgrad ? 'x' : 'w'; }

    // name: the stand-in cuDNN's name for this graph (tests/preload/
    // standin_plan.c), so that the two reports join on it.
    std::string name() const {
        auto dims = [](const Dims &d) {
            return std::to_string(d[0]) + "x" + std::to_string(d[1]) + "x" + std::to_string(d[2]) + "x" +
                   std::to_string(d[3]);
        };
        const char *kind = dir == Dir::fprop ? "fprop" : dir == Dir::dgrad ? "dgrad" : "wgrad";
        const char *type = l.type == CUDNN_DATA_FLOAT    ? "f32"
                           : l.type == CUDNN_DATA_HALF   ? "f16"
                           : l.type == CUDNN_DATA_DOUBLE ? "f64"
                                                         : "bf16";
        return std::string(kind) + ":" + type + ":" + dims(x()) + ":" + dims(w()) + ":" + dims(y());
    }
};

// builtin_shapes: four layers (three fp32, one fp16), each in the three
// directions: 12 graphs.
inline std::vector<Conv> builtin_shapes() {
    static const Layer layers[] = {
        {2, 3, 32, 32, 16, 3, 3, 1, 1, 1, CUDNN_DATA_FLOAT},  // a stem
        {2, 16, 16, 16, 32, 3, 3, 1, 2, 1, CUDNN_DATA_FLOAT}, // a strided 3x3
        {2, 32, 8, 8, 32, 1, 1, 0, 1, 1, CUDNN_DATA_FLOAT},   // a 1x1
        {2, 16, 16, 16, 16, 3, 3, 1, 1, 1, CUDNN_DATA_HALF},  // fp16 (autocast)
    };
    std::vector<Conv> out;
    for (const Layer &l : layers)
        for (Dir d : {Dir::fprop, Dir::dgrad, Dir::wgrad}) out.push_back(Conv{l, d});
    return out;
}

} // namespace v8fe
