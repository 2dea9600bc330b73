// The replay `kvcheck bench` times, on its own: sim::run_scenario over the Mooncake conversation
// trace with the bench scenario (bench_scenario.hpp), trace reading included. An item is one
// request. Its use is profiling one replay without the explorers `kvcheck bench` also runs:
//   valgrind --tool=callgrind ./build/bench/replay_bench --benchmark_filter=validated --benchmark_min_time=0
// KVCHECK_BENCH_TRACE replaces the trace; it is read as Mooncake.
#include <cstdlib>
#include <filesystem>
#include <string>

#include <benchmark/benchmark.h>

#include "sim/des/engine.hpp"
#include "sim/run/bench_scenario.hpp"

namespace {

std::string trace_path() {
    const char* chosen = std::getenv("KVCHECK_BENCH_TRACE");
    return chosen != nullptr ? chosen : KVCHECK_SOURCE_DIR "/traces/mooncake/conversation_trace.jsonl";
}

void BM_replay(benchmark::State& state, const char* policy) {
    const std::string path = trace_path();
    if (!std::filesystem::exists(path)) {
        state.SkipWithError("the trace is missing (run tools/fetch-traces)");
        return;
    }
    const kvcheck::sim::Scenario scenario = kvcheck::bench::bench_scenario(path);
    kvcheck::sim::RunOptions options;
    options.policy = policy;
    std::uint64_t requests = 0;
    for (auto _ : state) {
        const kvcheck::sim::RunResult r = kvcheck::sim::run_scenario(scenario, options);
        requests += r.metrics.requests;
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(requests));
}

BENCHMARK_CAPTURE(BM_replay, validated, "validated")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_replay, naive, "naive")->Unit(benchmark::kMillisecond);

}  // namespace
