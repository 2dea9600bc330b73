// A bounded scope for the checkers: the model, the requests, the GPU budget, which actors and
// faults may act, and how far. `reference` is the named scope documented in docs/checker.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/steps.hpp"

namespace kvcheck::sim {

struct RequestTemplate {
    std::vector<std::uint64_t> ids;   // content block ids (chained by the model)
    std::uint32_t input_tokens = 0;
    std::uint32_t output_tokens = 0;
    bool warm = false;  // runs to the end, alone, before the explored steps: its cache is the starting state
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
// evictor/offloader (bounded by max_background) and the fault injector (bounded by max_faults).
std::uint32_t actor_kinds();
std::uint32_t background_kinds();
std::uint32_t all_fault_kinds();

// The kinds a path may still take, given what it has used of its budgets.
std::uint32_t allowed_kinds(const Scope& scope, std::uint8_t faults_used, std::uint8_t background_used);
bool is_background(model::StepKind kind);

// The named scopes: "reference" (toy preset, two requests sharing a prefix, a tight budget,
// every actor and every fault, at most one fault and two background evictions/offloads per
// path), "small" (shorter prompts, one background action: for quick tests) and "pin-epoch" (the
// pin/epoch race alone: one plain KV group, a prefix already cached, three readers of it and an
// evictor; no faults, no offloads: the protocol the SPIN comparison in docs/checker.md uses).
// Throws std::invalid_argument for an unknown name.
Scope named_scope(const std::string& name);
std::vector<std::string> scope_names();

// The world the explored steps start from: every request added, the warm ones already run to
// the end in order (each request step of the warm request, and the I/O completions it waits for,
// taken as soon as enabled).
model::World initial_world(const Scope& scope, const model::Defenses& defenses);

}  // namespace kvcheck::sim
