// The exhaustive explorer: validated is clean at the bounded scopes, every mutant is caught with a
// short counterexample that replays, and counterexamples round-trip through scenario files.
#include <atomic>
#include <cmath>
#include <deque>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

#include <gtest/gtest.h>

#include "model/driver.hpp"
#include "sim/check/dot.hpp"
#include "sim/check/explorer.hpp"
#include "sim/check/steps_json.hpp"
#include "sim/check/symmetry.hpp"
#include "sim/des/engine.hpp"
#include "sim/io/files.hpp"
#include "sim/io/input_error.hpp"
#include "tests/explore_fixtures.hpp"

using namespace kvcheck;

namespace {

sim::ExploreReport explore(const std::string& scope, const std::string& policy, const std::string& target = "") {
    sim::ExploreOptions options;
    options.max_seconds = 300;
    options.target = target;
    return sim::explore(sim::named_scope(scope), model::find_policy(policy)->defenses, options);
}

sim::ExploreOptions targeting(const std::string& invariant) {
    sim::ExploreOptions options;
    options.target = invariant;
    return options;
}

// A proof: every state of the scope explored, none violating, and no request stuck.
void expect_proven_clean(const sim::ExploreReport& r) {
    EXPECT_TRUE(r.exhausted) << r.bound_hit;
    EXPECT_FALSE(r.counterexample.has_value()) << sim::format_counterexample(*r.counterexample);
    EXPECT_EQ(r.stuck_states, 0u);
}

}  // namespace

