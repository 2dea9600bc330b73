// Steps mode: a scenario's exact step list replayed with no clock (checker counterexamples and
// regressions), with its replay schedules exported like a simulated run's.
#pragma once

#include "sim/des/engine.hpp"

namespace kvcheck::sim {

RunResult run_steps(const Scenario& scenario, const RunOptions& options);

}  // namespace kvcheck::sim
