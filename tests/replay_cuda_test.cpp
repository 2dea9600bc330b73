// Replay on the CUDA backend: bit exactness of resume against recompute on the GPU, divergence
// naming, graph recapture after a replayed migration, and a CPU-versus-GPU report. Every test
// skips with a message when the build has no CUDA backend or the machine has no CUDA device.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "cuda_replay/clean_reads.hpp"
#include "cuda_replay/replay.hpp"
#include "model/core.hpp"
#include "tests/replay_fixtures.hpp"

using namespace kvcheck;
using namespace kvcheck::replay;

namespace {

using fixtures::deepseek;
using fixtures::toy;

class ReplayCuda : public ::testing::Test {
protected:
    void SetUp() override {
        if (!built_with_cuda())
            GTEST_SKIP() << "built without CUDA (nvcc not found at configure time or KVCHECK_CUDA=OFF)";
        std::string why;
        gpu_ = make_backend("cuda", why);
        if (!gpu_) GTEST_SKIP() << "no CUDA device present: " << why;
        cpu_ = make_cpu_backend();
    }

    std::unique_ptr<Backend> gpu_;
    std::unique_ptr<Backend> cpu_;
};

// Distance in units in the last place between two finite floats of the same sign.
std::int64_t ulps(float a, float b) {
    std::int32_t x = 0;
    std::int32_t y = 0;
    std::memcpy(&x, &a, sizeof x);
    std::memcpy(&y, &b, sizeof y);
    if (x < 0) x = static_cast<std::int32_t>(0x80000000u - static_cast<std::uint32_t>(x));
    if (y < 0) y = static_cast<std::int32_t>(0x80000000u - static_cast<std::uint32_t>(y));
    return std::llabs(static_cast<std::int64_t>(x) - y);
}

}  // namespace

// Proves: on the GPU, a correct resume reproduces the GPU's own from-scratch logits and tokens
// bit for bit, for the toy and deepseek-v4 presets at several resume points.
TEST_F(ReplayCuda, CorrectResumeIsBitExact) {
    for (const Schedule& s : {toy(32), toy(40), toy(96), toy(128), deepseek(256), deepseek(512)}) {
        SCOPED_TRACE(s.file);
        const ScheduleResult r = replay_schedule(s, *gpu_);
        EXPECT_TRUE(r.bit_exact) << (r.divergence ? r.divergence->group_name + " " + r.divergence->form : "");
    }
}

// Proves: broken reads diverge on the GPU too and are named by their own group and form.
TEST_F(ReplayCuda, BrokenReadsDivergeInTheirGroup) {
    const Schedule clean = toy(96);
    for (std::size_t i = 0; i < clean.reads.size(); ++i) {
        Schedule s = clean;
        s.reads[i].damage = i % 2 == 0 ? Damage::lost_block : Damage::misaligned;
        SCOPED_TRACE("read " + std::to_string(i));
        const ScheduleResult r = replay_schedule(s, *gpu_);
        ASSERT_FALSE(r.bit_exact);
        EXPECT_EQ(r.divergence->group, s.reads[i].group);
        EXPECT_EQ(r.divergence->form, model::form_name(s.reads[i].form));
    }
    Schedule stale = deepseek(512);
    for (Read& read : stale.reads)
        if (read.form == model::Form::indexer_state) read.source->index_weights_version = 4;
    const ScheduleResult r = replay_schedule(stale, *gpu_);
    ASSERT_FALSE(r.bit_exact);
    EXPECT_EQ(r.divergence->form, "indexer_state");
}

// Proves: reads whose bytes were reloaded move their buffers while the decode graph (captured at
// start-up) is live; the graph guard recaptures once before the next decode, and the result
// stays bit exact.
TEST_F(ReplayCuda, MigrationUnderCapturedGraphIsRecaptured) {
    Schedule s = toy(96);
    for (Read& read : s.reads) read.transport = {Transport::offload, Transport::load};
    const ScheduleResult moved = replay_schedule(s, *gpu_);
    EXPECT_TRUE(moved.bit_exact);
    EXPECT_EQ(moved.recaptures, 1);
    EXPECT_EQ(replay_schedule(toy(96), *gpu_).recaptures, 0);
}