// Proves validated violates nothing in any interleaving of the small scope, and no request is stuck.
TEST(Explorer, ValidatedIsCleanAtTheSmallScope) {
    const sim::ExploreReport r = explore("small", "validated");
    expect_proven_clean(r);
    EXPECT_GT(r.states, 10'000u);
}

// Proves the same at the documented reference scope (the figure in docs/checker.md).
TEST(Explorer, ValidatedIsCleanAtTheReferenceScope) {
    const sim::ExploreReport r = explore("reference", "validated");
    expect_proven_clean(r);
}

// Proves the same with extents (docs/invariants.md, "Extents"): the reference scope with entries
// of up to 64 tokens, where reads take parts of entries, rewrites are duplicates and tails and
// checkpoints stay single.
TEST(Explorer, ValidatedIsCleanAtTheExtentsScope) {
    const sim::ExploreReport r = explore("extents", "validated");
    expect_proven_clean(r);
    EXPECT_GT(r.states, 1'000'000u);
}

// Proves the same where a full host/disk tier drops entries (the tier scope), and that such a
// drop lies within the scope's budgets: request 0 runs to the end, one offload fills the tier and
// a second drops the first's entries. Those steps, written as a steps-mode scenario, keep the
// scope's tier and replay to the same state.
TEST(Explorer, ValidatedIsCleanAtTheTierScope) {
    const sim::ExploreReport r = explore("tier", "validated");
    expect_proven_clean(r);
    const sim::Scope scope = sim::named_scope("tier");
    model::World w = sim::initial_world(scope, model::find_policy("validated")->defenses);
    std::vector<model::Step> steps;
    const auto take = [&](model::Step step) {
        EXPECT_TRUE(model::enabled(w, step)) << model::describe(w, step);
        steps.push_back(step);
        return model::apply(w, step);
    };
    for (model::StepKind k : {model::StepKind::lookup, model::StepKind::pin, model::StepKind::revalidate,
                              model::StepKind::allocate, model::StepKind::read, model::StepKind::commit})
        take({k, 0, 0});
    while (model::enabled(w, {model::StepKind::decode, 0, 0})) take({model::StepKind::decode, 0, 0});
    take({model::StepKind::finish, 0, 0});
    std::size_t offloads = 0;
    std::size_t dropped = 0;
    for (std::uint32_t id = 0; id < w.segments.size() && offloads < 2; ++id) {
        if (w.segments[id].group != 0 || !model::enabled(w, {model::StepKind::offload, id, 0})) continue;
        const model::StepOutcome out = take({model::StepKind::offload, id, 0});
        ++offloads;
        for (const model::Eviction& e : out.evicted) dropped += e.cause == model::EvictionCause::tier_full ? 1 : 0;
        for (std::uint32_t op : out.io_started) take({model::StepKind::io_complete, op, 0});
    }
    ASSERT_EQ(offloads, 2u);
    EXPECT_GT(dropped, 0u) << "the second offload drops the first's entries";
    const std::string path = ::testing::TempDir() + "/kvcheck-tier-steps.json";
    sim::write_file_atomic(path, sim::steps_scenario_json(scope, "validated", steps, "test", nullptr).dump(2));
    const sim::Scenario s = sim::load_scenario(path);
    EXPECT_EQ(s.scope.limits.disk_capacity_bytes, scope.limits.disk_capacity_bytes);
    EXPECT_TRUE(s.scope.limits.tier_eviction);
    const sim::RunResult run = sim::run_scenario(s, {});
    EXPECT_EQ(run.info.final_state_hash, model::state_hash(w)) << "the written scope replays to the same state";
    EXPECT_TRUE(run.metrics.invariant_violations.empty());
}

// Proves validated clean where a request may stop waiting on its loads or end at them (the
// load-wait scope: stop_waiting and abort), and
// that the scope reaches what it is for: request 1 waits on a load of request 0's offloaded
// prefix, stops waiting, runs to the end, and only then does the load it left land, every step
// within the scope's budgets and every invariant holding. sticky-lookup, which keeps the plan
// made before the loads, is caught reading a page still in flight, though the scope has no
// faults (elsewhere it needs a failed load).
TEST(Explorer, ValidatedIsCleanAtTheLoadWaitScope) {
    expect_proven_clean(explore("load-wait", "validated"));
    const sim::Scope scope = sim::named_scope("load-wait");
    EXPECT_EQ(scope.max_faults, 0u);
    EXPECT_NE(scope.step_kinds & model::kind_bit(model::StepKind::abort), 0u);
    model::World w = sim::initial_world(scope, model::find_policy("validated")->defenses);
    std::size_t background = 0;
    const auto take = [&](model::Step step) {
        EXPECT_NE(scope.step_kinds & model::kind_bit(step.kind), 0u) << model::describe(w, step);
        EXPECT_TRUE(model::enabled(w, step)) << model::describe(w, step);
        background += sim::is_background(step.kind) ? 1 : 0;
        const model::StepOutcome out = model::apply(w, step);
        model::Driver driver;
        const std::vector<model::Violation>& violations = driver.check(w, out);
        EXPECT_TRUE(violations.empty()) << violations.front().invariant << " after " << model::describe(w, step);
        return out;
    };
    const auto run_to_end = [&](std::uint32_t r) {
        for (model::StepKind k : {model::StepKind::pin, model::StepKind::revalidate, model::StepKind::allocate,
                                  model::StepKind::read, model::StepKind::commit})
            take({k, r, 0});
        while (model::enabled(w, {model::StepKind::decode, r, 0})) take({model::StepKind::decode, r, 0});
        take({model::StepKind::finish, r, 0});
    };
    take({model::StepKind::lookup, 0, 0});
    run_to_end(0);
    std::uint32_t kv = model::kNone;
    for (std::uint32_t id = 0; id < w.segments.size() && kv == model::kNone; ++id)
        if (w.segments[id].group == 0 && model::enabled(w, {model::StepKind::offload, id, 0})) kv = id;
    ASSERT_NE(kv, model::kNone);
    for (std::uint32_t op : take({model::StepKind::offload, kv, 0}).io_started)
        take({model::StepKind::io_complete, op, 0});
    const model::StepOutcome waits = take({model::StepKind::lookup, 1, 0});
    ASSERT_EQ(waits.lookup->verdict, model::VerdictKind::io_wait);
    take({model::StepKind::stop_waiting, 1, 0});
    take({model::StepKind::lookup, 1, 0});
    run_to_end(1);
    for (std::uint32_t op : waits.io_started) {
        EXPECT_EQ(w.io[op].request, model::kNone);
        take({model::StepKind::io_complete, op, 0});
    }
    EXPECT_EQ(w.segments[kv].stage, model::Stage::ready) << "the load landed after its reader had gone";
    EXPECT_LE(background, scope.max_background);

    const sim::ExploreReport sticky = explore("load-wait", "sticky-lookup");
    ASSERT_TRUE(sticky.counterexample.has_value());
    const std::vector<model::Step>& steps = sticky.counterexample->steps;
    EXPECT_TRUE(std::any_of(steps.begin(), steps.end(),
                            [](const model::Step& s) { return s.kind == model::StepKind::stop_waiting; }));
    EXPECT_EQ(sticky.counterexample->violations.front().invariant, "FM5_resident");
}

// Proves the explorer's machinery (states encoded into a chunk pool the two live levels share,
// successors settled one state late, a keys-only visited set) visits exactly what a plain
// breadth-first search over World values visits: the same states and transitions.
TEST(Explorer, MatchesAPlainBreadthFirstSearch) {
    const sim::Scope scope = sim::named_scope("small");
    const model::Defenses defenses = model::find_policy("validated")->defenses;
    struct Item {
        model::World world;
        std::uint8_t faults;
        std::uint8_t background;
    };
    const model::World initial = sim::initial_world(scope, defenses);
    std::set<std::tuple<std::uint64_t, std::uint8_t, std::uint8_t>> seen = {{model::state_hash(initial), 0, 0}};
    std::deque<Item> frontier = {{initial, 0, 0}};
    std::uint64_t transitions = 0;
    std::vector<model::Step> steps;
    std::vector<model::Violation> violations;
    while (!frontier.empty()) {
        const Item item = std::move(frontier.front());
        frontier.pop_front();
        model::enabled_steps(item.world, sim::allowed_kinds(scope, item.faults, item.background), steps);
        for (const model::Step& step : steps) {
            Item child = item;
            const model::StepOutcome outcome = model::apply(child.world, step);
            child.faults = static_cast<std::uint8_t>(child.faults + (model::is_fault(step.kind) ? 1 : 0));
            child.background = static_cast<std::uint8_t>(child.background + (sim::is_background(step.kind) ? 1 : 0));
            ++transitions;
            if (!seen.insert({model::state_hash(child.world), child.faults, child.background}).second) continue;
            violations = model::Driver().check(child.world, outcome);
            ASSERT_TRUE(violations.empty()) << violations.front().invariant;
            frontier.push_back(std::move(child));
        }
    }
    const sim::ExploreReport r = explore("small", "validated");
    ASSERT_TRUE(r.exhausted) << r.bound_hit;
    EXPECT_EQ(r.states, seen.size());
    EXPECT_EQ(r.transitions, transitions);
}

// Proves breadth-first search returns a shortest trail: a mutant caught at depth d has no
// violating state at any smaller depth (checked by exploring with the depth bound d - 1).
TEST(Explorer, CounterexamplesAreShortest) {
    const sim::ExploreReport r = explore("reference", "no-revalidate", "RL3_toctou");
    ASSERT_TRUE(r.counterexample.has_value());
    sim::Scope shallower = sim::named_scope("reference");
    shallower.max_depth = static_cast<std::uint32_t>(r.counterexample->steps.size() - 1);
    sim::ExploreOptions options;
    options.target = "RL3_toctou";
    EXPECT_FALSE(
        sim::explore(shallower, model::find_policy("no-revalidate")->defenses, options).counterexample.has_value());
}

// Proves the strongly-connected-component pass runs on the stored graph (Boost.Graph) and that
// the small scope has no unfinished terminal state.
TEST(Explorer, LivenessAnalysisRuns) {
    sim::ExploreOptions options;
    options.keep_graph = true;
    const sim::ExploreReport r =
        sim::explore(sim::named_scope("small"), model::find_policy("validated")->defenses, options);
    EXPECT_TRUE(r.exhausted);
    EXPECT_EQ(r.stuck_states, 0u);
    EXPECT_EQ(r.nontrivial_sccs, 0u) << "a cycle of states means a request can loop without progress";
}

class MutantTest : public ::testing::TestWithParam<std::string> {};

// Proves each mutant is caught at its home scope (the reference scope, or the rollout scope for
// the one that leaves the rollout mode's reuse scope) with the invariant the policy table names,
// and that the counterexample replays without the explorer to the same violation.
TEST_P(MutantTest, IsCaughtWithAReplayableCounterexample) {
    const model::PolicyInfo& p = *model::find_policy(GetParam());
    const std::string scope = sim::home_scope(p);
    const sim::ExploreReport r = explore(scope, p.name, p.breaks);
    ASSERT_TRUE(r.counterexample.has_value()) << p.name << " was not detected";
    EXPECT_LE(r.counterexample->steps.size(), 20u);
    const sim::TrailResult replay = sim::replay_trail(sim::named_scope(scope), p.defenses, r.counterexample->steps);
    EXPECT_TRUE(replay.valid);
    EXPECT_TRUE(sim::violates(replay.violations, p.breaks));
    EXPECT_EQ(replay.violating_step + 1, r.counterexample->steps.size()) << "the violation is at the trail's last step";
}

std::vector<std::string> mutant_names() {
    std::vector<std::string> names;
    for (const model::PolicyInfo& p : model::policies())
        if (p.name != "validated") names.push_back(p.name);
    return names;
}

INSTANTIATE_TEST_SUITE_P(AllMutants, MutantTest, ::testing::ValuesIn(mutant_names()),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                             std::string name = param.param;
                             for (char& c : name)
                                 if (c == '-') c = '_';
                             return name;
                         });

