// plan_from_choice on cudnn_frontend: what conv_v8.cpp's patch adds to
// PyTorch's Conv_v8.cpp, a stored engine choice -> an ExecutionPlan for this
// graph through the frontend's builders (conv_v8.cpp's own plan_from_choice
// takes the same steps on the raw backend API, through libconvcache_engine).
//
// Needs <cudnn_frontend.h> (and so NVIDIA's headers) and convcache_engine.h.
// `make v8fe-test` compiles conv_v8.cpp with it (CONVCACHE_EXAMPLE_FRONTEND)
// against the real cudnn_frontend 1.32, and tests/v8fe/torch_like --rebuild
// runs it against the stand-in cuDNN: the rebuilt plan gives the output of
// the plan it was recorded from.
#pragma once

#include <cudnn_frontend.h>

#include <convcache_engine.h>

#include <cstdint>
#include <optional>

namespace convcache_example {

// plan_from_choice returns the plan, or nothing when this cuDNN cannot
// build it (no such engine for the graph, a knob the engine lacks or a
// value out of its range, a finalize that fails): the caller benchmarks.
inline std::optional<cudnn_frontend::ExecutionPlan> plan_from_choice(cudnnHandle_t handle,
                                                                     cudnn_frontend::OperationGraph &opGraph,
                                                                     const convcache_engine_choice &c) {
    try {
        auto engine = cudnn_frontend::EngineBuilder().setGlobalEngineIdx(c.engine).setOperationGraph(opGraph).build();
        auto &knobs = engine.getSupportedKnobs();
        for (uint32_t i = 0; i < c.knob_count && i < CONVCACHE_ENGINE_MAX_KNOBS; i++) {
            bool found = false;
            for (auto &k : knobs) {
                if (static_cast<int32_t>(k.getKnobType()) == c.knobs[i].type) {
                    k.setChoice(static_cast<uint64_t>(c.knobs[i].value));
                    found = true;
                }
            }
            if (!found) return std::nullopt;
        }
        auto config = cudnn_frontend::EngineConfigBuilder().setEngine(engine).build();
        // An EngineConfig carries its graph's tag (the uncompiled patch had
        // setEngineConfig(config, opGraph.getTag()): no such overload).
        return cudnn_frontend::ExecutionPlanBuilder().setHandle(handle).setEngineConfig(config).build();
    } catch (const cudnn_frontend::cudnnException &) {
        return std::nullopt;
    }
}

} // namespace convcache_example
