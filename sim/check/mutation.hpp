// The mutation score: every mutant policy (validated with one defense removed) checked at its
// scope, each expected to break its invariant, and validated expected clean and exhaustive.
// Counterexamples may be kept as regression scenarios, each with its expect block.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/policy.hpp"
#include "sim/check/explorer.hpp"

namespace kvcheck::sim {

struct MutationRequest {
    std::string scope = "reference";
    bool home_scopes = true;   // each policy at its home scope (sim::home_scope) instead of `scope`
    std::string only;          // one policy, "" for all
    double max_seconds = 120;  // per policy
    Reduction reduction = Reduction::none;
    Order order = Order::breadth_first;
    std::string regress;  // write POLICY.json regression scenarios here ("" = none)
    std::function<void(const model::PolicyInfo&)> started;
    std::function<void(std::uint64_t, std::uint32_t, double)> progress;  // of the policy being checked
};

struct MutantRow {
    const model::PolicyInfo* policy = nullptr;
    std::string scope;
    bool detected = false;
    bool good = false;      // fared as it should: a mutant detected, validated clean and exhausted
    std::string invariant;  // what it broke
    std::size_t steps = 0;  // of the counterexample
    double seconds = 0;
    std::uint64_t states = 0;
    bool exhausted = false;
};

struct MutationScore {
    std::vector<MutantRow> rows;  // in the policy table's order
    std::size_t broken = 0;       // mutants checked
    std::size_t caught = 0;
    std::string validated_said;  // how validated fared, "" when it was not checked
    bool all_good() const;
    nlohmann::json rows_json() const;  // what --json prints and mutants.json holds
};

// Checks every output path first (InputError before any exploration). `finished` is called
// after each policy's row.
MutationScore mutation_score(const MutationRequest& request, const std::function<void(const MutantRow&)>& finished);

// The regression file of a policy at a scope under `dir`: POLICY.json, SCOPE-POLICY.json outside
// the reference scope.
std::string regression_file(const std::string& dir, const std::string& scope, const std::string& policy);

// The mutants command that checks one row again.
std::string mutant_reproduce(const MutantRow& row, const MutationRequest& request);

}  // namespace kvcheck::sim
