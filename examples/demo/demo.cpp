// demo - what convcache saves a framework: `make demo` runs this twice.
//
// The workload is what a framework with benchmark mode on (PyTorch's
// cudnn.benchmark) does at every convolution call of a varying-shape job:
// look the convolution up in the algorithm cache, and on a miss benchmark
// the candidate algorithms and store the fastest. Here the job is ResNet-50
// (training at 224, 256 and 288 pixels, batch 16; evaluation at 224 and
// 288, batch 1) and the YOLOv3 backbone Darknet-53 (multi-scale training at
// 320 to 608 pixels, batch 8; inference at 416 and 608, batch 1), three
// epochs, every layer instance of every forward pass.
//
// The benchmarks are real. Where a CUDA device and cuDNN are present, a miss
// runs cuDNN's own cudnnFindConvolutionForwardAlgorithm on the layer's real
// shape and caches cuDNN's perf struct under the device's fingerprint
// (examples/demo/cudnn_find.hpp). Elsewhere a CPU autotuner times up to four
// convolution implementations (examples/demo/kernels.hpp) on each shape and
// keeps the fastest; to stay well under a minute it times a reduced problem
// (batch 1, fewer channels and pixels, a few MFLOP) with the layer's own
// kernel size, stride and padding.
//
// The cache is the default file (convcache_open with a NULL path:
// $CONVCACHE_PATH, else ~/.cache/convcache/cache.ccdb), or with
// --demo-file (make demo) a file of its own beside it, demo.ccdb, so that
// the demo's entries never mix with a program's; through the C++
// drop-in convcache::BenchmarkCache with PyTorch's 104-byte
// ConvolutionParams as the key, in a scope naming this CPU and the kernels.
//
// Options:
//   --run N          label of this run (1, 2)
//   --cold           open in CONVCACHE_MODE_RECACHE: ignore what the file has
//                    and measure every shape again
//   --demo-file      use demo.ccdb beside the default file instead of it
//   --fresh          with --demo-file: remove demo.ccdb first, so that the
//                    run starts cold (make demo's first run)
//   --report FILE    write this run's totals to FILE
//   --compare FILE   print the saving against the totals in FILE; exit 1 if
//                    this run still had to benchmark
//   --quick          a small workload (make test's smoke run)
//   --cpu            use the CPU autotuner even where cuDNN is present
//   --self-test      check the convolution implementations against each other
#include <convcache.hpp>

#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <time.h>

#include "../pytorch/convolution_params.hpp"
#include "cudnn_find.hpp"
#include "kernels.hpp"
#include "networks.hpp"

using namespace demo;

// ---- the key and the value ---------------------------------------------

// The key is PyTorch's ConvolutionParams (ConvShared.h; ../pytorch/
// convolution_params.hpp): 104 bytes, zeroed before use.

// The result of a benchmark, 48 bytes like cudnnConvolutionFwdAlgoPerf_t.
struct AlgoChoice {
    int32_t algo;                // the fastest (demo::Algo)
    int32_t status;              // 0
    float time_ms;               // its time on the reduced problem (thread CPU time)
    uint64_t workspace;          // bytes it needs at the real size
    float times_ms[kNumAlgos];   // every candidate's time; -1: not applicable
    float tuning_ms;             // how long choosing took (what a hit saves)
    int32_t reserved;
};
static_assert(sizeof(AlgoChoice) == 48, "a cuDNN perf struct is 48 bytes");

static ConvolutionParams make_params(const ConvShape &s) {
    ConvolutionParams p;
    std::memset(&p, 0, sizeof p); // as PyTorch does: padding bytes are part of the key
    p.device_id = 0;
    p.dataType = static_cast<cudnnDataType_t>(0); // CUDNN_DATA_FLOAT
    p.input_dim = 4;
    const int32_t in[4] = {s.n, s.c, s.h, s.w}, wt[4] = {s.k, s.c, s.r, s.r};
    for (int i = 0; i < 4; i++) p.input_size[i] = in[i], p.weight_size[i] = wt[i];
    for (int i = 0; i < 2; i++) p.padding[i] = s.pad, p.stride[i] = s.stride, p.dilation[i] = 1;
    p.groups = 1;
    return p;
}

