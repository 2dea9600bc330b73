// Unit tests of the cache-manager model (model/): each form's lifecycle — compressed segments,
// uncompressed tails, SWA windows, indexer state, on-disk prefixes, linear state. The validation
// layers, red lines and the rest are in tests/model_rules_test.cpp, the prefix index in
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
        if (w.segments[id].live && w.segments[id].group == kSwa && w.start_of(w.segments[id]) == 0 && w.owner_uid(w.segments[id]) == 1) swa_of_r1 = id;
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
    // Filed under the on-disk prefix's form (seed §3.5), not the compressed KV that wrote it.
    EXPECT_TRUE(has_miss(*look.lookup, kC1, Form::on_disk_prefix, MissReason::not_resident));
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

// An offload that completes while a reader pins the entry keeps both copies. Evicting it then
// drops only the GPU copy (copy_kept): the entry stays in the table, registered, on disk. An entry
// without a disk copy leaves the table when evicted.
TEST(OnDiskPrefix, EvictingAnEntryWithADiskCopyKeepsIt) {
    Pair p = finished_then_extended("validated", 64);
    const std::uint32_t kv = seg(p.w, kC1, 48, 64);
    const std::uint32_t other = seg(p.w, kC1, 32, 48);
    const std::vector<std::uint32_t> copies = io_of(ok(p.w, StepKind::offload, kv));
    for (StepKind k : {StepKind::lookup, StepKind::pin}) ok(p.w, k, p.b);
    ASSERT_GT(p.w.segments[kv].pins, 0u) << "the situation: the reader holds the entry while it is copied";
    for (std::uint32_t op : copies) ok(p.w, StepKind::io_complete, op);
    ASSERT_EQ(p.w.segments[kv].stage, Stage::ready);
    ASSERT_NE(p.w.segments[kv].disk, kNone);
    for (StepKind k : {StepKind::revalidate, StepKind::allocate, StepKind::read, StepKind::commit, StepKind::finish}) ok(p.w, k, p.b);
    const StepOutcome kept = ok(p.w, StepKind::evict, kv);
    ASSERT_EQ(kept.evicted.size(), 1u);
    EXPECT_TRUE(kept.evicted[0].copy_kept);
    EXPECT_TRUE(p.w.segments[kv].live);
    EXPECT_EQ(p.w.segments[kv].stage, Stage::on_disk);
    EXPECT_TRUE(p.w.segments[kv].published);
    const StepOutcome gone = ok(p.w, StepKind::evict, other);
    ASSERT_EQ(gone.evicted.size(), 1u);
    EXPECT_FALSE(gone.evicted[0].copy_kept);
    EXPECT_FALSE(p.w.segments[other].live);
}

namespace {

// Offloads segment `id` (with its indexer partner) and completes the copies.
void offload_to_disk(World& w, std::uint32_t id) {
    for (std::uint32_t op : io_of(ok(w, StepKind::offload, id))) ok(w, StepKind::io_complete, op);
}

}  // namespace

// A full host/disk tier with tier eviction drops the entries that arrived on it first, each its
// last copy, to take an offload; their prefixes leave the index. Without it the offload waits.
TEST(OnDiskPrefix, AFullTierDropsItsColdestEntriesForAnOffload) {
    for (const bool evicts : {true, false}) {
        SCOPED_TRACE(evicts ? "tier_eviction" : "no tier_eviction");
        Pair p = finished_then_extended("validated", 128);
        p.w.limits.tier_eviction = evicts;
        const std::uint32_t first = seg(p.w, kC1, 96, 112);
        const std::uint32_t second = seg(p.w, kC1, 112, 128);
        const std::uint32_t next = seg(p.w, kC1, 80, 96);
        const std::uint64_t first_key = p.w.segments[first].key;
        offload_to_disk(p.w, first);
        offload_to_disk(p.w, second);
        p.w.limits.disk_capacity_bytes = p.w.disk_used_bytes;  // full
        ASSERT_EQ(enabled(p.w, {StepKind::offload, next, 0}), evicts);
        if (!evicts) continue;
        const std::uint32_t first_index = seg(p.w, kIndexer, 96, 112);
        const StepOutcome out = ok(p.w, StepKind::offload, next);
        ASSERT_FALSE(out.evicted.empty());
        for (const Eviction& e : out.evicted) {
            EXPECT_EQ(e.cause, EvictionCause::tier_full);
            EXPECT_FALSE(e.copy_kept);
        }
        EXPECT_EQ(out.evicted.size(), 2u) << "the first offload's KV block and its indexer pages make the room";
        EXPECT_FALSE(p.w.segments[first].live);
        EXPECT_FALSE(p.w.segments[first_index].live);
        EXPECT_EQ(p.w.find(first_key, kC1, false), kNone) << "a dropped prefix is no longer registered";
        EXPECT_EQ(p.w.segments[second].stage, Stage::on_disk) << "the later arrival stays";
        EXPECT_LE(p.w.disk_used_bytes, p.w.limits.disk_capacity_bytes);
    }
}

