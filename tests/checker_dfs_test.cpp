// The depth-first explorer (`kvcheck check --order dfs`): it visits the states breadth first
// visits, with and without a depth bound, agrees with it on every mutant, shrinks its
// counterexamples, resumes from a checkpoint to the result of an uninterrupted run, and its
// command line reproduces what it found.
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/cli_fixtures.hpp"

namespace {
// cli_fixtures.hpp's kvcheck(), named before namespace kvcheck makes that name ambiguous.
const auto run_kvcheck = &kvcheck;
}  // namespace

#include "model/policy.hpp"
#include "sim/check/explorer.hpp"
#include "sim/check/scope.hpp"
#include "sim/check/trail.hpp"
#include "sim/io/input_error.hpp"
#include "tests/explore_fixtures.hpp"

namespace model = kvcheck::model;
namespace sim = kvcheck::sim;

namespace {

sim::ExploreReport explore(const sim::Scope& scope, const std::string& policy, sim::Order order,
                           const std::string& target = "") {
    sim::ExploreOptions options;
    options.max_seconds = 300;
    options.target = target;
    options.order = order;
    return sim::explore(scope, model::find_policy(policy)->defenses, options);
}

sim::ExploreReport explore(const std::string& scope, const std::string& policy, sim::Order order,
                           const std::string& target = "") {
    return explore(sim::named_scope(scope), policy, order, target);
}

bool replays_to(const sim::Scope& scope, const std::string& policy, const std::vector<model::Step>& steps,
                const std::string& invariant) {
    const sim::TrailResult r = sim::replay_trail(scope, model::find_policy(policy)->defenses, steps);
    return r.valid && sim::violates(r.violations, invariant);
}

}  // namespace

// Proves depth first explores every state of the small scope, the same number breadth first
// does, and finds it clean; it takes more transitions, since states first reached on a long path
// are expanded again from a shorter one.
TEST(DepthFirst, VisitsTheStatesBreadthFirstVisits) {
    const sim::ExploreReport bfs = explore("small", "validated", sim::Order::breadth_first);
    const sim::ExploreReport dfs = explore("small", "validated", sim::Order::depth_first);
    EXPECT_TRUE(dfs.exhausted) << dfs.bound_hit;
    EXPECT_FALSE(dfs.counterexample.has_value());
    EXPECT_EQ(dfs.stuck_states, 0u);
    EXPECT_EQ(dfs.states, bfs.states);
    EXPECT_EQ(dfs.depth, bfs.depth) << "the deepest state expanded is as deep as breadth first's last level";
    EXPECT_GE(dfs.transitions, bfs.transitions);
}

// Proves a depth bound cuts paths, not states: with paths of at most 22 steps, depth first still
// reaches every state within 22 steps of the start (as breadth first's levels 0-22 hold them),
// because a state reached first at or near the bound is expanded again when a shorter path
// reaches it. Without that, 100 of these 172,617 states are missed (measured by disabling it).
TEST(DepthFirst, ADepthBoundCutsPathsButNoStateWithinIt) {
    sim::Scope scope = sim::named_scope("small");
    scope.max_depth = 22;
    const sim::ExploreReport bfs = explore(scope, "validated", sim::Order::breadth_first);
    const sim::ExploreReport dfs = explore(scope, "validated", sim::Order::depth_first);
    ASSERT_EQ(bfs.bound_hit, "max_depth");
    EXPECT_EQ(dfs.bound_hit, "max_depth");
    EXPECT_FALSE(dfs.exhausted);
    EXPECT_GT(dfs.depth_cut_states, 0u);
    EXPECT_EQ(dfs.states, bfs.states);
}

// Proves depth first catches exactly the mutants breadth first catches at the small scope, each
// with a counterexample that replays, without the explorer, to the invariant it breaks.
TEST(DepthFirst, AgreesWithBreadthFirstOnEveryMutant) {
    const sim::Scope scope = sim::named_scope("small");
    std::size_t caught = 0;
    for (const model::PolicyInfo& p : model::policies()) {
        if (p.name == "validated") continue;
        SCOPED_TRACE(p.name);
        const sim::ExploreReport bfs = explore(scope, p.name, sim::Order::breadth_first, p.breaks);
        const sim::ExploreReport dfs = explore(scope, p.name, sim::Order::depth_first, p.breaks);
        ASSERT_EQ(dfs.counterexample.has_value(), bfs.counterexample.has_value());
        if (!dfs.counterexample) continue;
        ++caught;
        EXPECT_TRUE(replays_to(scope, p.name, dfs.counterexample->steps, p.breaks));
        EXPECT_EQ(dfs.counterexample->described.size(), dfs.counterexample->steps.size());
    }
    EXPECT_GE(caught, 15u) << "the small scope exposes most mutants";
}