// Proves a counterexample written as a steps-mode scenario is reproduced by the simulator entry
// point alone, with the same invariant, and that the expect block turns it into a passing test.
TEST(Counterexample, RoundTripsThroughAScenarioFile) {
    const sim::ExploreReport r = explore("reference", "no-pin", "RL3_toctou");
    ASSERT_TRUE(r.counterexample.has_value());
    const std::string dir = ::testing::TempDir() + "/kvcheck-ce";
    sim::ensure_directory(dir);
    sim::InvariantExpectation expect;
    expect.violates = {"RL3_toctou"};
    const std::string path = dir + "/ce.json";
    sim::write_file_atomic(path, sim::steps_scenario_json(sim::named_scope("reference"), "no-pin",
                                                          r.counterexample->steps, "test", &expect)
                                     .dump(2));
    const sim::Scenario s = sim::load_scenario(path);
    ASSERT_TRUE(s.steps_mode);
    const sim::RunResult run = sim::run_scenario(s, {});
    EXPECT_GT(run.metrics.invariant_violations.at("RL3_toctou"), 0u);
    const sim::RunResult under_validated = sim::run_scenario(s, {"validated", 0, false, "", {}});
    EXPECT_EQ(under_validated.metrics.invariant_violations.count("RL3_toctou"), 0u)
        << "the same steps are safe with every defense";
}

