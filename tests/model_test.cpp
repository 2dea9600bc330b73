// Unit tests of the cache-manager model (model/): each form's lifecycle — compressed segments,
// uncompressed tails, SWA windows, indexer state, linear state. The on-disk prefix (offloads,
// loads, the host/disk tier, waits for loads) is in tests/model_disk_test.cpp, the validation
// layers, red lines and the rest in tests/model_rules_test.cpp, the prefix index in
// tests/flat_index_test.cpp. Each test drives a small World through explicit steps and checks
// every invariant (structural checks on) after every step it expects to be clean.
#include "tests/model_fixtures.hpp"

using namespace kvcheck::model;
using namespace kvcheck::model::fixtures;

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
    EXPECT_EQ(w.find(w.requests[a].spec->key(64), kC4, false, 0), kNone)
        << "a segment being written is not yet in the index";
    ok(w, StepKind::read, a);
    ok(w, StepKind::commit, a);
    EXPECT_EQ(w.segments[id].stage, Stage::ready);
    EXPECT_TRUE(w.segments[id].published);
    EXPECT_EQ(w.find(w.requests[a].spec->key(64), kC4, false, 0), id);
    const std::uint32_t slot = w.segments[id].slot;
    EXPECT_EQ(w.slots[slot].content, truth_tag(w, *w.requests[a].spec, kC4, 0, 64));
    EXPECT_FALSE(enabled(w, {StepKind::evict, id, 0})) << "the writer's pin keeps the segment resident";
    ok(w, StepKind::finish, a);
    ok(w, StepKind::evict, id);
    EXPECT_FALSE(w.segments[id].live);
    EXPECT_EQ(w.segments[id].stage, Stage::freed);
    EXPECT_EQ(w.find(w.requests[a].spec->key(64), kC4, false, 0), kNone);
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
            for (StepKind k : {StepKind::pin, StepKind::revalidate, StepKind::allocate, StepKind::read})
                ok(p.w, k, p.b);
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
    for (auto [kind, r] : std::vector<std::pair<StepKind, std::uint32_t>>{{StepKind::lookup, r1},
                                                                          {StepKind::pin, r1},
                                                                          {StepKind::lookup, r2},
                                                                          {StepKind::pin, r2},
                                                                          {StepKind::revalidate, r2},
                                                                          {StepKind::allocate, r2},
                                                                          {StepKind::read, r2},
                                                                          {StepKind::commit, r2},
                                                                          {StepKind::lookup, r0},
                                                                          {StepKind::revalidate, r1},
                                                                          {StepKind::pin, r0},
                                                                          {StepKind::finish, r2},
                                                                          {StepKind::allocate, r1},
                                                                          {StepKind::read, r1},
                                                                          {StepKind::commit, r1}})
        ok(w, kind, r);
    std::uint32_t swa_of_r1 = kNone;
    for (std::uint32_t id = 0; id < w.segments.size(); ++id)
        if (w.segments[id].live && w.segments[id].group == kSwa && w.start_of(w.segments[id]) == 0 &&
            w.owner_uid(w.segments[id]) == 1)
            swa_of_r1 = id;
    ASSERT_NE(swa_of_r1, kNone);
    ok(w, StepKind::offload, swa_of_r1);
    for (StepKind k : {StepKind::decode, StepKind::decode, StepKind::finish}) ok(w, k, r1);
    ok(w, StepKind::revalidate, r0);
    ok(w, StepKind::allocate, r0);
    const std::uint64_t key = w.requests[r0].spec->key(16);
    ASSERT_EQ(w.find(key, kC1, false, 0), kNone) << "the situation: no c1 block for [0,16) is published";
    const auto kv = std::find_if(w.requests[r0].plan.begin(), w.requests[r0].plan.end(),
                                 [](const PlanEntry& e) { return e.group == kC1 && e.start == 0; });
    ASSERT_NE(kv, w.requests[r0].plan.end());
    EXPECT_TRUE(w.segments[kv->segment].live);
    EXPECT_FALSE(w.segments[kv->segment].published);
    ok(w, StepKind::read, r0);
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
