// The discrete-event simulator: replays a scenario's requests through the cache model in virtual
// time (integer ns, ties broken by sequence number), with storage tiers, a compute model, fault
// injection, invariant checks after every step and the ground-truth oracle on every resume.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "sim/report/metrics.hpp"
#include "sim/report/timeline.hpp"
#include "sim/scenario/scenario.hpp"

namespace kvcheck::sim {

struct RunOptions {
    std::string policy;      // "" = the scenario's policy
    std::uint64_t seed = 0;  // 0 = the scenario's seed
    bool seed_given = false;
    std::string schedules_dir;  // export replay schedules of resumed requests here ("" = none)
    // Called now and then with (requests finished, events); for progress lines.
    std::function<void(std::uint64_t, std::uint64_t)> progress;
};

struct RunResult {
    RunInfo info;
    Metrics metrics;
    Timeline timeline{0};
    std::uint64_t schedules_written = 0;
};

// Runs a workload scenario (or replays a steps-mode scenario) under one policy.
RunResult run_scenario(const Scenario& scenario, const RunOptions& options);

}  // namespace kvcheck::sim