// Proves a steps-mode scenario keeps its scope's rollout: written with rollout off, it loads with
// rollout off (the top-level "rollout" is the scope's in steps mode), so the same steps replay
// to the same final state; a scope at the default writes no "rollout".
TEST(Counterexample, StepsScenarioKeepsTheRollout) {
    sim::Scope scope = sim::named_scope("small");
    scope.rollout = model::Rollout::off;
    model::World w = sim::initial_world(scope, model::find_policy("validated")->defenses);
    std::vector<model::Step> steps;
    for (std::vector<model::Step> enabled; steps.size() < 12;) {
        model::enabled_steps(w, scope.step_kinds, enabled);
        if (enabled.empty()) break;
        steps.push_back(enabled.front());
        model::apply(w, enabled.front());
    }
    const std::string dir = ::testing::TempDir() + "/kvcheck-rollout";
    sim::ensure_directory(dir);
    const nlohmann::json doc = sim::steps_scenario_json(scope, "validated", steps, "test", nullptr);
    EXPECT_EQ(doc["rollout"], "off");
    EXPECT_FALSE(
        sim::steps_scenario_json(sim::named_scope("small"), "validated", {}, "test", nullptr).contains("rollout"));
    sim::write_file_atomic(dir + "/off.json", doc.dump(2));
    const sim::Scenario s = sim::load_scenario(dir + "/off.json");
    EXPECT_EQ(s.scope.rollout, model::Rollout::off);
    EXPECT_EQ(sim::run_scenario(s, {}).info.final_state_hash, model::state_hash(w));
}

