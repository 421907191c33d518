// One convolution on cudnn_frontend's v1 graph API (cudnn_frontend::graph::
// Graph), for tests/v8fe/frontend_hosts: the graph built with every plan
// (build_plans(BuildPlanPolicy_t::ALL)), its plans executed by index, its
// own autotune. This header leaves cudnn_frontend.h out (a minute to
// compile): fe_graph.cpp alone includes it.
//
// Statuses are strings, the same in every run for the same outcome:
//   "ok"                    success
//   "E<code>/<STATUS>"      the frontend's error_code_t, as a number, and
//                           the cuDNN status its message names
//                           ("E3/CUDNN_STATUS_NOT_SUPPORTED"), or "-" when
//                           the error is the frontend's own ("E4/-": a plan
//                           index that did not build, or is invalid)
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <memory>
#include <string>

#include "conv_shapes.hpp"
#include "torch_conv.hpp"

namespace v8fe {

class FeConv {
public:
    // The graph for cv on handle h, over t's tensors (uids 'x', 'w', 'y',
    // as torch_like's: x is dx for dgrad, w is dw for wgrad, y is dy).
    FeConv(cudnnHandle_t h, const Conv &cv, Tensors &t);
    ~FeConv();
    FeConv(const FeConv &) = delete;
    FeConv &operator=(const FeConv &) = delete;

    // validate, build_operation_graph, create_execution_plans({A}),
    // check_support, build_plans(ALL): the first that fails, as
    // "<step>:<status>", or "ok".
    std::string build();
    int64_t count() const;                 // get_execution_plan_count
    std::string tag(int64_t i) const;      // get_plan_name_at_index, '=' as ':' ("-": none)
    std::string executable(int64_t i) const; // the plan at i built: "ok", or why not
    int64_t workspace(int64_t i) const;    // get_workspace_size_plan_at_index (-1: error)
    int64_t autotune_workspace() const;    // get_autotune_workspace_size
    std::string candidate_tag() const;     // get_plan_name (the plan execute() runs)

    std::string execute_at(int64_t i, void *workspace); // execute_plan_at_index
    std::string execute(void *workspace);               // execute (the candidate)
    std::string autotune(void *workspace);              // Graph::autotune

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace v8fe
