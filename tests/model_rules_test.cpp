// Unit tests of the cache-manager model's rules (model/): the four validation layers, the four red
// lines, rollout modes, the four verdicts, config checks, state hashing and the mutant table. The
// forms' lifecycles are in tests/model_test.cpp. Each test drives a small World through explicit
// steps and checks every invariant (structural checks on) after every step it expects to be clean.
#include "tests/model_fixtures.hpp"

using namespace kvcheck::model;
using namespace kvcheck::model::fixtures;

// ---------------------------------------------------------------------------------------------
// Validation layers
// ---------------------------------------------------------------------------------------------

// VL1: the derived LCM of every preset's block sizes.
TEST(ValidationLayers, Vl1LcmOfEveryPreset) {
    const std::map<std::string, std::uint32_t> expected = {
        {"deepseek-v32", 64},  {"deepseek-v4", 256}, {"gemma3-27b", 64}, {"gpt-oss-120b", 64},
        {"llama4-scout", 256}, {"qwen3-next", 784},  {"toy", 32},
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
            // Resident but misaligned (VL4) stays the group's own form.
            EXPECT_TRUE(has_miss(r, kC1, Form::compressed_kv, MissReason::misaligned));
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
            for (StepKind k : {StepKind::pin, StepKind::revalidate, StepKind::allocate, StepKind::read,
                               StepKind::commit, StepKind::finish})
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

// RL3 under F3: an indexer entry a request has pinned but not yet revalidated may skew, and
// revalidation catches it; once the request has revalidated, the entry does not skew until its
// read (a skew there would be read as validated, which no defence could see).
TEST(RedLines, Rl3NoIndexSkewUnderARevalidatedRead) {
    Pair p = finished_then_extended("validated", 64);
    lookup_step(p.w, p.b);
    ok(p.w, StepKind::pin, p.b);
    std::uint32_t index = kNone;
    for (const PlanEntry& e : p.w.requests[p.b].plan)
        if (e.form == Form::indexer_state && e.segment != kNone) index = e.segment;
    ASSERT_NE(index, kNone);
    const Step skew{StepKind::skew_index, index, 0};
    ASSERT_TRUE(enabled(p.w, skew)) << "pinned, not yet revalidated";
    World skewed = p.w;
    ok(skewed, StepKind::skew_index, index);
    EXPECT_TRUE(ok(skewed, StepKind::revalidate, p.b).stale_revalidation);
    ok(p.w, StepKind::revalidate, p.b);
    EXPECT_FALSE(enabled(p.w, skew)) << "revalidated: its read comes next";
    ok(p.w, StepKind::allocate, p.b);
    EXPECT_FALSE(enabled(p.w, skew));
    EXPECT_TRUE(take(p.w, StepKind::read, p.b).violations.empty());
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
// cache is not even a hit (each scope looks up in its own partition of the prefix index), under
// naive too (the scope is configuration, as rollout off is).
TEST(Rollout, IntraRequestReusesOnlyItsOwnScope) {
    for (const char* policy : {"validated", "naive"}) {
        SCOPED_TRACE(policy);
        World w = toy_world(policy, 1 << 20, Rollout::intra_request);
        const std::uint32_t a = add(w, 1, ids(4), 64, 0);
        run_request(w, a);
        const std::uint32_t same = add(w, 1, ids(5), 80, 0);  // a later turn of the same request
        const std::uint32_t other = add(w, 2, ids(5), 80, 0);
        const LookupResult own = lookup_step(w, same);
        EXPECT_EQ(own.resume_len, 64u);
        if (std::string(policy) == "validated") {
            EXPECT_EQ(own.verdict, VerdictKind::resumable);
        }
        const LookupResult foreign = lookup_step(w, other);
        EXPECT_EQ(foreign.hash_hit_len, 0u);
        EXPECT_EQ(foreign.resume_len, 0u);
        EXPECT_EQ(foreign.verdict, VerdictKind::full_recompute);
        EXPECT_TRUE(foreign.misses.empty());
    }
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
        for (std::uint32_t op : io_of(ok(p.w, StepKind::offload, seg(p.w, kC4, 64, 128))))
            ok(p.w, StepKind::io_complete, op);
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
    EXPECT_NE(broken([](ModelConfig& c) { c.groups = {c.groups[kSwa]}; }).find("full-attention group"),
              std::string::npos);
    EXPECT_NE(broken([](ModelConfig& c) { c.groups[kC1].block_tokens = 0; }).find("block_tokens must be positive"),
              std::string::npos);
    EXPECT_NE(broken([](ModelConfig& c) { c.groups[kC1].layers = 0; }).find("layers must be positive"),
              std::string::npos);
    EXPECT_NE(broken([](ModelConfig& c) { c.groups[kC4].segment_tokens = 40; }).find("multiple of block_tokens"),
              std::string::npos);
    EXPECT_NE(broken([](ModelConfig& c) { c.groups[kSwa].window_tokens = 0; }).find("window_tokens"),
              std::string::npos);
    EXPECT_NE(broken([](ModelConfig& c) { c.groups[kIndexer].indexed_group = kSwa; }).find("must name a full group"),
              std::string::npos);
    EXPECT_NE(broken([](ModelConfig& c) { c.groups[kIndexer].indexed_group = 9; }).find("must name a full group"),
              std::string::npos);
    EXPECT_NE(
        broken([](ModelConfig& c) { c.groups[kIndexer].indexed_group = kC4; }).find("segment_tokens == block_tokens"),
        std::string::npos)
        << "c4's 64-token segments are not block-sized";
    EXPECT_NE(broken([](ModelConfig& c) { c.groups[kLinear].state_bytes_layer = 0; }).find("state_bytes_layer"),
              std::string::npos);
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
        const bool differs =
            d.group_intersection != v.group_intersection || d.lcm_boundary != v.lcm_boundary ||
            d.layout_check != v.layout_check || d.alignment_check != v.alignment_check ||
            d.admission_cap != v.admission_cap || d.separate_freelists != v.separate_freelists ||
            d.revalidate != v.revalidate || d.pin != v.pin || d.graph_guard != v.graph_guard ||
            d.swa_window_check != v.swa_window_check || d.index_version_check != v.index_version_check ||
            d.residency_check != v.residency_check || d.tail_boundary_check != v.tail_boundary_check ||
            d.whole_segment_check != v.whole_segment_check || d.pin_all_groups_first != v.pin_all_groups_first ||
            d.publish_after_complete != v.publish_after_complete || d.own_block_size_index != v.own_block_size_index ||
            d.drop_verdict_on_failed_load != v.drop_verdict_on_failed_load ||
            d.truncate_every_group != v.truncate_every_group || d.restore_index_with_kv != v.restore_index_with_kv ||
            d.load_length_check != v.load_length_check || d.rollout_scope != v.rollout_scope ||
            d.hash_hit_is_enough != v.hash_hit_is_enough;
        EXPECT_TRUE(differs) << p.name << " has the validated defenses";
    }
    EXPECT_GE(mutants, 14u);
}
