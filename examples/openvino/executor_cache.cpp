// OpenVINO-style executor cache on convcache: a node's prepareParams() makes
// a key from the shapes it is given, and asks the cache for an executor with
// getOrCreate(key, builder). The builder is the expensive part (OpenVINO JIT
// generates a kernel and picks its blocking); here it really times a 1x1
// convolution kernel for several blockings and keeps the fastest.
//
// What convcache adds to OpenVINO's in-memory LRU cache: the tuned
// parameters outlive the process and are shared with other processes, and
// builds are single-flight, so streams (threads) that meet a new shape
// together tune it once. The cached value must be bytes, so the cache holds
// the executor's parameters (ExecutorConfig), and the executor object is
// made from them, which is cheap.
//
// Usage: openvino_executor [--expect cold|warm]
//   cold: each distinct shape is built exactly once across all threads;
//   warm: nothing is built (a previous run filled the cache).
#include <convcache.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

namespace ov_example {

// The key: everything the executor depends on. Trivially copyable and
// zeroed before it is filled, so its bytes are a valid key.
struct ConvKey {
    int32_t n, c, h, w; // input shape (NCHW)
    int32_t oc;         // output channels (1x1 kernel, stride 1)
    int32_t precision;  // 0 = f32
    int32_t isa;        // the instruction set the kernel was tuned for
};

// The cached value: what the builder worked out.
struct ExecutorConfig {
    int32_t block_oc;   // output channels per inner loop
    int32_t block_w;    // output columns per inner loop
    float measured_us;  // the winner's time, for the report
    int32_t candidates; // how many blockings were timed
};

// The executor object a node runs, made from an ExecutorConfig.
class Executor {
public:
    Executor(const ConvKey &k, const ExecutorConfig &cfg) : k_(k), cfg_(cfg) {}
    void exec(const float *src, const float *wei, float *dst) const { run(k_, cfg_, src, wei, dst); }
    const ExecutorConfig &config() const { return cfg_; }

    // The kernel: out[oc][p] = sum_c wei[oc][c] * src[c][p], blocked.
    static void run(const ConvKey &k, const ExecutorConfig &cfg, const float *src, const float *wei, float *dst) {
        const int P = k.h * k.w, C = k.c, OC = k.oc;
        for (int n = 0; n < k.n; n++) {
            const float *s = src + static_cast<size_t>(n) * C * P;
            float *d = dst + static_cast<size_t>(n) * OC * P;
            for (int ob = 0; ob < OC; ob += cfg.block_oc) {
                int oe = ob + cfg.block_oc < OC ? ob + cfg.block_oc : OC;
                for (int pb = 0; pb < P; pb += cfg.block_w) {
                    int pe = pb + cfg.block_w < P ? pb + cfg.block_w : P;
                    for (int o = ob; o < oe; o++) {
                        float *dr = d + static_cast<size_t>(o) * P;
                        for (int p = pb; p < pe; p++) dr[p] = 0.0f;
                        for (int c = 0; c < C; c++) {
                            const float wv = wei[o * C + c];
                            const float *sr = s + static_cast<size_t>(c) * P;
                            for (int p = pb; p < pe; p++) dr[p] += wv * sr[p];
                        }
                    }
                }
            }
        }
    }

private:
    ConvKey k_;
    ExecutorConfig cfg_;
};

static std::atomic<int> builds{0};

// The builder: times each candidate blocking on the real shape and returns
// the fastest. Milliseconds of work, which is what the cache saves.
static ExecutorConfig buildExecutor(const ConvKey &k) {
    builds.fetch_add(1);
    const size_t P = static_cast<size_t>(k.h) * k.w;
    std::vector<float> src(static_cast<size_t>(k.n) * k.c * P, 0.5f), wei(static_cast<size_t>(k.oc) * k.c, 0.25f),
        dst(static_cast<size_t>(k.n) * k.oc * P);
    const int ocs[] = {4, 8, 16}, ws[] = {64, 256, 1024};
    ExecutorConfig best{0, 0, 1e30f, 0};
    for (int bo : ocs) {
        for (int bw : ws) {
            ExecutorConfig cfg{bo, bw, 0.0f, 0};
            double t = 1e30;
            for (int rep = 0; rep < 2; rep++) {
                auto t0 = std::chrono::steady_clock::now();
                Executor::run(k, cfg, src.data(), wei.data(), dst.data());
                double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
                if (us < t) t = us;
            }
            best.candidates++;
            if (t < best.measured_us) {
                best.block_oc = bo;
                best.block_w = bw;
                best.measured_us = static_cast<float>(t);
            }
        }
    }
    return best;
}

// The runtime cache, as OpenVINO's getRuntimeCache() hands it out.
using ExecutorCache = convcache::BenchmarkCache<ConvKey, ExecutorConfig>;

// A convolution node with dynamic shapes.
class ConvNode {
public:
    explicit ConvNode(ExecutorCache &cache) : cache_(cache) {}

