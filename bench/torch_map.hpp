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

template <typename Params>
struct ParamsHash {
    size_t operator()(const Params &params) const {
        auto ptr = reinterpret_cast<const uint8_t *>(&params);
        uint32_t value = 0x811C9DC5;
        for (size_t i = 0; i < sizeof(Params); ++i) {
            value ^= ptr[i];
            value *= 0x01000193;
        }
        return (size_t)value;
    }
};

template <typename Params>
struct ParamsEqual {
    bool operator()(const Params &a, const Params &b) const {
        auto ptr1 = reinterpret_cast<const uint8_t *>(&a);
        auto ptr2 = reinterpret_cast<const uint8_t *>(&b);
        return std::memcmp(ptr1, ptr2, sizeof(Params)) == 0;
    }
};

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
