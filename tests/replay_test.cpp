// Replay of schedules with the tiny model on the CPU reference backend: correct resumes are bit
// exact, every kind of broken read diverges and is named by its own group, the loader rejects bad
// input with JSON pointers. The CLI's exit codes and flags are in tests/replay_cli_test.cpp.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cuda_replay/clean_reads.hpp"
#include "cuda_replay/read_bytes.hpp"
#include "cuda_replay/replay.hpp"
#include "cuda_replay/replay_many.hpp"
#include "model/core.hpp"
#include "sim/io/input_error.hpp"
#include "tests/replay_fixtures.hpp"

using namespace kvcheck;
using namespace kvcheck::replay;

namespace {

using fixtures::deepseek;
using fixtures::random_tokens;
using fixtures::toy;

const Backend& cpu() {
    static const std::unique_ptr<Backend> backend = make_cpu_backend();
    return *backend;
}

ScheduleResult run(const Schedule& s) { return replay_schedule(s, cpu()); }

// Expects a divergence first seen in `group` with `form` (empty: any form).
void expect_named(const ScheduleResult& r, int group, const std::string& form) {
    ASSERT_FALSE(r.bit_exact);
    ASSERT_TRUE(r.divergence.has_value());
    EXPECT_EQ(r.divergence->group, group);
    if (!form.empty()) {
        EXPECT_EQ(r.divergence->form, form);
    }
}

std::string form_of(const Read& read) { return std::string(model::form_name(read.form)); }

// Groups are looked up by name, so the tests do not depend on the order of a preset's groups.
int group_named(const Schedule& s, const std::string& name) {
    for (std::size_t i = 0; i < s.groups.size(); ++i)
        if (s.groups[i].name == name) return static_cast<int>(i);
    ADD_FAILURE() << "no group named " << name;
    return -1;
}

}  // namespace

// Proves: a resume whose reads are the request's own bytes (current weights, reader layout,
// exact live regions) reproduces the from-scratch logits and tokens bit for bit, at block-aligned
// and unaligned resume points alike, and the reference never depends on the resume point.
TEST(ReplayToy, CorrectResumeIsBitExactAtSeveralPoints) {
    std::uint64_t reference = 0;
    for (int n : {0, 16, 32, 40, 64, 96, 128, 159}) {
        SCOPED_TRACE("resume_len=" + std::to_string(n));
        const ScheduleResult r = run(toy(n));
        EXPECT_TRUE(r.bit_exact) << (r.divergence ? r.divergence->group_name + " " + r.divergence->form : "");
        EXPECT_EQ(r.agreement, Agreement::agree);
        EXPECT_EQ(r.resumed_hash, r.reference_hash);
        if (reference == 0) reference = r.reference_hash;
        EXPECT_EQ(r.reference_hash, reference);
    }
}

// Proves: the same for the deepseek-v4 preset (compressed segments, a long uncompressed tail,
// SWA and the indexer over compressed blocks).
TEST(ReplayDeepseek, CorrectResumeIsBitExact) {
    for (int n : {256, 512}) {
        SCOPED_TRACE("resume_len=" + std::to_string(n));
        const ScheduleResult r = run(deepseek(n));
        EXPECT_TRUE(r.bit_exact) << (r.divergence ? r.divergence->group_name + " " + r.divergence->form : "");
    }
}

namespace {

// Everything a replay reports about a schedule, for comparing two ways of computing it.
void expect_same_result(const ScheduleResult& a, const ScheduleResult& b) {
    EXPECT_EQ(a.reference_hash, b.reference_hash);
    EXPECT_EQ(a.resumed_hash, b.resumed_hash);
    EXPECT_EQ(a.bit_exact, b.bit_exact);
    ASSERT_EQ(a.divergence.has_value(), b.divergence.has_value());
    if (a.divergence) {
        EXPECT_EQ(a.divergence->group, b.divergence->group);
        EXPECT_EQ(a.divergence->form, b.divergence->form);
        EXPECT_EQ(a.divergence->position, b.divergence->position);
    }
}

// The same schedule with every source written as an explicit token list instead of "request".
Schedule with_explicit_sources(Schedule s) {
    for (Read& read : s.reads)
        if (read.source) read.source->request = false;
    return s;
}

}  // namespace

