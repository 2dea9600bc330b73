// Serialises a steps-mode scenario: what `check`, `fuzz` and `mutants` write as counterexample.json.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/steps.hpp"
#include "sim/check/scope.hpp"

namespace kvcheck::sim {

// The invariant part of a scenario's `expect` entry for the counterexample's policy.
struct InvariantExpectation {
    std::vector<std::string> violates;  // invariants that must be violated at least once
    std::vector<std::string> holds;     // invariants that must never be violated
};

nlohmann::json steps_scenario_json(const Scope& scope, const std::string& policy, const std::vector<model::Step>& steps,
                                   const std::string& description, const InvariantExpectation* expect);

}  // namespace kvcheck::sim
