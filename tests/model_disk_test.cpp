// Unit tests of the model's on-disk prefix (model/transfer.cpp and the load steps): offloads and
// loads, the host/disk tier (its capacity, tier eviction, host memory), failed and partial loads,
// and requests that stop waiting on their loads or end at them. Each test drives a small World
// through explicit steps and checks every invariant (structural checks on) after every step it
// expects to be clean.
#include <algorithm>

#include "model/driver.hpp"
#include "tests/model_fixtures.hpp"

using namespace kvcheck::model;
using namespace kvcheck::model::fixtures;

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
    EXPECT_FALSE(enabled(p.w, {StepKind::pin, p.b, 0}))
        << "registered is not resident: nothing is read before the loads";
    for (std::uint32_t op : io_of(look)) ok(p.w, StepKind::io_complete, op);
    EXPECT_EQ(p.w.requests[p.b].phase, Phase::io_done);
    const LookupResult again = lookup_step(p.w, p.b);
    EXPECT_EQ(again.verdict, VerdictKind::resumable);
    EXPECT_EQ(again.resume_len, 64u);
    for (StepKind k : {StepKind::pin, StepKind::revalidate, StepKind::allocate, StepKind::read, StepKind::commit})
        ok(p.w, k, p.b);
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
    for (StepKind k : {StepKind::revalidate, StepKind::allocate, StepKind::read, StepKind::commit, StepKind::finish})
        ok(p.w, k, p.b);
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
        EXPECT_EQ(p.w.find(first_key, kC1, false, 0), kNone) << "a dropped prefix is no longer registered";
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
    Driver driver;
    const std::vector<Violation>& drift = driver.check(p.w, StepOutcome{});
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

// A request whose load failed ends there under a driver's `fail` policy (abort): it computes
// nothing, holds nothing, and its slot can be released; the loads still in flight for it go on
// and land. A request not waiting on loads cannot abort.
TEST(OnDiskPrefix, AbortEndsTheRequestAndLeavesItsLoads) {
    Pair p = finished_then_extended("validated", 128);
    const std::uint32_t kv = seg(p.w, kC1, 112, 128);
    for (std::uint32_t op : io_of(ok(p.w, StepKind::offload, kv))) ok(p.w, StepKind::io_complete, op);
    ASSERT_FALSE(enabled(p.w, {StepKind::abort, p.b, 0}));
    const StepOutcome look = ok(p.w, StepKind::lookup, p.b);
    ASSERT_EQ(look.lookup->verdict, VerdictKind::io_wait);
    ASSERT_GE(look.io_started.size(), 2u);
    const std::uint32_t failing = look.io_started.front();
    const std::uint32_t failed_segment = p.w.io[failing].segment;
    ok(p.w, StepKind::io_fail, failing);
    EXPECT_TRUE(p.w.requests[p.b].load_failed);
    ok(p.w, StepKind::abort, p.b);
    EXPECT_EQ(p.w.requests[p.b].phase, Phase::done);
    EXPECT_TRUE(p.w.requests[p.b].pinned.empty());
    EXPECT_TRUE(p.w.requests[p.b].owned.empty());
    p.w.release_request(p.b);
    for (std::size_t i = 1; i < look.io_started.size(); ++i) {
        const std::uint32_t op = look.io_started[i];
        EXPECT_EQ(p.w.io[op].request, kNone) << "its other loads go on without it";
        ok(p.w, StepKind::io_complete, op);
        EXPECT_EQ(p.w.segments[p.w.io[op].segment].stage, Stage::ready);
    }
    EXPECT_EQ(p.w.segments[failed_segment].stage, Stage::on_disk) << "the failed load left its entry on disk";
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
        const bool partial_offered =
            std::any_of(offered.begin(), offered.end(), [](const Step& s) { return s.kind == StepKind::partial_load; });
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