// Proves a depth-first counterexample is shrunk to one from which no single step can be taken
// away: every such trail either takes a step that is not enabled or no longer violates.
TEST(DepthFirst, CounterexamplesAreShrunkToOneMinimal) {
    const sim::Scope scope = sim::named_scope("reference");
    const sim::ExploreReport r = explore(scope, "sticky-lookup", sim::Order::depth_first, "FM5_resident");
    ASSERT_TRUE(r.counterexample.has_value());
    const std::vector<model::Step>& steps = r.counterexample->steps;
    ASSERT_TRUE(replays_to(scope, "sticky-lookup", steps, "FM5_resident"));
    for (std::size_t drop = 0; drop < steps.size(); ++drop) {
        std::vector<model::Step> fewer = steps;
        fewer.erase(fewer.begin() + static_cast<std::ptrdiff_t>(drop));
        EXPECT_FALSE(replays_to(scope, "sticky-lookup", fewer, "FM5_resident"))
            << "step " << drop + 1 << " is not needed";
    }
}

// Proves a depth-first run stopped by a bound and resumed (twice) ends with exactly the
// uninterrupted result, and one that found a counterexample before a stop keeps it. The depth
// bound makes states expanded again from shorter paths after each resume: the depths the
// checkpoint keeps decide which.
TEST(DepthFirst, ResumedRunEqualsUninterruptedRun) {
    sim::Scope bounded = sim::named_scope("small");
    bounded.max_depth = 22;
    const sim::ExploreReport whole = explore(bounded, "validated", sim::Order::depth_first);
    sim::ExploreOptions depth_first;
    depth_first.order = sim::Order::depth_first;
    const sim::ExploreReport pieces = explore_in_pieces(bounded, "validated", depth_first, {20'000, 90'000});
    EXPECT_EQ(pieces.bound_hit, "max_depth");
    EXPECT_EQ(pieces.states, whole.states);
    EXPECT_EQ(pieces.transitions, whole.transitions);
    EXPECT_EQ(pieces.depth, whole.depth);
    EXPECT_EQ(pieces.depth_cut_states, whole.depth_cut_states);
    EXPECT_EQ(pieces.stuck_states, whole.stuck_states);

    sim::ExploreOptions keep_going = depth_first;
    keep_going.stop_at_first = false;
    const sim::ExploreReport kept_whole =
        sim::explore(sim::named_scope("small"), model::find_policy("no-pin")->defenses, keep_going);
    const sim::ExploreReport kept = explore_in_pieces(sim::named_scope("small"), "no-pin", keep_going, {3'000, 60'000});
    ASSERT_TRUE(kept.counterexample.has_value() && kept_whole.counterexample.has_value());
    EXPECT_EQ(kept.counterexample->steps, kept_whole.counterexample->steps);
    EXPECT_EQ(kept.states, kept_whole.states);
    EXPECT_EQ(kept.other_violations, kept_whole.other_violations);
}

// Proves a checkpoint answers only the search order it was written by.
TEST(DepthFirst, ACheckpointResumesOnlyItsOwnOrder) {
    const sim::Scope scope = sim::named_scope("small");
    const model::Defenses& defenses = model::find_policy("validated")->defenses;
    sim::ExploreOptions first;
    first.order = sim::Order::depth_first;
    first.max_states = 5'000;
    const sim::ExploreReport stopped = sim::explore(scope, defenses, first);
    ASSERT_TRUE(stopped.checkpoint.has_value());
    const sim::ExploreCheckpoint decoded =
        sim::decode_checkpoint(sim::encode_checkpoint(*stopped.checkpoint), "memory");
    EXPECT_EQ(decoded.order, static_cast<std::uint8_t>(sim::Order::depth_first));
    EXPECT_EQ(decoded.key_depths, stopped.checkpoint->key_depths);
    sim::ExploreOptions other;
    other.resume = &decoded;
    EXPECT_THROW(sim::explore(scope, defenses, other), sim::InputError);
}