// Proves: the fast CPU path (the default backend) computes every bit that the scalar path
// computes, where the scalar path calls the kernel_math.hpp functions one result at a time as the
// CUDA kernels do: references, resumed runs and divergences agree on every preset, with splits
// that span compressed entries and raw rows, partial splits, indexers over compressed and plain
// groups, chunked and linear layers, and damaged reads.
TEST(ReplayCpuPaths, FastPathEqualsScalarPath) {
    const std::unique_ptr<Backend> scalar = make_cpu_scalar_backend();
    EXPECT_EQ(scalar->name(), "cpu-scalar");
    std::vector<Schedule> cases = {toy(0), toy(40), toy(96), toy(159), deepseek(512)};
    Schedule damaged = toy(96);
    for (std::size_t i = 0; i < damaged.reads.size(); ++i)
        damaged.reads[i].damage = i % 2 == 0 ? Damage::lost_half : Damage::misaligned;
    cases.push_back(damaged);
    for (const model::ModelConfig& config : model::presets()) {
        if (config.name == "toy") continue;
        cases.push_back(clean_schedule(config, random_tokens(13, 900), 800, 2, 300, 2));
    }
    for (const Schedule& s : cases) {
        SCOPED_TRACE(s.file);
        const ScheduleResult fast = run(s);
        const ScheduleResult slow = replay_schedule(s, *scalar);
        expect_same_result(fast, slow);
        ASSERT_EQ(fast.reference.logits.size(), slow.reference.logits.size());
        for (std::size_t i = 0; i < fast.reference.logits.size(); ++i)
            EXPECT_EQ(
                std::memcmp(fast.reference.logits[i].data(), slow.reference.logits[i].data(), kVocab * sizeof(float)),
                0);
    }
}

// Proves: bytes the replay takes from its reference run for "request" sources are the bytes an
// honest from-scratch run over source.tokens[0:source.end] gives, for every form and for ranges
// that end inside a segment or block the source had not completed (such entries are zeros in the
// honest run although the reference, which ran further, wrote them).
TEST(ReplayToy, ReferenceBytesEqualHonestSourceBytes) {
    const Schedule s = toy(96);
    const std::vector<LayerSpec> specs = layer_specs(s.groups);
    const TinyModel model(specs, s.weights_version);
    const auto run_over = [&](int length) {
        const auto session = cpu().open(model, length);
        std::vector<float> hidden;
        session->prefill(std::span<const int>(s.tokens).first(static_cast<std::size_t>(length)), hidden);
        return session->save();
    };
    const CacheState reference = run_over(static_cast<int>(s.tokens.size()));
    int compared = 0;
    for (const Read& clean : s.reads) {
        if (clean.form == model::Form::linear_state) continue;  // needs a run of exactly its tokens
        for (int end : {clean.end, clean.end - 1, clean.end + 5, clean.end + 17}) {
            Read read = clean;
            if (end <= read.start || end > static_cast<int>(s.tokens.size())) continue;
            read.end = read.source->end = end;
            SCOPED_TRACE(form_of(read) + " [" + std::to_string(read.start) + ", " + std::to_string(end) + ")");
            const LayerShape& shape = specs[static_cast<std::size_t>(read.group)].shape;
            const int layout = s.layouts[static_cast<std::size_t>(read.group)];
            const CacheState honest = run_over(end);
            EXPECT_EQ(rows_seen(shape, read, &reference, layout).data, rows_seen(shape, read, &honest, layout).data);
            ++compared;
        }
    }
    EXPECT_GE(compared, 12);
}

// Proves: taking "request" sources from the reference gives the same replay results as running
// every source from scratch (explicit token lists), for clean, damaged, mis-laid-out and
// mid-segment reads; and sources whose token lists are prefixes of one another share one run.
TEST(ReplayToy, RequestSourcesReplayLikeExplicitSources) {
    std::vector<Schedule> cases = {toy(96), toy(100), toy(40)};
    Schedule damaged = toy(96);
    for (std::size_t i = 0; i < damaged.reads.size(); ++i)
        damaged.reads[i].damage = i % 3 == 0 ? Damage::lost_block : i % 3 == 1 ? Damage::unwritten : Damage::none;
    cases.push_back(damaged);
    Schedule layout = toy(96);
    for (Read& read : layout.reads) read.source->layout += 1;
    cases.push_back(layout);
    Schedule mid_segment = toy(100);
    for (Read& read : mid_segment.reads)
        if (read.form == model::Form::compressed_kv || read.form == model::Form::indexer_state)
            read.end = read.source->end = 100;
    cases.push_back(mid_segment);
    for (const Schedule& s : cases) {
        SCOPED_TRACE(s.file);
        expect_same_result(run(s), run(with_explicit_sources(s)));
    }
}