// Proves the pin/epoch race comes out as short as the protocol allows: from a cached prefix
// (request 0 is warm), pinning without a re-check and reading without a pin are 7-step stories,
// the length SPIN reports for its pin/epoch model; the written scenario keeps the warm request
// and reproduces the violation.
TEST(Explorer, PinEpochRacesAreSevenSteps) {
    for (const std::string policy : {"no-revalidate", "no-pin"}) {
        const sim::ExploreReport r = explore("pin-epoch", policy, "RL3_toctou");
        ASSERT_TRUE(r.counterexample.has_value()) << policy;
        EXPECT_EQ(r.counterexample->steps.size(), 7u) << policy << "\n"
                                                      << sim::format_counterexample(*r.counterexample);
        const std::string path = ::testing::TempDir() + "/kvcheck-pin-epoch-" + policy + ".json";
        sim::write_file_atomic(path, sim::steps_scenario_json(sim::named_scope("pin-epoch"), policy,
                                                              r.counterexample->steps, "test", nullptr)
                                         .dump(2));
        const sim::Scenario s = sim::load_scenario(path);
        ASSERT_TRUE(s.scope.requests.front().warm);
        EXPECT_GT(sim::run_scenario(s, {}).metrics.invariant_violations.at("RL3_toctou"), 0u) << policy;
    }
}

// Proves a warm request is checked like any step: one that breaks an invariant on its own
// (no admission cap under a budget smaller than its blocks) is refused, not silently assumed.
TEST(Explorer, WarmRequestsAreChecked) {
    sim::Scope scope = sim::named_scope("pin-epoch");
    scope.limits.gpu_budget_bytes = 64;
    EXPECT_NO_THROW(sim::initial_world(scope, model::find_policy("validated")->defenses));
    EXPECT_THROW(sim::initial_world(scope, model::find_policy("no-admission-cap")->defenses), std::invalid_argument);
}

// Proves shrinking keeps a trail valid and violating while making it no longer.
TEST(Counterexample, ShrinkingKeepsTheViolation) {
    const sim::ExploreReport r = explore("reference", "no-graph-guard", "RL4_graph_topology");
    ASSERT_TRUE(r.counterexample.has_value());
    // Pad the shortest trail with extra enabled steps, then shrink it back.
    sim::Counterexample padded = *r.counterexample;
    model::World w = sim::initial_world(sim::named_scope("reference"), model::find_policy("no-graph-guard")->defenses);
    std::vector<model::Step> enabled;
    model::enabled_steps(w, model::kind_bit(model::StepKind::lookup), enabled);
    padded.steps.insert(padded.steps.begin(), enabled.begin(), enabled.end());
    const sim::Counterexample shrunk = sim::shrink(
        sim::named_scope("reference"), model::find_policy("no-graph-guard")->defenses, padded, "RL4_graph_topology");
    EXPECT_LE(shrunk.steps.size(), padded.steps.size());
    const sim::TrailResult replay =
        sim::replay_trail(sim::named_scope("reference"), model::find_policy("no-graph-guard")->defenses, shrunk.steps);
    EXPECT_TRUE(replay.valid);
    EXPECT_TRUE(sim::violates(replay.violations, "RL4_graph_topology"));
    EXPECT_NE(sim::counterexample_dot(shrunk).find("RL4_graph_topology"), std::string::npos);
}

