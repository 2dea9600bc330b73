// Scenario expectations: what `kvcheck run` checks after a run. With an `expect` block exit 0
// means every expectation held; without one, any violation or silent corruption fails the run.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/scenario/scenario.hpp"

namespace kvcheck::sim {

struct Problems;

// Reads the `expect` entry at `pointer` (one policy's), recording every problem: a bound must
// name a number report.json has for a run of `s` (a miss reason the matcher can file), an
// invariant list names known invariants.
Expectation parse_expectation(const nlohmann::json& value, const std::string& pointer, const Scenario& s,
                              Problems& problems);

// The expectation that applies to `policy`, if the scenario has one.
const Expectation* expectation_for(const Scenario& scenario, const std::string& policy);

// Failures as sentences; empty when the run passes. `report` is report_json() of the run.
std::vector<std::string> judge_run(const Expectation* expect, const nlohmann::json& report);

}  // namespace kvcheck::sim
