/*
 * convcache_hash.hpp - hash_bytes, the hash of the C++ drop-ins' in-process
 * maps (BenchmarkCache's local map, convcache_v8.hpp's plan map), C++17.
 * Part of the C++ interface: convcache.hpp includes it. Needs nothing else.
 */
#ifndef CONVCACHE_HASH_HPP
#define CONVCACHE_HASH_HPP

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace convcache {

/* A 64-bit hash of n bytes: 128-bit multiply-fold over 16-byte blocks (in the
 * manner of wyhash). Inlined with a constant n it costs a few ns for a
 * 104-byte ConvolutionParams, where PyTorch's byte-wise 32-bit FNV-1a costs
 * over 100 ns. Not for persistent use: it may change between versions. */
namespace detail {
inline std::uint64_t load64(const unsigned char *p) noexcept {
    std::uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
}
inline std::uint32_t load32(const unsigned char *p) noexcept {
    std::uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}
inline std::uint64_t fold(std::uint64_t a, std::uint64_t b) noexcept {
#if defined(__SIZEOF_INT128__)
    __uint128_t r = static_cast<__uint128_t>(a) * b;
    return static_cast<std::uint64_t>(r) ^ static_cast<std::uint64_t>(r >> 64);
#else
    std::uint64_t x = (a ^ (b >> 29)) * 0xbf58476d1ce4e5b9ULL;
    x ^= (x >> 31) ^ b;
    return x * 0x94d049bb133111ebULL ^ (x >> 29);
#endif
}
constexpr std::uint64_t k0 = 0xa0761d6478bd642fULL;
constexpr std::uint64_t k1 = 0xe7037ed1a0b428dbULL;
constexpr std::uint64_t k2 = 0x8ebc6af09c88c6e3ULL;
constexpr std::uint64_t k3 = 0x589965cc75374cc3ULL;
} // namespace detail

inline std::uint64_t hash_bytes(const void *data, std::size_t n,
                                std::uint64_t seed = 0x2d358dccaa6c78a5ULL) noexcept {
    const unsigned char *p = static_cast<const unsigned char *>(data);
    std::uint64_t h = seed ^ detail::fold(seed ^ detail::k0, n ^ detail::k1);
    std::size_t left = n;
    /* Two independent lanes over 32-byte strides keep the multiplier busy. */
    if (left > 32) {
        std::uint64_t h2 = h ^ detail::k3;
        do {
            h = detail::fold(detail::load64(p) ^ detail::k1, detail::load64(p + 8) ^ h);
            h2 = detail::fold(detail::load64(p + 16) ^ detail::k2, detail::load64(p + 24) ^ h2);
            p += 32;
            left -= 32;
        } while (left > 32);
        h ^= h2;
    }
    while (left > 16) {
        h = detail::fold(detail::load64(p) ^ detail::k1, detail::load64(p + 8) ^ h);
        p += 16;
        left -= 16;
    }
    std::uint64_t a = 0, b = 0;
    if (left >= 8) {
        a = detail::load64(p);
        b = detail::load64(p + left - 8);
    } else if (left >= 4) {
        a = detail::load32(p);
        b = detail::load32(p + left - 4);
    } else if (left > 0) {
        a = (static_cast<std::uint64_t>(p[0]) << 16) |
            (static_cast<std::uint64_t>(p[left >> 1]) << 8) | p[left - 1];
    }
    h = detail::fold(a ^ detail::k1, b ^ h);
    return detail::fold(h ^ detail::k2, n ^ detail::k3);
}

} // namespace convcache

#endif /* CONVCACHE_HASH_HPP */
