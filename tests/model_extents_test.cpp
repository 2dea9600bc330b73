// Unit tests of extents (docs/invariants.md, "Extents"): state-table entries that cover several
// consecutive units of one group. Each test drives a small World through explicit steps with every
// invariant checked (structural checks on) and asserts what the entries look like and what a
// reader of part of an extent reads. The property tests (tests/model_property_test.cpp) and the
// `extents` explorer scope (tests/checker_test.cpp) cover them at random and exhaustively.
#include "model/alloc.hpp"
#include "tests/model_fixtures.hpp"

using namespace kvcheck::model;
using namespace kvcheck::model::fixtures;

namespace {

// The live entries of a group that are not tails, as [start, end) ranges in token order.
std::vector<std::pair<std::uint32_t, std::uint32_t>> ranges(const World& w, std::uint8_t group) {
    std::vector<std::pair<std::uint32_t, std::uint32_t>> out;
    for (const Segment& s : w.segments)
        if (s.live && s.group == group && !s.is_tail) out.emplace_back(w.start_of(s), s.end);
    std::sort(out.begin(), out.end());
    return out;
}

using Ranges = std::vector<std::pair<std::uint32_t, std::uint32_t>>;

// Request 1 has written a 128-token extent of group c1; request 2 (returned) shares its first
// `shared` 16-token content blocks and then diverges, 128 tokens in all.
std::uint32_t extent_and_partial_reader(World& w, std::size_t shared) {
    run_request(w, add(w, 1, ids(8), 128, 0));
    std::vector<std::uint64_t> other = ids(shared);
    for (std::uint64_t b = 901; other.size() < 8; ++b) other.push_back(b);
    return add(w, 2, other, 128, 0);
}

}  // namespace

// A write becomes one entry per chunk of extent_tokens, cut where the writer's window still
// attends after the write; with extent_tokens 0 it stays one entry per block.
TEST(Extents, AWriteIsOneEntryPerChunk) {
    World blocks = toy_world();
    run_request(blocks, add(blocks, 1, ids(6), 96, 0));
    EXPECT_EQ(ranges(blocks, kC1).size(), 6u);

    World w = toy_world("validated", 1 << 20, Rollout::cross_request, 64);
    EXPECT_EQ(w.extent_units[kC1], 4u);
    EXPECT_EQ(w.extent_units[kC4], 1u) << "one 64-token compressed segment per entry";
    const std::uint32_t a = add(w, 1, ids(6), 96, 0);
    prefill(w, a);
    EXPECT_EQ(ranges(w, kC1), (Ranges{{0, 64}, {64, 96}}));
    EXPECT_EQ(ranges(w, kIndexer), (Ranges{{0, 64}, {64, 96}}));
    EXPECT_EQ(ranges(w, kC4), (Ranges{{0, 64}}));
    EXPECT_EQ(live_count(w, kC4, true), 2u) << "tail blocks stay one entry each";
    // The window [64, 96) that decoding still attends to is an entry of its own.
    EXPECT_EQ(ranges(w, kSwa), (Ranges{{0, 64}, {64, 96}}));
    EXPECT_EQ(w.segments[seg(w, kC1, 0, 64)].units(), 4u);
    ok(w, StepKind::finish, a);
}

// A reader that shares only part of an extent's content resumes inside it and reads that part;
// the read is clean, and the plan names the extent with the part's range.
TEST(Extents, AReaderResumesInsideAnExtent) {
    World w = toy_world("validated", 1 << 20, Rollout::cross_request, 128);
    const std::uint32_t b = extent_and_partial_reader(w, 5);
    const std::uint32_t extent = seg(w, kC1, 0, 128);
    ASSERT_NE(extent, kNone);
    const LookupResult r = lookup_step(w, b);
    EXPECT_EQ(r.verdict, VerdictKind::resumable);
    EXPECT_EQ(r.hash_hit_len, 80u) << "five shared 16-token blocks";
    EXPECT_EQ(r.resume_len, 64u) << "80 shared tokens resume on the 32-token grain";
    const auto piece = std::find_if(r.plan.begin(), r.plan.end(), [](const PlanEntry& e) { return e.group == kC1; });
    ASSERT_NE(piece, r.plan.end());
    EXPECT_EQ(piece->segment, extent);
    EXPECT_EQ(piece->start, 0u);
    EXPECT_EQ(piece->end, 64u);
    for (StepKind k :
         {StepKind::pin, StepKind::revalidate, StepKind::allocate, StepKind::read, StepKind::commit, StepKind::finish})
        ok(w, k, b);
}

