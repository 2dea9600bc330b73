// The one interface every explorer walks a scope through: breadth-first and depth-first search
// (explorer.cpp, explorer_dfs.cpp), the random walker (walker.cpp) and the rebuilding of a
// checkpoint's frontier (explore_parts.hpp). A state is a world and what its path has spent of
// the scope's budgets; the interface says which steps it may take, takes one and checks the
// invariants after it. The strategies differ only in which state they expand next and what they
// keep of the ones they saw, as SimGrid's explorers share one Exploration and differ in their
// search. The CLI and the library choose a strategy with ExploreOptions::order (explorer.hpp)
// or run the walker (walker.hpp).
#pragma once

#include <cstdint>
#include <vector>

#include "model/driver.hpp"
#include "sim/check/scope.hpp"

namespace kvcheck::sim {

// What a path has spent of the scope's budgets: fault steps (model::is_fault) and background
// evictions and offloads. Two paths to the same world with different budgets left are two states.
struct Spent {
    std::uint8_t faults = 0;
    std::uint8_t background = 0;
};

class Exploration {
public:
    Exploration(const Scope& scope, const model::Defenses& defenses)
        : scope_(scope), defenses_(defenses), fault_kinds_(all_fault_kinds()), background_kinds_(background_kinds()) {}

    const Scope& scope() const { return scope_; }
    const model::Defenses& defenses() const { return defenses_; }
    model::World initial() const { return initial_world(scope_, defenses_); }

    // The steps a state may take within its budgets, in model::enabled_steps' canonical order.
    void successors(const model::World& world, Spent spent, std::vector<model::Step>& out) const {
        model::enabled_steps(world, allowed_kinds(scope_, spent.faults, spent.background), out);
    }
    // What the path has spent once it takes `step`.
    Spent after(Spent spent, const model::Step& step) const {
        const std::uint32_t bit = model::kind_bit(step.kind);
        return {static_cast<std::uint8_t>(spent.faults + ((bit & fault_kinds_) != 0 ? 1 : 0)),
                static_cast<std::uint8_t>(spent.background + ((bit & background_kinds_) != 0 ? 1 : 0))};
    }
    // Takes a step successors() offered into `out`, unchecked: a search checks a successor only
    // the first time it reaches its state.
    void take(model::World& world, const model::Step& step, model::StepOutcome& out) {
        driver_.apply(world, step, out);
    }
    // The invariants after a step taken into `outcome`.
    const std::vector<model::Violation>& check(const model::World& world, const model::StepOutcome& outcome) {
        return driver_.check(world, outcome);
    }
    // Takes a step and checks it at once (walks, which never meet a state twice on purpose).
    const std::vector<model::Violation>& step(model::World& world, const model::Step& step) {
        return driver_.step(world, step);
    }

private:
    const Scope& scope_;
    const model::Defenses& defenses_;
    std::uint32_t fault_kinds_;  // the budgets' kinds, as bits
    std::uint32_t background_kinds_;
    model::Driver driver_;
};

}  // namespace kvcheck::sim