// Proves: each damage kind on each read changes the output, and the first difference names the
// read's own group and form (not a later layer that merely inherits the difference).
TEST(ReplayToy, EveryDamageKindDivergesInItsGroup) {
    const Schedule clean = toy(96);
    for (Damage damage : {Damage::unwritten, Damage::lost_half, Damage::lost_block, Damage::misaligned, Damage::torn})
        for (std::size_t i = 0; i < clean.reads.size(); ++i) {
            Schedule s = clean;
            s.reads[i].damage = damage;
            SCOPED_TRACE(std::string(damage_name(damage)) + " on read " + std::to_string(i) + " " +
                         form_of(s.reads[i]));
            const ScheduleResult r = run(s);
            expect_named(r, s.reads[i].group, form_of(s.reads[i]));
            EXPECT_EQ(r.divergence->position, 96);
            EXPECT_EQ(r.agreement, Agreement::false_alarm);  // the oracle of a clean schedule says clean
        }
}

// Proves: bytes computed under another weights version, or written in another layout than the
// reader expects, diverge in the group that read them.
TEST(ReplayToy, WrongWeightsOrLayoutDivergesInItsGroup) {
    const Schedule clean = toy(96);
    for (std::size_t i = 0; i < clean.reads.size(); ++i) {
        SCOPED_TRACE("read " + std::to_string(i) + " " + form_of(clean.reads[i]));
        Schedule weights = clean;
        weights.reads[i].source->weights_version = 4;
        expect_named(run(weights), clean.reads[i].group, form_of(clean.reads[i]));
        Schedule layout = clean;
        layout.reads[i].source->layout += 1;
        expect_named(run(layout), clean.reads[i].group, form_of(clean.reads[i]));
    }
}

// Proves: an index built over KV of another weights version (a stale index) changes the output
// through the indexer's gating, and is named as the indexer's state.
TEST(ReplayToy, StaleIndexDiverges) {
    Schedule s = toy(96);
    for (Read& read : s.reads)
        if (read.form == model::Form::indexer_state) read.source->index_weights_version = 2;
    expect_named(run(s), group_named(s, "indexer"), "indexer_state");
}

// Proves: a missing read (the range stays zero), a read with no registered source, and a window
// that no longer covers [pos - W, pos) all diverge in their group.
TEST(ReplayToy, MissingRangesDiverge) {
    const Schedule clean = toy(96);
    for (std::size_t i = 0; i < clean.reads.size(); ++i) {
        SCOPED_TRACE("without read " + std::to_string(i) + " " + form_of(clean.reads[i]));
        Schedule dropped = clean;
        dropped.reads.erase(dropped.reads.begin() + static_cast<std::ptrdiff_t>(i));
        expect_named(run(dropped), clean.reads[i].group, form_of(clean.reads[i]));
        Schedule unregistered = clean;
        unregistered.reads[i].source.reset();
        expect_named(run(unregistered), clean.reads[i].group, form_of(clean.reads[i]));
    }
    Schedule expired = clean;
    for (Read& read : expired.reads)
        if (read.form == model::Form::swa_window)
            read.start = read.source->start = 96 - 48, read.end = read.source->end = 96 - 16;
    expect_named(run(expired), group_named(clean, "swa"), "swa_window");
}

// Proves: a linear state taken after the wrong number of tokens diverges, whether the source or
// the claimed position is off.
TEST(ReplayToy, LinearStateFromWrongPositionDiverges) {
    Schedule source_off = toy(96);
    Schedule claim_off = source_off;
    for (Read& read : source_off.reads)
        if (read.form == model::Form::linear_state) read.source->end = 80;
    expect_named(run(source_off), group_named(source_off, "linear"), "linear_state");
    for (Read& read : claim_off.reads)
        if (read.form == model::Form::linear_state) read.end = read.source->end = 64;
    expect_named(run(claim_off), group_named(claim_off, "linear"), "linear_state");
}

