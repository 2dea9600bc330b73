// Sessions: a turn's keys, the linker that finds turns in a trace's ids, and the simulator holding
// a turn until the one it continues has finished (docs/traces.md, "Sessions").
#include "tests/cli_fixtures.hpp"

namespace {
// cli_fixtures.hpp's kvcheck(), named before namespace kvcheck makes that name ambiguous.
const auto run_kvcheck = &kvcheck;
}  // namespace

#include "sim/check/explorer.hpp"
#include "sim/check/scope.hpp"
#include "sim/workload/sessions.hpp"
#include "tests/model_fixtures.hpp"

namespace {

namespace model = kvcheck::model;
namespace sim = kvcheck::sim;
using namespace kvcheck::model::fixtures;
using model::LookupResult;
using model::StepKind;
using model::VerdictKind;
using model::World;

std::shared_ptr<const model::RequestSpec> plain(std::uint32_t uid, const std::vector<std::uint64_t>& block_ids,
                                                std::uint32_t input, std::uint32_t output) {
    return std::make_shared<model::RequestSpec>(model::make_request_spec(uid, block_ids, 16, input, output));
}

std::vector<std::uint64_t> with_new(std::vector<std::uint64_t> shared, std::size_t total, std::uint64_t first_new) {
    while (shared.size() < total) shared.push_back(first_new++);
    return shared;
}

// Proves: a turn's key at every length inside the earlier prompt and its answer is the earlier
// turn's (the answer's decode keys included), and after it is its own: different from the same
// ids read as a request of its own and from another turn of the same prior; a third turn keys the
// first turn's part as the first turn does.
TEST(TurnSpec, KeysTheEarlierPromptAndAnswerAsTheEarlierTurnDoes) {
    const auto first = plain(1, ids(4), 60, 40);  // 100 tokens: a partial last block, then the answer
    const auto second =
        std::make_shared<model::RequestSpec>(model::make_turn_spec(2, first, 3, with_new(ids(3), 8, 50), 16, 120, 30));
    ASSERT_EQ(second->prior_tokens, 100u);
    for (std::uint32_t t = 1; t <= 100; ++t) ASSERT_EQ(second->key(t), first->key(t)) << t;
    const auto alone = plain(2, with_new(ids(3), 8, 50), 120, 30);
    const model::RequestSpec other = model::make_turn_spec(3, first, 3, with_new(ids(3), 8, 70), 16, 120, 30);
    for (std::uint32_t t = 101; t <= 150; ++t) {
        EXPECT_NE(second->key(t), alone->key(t)) << t;
        EXPECT_NE(second->key(t), other.key(t)) << t;
        EXPECT_NE(second->key(t), first->key(t)) << t;
    }
    // Tokens 49..60 of the first prompt: its partial block, which the same ids alone key apart.
    EXPECT_NE(alone->key(60), first->key(60));

    const model::RequestSpec third = model::make_turn_spec(4, second, 7, with_new(ids(3), 11, 50), 16, 170, 10);
    for (std::uint32_t t = 1; t <= 150; ++t) ASSERT_EQ(third.key(t), second->key(t)) << t;
    for (std::uint32_t t = 1; t <= 100; ++t) ASSERT_EQ(third.key(t), first->key(t)) << t;
    EXPECT_NE(third.key(151), second->key(151));
}

// Proves: the model resumes a turn past the earlier prompt, into the answer the earlier turn
// decoded, with every invariant (the ground-truth oracle included) holding; the same ids read as
// a request of their own resume only the whole blocks they share.
// The first prompt ends on a content block's boundary, then inside a 32-token content block that
// the turn's own ids key apart: on the 16-token units there the walk must compare keys, not chains.
TEST(TurnSpec, ATurnResumesTheAnswerTheEarlierTurnDecoded) {
    struct Shape {
        std::uint32_t block, prompt;
        bool turn;
    };
    for (const Shape& c : {Shape{16, 64, true}, Shape{16, 64, false}, Shape{32, 48, true}}) {
        World w = toy_world("validated", 1 << 20, model::Rollout::cross_request, 64);
        const auto first = std::make_shared<model::RequestSpec>(
            model::make_request_spec(1, ids(4), c.block, c.prompt, 128 - c.prompt));
        run_request(w, w.add_request(first));
        const std::vector<std::uint64_t> blocks = with_new(ids(4), 144 / c.block + 1, 50);
        const std::uint32_t shared = c.prompt / c.block;
        const auto spec = std::make_shared<model::RequestSpec>(
            c.turn ? model::make_turn_spec(2, first, shared, blocks, c.block, 144, 0)
                   : model::make_request_spec(2, blocks, c.block, 144, 0));
        const std::uint32_t r = w.add_request(spec);
        const LookupResult found = lookup_step(w, r);
        if (c.turn) {
            EXPECT_EQ(found.verdict, VerdictKind::resumable) << c.prompt;
            EXPECT_EQ(w.requests[r].resume_len, 128u) << c.prompt;
        } else {
            EXPECT_LE(w.requests[r].resume_len, 64u);
        }
        for (StepKind k : {StepKind::pin, StepKind::revalidate, StepKind::allocate, StepKind::read, StepKind::commit,
                           StepKind::finish})
            ok(w, k, r);
    }
}

sim::TraceRecord record(std::vector<std::uint64_t> block_ids, std::uint32_t input, std::uint32_t output) {
    sim::TraceRecord r;
    r.input_tokens = input;
    r.output_tokens = output;
    r.block_tokens = 16;
    r.block_ids = std::move(block_ids);
    return r;
}

// Proves the linker's rules: a request continues the latest turn with the longest whole prompt it
// starts with, when it holds that turn's prompt and answer; a request whose whole prompt an
// earlier request held (a shared system prompt) is no turn to continue; a longest prompt whose
// answer does not fit links nothing, even when a shorter one would.
TEST(SessionLinker, LinksTurnsByTheirWholePromptAndAnswer) {
    sim::SessionLinker linker;
    EXPECT_FALSE(linker.link(record({1, 2}, 32, 16)));              // 0: a first turn
    const auto second = linker.link(record({1, 2, 3, 4}, 60, 10));  // 1: holds 0's 48 tokens
    ASSERT_TRUE(second);
    EXPECT_EQ(second->parent, 0u);
    EXPECT_EQ(second->shared_blocks, 2u);
    EXPECT_FALSE(linker.link(record({1, 2, 5}, 40, 1)));             // 2: 0's prompt, not its answer
    const auto third = linker.link(record({1, 2, 3, 6, 7}, 80, 4));  // 3: continues 1 (3 whole blocks)
    ASSERT_TRUE(third);
    EXPECT_EQ(third->parent, 1u);
    EXPECT_EQ(third->shared_blocks, 3u);
    // 4: starts with blocks 1, 2: request 2's whole prompt too, but 2 held no prompt of its own.
    const auto fourth = linker.link(record({1, 2, 8}, 48, 1));
    ASSERT_TRUE(fourth);
    EXPECT_EQ(fourth->parent, 0u);
    // 5: the longest prompt it starts with is 1's, whose answer (70 tokens) it cannot hold.
    EXPECT_FALSE(linker.link(record({1, 2, 3, 9}, 64, 1)));
}

// Proves: a turn older than the window is not continued (memory stays bounded), one just inside is.
TEST(SessionLinker, LooksBackOnlyOverItsWindow) {
    for (const std::uint64_t gap : {sim::kSessionWindow - 1, sim::kSessionWindow}) {
        sim::SessionLinker linker;
        EXPECT_FALSE(linker.link(record({7, 8, 9}, 40, 4)));
        for (std::uint64_t i = 1; i < gap; ++i) linker.link(record({1000 + i}, 8, 1));
        const auto link = linker.link(record({7, 8, 9, 10}, 60, 1));
        EXPECT_EQ(link.has_value(), gap < sim::kSessionWindow) << gap;
    }
}

// A toy scenario of two requests: a first turn (4 blocks of 16 tokens, a 64-token answer) and, 1 ms
// later in the trace, a request that starts with those 4 blocks and is long enough to hold the answer.
nlohmann::json two_turns(const nlohmann::json& sessions) {
    nlohmann::json workload = {
        {"block_size", 16},
        {"requests",
         {{{"at_ms", 0}, {"input_tokens", 64}, {"output_tokens", 64}, {"blocks", {1, 2, 3, 4}}},
          {{"at_ms", 1}, {"input_tokens", 144}, {"output_tokens", 1}, {"blocks", {1, 2, 3, 4, 5, 6, 7, 8, 9}}}}}};
    if (!sessions.is_null()) workload["sessions"] = sessions;
    return {
        {"name", "two-turns"}, {"model", "toy"}, {"workload", workload}, {"compute", {{"decode_ms_per_token", 20}}}};
}

nlohmann::json run_json(const nlohmann::json& scenario, const std::string& name) {
    const fs::path file = scratch(name) / "scenario.json";
    write_text(file, scenario.dump());
    const Outcome o = run_kvcheck({"run", file.string(), "--json", "--quiet"});
    EXPECT_EQ(o.code, 0) << o.all();
    return nlohmann::json::parse(o.out);
}

// Proves: with sessions the second request is held until the first has finished its 64-token
// answer (1.28 s of decode), plus the think time, and then resumes the first prompt and the answer;
// without sessions it arrives 1 ms in, while the first is still writing, and resumes nothing.
TEST(SessionRuns, ATurnWaitsForTheEarlierTurnAndResumesItsAnswer) {
    const nlohmann::json off = run_json(two_turns(nullptr), "sessions-off");
    EXPECT_FALSE(off.contains("sessions"));
    EXPECT_EQ(off["reused_tokens"], 0);
    EXPECT_LT(off["sim_time_s"].get<double>(), 1.5);

    const nlohmann::json on = run_json(two_turns(nlohmann::json::object()), "sessions-on");
    EXPECT_EQ(on["sessions"], (nlohmann::json{{"turns", 1}, {"waited", 1}}));
    EXPECT_EQ(on["reused_tokens"], 128);
    EXPECT_EQ(on["silent_corruptions"], 0);
    EXPECT_GT(on["sim_time_s"].get<double>(), 1.28);

    const nlohmann::json think = run_json(two_turns({{"think_ms", 2000}}), "sessions-think");
    EXPECT_EQ(think["reused_tokens"], 128);
    EXPECT_NEAR(think["sim_time_s"].get<double>() - on["sim_time_s"].get<double>(), 2.0, 1e-6);

    // Switched off explicitly: the same as without the key.
    EXPECT_EQ(run_json(two_turns(false), "sessions-false")["final_state_hash"], off["final_state_hash"]);
    EXPECT_EQ(run_json(two_turns({{"enabled", false}}), "sessions-disabled")["final_state_hash"],
              off["final_state_hash"]);
}

// Proves: bad session options exit 2 naming the file and the JSON pointer.
TEST(SessionRuns, BadOptionsAreRefusedAtTheirPointer) {
    const std::vector<std::pair<nlohmann::json, std::string>> cases = {
        {5, "/workload/sessions: expected true, false or an object of session options, got an integer"},
        {{{"think_ms", -1}}, "/workload/sessions/think_ms"},
        {{{"thinking", 1}}, "/workload/sessions/thinking"},
    };
    for (const auto& [value, message] : cases) {
        const fs::path file = scratch("sessions-bad") / "scenario.json";
        write_text(file, two_turns(value).dump());
        const Outcome o = run_kvcheck({"run", file.string(), "--quiet"});
        EXPECT_EQ(o.code, 2) << o.all();
        EXPECT_NE(o.err.find(file.string() + ":" + message), std::string::npos) << o.all();
    }
}

}  // namespace

