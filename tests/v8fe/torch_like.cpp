// torch_like: PyTorch's default convolution path (cuDNN's backend API
// through the real cudnn_frontend 1.32, benchmark on: torch_conv.hpp), run
// over a list of convolutions by N threads for a number of iterations, as
// a training loop runs it. Built against NVIDIA's real cudnn_frontend and
// cuDNN headers; linked against cuDNN and the CUDA runtime (in `make
// v8fe-test`: the stand-ins, tests/preload).
//
// usage: torch_like [--shapes N] [--iterations N] [--threads N]
//                   [--deterministic] [--no-tf32] [--limit N]
//                   [--workspace-limit BYTES] [--errata TAG,...] [--rebuild]
//                   [--report FILE]
//
//   --shapes N           the first N of the built-in 12 (default: all)
//   --iterations N       passes over the shapes (default 2): the first
//                        misses, the others hit each thread's map
//   --threads N          threads, each with its handle and map (default 1)
//   --deterministic      torch.backends.cudnn.deterministic
//   --no-tf32            torch.backends.cudnn.allow_tf32 = False
//   --limit N            torch.backends.cudnn.benchmark_limit (default 10;
//                        0: time every plan)
//   --workspace-limit B  plans needing more workspace are dropped
//   --errata TAGS        plans with these tags (or engines, "eng3") are
//                        dropped by cudnnGetPlan's predicate
//   --rebuild            after each miss, rebuild the chosen plan from its
//                        engine and knobs with the patch route's
//                        plan_from_choice, and check its output
//   --report FILE        one line per shape and thread:
//     shape=NAME thread=T plan=TAG workspace=BYTES checksum=HEX built=N candidates=N sorted=N rebuilt=N
//       choose_ms=MS hit_ms=MS
//       NAME the stand-in's shape name (tests/preload/standin_plan.c), TAG
//       cudnn_frontend's plan tag with ':' for '=', checksum the FNV-1a of
//       the output's bytes; built, candidates (left after errata and the
//       workspace limit), sorted (plans time_sorted_plan returned) and
//       rebuilt (--rebuild) are from the thread's miss, choose_ms its
//       wall time (the graph built to the plan kept, run), hit_ms the last
//       call's (a hit when --iterations > 1). time_sorted_plan
//       keeps the plans it timed in a std::set ordered by time: of two
//       plans timed alike, it returns one (and destroys the other), so
//       sorted can be less than the plans it timed (the stand-in's count).
//
// Checks, each an error (exit 1): every thread misses each shape once and
// then hits; a plan gives the same output every time (one checksum per
// shape and tag); no plan executes: "FIND was unable to find an engine to
// execute this computation", as PyTorch throws.
#include "flag_number.hpp"
#include "torch_conv.hpp"

#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace v8fe;