// Proves: without the graph guard (the no-graph-guard mutant), the decode graph baked at start-up
// keeps reading and writing the buffers a reload moved away from: stale bytes lacking the rows
// prefilled after the reload. The resume diverges at its first decode step (the prompt's own
// positions were prefilled outside the graph), with the assembled cache itself correct (form
// `compute`) and no recapture; without a reload, the unguarded graph is bit exact.
TEST_F(ReplayCuda, NoGraphGuardReadsStaleAddressesAndDiverges) {
    std::string why;
    const std::unique_ptr<Backend> unguarded = make_backend("cuda", why, {.graph_guard = false});
    ASSERT_NE(unguarded, nullptr) << why;
    for (Schedule s : {toy(96), deepseek(512)}) {
        SCOPED_TRACE(s.file);
        EXPECT_TRUE(replay_schedule(s, *unguarded).bit_exact);
        for (Read& read : s.reads) read.transport = {Transport::offload, Transport::load};
        const ScheduleResult guarded = replay_schedule(s, *gpu_);
        EXPECT_TRUE(guarded.bit_exact);
        const ScheduleResult r = replay_schedule(s, *unguarded);
        ASSERT_FALSE(r.bit_exact);
        EXPECT_EQ(r.recaptures, 0);
        EXPECT_EQ(r.divergence->position, static_cast<int>(s.tokens.size()));
        EXPECT_EQ(r.divergence->form, "compute");
        EXPECT_EQ(r.reference_hash, guarded.reference_hash);
    }
}

// Proves: the GPU's reference does not depend on prefill chunking, including chunks larger than
// one kernel launch (256 tokens): the reductions are batch-invariant.
TEST_F(ReplayCuda, ReferenceDoesNotDependOnChunkSize) {
    Schedule a = deepseek(256);
    Schedule b = a;
    b.prefill_chunk_tokens = 7;
    Schedule c = a;
    c.prefill_chunk_tokens = 512;
    const std::uint64_t h = replay_schedule(a, *gpu_).reference_hash;
    EXPECT_EQ(replay_schedule(b, *gpu_).reference_hash, h);
    EXPECT_EQ(replay_schedule(c, *gpu_).reference_hash, h);
}

// Reports (does not require): how far the GPU's reference logits are from the CPU's. Both run the
// same operations in the same order without FMA, so they are expected to agree bitwise; a
// difference is printed and recorded, since bit exactness is only promised within one backend.
TEST_F(ReplayCuda, CpuVersusGpuReport) {
    for (const Schedule& s : {toy(96), deepseek(512)}) {
        const ScheduleResult c = replay_schedule(s, *cpu_);
        const ScheduleResult g = replay_schedule(s, *gpu_);
        std::int64_t worst = 0;
        std::size_t differing = 0;
        std::size_t total = 0;
        for (std::size_t i = 0; i < std::min(c.reference.logits.size(), g.reference.logits.size()); ++i)
            for (std::size_t v = 0; v < c.reference.logits[i].size(); ++v) {
                ++total;
                const std::int64_t d = ulps(c.reference.logits[i][v], g.reference.logits[i][v]);
                if (d != 0) ++differing;
                worst = std::max(worst, d);
            }
        std::printf("cpu-vs-gpu %s: %zu of %zu logits differ, max %lld ulp, tokens %s\n", s.file.c_str(), differing,
                    total, static_cast<long long>(worst),
                    c.reference.tokens == g.reference.tokens ? "equal" : "differ");
        RecordProperty(s.file + "_differing_logits", static_cast<int>(differing));
        RecordProperty(s.file + "_max_ulp", static_cast<int>(std::min<std::int64_t>(worst, 1 << 30)));
    }
}
