// The end-to-end performance figures of `kvcheck bench`, all from one process: the Mooncake
// conversation trace replayed under deepseek-v4 with faults (validated and naive), timed
// explorations of the reference and pin/epoch scopes, the state table's bytes per entry and the
// peak RSS, each target with its bound (docs/performance.md).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

namespace kvcheck::sim {

struct BenchOptions {
    std::string trace = "traces/mooncake/conversation_trace.jsonl";
    std::uint32_t repeats = 3;
    double explore_seconds = 3;
    std::function<void(const std::string&)> note = [](const std::string&) {};  // progress lines
};

// The figures as bench.json; InputError when the trace is missing.
nlohmann::json run_bench(const BenchOptions& options);

}  // namespace kvcheck::sim