namespace {

struct Args {
    Options opt;
    size_t shapes = 0; // 0: all
    int iterations = 2, threads = 1;
    const char *report = nullptr;
};

[[noreturn]] void usage(const char *why) {
    std::fprintf(stderr,
                 "torch_like: %s\nusage: torch_like [--shapes N] [--iterations N] [--threads N] [--deterministic]\n"
                 "  [--no-tf32] [--limit N] [--workspace-limit BYTES] [--errata TAG,...] [--rebuild]\n"
                 "  [--report FILE]\n",
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
        if (!std::strcmp(f, "--deterministic")) a.opt.deterministic = true;
        else if (!std::strcmp(f, "--no-tf32")) a.opt.allow_tf32 = false;
        else if (!std::strcmp(f, "--rebuild")) a.opt.rebuild = true;
        else if (!std::strcmp(f, "--shapes")) a.shapes = static_cast<size_t>(number(f, v, 1, 1000)), i++;
        else if (!std::strcmp(f, "--iterations")) a.iterations = static_cast<int>(number(f, v, 1, 1000000)), i++;
        else if (!std::strcmp(f, "--threads")) a.threads = static_cast<int>(number(f, v, 1, 256)), i++;
        else if (!std::strcmp(f, "--limit")) a.opt.limit = static_cast<uint64_t>(number(f, v, 0, 1LL << 40)), i++;
        else if (!std::strcmp(f, "--workspace-limit")) a.opt.workspace_limit = number(f, v, 0, 1LL << 50), i++;
        else if (!std::strcmp(f, "--report") && v) a.report = v, i++;
        else if (!std::strcmp(f, "--errata") && v) {
            for (const char *s = v; *s;) {
                const char *c = std::strchr(s, ',');
                size_t n = c ? static_cast<size_t>(c - s) : std::strlen(s);
                if (n) a.opt.errata.emplace_back(s, n);
                s += n + (c ? 1 : 0);
            }
            i++;
        } else usage((std::string("unknown argument ") + f).c_str());
    }
    return a;
}

// What a thread saw for one shape: its miss, and the last call.
struct Seen {
    int misses = 0;
    Outcome miss, last;
};

std::mutex mu;
std::string first_error;

void fail(const std::string &why) {
    std::lock_guard<std::mutex> g(mu);
    if (first_error.empty()) first_error = why;
}

void train(const Args &a, const std::vector<Conv> &convs, std::vector<Seen> &seen) {
    const Conv *current = nullptr;
    try {
        ConvRunner runner(a.opt);
        for (int it = 0; it < a.iterations; it++) {
            for (size_t i = 0; i < convs.size(); i++) {
                current = &convs[i];
                auto t0 = std::chrono::steady_clock::now();
                Outcome o = runner.run(convs[i]);
                o.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
                Seen &s = seen[i];
                if (o.miss) s.misses++, s.miss = o;
                if (it > 0 && (o.tag != s.last.tag || o.checksum != s.last.checksum))
                    throw std::runtime_error("a hit ran " + o.tag + " (output " + std::to_string(o.checksum) +
                                             "), the miss " + s.last.tag);
                s.last = o;
            }
        }
        for (size_t i = 0; i < convs.size(); i++)
            if (seen[i].misses != 1)
                throw std::runtime_error(convs[i].name() + ": " + std::to_string(seen[i].misses) +
                                         " misses in one thread (want 1)");
    } catch (const std::exception &e) {
        fail((current ? current->name() + ": " : std::string()) + e.what());
    }
}

} // namespace

int main(int argc, char **argv) {
    Args a = parse(argc, argv);
    std::vector<Conv> convs = builtin_shapes();
    if (a.shapes && a.shapes < convs.size()) convs.resize(a.shapes);

    std::vector<std::vector<Seen>> seen(static_cast<size_t>(a.threads), std::vector<Seen>(convs.size()));
    auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < a.threads; t++) pool.emplace_back(train, std::cref(a), std::cref(convs), std::ref(seen[t]));
    for (auto &t : pool) t.join();
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!first_error.empty()) {
        std::fprintf(stderr, "torch_like: %s\n", first_error.c_str());
        return 1;
    }

    // One output per shape and plan, whichever thread ran it.
    std::map<std::pair<size_t, std::string>, uint64_t> outputs;
    size_t built = 0, sorted = 0;
    for (auto &per_thread : seen) {
        for (size_t i = 0; i < convs.size(); i++) {
            const Outcome &o = per_thread[i].last;
            auto ins = outputs.emplace(std::make_pair(i, o.tag), o.checksum);
            if (!ins.second && ins.first->second != o.checksum) {
                std::fprintf(stderr, "torch_like: %s: plan %s gave two outputs\n", convs[i].name().c_str(),
                             o.tag.c_str());
                return 1;
            }
            built += per_thread[i].miss.built, sorted += per_thread[i].miss.sorted;
        }
    }
    std::printf("torch_like: %d threads x %zu shapes x %d iterations: %zu plans built, %zu sorted by time, %.1f ms\n",
                a.threads, convs.size(), a.iterations, built, sorted, ms);
    if (a.report) {
        std::ofstream r(a.report);
        for (size_t i = 0; i < convs.size(); i++) {
            for (int t = 0; t < a.threads; t++) {
                const Seen &s = seen[static_cast<size_t>(t)][i];
                char sum[17];
                std::snprintf(sum, sizeof sum, "%016llx", static_cast<unsigned long long>(s.last.checksum));
                r << "shape=" << convs[i].name() << " thread=" << t << " plan=" << s.last.tag
                  << " workspace=" << s.last.workspace << " checksum=" << sum << " built=" << s.miss.built
                  << " candidates=" << s.miss.candidates << " sorted=" << s.miss.sorted
                  << " rebuilt=" << s.miss.rebuilt << " choose_ms=" << s.miss.ms << " hit_ms=" << s.last.ms
                  << "\n";
            }
        }
        if (!r.flush()) {
            std::fprintf(stderr, "torch_like: cannot write %s\n", a.report);
            return 1;
        }
    }
    return 0;
}
