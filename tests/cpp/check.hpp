// Helpers for the C++ tests: CHECK macros, a temporary directory, and keys
// and values shaped like PyTorch's (104-byte ConvolutionParams, 48-byte
// cudnnConvolutionFwdAlgoPerf_t).
#ifndef CONVCACHE_TEST_CHECK_HPP
#define CONVCACHE_TEST_CHECK_HPP

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <unistd.h>

#include "../../examples/pytorch/convolution_params.hpp"
#include "../tmpdir.h"

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            std::exit(1);                                                             \
        }                                                                             \
    } while (0)

// CHECK_THROWS(stmt, Type): stmt throws Type (or a subclass).
#define CHECK_THROWS(stmt, Type)                                                      \
    do {                                                                              \
        bool caught_ = false;                                                         \
        try {                                                                         \
            stmt;                                                                     \
        } catch (const Type &) {                                                      \
            caught_ = true;                                                           \
        } catch (const std::exception &e_) {                                          \
            std::fprintf(stderr, "%s:%d: %s threw another exception: %s\n", __FILE__, \
                         __LINE__, #stmt, e_.what());                                 \
            std::exit(1);                                                             \
        }                                                                             \
        if (!caught_) {                                                               \
            std::fprintf(stderr, "%s:%d: %s did not throw %s\n", __FILE__, __LINE__,  \
                         #stmt, #Type);                                               \
            std::exit(1);                                                             \
        }                                                                             \
    } while (0)

namespace testutil {

// This test's temporary directory, removed at exit (tests/tmpdir.h).
inline std::string tmpdir() { return test_tmpdir_named("convcache-cxx"); }

inline std::string path(const char *name) { return tmpdir() + "/" + name; }

// PyTorch's key and value: the 104-byte ConvolutionParams and the 48-byte
// cudnnConvolutionFwdAlgoPerf_t layout.
using Params = ::ConvolutionParams;
using Perf = ::AlgoPerf<0>;

inline bool same(const Perf &a, const Perf &b) { return std::memcmp(&a, &b, sizeof a) == 0; }

inline Params make_params(uint32_t i, int device = 0) {
    Params p;
    std::memset(&p, 0, sizeof p); // as PyTorch: padding bytes are 0
    p.device_id = static_cast<int16_t>(device);
    p.dataType = static_cast<cudnnDataType_t>(2); // CUDNN_DATA_HALF
    p.input_size[0] = static_cast<int32_t>(1 + i % 64);
    p.input_size[1] = static_cast<int32_t>(3 + (i / 64) % 512);
    p.input_size[2] = static_cast<int32_t>(7 + (i / 32768) % 224);
    p.input_size[3] = static_cast<int32_t>(7 + i % 224);
    p.input_dim = 4;
    p.weight_size[0] = 64;
    p.weight_size[1] = 3;
    p.weight_size[2] = p.weight_size[3] = 3;
    p.padding[0] = p.padding[1] = 1;
    p.stride[0] = p.stride[1] = 1;
    p.dilation[0] = p.dilation[1] = 1;
    p.groups = static_cast<int64_t>(i); // unique per i
    p.allow_tf32 = true;
    return p;
}

inline Perf make_perf(uint32_t i, uint32_t version = 0) {
    Perf v;
    std::memset(&v, 0, sizeof v);
    v.algo = static_cast<int32_t>(i % 8);
    v.time = static_cast<float>(i % 1000) / 7.0f + static_cast<float>(version);
    v.memory = static_cast<size_t>(i) * 4096u;
    v.reserved[0] = static_cast<int32_t>(i);
    v.reserved[1] = static_cast<int32_t>(version);
    return v;
}

} // namespace testutil

#endif
