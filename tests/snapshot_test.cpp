// The explorer's frontier codec (model/snapshot.hpp): a World restored from its encoding is the
// same state and behaves the same from then on.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "model/core.hpp"
#include "model/driver.hpp"
#include "model/invariants.hpp"
#include "model/policy.hpp"
#include "model/snapshot.hpp"
#include "model/steps.hpp"
#include "sim/check/scope.hpp"

using namespace kvcheck;

namespace {

std::vector<std::byte> encoded(const model::StateCodec& codec, const model::World& w) {
    std::vector<std::byte> out(codec.encoded_size(w));
    codec.encode(w, out.data());
    return out;
}

std::vector<std::string> invariant_names(const model::World& w, const model::StepOutcome& outcome) {
    model::Driver driver;
    const std::vector<model::Violation>& violations = driver.check(w, outcome);
    std::vector<std::string> names;
    for (const model::Violation& v : violations) names.emplace_back(v.invariant);
    return names;
}

// What model::state_hash leaves out (epochs, accounting, reports): equal in equal states.
std::vector<std::uint64_t> unhashed(const model::World& w) {
    std::vector<std::uint64_t> v = {w.gpu_used_bytes, w.disk_used_bytes, w.live_segments, w.free_io_low};
    v.insert(v.end(), w.bytes_by_form.begin(), w.bytes_by_form.end());
    for (const model::Segment& s : w.segments) v.insert(v.end(), {s.epoch, s.lru_prev, s.lru_next, s.live});
    for (const model::Request& r : w.requests) {
        v.insert(v.end(), {r.hash_hit_len, static_cast<std::uint64_t>(r.verdict), r.config_epoch_at_lookup});
        for (const model::PlanEntry& p : r.plan) v.insert(v.end(), {p.epoch, p.start, p.end});
    }
    v.insert(v.end(), w.free_segment_ids.begin(), w.free_segment_ids.end());
    v.insert(v.end(), w.free_disk.begin(), w.free_disk.end());
    v.insert(v.end(), w.free_requests.begin(), w.free_requests.end());
    v.insert(v.end(), w.free_io.begin(), w.free_io.end());
    return v;
}

// Random walks over the reference scope (three faults and four background steps a walk), under validated and a
// mutant. After every step the walked World is encoded and restored into a World that holds the
// state of another walk (so a field the codec forgot keeps a wrong value there); the
// restored World must hash and re-encode the same, and the next step must do the same to both.
// (A field added to World or Request fails model/snapshot.cpp's size check at compile time.)
void walk_and_compare(const char* policy) {
    sim::Scope scope = sim::named_scope("reference");
    scope.max_faults = 3;
    scope.max_background = 4;
    const model::Defenses defenses = model::find_policy(policy)->defenses;
    // The walk's budgets, as the explorer keeps them, so that requests get far (loads included).
    struct Budget {
        std::uint8_t faults = 0;
        std::uint8_t background = 0;
        std::uint32_t kinds(const sim::Scope& s) const { return sim::allowed_kinds(s, faults, background); }
        void spend(model::StepKind kind) {
            faults = static_cast<std::uint8_t>(faults + (model::is_fault(kind) ? 1 : 0));
            background = static_cast<std::uint8_t>(background + (sim::is_background(kind) ? 1 : 0));
        }
    };
    std::size_t steps_compared = 0;
    for (std::uint64_t seed = 1; seed <= 400; ++seed) {
        model::World walked = sim::initial_world(scope, defenses);
        model::World other = walked;  // walks its own way: what `restored` holds before each decode
        model::World restored = walked;
        const model::StateCodec codec(walked);
        std::vector<std::byte> scratch;
        Rng rng(seed);
        Rng other_rng(seed + 1000);
        Budget budget, other_budget;
        std::vector<model::Step> steps;
        for (int depth = 0; depth < 80; ++depth) {
            model::enabled_steps(other, other_budget.kinds(scope), steps);
            if (!steps.empty()) {
                const model::Step step = steps[other_rng.below(steps.size())];
                model::apply(other, step);
                other_budget.spend(step.kind);
            }
            restored = other;
            scratch = encoded(codec, walked);
            ASSERT_EQ(codec.decode(scratch.data(), restored), scratch.data() + scratch.size());
            ASSERT_EQ(model::state_hash(restored), model::state_hash(walked))
                << policy << " seed " << seed << " depth " << depth;
            ASSERT_EQ(encoded(codec, restored), encoded(codec, walked))
                << policy << " seed " << seed << " depth " << depth;
            model::enabled_steps(walked, budget.kinds(scope), steps);
            if (steps.empty()) break;
            const model::Step step = steps[rng.below(steps.size())];
            budget.spend(step.kind);
            ASSERT_TRUE(model::enabled(restored, step));
            const model::StepOutcome a = model::apply(walked, step);
            const model::StepOutcome b = model::apply(restored, step);
            EXPECT_EQ(a.read_request, b.read_request);
            EXPECT_EQ(a.evicted, b.evicted);
            EXPECT_EQ(a.io_started, b.io_started);
            EXPECT_EQ(a.tokens_computed, b.tokens_computed);
            EXPECT_EQ(a.admission_refused, b.admission_refused);
            // Bytes can differ now (rows' padding), so compare what the state hash leaves out too.
            ASSERT_EQ(model::state_hash(restored), model::state_hash(walked))
                << policy << " seed " << seed << " depth " << depth;
            EXPECT_EQ(unhashed(restored), unhashed(walked)) << policy << " seed " << seed << " depth " << depth;
            EXPECT_EQ(invariant_names(restored, b), invariant_names(walked, a));
            ++steps_compared;
        }
    }
    EXPECT_GT(steps_compared, 1000u);
}

}  // namespace

// Proves encode/decode keeps every field that steers the model, under the safe policy.
TEST(StateCodec, RestoredWorldBehavesAsTheOriginal) { walk_and_compare("validated"); }

// Proves the same where a mutant lets invariants break, so violating states round-trip too.
TEST(StateCodec, RestoredWorldBehavesAsTheOriginalUnderAMutant) { walk_and_compare("no-revalidate"); }