// Proves: raw tail rows read where a compressed segment belongs leave the compressed entries
// empty, which diverges and is named as the group's compressed_kv (toy c4 and deepseek-v4 c4).
TEST(ReplayToy, RawTailWhereCompressedSegmentBelongsDiverges) {
    Schedule s = toy(96);
    const int c4 = group_named(s, "c4");
    for (Read& read : s.reads)
        if (read.group == c4 && read.form == model::Form::compressed_kv) read.form = model::Form::uncompressed_tail;
    expect_named(run(s), c4, "compressed_kv");
}

TEST(ReplayDeepseek, RawTailWhereCompressedSegmentBelongsDiverges) {
    Schedule s = deepseek(512);
    const int c4 = group_named(s, "c4");
    for (Read& read : s.reads)
        if (read.group == c4 && read.form == model::Form::compressed_kv) read.form = model::Form::uncompressed_tail;
    expect_named(run(s), c4, "compressed_kv");
}

// Proves: on deepseek-v4, a stale index and a lost block of a compressed segment are caught and
// named (indexer over compressed c4 blocks; c4 itself).
TEST(ReplayDeepseek, StaleIndexAndLostBlockDiverge) {
    Schedule stale = deepseek(512);
    Schedule lost = stale;
    for (Read& read : stale.reads)
        if (read.form == model::Form::indexer_state) read.source->index_weights_version = 4;
    expect_named(run(stale), group_named(stale, "indexer"), "indexer_state");
    const int c4 = group_named(lost, "c4");
    for (Read& read : lost.reads)
        if (read.group == c4 && read.form == model::Form::compressed_kv) read.damage = Damage::lost_block;
    expect_named(run(lost), c4, "compressed_kv");
}

// Proves: on deepseek-v4 a missing SWA window diverges although no logit changes: SWA is the
// layer below only the indexer, which keeps no per-position KV of its own, so the damaged window
// changes the outputs of the positions that read it and nothing the last position sees. Those
// outputs are compared too (in the engine every layer's output feeds the caches above it); the
// quickstart export's naive schedules with unregistered SWA blocks are such cases.
TEST(ReplayDeepseek, MissingSwaWindowDivergesAlthoughLogitsAgree) {
    // 800 tokens: the last prompt position's window [671, 799] lies after the missing [384, 512).
    Schedule s = clean_schedule(*model::find_preset("deepseek-v4"), random_tokens(11, 800), 512, 5, 200, 3);
    const int swa = group_named(s, "swa");
    s.reads.erase(std::remove_if(s.reads.begin(), s.reads.end(), [&](const Read& r) { return r.group == swa; }),
                  s.reads.end());
    s.oracle_corrupt = true;
    const ScheduleResult r = run(s);
    EXPECT_EQ(r.resumed_hash, r.reference_hash);  // logits and tokens are equal
    expect_named(r, swa, "swa_window");
    EXPECT_EQ(r.divergence->position, 512);
    EXPECT_EQ(r.agreement, Agreement::agree);
}

// Proves: bytes that travel to host memory and a file and back (offload, load) are still bit
// exact, and that the CPU backend has no graphs to recapture.
TEST(ReplayToy, TransportThroughHostAndFileKeepsBitExactness) {
    Schedule s = toy(96);
    for (Read& read : s.reads) read.transport = {Transport::offload, Transport::load};
    const ScheduleResult r = run(s);
    EXPECT_TRUE(r.bit_exact);
    EXPECT_EQ(r.recaptures, 0);
    const std::vector<float> bytes{1.5f, -0.0f, 3e-39f, 7.0f};
    const std::vector<float> back = carry(bytes, {Transport::offload, Transport::load, Transport::offload});
    ASSERT_EQ(back.size(), bytes.size());
    EXPECT_EQ(std::memcmp(back.data(), bytes.data(), bytes.size() * sizeof(float)), 0);
}

// Proves: a source token list that only shares the prompt's prefix still gives the same bytes
// (causality), while a source whose prefix differs in one token diverges.
TEST(ReplayToy, SourcesAreKeyedByTheirPrefix) {
    Schedule longer = toy(96);
    Schedule other = longer;
    for (Read& read : longer.reads) read.source->tokens.insert(read.source->tokens.end(), {1, 2, 3});
    EXPECT_TRUE(run(longer).bit_exact);
    const int c1 = group_named(other, "c1");
    for (Read& read : other.reads)
        if (read.group == c1) read.source->tokens[5] = (read.source->tokens[5] + 1) % kVocab;
    expect_named(run(other), c1, "compressed_kv");
}

