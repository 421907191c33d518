// frontend_hosts: hosts of cuDNN's backend API beyond PyTorch's sequence
// (issue 28), on cudnn_frontend's v1 graph API (fe_graph.hpp), each graph
// built with every plan (build_plans(BuildPlanPolicy_t::ALL)) and run by
// plan index. Built against NVIDIA's real cudnn_frontend and cuDNN headers,
// linked against the stand-in cuDNN and CUDA runtime (tests/preload).
//
// usage: frontend_hosts --mode autotune|keep|ahead [--shapes N]
//                       [--iterations N] [--limit N] [--hold PATH] --report FILE
//
//   autotune  per shape: build, Graph::autotune, then execute (the
//             candidate autotune put first) --iterations times
//   keep      per shape: build, time the plans itself (a warm-up, then one
//             execute between two events, by execute_plan_at_index; the
//             first --limit plans, 0: all), run the fastest --iterations
//             times; then, every plan kept alive, run EVERY plan once more
//             by index (a host that compares its plans, or falls back to
//             another), then the chosen one again
//   ahead     build every shape's graph first, all alive together; then
//             autotune every shape; then execute each shape's candidate
//             --iterations times
//   --shapes N  the first N of conv_shapes.hpp's 12 (default: all)
//   --hold PATH ahead: once every graph is built, create PATH.built and
//               wait (at most 120 s) for PATH.go before going on: a
//               process that holds built plans and makes no progress
//
// The report: one line per step, fields "NAME=VALUE" separated by spaces:
//   mode=M shape=S step=STEP idx=I plan=TAG status=ST sum=HEX ws=W
// steps:
//   build   the graph's build (fe_graph.hpp: "ok" or "<call>:<status>"),
//           idx the graph's plans (get_execution_plan_count: one per
//           heuristics config, built or not)
//   plan    one per plan index after build_plans(ALL): its tag, whether it
//           built (the workspace query's status), its workspace
//   tune    keep: one per plan timed, the warm-up's status; autotune and
//           ahead: Graph::autotune's status, idx the plans left after it
//   chosen  the chosen plan's runs: the status of the last, its output
//   later   keep: every plan index run after the chosen one
//   again   keep: the chosen plan once more, after them
// sum is the FNV-1a of the output's bytes ("-": the execute failed,
// "unwritten": it succeeded and wrote nothing); TAG is cudnn_frontend's
// plan name with ':' for '=' (the stand-in's tag, knobs in the frontend's
// order).
//
// Exit 1 (with the reason on stderr) when the host could not go on as it
// would: a shape with no plan that runs, or a plan that gave two outputs.
#include "fe_graph.hpp"
#include "flag_number.hpp"
#include "torch_conv.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

using namespace v8fe;

namespace {

struct Args {
    std::string mode;
    size_t shapes = 0;
    int iterations = 3;
    int64_t limit = 0;
    const char *report = nullptr;
    std::string hold;
};

[[noreturn]] void usage(const char *why) {
    std::fprintf(stderr,
                 "frontend_hosts: %s\nusage: frontend_hosts --mode autotune|keep|ahead [--shapes N] "
                 "[--iterations N] [--limit N] [--hold PATH] --report FILE\n",
                 why);
    std::exit(2);
}

long long number(const char *flag, const char *v, long long lo, long long hi) {
    return flag_number(flag, v, lo, hi, usage);
}

Args parse(int argc, char **argv) {
    Args a;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : nullptr;
        if (!std::strcmp(f, "--mode") && v) a.mode = v, i++;
        else if (!std::strcmp(f, "--shapes")) a.shapes = static_cast<size_t>(number(f, v, 1, 1000)), i++;
        else if (!std::strcmp(f, "--iterations")) a.iterations = static_cast<int>(number(f, v, 1, 1000)), i++;
        else if (!std::strcmp(f, "--limit")) a.limit = number(f, v, 0, 1000), i++;
        else if (!std::strcmp(f, "--report") && v) a.report = v, i++;
        else if (!std::strcmp(f, "--hold") && v) a.hold = v, i++;
        else usage((std::string("unknown argument ") + f).c_str());
    }
    if (a.mode != "autotune" && a.mode != "keep" && a.mode != "ahead") usage("--mode: autotune, keep or ahead");
    if (!a.report) usage("--report FILE, please");
    return a;
}

