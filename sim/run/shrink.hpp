// A failing simulator run, shrunk to a small scenario that still fails the same way: the workload
// (trace records and explicit requests, in arrival order) cut to the shortest failing prefix, then
// delta-debugged request by request, then the fault entries it does not need dropped, then each
// request's output dropped and its prompt halved while it still fails. The result
// is a workload-mode scenario with an explicit request list, what `kvcheck run --out DIR` writes as
// DIR/counterexample.json when a run violates an invariant.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/des/engine.hpp"
#include "sim/scenario/scenario.hpp"

namespace kvcheck::sim {

inline constexpr std::uint32_t kShrinkRunBudget = 400;  // simulator runs one shrink may take

struct ShrunkRun {
    nlohmann::json scenario;  // the counterexample, ready to write
    std::string invariant;    // the invariant it still violates
    std::size_t requests_before = 0;
    std::size_t requests_after = 0;
    std::size_t faults_before = 0;
    std::size_t faults_after = 0;
    std::uint32_t runs = 0;  // simulator runs the shrink took
};

// Whether `run` violated `invariant` at least once.
bool violates(const RunResult& run, const std::string& invariant);

// The invariant a failed run is shrunk against, among those whose violation fails it (any without
// an expectation `expect`, else those its `holds` lists): OR1_ground_truth (a silent corruption)
// when it was violated, else the first violated by name; empty when there is none (the run failed
// an expectation on a figure only, such as a count of the violations it expects) or the run is a
// steps-mode replay, which is minimal already.
std::string shrink_target(const Scenario& scenario, const RunResult& failed, const Expectation* expect);

// Shrinks the run of `scenario` under `policy` and `seed` that violated `invariant`. Deterministic:
// at most kShrinkRunBudget runs, each of a smaller workload. Empty when the run with its workload
// written out inline does not violate the invariant (nothing to shrink from).
std::optional<ShrunkRun> shrink_run(const Scenario& scenario, const std::string& policy, std::uint64_t seed,
                                    const std::string& invariant);

}  // namespace kvcheck::sim