// The tier drops only entries whose one copy rests on it: not one being written (an offload in
// flight) nor one being loaded, as a Mooncake store keeps objects being written or under a lease.
TEST(OnDiskPrefix, AFullTierKeepsEntriesInTransfer) {
    Pair p = finished_then_extended("validated", 128);
    p.w.limits.tier_eviction = true;
    const std::uint32_t kv = seg(p.w, kC1, 112, 128);
    const std::uint32_t other = seg(p.w, kC1, 80, 96);
    const std::vector<std::uint32_t> writing = io_of(ok(p.w, StepKind::offload, kv));
    p.w.limits.disk_capacity_bytes = p.w.disk_used_bytes;
    EXPECT_FALSE(enabled(p.w, {StepKind::offload, other, 0})) << "an offload in flight is not dropped";
    for (std::uint32_t op : writing) ok(p.w, StepKind::io_complete, op);
    EXPECT_TRUE(enabled(p.w, {StepKind::offload, other, 0})) << "once written it is the coldest entry";
    const StepOutcome look = ok(p.w, StepKind::lookup, p.b);
    ASSERT_EQ(look.lookup->verdict, VerdictKind::io_wait);
    EXPECT_FALSE(enabled(p.w, {StepKind::offload, other, 0})) << "an entry being loaded is not dropped";
    for (std::uint32_t op : io_of(look)) ok(p.w, StepKind::io_complete, op);
    EXPECT_EQ(p.w.disk_used_bytes, 0u) << "a load takes its copy off the tier";
    EXPECT_TRUE(enabled(p.w, {StepKind::offload, other, 0}));
}