struct CudaFree {
    void operator()(void *p) const { cudaFree(p); }
};
using DeviceBuffer = std::unique_ptr<void, CudaFree>;

DeviceBuffer device_alloc(int64_t bytes) {
    void *p = nullptr;
    if (bytes > 0 && cudaMalloc(&p, static_cast<size_t>(bytes)) != cudaSuccess)
        throw std::runtime_error("cudaMalloc failed");
    return DeviceBuffer(p);
}

std::string hex(uint64_t v) {
    char b[17];
    std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
    return b;
}

// One shape's graph, tensors and workspace.
struct Shape {
    const Conv &cv;
    Tensors t;
    FeConv g;
    DeviceBuffer ws;
    Shape(cudnnHandle_t h, const Conv &c) : cv(c), t(c), g(h, c, t) {}
};

class Host {
public:
    Host(const Args &a) : a_(a) {
        if (cudaSetDevice(0) != cudaSuccess) throw std::runtime_error("cudaSetDevice failed");
        if (cudnnCreate(&handle_) != CUDNN_STATUS_SUCCESS) throw std::runtime_error("cudnnCreate failed");
    }
    ~Host() { cudnnDestroy(handle_); }
    Host(const Host &) = delete;
    Host &operator=(const Host &) = delete;

    void run(const std::vector<Conv> &convs) {
        if (a_.mode == "autotune") {
            for (const Conv &cv : convs) {
                Shape s(handle_, cv);
                if (!build(s)) continue;
                tune(s);
                chosen(s);
            }
        } else if (a_.mode == "keep") {
            for (const Conv &cv : convs) {
                Shape s(handle_, cv);
                if (build(s)) keep(s);
            }
        } else { // ahead: every graph alive until the end
            std::vector<std::unique_ptr<Shape>> all;
            std::vector<Shape *> built;
            for (const Conv &cv : convs) {
                all.emplace_back(new Shape(handle_, cv));
                if (build(*all.back())) built.push_back(all.back().get());
            }
            if (!a_.hold.empty()) hold(a_.hold);
            for (Shape *s : built) tune(*s);
            for (Shape *s : built) chosen(*s);
        }
    }

    std::string error; // the first reason to exit 1
    std::ostringstream report;

private:
    const Args &a_;
    cudnnHandle_t handle_ = nullptr;
    std::map<std::pair<std::string, std::string>, std::string> outputs_; // (shape, plan) -> sum

    void line(const Shape &s, const char *step, int64_t idx, const std::string &plan, const std::string &status,
              const std::string &sum, int64_t ws) {
        report << "mode=" << a_.mode << " shape=" << s.cv.name() << " step=" << step << " idx=" << idx
               << " plan=" << plan << " status=" << status << " sum=" << sum << " ws=" << ws << "\n";
    }
    void fail(const Shape &s, const std::string &why) {
        if (error.empty()) error = s.cv.name() + ": " + why;
    }

    // run_plan executes plan i (-1: the candidate) on a cleared output; the
    // status, and the output's sum. One output per (shape, plan), ever.
    std::string run_plan(Shape &s, int64_t i, std::string &sum) {
        s.t.clear_output();
        std::string st = i < 0 ? s.g.execute(s.ws.get()) : s.g.execute_at(i, s.ws.get());
        sum = "-";
        if (st != "ok") return st;
        try {
            sum = hex(s.t.output_checksum());
        } catch (const std::runtime_error &) {
            sum = "unwritten";
        }
        const std::string tag = i < 0 ? s.g.candidate_tag() : s.g.tag(i);
        auto ins = outputs_.emplace(std::make_pair(s.cv.name(), tag), sum);
        if (!ins.second && ins.first->second != sum) fail(s, "plan " + tag + " gave two outputs");
        return st;
    }