// ---- the autotuner -------------------------------------------------------

static double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// CPU time of this thread: a candidate's time should not include the
// moments the machine gave the CPU to someone else.
static double thread_cpu_s() {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

class Tuner {
public:
    explicit Tuner(double budget_flops) : budget_(budget_flops) {}

    // The problem actually timed: batch 1, then pixels, input and output
    // channels halved in turn until it fits the budget. Kernel size, stride
    // and padding stay: they decide which algorithm applies and wins.
    ConvShape reduce(ConvShape s) const {
        s.n = 1;
        for (int turn = 0; s.flops() > budget_; turn++) {
            const bool hw = s.h / 2 >= 2 * s.r + 2 && s.w / 2 >= 2 * s.r + 2, c = s.c > 4, k = s.k > 4;
            if (!hw && !c && !k) break;
            if (turn % 3 == 0 && hw) s.h = (s.h + 1) / 2, s.w = (s.w + 1) / 2;
            else if (turn % 3 == 1 && c) s.c /= 2;
            else if (turn % 3 == 2 && k) s.k /= 2;
        }
        return s;
    }

    AlgoChoice tune(const ConvShape &real) {
        const double t0 = now_s();
        const ConvShape s = reduce(real);
        in_.resize(static_cast<size_t>(s.n) * s.c * s.h * s.w);
        wt_.resize(static_cast<size_t>(s.k) * s.c * s.r * s.r);
        out_.resize(static_cast<size_t>(s.n) * s.k * s.oh() * s.ow());
        for (size_t i = 0; i < in_.size(); i++) in_[i] = 0.25f + static_cast<float>(i % 13) * 0.01f;
        for (size_t i = 0; i < wt_.size(); i++) wt_[i] = 0.5f - static_cast<float>(i % 7) * 0.02f;

        AlgoChoice best;
        std::memset(&best, 0, sizeof best);
        best.algo = -1;
        best.time_ms = 1e30f;
        for (int a = 0; a < kNumAlgos; a++) {
            best.times_ms[a] = -1.0f;
            if (!applicable(a, real)) continue;
            run_algo(a, s, in_.data(), wt_.data(), out_.data(), ws_); // warm up
            double t = 1e30;
            for (int rep = 0; rep < 3; rep++) {
                const double r0 = thread_cpu_s();
                run_algo(a, s, in_.data(), wt_.data(), out_.data(), ws_);
                t = std::min(t, thread_cpu_s() - r0);
            }
            best.times_ms[a] = static_cast<float>(t * 1e3);
            if (best.times_ms[a] < best.time_ms) {
                best.algo = a;
                best.time_ms = best.times_ms[a];
            }
        }
        best.workspace = workspace_bytes(best.algo, real);
        best.tuning_ms = static_cast<float>((now_s() - t0) * 1e3);
        return best;
    }

private:
    double budget_;
    std::vector<float> in_, wt_, out_, ws_;
};

// ---- the workload --------------------------------------------------------

struct Config {
    const char *model;
    const char *purpose;
    int batch, size;
};

static std::vector<Layer> layers_of(const Config &c) {
    return std::strcmp(c.model, "resnet50") == 0 ? resnet50(c.batch, c.size) : darknet53(c.batch, c.size);
}

// Three epochs over the configurations, each epoch in its own fixed
// pseudo-random order (the same in every run).
static std::vector<Config> schedule(bool quick) {
    std::vector<Config> configs;
    if (quick) {
        configs = {{"resnet50", "train", 2, 64}, {"darknet53", "train", 2, 64}, {"resnet50", "eval", 1, 96}};
    } else {
        configs = {
            {"resnet50", "train", 16, 224}, {"resnet50", "train", 16, 256}, {"resnet50", "train", 16, 288},
            {"resnet50", "eval", 1, 224},   {"resnet50", "eval", 1, 288},   {"darknet53", "train", 8, 320},
            {"darknet53", "train", 8, 416}, {"darknet53", "train", 8, 512}, {"darknet53", "train", 8, 608},
            {"darknet53", "infer", 1, 416}, {"darknet53", "infer", 1, 608},
        };
    }
    std::vector<Config> order;
    uint32_t x = 20240611u;
    for (int epoch = 0; epoch < (quick ? 2 : 3); epoch++) {
        std::vector<Config> e = configs;
        for (size_t i = e.size(); i > 1; i--) {
            x = x * 1664525u + 1013904223u;
            std::swap(e[i - 1], e[(x >> 8) % i]);
        }
        order.insert(order.end(), e.begin(), e.end());
    }
    return order;
}

// ---- the environment -----------------------------------------------------

// What makes a measurement valid elsewhere: the CPU model, the kernels and
// the compiler that built them. A different machine gets its own entries.
static std::string cpu_scope() {
    std::string model = "unknown";
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    while (std::getline(f, line)) {
        if (line.rfind("model name", 0) == 0 || line.rfind("Model", 0) == 0) {
            size_t colon = line.find(':');
            if (colon != std::string::npos) model = line.substr(colon + 2);
            break;
        }
    }
    for (char &ch : model)
        if (ch == ';' || ch == '=') ch = '_';
    return "demo-cpu1;cpu=" + model + ";kernels=demo-v1;compiler=" + std::string(__VERSION__);
}

// The file convcache_open(NULL, ...) opens, as documented in convcache.h.
static std::string default_path() {
    const char *p = std::getenv("CONVCACHE_PATH");
    if (p && *p) return p;
    const char *x = std::getenv("XDG_CACHE_HOME");
    if (x && *x) return std::string(x) + "/convcache/cache.ccdb";
    const char *h = std::getenv("HOME");
    return std::string(h ? h : "~") + "/.cache/convcache/cache.ccdb";
}

// The demo's own file: demo.ccdb beside the default file.
static std::string demo_path() {
    const std::string d = default_path();
    const size_t slash = d.rfind('/');
    return (slash == std::string::npos ? std::string(".") : d.substr(0, slash)) + "/demo.ccdb";
}

// "2.51 s" or "0.412 ms".
static std::string fmt_time(double s) {
    char buf[64];
    if (s >= 1.0) std::snprintf(buf, sizeof buf, "%.2f s", s);
    else std::snprintf(buf, sizeof buf, "%.3f ms", s * 1e3);
    return buf;
}

static std::map<std::string, double> read_report(const std::string &path) {
    std::map<std::string, double> m;
    std::ifstream f(path);
    std::string line;
    while (std::getline(f, line)) {
        size_t eq = line.find('=');
        if (eq != std::string::npos) m[line.substr(0, eq)] = std::atof(line.c_str() + eq + 1);
    }
    return m;
}

// ---- main ------------------------------------------------------------------

static int run(int argc, char **argv) {
    int run_no = 1;
    bool cold = false, quick = false, force_cpu = false, own_file = false, fresh = false;
    std::string report, compare;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        if (a == "--run" && i + 1 < argc) run_no = std::atoi(argv[++i]);
        else if (a == "--cold") cold = true;
        else if (a == "--demo-file") own_file = true;
        else if (a == "--fresh") fresh = true;
        else if (a == "--quick") quick = true;
        else if (a == "--cpu") force_cpu = true;
        else if (a == "--report" && i + 1 < argc) report = argv[++i];
        else if (a == "--compare" && i + 1 < argc) compare = argv[++i];
        else if (a == "--self-test") {
            int f = self_test();
            std::printf("demo kernels self-test: %s\n", f ? "FAILED" : "all implementations agree with direct");
            return f ? 1 : 0;
        } else {
            std::fprintf(stderr, "usage: %s [--run N] [--cold] [--demo-file [--fresh]] [--report FILE] [--compare FILE] [--quick] "
                         "[--cpu] [--self-test]\n",
                         argv[0]);
            return 2;
        }
    }
    if (fresh && !own_file) {
        std::fprintf(stderr, "%s: --fresh removes the demo's own file: give --demo-file too\n", argv[0]);
        return 2;
    }
    const std::string path = own_file ? demo_path() : default_path();
    if (fresh && std::remove(path.c_str()) != 0 && errno != ENOENT) {
        std::fprintf(stderr, "%s: cannot remove %s: %s\n", argv[0], path.c_str(), std::strerror(errno));
        return 1;
    }

    // cuDNN's find on device 0 where there is one; the CPU autotuner
    // elsewhere.
    std::unique_ptr<CudnnFinder> gpu;
    std::string why = "--cpu", scope;
    if (!force_cpu) {
        char fp[CONVCACHE_SCOPE_MAX + 1];
        if (convcache_cudnn_scope(0, fp, sizeof fp) < 0) why = convcache_last_error();
        else if ((gpu = CudnnFinder::open(&why))) scope = fp;
    }
    if (!gpu) scope = cpu_scope();
    convcache_options o = convcache::options();
    o.path = own_file ? path.c_str() : nullptr; // nullptr: the default file
    o.scope = scope.c_str();
    if (cold) o.mode = CONVCACHE_MODE_RECACHE;
    convcache::Cache cache(o);
    convcache::BenchmarkCache<ConvolutionParams, AlgoChoice> algos(cache, "demo.conv2d.fwd");
    convcache::BenchmarkCache<ConvolutionParams, CudnnPerf> gpu_algos(cache, "demo.cudnn.fwd");
    const double budget = quick ? 2e5 : 20e6;
    Tuner tuner(budget);

    std::printf("\n=== convcache demo, run %d%s\n", run_no,
                cold ? " (cold: CONVCACHE_MODE_RECACHE, every shape is measured again)" : "");
    std::printf("cache file: %s%s\nscope:      %s\n", path.c_str(),
                own_file ? " (the demo's own, beside the default cache file; remove it when done)" : "", scope.c_str());
    if (gpu)
        std::printf("a miss runs cuDNN's cudnnFindConvolutionForwardAlgorithm on the layer's real shape (float, NCHW)\n");
    else
        std::printf("a miss times each applicable implementation (%s) on the layer's shape reduced to batch 1 and "
                    "at most %.0f MFLOP, best of 3 (thread CPU time); cuDNN is not used: %s\n",
                    "direct, im2col+gemm, gemm-1x1, winograd", budget / 1e6, why.c_str());

    const std::vector<Config> order = schedule(quick);
    uint64_t lookups = 0, hits = 0, misses = 0, from_cache = 0;
    double choosing = 0, benchmarking = 0, skipped = 0;
    const int num_algos = gpu ? 8 : kNumAlgos;
    int per_algo[8] = {0};
    uint64_t failed = 0;
    std::set<std::string> seen; // shapes met in this run
    for (size_t it = 0; it < order.size(); it++) {
        const Config &cfg = order[it];
        const std::vector<Layer> layers = layers_of(cfg);
        uint64_t it_hits = 0, it_misses = 0;
        const double t_it = now_s();
        for (const Layer &l : layers) {
            const ConvolutionParams p = make_params(l.shape);
            const double t0 = now_s();
            AlgoChoice ch;
            int algo;
            bool hit;
            if (gpu) {
                CudnnPerf perf;
                hit = gpu_algos.find(p, &perf); // the framework's hot path
                if (!hit) {
                    bool ok;
                    const double b0 = now_s();
                    perf = gpu->find(l.shape, &ok); // benchmark mode: cuDNN measures the candidates
                    benchmarking += now_s() - b0;
                    if (ok) gpu_algos.insert(p, perf);
                    else failed++;
                }
                algo = perf.algo;
                ch.tuning_ms = 0; // cuDNN's struct does not record how long finding took
            } else {
                hit = algos.find(p, &ch); // the framework's hot path
                if (!hit) {
                    ch = tuner.tune(l.shape); // benchmark mode: measure the candidates
                    algos.insert(p, ch);
                    benchmarking += ch.tuning_ms / 1e3;
                }
                algo = ch.algo;
            }
            choosing += now_s() - t0;
            (hit ? it_hits : it_misses)++;
            if (seen.insert(std::string(reinterpret_cast<const char *>(&p), sizeof p)).second) {
                if (algo >= 0 && algo < num_algos) per_algo[algo]++;
                if (hit) {
                    from_cache++;
                    skipped += ch.tuning_ms / 1e3; // what benchmarking it took when it was stored
                }
            }
        }
        lookups += layers.size();
        hits += it_hits;
        misses += it_misses;
        std::printf("  [%2zu/%zu] %-9s %-5s %3dx%-3d batch %2d  %2zu convs: %3llu benchmarked, %3llu cached %10.3f ms\n",
                    it + 1, order.size(), cfg.model, cfg.purpose, cfg.size, cfg.size, cfg.batch, layers.size(),
                    static_cast<unsigned long long>(it_misses), static_cast<unsigned long long>(it_hits),
                    (now_s() - t_it) * 1e3);
    }
    const int save_rc = algos.save();
    const struct convcache_stats st = cache.stats();

    std::printf("\nalgorithms chosen for the %zu distinct shapes:", seen.size());
    for (int a = 0; a < num_algos; a++)
        std::printf(" %s %d%s", gpu ? cudnn_fwd_algo_name(a) : algo_name(a), per_algo[a], a + 1 < num_algos ? "," : "\n");
    if (gpu)
        std::printf("cuDNN's find ran %d times%s\n", gpu->calls(),
                    failed ? (", " + std::to_string(failed) + " of them failed (not cached)").c_str() : "");
    std::printf("run %d: %llu convolution lookups: %llu hits, %llu misses, so %llu shapes benchmarked",
                run_no, static_cast<unsigned long long>(lookups), static_cast<unsigned long long>(hits),
                static_cast<unsigned long long>(misses), static_cast<unsigned long long>(misses));
    if (from_cache) std::printf(" and %llu found in the cache file", static_cast<unsigned long long>(from_cache));
    std::printf("\nrun %d: time spent choosing algorithms: %s (benchmarks %s, lookups and inserts %s)\n", run_no,
                fmt_time(choosing).c_str(), fmt_time(benchmarking).c_str(), fmt_time(choosing - benchmarking).c_str());
    if (from_cache && !gpu)
        std::printf("run %d: the benchmarks the cache made unnecessary took %s when they were measured\n", run_no,
                    fmt_time(skipped).c_str());
    std::printf("cache file %s: %llu entries in this scope, %.1f KiB\n", path.c_str(),
                static_cast<unsigned long long>(st.entries), static_cast<double>(st.file_bytes) / 1024.0);
    if (save_rc != 0)
        std::printf("save: %s: %s (results stay in memory only)\n", convcache_strerror(save_rc), convcache_last_error());

    if (!report.empty()) {
        std::ofstream f(report);
        f << "choosing_s=" << choosing << "\nbenchmarks=" << misses << "\nlookups=" << lookups
          << "\nshapes=" << seen.size() << "\n";
    }
    if (!compare.empty()) {
        std::map<std::string, double> r1 = read_report(compare);
        const double c1 = r1["choosing_s"];
        std::printf("\n== convcache demo: choosing algorithms took %s in run 1 (%.0f shapes benchmarked) and "
                    "%s in run %d (%llu benchmarked): %.0fx less, %s saved by the cache.\n",
                    fmt_time(c1).c_str(), r1["benchmarks"], fmt_time(choosing).c_str(), run_no,
                    static_cast<unsigned long long>(misses), choosing > 0 ? c1 / choosing : 0.0,
                    fmt_time(c1 - choosing).c_str());
        if (misses > 0) {
            std::printf("== run %d still had to benchmark %llu shapes: the cache did not keep run 1's results "
                        "(CONVCACHE_DISABLE or CONVCACHE_MODE set? a read-only or untrusted file? see the warnings "
                        "above)\n",
                        run_no, static_cast<unsigned long long>(misses));
            return 1;
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    try {
        return run(argc, argv);
    } catch (const convcache::error &e) {
        std::fprintf(stderr, "demo: %s\n", e.what());
        return 1;
    }
}