// F11 on an extent: the whole entry is no longer whole, validated refuses it, and a mutant that
// reads a part of it anyway reads content that is not the ground truth (OR1) as well as FM1.
TEST(Extents, ALostBlockSpoilsEveryPartOfTheExtent) {
    for (const char* policy : {"validated", "partial-segment-ok"}) {
        SCOPED_TRACE(policy);
        World w = toy_world(policy, 1 << 20, Rollout::cross_request, 128);
        run_request(w, add(w, 1, ids(8), 128, 0));
        const std::uint32_t extent = seg(w, kC1, 0, 128);
        ok(w, StepKind::lose_block, extent);
        std::vector<std::uint64_t> other = ids(5);
        for (std::uint64_t id : {901, 902, 903}) other.push_back(id);
        const std::uint32_t b = add(w, 2, other, 128, 0);
        const LookupResult r = lookup_step(w, b);
        for (StepKind k : {StepKind::pin, StepKind::revalidate, StepKind::allocate}) ok(w, k, b);
        if (std::string_view(policy) == "validated") {
            EXPECT_TRUE(has_miss(r, kC1, MissReason::partial_segment));
            EXPECT_FALSE(plan_reads(w.requests[b], extent));
            ok(w, StepKind::read, b);
        } else {
            ASSERT_TRUE(plan_reads(w.requests[b], extent));
            const std::set<std::string> broken = names(take(w, StepKind::read, b).violations);
            EXPECT_TRUE(broken.count("FM1_segment_whole"));
            EXPECT_TRUE(broken.count("OR1_ground_truth")) << "a part of a damaged extent is not its writer's content";
        }
    }
}

// A writer that recomputes a range another published entry already holds for the same content
// writes it as a duplicate: used while it runs, never published, freed when it finishes. A later
// reader walks the older extent and then the writer's new one.
TEST(Extents, ARewrittenRangeIsAnUnpublishedDuplicate) {
    World w = toy_world("validated", 1 << 20, Rollout::cross_request, 64);
    run_request(w, add(w, 1, ids(6), 96, 0));
    for (const auto& [start, end] : ranges(w, kSwa)) ok(w, StepKind::evict, seg(w, kSwa, start, end));
    const std::uint32_t b = add(w, 2, ids(10), 160, 0);
    const LookupResult r = lookup_step(w, b);
    EXPECT_EQ(r.resume_len, 0u) << "no window survives, so nothing resumes";
    for (StepKind k : {StepKind::pin, StepKind::revalidate, StepKind::allocate, StepKind::read, StepKind::commit})
        ok(w, k, b);
    std::size_t duplicates = 0;
    for (const Segment& s : w.segments) {
        if (!s.live || s.group != kC1 || w.owner_uid(s) != 2) continue;
        EXPECT_EQ(s.duplicate, s.end <= 96) << "[" << w.start_of(s) << "," << s.end << ")";
        EXPECT_EQ(s.published, !s.duplicate);
        duplicates += s.duplicate ? 1 : 0;
    }
    EXPECT_EQ(duplicates, 2u);
    ok(w, StepKind::finish, b);
    for (const Segment& s : w.segments)
        EXPECT_FALSE(s.live && s.duplicate) << "a finished writer's duplicates are freed";
    EXPECT_EQ(ranges(w, kC1), (Ranges{{0, 64}, {64, 96}, {96, 128}, {128, 160}}))
        << "its chunk is cut where the cover ended";

    const std::uint32_t c = add(w, 3, ids(11), 176, 0);
    const LookupResult again = lookup_step(w, c);
    EXPECT_EQ(again.hash_hit_len, 160u) << "the walk goes on from the older extents into the newer one";
}

