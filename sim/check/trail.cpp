// Trail replay and delta-debugging shrinking of counterexamples.
#include "sim/check/trail.hpp"

#include <algorithm>

#include "model/driver.hpp"

namespace kvcheck::sim {

TrailResult replay_trail(const Scope& scope, const model::Defenses& defenses, const std::vector<model::Step>& steps,
                         bool stop_at_violation) {
    TrailResult result;
    model::World world = initial_world(scope, defenses);
    model::Driver driver;
    for (std::size_t i = 0; i < steps.size(); ++i) {
        if (!model::enabled(world, steps[i])) {
            result.valid = false;
            return result;
        }
        result.described.push_back(model::describe(world, steps[i]));
        const std::vector<model::Violation>& found = driver.step(world, steps[i]);
        ++result.steps_applied;
        if (!found.empty() && result.violations.empty()) {
            result.violations = found;
            result.violating_step = i;
            if (stop_at_violation) return result;
        }
    }
    return result;
}

bool violates(const std::vector<model::Violation>& violations, const std::string& invariant) {
    if (invariant.empty()) return !violations.empty();
    return std::any_of(violations.begin(), violations.end(),
                       [&](const model::Violation& v) { return v.invariant == invariant; });
}

Counterexample shrink(const Scope& scope, const model::Defenses& defenses, const Counterexample& found,
                      const std::string& invariant, std::uint32_t max_replays) {
    std::vector<model::Step> best = found.steps;
    std::uint32_t replays = 0;
    auto still_fails = [&](const std::vector<model::Step>& candidate) {
        ++replays;
        const TrailResult r = replay_trail(scope, defenses, candidate);
        return r.valid && violates(r.violations, invariant);
    };
    // ddmin over contiguous chunks, from halves down to single steps.
    for (std::size_t chunk = std::max<std::size_t>(1, best.size() / 2); chunk >= 1 && replays < max_replays;) {
        bool removed = false;
        for (std::size_t start = 0; start < best.size() && replays < max_replays;) {
            std::vector<model::Step> candidate;
            candidate.reserve(best.size());
            candidate.insert(candidate.end(), best.begin(), best.begin() + static_cast<std::ptrdiff_t>(start));
            const std::size_t stop = std::min(best.size(), start + chunk);
            candidate.insert(candidate.end(), best.begin() + static_cast<std::ptrdiff_t>(stop), best.end());
            if (!candidate.empty() && still_fails(candidate)) {
                best = std::move(candidate);
                removed = true;
            } else {
                start += chunk;
            }
        }
        if (chunk == 1 && !removed) break;
        if (!removed) chunk /= 2;
    }
    // Cut everything after the first violating step.
    const TrailResult final_run = replay_trail(scope, defenses, best);
    Counterexample out;
    out.steps.assign(best.begin(), best.begin() + static_cast<std::ptrdiff_t>(final_run.violating_step + 1));
    out.violations = final_run.violations;
    out.described.assign(final_run.described.begin(), final_run.described.end());
    return out;
}

std::string format_counterexample(const Counterexample& c) {
    std::string out;
    for (std::size_t i = 0; i < c.described.size(); ++i)
        out += "  " + std::to_string(i + 1) + ". " + c.described[i] + "\n";
    // One line per invariant: its first message and how many more reads broke it.
    for (std::size_t i = 0; i < c.violations.size(); ++i) {
        const model::Violation& v = c.violations[i];
        bool seen = false;
        for (std::size_t j = 0; j < i; ++j) seen = seen || c.violations[j].invariant == v.invariant;
        if (seen) continue;
        std::size_t more = 0;
        for (std::size_t j = i + 1; j < c.violations.size(); ++j)
            more += c.violations[j].invariant == v.invariant ? 1 : 0;
        out += "  violated " + v.invariant + ": " + v.message +
               (more > 0 ? " (and " + std::to_string(more) + " more)" : "") + "\n";
    }
    return out;
}

}  // namespace kvcheck::sim