// Proves a run stopped by a bound and resumed (twice) ends with exactly the uninterrupted result.
TEST(Explorer, ResumedRunEqualsUninterruptedRun) {
    const sim::ExploreReport whole = explore("small", "validated");
    const sim::ExploreReport pieces = explore_in_pieces(sim::named_scope("small"), "validated", {}, {20'000, 90'000});
    EXPECT_TRUE(pieces.exhausted) << pieces.bound_hit;
    EXPECT_EQ(pieces.states, whole.states);
    EXPECT_EQ(pieces.transitions, whole.transitions);
    EXPECT_EQ(pieces.depth, whole.depth);
    EXPECT_EQ(pieces.stuck_states, whole.stuck_states);
    EXPECT_FALSE(pieces.counterexample.has_value());
}

// Proves a resume stops where an uninterrupted run with its bound stops, at any bound: at the
// states the first run stopped with (it then expands nothing), and above them.
TEST(Explorer, ResumeAtAnyBoundEqualsTheUninterruptedRunAtThatBound) {
    const sim::Scope scope = sim::named_scope("small");
    const model::Defenses& defenses = model::find_policy("validated")->defenses;
    sim::ExploreOptions first;
    first.max_states = 5'000;
    const sim::ExploreReport stopped = sim::explore(scope, defenses, first);
    ASSERT_TRUE(stopped.checkpoint.has_value());
    ASSERT_GT(stopped.states, first.max_states) << "the bound is checked after an expansion";
    for (const std::uint64_t bound : {stopped.states, stopped.states + 1, stopped.states + 500}) {
        sim::ExploreOptions resumed;
        resumed.max_states = bound;
        resumed.resume = &*stopped.checkpoint;
        sim::ExploreOptions whole;
        whole.max_states = bound;
        const sim::ExploreReport a = sim::explore(scope, defenses, resumed);
        const sim::ExploreReport b = sim::explore(scope, defenses, whole);
        EXPECT_EQ(a.states, b.states) << bound;
        EXPECT_EQ(a.transitions, b.transitions) << bound;
        if (bound == stopped.states) {
            EXPECT_EQ(a.transitions, stopped.transitions) << "a resume at the bound it stopped at expands nothing";
            ASSERT_TRUE(a.checkpoint.has_value());
            EXPECT_EQ(a.checkpoint->level, stopped.checkpoint->level);
        }
    }
}

