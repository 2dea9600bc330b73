// Shared by the model's unit tests (tests/model_test.cpp, tests/model_rules_test.cpp): small toy
// worlds, requests over shared content blocks, and steps applied with every invariant checked.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "model/core.hpp"
#include "model/driver.hpp"
#include "model/invariants.hpp"
#include "model/match.hpp"
#include "model/policy.hpp"
#include "model/preset.hpp"
#include "model/steps.hpp"
#include "model/world.hpp"

namespace kvcheck::model::fixtures {

// The toy preset's groups, in preset order.
constexpr std::uint8_t kC1 = 0;       // full, 16-token blocks and segments
constexpr std::uint8_t kC4 = 1;       // full, 4x compressed, 64-token segments, 16-token tail blocks
constexpr std::uint8_t kSwa = 2;      // sliding window of 32 tokens, 16-token blocks
constexpr std::uint8_t kIndexer = 3;  // indexer over c1
constexpr std::uint8_t kLinear = 4;   // linear state, 32-token checkpoints

inline World toy_world(std::string_view policy = "validated", std::uint64_t budget_bytes = 1 << 20,
                       Rollout rollout = Rollout::cross_request, std::uint32_t extent_tokens = 0) {
    const PolicyInfo* info = find_policy(policy);
    EXPECT_NE(info, nullptr) << policy;
    Limits limits;
    limits.gpu_budget_bytes = budget_bytes;
    limits.extent_tokens = extent_tokens;
    return World(std::make_shared<ModelConfig>(*find_preset("toy")), info->defenses, limits, rollout);
}

// Content block ids 1..count: requests built from these share their common prefix.
inline std::vector<std::uint64_t> ids(std::uint64_t count) {
    std::vector<std::uint64_t> out;
    for (std::uint64_t i = 1; i <= count; ++i) out.push_back(i);
    return out;
}

inline std::uint32_t add(World& w, std::uint32_t uid, const std::vector<std::uint64_t>& block_ids, std::uint32_t input,
                         std::uint32_t output) {
    return w.add_request(std::make_shared<RequestSpec>(make_request_spec(uid, block_ids, 16, input, output)));
}

struct Taken {
    StepOutcome outcome;
    std::vector<Violation> violations;
    bool applied = false;
};

// Applies one step (which must be enabled) and checks every invariant, structural ones included.
inline Taken take(World& w, StepKind kind, std::uint32_t target, std::uint32_t arg = 0) {
    Taken t;
    const Step s{kind, target, arg};
    if (!enabled(w, s)) {
        ADD_FAILURE() << "step not enabled: " << describe(w, s);
        return t;
    }
    Driver driver;
    t.outcome = driver.apply(w, s);
    t.applied = true;
    t.violations = driver.check(w, t.outcome);
    return t;
}

// Applies one step that must hold every invariant.
inline StepOutcome ok(World& w, StepKind kind, std::uint32_t target, std::uint32_t arg = 0) {
    const std::string what = describe(w, {kind, target, arg});
    Taken t = take(w, kind, target, arg);
    for (const Violation& v : t.violations) ADD_FAILURE() << v.invariant << ": " << v.message << " after " << what;
    return t.outcome;
}

inline std::set<std::string> names(const std::vector<Violation>& violations) {
    std::set<std::string> out;
    for (const Violation& v : violations) out.insert(v.invariant);
    return out;
}

// Lookup through commit, every step clean.
inline void prefill(World& w, std::uint32_t r) {
    for (StepKind k :
         {StepKind::lookup, StepKind::pin, StepKind::revalidate, StepKind::allocate, StepKind::read, StepKind::commit})
        ok(w, k, r);
}

inline void run_request(World& w, std::uint32_t r) {
    prefill(w, r);
    while (enabled(w, {StepKind::decode, r, 0})) ok(w, StepKind::decode, r);
    ok(w, StepKind::finish, r);
}

// The live segment of `group` covering [start, end) (a tail block when `tail`), or kNone.
inline std::uint32_t seg(const World& w, std::uint8_t group, std::uint32_t start, std::uint32_t end,
                         bool tail = false) {
    for (std::uint32_t id = 0; id < w.segments.size(); ++id) {
        const Segment& s = w.segments[id];
        if (s.live && s.group == group && w.start_of(s) == start && s.end == end && s.is_tail == tail) return id;
    }
    return kNone;
}

inline std::size_t live_count(const World& w, std::uint8_t group, bool tail) {
    return static_cast<std::size_t>(std::count_if(w.segments.begin(), w.segments.end(), [&](const Segment& s) {
        return s.live && s.group == group && s.is_tail == tail;
    }));
}

inline bool has_miss(const LookupResult& r, std::uint8_t group, MissReason reason) {
    return std::any_of(r.misses.begin(), r.misses.end(),
                       [&](const Miss& m) { return m.group == group && m.reason == reason; });
}

inline bool has_miss(const LookupResult& r, std::uint8_t group, Form form, MissReason reason) {
    return std::any_of(r.misses.begin(), r.misses.end(),
                       [&](const Miss& m) { return m.group == group && m.form == form && m.reason == reason; });
}

inline bool plan_reads(const Request& q, std::uint32_t segment) {
    return std::any_of(q.plan.begin(), q.plan.end(), [&](const PlanEntry& e) { return e.segment == segment; });
}

inline LookupResult lookup_step(World& w, std::uint32_t r) {
    const StepOutcome o = ok(w, StepKind::lookup, r);
    EXPECT_TRUE(o.lookup.has_value());
    return o.lookup.value_or(LookupResult{});
}

// The I/O ops a step started, as step targets.
inline std::vector<std::uint32_t> io_of(const StepOutcome& o) { return o.io_started; }

// Two requests: `a` (ids 1..a_blocks) has run to completion; `b` extends it by one block.
struct Pair {
    World w;
    std::uint32_t a;
    std::uint32_t b;
};

inline Pair finished_then_extended(std::string_view policy, std::uint32_t a_tokens, std::uint32_t a_output = 0,
                                   std::uint64_t budget_bytes = 1 << 20, Rollout rollout = Rollout::cross_request) {
    Pair p{toy_world(policy, budget_bytes, rollout), 0, 0};
    p.a = add(p.w, 1, ids(a_tokens / 16), a_tokens, a_output);
    run_request(p.w, p.a);
    p.b = add(p.w, 2, ids(a_tokens / 16 + 1), a_tokens + 16, 0);
    return p;
}

}  // namespace kvcheck::model::fixtures
