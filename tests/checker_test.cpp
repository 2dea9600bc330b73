// Explorer tests: validated is clean at the small scope; every mutant is caught.
#include <gtest/gtest.h>

#include <cstdlib>

#include "sim/check/explorer.hpp"

using namespace kvcheck;

TEST(Explorer, ValidatedSmallScope) {
    sim::Scope scope = sim::named_scope(std::getenv("SCOPE") ? std::getenv("SCOPE") : "small");
    sim::ExploreOptions opts;
    opts.max_seconds = std::getenv("SECS") ? std::atof(std::getenv("SECS")) : 60;
    const auto report = sim::explore(scope, model::find_policy("validated")->defenses, opts);
    std::cout << "states=" << report.states << " transitions=" << report.transitions << " depth=" << report.depth
              << " s=" << report.seconds << " bound=" << report.bound_hit << " stuck=" << report.stuck_states << "\n";
    if (report.counterexample) std::cout << sim::format_counterexample(*report.counterexample);
    EXPECT_FALSE(report.counterexample.has_value());
}

TEST(Explorer, Mutants) {
    sim::Scope scope = sim::named_scope(std::getenv("SCOPE") ? std::getenv("SCOPE") : "small");
    for (const auto& p : model::policies()) {
        if (p.name == "validated") continue;
        sim::ExploreOptions opts;
        opts.max_seconds = 20;
        opts.target = p.breaks;
        const auto report = sim::explore(scope, p.defenses, opts);
        std::cout << p.name << ": states=" << report.states << " s=" << report.seconds;
        if (report.counterexample) {
            std::cout << " steps=" << report.counterexample->steps.size() << " first=" << report.counterexample->violations[0].invariant
                      << " expected=" << p.breaks << " found=" << sim::violates(report.counterexample->violations, p.breaks) << "\n";
        } else {
            std::cout << " NOT DETECTED\n";
        }
    }
}

TEST(Explorer, Show) {
    const char* name = std::getenv("POLICY");
    if (name == nullptr) GTEST_SKIP();
    sim::Scope scope = sim::named_scope(std::getenv("SCOPE") ? std::getenv("SCOPE") : "small");
    sim::ExploreOptions opts;
    const auto report = sim::explore(scope, model::find_policy(name)->defenses, opts);
    if (report.counterexample) std::cout << sim::format_counterexample(*report.counterexample);
}
