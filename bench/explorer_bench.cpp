// The explorer's hot paths on the reference scope: state hashing, one expansion of a frontier state
// (copy, apply, hash and the structural invariants for every enabled step) and a bounded BFS.
#include <vector>

#include <benchmark/benchmark.h>

#include "model/driver.hpp"
#include "model/invariants.hpp"
#include "sim/check/explorer.hpp"

namespace {

namespace model = kvcheck::model;
namespace sim = kvcheck::sim;

const model::Defenses& validated() { return model::find_policy("validated")->defenses; }

// A state halfway down the reference scope: request 0 has written and decoded, request 1 is on its
// way. Reached by always taking the first enabled actor step, so it is the same state every run.
model::World midway_world(std::uint32_t actor_steps) {
    const sim::Scope scope = sim::named_scope("reference");
    model::World w = sim::initial_world(scope, validated());
    std::vector<model::Step> steps;
    for (std::uint32_t i = 0; i < actor_steps; ++i) {
        model::enabled_steps(w, sim::actor_kinds(), steps);
        if (steps.empty()) break;
        model::apply(w, steps.front());
    }
    return w;
}

constexpr std::uint32_t kMidwaySteps = 10;

void BM_state_hash(benchmark::State& state) {
    const model::World w = midway_world(kMidwaySteps);
    for (auto _ : state) benchmark::DoNotOptimize(model::state_hash(w));
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
    state.counters["live_segments"] = w.live_segments;
}
BENCHMARK(BM_state_hash);

// What sim::explore does for one frontier state, minus the visited-set insert; items are transitions.
void BM_expand(benchmark::State& state) {
    const sim::Scope scope = sim::named_scope("reference");
    const model::World w = midway_world(kMidwaySteps);
    std::vector<model::Step> steps;
    model::Driver driver;
    model::World child = w;
    std::int64_t transitions = 0;
    for (auto _ : state) {
        model::enabled_steps(w, sim::allowed_kinds(scope, 0, 0), steps);
        for (const model::Step& step : steps) {
            child = w;
            const model::StepOutcome& outcome = driver.apply(child, step);
            benchmark::DoNotOptimize(model::state_hash(child));
            benchmark::DoNotOptimize(driver.check(child, outcome).size());
        }
        transitions += static_cast<std::int64_t>(steps.size());
    }
    state.SetItemsProcessed(transitions);
    state.counters["steps_enabled"] = static_cast<double>(steps.size());
}
BENCHMARK(BM_expand);

// A bounded breadth-first exploration from the start; items are distinct states.
void BM_explore(benchmark::State& state) {
    const sim::Scope scope = sim::named_scope("reference");
    sim::ExploreOptions options;
    options.max_states = static_cast<std::uint64_t>(state.range(0));
    options.stop_at_first = false;
    std::int64_t states = 0;
    for (auto _ : state) {
        const sim::ExploreReport report = sim::explore(scope, validated(), options);
        states += static_cast<std::int64_t>(report.states);
    }
    state.SetItemsProcessed(states);
}
BENCHMARK(BM_explore)->Arg(20'000)->Unit(benchmark::kMillisecond);

}  // namespace