// Host memory holds the tier's newest copies: an offload that does not fit there moves the
// copies there longest to disk (counted as demotions), a copy too large for it rests on disk,
// and a load takes its copy out of host memory. ST1 checks the accounting after every step
// (ok), and catches a drift in it.
TEST(OnDiskPrefix, HostMemoryKeepsTheNewestCopies) {
    Pair p = finished_then_extended("validated", 128);
    const std::uint32_t first = seg(p.w, kC1, 96, 112);
    const std::uint32_t second = seg(p.w, kC1, 112, 128);
    const std::uint32_t first_index = seg(p.w, kIndexer, 96, 112);
    const auto on_host = [&](std::uint32_t id) { return p.w.disk[p.w.segments[id].disk].on_host != 0; };
    p.w.limits.host_capacity_bytes = 1ULL << 30;
    const StepOutcome placed = ok(p.w, StepKind::offload, first);
    EXPECT_EQ(placed.demotions, 0u);
    for (std::uint32_t op : io_of(placed)) ok(p.w, StepKind::io_complete, op);
    ASSERT_TRUE(on_host(first));
    ASSERT_TRUE(on_host(first_index)) << "the indexer pages travel with their KV";
    EXPECT_EQ(p.w.host_used_bytes, p.w.disk_used_bytes);
    p.w.limits.host_capacity_bytes = p.w.host_used_bytes;  // full
    const std::uint64_t tier_bytes = p.w.disk_used_bytes;
    const StepOutcome out = ok(p.w, StepKind::offload, second);
    EXPECT_EQ(out.demotions, 2u) << "the first offload's KV block and its indexer pages move to disk";
    for (std::uint32_t op : io_of(out)) ok(p.w, StepKind::io_complete, op);
    EXPECT_FALSE(on_host(first));
    EXPECT_FALSE(on_host(first_index));
    EXPECT_TRUE(on_host(second));
    EXPECT_GT(p.w.disk_used_bytes, tier_bytes) << "a demotion moves a copy within the tier; nothing is dropped";
    EXPECT_TRUE(p.w.segments[first].live);
    EXPECT_LE(p.w.host_used_bytes, p.w.limits.host_capacity_bytes);

    p.w.host_used_bytes += 1;
    std::vector<Violation> drift;
    check_invariants(p.w, StepOutcome{}, true, drift);
    EXPECT_EQ(names(drift), std::set<std::string>{"ST1_state_table"});
    p.w.host_used_bytes -= 1;

    const StepOutcome look = ok(p.w, StepKind::lookup, p.b);
    ASSERT_EQ(look.lookup->verdict, VerdictKind::io_wait);
    for (std::uint32_t op : io_of(look)) ok(p.w, StepKind::io_complete, op);
    EXPECT_EQ(p.w.host_used_bytes, 0u) << "the loads took their copies out of host memory";
    EXPECT_EQ(p.w.host_head, kNone);

    Pair q = finished_then_extended("validated", 128);
    const std::uint32_t big = seg(q.w, kC1, 112, 128);
    q.w.limits.host_capacity_bytes = q.w.bytes_of(q.w.segments[big]) - 1;
    ok(q.w, StepKind::offload, big);
    EXPECT_EQ(q.w.disk[q.w.segments[big].disk].on_host, 0u) << "a copy larger than host memory rests on disk";
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
    EXPECT_TRUE(has_miss(r, kC1, Form::on_disk_prefix, MissReason::load_failed));
    EXPECT_EQ(r.verdict, VerdictKind::partial_recompute);
    EXPECT_EQ(r.resume_len, 64u);
    EXPECT_FALSE(plan_reads(p.w.requests[p.b], kv));
    for (StepKind k : {StepKind::pin, StepKind::revalidate, StepKind::allocate, StepKind::read}) ok(p.w, k, p.b);
    EXPECT_EQ(ok(p.w, StepKind::commit, p.b).tokens_computed, 144u - 64u);
}

// A request that stops waiting on its loads (a driver's timeout) looks up again and takes only
// what is on the GPU: the entry still loading is a miss (not_resident), and it waits no more.
// The loads go on without it and land for the next reader: request c, which arrives once they
// have, resumes from them without waiting. ST1 checks after every step that a live load names
// no request or one that waits on it.
TEST(OnDiskPrefix, StoppingTheWaitLeavesTheLoadsToLandLater) {
    Pair p = finished_then_extended("validated", 128);
    const std::uint32_t kv = seg(p.w, kC1, 112, 128);
    for (std::uint32_t op : io_of(ok(p.w, StepKind::offload, kv))) ok(p.w, StepKind::io_complete, op);
    ASSERT_FALSE(enabled(p.w, {StepKind::stop_waiting, p.b, 0})) << "only a waiting request stops waiting";
    const StepOutcome look = ok(p.w, StepKind::lookup, p.b);
    ASSERT_EQ(look.lookup->verdict, VerdictKind::io_wait);
    std::vector<Step> offered;
    enabled_steps(p.w, kind_bit(StepKind::stop_waiting), offered);
    EXPECT_EQ(offered, (std::vector<Step>{{StepKind::stop_waiting, p.b, 0}}));

    ok(p.w, StepKind::stop_waiting, p.b);
    const Request& q = p.w.requests[p.b];
    EXPECT_EQ(q.phase, Phase::arrived);
    EXPECT_EQ(q.pending_loads, 0u);
    for (std::uint32_t op : io_of(look)) {
        EXPECT_TRUE(p.w.io[op].live) << "the loads go on";
        EXPECT_EQ(p.w.io[op].request, kNone);
    }
    const StepOutcome again = ok(p.w, StepKind::lookup, p.b);
    EXPECT_TRUE(again.io_started.empty()) << "it starts no loads of its own";
    EXPECT_EQ(again.lookup->verdict, VerdictKind::partial_recompute);
    EXPECT_EQ(again.lookup->resume_len, 64u);
    EXPECT_TRUE(has_miss(*again.lookup, kC1, Form::on_disk_prefix, MissReason::not_resident));

    for (std::uint32_t op : io_of(look)) ok(p.w, StepKind::io_complete, op);
    EXPECT_EQ(p.w.segments[kv].stage, Stage::ready) << "the load landed";
    EXPECT_EQ(p.w.requests[p.b].phase, Phase::validated) << "and left the request that stopped waiting alone";
    EXPECT_FALSE(plan_reads(p.w.requests[p.b], kv));
    for (StepKind k : {StepKind::pin, StepKind::revalidate, StepKind::allocate, StepKind::read}) ok(p.w, k, p.b);
    EXPECT_EQ(ok(p.w, StepKind::commit, p.b).tokens_computed, 144u - 64u);

    const std::uint32_t c = p.w.add_request(std::make_shared<RequestSpec>(*p.w.requests[p.b].spec));
    const LookupResult later = lookup_step(p.w, c);
    EXPECT_EQ(later.verdict, VerdictKind::resumable);
    EXPECT_GE(later.resume_len, 128u);
}