// Proves: `kvcheck trace stats` counts the turns a run with sessions replays: on the committed
// conversation-shaped trace, its session_turns equal sessions.turns of the sessions scenario's
// report (which reads the same trace), and they are a real share of the trace.
TEST(SessionRuns, TraceStatsCountTheTurnsARunReplays) {
    const Outcome stats = run_kvcheck({"trace", "stats", "traces/synth/conversation-small.jsonl", "--json"});
    ASSERT_EQ(stats.code, 0) << stats.all();
    const nlohmann::json counted = nlohmann::json::parse(stats.out);
    const fs::path source = kSourceDir / "scenarios" / "sessions-conversation.json";
    const Outcome run =
        run_kvcheck({"run", relocated_copy(source, read_json(source), "sessions-stats").string(), "--json", "--quiet"});
    ASSERT_EQ(run.code, 0) << run.all();
    const nlohmann::json report = nlohmann::json::parse(run.out);
    EXPECT_EQ(counted["session_turns"], report["sessions"]["turns"]);
    EXPECT_GT(counted["session_turns"].get<int>(), counted["requests"].get<int>() / 10);
}

// Proves: the counterexample a failing run with sessions leaves keeps workload.sessions beside
// its shrunk requests (without it the requests would replay as independent ones) and replays with
// the same violation.
TEST(SessionRuns, ACounterexampleKeepsItsSessions) {
    const fs::path source = kSourceDir / "scenarios" / "sessions-conversation.json";
    nlohmann::json doc = read_json(source);
    doc.erase("expect");
    const fs::path copy = relocated_copy(source, doc, "sessions-shrunk");
    const fs::path out = scratch("sessions-shrunk-out");
    const Outcome o = run_kvcheck({"run", copy.string(), "--policy", "naive", "--out", out.string(), "--quiet"});
    ASSERT_EQ(o.code, 1) << o.all();
    const nlohmann::json shrunk = read_json(out / "counterexample.json");
    EXPECT_EQ(shrunk["workload"]["sessions"], doc["workload"]["sessions"]);
    EXPECT_LE(shrunk["workload"]["requests"].size(), 10u);
    const Outcome replay = run_kvcheck({"run", (out / "counterexample.json").string(), "--json", "--quiet"});
    EXPECT_EQ(replay.code, 1) << replay.all();
    EXPECT_TRUE(nlohmann::json::parse(replay.out).contains("sessions"));
}

