// A bounded scope for the checkers: the model, the requests, the GPU budget, which actors and
// faults may act, and how far. `reference` is the named scope documented in docs/checker.md.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/invariants.hpp"
#include "model/policy.hpp"
#include "model/steps.hpp"

namespace kvcheck::sim {

struct RequestTemplate {
    std::vector<std::uint64_t> ids;  // content block ids (chained by the model)
    std::uint32_t input_tokens = 0;
    std::uint32_t output_tokens = 0;
    bool warm = false;  // runs to the end, alone, before the explored steps: its cache is the starting state
    // The earlier request of the scope whose prompt and answer this prompt opens with (a session's
    // next turn, model::make_turn_spec), or -1. Its ids start with that request's whole blocks.
    std::int32_t continues = -1;
    // Parallel sampling: which sampled answer of its prompt it decodes (model::RequestSpec::sample).
    std::uint32_t sample = 0;
};

struct Scope {
    std::string name = "custom";
    model::ModelConfig model;
    std::vector<RequestTemplate> requests;
    std::uint32_t content_block_tokens = 16;
    model::Limits limits;
    model::Rollout rollout = model::Rollout::cross_request;
    std::uint32_t step_kinds = 0;     // a bit per model::StepKind that may be taken
    std::uint8_t max_faults = 1;      // fault steps (model::is_fault) allowed on one path
    std::uint8_t max_background = 2;  // background evictions and offloads allowed on one path
    std::uint32_t max_depth = 80;     // steps on one path
};

// Step kinds by role (bits from model::kind_bit): the actors that always act, the background
// evictor/offloader (bounded by max_background), the fault injector (bounded by max_faults), and
// a driver that leaves loads behind (stop_waiting, abort; only some scopes have one).
std::uint32_t actor_kinds();
std::uint32_t background_kinds();
std::uint32_t all_fault_kinds();
std::uint32_t leave_load_kinds();

// The kinds a path may still take, given what it has used of its budgets.
std::uint32_t allowed_kinds(const Scope& scope, std::uint8_t faults_used, std::uint8_t background_used);
bool is_background(model::StepKind kind);

// The named scopes: "reference" (toy preset, two requests sharing a prefix, a tight budget,
// every actor and every fault, at most one fault and two background evictions/offloads per
// path), "small" (shorter prompts, one background action: for quick tests), "pin-epoch" (the
// pin/epoch race alone: one plain KV group, a prefix already cached, three readers of it and an
// evictor; no faults, no offloads: the protocol the SPIN comparison in docs/checker.md uses) and
// "session" (a finished first turn whose answer a second turn resumes: decoded KV read back) and
// "sampling" (two sampled answers of one prompt, with extents) and "rollout" (rollout
// intra-request: two sampled answers of one prompt and another request extending it).
// Throws std::invalid_argument for an unknown name.
Scope named_scope(const std::string& name);
// The named scope where `kvcheck mutants` checks a policy unless told otherwise: "rollout" for one
// that leaves the rollout mode's reuse scope (every scope but that one reuses across requests),
// else "reference".
std::string home_scope(const model::PolicyInfo& policy);
std::vector<std::string> scope_names();

// Why request i's `continues` cannot be: not an earlier request, a prompt too short for that
// request's prompt and answer, or ids that do not start with its whole blocks; "" when it can.
std::string turn_problem(const Scope& scope, std::size_t i);

// The world the explored steps start from: every request added, the warm ones already run to
// the end in order (each request step of the warm request, and the I/O completions it waits for,
// taken as soon as enabled).
model::World initial_world(const Scope& scope, const model::Defenses& defenses);

// Thrown by initial_world when a warm request breaks an invariant running alone: the policy is
// broken without any interleaving. `cold` is the scope with that request (and every later warm
// one) left cold, from which `steps`, the request's own steps up to the violation, replay.
struct WarmUpViolation : std::invalid_argument {
    WarmUpViolation(const std::string& what, Scope cold_scope, std::vector<model::Step> taken,
                    std::vector<model::Violation> found)
        : std::invalid_argument(what), cold(std::move(cold_scope)), steps(std::move(taken)),
          violations(std::move(found)) {}
    Scope cold;
    std::vector<model::Step> steps;
    std::vector<model::Violation> violations;
};

}  // namespace kvcheck::sim