// F2 partial load: a load that delivers only part of a segment's bytes. With the load-length
// check (validated) it is a failed load: the very state io_fail leaves, and the next lookup
// recomputes what did not arrive. trust-partial-load takes it as complete: the segment is
// resident, its content is not the ground truth, and the read of it breaks OR1 (nothing else:
// it is resident, whole, aligned and of the right epoch). The explorers are offered the step only
// where it differs from io_fail.
TEST(OnDiskPrefix, PartialLoadFailsUnderTheLengthCheck) {
    for (const char* policy : {"validated", "trust-partial-load"}) {
        SCOPED_TRACE(policy);
        const bool checked = std::string_view(policy) == "validated";
        Pair p = finished_then_extended(policy, 128);
        const std::uint32_t kv = seg(p.w, kC1, 112, 128);
        for (std::uint32_t op : io_of(ok(p.w, StepKind::offload, kv))) ok(p.w, StepKind::io_complete, op);
        const StepOutcome look = ok(p.w, StepKind::lookup, p.b);
        ASSERT_EQ(look.lookup->verdict, VerdictKind::io_wait);
        std::vector<Step> offered;
        enabled_steps(p.w, ~0u, offered);
        const bool partial_offered = std::any_of(offered.begin(), offered.end(), [](const Step& s) { return s.kind == StepKind::partial_load; });
        EXPECT_EQ(partial_offered, !checked);
        World failed = p.w;  // the same world, whose KV load fails outright instead
        for (std::uint32_t op : io_of(look)) {
            const bool is_kv_load = p.w.io[op].segment == kv;
            ok(p.w, is_kv_load ? StepKind::partial_load : StepKind::io_complete, op);
            ok(failed, is_kv_load ? StepKind::io_fail : StepKind::io_complete, op);
        }
        EXPECT_EQ(state_hash(p.w) == state_hash(failed), checked) << "a caught partial load is a failed load";
        EXPECT_EQ(p.w.requests[p.b].load_failed, checked);
        EXPECT_EQ(p.w.segments[kv].stage, checked ? Stage::on_disk : Stage::ready);
        const LookupResult r = lookup_step(p.w, p.b);
        EXPECT_EQ(has_miss(r, kC1, MissReason::load_failed), checked);
        EXPECT_EQ(r.resume_len, checked ? 64u : 128u);
        EXPECT_EQ(plan_reads(p.w.requests[p.b], kv), !checked);
        for (StepKind k : {StepKind::pin, StepKind::revalidate, StepKind::allocate}) ok(p.w, k, p.b);
        const std::set<std::string> violated = names(take(p.w, StepKind::read, p.b).violations);
        EXPECT_EQ(violated, checked ? std::set<std::string>{} : std::set<std::string>{"OR1_ground_truth"});
    }
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