// Proves: prefill chunking does not change any bit (the reductions are batch-invariant), so the
// reference is the same for chunk sizes that put boundaries at different absolute positions.
TEST(ReplayToy, ReferenceDoesNotDependOnChunkSize) {
    Schedule a = toy(96);
    Schedule b = a;
    b.prefill_chunk_tokens = 7;
    EXPECT_EQ(run(a).reference_hash, run(b).reference_hash);
}

// Proves: a model with a chunked-attention group and a 2x compressed group resumes bit exactly
// mid-chunk, and a missing chunk read diverges in the chunked group.
TEST(ReplayCustom, ChunkedGroupResumes) {
    model::ModelConfig config = *model::find_preset("toy");
    for (model::CacheGroup& g : config.groups) {
        if (g.name == "c4") g.compress_ratio = 2;
        if (g.name == "swa") g.kind = model::GroupKind::chunked;
    }
    Schedule s = clean_schedule(config, random_tokens(5, 120), 80, 9, 32, 2);
    EXPECT_TRUE(run(s).bit_exact);
    const int chunked = group_named(s, "swa");
    s.reads.erase(std::remove_if(s.reads.begin(), s.reads.end(), [&](const Read& r) { return r.group == chunked; }),
                  s.reads.end());
    expect_named(run(s), chunked, "swa_window");
}

// Proves: the summary counts verdicts and oracle agreement: a clean bit-exact schedule and a
// corrupt one the oracle flagged agree; the others are a false alarm and a miss.
TEST(ReplaySummary, CountsOracleAgreement) {
    Schedule clean = toy(64);
    Schedule corrupt = clean;
    corrupt.reads[0].damage = Damage::unwritten;
    corrupt.oracle_corrupt = true;
    Schedule false_alarm = corrupt;
    false_alarm.oracle_corrupt = false;
    Schedule miss = clean;
    miss.oracle_corrupt = true;
    const Summary s = summarize({run(clean), run(corrupt), run(false_alarm), run(miss)});
    EXPECT_EQ(s.schedules, 4);
    EXPECT_EQ(s.bit_exact, 2);
    EXPECT_EQ(s.diverged, 2);
    EXPECT_EQ(s.divergences.size(), 2u);
    EXPECT_EQ(s.agree, 2);
    EXPECT_EQ(s.false_alarm, 1);
    EXPECT_EQ(s.miss, 1);
    EXPECT_FALSE(s.oracle_agrees());
    const nlohmann::json j = summary_json(s, "cpu");
    for (const char* key : {"schedules", "bit_exact", "diverged", "divergences", "oracle_agreement"})
        EXPECT_TRUE(j.contains(key)) << key;
    EXPECT_EQ(j["divergences"][0]["group"], corrupt.groups[static_cast<std::size_t>(corrupt.reads[0].group)].name);
    EXPECT_EQ(j["oracle_agreement"]["miss"], 1);
}

// Proves: the example schedules shipped in cuda_replay/examples (used by tools/gpu-check.sh when
// no exported schedules exist) still load and replay as their oracle says.
TEST(ReplayExamples, AgreeWithTheirOracle) {
    const std::filesystem::path dir = std::filesystem::path(KVCHECK_SOURCE_DIR) / "cuda_replay" / "examples";
    std::vector<ScheduleResult> results;
    for (const auto& entry : std::filesystem::directory_iterator(dir))
        results.push_back(run(load_schedule(entry.path().string())));
    const Summary s = summarize(std::move(results));
    EXPECT_EQ(s.schedules, 6);
    EXPECT_EQ(s.diverged, 3);
    EXPECT_TRUE(s.oracle_agrees()) << summary_json(s, "cpu").dump(2);
}

