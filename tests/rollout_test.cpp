// The rollout modes as an invariant (RO1_rollout_scope): under rollout off nothing is resumed, under
// intra-request a request resumes only entries written in its own reuse scope (its sampled
// answers share it), and the rollout-leak mutant, which ignores the mode, is caught either way.
#include <memory>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "sim/check/explorer.hpp"
#include "tests/model_fixtures.hpp"

using namespace kvcheck;
using namespace kvcheck::model::fixtures;
using kvcheck::model::Rollout;

namespace {

// Runs b (which extends a finished request a) through its read; returns the read step's violations.
std::set<std::string> read_after_lookup(model::World& w, std::uint32_t b) {
    lookup_step(w, b);
    for (model::StepKind k : {model::StepKind::pin, model::StepKind::revalidate, model::StepKind::allocate})
        ok(w, k, b);
    return names(take(w, model::StepKind::read, b).violations);
}

}  // namespace

// Proves RO1 fires on the read of a resume the mode forbids, under rollout off (any reuse) and
// intra-request (another request's entries), for the mutant that ignores the mode, and that
// validated, which refuses those hits, reads nothing there and breaks nothing.
TEST(Rollout, LeakedReuseBreaksTheRolloutScope) {
    for (const Rollout mode : {Rollout::off, Rollout::intra_request}) {
        SCOPED_TRACE(mode == Rollout::off ? "off" : "intra-request");
        Pair leak = finished_then_extended("rollout-leak", 64, 0, 1 << 20, mode);
        const std::set<std::string> leaked = read_after_lookup(leak.w, leak.b);
        EXPECT_GT(leak.w.requests[leak.b].resume_len, 0u);
        EXPECT_EQ(leaked, std::set<std::string>{"RO1_rollout_scope"}) << "the content itself is the ground truth";

        Pair held = finished_then_extended("validated", 64, 0, 1 << 20, mode);
        EXPECT_TRUE(read_after_lookup(held.w, held.b).empty());
        EXPECT_EQ(held.w.requests[held.b].resume_len, 0u);
    }
    // Across requests the mode allows what the mutant does.
    Pair cross = finished_then_extended("validated", 64, 0, 1 << 20, Rollout::cross_request);
    EXPECT_TRUE(read_after_lookup(cross.w, cross.b).empty());
    EXPECT_GT(cross.w.requests[cross.b].resume_len, 0u);
}

// Proves the rollout scope's requests: the sampled answer forks into the first answer's reuse
// scope and resumes its prompt; the other request, which extends that prompt, finds nothing in its
// own scope's partition of the index under validated (no hit at all, as with salted cache keys)
// and resumes request 0's prompt under rollout-leak.
TEST(Rollout, TheRolloutScopeSharesThePromptOnlyAmongSampledAnswers) {
    const sim::Scope scope = sim::named_scope("rollout");
    ASSERT_EQ(scope.rollout, Rollout::intra_request);
    model::World w = sim::initial_world(scope, model::find_policy("validated")->defenses);
    EXPECT_EQ(w.requests[1].spec->reuse_scope, w.requests[0].spec->reuse_scope);
    EXPECT_NE(w.requests[2].spec->reuse_scope, w.requests[0].spec->reuse_scope);
    const model::LookupResult sample = lookup_step(w, 1);
    EXPECT_GT(sample.resume_len, 0u);
    const model::LookupResult other = lookup_step(w, 2);
    EXPECT_EQ(other.hash_hit_len, 0u);
    EXPECT_EQ(other.verdict, model::VerdictKind::full_recompute);
    EXPECT_TRUE(other.misses.empty());

    model::World leaky = sim::initial_world(scope, model::find_policy("rollout-leak")->defenses);
    EXPECT_GT(lookup_step(leaky, 2).resume_len, 0u);

    // A sampled answer keeps its own answer length (the fork copies the first's spec).
    sim::Scope longer = scope;
    longer.requests[1].output_tokens = 48;
    const model::World forked = sim::initial_world(longer, model::find_policy("validated")->defenses);
    EXPECT_EQ(forked.requests[1].spec->output_tokens, 48u);
    EXPECT_EQ(forked.requests[1].spec->reuse_scope, forked.requests[0].spec->reuse_scope);
}

// Proves validated violates nothing in any interleaving of the rollout scope (faults, evictions and
// offloads included), and that the mutant is caught there in a few steps.
TEST(Rollout, ValidatedIsCleanAtTheRolloutScope) {
    const sim::Scope scope = sim::named_scope("rollout");
    const sim::ExploreReport r = sim::explore(scope, model::find_policy("validated")->defenses, {});
    EXPECT_TRUE(r.exhausted) << r.bound_hit;
    EXPECT_FALSE(r.counterexample.has_value()) << sim::format_counterexample(*r.counterexample);
    EXPECT_EQ(r.stuck_states, 0u);
    EXPECT_GT(r.states, 1'000'000u);

    sim::ExploreOptions options;
    options.target = "RO1_rollout_scope";
    const sim::ExploreReport leak = sim::explore(scope, model::find_policy("rollout-leak")->defenses, options);
    ASSERT_TRUE(leak.counterexample.has_value());
    EXPECT_LE(leak.counterexample->steps.size(), 8u);
}

// Proves a sampled answer resumes its first answer's prompt under intra-request rollout where
// another request cached that prompt before, with extents too: the first answer does not see the
// other request's entries (another partition of the index), so it publishes its own, which the
// sample finds, and the other request's stay where they were.
TEST(Rollout, ASampleResumesItsFirstAnswersPromptWhereAnotherRequestCachedItFirst) {
    for (const std::uint32_t extent : {0u, 64u}) {
        SCOPED_TRACE(extent);
        model::World w = toy_world("validated", 1 << 20, Rollout::intra_request, extent);
        const std::uint32_t a = add(w, 1, ids(6), 96, 0);
        const std::shared_ptr<const model::RequestSpec> other = w.requests[a].spec;
        run_request(w, a);
        const auto first = std::make_shared<model::RequestSpec>(model::make_request_spec(2, ids(6), 16, 96, 16));
        const std::uint32_t other_entry = w.find(other->key(64), kC4, false, w.index_scope(*other));
        ASSERT_NE(other_entry, model::kNone);
        const std::uint32_t b = w.add_request(first);
        EXPECT_EQ(lookup_step(w, b).hash_hit_len, 0u);
        for (model::StepKind k : {model::StepKind::pin, model::StepKind::revalidate, model::StepKind::allocate,
                                  model::StepKind::read, model::StepKind::commit})
            ok(w, k, b);
        const std::uint32_t c = w.add_request(std::make_shared<model::RequestSpec>(model::sample_of(*first, 3, 1)));
        const model::LookupResult r = lookup_step(w, c);
        EXPECT_EQ(r.verdict, model::VerdictKind::resumable);
        EXPECT_EQ(r.resume_len, 64u);
        EXPECT_TRUE(r.misses.empty());
        ok(w, model::StepKind::pin, c);
        ok(w, model::StepKind::revalidate, c);
        ok(w, model::StepKind::allocate, c);
        EXPECT_TRUE(take(w, model::StepKind::read, c).violations.empty());
        for (const model::PlanEntry& e : w.requests[c].plan)
            if (e.segment != model::kNone) {
                EXPECT_EQ(w.owner_uid(w.segments[e.segment]), 2u);
            }
        EXPECT_EQ(w.find(other->key(64), kC4, false, w.index_scope(*other)), other_entry);
    }
}