    bool build(Shape &s) {
        const std::string st = s.g.build();
        const int64_t n = s.g.count();
        line(s, "build", n, "-", st, "-", -1);
        for (int64_t i = 0; i < n; i++) line(s, "plan", i, s.g.tag(i), s.g.executable(i), "-", s.g.workspace(i));
        if (st != "ok") {
            fail(s, "the graph did not build: " + st);
            return false;
        }
        s.ws = device_alloc(s.g.autotune_workspace());
        return true;
    }

    void tune(Shape &s) {
        const std::string st = s.g.autotune(s.ws.get());
        line(s, "tune", s.g.count(), "-", st, "-", -1);
        if (st != "ok") fail(s, "autotune: " + st);
    }

    // chosen runs the candidate (execute) --iterations times.
    void chosen(Shape &s) {
        std::string st, sum;
        for (int it = 0; it < a_.iterations; it++) st = run_plan(s, -1, sum);
        line(s, "chosen", -1, s.g.candidate_tag(), st, sum, -1);
        if (st != "ok") fail(s, "the chosen plan failed: " + st);
    }

    // hold: PATH.built made, PATH.go awaited (120 s at most).
    static void hold(const std::string &path) {
        if (!std::ofstream(path + ".built")) throw std::runtime_error("cannot create " + path + ".built");
        for (int i = 0; i < 12000 && !std::ifstream(path + ".go"); i++) usleep(10000);
    }

    void keep(Shape &s) {
        const int64_t n = s.g.count(), timed = a_.limit ? std::min(a_.limit, n) : n;
        cudaEvent_t start = nullptr, stop = nullptr;
        if (cudaEventCreate(&start) != cudaSuccess || cudaEventCreate(&stop) != cudaSuccess)
            throw std::runtime_error("cudaEventCreate failed");
        int64_t best = -1;
        float best_ms = 0;
        for (int64_t i = 0; i < timed; i++) {
            std::string sum, st = run_plan(s, i, sum); // the warm-up
            line(s, "tune", i, s.g.tag(i), st, sum, s.g.workspace(i));
            if (st != "ok") continue;
            cudaEventRecord(start, nullptr);
            st = s.g.execute_at(i, s.ws.get());
            cudaEventRecord(stop, nullptr);
            cudaEventSynchronize(stop);
            float ms = 0;
            if (st != "ok" || cudaEventElapsedTime(&ms, start, stop) != cudaSuccess) continue;
            if (best < 0 || ms < best_ms) best = i, best_ms = ms;
        }
        cudaEventDestroy(start);
        cudaEventDestroy(stop);
        if (best < 0) {
            fail(s, "FIND was unable to find an engine to execute this computation");
            return;
        }
        std::string st, sum;
        for (int it = 0; it < a_.iterations; it++) st = run_plan(s, best, sum);
        line(s, "chosen", best, s.g.tag(best), st, sum, s.g.workspace(best));
        if (st != "ok") fail(s, "the chosen plan failed: " + st);
        for (int64_t i = 0; i < n; i++) {
            st = run_plan(s, i, sum);
            line(s, "later", i, s.g.tag(i), st, sum, s.g.workspace(i));
        }
        st = run_plan(s, best, sum);
        line(s, "again", best, s.g.tag(best), st, sum, s.g.workspace(best));
        if (st != "ok") fail(s, "the chosen plan failed when run again: " + st);
    }
};

} // namespace

int main(int argc, char **argv) {
    Args a = parse(argc, argv);
    std::vector<Conv> convs = builtin_shapes();
    if (a.shapes && a.shapes < convs.size()) convs.resize(a.shapes);
    std::string error, report;
    try {
        Host h(a);
        h.run(convs);
        error = h.error, report = h.report.str();
    } catch (const std::exception &e) {
        error = e.what();
    }
    std::ofstream r(a.report);
    r << report;
    if (!r.flush()) {
        std::fprintf(stderr, "frontend_hosts: cannot write %s\n", a.report);
        return 1;
    }
    if (!error.empty()) {
        std::fprintf(stderr, "frontend_hosts: %s\n", error.c_str());
        return 1;
    }
    return 0;
}
