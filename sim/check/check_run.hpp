// A check run as `kvcheck check` asks for it: the named scope and policy, the search, a resumed or
// written checkpoint, and counterexample files. Every output path is checked before the work; a
// stopped run leaves its checkpoint, a finished one removes the checkpoints it answered.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "model/policy.hpp"
#include "sim/check/explorer.hpp"
#include "sim/check/scope.hpp"

namespace kvcheck::sim {

// Flag values by name; an InputError naming the flag and the known values otherwise.
const model::PolicyInfo& policy_named(const std::string& name);  // --policy
Scope scope_named(const std::string& name);                      // --scope
Order order_named(const std::string& name);                      // --order
Reduction reduction_named(const std::string& name);              // --reduction
std::string known_scopes();                                      // "reference, small, ..."

struct CheckRequest {
    std::string scope = "reference";
    std::string policy = "validated";
    std::string out;     // counterexample.json and counterexample.dot go here
    std::string target;  // stop only at this invariant
    std::string resume;
    std::string checkpoint;
    std::string reduction = "none";
    std::string order = "bfs";
    std::uint64_t max_states = 50'000'000;
    double max_seconds = 600;
    bool liveness = false;
    // Whether the user gave a flag ("--scope"): a resumed run answers its checkpoint's question
    // and refuses a flag that asks another.
    std::function<bool(const char*)> given = [](const char*) { return false; };
    const std::atomic<bool>* stop = nullptr;
    std::function<void(const CheckRequest&)> started;  // the question, once a checkpoint settled it
    std::function<void(std::uint64_t, std::uint32_t, double)> progress;
};

struct CheckOutcome {
    CheckRequest asked;  // the question answered (a resumed checkpoint's)
    Scope scope;
    ExploreReport report;
    std::string checkpoint_path;        // where a stopped run wrote its checkpoint, else ""
    bool wrote_counterexample = false;  // into asked.out
    std::string reproduce;              // the check command that finds the counterexample again (no --out)
    nlohmann::json result;              // what --json prints
};

CheckOutcome run_check(CheckRequest request);

// counterexample.json (a steps-mode scenario that `kvcheck run` replays) and counterexample.dot;
// remove_* takes away what an earlier run left when this one found none. The replay schedules of
// a counterexample come from the simulator above this layer (sim/run/counterexample_schedules.hpp).
void write_counterexample_files(const std::string& dir, const Scope& scope, const std::string& policy,
                                const Counterexample& c);
void remove_counterexample_files(const std::string& dir);

}  // namespace kvcheck::sim