    // Called when the input shape changes.
    void prepareParams(int n, int c, int h, int w, int oc) {
        ConvKey key;
        std::memset(&key, 0, sizeof key);
        key.n = n, key.c = c, key.h = h, key.w = w, key.oc = oc, key.precision = 0, key.isa = 1;
        auto result = cache_.getOrCreate(key, buildExecutor); // {config, came from the cache}
        exec_ = std::make_shared<Executor>(key, result.first);
        hits_ += result.second;
        key_ = key;
    }

    void execute() {
        const size_t P = static_cast<size_t>(key_.h) * key_.w;
        src_.assign(static_cast<size_t>(key_.n) * key_.c * P, 1.0f);
        wei_.assign(static_cast<size_t>(key_.oc) * key_.c, 0.5f);
        dst_.resize(static_cast<size_t>(key_.n) * key_.oc * P);
        exec_->exec(src_.data(), wei_.data(), dst_.data());
    }

    int hits() const { return hits_; }

private:
    ExecutorCache &cache_;
    ConvKey key_{};
    std::shared_ptr<Executor> exec_;
    std::vector<float> src_, wei_, dst_;
    int hits_ = 0;
};

} // namespace ov_example

int main(int argc, char **argv) {
    using namespace ov_example;
    const char *expect = (argc == 3 && !std::strcmp(argv[1], "--expect")) ? argv[2] : nullptr;

    // Dynamic shapes (batch and spatial size change between inferences).
    struct Shape {
        int n, c, h, w, oc;
    };
    const Shape shapes[] = {{1, 64, 56, 56, 64}, {1, 64, 28, 28, 64}, {2, 64, 56, 56, 64},
                            {1, 32, 40, 40, 96}, {1, 64, 28, 28, 128}, {4, 16, 32, 32, 32}};
    const int distinct = static_cast<int>(sizeof shapes / sizeof shapes[0]);

    convcache::Cache cache(nullptr, "openvino-example;cpu;isa=1"); // $CONVCACHE_PATH or the default file
    ExecutorCache executors(cache, "ov.conv1x1.executor");

    // Four streams run the same model; they meet each new shape together.
    const int streams = 4, inferences = 12;
    std::atomic<int> hits{0};
    auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> ts;
    for (int s = 0; s < streams; s++) {
        ts.emplace_back([&] {
            ConvNode node(executors);
            for (int i = 0; i < inferences; i++) {
                const Shape &sh = shapes[i % distinct];
                node.prepareParams(sh.n, sh.c, sh.h, sh.w, sh.oc);
                node.execute();
            }
            hits.fetch_add(node.hits());
        });
    }
    for (auto &t : ts) t.join();
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

    for (const Shape &sh : shapes) {
        ConvKey key;
        std::memset(&key, 0, sizeof key);
        key.n = sh.n, key.c = sh.c, key.h = sh.h, key.w = sh.w, key.oc = sh.oc, key.precision = 0, key.isa = 1;
        ExecutorConfig cfg{};
        if (executors.find(key, &cfg))
            std::printf("  %dx%dx%dx%d -> %d: block_oc %2d, block_w %4d (%.0f us, best of %d)\n", sh.n, sh.c, sh.h,
                        sh.w, sh.oc, cfg.block_oc, cfg.block_w, cfg.measured_us, cfg.candidates);
    }
    std::printf("%d streams x %d inferences: %d executors built, %d from the cache, %.1f ms\n", streams, inferences,
                builds.load(), hits.load(), ms);
    if (expect && !std::strcmp(expect, "cold") && builds.load() != distinct) {
        std::fprintf(stderr, "expected each of %d shapes built once, got %d builds\n", distinct, builds.load());
        return 1;
    }
    if (expect && !std::strcmp(expect, "warm") && builds.load() != 0) {
        std::fprintf(stderr, "expected no builds on a warm cache, got %d\n", builds.load());
        return 1;
    }
    return 0;
}
