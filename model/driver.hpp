// The one driver shell around model::apply: what the simulator, both explorers, the walker, the
// shrinker, the steps-mode replay and the property tests do with a step. It applies the step,
// checks every invariant after it, and keeps what those produced for the caller: the outcome,
// the violations and, for a read, the read's facts (computed once, shared by the invariant check,
// the oracle's corruption report and the schedule exporter). Its scratch buffers and lists are
// reused from step to step, so a driver allocates while they grow and then no more.
#pragma once

#include <vector>

#include "model/invariants.hpp"
#include "model/scratch.hpp"
#include "model/steps.hpp"

namespace kvcheck::model {

class Driver {
public:
    explicit Driver(bool structural = true) : structural_(structural) {}

    // Applies an enabled step and checks every invariant after it (the structural O(state) ones
    // too when the driver was made with `structural`).
    const std::vector<Violation>& step(World& world, const Step& step) {
        apply(world, step);
        return check(world, outcome_);
    }

    // The two halves, for drivers that check only some successors (an explorer checks a state
    // the first time it reaches it) or keep outcomes of their own while steps nest (the
    // simulator's request step starts offloads and faults while its outcome is still read).
    const StepOutcome& apply(World& world, const Step& step) {
        apply_into(world, step, outcome_, scratch_);
        return outcome_;
    }
    void apply(World& world, const Step& step, StepOutcome& out) { apply_into(world, step, out, scratch_); }
    const std::vector<Violation>& check(const World& world, const StepOutcome& outcome);

    const StepOutcome& outcome() const { return outcome_; }
    const std::vector<Violation>& violations() const { return violations_; }
    // The facts of the last checked read (empty when the last checked step read nothing).
    const std::vector<ReadFact>& facts() const { return facts_; }
    bool structural() const { return structural_; }

private:
    bool structural_;
    StepOutcome outcome_;
    std::vector<Violation> violations_;
    std::vector<ReadFact> facts_;
    Scratch scratch_;
};

}  // namespace kvcheck::model
