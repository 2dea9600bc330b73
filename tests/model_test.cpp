// Unit tests of the cache-manager model (model/): each form's lifecycle, the four validation
// layers, the four red lines, rollout modes, the four verdicts, config checks, state hashing and
// the mutant table (the prefix index has tests/flat_index_test.cpp). Each test drives a small World
// through explicit steps and checks every invariant (structural checks on) after every step it
// expects to be clean.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/core.hpp"
#include "model/invariants.hpp"
#include "model/match.hpp"
#include "model/policy.hpp"
#include "model/preset.hpp"
#include "model/steps.hpp"
#include "model/world.hpp"

using namespace kvcheck::model;

namespace {

// The toy preset's groups, in preset order.
constexpr std::uint8_t kC1 = 0;       // full, 16-token blocks and segments
constexpr std::uint8_t kC4 = 1;       // full, 4x compressed, 64-token segments, 16-token tail blocks
constexpr std::uint8_t kSwa = 2;      // sliding window of 32 tokens, 16-token blocks
constexpr std::uint8_t kIndexer = 3;  // indexer over c1
constexpr std::uint8_t kLinear = 4;   // linear state, 32-token checkpoints

World toy_world(std::string_view policy = "validated", std::uint64_t budget_bytes = 1 << 20,
                Rollout rollout = Rollout::cross_request) {
    const PolicyInfo* info = find_policy(policy);
    EXPECT_NE(info, nullptr) << policy;
    Limits limits;
    limits.gpu_budget_bytes = budget_bytes;
    return World(std::make_shared<ModelConfig>(*find_preset("toy")), info->defenses, limits, rollout);
}

// Content block ids 1..count: requests built from these share their common prefix.
std::vector<std::uint64_t> ids(std::uint64_t count) {
    std::vector<std::uint64_t> out;
    for (std::uint64_t i = 1; i <= count; ++i) out.push_back(i);
    return out;
}

std::uint32_t add(World& w, std::uint32_t uid, const std::vector<std::uint64_t>& block_ids, std::uint32_t input,
                  std::uint32_t output) {
    return w.add_request(std::make_shared<RequestSpec>(make_request_spec(uid, block_ids, 16, input, output)));
}

struct Taken {
    StepOutcome outcome;
    std::vector<Violation> violations;
    bool applied = false;
};

// Applies one step (which must be enabled) and checks every invariant, structural ones included.
Taken take(World& w, StepKind kind, std::uint32_t target, std::uint32_t arg = 0) {
    Taken t;
    const Step s{kind, target, arg};
    if (!enabled(w, s)) {
        ADD_FAILURE() << "step not enabled: " << describe(w, s);
        return t;
    }
    t.outcome = apply(w, s);
    t.applied = true;
    check_invariants(w, t.outcome, true, t.violations);
    return t;
}

// Applies one step that must hold every invariant.
StepOutcome ok(World& w, StepKind kind, std::uint32_t target, std::uint32_t arg = 0) {
    const std::string what = describe(w, {kind, target, arg});
    Taken t = take(w, kind, target, arg);
    for (const Violation& v : t.violations) ADD_FAILURE() << v.invariant << ": " << v.message << " after " << what;
    return t.outcome;
}

std::set<std::string> names(const std::vector<Violation>& violations) {
    std::set<std::string> out;
    for (const Violation& v : violations) out.insert(v.invariant);
    return out;
}

// Lookup through commit, every step clean.
void prefill(World& w, std::uint32_t r) {
    for (StepKind k : {StepKind::lookup, StepKind::pin, StepKind::revalidate, StepKind::allocate, StepKind::read,
                       StepKind::commit})
        ok(w, k, r);
}

void run_request(World& w, std::uint32_t r) {
    prefill(w, r);
    while (enabled(w, {StepKind::decode, r, 0})) ok(w, StepKind::decode, r);
    ok(w, StepKind::finish, r);
}

// The live segment of `group` covering [start, end) (a tail block when `tail`), or kNone.
std::uint32_t seg(const World& w, std::uint8_t group, std::uint32_t start, std::uint32_t end, bool tail = false) {
    for (std::uint32_t id = 0; id < w.segments.size(); ++id) {
        const Segment& s = w.segments[id];
        if (s.live && s.group == group && w.start_of(s) == start && s.end == end && s.is_tail == tail) return id;
    }
    return kNone;
}

std::size_t live_count(const World& w, std::uint8_t group, bool tail) {
    return static_cast<std::size_t>(std::count_if(w.segments.begin(), w.segments.end(), [&](const Segment& s) {
        return s.live && s.group == group && s.is_tail == tail;
    }));
}

bool has_miss(const LookupResult& r, std::uint8_t group, MissReason reason) {
    return std::any_of(r.misses.begin(), r.misses.end(), [&](const Miss& m) { return m.group == group && m.reason == reason; });
}

bool plan_reads(const Request& q, std::uint32_t segment) {
    return std::any_of(q.plan.begin(), q.plan.end(), [&](const PlanEntry& e) { return e.segment == segment; });
}

LookupResult lookup_step(World& w, std::uint32_t r) {
    const StepOutcome o = ok(w, StepKind::lookup, r);
    EXPECT_TRUE(o.lookup.has_value());
    return o.lookup.value_or(LookupResult{});
}

// The I/O ops a step started, as step targets.
std::vector<std::uint32_t> io_of(const StepOutcome& o) { return o.io_started; }

// Two requests: `a` (ids 1..a_blocks) has run to completion; `b` extends it by one block.
struct Pair {
    World w;
    std::uint32_t a;
    std::uint32_t b;
};

Pair finished_then_extended(std::string_view policy, std::uint32_t a_tokens, std::uint32_t a_output = 0,
                            std::uint64_t budget_bytes = 1 << 20, Rollout rollout = Rollout::cross_request) {
    Pair p{toy_world(policy, budget_bytes, rollout), 0, 0};
    p.a = add(p.w, 1, ids(a_tokens / 16), a_tokens, a_output);
    run_request(p.w, p.a);
    p.b = add(p.w, 2, ids(a_tokens / 16 + 1), a_tokens + 16, 0);
    return p;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The forms
// ---------------------------------------------------------------------------------------------

// A compressed segment is allocated in stage writing (unpublished), becomes ready and published
// with ground-truth content at commit, and eviction frees it and its slot back to its own pool.
TEST(CompressedSegment, AllocateWriteReadyEvict) {
    World w = toy_world();
    const std::uint32_t a = add(w, 1, ids(4), 64, 0);
    for (StepKind k : {StepKind::lookup, StepKind::pin, StepKind::revalidate, StepKind::allocate}) ok(w, k, a);
    const std::uint32_t id = seg(w, kC4, 0, 64);
    ASSERT_NE(id, kNone);
    EXPECT_EQ(w.segments[id].form, Form::compressed_kv);
    EXPECT_EQ(w.segments[id].stage, Stage::writing);
    EXPECT_FALSE(w.segments[id].published);
    EXPECT_EQ(w.find(w.requests[a].spec->key(64), kC4, false), kNone) << "a segment being written is not yet in the index";
    ok(w, StepKind::read, a);
    ok(w, StepKind::commit, a);
    EXPECT_EQ(w.segments[id].stage, Stage::ready);
    EXPECT_TRUE(w.segments[id].published);
    EXPECT_EQ(w.find(w.requests[a].spec->key(64), kC4, false), id);
    const std::uint32_t slot = w.segments[id].slot;
    EXPECT_EQ(w.slots[slot].content, truth_tag(w, *w.requests[a].spec, kC4, 0, 64));
    EXPECT_FALSE(enabled(w, {StepKind::evict, id, 0})) << "the writer's pin keeps the segment resident";
    ok(w, StepKind::finish, a);
    ok(w, StepKind::evict, id);
    EXPECT_FALSE(w.segments[id].live);
    EXPECT_EQ(w.segments[id].stage, Stage::freed);
    EXPECT_EQ(w.find(w.requests[a].spec->key(64), kC4, false), kNone);
    const auto& pool = w.free_slots[static_cast<int>(Form::compressed_kv)];
    EXPECT_NE(std::find(pool.begin(), pool.end(), slot), pool.end());
    EXPECT_EQ(w.slots[slot].label, kNoLabel);
}

// F1: an eviction interrupted half-way leaves the segment non-whole; validated refuses it with
// partial_segment, and the partial-segment-ok mutant reads it and breaks FM1.
TEST(CompressedSegment, InterruptedEvictionIsRefusedAsPartial) {
    for (const char* policy : {"validated", "partial-segment-ok"}) {
        SCOPED_TRACE(policy);
        Pair p = finished_then_extended(policy, 64);
        const std::uint32_t id = seg(p.w, kC4, 0, 64);
        ok(p.w, StepKind::interrupt_eviction, id);
        EXPECT_FALSE(p.w.segments[id].whole);
        EXPECT_EQ(p.w.segments[id].stage, Stage::evicting);
        const LookupResult r = lookup_step(p.w, p.b);
        if (std::string_view(policy) == "validated") {
            EXPECT_TRUE(has_miss(r, kC4, MissReason::partial_segment));
            EXPECT_EQ(r.verdict, VerdictKind::full_recompute);
            EXPECT_FALSE(plan_reads(p.w.requests[p.b], id));
            for (StepKind k : {StepKind::pin, StepKind::revalidate, StepKind::allocate, StepKind::read}) ok(p.w, k, p.b);
        } else {
            EXPECT_EQ(r.resume_len, 64u);
            for (StepKind k : {StepKind::pin, StepKind::revalidate, StepKind::allocate}) ok(p.w, k, p.b);
            EXPECT_TRUE(names(take(p.w, StepKind::read, p.b).violations).count("FM1_segment_whole"));
        }
    }
}

// F11: losing one block of a compressed segment makes it non-whole; validated refuses it.
TEST(CompressedSegment, LostBlockIsRefusedAsPartial) {
    Pair p = finished_then_extended("validated", 64);
    const std::uint32_t id = seg(p.w, kC4, 0, 64);
    ok(p.w, StepKind::lose_block, id);
    EXPECT_FALSE(p.w.segments[id].whole);
    EXPECT_EQ(p.w.segments[id].stage, Stage::ready);
    const LookupResult r = lookup_step(p.w, p.b);
    EXPECT_TRUE(has_miss(r, kC4, MissReason::partial_segment));
    EXPECT_EQ(r.resume_len, 0u);
    EXPECT_FALSE(plan_reads(p.w.requests[p.b], id));
}

// Tail blocks past the last whole segment are anchored at the compression boundary, and a resume
// inside the segment reads the whole segment plus exactly those tail blocks.
TEST(UncompressedTail, AnchoredAtCompressionBoundary) {
    Pair p = finished_then_extended("validated", 96);
    ASSERT_NE(seg(p.w, kC4, 0, 64), kNone);
    for (std::uint32_t start : {64u, 80u}) {
        const std::uint32_t id = seg(p.w, kC4, start, start + 16, true);
        ASSERT_NE(id, kNone) << start;
        EXPECT_EQ(p.w.segments[id].form, Form::uncompressed_tail);
        EXPECT_EQ(p.w.anchor_of(p.w.segments[id]), 64u);
    }
    EXPECT_EQ(seg(p.w, kC4, 0, 16, true), kNone) << "no tail blocks inside a whole segment";
    const LookupResult r = lookup_step(p.w, p.b);
    EXPECT_EQ(r.verdict, VerdictKind::resumable);
    EXPECT_EQ(r.resume_len, 96u);
    std::vector<std::uint32_t> tail_starts;
    for (const PlanEntry& e : r.plan)
        if (e.form == Form::uncompressed_tail) tail_starts.push_back(e.start);
    EXPECT_EQ(tail_starts, (std::vector<std::uint32_t>{64, 80}));
    for (StepKind k : {StepKind::pin, StepKind::revalidate, StepKind::allocate, StepKind::read}) ok(p.w, k, p.b);
}

// A tail block without a whole segment before it cannot be resumed: losing the segment under
// the tail drops the group's reach to 0 under validated; no-tail-boundary reads the tail anyway.
TEST(UncompressedTail, TailWithoutItsSegmentIsRefused) {
    for (const char* policy : {"validated", "no-tail-boundary"}) {
        SCOPED_TRACE(policy);
        Pair p = finished_then_extended(policy, 96);
        ok(p.w, StepKind::evict, seg(p.w, kC4, 0, 64));
        const LookupResult r = lookup_step(p.w, p.b);
        for (StepKind k : {StepKind::pin, StepKind::revalidate, StepKind::allocate}) ok(p.w, k, p.b);
        if (std::string_view(policy) == "validated") {
            EXPECT_EQ(r.resume_len, 0u);
            EXPECT_TRUE(has_miss(r, kC4, MissReason::not_cached));
            ok(p.w, StepKind::read, p.b);
        } else {
            EXPECT_EQ(r.resume_len, 96u);
            EXPECT_TRUE(names(take(p.w, StepKind::read, p.b).violations).count("FM2_tail_boundary"));
        }
    }
}

// The rolling tail: decode adds tail blocks at the current boundary, and when decode crosses a
// segment boundary the new compressed segment replaces them and the request frees its own tails;
// the tails were under the decode graph, so the graph is taken down and recaptured (RL4 holds).
TEST(UncompressedTail, RollingTailFreedWhenDecodeCrossesSegmentBoundary) {
    World w = toy_world();
    const std::uint32_t a = add(w, 1, ids(6), 96, 32);
    prefill(w, a);
    EXPECT_EQ(live_count(w, kC4, true), 2u);
    const std::uint32_t folded = seg(w, kC4, 64, 80, true);
    ASSERT_TRUE(w.graphs[a].live);
    EXPECT_GT(w.segments[folded].graph_refs, 0u) << "the prompt's tail is part of the captured working set";
    ok(w, StepKind::decode, a);  // 96 -> 112: one more tail block at boundary 64
    EXPECT_EQ(w.requests[a].pos, 112u);
    EXPECT_EQ(live_count(w, kC4, true), 3u);
    const std::uint32_t newest = seg(w, kC4, 96, 112, true);
    ASSERT_NE(newest, kNone);
    EXPECT_EQ(w.anchor_of(w.segments[newest]), 64u);
    const StepOutcome fold = ok(w, StepKind::decode, a);  // 112 -> 128: the segment [64,128) is compressed
    EXPECT_EQ(fold.recaptures, 1u);
    EXPECT_EQ(w.requests[a].pos, 128u);
    EXPECT_NE(seg(w, kC4, 64, 128), kNone);
    EXPECT_EQ(live_count(w, kC4, true), 0u) << "the rolling tail is freed once folded into a segment";
    ok(w, StepKind::finish, a);
}

// SWA: blocks that slide out of the window are released (unpinned, evictable) at commit and on
// decode, while the window's blocks stay pinned.
TEST(SwaWindow, BlocksSlidingOutOfTheWindowAreReleased) {
    World w = toy_world();
    const std::uint32_t a = add(w, 1, ids(6), 96, 32);
    prefill(w, a);  // pos 96: window [64,96)
    for (std::uint32_t start = 0; start < 96; start += 16) {
        const std::uint32_t id = seg(w, kSwa, start, start + 16);
        ASSERT_NE(id, kNone);
        const bool in_window = start >= 64;
        EXPECT_EQ(w.segments[id].pins, in_window ? 1u : 0u) << start;
        EXPECT_EQ(enabled(w, {StepKind::evict, id, 0}), !in_window) << start;
    }
    ok(w, StepKind::decode, a);  // pos 112: [64,80) slides out
    EXPECT_EQ(w.segments[seg(w, kSwa, 64, 80)].pins, 0u);
    EXPECT_EQ(w.segments[seg(w, kSwa, 80, 96)].pins, 1u);
    EXPECT_EQ(w.segments[seg(w, kSwa, 96, 112)].pins, 1u);
}

// Window blocks that no resume can read are released by their writer when it lets go of them,
// and never published (docs/invariants.md, "Model decisions"). DeepSeek-V4 resumes on a 256-token
// grain with a 128-token window of 64-token blocks, so only the blocks ending at 192 and 256 of
// every 256 can be read; the others go at the slide, and a later request still resumes in full.
// A policy that resumes on the 64-token block grain (no-lcm) may read every block: none goes.
TEST(SwaWindow, BlocksNoResumeReadsAreReleasedAtTheSlide) {
    constexpr std::uint8_t kDsSwa = 2;  // deepseek-v4: c4, c128, swa, indexer
    for (const std::string_view policy : {"validated", "no-lcm"}) {
        Limits limits;
        limits.gpu_budget_bytes = 1ULL << 30;
        World w(std::make_shared<ModelConfig>(*find_preset("deepseek-v4")), find_policy(policy)->defenses, limits,
                Rollout::cross_request);
        run_request(w, add(w, 1, ids(64), 1024, 0));
        for (std::uint32_t end = 64; end <= 1024; end += 64) {
            const std::uint32_t id = seg(w, kDsSwa, end - 64, end);
            const bool readable = policy == "no-lcm" || end % 256 == 0 || end % 256 == 192;
            EXPECT_EQ(id != kNone, readable) << policy << " block ending at " << end;
            if (id != kNone) {
                EXPECT_TRUE(w.segments[id].published) << policy << " block ending at " << end;
            }
        }
        const std::uint32_t b = add(w, 2, ids(64), 1024, 0);
        const StepOutcome looked = ok(w, StepKind::lookup, b);
        ASSERT_TRUE(looked.lookup.has_value());
        EXPECT_EQ(looked.lookup->verdict, VerdictKind::resumable) << policy;
        EXPECT_EQ(looked.lookup->resume_len, 768u) << policy;  // the c4 hash hit stops there for both
    }
}

// A lookup needs the whole window [L-W, L) live now: losing a block outside the window changes
// nothing, losing one inside it lowers the resume point (window_expired); the no-swa-expiry
// mutant takes "was once valid" for "valid now" and breaks FM3.
TEST(SwaWindow, LookupNeedsTheWholeWindowLiveNow) {
    {
        Pair p = finished_then_extended("validated", 96);
        ok(p.w, StepKind::evict, seg(p.w, kSwa, 0, 16));  // outside [64,96)
        EXPECT_EQ(lookup_step(p.w, p.b).resume_len, 96u);
    }
    {
        Pair p = finished_then_extended("validated", 96);
        ok(p.w, StepKind::evict, seg(p.w, kSwa, 64, 80));
        const LookupResult r = lookup_step(p.w, p.b);
        EXPECT_TRUE(has_miss(r, kSwa, MissReason::window_expired));
        EXPECT_EQ(r.verdict, VerdictKind::partial_recompute);
        EXPECT_EQ(r.resume_len, 64u);
        for (StepKind k : {StepKind::pin, StepKind::revalidate, StepKind::allocate, StepKind::read}) ok(p.w, k, p.b);
    }
    {
        Pair p = finished_then_extended("no-swa-expiry", 96);
        ok(p.w, StepKind::evict, seg(p.w, kSwa, 64, 80));
        EXPECT_EQ(lookup_step(p.w, p.b).resume_len, 96u);
        for (StepKind k : {StepKind::pin, StepKind::revalidate, StepKind::allocate}) ok(p.w, k, p.b);
        EXPECT_TRUE(names(take(p.w, StepKind::read, p.b).violations).count("FM3_swa_window"));
    }
}

// Indexer state: an index left over from another KV version (F3) is refused with index_stale;
// the no-index-version mutant reads it and breaks FM4.
TEST(IndexerState, SkewedIndexIsReportedStale) {
    for (const char* policy : {"validated", "no-index-version"}) {
        SCOPED_TRACE(policy);
        Pair p = finished_then_extended(policy, 64);
        const std::uint32_t id = seg(p.w, kIndexer, 32, 48);
        ok(p.w, StepKind::skew_index, id);
        const LookupResult r = lookup_step(p.w, p.b);
        for (StepKind k : {StepKind::pin, StepKind::revalidate, StepKind::allocate}) ok(p.w, k, p.b);
        if (std::string_view(policy) == "validated") {
            EXPECT_TRUE(has_miss(r, kIndexer, MissReason::index_stale));
            EXPECT_LT(r.resume_len, 48u);
            ok(p.w, StepKind::read, p.b);
        } else {
            EXPECT_EQ(r.resume_len, 64u);
            EXPECT_TRUE(names(take(p.w, StepKind::read, p.b).violations).count("FM4_index_version"));
        }
    }
}

// Regression (found by the RapidCheck property): a request recomputes a KV block another request
// cached, publishing its copy unpublishes the original, and admission then evicts the copy. The
// reader still holds the original, so FM4 must judge the index against the KV the read takes,
// not against the (now empty) prefix index: the read is clean.
TEST(IndexerState, IndexJudgedAgainstTheKvTheReadTakes) {
    World w = toy_world("validated", 29'184);
    const std::uint32_t r0 = add(w, 0, {1000, 1001, 1002}, 48, 0);
    const std::uint32_t r1 = add(w, 1, {1000, 2001, 2002}, 48, 24);
    const std::uint32_t r2 = add(w, 2, {1000, 1001}, 32, 0);
    for (auto [kind, r] : std::vector<std::pair<StepKind, std::uint32_t>>{
             {StepKind::lookup, r1}, {StepKind::pin, r1}, {StepKind::lookup, r2}, {StepKind::pin, r2},
             {StepKind::revalidate, r2}, {StepKind::allocate, r2}, {StepKind::read, r2}, {StepKind::commit, r2},
             {StepKind::lookup, r0}, {StepKind::revalidate, r1}, {StepKind::pin, r0}, {StepKind::finish, r2},
             {StepKind::allocate, r1}, {StepKind::read, r1}, {StepKind::commit, r1}})
        ok(w, kind, r);
    std::uint32_t swa_of_r1 = kNone;
    for (std::uint32_t id = 0; id < w.segments.size(); ++id)
        if (w.segments[id].live && w.segments[id].group == kSwa && w.start_of(w.segments[id]) == 0 && w.segments[id].owner == 1) swa_of_r1 = id;
    ASSERT_NE(swa_of_r1, kNone);
    ok(w, StepKind::offload, swa_of_r1);
    for (StepKind k : {StepKind::decode, StepKind::decode, StepKind::finish}) ok(w, k, r1);
    ok(w, StepKind::revalidate, r0);
    ok(w, StepKind::allocate, r0);
    const std::uint64_t key = w.requests[r0].spec->key(16);
    ASSERT_EQ(w.find(key, kC1, false), kNone) << "the situation: no c1 block for [0,16) is published";
    const auto kv = std::find_if(w.requests[r0].plan.begin(), w.requests[r0].plan.end(),
                                 [](const PlanEntry& e) { return e.group == kC1 && e.start == 0; });
    ASSERT_NE(kv, w.requests[r0].plan.end());
    EXPECT_TRUE(w.segments[kv->segment].live);
    EXPECT_FALSE(w.segments[kv->segment].published);
    ok(w, StepKind::read, r0);
}

// On-disk prefix: an offload (which takes the indexer pages along) makes the KV on_disk; a lookup
// answers io_wait with the loads; once they complete the request resumes from them cleanly.
TEST(OnDiskPrefix, OffloadThenLoadResumes) {
    Pair p = finished_then_extended("validated", 64);
    const std::uint32_t kv = seg(p.w, kC1, 48, 64);
    const std::uint32_t index = seg(p.w, kIndexer, 48, 64);
    const StepOutcome off = ok(p.w, StepKind::offload, kv);
    ASSERT_EQ(off.io_started.size(), 2u) << "the indexer partner goes to disk with its KV block";
    EXPECT_EQ(p.w.segments[kv].stage, Stage::offloading);
    for (std::uint32_t op : io_of(off)) ok(p.w, StepKind::io_complete, op);
    for (std::uint32_t id : {kv, index}) {
        EXPECT_EQ(p.w.segments[id].stage, Stage::on_disk);
        EXPECT_EQ(p.w.segments[id].slot, kNone);
        EXPECT_NE(p.w.segments[id].disk, kNone);
    }
    const StepOutcome look = ok(p.w, StepKind::lookup, p.b);
    ASSERT_TRUE(look.lookup.has_value());
    EXPECT_EQ(look.lookup->verdict, VerdictKind::io_wait);
    EXPECT_EQ(look.lookup->resume_len, 64u);
    EXPECT_TRUE(has_miss(*look.lookup, kC1, MissReason::not_resident));
    std::vector<std::uint32_t> loads = look.lookup->loads;
    std::sort(loads.begin(), loads.end());
    EXPECT_EQ(loads, (std::vector<std::uint32_t>{std::min(kv, index), std::max(kv, index)}));
    EXPECT_EQ(p.w.requests[p.b].phase, Phase::waiting_io);
    EXPECT_FALSE(enabled(p.w, {StepKind::pin, p.b, 0})) << "registered is not resident: nothing is read before the loads";
    for (std::uint32_t op : io_of(look)) ok(p.w, StepKind::io_complete, op);
    EXPECT_EQ(p.w.requests[p.b].phase, Phase::io_done);
    const LookupResult again = lookup_step(p.w, p.b);
    EXPECT_EQ(again.verdict, VerdictKind::resumable);
    EXPECT_EQ(again.resume_len, 64u);
    for (StepKind k : {StepKind::pin, StepKind::revalidate, StepKind::allocate, StepKind::read, StepKind::commit}) ok(p.w, k, p.b);
}

// F2: a failed load leaves the segment on disk and marks the request; its next lookup reports
// load_failed and recomputes from the last resident point instead of waiting again.
TEST(OnDiskPrefix, FailedLoadFallsBackToRecompute) {
    Pair p = finished_then_extended("validated", 128);
    const std::uint32_t kv = seg(p.w, kC1, 112, 128);
    for (std::uint32_t op : io_of(ok(p.w, StepKind::offload, kv))) ok(p.w, StepKind::io_complete, op);
    const StepOutcome look = ok(p.w, StepKind::lookup, p.b);
    ASSERT_EQ(look.lookup->verdict, VerdictKind::io_wait);
    for (std::uint32_t op : io_of(look)) {
        const bool is_kv_load = p.w.io[op].segment == kv;
        ok(p.w, is_kv_load ? StepKind::io_fail : StepKind::io_complete, op);
    }
    EXPECT_TRUE(p.w.requests[p.b].load_failed);
    EXPECT_EQ(p.w.segments[kv].stage, Stage::on_disk);
    const LookupResult r = lookup_step(p.w, p.b);
    EXPECT_TRUE(has_miss(r, kC1, MissReason::load_failed));
    EXPECT_EQ(r.verdict, VerdictKind::partial_recompute);
    EXPECT_EQ(r.resume_len, 64u);
    EXPECT_FALSE(plan_reads(p.w.requests[p.b], kv));
    for (StepKind k : {StepKind::pin, StepKind::revalidate, StepKind::allocate, StepKind::read}) ok(p.w, k, p.b);
    EXPECT_EQ(ok(p.w, StepKind::commit, p.b).tokens_computed, 144u - 64u);
}

// Linear state exists only at exact checkpoint positions (multiples of its 32-token block), so a
// hash hit of 112 tokens resumes at the checkpoint 96; without that checkpoint it falls to 64.
TEST(LinearState, CheckpointsOnlyAtExactBlockPositions) {
    Pair p = finished_then_extended("validated", 112);
    for (std::uint32_t at : {32u, 64u, 96u}) {
        const std::uint32_t id = seg(p.w, kLinear, 0, at);
        ASSERT_NE(id, kNone) << at;
        EXPECT_EQ(p.w.anchor_of(p.w.segments[id]), at);
        EXPECT_EQ(p.w.segments[id].form, Form::linear_state);
    }
    EXPECT_EQ(seg(p.w, kLinear, 0, 112), kNone);
    EXPECT_EQ(seg(p.w, kLinear, 0, 48), kNone);
    const LookupResult r = lookup_step(p.w, p.b);
    EXPECT_EQ(r.hash_hit_len, 112u);
    EXPECT_EQ(r.resume_len, 96u);
    for (const PlanEntry& e : r.plan) {
        if (e.group == kLinear) {
            EXPECT_EQ(e.end, 96u);
        }
    }

    Pair q = finished_then_extended("validated", 112);
    ok(q.w, StepKind::evict, seg(q.w, kLinear, 0, 96));
    EXPECT_EQ(lookup_step(q.w, q.b).resume_len, 64u);
}

// Mutant `min-block-size-index` indexes the state of position p at p / 16 * 32 = 2p (the toy's
// smallest block is 16 tokens, its linear block 32): the entry covers [0, 2p) while its anchor,
// the state it holds, stays at p. World::anchor_of recovers p from the end alone.
TEST(LinearState, MisindexedCheckpointKeepsItsStatePosition) {
    World w = toy_world("min-block-size-index");
    const std::uint32_t a = add(w, 1, ids(14), 224, 0);
    for (StepKind k : {StepKind::lookup, StepKind::pin, StepKind::revalidate, StepKind::allocate}) apply(w, {k, a, 0});
    for (std::uint32_t at : {32u, 64u, 96u}) {
        const std::uint32_t id = seg(w, kLinear, 0, 2 * at);
        ASSERT_NE(id, kNone) << at;
        EXPECT_EQ(w.anchor_of(w.segments[id]), at);
        EXPECT_EQ(w.bytes_of(w.segments[id]), w.derived.group_bytes[kLinear].usual_bytes);
    }
    EXPECT_EQ(seg(w, kLinear, 0, 256), kNone) << "past the request's 224 tokens";
}

// ---------------------------------------------------------------------------------------------
// Validation layers
// ---------------------------------------------------------------------------------------------

// VL1: the derived LCM of every preset's block sizes.
TEST(ValidationLayers, Vl1LcmOfEveryPreset) {
    const std::map<std::string, std::uint32_t> expected = {
        {"deepseek-v32", 64}, {"deepseek-v4", 256}, {"gemma3-27b", 64},   {"gpt-oss-120b", 64},
        {"llama4-scout", 256}, {"qwen3-next", 784}, {"toy", 32},
    };
    ASSERT_EQ(presets().size(), expected.size());
    for (const ModelConfig& c : presets()) {
        ASSERT_TRUE(expected.count(c.name)) << c.name;
        EXPECT_EQ(derive(c).lcm_tokens, expected.at(c.name)) << c.name;
        EXPECT_EQ(config_problem(c), "") << c.name;
    }
}

// VL1: a 48-token hash hit resumes at 32 (the LCM boundary) under validated; the no-lcm mutant
// resumes mid-boundary at 48 and the read breaks VL1 (and reads the wrong linear state).
TEST(ValidationLayers, Vl1HitLengthOnLcmBoundary) {
    for (const char* policy : {"validated", "no-lcm"}) {
        SCOPED_TRACE(policy);
        Pair p = finished_then_extended(policy, 48);
        const LookupResult r = lookup_step(p.w, p.b);
        EXPECT_EQ(r.hash_hit_len, 48u);
        for (StepKind k : {StepKind::pin, StepKind::revalidate, StepKind::allocate}) ok(p.w, k, p.b);
        if (std::string_view(policy) == "validated") {
            EXPECT_EQ(r.resume_len, 32u);
            EXPECT_EQ(r.resume_len % p.w.derived.lcm_tokens, 0u);
            ok(p.w, StepKind::read, p.b);
        } else {
            EXPECT_EQ(r.resume_len, 48u);
            const auto v = names(take(p.w, StepKind::read, p.b).violations);
            EXPECT_TRUE(v.count("VL1_lcm_boundary"));
            EXPECT_TRUE(v.count("OR1_ground_truth"));
        }
    }
}

// VL2: after a group's kernel layout changes (F5) validated refuses its old blocks with
// layout_mismatch; the no-layout-check mutant reads them and breaks VL2.
TEST(ValidationLayers, Vl2LayoutChangeRefused) {
    for (const char* policy : {"validated", "no-layout-check"}) {
        SCOPED_TRACE(policy);
        Pair p = finished_then_extended(policy, 64);
        ok(p.w, StepKind::change_layout, kSwa);
        const LookupResult r = lookup_step(p.w, p.b);
        for (StepKind k : {StepKind::pin, StepKind::revalidate, StepKind::allocate}) ok(p.w, k, p.b);
        if (std::string_view(policy) == "validated") {
            EXPECT_TRUE(has_miss(r, kSwa, MissReason::layout));
            EXPECT_EQ(r.verdict, VerdictKind::full_recompute);
            ok(p.w, StepKind::read, p.b);
        } else {
            EXPECT_EQ(r.resume_len, 64u);
            EXPECT_TRUE(names(take(p.w, StepKind::read, p.b).violations).count("VL2_layout"));
        }
    }
}

// VL2 with RL3: a layout change between lookup and pin makes revalidation fail (config epoch).
TEST(ValidationLayers, Vl2LayoutChangeAfterLookupFailsRevalidation) {
    Pair p = finished_then_extended("validated", 64);
    EXPECT_EQ(lookup_step(p.w, p.b).resume_len, 64u);
    ok(p.w, StepKind::change_layout, kC1);
    ok(p.w, StepKind::pin, p.b);
    EXPECT_TRUE(ok(p.w, StepKind::revalidate, p.b).stale_revalidation);
    EXPECT_EQ(p.w.requests[p.b].phase, Phase::arrived);
    EXPECT_TRUE(p.w.requests[p.b].pinned.empty());
}

// VL3: the usable length is the minimum over groups: losing one SWA block inside the window at
// 128 lowers the resume point of every group to 64 (c4 cannot stop at 96 without tail blocks),
// and no plan entry reads past it; the max-group mutant takes the longest group and breaks VL3.
TEST(ValidationLayers, Vl3IntersectionOfGroups) {
    for (const char* policy : {"validated", "max-group"}) {
        SCOPED_TRACE(policy);
        Pair p = finished_then_extended(policy, 128);
        ok(p.w, StepKind::evict, seg(p.w, kSwa, 96, 112));
        const LookupResult r = lookup_step(p.w, p.b);
        EXPECT_EQ(r.hash_hit_len, 128u) << "the hash lookup on c1 does not see the SWA hole";
        for (StepKind k : {StepKind::pin, StepKind::revalidate, StepKind::allocate}) ok(p.w, k, p.b);
        if (std::string_view(policy) == "validated") {
            EXPECT_EQ(r.resume_len, 64u);
            EXPECT_EQ(r.verdict, VerdictKind::partial_recompute);
            EXPECT_TRUE(has_miss(r, kSwa, MissReason::window_expired));
            EXPECT_TRUE(has_miss(r, kC4, MissReason::not_cached));
            for (const PlanEntry& e : r.plan) EXPECT_LE(e.end, 64u) << int{e.group};
            ok(p.w, StepKind::read, p.b);
        } else {
            EXPECT_EQ(r.resume_len, 128u) << "max-group takes the longest single group";
            EXPECT_TRUE(names(take(p.w, StepKind::read, p.b).violations).count("VL3_group_intersection"));
        }
    }
}

// VL4: a load that lands in a misaligned staging buffer (F9) is refused with misaligned under
// validated; the no-align mutant reads it and breaks VL4.
TEST(ValidationLayers, Vl4MisalignedReloadRefused) {
    for (const char* policy : {"validated", "no-align"}) {
        SCOPED_TRACE(policy);
        Pair p = finished_then_extended(policy, 128);
        const std::uint32_t kv = seg(p.w, kC1, 112, 128);
        for (std::uint32_t op : io_of(ok(p.w, StepKind::offload, kv))) ok(p.w, StepKind::io_complete, op);
        const StepOutcome look = ok(p.w, StepKind::lookup, p.b);
        ASSERT_EQ(look.lookup->verdict, VerdictKind::io_wait);
        for (std::uint32_t op : io_of(look))
            ok(p.w, p.w.io[op].segment == kv ? StepKind::misaligned_reload : StepKind::io_complete, op);
        EXPECT_NE(p.w.slots[p.w.segments[kv].slot].address % kAlignBytes, 0u);
        const LookupResult r = lookup_step(p.w, p.b);
        for (StepKind k : {StepKind::pin, StepKind::revalidate, StepKind::allocate}) ok(p.w, k, p.b);
        if (std::string_view(policy) == "validated") {
            EXPECT_TRUE(has_miss(r, kC1, MissReason::misaligned));
            EXPECT_EQ(r.resume_len, 64u);
            ok(p.w, StepKind::read, p.b);
        } else {
            EXPECT_EQ(r.resume_len, 128u);
            EXPECT_TRUE(names(take(p.w, StepKind::read, p.b).violations).count("VL4_alignment"));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Red lines
// ---------------------------------------------------------------------------------------------

// RL1: GPU bytes in use are exactly the resident segments plus kStateEntryBytes per live entry;
// a 64-token toy request needs 21,504 data bytes and 15 entries (960 bytes), so a budget one byte
// short of 22,464 refuses its last entry and the request runs uncached from there on.
TEST(RedLines, Rl1StateTableBytesCountAgainstTheBudget) {
    std::uint64_t data_bytes = 0;
    {
        World w = toy_world();
        const std::uint32_t a = add(w, 1, ids(4), 64, 0);
        for (StepKind k : {StepKind::lookup, StepKind::pin, StepKind::revalidate, StepKind::allocate}) ok(w, k, a);
        std::uint64_t resident = 0;
        for (const Segment& s : w.segments)
            if (s.live && s.slot != kNone) resident += w.bytes_of(s);
        data_bytes = resident;
        EXPECT_EQ(w.live_segments, 15u);
        EXPECT_EQ(resident, 21'504u);
        EXPECT_EQ(w.gpu_used_bytes, resident + kStateEntryBytes * w.live_segments);
    }
    for (const std::uint64_t budget : {data_bytes + 15 * kStateEntryBytes, data_bytes + 15 * kStateEntryBytes - 1}) {
        World w = toy_world("validated", budget);
        const std::uint32_t a = add(w, 1, ids(4), 64, 0);
        run_request(w, a);
        EXPECT_LE(w.gpu_used_bytes, budget);
        EXPECT_EQ(w.requests[a].uncached, budget < data_bytes + 15 * kStateEntryBytes) << budget;
        EXPECT_EQ(w.requests[a].phase, Phase::done);
    }
}

// RL1: when nothing can be admitted the request still completes, uncached, holding no bytes.
TEST(RedLines, Rl1ImpossibleAdmissionRunsUncached) {
    World w = toy_world("validated", 1000);
    const std::uint32_t a = add(w, 1, ids(4), 64, 16);
    for (StepKind k : {StepKind::lookup, StepKind::pin, StepKind::revalidate}) ok(w, k, a);
    const StepOutcome alloc = ok(w, StepKind::allocate, a);
    EXPECT_TRUE(alloc.admission_refused);
    EXPECT_TRUE(w.requests[a].uncached);
    EXPECT_EQ(w.live_segments, 0u);
    EXPECT_EQ(w.gpu_used_bytes, 0u);
    ok(w, StepKind::read, a);
    ok(w, StepKind::commit, a);
    ok(w, StepKind::decode, a);
    ok(w, StepKind::finish, a);
    EXPECT_EQ(w.requests[a].phase, Phase::done);
}

// RL1: under a budget that holds one request, the second request's admission evicts the first's
// cache by form priority (SWA windows first) and never exceeds the budget; the no-admission-cap
// mutant exceeds it.
TEST(RedLines, Rl1AdmissionEvictsByFormPriority) {
    for (const char* policy : {"validated", "no-admission-cap"}) {
        SCOPED_TRACE(policy);
        World w = toy_world(policy, 30'000);
        const std::uint32_t a = add(w, 1, ids(4), 64, 0);
        run_request(w, a);
        const std::uint32_t b = add(w, 2, {9, 10, 11, 12}, 64, 0);
        for (StepKind k : {StepKind::lookup, StepKind::pin, StepKind::revalidate}) ok(w, k, b);
        const Taken alloc = take(w, StepKind::allocate, b);
        if (std::string_view(policy) == "validated") {
            EXPECT_TRUE(alloc.violations.empty());
            ASSERT_FALSE(alloc.outcome.evicted.empty());
            EXPECT_EQ(alloc.outcome.evicted.front().form, Form::swa_window);
            EXPECT_LE(w.gpu_used_bytes, 30'000u);
        } else {
            EXPECT_TRUE(alloc.outcome.evicted.empty());
            EXPECT_TRUE(names(alloc.violations).count("RL1_admission_cap"));
        }
    }
}

// RL2: freed slots of every form return to their own form's free list with the label cleared and
// are reused only by that form; the shared-freelist mutant leaves labels and breaks RL2.
TEST(RedLines, Rl2FreeSlotsStayInTheirFormsList) {
    World w = toy_world();
    const std::uint32_t a = add(w, 1, ids(4), 64, 0);
    run_request(w, a);
    std::vector<std::uint32_t> victims;
    for (std::uint8_t g : {kC1, kC4, kSwa, kIndexer, kLinear})
        for (std::uint32_t id = 0; id < w.segments.size(); ++id)
            if (w.segments[id].live && w.segments[id].group == g) {
                victims.push_back(id);
                break;
            }
    for (std::uint32_t id : victims) {
        const Form form = w.segments[id].form;
        const std::uint32_t slot = w.segments[id].slot;
        ok(w, StepKind::evict, id);
        const auto& list = w.free_slots[static_cast<int>(form)];
        EXPECT_NE(std::find(list.begin(), list.end(), slot), list.end()) << form_name(form);
        EXPECT_EQ(w.slots[slot].label, kNoLabel);
        EXPECT_EQ(w.slots[slot].pool, form);
    }
    EXPECT_TRUE(w.shared_free_slots.empty());
    const std::uint32_t b = add(w, 2, {9, 10, 11, 12}, 64, 0);
    run_request(w, b);  // reuses freed slots; the structural RL2 check runs after every step
    for (const Segment& s : w.segments) {
        if (s.live && s.slot != kNone) {
            EXPECT_EQ(w.slots[s.slot].pool, s.form);
        }
    }

    World m = toy_world("shared-freelist");
    const std::uint32_t c = add(m, 1, ids(4), 64, 0);
    run_request(m, c);
    EXPECT_TRUE(names(take(m, StepKind::evict, seg(m, kSwa, 0, 16)).violations).count("RL2_form_separation"));
}

// RL3: an eviction between lookup and pin is caught by revalidation under validated: the request
// falls back (stale_revalidation), never reads the stale plan, and completes cleanly; under
// no-revalidate the read violates RL3_toctou.
TEST(RedLines, Rl3EvictionBetweenLookupAndPin) {
    for (const char* policy : {"validated", "no-revalidate"}) {
        SCOPED_TRACE(policy);
        Pair p = finished_then_extended(policy, 64);
        EXPECT_EQ(lookup_step(p.w, p.b).resume_len, 64u);
        const std::uint32_t victim = seg(p.w, kC4, 0, 64);
        ASSERT_TRUE(plan_reads(p.w.requests[p.b], victim));
        ok(p.w, StepKind::evict, victim);
        ok(p.w, StepKind::pin, p.b);
        const StepOutcome reval = ok(p.w, StepKind::revalidate, p.b);
        if (std::string_view(policy) == "validated") {
            EXPECT_TRUE(reval.stale_revalidation);
            EXPECT_EQ(p.w.requests[p.b].phase, Phase::arrived);
            EXPECT_TRUE(p.w.requests[p.b].plan.empty());
            const LookupResult again = lookup_step(p.w, p.b);
            EXPECT_EQ(again.verdict, VerdictKind::full_recompute);
            EXPECT_FALSE(plan_reads(p.w.requests[p.b], victim)) << "the evicted segment is never read";
            for (StepKind k : {StepKind::pin, StepKind::revalidate, StepKind::allocate, StepKind::read, StepKind::commit,
                               StepKind::finish})
                ok(p.w, k, p.b);
        } else {
            EXPECT_FALSE(reval.stale_revalidation);
            ok(p.w, StepKind::allocate, p.b);
            EXPECT_TRUE(names(take(p.w, StepKind::read, p.b).violations).count("RL3_toctou"));
        }
    }
}

// RL3: pinned hits cannot be evicted between pin and read; the no-pin mutant lets the evictor in
// and the read breaks RL3.
TEST(RedLines, Rl3PinnedHitsAreNotEvictable) {
    for (const char* policy : {"validated", "no-pin"}) {
        SCOPED_TRACE(policy);
        Pair p = finished_then_extended(policy, 64);
        lookup_step(p.w, p.b);
        ok(p.w, StepKind::pin, p.b);
        ok(p.w, StepKind::revalidate, p.b);
        const std::uint32_t victim = seg(p.w, kC4, 0, 64);
        if (std::string_view(policy) == "validated") {
            EXPECT_EQ(p.w.segments[victim].pins, 1u);
            EXPECT_FALSE(enabled(p.w, {StepKind::evict, victim, 0}));
        } else {
            ok(p.w, StepKind::evict, victim);
            ok(p.w, StepKind::allocate, p.b);
            EXPECT_TRUE(names(take(p.w, StepKind::read, p.b).violations).count("RL3_toctou"));
        }
    }
}

// RL4: commit captures a decode graph over the working set of a request that decodes (and none
// for a request without output); validated never offers graph-referenced segments to the
// evictor, and SWA slides recapture so released blocks leave the graph.
TEST(RedLines, Rl4GraphCapturedAtCommitAndGuarded) {
    World w = toy_world();
    const std::uint32_t a = add(w, 1, ids(4), 64, 32);
    const std::uint32_t z = add(w, 2, {7, 8, 9}, 48, 0);
    prefill(w, a);
    prefill(w, z);
    EXPECT_FALSE(w.graphs[z].live) << "no decode, no graph";
    ASSERT_TRUE(w.graphs[a].live);
    ASSERT_FALSE(w.graphs[a].refs.empty());
    std::vector<Step> offered;
    enabled_steps(w, 0xFFFFFFFFu, offered);
    for (const GraphRef& ref : w.graphs[a].refs) {
        EXPECT_GT(w.segments[ref.segment].graph_refs, 0u);
        EXPECT_FALSE(enabled(w, {StepKind::evict, ref.segment, 0}));
        EXPECT_FALSE(enabled(w, {StepKind::migrate, ref.segment, 0}));
        for (const Step& s : offered) EXPECT_FALSE(s.kind == StepKind::evict && s.target == ref.segment);
    }
    const std::uint32_t leaving = seg(w, kSwa, 32, 48);
    EXPECT_GT(w.segments[leaving].graph_refs, 0u);
    const StepOutcome dec = ok(w, StepKind::decode, a);  // pos 80: [32,48) leaves the window
    EXPECT_EQ(dec.recaptures, 1u);
    EXPECT_EQ(w.segments[leaving].graph_refs, 0u);
    EXPECT_TRUE(enabled(w, {StepKind::evict, leaving, 0}));
    ok(w, StepKind::evict, leaving);
}

// RL4: without the graph guard a window slide does not recapture, so the block that left the
// window stays baked into the live graph; the evictor frees it and RL4 is violated.
TEST(RedLines, Rl4NoGraphGuardIsCaught) {
    World w = toy_world("no-graph-guard");
    const std::uint32_t a = add(w, 1, ids(4), 64, 32);
    prefill(w, a);
    ASSERT_TRUE(w.graphs[a].live);
    const std::uint32_t leaving = seg(w, kSwa, 32, 48);
    EXPECT_EQ(ok(w, StepKind::decode, a).recaptures, 0u);
    EXPECT_GT(w.segments[leaving].graph_refs, 0u);
    EXPECT_EQ(w.segments[leaving].pins, 0u);
    EXPECT_TRUE(names(take(w, StepKind::evict, leaving).violations).count("RL4_graph_topology"));
}

// ---------------------------------------------------------------------------------------------
// Rollout modes and verdicts
// ---------------------------------------------------------------------------------------------

// Rollout off: a hash hit is never reused (miss reason rollout).
TEST(Rollout, OffNeverReuses) {
    Pair p = finished_then_extended("validated", 64, 0, 1 << 20, Rollout::off);
    const LookupResult r = lookup_step(p.w, p.b);
    EXPECT_EQ(r.hash_hit_len, 64u);
    EXPECT_EQ(r.resume_len, 0u);
    EXPECT_EQ(r.verdict, VerdictKind::full_recompute);
    EXPECT_TRUE(has_miss(r, kC1, MissReason::rollout));
}

// Rollout intra_request: only segments of the same reuse scope are reused; another request's
// cache is refused with rollout.
TEST(Rollout, IntraRequestReusesOnlyItsOwnScope) {
    World w = toy_world("validated", 1 << 20, Rollout::intra_request);
    const std::uint32_t a = add(w, 1, ids(4), 64, 0);
    run_request(w, a);
    const std::uint32_t same = add(w, 1, ids(5), 80, 0);   // a later turn of the same request
    const std::uint32_t other = add(w, 2, ids(5), 80, 0);
    const LookupResult own = lookup_step(w, same);
    EXPECT_EQ(own.verdict, VerdictKind::resumable);
    EXPECT_EQ(own.resume_len, 64u);
    const LookupResult foreign = lookup_step(w, other);
    EXPECT_EQ(foreign.verdict, VerdictKind::full_recompute);
    EXPECT_TRUE(has_miss(foreign, kC1, MissReason::rollout));
}

// Rollout cross_request: any request's cache is reused.
TEST(Rollout, CrossRequestReusesOthers) {
    Pair p = finished_then_extended("validated", 64);
    const LookupResult r = lookup_step(p.w, p.b);
    EXPECT_EQ(r.verdict, VerdictKind::resumable);
    EXPECT_EQ(r.resume_len, 64u);
    EXPECT_TRUE(r.misses.empty());
}

// The four verdicts, each from a constructed situation: nothing cached, fully cached, part of the
// prefix evicted, part of the prefix on disk.
TEST(Verdicts, EachVerdictFromItsSituation) {
    {
        World w = toy_world();
        const std::uint32_t a = add(w, 1, ids(4), 64, 0);
        EXPECT_EQ(lookup_step(w, a).verdict, VerdictKind::full_recompute);
    }
    {
        Pair p = finished_then_extended("validated", 128);
        const LookupResult r = lookup_step(p.w, p.b);
        EXPECT_EQ(r.verdict, VerdictKind::resumable);
        EXPECT_EQ(r.resume_len, 128u);
        EXPECT_EQ(r.recompute_from, 128u);
    }
    {
        Pair p = finished_then_extended("validated", 128);
        ok(p.w, StepKind::evict, seg(p.w, kC4, 64, 128));
        const LookupResult r = lookup_step(p.w, p.b);
        EXPECT_EQ(r.verdict, VerdictKind::partial_recompute);
        EXPECT_EQ(r.resume_len, 64u);
        EXPECT_EQ(r.recompute_from, 64u);
    }
    {
        Pair p = finished_then_extended("validated", 128);
        for (std::uint32_t op : io_of(ok(p.w, StepKind::offload, seg(p.w, kC4, 64, 128)))) ok(p.w, StepKind::io_complete, op);
        const LookupResult r = lookup_step(p.w, p.b);
        EXPECT_EQ(r.verdict, VerdictKind::io_wait);
        EXPECT_EQ(r.resume_len, 128u);
        EXPECT_EQ(r.loads.size(), 1u);
    }
}

// ---------------------------------------------------------------------------------------------
// Configs, the flat index, state hashing and the mutant table
// ---------------------------------------------------------------------------------------------

// config_problem rejects each kind of bad config with a message naming the problem.
TEST(Config, ProblemsAreRejected) {
    const ModelConfig toy = *find_preset("toy");
    EXPECT_EQ(config_problem(toy), "");
    auto broken = [&](auto change) {
        ModelConfig c = toy;
        change(c);
        return config_problem(c);
    };
    EXPECT_NE(broken([](ModelConfig& c) { c.groups.clear(); }).find("at least one cache group"), std::string::npos);
    EXPECT_NE(broken([](ModelConfig& c) { c.groups = {c.groups[kSwa]}; }).find("full-attention group"), std::string::npos);
    EXPECT_NE(broken([](ModelConfig& c) { c.groups[kC1].block_tokens = 0; }).find("block_tokens must be positive"), std::string::npos);
    EXPECT_NE(broken([](ModelConfig& c) { c.groups[kC1].layers = 0; }).find("layers must be positive"), std::string::npos);
    EXPECT_NE(broken([](ModelConfig& c) { c.groups[kC4].segment_tokens = 40; }).find("multiple of block_tokens"), std::string::npos);
    EXPECT_NE(broken([](ModelConfig& c) { c.groups[kSwa].window_tokens = 0; }).find("window_tokens"), std::string::npos);
    EXPECT_NE(broken([](ModelConfig& c) { c.groups[kIndexer].indexed_group = kSwa; }).find("must name a full group"), std::string::npos);
    EXPECT_NE(broken([](ModelConfig& c) { c.groups[kIndexer].indexed_group = 9; }).find("must name a full group"), std::string::npos);
    EXPECT_NE(broken([](ModelConfig& c) { c.groups[kIndexer].indexed_group = kC4; }).find("segment_tokens == block_tokens"),
              std::string::npos)
        << "c4's 64-token segments are not block-sized";
    EXPECT_NE(broken([](ModelConfig& c) { c.groups[kLinear].state_bytes_layer = 0; }).find("state_bytes_layer"), std::string::npos);
    EXPECT_NE(broken([](ModelConfig& c) { c.groups.resize(17, c.groups[kC1]); }).find("at most 16"), std::string::npos);
    EXPECT_NE(broken([](ModelConfig& c) {
                  c.groups[kC1].block_tokens = c.groups[kC1].segment_tokens = 1021;
                  c.groups[kC4].block_tokens = 1031;
                  c.groups[kC4].segment_tokens = 1031;
                  c.groups[kIndexer].block_tokens = c.groups[kIndexer].segment_tokens = 1021;
              }).find("LCM"),
              std::string::npos);
}

// state_hash is a function of the state: equal worlds hash equal, a step changes the hash, and
// the same step on an equal world brings the hashes back together.
TEST(StateHash, EqualWorldsEqualHashes) {
    Pair p = finished_then_extended("validated", 64);
    Pair q = finished_then_extended("validated", 64);
    const World copy = p.w;
    EXPECT_EQ(state_hash(p.w), state_hash(q.w));
    EXPECT_EQ(state_hash(p.w), state_hash(copy));
    ok(p.w, StepKind::lookup, p.b);
    EXPECT_NE(state_hash(p.w), state_hash(q.w));
    ok(q.w, StepKind::lookup, q.b);
    EXPECT_EQ(state_hash(p.w), state_hash(q.w));
    ok(q.w, StepKind::evict, seg(q.w, kSwa, 0, 16));
    EXPECT_NE(state_hash(p.w), state_hash(q.w));
}

// Every mutant names the defense it removes and an invariant from the catalogue it breaks, and
// switches at least one defense away from validated.
TEST(Mutants, TableNamesCataloguedInvariants) {
    std::set<std::string> catalogue;
    for (const InvariantInfo& i : invariant_catalogue()) catalogue.insert(std::string(i.name));
    ASSERT_NE(find_policy("validated"), nullptr);
    EXPECT_EQ(find_policy("validated")->removes, "");
    std::size_t mutants = 0;
    for (const PolicyInfo& p : policies()) {
        if (p.name == "validated") continue;
        ++mutants;
        EXPECT_FALSE(p.removes.empty()) << p.name;
        EXPECT_FALSE(p.breaks.empty()) << p.name;
        EXPECT_TRUE(catalogue.count(p.breaks)) << p.name << " breaks unknown invariant " << p.breaks;
        const Defenses d = p.defenses;
        const Defenses v{};
        const bool differs = d.group_intersection != v.group_intersection || d.lcm_boundary != v.lcm_boundary ||
                             d.layout_check != v.layout_check || d.alignment_check != v.alignment_check ||
                             d.admission_cap != v.admission_cap || d.separate_freelists != v.separate_freelists ||
                             d.revalidate != v.revalidate || d.pin != v.pin || d.graph_guard != v.graph_guard ||
                             d.swa_window_check != v.swa_window_check || d.index_version_check != v.index_version_check ||
                             d.residency_check != v.residency_check || d.tail_boundary_check != v.tail_boundary_check ||
                             d.whole_segment_check != v.whole_segment_check || d.pin_all_groups_first != v.pin_all_groups_first ||
                             d.publish_after_complete != v.publish_after_complete ||
                             d.own_block_size_index != v.own_block_size_index ||
                             d.drop_verdict_on_failed_load != v.drop_verdict_on_failed_load ||
                             d.truncate_every_group != v.truncate_every_group ||
                             d.restore_index_with_kv != v.restore_index_with_kv || d.hash_hit_is_enough != v.hash_hit_is_enough;
        EXPECT_TRUE(differs) << p.name << " has the validated defenses";
    }
    EXPECT_GE(mutants, 14u);
}