// Proves: the checker's session scope starts where the second turn can resume the first turn's
// prompt and its decoded answer (128 tokens, all five forms of the toy preset), and validated
// explores it to the end without a violation; the same scope with the second request read as one
// of its own resumes only the prompt.
TEST(SessionScope, TheSecondTurnResumesTheAnswerAndValidatedHoldsEverywhere) {
    sim::Scope scope = sim::named_scope("session");
    for (const bool turn : {true, false}) {
        scope.requests[1].continues = turn ? 0 : -1;
        World w = sim::initial_world(scope, model::find_policy("validated")->defenses);
        ASSERT_EQ(w.requests[0].phase, model::Phase::done);
        lookup_step(w, 1);
        EXPECT_EQ(w.requests[1].resume_len, turn ? 128u : 64u);
    }
    scope.requests[1].continues = 0;
    const sim::ExploreReport report =
        sim::explore(scope, model::find_policy("validated")->defenses, sim::ExploreOptions{});
    EXPECT_TRUE(report.exhausted);
    EXPECT_FALSE(report.counterexample.has_value()) << report.counterexample->violations.front().invariant;
    EXPECT_EQ(report.stuck_states, 0u);
}

// Proves: a policy that breaks an invariant while the session scope's first turn warms up alone
// (shared-freelist: a freed tail slot keeps its form label) is reported by `check` with that
// warm-up as the counterexample, and counterexample.json, written with the first turn cold,
// replays it under `kvcheck run` with the same violation.
TEST(SessionScope, AViolationWhileWarmingUpIsTheCounterexample) {
    const fs::path out = scratch("session-warm-up");
    const Outcome o =
        run_kvcheck({"check", "--scope", "session", "--policy", "shared-freelist", "--out", out.string(), "--json"});
    ASSERT_EQ(o.code, 1) << o.all();
    EXPECT_EQ(nlohmann::json::parse(o.out)["violated"], "RL2_form_separation") << o.all();
    const Outcome text = run_kvcheck({"check", "--scope", "session", "--policy", "shared-freelist"});
    EXPECT_EQ(text.code, 1) << text.all();
    EXPECT_NE(text.out.find("counterexample (10 steps: warm request 0 warming up alone):"), std::string::npos)
        << text.all();
    const nlohmann::json doc = read_json(out / "counterexample.json");
    EXPECT_FALSE(doc["scope"]["requests"][0].contains("warm"));
    EXPECT_EQ(doc["scope"]["requests"][1]["continues"], 0);
    for (const auto& step : doc["steps"]) EXPECT_EQ(step["target"], 0) << step;  // the first turn's own steps
    const Outcome replay = run_kvcheck({"run", (out / "counterexample.json").string(), "--json", "--quiet"});
    EXPECT_EQ(replay.code, 1) << replay.all();
    EXPECT_GT(nlohmann::json::parse(replay.out)["invariant_violations"]["RL2_form_separation"].get<int>(), 0);
}
