// Match and validate per request: model::lookup on a warm DeepSeek-V4 world, under the validated
// policy and under the naive rule on the very same state, so the two rates compare validation cost.
#include <cstdlib>
#include <map>
#include <string>

#include <benchmark/benchmark.h>

#include "model/match.hpp"
#include "sim/run/warm_world.hpp"

namespace {

using kvcheck::bench::WarmWorld;

constexpr std::uint64_t kGpuBudgetBytes = 6ULL << 30;  // scenarios/quickstart.json
constexpr std::uint64_t kWarmRequests = 300;
constexpr std::uint64_t kProbeRequests = 100;

// The committed trace shaped like Mooncake's conversation trace; KVCHECK_BENCH_TRACE overrides it.
std::string trace_path() {
    const char* chosen = std::getenv("KVCHECK_BENCH_TRACE");
    return chosen != nullptr ? chosen : KVCHECK_SOURCE_DIR "/traces/synth/conversation-small.jsonl";
}

// Warmed once under the validated policy; each benchmark copies it and swaps in its own defenses.
const WarmWorld& warm() {
    static const WarmWorld world =
        kvcheck::bench::warm_world(trace_path(), "deepseek-v4", kvcheck::model::find_policy("validated")->defenses,
                                   kGpuBudgetBytes, kWarmRequests, kProbeRequests);
    return world;
}

void BM_lookup(benchmark::State& state, const char* policy) {
    kvcheck::model::World world = warm().world;
    world.defenses = kvcheck::model::find_policy(policy)->defenses;
    const std::vector<std::uint32_t>& probes = warm().probes;
    if (probes.empty()) {
        state.SkipWithError("the trace has no requests left after warm-up");
        return;
    }
    std::size_t next = 0;
    std::uint64_t tokens = 0;
    kvcheck::model::Scratch scratch;  // reused lookup after lookup, as a driver does
    for (auto _ : state) {
        const kvcheck::model::Request& request = world.requests[probes[next]];
        benchmark::DoNotOptimize(kvcheck::model::lookup(world, request, scratch));
        tokens += request.spec->input_tokens;
        next = next + 1 == probes.size() ? 0 : next + 1;
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
    state.counters["prompt_tokens_per_s"] =
        benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
    state.counters["live_segments"] = world.live_segments;
}

BENCHMARK_CAPTURE(BM_lookup, validated, "validated");
BENCHMARK_CAPTURE(BM_lookup, naive, "naive");

}  // namespace