// An SWA extent its writer let go of keeps only the blocks some resume reads (DeepSeek-V4: the two
// 64-token blocks before each 256-token grain point of a 128-token window). Reading a block it
// shed reads nothing (OR1), and validated resumes on the grain from what is kept.
TEST(Extents, AWindowExtentShedsTheBlocksNoResumeReads) {
    const PolicyInfo& validated = *find_policy("validated");
    Limits limits;
    limits.extent_tokens = 4096;
    World w(std::make_shared<ModelConfig>(*find_preset("deepseek-v4")), validated.defenses, limits,
            Rollout::cross_request);
    constexpr std::uint8_t kDsSwa = 2;
    const std::vector<std::uint64_t> blocks = ids(64);
    const std::uint32_t a = add(w, 1, blocks, 1024, 0);
    prefill(w, a);
    const std::uint32_t passed = seg(w, kDsSwa, 0, 768);
    ASSERT_NE(passed, kNone) << "the write is cut where the last window starts";
    EXPECT_TRUE(w.segments[passed].shed);
    EXPECT_EQ(retained_units(w, w.segments[passed]), 6u);
    EXPECT_EQ(w.bytes_of(w.segments[passed]), 6 * w.derived.group_bytes[kDsSwa].usual_bytes);
    EXPECT_TRUE(units_retained(w, w.segments[passed], 640, 768));
    EXPECT_FALSE(units_retained(w, w.segments[passed], 576, 640));
    const std::uint32_t held = seg(w, kDsSwa, 768, 1024);
    ASSERT_NE(held, kNone);
    EXPECT_FALSE(w.segments[held].shed) << "the window decoding attends to stays whole";
    ok(w, StepKind::finish, a);

    // A hand-made plan over shed blocks: the oracle sees nothing there.
    const std::uint32_t reader = add(w, 2, blocks, 1024, 0);
    Request& q = w.requests[reader];
    q.resume_len = 768;
    q.plan = {{passed, w.segments[passed].epoch, w.segments[passed].slot, 576, 704, kDsSwa, Form::swa_window}};
    const std::vector<ReadFact> facts = read_facts(w, reader);
    ASSERT_EQ(facts.size(), 1u);
    EXPECT_NE(facts[0].expected, facts[0].actual);
    q.plan = {{passed, w.segments[passed].epoch, w.segments[passed].slot, 640, 768, kDsSwa, Form::swa_window}};
    EXPECT_EQ(read_facts(w, reader)[0].expected, read_facts(w, reader)[0].actual)
        << "kept blocks read their writer's content";
    q.plan.clear();
    q.resume_len = 0;

    const LookupResult r = lookup_step(w, reader);
    EXPECT_EQ(r.resume_len, 768u)
        << "1,023 tokens resume at the last grain point a kept window and a whole prefix allow";
}