// Proves: replay_all on two threads reports each schedule once to its progress callback as it
// finishes, and returns results in input order, equal to replaying each alone.
TEST(ReplayExamples, ReplayAllReportsEachScheduleOnce) {
    const std::filesystem::path dir = std::filesystem::path(KVCHECK_SOURCE_DIR) / "cuda_replay" / "examples";
    std::vector<Schedule> schedules;
    for (const std::string& file : schedule_files(dir.string())) schedules.push_back(load_schedule(file));
    std::string why;
    const std::unique_ptr<Backend> backend = make_backend("cpu", why, {});
    ASSERT_NE(backend, nullptr) << why;
    std::multiset<std::int64_t> reported;
    std::size_t calls = 0;
    const std::vector<ScheduleResult> results = replay_all(schedules, *backend, 2, [&](const ScheduleResult& r) {
        ++calls;
        reported.insert(r.request);
    });
    ASSERT_EQ(results.size(), schedules.size());
    EXPECT_EQ(calls, schedules.size());
    std::multiset<std::int64_t> expected;
    for (std::size_t i = 0; i < schedules.size(); ++i) {
        expected.insert(results[i].request);
        EXPECT_EQ(results[i].resumed_hash, run(schedules[i]).resumed_hash) << i;
    }
    EXPECT_EQ(reported, expected);
}

// Proves: layouts are a bijection when writer and reader agree, and any two different ids
// disagree even on a single row.
TEST(ReplayLayout, SameLayoutRoundTripsDifferentLayoutsDisagree) {
    ReadRows rows{2, 1, {}};
    for (int i = 0; i < 2 * kModel; ++i) rows.data.push_back(static_cast<float>(i));
    for (int writer : {1, 2, 3, 4}) {
        EXPECT_EQ(decode_layout(encode_layout(rows, writer), 2, 1, writer).data, rows.data);
        for (int reader : {1, 2, 3, 4})
            if (reader != writer) {
                EXPECT_NE(decode_layout(encode_layout(rows, writer), 2, 1, reader).data, rows.data);
            }
    }
}

// Proves: a schedule survives writing and loading unchanged.
TEST(ReplayLoader, RoundTrips) {
    Schedule s = toy(96);
    s.reads[0].transport = {Transport::offload, Transport::load};
    s.reads[1].damage = Damage::lost_half;
    const nlohmann::json j = schedule_to_json(s);
    EXPECT_EQ(schedule_to_json(parse_schedule(j, "x.json")), j);
}

// Proves: bad input becomes an InputError naming the file and the JSON pointer of the bad value.
TEST(ReplayLoader, ErrorsCarryJsonPointers) {
    const nlohmann::json good = schedule_to_json(toy(96));
    const auto pointer_of = [](const nlohmann::json& doc) -> std::string {
        try {
            parse_schedule(doc, "bad.json");
        } catch (const sim::InputError& e) {
            EXPECT_EQ(e.file(), "bad.json");
            return e.place();
        }
        return "(accepted)";
    };
    nlohmann::json j = good;
    j["reads"][3]["start"] = j["reads"][3]["end"];
    EXPECT_EQ(pointer_of(j), "/reads/3/start");
    j = good;
    j["reads"][1]["end"] = 161;
    EXPECT_EQ(pointer_of(j), "/reads/1/end");
    j = good;
    j["tokens"][5] = 256;
    EXPECT_EQ(pointer_of(j), "/tokens/5");
    j = good;
    j["reads"][0]["group"] = 5;
    EXPECT_EQ(pointer_of(j), "/reads/0/group");
    j = good;
    j["reads"][0]["form"] = "linear_state";
    EXPECT_EQ(pointer_of(j), "/reads/0/form");
    j = good;
    EXPECT_EQ(j["reads"][2]["source"]["tokens"], "request");  // the writer abbreviates the prompt
    j["reads"][2]["source"]["tokens"] = j["tokens"];
    j["reads"][2]["source"]["tokens"][0] = -1;
    EXPECT_EQ(pointer_of(j), "/reads/2/source/tokens/0");
    j = good;
    j["reads"][2]["damage"] = "scrambled";
    EXPECT_EQ(pointer_of(j), "/reads/2/damage");
    j = good;
    j["layouts"].erase(0);
    EXPECT_EQ(pointer_of(j), "/layouts");
    j = good;
    j["resume_len"] = 160;
    EXPECT_EQ(pointer_of(j), "/resume_len");
    j = good;
    j["model"]["groups"][3]["indexed_group"] = 4;
    EXPECT_EQ(pointer_of(j), "/model/groups/3/indexed_group");
    j = good;
    j.erase("oracle");
    EXPECT_EQ(pointer_of(j), "/oracle");
    j = good;
    j["schema"] = "kvcheck.schedule/2";
    EXPECT_EQ(pointer_of(j), "/schema");
}
