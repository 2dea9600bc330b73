// Scenario expectations: what `kvcheck run` checks after a run. With an `expect` block exit 0
// means every expectation held; without one, any violation or silent corruption fails the run.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/scenario.hpp"

namespace kvcheck::sim {

// Failures as sentences; empty when the run passes. `report` is report_json() of the run.
std::vector<std::string> judge_run(const Expectation* expect, const nlohmann::json& report);

// A report value by dotted path ("ttft_ms.p99", "invariant_violations.RL3_toctou"); null if absent.
const nlohmann::json* report_value(const nlohmann::json& report, const std::string& path);

}  // namespace kvcheck::sim
