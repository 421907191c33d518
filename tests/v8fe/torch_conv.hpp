// PyTorch's default convolution path (cuDNN's backend API through
// cudnn_frontend's legacy builders, with benchmark on), written from its
// described behaviour (issue 23, "What PyTorch does on a miss"):
//
//   hit:  a thread_local map, key -> ExecutionPlan; execute the plan.
//   miss: 1. build the graph: tensors x, w, y (uids 'x', 'w', 'y', byte
//            alignment from the pointers), the convolution, one operation,
//            the operation graph;
//         2. engine configs: heuristics INSTANT, then the fallback list,
//            through an EngineConfigGenerator;
//         3. filter them: NONDETERMINISTIC when deterministic, always
//            DOWN_CONVERT_INPUTS, TENSOR_CORE for fp32 without TF32;
//         4. build every plan (cudnnGetPlan; its predicate drops errata),
//            drop plans whose workspace exceeds the limit, allocate the
//            largest workspace left;
//         5. time them (time_sorted_plan, SAMPLE_ONCE, at most `limit`
//            plans whose warm-up succeeds; of plans with equal times it
//            returns one);
//         6. execute them in sorted order; the first that succeeds goes in
//            the map. None: "FIND was unable to find an engine".
//   --rebuild: then rebuild the chosen plan from its engine and knobs with
//   the patch route's plan_from_choice (examples/pytorch/conv_v8_frontend.hpp)
//   and check that it runs the same engine and knobs, with the same output.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "conv_shapes.hpp"

namespace v8fe {

struct Options {
    bool deterministic = false;   // torch.backends.cudnn.deterministic
    bool allow_tf32 = true;       // torch.backends.cudnn.allow_tf32
    uint64_t limit = 10;          // torch.backends.cudnn.benchmark_limit (0: every plan)
    int64_t workspace_limit = -1; // the most the allocator can give, bytes (-1: no limit)
    std::vector<std::string> errata; // plan tags (or "engN") the predicate drops
    bool rebuild = false;         // after a miss, rebuild the chosen plan from its engine
                                  // and knobs (examples/pytorch/conv_v8_frontend.hpp)
};

// What one convolution call did. (This header leaves cudnn_frontend.h
// out: it takes a minute to compile; torch_conv.cpp alone includes it.)
struct Outcome {
    bool miss = false;
    std::string tag;           // the plan executed (cudnn_frontend's tag, '=' as ':')
    int64_t workspace = 0;
    uint64_t checksum = 0;     // of the output's bytes
    size_t built = 0;          // miss: plans cudnnGetPlan built
    size_t candidates = 0;     // miss: left after errata and the workspace limit
    size_t sorted = 0;         // miss: plans time_sorted_plan returned (ties: one of them)
    size_t rebuilt = 0;        // miss, --rebuild: plans rebuilt from the choice (1)
    double ms = 0;             // the call's wall time (torch_like measures it)
};

// What PyTorch throws when no plan executes.
struct FindError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The tensors of one call (device memory: host memory under the stand-in),
// inputs filled from the shape's name, the output with a sentinel.
class Tensors {
public:
    explicit Tensors(const Conv &cv);
    ~Tensors();
    Tensors(const Tensors &) = delete;
    Tensors &operator=(const Tensors &) = delete;
    void *x, *w, *y;
    size_t bytes(char which) const;
    uint64_t output_checksum() const; // throws if the output was not written
    void clear_output();              // back to the sentinel

private:
    const Conv &cv_;
};

// One thread's convolutions: its handle and its map, as PyTorch's
// thread_local BenchmarkCache.
class ConvRunner {
public:
    explicit ConvRunner(const Options &o);
    ~ConvRunner();
    ConvRunner(const ConvRunner &) = delete;
    ConvRunner &operator=(const ConvRunner &) = delete;
    Outcome run(const Conv &cv); // run_single_conv

private:
    const Options &opt_;
    cudnnHandle_t handle_ = nullptr;
};

} // namespace v8fe
