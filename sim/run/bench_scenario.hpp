// The scenario `kvcheck bench` replays: scenarios/quickstart.json's model, storage, compute and
// faults with a Mooncake trace swapped in. Shared with bench/replay_bench.cpp, so that the replay
// can be profiled on its own (docs/performance.md, "Where the time goes").
#pragma once

#include <string>

#include "model/preset.hpp"
#include "sim/scenario/scenario.hpp"

namespace kvcheck::bench {

inline sim::Scenario bench_scenario(const std::string& trace) {
    sim::Scenario s;
    s.name = "bench";
    s.preset = "deepseek-v4";
    s.model = *model::find_preset(s.preset);
    s.seed = 1;
    s.trace_path = trace;
    s.trace.format = sim::TraceFormat::mooncake;
    s.trace.seed = s.seed;
    s.gpu_budget_bytes = 6ULL << 30;
    s.host = {8ULL << 30, 20, 5, 2};
    s.disk = {1ULL << 40, 2, 200, 100};
    s.offload = true;
    s.offload_watermark = 0.85;
    s.extent_tokens = 4096;
    s.decode_ms_per_token = 20;
    s.validate_gap_us = 50;
    s.prefill_tokens_per_s = static_cast<double>(s.model.prefill_tokens_per_s);
    // Field by field, so that a field added to FaultSpec cannot shift these.
    const auto rate = [](model::FaultClass fault, std::uint32_t ppm) {
        sim::FaultSpec f;
        f.fault = fault;
        f.rate_ppm = ppm;
        return f;
    };
    s.faults = {rate(model::FaultClass::F2, 20'000), rate(model::FaultClass::F3, 20'000),
                rate(model::FaultClass::F4, 50'000), rate(model::FaultClass::F6, 20'000),
                rate(model::FaultClass::F11, 20'000)};
    s.faults[2].extra_latency_us = 40'000;
    return s;
}

}  // namespace kvcheck::bench
