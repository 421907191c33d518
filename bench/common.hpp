// common.hpp - what every benchmark worker shares: the key and value layouts,
// the key generator, clocks, resident memory, and the output line format.
//
// Keys are PyTorch's ConvolutionParams (104 bytes, zeroed, then filled) and
// values are cuDNN's cudnnConvolutionFwdAlgoPerf_t (48 bytes); see
// shared/NOTES.md section 1. Key i is a convolution drawn from real networks:
// a layer shape from the table below, seen at one batch size, input
// resolution, data type, memory format and determinism setting. Every index
// in [0, key_space()) gives a distinct key, and the same key on every run.
#ifndef CONVCACHE_BENCH_COMMON_HPP
#define CONVCACHE_BENCH_COMMON_HPP

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <numeric>
#include <string>
#include <vector>

#include "../examples/pytorch/convolution_params.hpp"

namespace bench {

// The key is PyTorch's ConvolutionParams, the value the layout of
// cudnnConvolutionFwdAlgoPerf_t (examples/pytorch/convolution_params.hpp).
using Key = ::ConvolutionParams;
using Value = ::AlgoPerf<0>;

// One convolution layer: channels in/out, kernel, stride, padding, dilation,
// groups and the input resolution it sees at the network's nominal input size.
struct Layer {
    int cin, cout, k, stride, pad, dil, groups, hw, dims;
};

// Layers of ResNet-50, VGG-16, MobileNetV2, EfficientNet-B0, U-Net, DeepLabV3
// (atrous), ResNeXt (grouped) and a 3D video network (R(2+1)D / I3D style).
static const Layer kLayers[] = {
    // ResNet-50
    {3, 64, 7, 2, 3, 1, 1, 224, 2},      {64, 64, 1, 1, 0, 1, 1, 56, 2},
    {64, 64, 3, 1, 1, 1, 1, 56, 2},      {64, 256, 1, 1, 0, 1, 1, 56, 2},
    {256, 64, 1, 1, 0, 1, 1, 56, 2},     {256, 128, 1, 1, 0, 1, 1, 56, 2},
    {128, 128, 3, 2, 1, 1, 1, 56, 2},    {128, 512, 1, 1, 0, 1, 1, 28, 2},
    {256, 512, 1, 2, 0, 1, 1, 56, 2},    {512, 128, 1, 1, 0, 1, 1, 28, 2},
    {128, 128, 3, 1, 1, 1, 1, 28, 2},    {512, 256, 1, 1, 0, 1, 1, 28, 2},
    {256, 256, 3, 2, 1, 1, 1, 28, 2},    {256, 1024, 1, 1, 0, 1, 1, 14, 2},
    {512, 1024, 1, 2, 0, 1, 1, 28, 2},   {1024, 256, 1, 1, 0, 1, 1, 14, 2},
    {256, 256, 3, 1, 1, 1, 1, 14, 2},    {1024, 512, 1, 1, 0, 1, 1, 14, 2},
    {512, 512, 3, 2, 1, 1, 1, 14, 2},    {512, 2048, 1, 1, 0, 1, 1, 7, 2},
    {1024, 2048, 1, 2, 0, 1, 1, 14, 2},  {2048, 512, 1, 1, 0, 1, 1, 7, 2},
    {512, 512, 3, 1, 1, 1, 1, 7, 2},
    // VGG-16
    {3, 64, 3, 1, 1, 1, 1, 224, 2},      {64, 64, 3, 1, 1, 1, 1, 224, 2},
    {64, 128, 3, 1, 1, 1, 1, 112, 2},    {128, 128, 3, 1, 1, 1, 1, 112, 2},
    {128, 256, 3, 1, 1, 1, 1, 56, 2},    {256, 256, 3, 1, 1, 1, 1, 56, 2},
    {256, 512, 3, 1, 1, 1, 1, 28, 2},
    // YOLOv2 head
    {1024, 1024, 3, 1, 1, 1, 1, 13, 2},
    // MobileNetV2 (depthwise: groups == channels)
    {3, 32, 3, 2, 1, 1, 1, 224, 2},      {32, 32, 3, 1, 1, 1, 32, 112, 2},
    {32, 16, 1, 1, 0, 1, 1, 112, 2},     {16, 96, 1, 1, 0, 1, 1, 112, 2},
    {96, 96, 3, 2, 1, 1, 96, 112, 2},    {96, 24, 1, 1, 0, 1, 1, 56, 2},
    {144, 144, 3, 1, 1, 1, 144, 56, 2},  {144, 32, 1, 1, 0, 1, 1, 28, 2},
    {192, 192, 3, 1, 1, 1, 192, 28, 2},  {384, 384, 3, 1, 1, 1, 384, 14, 2},
    {576, 576, 3, 2, 1, 1, 576, 14, 2},  {960, 960, 3, 1, 1, 1, 960, 7, 2},
    {320, 1280, 1, 1, 0, 1, 1, 7, 2},
    // EfficientNet-B0 (5x5 depthwise)
    {144, 144, 5, 2, 2, 1, 144, 56, 2},  {240, 240, 5, 1, 2, 1, 240, 28, 2},
    {672, 672, 5, 2, 2, 1, 672, 14, 2},  {1152, 1152, 5, 1, 2, 1, 1152, 7, 2},
    // U-Net
    {1, 64, 3, 1, 1, 1, 1, 572, 2},      {512, 1024, 3, 1, 1, 1, 1, 32, 2},
    {1024, 512, 3, 1, 1, 1, 1, 56, 2},   {128, 2, 1, 1, 0, 1, 1, 388, 2},
    // DeepLabV3 atrous convolutions
    {2048, 256, 3, 1, 6, 6, 1, 33, 2},   {2048, 256, 3, 1, 12, 12, 1, 33, 2},
    {2048, 256, 3, 1, 18, 18, 1, 33, 2},
    // ResNeXt-50 32x4d (grouped)
    {128, 128, 3, 1, 1, 1, 32, 56, 2},   {256, 256, 3, 2, 1, 1, 32, 56, 2},
    {512, 512, 3, 2, 1, 1, 32, 28, 2},   {1024, 1024, 3, 2, 1, 1, 32, 14, 2},
    // 3D video convolutions (input D x H x W, D = 16)
    {3, 64, 3, 1, 1, 1, 1, 112, 3},      {64, 128, 3, 2, 1, 1, 1, 56, 3},
    {128, 256, 3, 2, 1, 1, 1, 28, 3},    {256, 512, 3, 2, 1, 1, 1, 14, 3},
    {64, 64, 1, 1, 0, 1, 1, 56, 3},
};
static const int kNumLayers = sizeof(kLayers) / sizeof(kLayers[0]);

// The other dimensions a key varies over.
static const int kBatches = 64;       // batch 1..64
static const int kScales = 16;        // input resolution 50%..200% of nominal
static const int kTypes = 3;          // float (tf32 allowed), half, bfloat16
static const int kFormats = 2;        // contiguous, channels last
static const int kDeterm = 2;         // deterministic off, on
static const int kDevices = 2;        // device 0, 1

inline uint64_t key_space() {
    return uint64_t(kNumLayers) * kBatches * kScales * kTypes * kFormats * kDeterm * kDevices;
}

inline uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

// Key i (any i < key_space()). Consecutive indices are scattered over the
// space by an affine permutation, so a prefix of indices is a realistic mix
// of layers, shapes and types rather than one layer's batch sweep.
inline Key make_key(uint64_t i) {
    static const uint64_t space = key_space();
    static const uint64_t a = [] {
        uint64_t m = 0x9E3779B97F4A7C15ULL % space;  // a multiplier coprime to the space
        while (std::gcd(m, space) != 1) m++;
        return m;
    }();
    uint64_t x = (uint64_t)(((unsigned __int128)i * a + 12345) % space);
    Key k;
    std::memset(&k, 0, sizeof k);  // PyTorch zeroes the struct, so padding is 0
    const Layer &l = kLayers[x % kNumLayers];
    x /= kNumLayers;
    int batch = int(x % kBatches) + 1;
    x /= kBatches;
    int scale = int(x % kScales);
    x /= kScales;
    int type = int(x % kTypes);
    x /= kTypes;
    int format = int(x % kFormats);
    x /= kFormats;
    int determ = int(x % kDeterm);
    x /= kDeterm;
    int device = int(x % kDevices);

    // Resolution from half the nominal upwards in steps of 1/16 of it.
    int hw = (l.hw + 1) / 2 + scale * (l.hw >= 16 ? l.hw / 16 : 1);
    static const int32_t kTypeIds[] = {0, 2, 9};  // FLOAT, HALF, BFLOAT16
    k.device_id = int16_t(device);
    k.dataType = cudnnDataType_t(kTypeIds[type]);
    int d = 0;
    k.input_size[d++] = batch;
    k.input_size[d++] = l.cin;
    if (l.dims == 3) k.input_size[d++] = 16;
    k.input_size[d++] = hw;
    k.input_size[d++] = hw;
    k.input_dim = uint8_t(d);
    k.memory_format = format == 0 ? MemoryFormat::Contiguous
                                : (l.dims == 3 ? MemoryFormat::ChannelsLast3d : MemoryFormat::ChannelsLast);
    int w = 0;
    k.weight_size[w++] = l.cout;
    k.weight_size[w++] = l.cin / l.groups;
    if (l.dims == 3) k.weight_size[w++] = l.k;
    k.weight_size[w++] = l.k;
    k.weight_size[w++] = l.k;
    for (int j = 0; j < l.dims; j++) {
        k.padding[j] = l.pad;
        k.stride[j] = l.stride;
        k.dilation[j] = l.dil;
    }
    k.groups = l.groups;
    k.deterministic = determ != 0;
    k.allow_tf32 = type == 0;
    return k;
}

// The benchmark result stored for key i.
inline Value make_value(uint64_t i) {
    uint64_t h = mix64(i + 1);
    Value v;
    std::memset(&v, 0, sizeof v);
    v.algo = int32_t(h % 8);
    v.status = 0;
    v.time = 0.005f + float((h >> 8) % 100000) / 1000.0f;
    v.memory = ((h >> 32) % 4 == 0) ? 0 : ((h >> 34) % 256) << 20;
    v.determinism = int32_t((h >> 44) & 1);
    v.mathType = int32_t((h >> 45) % 3);
    return v;
}

// ---- clocks ------------------------------------------------------------

inline int64_t mono_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// Wall-clock time, comparable with the runner's time.Now().UnixNano(): the
// load workload measures from the runner's exec to the first answer.
inline int64_t real_ns() {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// ---- memory ------------------------------------------------------------

// Resident set size in bytes (/proc/self/statm): anonymous and file-backed
// pages alike, a mapped store's included.
inline int64_t rss_bytes() {
    FILE *f = std::fopen("/proc/self/statm", "r");
    if (!f) return -1;
    long size = 0, resident = 0;
    int n = std::fscanf(f, "%ld %ld", &size, &resident);
    std::fclose(f);
    if (n != 2) return -1;
    return int64_t(resident) * 4096;
}

// Two parts of the resident set, from /proc/self/smaps: the pages of
// mappings of the store's files (the file at store_path, and its -wal,
// -shm and the like), and the pages of every other mapped file
// (the shared libraries' code and data: a cost per process, not per entry).
struct RssParts {
    int64_t store = 0, libs = 0;
};

inline RssParts rss_parts(const std::string &store_path) {
    // smaps names files by their absolute path.
    char *abs = realpath(store_path.c_str(), nullptr);
    const std::string store = abs ? abs : store_path;
    std::free(abs);
    RssParts p;
    FILE *f = std::fopen("/proc/self/smaps", "r");
    if (!f) return p;
    char line[4096];
    int64_t *into = nullptr;
    while (std::fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char perms[8];
        int name = 0;
        // A mapping's header: "lo-hi perms offset dev inode [name]".
        if (std::sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &lo, &hi, perms, &name) == 3 && name > 0) {
            std::string path(line + name);
            while (!path.empty() && (path.back() == '\n' || path.back() == ' ')) path.pop_back();
            if (path.empty() || path[0] == '[')
                into = nullptr;  // anonymous: heap, stack, vdso
            else if (path.compare(0, store.size(), store) == 0 &&
                     (path.size() == store.size() || path[store.size()] == '-' ||
                      path[store.size()] == '.'))
                into = &p.store;
            else
                into = &p.libs;
            continue;
        }
        long kb;
        if (into && std::sscanf(line, "Rss: %ld kB", &kb) == 1) *into += int64_t(kb) * 1024;
    }
    std::fclose(f);
    return p;
}

// ---- output ------------------------------------------------------------

// Workers print one line of space-separated name=value fields; the runner
// parses it. die() prints an error line and exits non-zero.
[[noreturn]] inline void die(const char *what, const std::string &detail = "") {
    std::fprintf(stdout, "error=%s %s\n", what, detail.c_str());
    std::fflush(stdout);
    std::fprintf(stderr, "bench: %s %s\n", what, detail.c_str());
    std::exit(2);
}

}  // namespace bench

#endif