// Proves a resumed run finds the same shortest counterexample, and a checkpoint carries one found
// before the stop when the run keeps going.
TEST(Explorer, ResumedRunFindsTheSameCounterexample) {
    const sim::ExploreReport whole = explore("reference", "no-revalidate", "RL3_toctou");
    ASSERT_TRUE(whole.counterexample.has_value());
    const sim::ExploreReport pieces =
        explore_in_pieces(sim::named_scope("reference"), "no-revalidate", targeting("RL3_toctou"), {500, 2'000});
    ASSERT_TRUE(pieces.counterexample.has_value());
    EXPECT_EQ(pieces.counterexample->steps, whole.counterexample->steps);
    EXPECT_EQ(pieces.states, whole.states);

    sim::ExploreOptions options;
    options.stop_at_first = false;
    options.max_states = 20'000;
    const sim::Scope scope = sim::named_scope("small");
    sim::ExploreReport kept = sim::explore(scope, model::find_policy("no-pin")->defenses, options);
    ASSERT_TRUE(kept.counterexample.has_value() && kept.checkpoint.has_value());
    options.resume = &*kept.checkpoint;
    options.max_states = 40'000;
    const sim::ExploreReport resumed = sim::explore(scope, model::find_policy("no-pin")->defenses, options);
    ASSERT_TRUE(resumed.counterexample.has_value());
    EXPECT_EQ(resumed.counterexample->steps, kept.counterexample->steps);
    EXPECT_EQ(resumed.counterexample->violations.front().invariant, kept.counterexample->violations.front().invariant);
}

// Proves a stop during a resume's frontier rebuild (here: before it starts) ends the run at once
// with the checkpoint it resumed, byte for byte, and the counterexample that checkpoint carries.
TEST(Explorer, StopWhileRebuildingTheFrontierKeepsTheCheckpoint) {
    const sim::Scope scope = sim::named_scope("small");
    const model::Defenses& defenses = model::find_policy("no-pin")->defenses;
    sim::ExploreOptions first;
    first.stop_at_first = false;
    first.max_states = 20'000;
    sim::ExploreReport kept = sim::explore(scope, defenses, first);
    ASSERT_TRUE(kept.counterexample.has_value() && kept.checkpoint.has_value());
    ASSERT_FALSE(kept.checkpoint->level.empty());
    kept.checkpoint->policy = "no-pin";
    const std::atomic<bool> stop{true};
    sim::ExploreOptions resumed = first;
    resumed.max_states = 40'000;
    resumed.resume = &*kept.checkpoint;
    resumed.stop = &stop;
    sim::ExploreReport r = sim::explore(scope, defenses, resumed);
    EXPECT_EQ(r.bound_hit, "interrupted");
    EXPECT_EQ(r.transitions, kept.transitions) << "nothing was expanded";
    ASSERT_TRUE(r.checkpoint.has_value());
    r.checkpoint->policy = "no-pin";
    EXPECT_EQ(sim::encode_checkpoint(*r.checkpoint), sim::encode_checkpoint(*kept.checkpoint));
    ASSERT_TRUE(r.counterexample.has_value());
    EXPECT_EQ(r.counterexample->steps, kept.counterexample->steps);
}

// Proves a damaged or foreign checkpoint is an input error, not a crash.
TEST(Explorer, BadCheckpointIsAnInputError) {
    EXPECT_THROW(sim::decode_checkpoint("not a checkpoint", "x"), sim::InputError);
    sim::ExploreOptions options;
    options.max_states = 100;
    const sim::ExploreReport r =
        sim::explore(sim::named_scope("small"), model::find_policy("validated")->defenses, options);
    ASSERT_TRUE(r.checkpoint.has_value());
    const std::string bytes = sim::encode_checkpoint(*r.checkpoint);
    EXPECT_THROW(sim::decode_checkpoint(bytes.substr(0, bytes.size() - 3), "x"), sim::InputError);
    EXPECT_NO_THROW(sim::decode_checkpoint(bytes, "x"));
    // One changed byte anywhere, in the fields or in the node arrays, fails the checksum: resuming
    // it could replay a step the checkpoint never took.
    for (std::size_t at = 0; at < bytes.size(); at += 1 + bytes.size() / 97) {
        std::string damaged = bytes;
        damaged[at] = static_cast<char>(damaged[at] ^ 0x10);
        EXPECT_THROW(sim::decode_checkpoint(damaged, "x"), sim::InputError) << "byte " << at << " of " << bytes.size();
    }
    options.resume = &*r.checkpoint;
    options.target = "RL3_toctou";
    EXPECT_THROW(sim::explore(sim::named_scope("small"), model::find_policy("validated")->defenses, options),
                 sim::InputError);

    // A file made to pass the checksum still cannot take the explorer where the model does not go:
    // a frontier node whose step is not enabled on its path is an input error, not an assertion.
    sim::ExploreCheckpoint forged = *r.checkpoint;
    ASSERT_FALSE(forged.level.empty());
    const std::uint32_t node = forged.level.back();
    ASSERT_GT(node, 0u);
    forged.steps[node].target = 999;  // no request, segment or I/O slot has this id at the small scope
    const sim::ExploreCheckpoint decoded = sim::decode_checkpoint(sim::encode_checkpoint(forged), "x");
    // Nor can it carry a depth its nodes cannot reach, or elapsed seconds that are no number.
    sim::ExploreCheckpoint deep = *r.checkpoint;
    deep.depth = static_cast<std::uint32_t>(deep.steps.size());
    EXPECT_THROW(sim::decode_checkpoint(sim::encode_checkpoint(deep), "x"), sim::InputError);
    for (const double seconds : {std::nan(""), -1.0, HUGE_VAL}) {
        sim::ExploreCheckpoint timed = *r.checkpoint;
        timed.seconds = seconds;
        EXPECT_THROW(sim::decode_checkpoint(sim::encode_checkpoint(timed), "x"), sim::InputError) << seconds;
    }
    options.target.clear();
    options.resume = &decoded;
    EXPECT_THROW(sim::explore(sim::named_scope("small"), model::find_policy("validated")->defenses, options),
                 sim::InputError);
}

namespace {

// The world with segment ids reversed, every reference renamed with them (the prefix index, which
// canonical_state_hash does not read, is left as it was).
model::World rename_segments(const model::World& w) {
    const auto n = static_cast<std::uint32_t>(w.segments.size());
    auto rename = [n](std::uint32_t id) { return id == model::kNone ? id : n - 1 - id; };
    model::World out = w;
    for (std::uint32_t id = 0; id < n; ++id) {
        model::Segment s = w.segments[id];
        s.lru_prev = rename(s.lru_prev);
        s.lru_next = rename(s.lru_next);
        out.segments[rename(id)] = s;
    }
    for (std::uint32_t& id : out.free_segment_ids) id = rename(id);
    for (model::Slot& s : out.slots) s.owner = rename(s.owner);
    for (model::DiskObject& d : out.disk) d.owner = rename(d.owner);
    for (model::IoOp& op : out.io) op.segment = rename(op.segment);
    for (model::Request& q : out.requests) {
        for (model::PlanEntry& e : q.plan) e.segment = rename(e.segment);
        for (std::uint32_t& id : q.pinned) id = rename(id);
        for (std::uint32_t& id : q.owned) id = rename(id);
    }
    for (model::Graph& g : out.graphs)
        for (model::GraphRef& ref : g.refs) ref.segment = rename(ref.segment);
    for (std::uint32_t& id : out.lru_head) id = rename(id);
    for (std::uint32_t& id : out.lru_tail) id = rename(id);
    return out;
}

}  // namespace

// Proves the symmetry reduction's hash is blind to segment names (a renamed world hashes the same,
// though state_hash tells them apart), keeps validated clean with fewer states, and finds each
// mutant's counterexample at the same, shortest length.
TEST(Explorer, SymmetryReductionIsSoundAndKeepsCounterexamplesShortest) {
    const sim::Scope scope = sim::named_scope("reference");
    const sim::ExploreReport found = explore("reference", "no-revalidate", "RL3_toctou");
    ASSERT_TRUE(found.counterexample.has_value());
    model::World w = sim::initial_world(scope, model::find_policy("no-revalidate")->defenses);
    std::vector<std::uint32_t> labels;
    for (const model::Step& step : found.counterexample->steps) {
        model::apply(w, step);
        const model::World renamed = rename_segments(w);
        EXPECT_EQ(sim::canonical_state_hash(w, labels), sim::canonical_state_hash(renamed, labels));
        if (w.live_segments > 1) {
            EXPECT_NE(model::state_hash(w), model::state_hash(renamed));
        }
    }
    sim::ExploreOptions options;
    options.reduction = sim::Reduction::symmetry;
    const sim::ExploreReport reduced =
        sim::explore(sim::named_scope("small"), model::find_policy("validated")->defenses, options);
    EXPECT_TRUE(reduced.exhausted);
    EXPECT_FALSE(reduced.counterexample.has_value());
    EXPECT_LE(reduced.states, explore("small", "validated").states);
    for (const char* name :
         {"no-revalidate", "no-graph-guard", "shared-freelist", "hash-before-complete", "min-block-size-index"}) {
        const model::PolicyInfo& p = *model::find_policy(name);
        options.target = p.breaks;
        const sim::ExploreReport r = sim::explore(scope, p.defenses, options);
        const sim::ExploreReport plain = explore("reference", p.name, p.breaks);
        ASSERT_TRUE(r.counterexample.has_value() && plain.counterexample.has_value()) << name;
        EXPECT_EQ(r.counterexample->steps.size(), plain.counterexample->steps.size()) << name;
    }
}
