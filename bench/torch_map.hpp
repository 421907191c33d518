// torch_map.hpp - PyTorch's cuDNN BenchmarkCache, as in
// aten/src/ATen/native/cudnn/Conv_v7.cpp: one std::mutex around a
// std::unordered_map keyed by the ConvolutionParams bytes, hashed with 32-bit
// FNV-1a one byte at a time (ParamsHash) and compared with memcmp
// (ParamsEqual). Baselines (c) and (d) both use it.
#ifndef CONVCACHE_BENCH_TORCH_MAP_HPP
#define CONVCACHE_BENCH_TORCH_MAP_HPP

#include <cstring>
#include <mutex>
#include <unordered_map>

#include "common.hpp"

namespace bench {

// ParamsHash and ParamsEqual: PyTorch's, in examples/pytorch/convolution_params.hpp.

template <typename T>
struct BenchmarkCache {
    std::mutex mutex;
    std::unordered_map<Key, T, ParamsHash<Key>, ParamsEqual<Key>> map;

    bool find(const Key &params, T *results) {
        std::lock_guard<std::mutex> guard(mutex);
        auto it = map.find(params);
        if (it == map.end()) {
            return false;
        }
        *results = it->second;
        return true;
    }

    void insert(const Key &params, const T &results) {
        std::lock_guard<std::mutex> guard(mutex);
        map[params] = results;
    }
};

}  // namespace bench

#endif