// A part of a shed window extent that keeps no block holds no bytes; every other entry holds at
// least Derived::min_entry_bytes. So a host/disk tier with less room than that can take only
// such parts, which only the window group's eviction list holds (may_offload_from): the
// simulator's offloader then walks that list alone.
TEST(Extents, ATierWithoutRoomTakesOnlyEntriesHoldingNoBytes) {
    Limits limits;
    limits.extent_tokens = 4096;
    World w(std::make_shared<ModelConfig>(*find_preset("deepseek-v4")), find_policy("validated")->defenses, limits,
            Rollout::cross_request);
    constexpr std::uint8_t kDsSwa = 2;
    const std::uint32_t a = add(w, 1, ids(64), 1024, 0);
    prefill(w, a);
    ok(w, StepKind::finish, a);
    const std::uint32_t passed = seg(w, kDsSwa, 0, 768);
    ASSERT_NE(passed, kNone);
    ASSERT_TRUE(w.segments[passed].shed) << "the situation: it keeps the blocks before 256, 512 and 768";
    // [256, 384) holds none of the kept blocks (those end at 192, 256, 448, 512, 704, 768).
    const std::uint32_t rest = split_segment(w, passed, 256);
    ASSERT_NE(rest, kNone);
    ASSERT_NE(split_segment(w, rest, 384), kNone);
    ASSERT_EQ(seg(w, kDsSwa, 256, 384), rest);
    EXPECT_EQ(w.bytes_of(w.segments[rest]), 0u);

    std::uint64_t least = ~std::uint64_t{0};
    for (const Segment& s : w.segments)
        if (s.live && w.bytes_of(s) > 0) least = std::min(least, w.bytes_of(s));
    EXPECT_GE(least, w.derived.min_entry_bytes);
    // The offloads enabled now, by eviction list.
    const auto offloadable = [&] {
        std::vector<std::size_t> lists(w.lru_head.size());
        for (std::uint32_t id = 0; id < w.segments.size(); ++id)
            if (enabled(w, {StepKind::offload, id, 0})) ++lists[World::lru_list(w.segments[id])];
        return lists;
    };
    const std::size_t window_list = World::lru_list(w.segments[rest]);
    const std::vector<std::size_t> with_room = offloadable();
    for (std::size_t list = 0; list < with_room.size(); ++list) EXPECT_TRUE(may_offload_from(w, list));
    ASSERT_GT(std::count_if(with_room.begin(), with_room.end(), [](std::size_t n) { return n > 0; }), 1)
        << "entries of several lists can go while the tier has room";

    w.limits.disk_capacity_bytes = w.disk_used_bytes + w.derived.min_entry_bytes - 1;
    const std::vector<std::size_t> full = offloadable();
    for (std::size_t list = 0; list < full.size(); ++list) {
        EXPECT_EQ(may_offload_from(w, list), list == window_list) << "list " << list;
        if (list != window_list) {
            EXPECT_EQ(full[list], 0u) << "list " << list;
        }
    }
    EXPECT_EQ(full[window_list], 1u) << "only the part that holds nothing still fits";
    EXPECT_TRUE(enabled(w, {StepKind::offload, rest, 0}));
}

// resumable_blocks counts in closed form what window_block_resumable says block by block, for
// every preset with a window group, under policies with each kind of resume grain.
TEST(Extents, ResumableBlocksCountsWhatEachBlockSays) {
    for (const ModelConfig& config : presets()) {
        for (const char* policy : {"validated", "naive", "no-lcm"}) {
            const World w(std::make_shared<ModelConfig>(config), find_policy(policy)->defenses, Limits{},
                          Rollout::cross_request);
            for (std::uint8_t g = 0; g < config.groups.size(); ++g) {
                const CacheGroup& grp = config.groups[g];
                if (grp.kind != GroupKind::swa) continue;
                SCOPED_TRACE(config.name + " " + policy);
                const std::uint32_t b = grp.block_tokens;
                for (std::uint32_t from = 0; from <= 24 * b; from += b)
                    for (std::uint32_t to = from; to <= from + 40 * b; to += b) {
                        std::uint32_t one_by_one = 0;
                        for (std::uint32_t e = from + b; e <= to; e += b)
                            one_by_one += window_block_resumable(w, grp, e) ? 1 : 0;
                        ASSERT_EQ(resumable_blocks(w, g, from, to), one_by_one) << "(" << from << ", " << to << "]";
                    }
            }
        }
    }
}

