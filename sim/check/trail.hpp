// A trail is a step sequence from a scope's initial world. Replaying one checks every step is
// enabled and every invariant holds; the explorers, the shrinker and `kvcheck run` on a
// counterexample scenario all use this one routine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/invariants.hpp"
#include "sim/check/scope.hpp"

namespace kvcheck::sim {

struct Counterexample {
    std::vector<model::Step> steps;
    std::vector<model::Violation> violations;  // raised by the last step
    std::vector<std::string> described;        // one readable line per step
};

struct TrailResult {
    bool valid = true;  // every step was enabled when its turn came
    std::size_t steps_applied = 0;
    std::vector<model::Violation> violations;  // from the first step that raised any
    std::size_t violating_step = 0;            // index of that step (when violations is non-empty)
    std::vector<std::string> described;
};

// Replays `steps`; stops at the first disabled step or (when stop_at_violation) the first violation.
TrailResult replay_trail(const Scope& scope, const model::Defenses& defenses, const std::vector<model::Step>& steps,
                         bool stop_at_violation = true);

bool violates(const std::vector<model::Violation>& violations, const std::string& invariant);

// Delta debugging: the shortest subsequence found that still replays validly and still violates
// `invariant` (any invariant when empty). Bounded by `max_replays`.
Counterexample shrink(const Scope& scope, const model::Defenses& defenses, const Counterexample& found,
                      const std::string& invariant, std::uint32_t max_replays = 20'000);

// "1. lookup request 0" ... then the violations, for terminals and reports.
std::string format_counterexample(const Counterexample& c);

}  // namespace kvcheck::sim
