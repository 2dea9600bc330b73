// Random walks and swarm testing: verdicts depend only on the seeds, not on threads or shards.
#include <gtest/gtest.h>

#include "model/preset.hpp"
#include "sim/check/walker.hpp"

using namespace kvcheck;

namespace {

sim::FuzzReport run(const std::string& policy, std::uint32_t threads, std::uint32_t shard, std::uint32_t shards,
                    bool keep_going, std::uint64_t seed = 7) {
    sim::FuzzOptions o;
    o.policy = policy;
    o.seed = seed;
    o.walks = 2000;
    o.threads = threads;
    o.shard_index = shard;
    o.shard_count = shards;
    o.stop_at_first = !keep_going;
    return sim::fuzz(o);
}

std::vector<std::pair<std::uint64_t, std::string>> verdicts(const sim::FuzzReport& r) {
    std::vector<std::pair<std::uint64_t, std::string>> out;
    for (const sim::FoundViolation& v : r.violations) out.emplace_back(v.walk, v.invariant);
    return out;
}

}  // namespace

// Proves validated survives swarm walks with every actor and fault.
TEST(Fuzz, ValidatedSurvivesSwarmWalks) {
    const sim::FuzzReport r = run("validated", 2, 0, 1, true);
    EXPECT_EQ(r.walks, 2000u);
    EXPECT_TRUE(r.violations.empty()) << sim::format_counterexample(r.violations.front().counterexample);
}

// Proves --threads 1 and --threads 2 give the same verdicts over the same seeds.
TEST(Fuzz, ThreadCountDoesNotChangeVerdicts) {
    const sim::FuzzReport one = run("no-pin", 1, 0, 1, true);
    const sim::FuzzReport two = run("no-pin", 2, 0, 1, true);
    ASSERT_FALSE(one.violations.empty()) << "no-pin must be caught by swarm walks";
    EXPECT_EQ(verdicts(one), verdicts(two));
}

// Proves shards partition the walks and merge back to the single-process result.
TEST(Fuzz, ShardsMergeToTheWholeRun) {
    const sim::FuzzReport whole = run("no-pin", 1, 0, 1, true);
    std::vector<sim::FuzzResultFile> shards;
    for (std::uint32_t i = 0; i < 2; ++i) {
        sim::FuzzOptions o;
        o.policy = "no-pin";
        o.seed = 7;
        o.walks = 1000;
        o.shard_index = i;
        o.shard_count = 2;
        o.stop_at_first = false;
        shards.push_back({"shard" + std::to_string(i), sim::fuzz_json(sim::fuzz(o))});
    }
    const nlohmann::json merged = sim::merge_fuzz_json(shards);
    EXPECT_EQ(merged["walks"].get<std::uint64_t>(), whole.walks);
    std::vector<std::uint64_t> walks;
    for (const auto& v : merged["violations"]) walks.push_back(v["walk"].get<std::uint64_t>());
    std::vector<std::uint64_t> expected;
    for (const auto& v : whole.violations) expected.push_back(v.walk);
    EXPECT_EQ(walks, expected);
    EXPECT_EQ(sim::merge_fuzz_json({shards[1], shards[0]}).dump(), merged.dump()) << "merge order must not matter";
}

// Proves stop-at-first reports the lowest violating walk whatever the thread count, and counts
// the walks up to it alone: walks, steps and next walk, where the walks a second thread finished
// past the violation used to count (no-pin's first violation is at walk 250, and two threads
// reported 251 to 280 walks from run to run).
TEST(Fuzz, StopAtFirstIsDeterministic) {
    for (const auto& [policy, seed] : {std::pair{"shared-freelist", 7}, std::pair{"no-pin", 1}}) {
        SCOPED_TRACE(policy);
        const sim::FuzzReport one = run(policy, 1, 0, 1, false, seed);
        ASSERT_EQ(one.violations.size(), 1u);
        EXPECT_EQ(one.walks, one.violations[0].walk + 1);
        EXPECT_EQ(one.next_walk, one.walks);
        for (int again = 0; again < 3; ++again) {
            const sim::FuzzReport two = run(policy, 2, 0, 1, false, seed);
            ASSERT_EQ(two.violations.size(), 1u);
            EXPECT_EQ(one.violations[0].walk, two.violations[0].walk);
            EXPECT_EQ(one.violations[0].counterexample.steps, two.violations[0].counterexample.steps);
            EXPECT_EQ(sim::fuzz_json(two).dump(), sim::fuzz_json(one).dump()) << "fuzz.json is the same bytes";
        }
    }
}

// Proves: `--model PRESET` draws swarm scopes with that preset's groups and blocks, validated
// survives them on every preset, a mutant whose form the preset has is caught (no-swa-expiry on
// gemma3-27b), and the verdicts still do not depend on the thread count.
TEST(Fuzz, PresetSwarmScopesKeepValidatedCleanAndCatchMutants) {
    for (const model::ModelConfig& preset : model::presets()) {
        SCOPED_TRACE(preset.name);
        const sim::Scope scope = sim::swarm_scope(7, 3, preset.name);
        EXPECT_EQ(scope.model.groups.size(), preset.groups.size());
        const std::uint32_t lcm = model::derive(preset).lcm_tokens;
        for (const sim::RequestTemplate& r : scope.requests) EXPECT_EQ(r.input_tokens % scope.content_block_tokens, 0u);
        if (preset.name != "toy") {
            EXPECT_GE(scope.content_block_tokens * 2, lcm);
        }
        sim::FuzzOptions o;
        o.model = preset.name;
        o.seed = 7;
        o.walks = 1000;
        o.threads = 2;
        o.stop_at_first = false;
        const sim::FuzzReport r = sim::fuzz(o);
        EXPECT_EQ(r.walks, 1000u);
        EXPECT_TRUE(r.violations.empty()) << sim::format_counterexample(r.violations.front().counterexample);
    }
    const auto mutant = [](std::uint32_t threads) {
        sim::FuzzOptions o;
        o.model = "gemma3-27b";
        o.policy = "no-swa-expiry";
        o.seed = 1;
        o.walks = 3000;
        o.threads = threads;
        return sim::fuzz(o);
    };
    const sim::FuzzReport one = mutant(1);
    ASSERT_EQ(one.violations.size(), 1u) << "no-swa-expiry must be caught on gemma3-27b's swarm scopes";
    EXPECT_EQ(verdicts(one), verdicts(mutant(2)));
    EXPECT_EQ(one.violations[0].scope.model.name, "gemma3-27b");
}

// Proves: the toy swarm scopes are those of the reference scope's blocks and budgets, so that a
// campaign without --model walks as it did before presets could be drawn.
TEST(Fuzz, ToySwarmScopeKeepsSixteenTokenBlocks) {
    for (std::uint64_t walk = 0; walk < 50; ++walk) {
        const sim::Scope s = sim::swarm_scope(1, walk);
        EXPECT_EQ(s.content_block_tokens, 16u);
        EXPECT_EQ(s.model.name, "toy");
        EXPECT_GE(s.limits.gpu_budget_bytes, 20'000u);
        EXPECT_LT(s.limits.gpu_budget_bytes, 200'000u);
        EXPECT_TRUE(s.limits.extent_tokens == 0 || s.limits.extent_tokens == 64 || s.limits.extent_tokens == 128);
    }
}