// A reader that reads only part of a quiet extent splits it where the read ends before pinning, so
// the rest stays free to be evicted on its own; the reader's plan names the part it reads at its
// new epoch and reads clean, and a later reader of the whole reads both parts clean. (The reader
// diverges on the 32-token step grid, as Mooncake's 512-token blocks do on DeepSeek-V4's 256.)
TEST(Extents, AReaderSplitsTheExtentItReadsPartOf) {
    World w = toy_world("validated", 1 << 20, Rollout::cross_request, 128);
    const std::uint32_t b = extent_and_partial_reader(w, 4);
    const std::uint32_t whole = seg(w, kC1, 0, 128);
    ASSERT_NE(whole, kNone);
    EXPECT_EQ(lookup_step(w, b).resume_len, 64u);
    ok(w, StepKind::pin, b);
    EXPECT_EQ(seg(w, kC1, 0, 64), whole) << "the read part keeps the entry";
    const std::uint32_t rest = seg(w, kC1, 64, 128);
    ASSERT_NE(rest, kNone);
    EXPECT_EQ(w.segments[whole].pins, 1u);
    EXPECT_EQ(w.segments[rest].pins, 0u);
    EXPECT_TRUE(w.segments[rest].published);
    EXPECT_TRUE(enabled(w, {StepKind::evict, rest, 0})) << "the part nobody reads is evictable";
    for (StepKind k : {StepKind::revalidate, StepKind::allocate, StepKind::read, StepKind::commit, StepKind::finish})
        ok(w, k, b);

    const std::uint32_t c = add(w, 3, ids(9), 144, 0);
    const LookupResult r = lookup_step(w, c);
    EXPECT_EQ(r.resume_len, 128u) << "all that request 1 wrote";
    EXPECT_TRUE(plan_reads(w.requests[c], whole));
    EXPECT_TRUE(plan_reads(w.requests[c], rest));
    for (StepKind k :
         {StepKind::pin, StepKind::revalidate, StepKind::allocate, StepKind::read, StepKind::commit, StepKind::finish})
        ok(w, k, c);
}

// A split re-points only the plans that validated the extent as it is: a plan that names the id
// at an older epoch (what it validated was freed, and the id reused by another writer's extent)
// stays stale, and its reader looks up again instead of reading the other writer's content.
// (Found on the 1,000,000-request synthetic trace, where ids are reused all the time.)
TEST(Extents, ASplitLeavesAStalePlanOnAReusedIdStale) {
    World w = toy_world("validated", 1 << 20, Rollout::cross_request, 128);
    run_request(w, add(w, 1, ids(4), 64, 0));
    run_request(w, add(w, 2, ids(8), 128, 0));
    const std::uint32_t x = seg(w, kC1, 64, 128);
    ASSERT_NE(x, kNone) << "request 2 resumed at 64 and wrote the rest";
    const std::uint32_t r = add(w, 3, ids(9), 144, 0);
    ASSERT_EQ(lookup_step(w, r).resume_len, 128u);
    ASSERT_TRUE(plan_reads(w.requests[r], x));
    ok(w, StepKind::evict, x);
    std::vector<std::uint64_t> other;
    for (std::uint64_t b = 101; b <= 108; ++b) other.push_back(b);
    run_request(w, add(w, 4, other, 128, 0));
    ASSERT_EQ(seg(w, kC1, 0, 128), x) << "the freed id names another writer's extent now";
    std::vector<std::uint64_t> half(other.begin(), other.begin() + 4);
    for (std::uint64_t b : {301, 302, 303, 304}) half.push_back(b);
    const std::uint32_t c = add(w, 5, half, 128, 0);
    ASSERT_EQ(lookup_step(w, c).resume_len, 64u);
    ok(w, StepKind::pin, c);
    ASSERT_NE(seg(w, kC1, 64, 128), kNone) << "request 5's pin split the extent";
    ok(w, StepKind::pin, r);
    const Taken t = take(w, StepKind::revalidate, r);
    EXPECT_TRUE(t.outcome.stale_revalidation) << "request 3's plan named what was freed";
    EXPECT_TRUE(t.violations.empty());
}