// Proves the command line: --order dfs is printed with the result and in the reproduce line, and
// running that line finds the same counterexample.
TEST(DepthFirst, ReproduceLineRunsTheSameSearch) {
    const Outcome first =
        run_kvcheck({"check", "--scope", "small", "--order", "dfs", "--policy", "no-revalidate", "--quiet"});
    ASSERT_EQ(first.code, 1) << first.all();
    EXPECT_NE(first.out.find("order=dfs"), std::string::npos) << first.all();
    const std::string tag = "reproduce: kvcheck ";
    const std::size_t at = first.out.find(tag);
    ASSERT_NE(at, std::string::npos) << first.all();
    const std::string line = first.out.substr(at + tag.size(), first.out.find('\n', at) - at - tag.size());
    EXPECT_EQ(line, "check --scope small --policy no-revalidate --order dfs");
    std::vector<std::string> args;
    for (std::size_t from = 0; from < line.size();) {
        const std::size_t space = line.find(' ', from);
        args.push_back(line.substr(from, space == std::string::npos ? std::string::npos : space - from));
        from = space == std::string::npos ? line.size() : space + 1;
    }
    args.push_back("--quiet");
    const Outcome again = run_kvcheck(args);
    EXPECT_EQ(again.code, 1) << again.all();
    const auto counterexample = [](const std::string& out) { return out.substr(out.find("counterexample (")); };
    ASSERT_NE(first.out.find("counterexample ("), std::string::npos) << first.all();
    ASSERT_NE(again.out.find("counterexample ("), std::string::npos) << again.all();
    EXPECT_EQ(counterexample(again.out), counterexample(first.out));
}

// Proves `kvcheck mutants --order dfs` searches depth first: validated exhausts the small scope
// clean, and a mutant is detected with a counterexample that breaks its invariant.
TEST(DepthFirst, MutantsTakesTheOrder) {
    const Outcome clean =
        run_kvcheck({"mutants", "--scope", "small", "--order", "dfs", "--policy", "validated", "--json", "--quiet"});
    ASSERT_EQ(clean.code, 0) << clean.all();
    const nlohmann::json rows = nlohmann::json::parse(clean.out);
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_TRUE(rows[0]["exhausted"].get<bool>());
    EXPECT_EQ(rows[0]["states"], explore("small", "validated", sim::Order::depth_first).states);
    const Outcome caught =
        run_kvcheck({"mutants", "--scope", "small", "--order", "dfs", "--policy", "no-pin", "--json", "--quiet"});
    ASSERT_EQ(caught.code, 0) << caught.all();
    const nlohmann::json found = nlohmann::json::parse(caught.out);
    EXPECT_TRUE(found[0]["detected"].get<bool>());
    EXPECT_EQ(found[0]["invariant"], "RL3_toctou");
    EXPECT_EQ(found[0]["counterexample_steps"],
              explore("small", "no-pin", sim::Order::depth_first, "RL3_toctou").counterexample->steps.size());
}

// Proves a depth-first checkpoint written by the command line resumes depth first, and a resume
// that asks for the other order is refused with exit 2 naming --order.
TEST(DepthFirst, CommandLineResumeKeepsTheOrder) {
    const fs::path dir = scratch("dfs-resume");
    const std::string checkpoint = (dir / "check.checkpoint").string();
    const Outcome stopped = run_kvcheck(
        {"check", "--scope", "small", "--order", "dfs", "--max-states", "5000", "--checkpoint", checkpoint, "--quiet"});
    ASSERT_EQ(stopped.code, 0) << stopped.all();
    ASSERT_TRUE(fs::is_regular_file(checkpoint)) << stopped.all();
    const Outcome refused = run_kvcheck({"check", "--resume", checkpoint, "--order", "bfs", "--quiet"});
    EXPECT_EQ(refused.code, 2) << refused.all();
    EXPECT_NE(refused.err.find("--order"), std::string::npos) << refused.all();
    const Outcome resumed = run_kvcheck({"check", "--resume", checkpoint, "--quiet"});
    ASSERT_EQ(resumed.code, 0) << resumed.all();
    EXPECT_NE(resumed.out.find("order=dfs"), std::string::npos) << resumed.all();
    EXPECT_NE(
        resumed.out.find("states=" + std::to_string(explore("small", "validated", sim::Order::depth_first).states)),
        std::string::npos)
        << resumed.all();
    EXPECT_FALSE(fs::exists(checkpoint)) << "a finished run removes the checkpoint it resumed";
}
