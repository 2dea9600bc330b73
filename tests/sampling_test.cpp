// Parallel sampling (`workload.samples`): a prompt's further sampled answers are requests forked
// after its prefill, which resume the prompt and decode answers of their own (docs/traces.md,
// "Parallel sampling").
#include "tests/cli_fixtures.hpp"

namespace {
// cli_fixtures.hpp's kvcheck(), named before namespace kvcheck makes that name ambiguous.
const auto run_kvcheck = &kvcheck;
}  // namespace

#include "sim/check/explorer.hpp"
#include "sim/check/scope.hpp"
#include "tests/model_fixtures.hpp"

namespace {

namespace model = kvcheck::model;
using namespace kvcheck::model::fixtures;

// Proves: a sampled answer keys the prompt as the first answer's request does and its answer
// apart from every other answer of that prompt; answer 0 keeps the keys a request of its own has.
TEST(SampleSpec, SharesThePromptAndKeysItsOwnAnswer) {
    const model::RequestSpec first = model::make_request_spec(1, ids(5), 16, 80, 32);
    const model::RequestSpec second = model::sample_of(first, 2, 1);
    const model::RequestSpec third = model::sample_of(first, 3, 2);
    EXPECT_EQ(second.reuse_scope, first.reuse_scope);
    for (std::uint32_t t = 1; t <= 80; ++t) ASSERT_EQ(second.key(t), first.key(t)) << t;
    for (std::uint32_t t = 81; t <= 112; ++t) {
        EXPECT_NE(second.key(t), first.key(t)) << t;
        EXPECT_NE(second.key(t), third.key(t)) << t;
    }
    EXPECT_EQ(first.key(100), model::make_request_spec(9, ids(5), 16, 80, 32).key(100));
}

nlohmann::json run_json(const nlohmann::json& workload, const std::string& policy, const std::string& name) {
    const nlohmann::json scenario = {
        {"name", name}, {"model", "toy"}, {"workload", workload}, {"compute", {{"decode_ms_per_token", 20}}}};
    const fs::path file = scratch(name) / "scenario.json";
    write_text(file, scenario.dump());
    const Outcome o = run_kvcheck({"run", file.string(), "--policy", policy, "--json", "--quiet"});
    EXPECT_TRUE(o.code == 0 || o.code == 1) << o.all();
    return nlohmann::json::parse(o.out);
}

nlohmann::json one_request(std::uint32_t samples) {
    nlohmann::json w = {
        {"block_size", 16},
        {"requests", {{{"at_ms", 0}, {"input_tokens", 80}, {"output_tokens", 64}, {"blocks", {1, 2, 3, 4, 5}}}}}};
    if (samples != 1) w["samples"] = samples;
    return w;
}

// Proves: three answers of an 80-token prompt make three requests; the two forked after the
// prefill resume its first 64 tokens (the c4 segment's boundary) and compute the rest, with every
// invariant holding; `samples_forked` counts them and is absent without sampling, whose run is
// the same as before the option existed (one request, nothing reused).
TEST(SampleRuns, ForkedAnswersResumeThePrompt) {
    const nlohmann::json one = run_json(one_request(1), "validated", "samples-1");
    EXPECT_EQ(one["requests"], 1);
    EXPECT_FALSE(one.contains("samples_forked"));
    EXPECT_EQ(one["reused_tokens"], 0);

    const nlohmann::json three = run_json(one_request(3), "validated", "samples-3");
    EXPECT_EQ(three["requests"], 3);
    EXPECT_EQ(three["samples_forked"], 2);
    EXPECT_EQ(three["verdicts"]["resumable"], 2);
    EXPECT_EQ(three["reused_tokens"], 128);
    EXPECT_EQ(three["computed_tokens"], 80 + 2 * 16);
    EXPECT_EQ(three["silent_corruptions"], 0);
    for (const auto& [name, count] : three["invariant_violations"].items()) EXPECT_EQ(count, 0) << name;
}

// Proves: with sessions and two answers a prompt, the next turn continues the first answer's
// request (the one the trace line made): it waits for it once (a forked answer's finish releases
// nothing again) and resumes that prompt and answer.
TEST(SampleRuns, ANextTurnContinuesTheFirstAnswer) {
    nlohmann::json w = one_request(2);
    w["requests"].push_back(
        {{"at_ms", 1}, {"input_tokens", 160}, {"output_tokens", 1}, {"blocks", {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}}});
    w["sessions"] = true;
    const nlohmann::json r = run_json(w, "validated", "samples-sessions");
    EXPECT_EQ(r["requests"], 4);  // two answers of each prompt
    EXPECT_EQ(r["sessions"], (nlohmann::json{{"turns", 1}, {"waited", 1}}));
    // The second answer resumes 64 of the first prompt; the turn 128 of the first prompt and
    // answer (the 32-token grain below 144), the turn's second answer 128 of the turn's prompt
    // (the grain below 159: one token is always computed). Without the first answer's decoded
    // keys the turn would resume 64.
    EXPECT_EQ(r["reused_tokens"], 64 + 128 + 128);
    EXPECT_EQ(r["silent_corruptions"], 0);
}

}  // namespace

namespace {

// Proves: the checker's sampling scope holds two answers of one prompt, keyed alike over the
// prompt and apart after it, and validated explores it to the end without a violation, answers'
// entries at the same positions and extents past the prompt's end included.
TEST(SamplingScope, TwoAnswersOfOnePromptAndValidatedHoldsEverywhere) {
    const kvcheck::sim::Scope scope = kvcheck::sim::named_scope("sampling");
    const model::World w = kvcheck::sim::initial_world(scope, model::find_policy("validated")->defenses);
    const model::RequestSpec& first = *w.requests[0].spec;
    const model::RequestSpec& second = *w.requests[1].spec;
    EXPECT_EQ(second.sample, 1u);
    EXPECT_EQ(first.key(80), second.key(80));
    EXPECT_NE(first.key(96), second.key(96));
    const kvcheck::sim::ExploreReport report =
        kvcheck::sim::explore(scope, model::find_policy("validated")->defenses, kvcheck::sim::ExploreOptions{});
    EXPECT_TRUE(report.exhausted);
    EXPECT_FALSE(report.counterexample.has_value()) << report.counterexample->violations.front().invariant;
}

}  // namespace
