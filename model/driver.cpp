#include "model/driver.hpp"

namespace kvcheck::model {

const std::vector<Violation>& Driver::check(const World& world, const StepOutcome& outcome) {
    violations_.clear();
    facts_.clear();
    if (outcome.read_request != kNone) read_facts_into(world, outcome.read_request, facts_);
    check_invariants(world, outcome, facts_, structural_, scratch_, violations_);
    return violations_;
}

}  // namespace kvcheck::model
