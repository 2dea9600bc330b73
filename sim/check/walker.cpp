// Random walks with per-walk seeds, swarm scopes, worker threads and shrinking.
#include "sim/check/walker.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "model/core.hpp"
#include "model/invariants.hpp"
#include "model/policy.hpp"
#include "sim/check/exploration.hpp"
#include "sim/check/steps_json.hpp"
#include "sim/io/input_error.hpp"
#include "sim/io/json_fields.hpp"

namespace kvcheck::sim {

namespace {

// A request prompt of `blocks` content blocks that shares its first `shared` blocks with `base`.
std::vector<std::uint64_t> prompt_ids(Rng& rng, const std::vector<std::uint64_t>& base, std::uint32_t shared,
                                      std::uint32_t blocks) {
    std::vector<std::uint64_t> ids(base.begin(), base.begin() + std::min<std::size_t>(shared, base.size()));
    while (ids.size() < blocks) ids.push_back(1000 + rng.below(1'000'000));
    return ids;
}

struct Walk {
    bool violated = false;
    std::uint64_t steps = 0;
    Counterexample found;
};

Walk walk_once(const Scope& scope, const model::Defenses& defenses, std::uint64_t seed, std::uint32_t depth) {
    Walk walk;
    Rng rng(seed);
    Exploration exploration(scope, defenses);
    model::World world = exploration.initial();
    std::vector<model::Step> enabled;
    Spent spent;
    for (std::uint32_t i = 0; i < depth; ++i) {
        exploration.successors(world, spent, enabled);
        if (enabled.empty()) break;
        const model::Step step = enabled[rng.below(enabled.size())];
        spent = exploration.after(spent, step);
        walk.found.steps.push_back(step);
        const std::vector<model::Violation>& violations = exploration.step(world, step);
        ++walk.steps;
        if (!violations.empty()) {
            walk.violated = true;
            walk.found.violations = violations;
            return walk;
        }
    }
    return walk;
}

// The violation walk `index` found, shrunk.
FoundViolation shrunk(const Scope& scope, const model::Defenses& defenses, const Walk& w, std::uint64_t index) {
    FoundViolation found;
    found.walk = index;
    found.scope = scope;
    found.counterexample = shrink(scope, defenses, w.found, w.found.violations.front().invariant);
    found.invariant = found.counterexample.violations.empty() ? w.found.violations.front().invariant
                                                              : found.counterexample.violations.front().invariant;
    return found;
}

}  // namespace

namespace {

// Bytes a token costs in GPU memory over every form but the on-disk copy.
double gpu_bytes_per_token(const model::ModelConfig& config) {
    const model::Derived d = model::derive(config);
    std::uint64_t sum = 0;
    for (int f = 0; f < model::kFormCount; ++f)
        if (static_cast<model::Form>(f) != model::Form::on_disk_prefix) sum += d.bytes_per_token_by_form[f];
    return static_cast<double>(sum);
}

}  // namespace

Scope swarm_scope(std::uint64_t root_seed, std::uint64_t index, const std::string& model) {
    Rng rng(hash_combine(root_seed, index ^ 0x5377a4dULL));
    Scope s = named_scope("reference");
    s.name = "swarm";
    const model::ModelConfig* preset = model::find_preset(model);
    KV_ASSERT(preset != nullptr, "swarm_scope needs a known preset");
    const model::Derived derived = model::derive(*preset);
    // Toy keeps the reference scope's 16-token blocks and budgets (every earlier campaign walks
    // as before); a preset scales both, so the scope is as tight for it as for toy.
    const std::uint32_t block = model == "toy" ? 16 : std::max(derived.min_block_tokens, derived.lcm_tokens / 2);
    const double scale =
        model == "toy" ? 1.0 : gpu_bytes_per_token(*preset) / gpu_bytes_per_token(s.model) * block / 16.0;
    s.model = *preset;
    s.content_block_tokens = block;
    // Two or three requests, each extending or branching from the first one's prompt.
    const std::uint32_t requests = 2 + static_cast<std::uint32_t>(rng.below(2));
    s.requests.clear();
    std::vector<std::uint64_t> first;
    for (std::uint32_t r = 0; r < requests; ++r) {
        const auto blocks = static_cast<std::uint32_t>(2 + rng.below(7));  // 32..128 tokens for toy
        const auto shared = r == 0 ? 0u : static_cast<std::uint32_t>(rng.below(blocks + 1));
        std::vector<std::uint64_t> ids = prompt_ids(rng, first, shared, blocks);
        if (r == 0) first = ids;
        s.requests.push_back({ids, blocks * block, static_cast<std::uint32_t>(rng.below(3) * block)});
    }
    s.limits.gpu_budget_bytes = static_cast<std::uint64_t>(static_cast<double>(20'000 + rng.below(180'000)) * scale);
    // Each fault kind is switched on with probability one half: swarm testing. F2's two modes come
    // together: a partial load follows io_fail's draw (and draws nothing itself).
    s.step_kinds = actor_kinds() | background_kinds();
    for (int k = 0; k < model::kStepKindCount; ++k) {
        const auto kind = static_cast<model::StepKind>(k);
        if (model::is_fault(kind) && kind != model::StepKind::partial_load && rng.below(2) == 0)
            s.step_kinds |= model::kind_bit(kind);
    }
    if ((s.step_kinds & model::kind_bit(model::StepKind::io_fail)) != 0)
        s.step_kinds |= model::kind_bit(model::StepKind::partial_load);
    s.max_faults = static_cast<std::uint8_t>(1 + rng.below(3));
    s.max_background = static_cast<std::uint8_t>(rng.below(5));
    // Half the walks with extents of 64 or 128 tokens (docs/invariants.md, "Extents"); drawn last,
    // so the rest of a walk's scope does not depend on it.
    s.limits.extent_tokens = rng.below(2) == 0 ? 0 : (4 * block) << rng.below(2);
    // Half the walks let a request stop waiting on its loads (a driver's timeout); drawn after
    // the rest for the same reason. None lets it end at them (abort): a walk that may end its
    // requests early reads less, and caught fewer mutants (docs/checker.md).
    if (rng.below(2) == 0) s.step_kinds |= model::kind_bit(model::StepKind::stop_waiting);
    return s;
}

FuzzReport fuzz(const FuzzOptions& o) {
    const auto started = std::chrono::steady_clock::now();
    auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(); };
    const model::PolicyInfo* policy = model::find_policy(o.policy);
    KV_ASSERT(policy != nullptr, "fuzz needs a known policy");
    KV_ASSERT(o.shard_count > 0 && o.shard_index < o.shard_count, "shard index out of range");
    FuzzReport report;
    report.policy = o.policy;
    report.model = o.model;
    report.seed = o.seed;
    report.shard_index = o.shard_index;
    report.shard_count = o.shard_count;
    report.walk_budget = o.walks;
    report.depth = o.depth;
    report.swarm = o.swarm;
    report.keep_going = !o.stop_at_first;
    std::atomic<std::uint64_t> next{o.first_walk};
    std::atomic<std::uint64_t> first_violation{o.stop_at_first ? o.known_violation : ~0ULL};
    std::atomic<std::uint64_t> done{0};
    std::atomic<std::uint64_t> steps{0};
    std::mutex lock;
    // Stopping at the first violation, the result is the walks up to it, whatever other threads
    // finished past it meanwhile: walks are committed in index order (those finished early wait in
    // `pending`), and none past the first violation. Every walk below it runs, so the committed
    // walks, steps and next walk are those of one thread.
    std::map<std::uint64_t, std::optional<std::uint64_t>>
        pending;                            // walk -> its steps (none: walked before the resume)
    std::uint64_t frontier = o.first_walk;  // the lowest walk not committed
    std::uint64_t committed_walks = 0;
    std::uint64_t committed_steps = 0;
    double last_checkpoint = 0;
    // The campaign up to the frontier, as a resume continues it (under `lock`).
    const auto take_checkpoint = [&] {
        FuzzReport snapshot = report;
        snapshot.violations.clear();
        for (const FoundViolation& v : report.violations)
            if (v.walk / o.shard_count < frontier) snapshot.violations.push_back(v);
        std::sort(snapshot.violations.begin(), snapshot.violations.end(),
                  [](const FoundViolation& a, const FoundViolation& b) { return a.walk < b.walk; });
        if (o.stop_at_first && snapshot.violations.size() > 1) snapshot.violations.resize(1);
        snapshot.walks = committed_walks;
        snapshot.steps = committed_steps;
        snapshot.next_walk = frontier;
        snapshot.interrupted = true;
        snapshot.seconds = elapsed();
        o.checkpoint(snapshot);
        last_checkpoint = elapsed();
    };
    const auto commit = [&](std::uint64_t n, std::optional<std::uint64_t> walk_steps) {  // under `lock`
        pending.emplace(n, walk_steps);
        while (!pending.empty() && pending.begin()->first == frontier &&
               (!o.stop_at_first || frontier <= first_violation.load())) {
            if (pending.begin()->second) {
                ++committed_walks;
                committed_steps += *pending.begin()->second;
            }
            pending.erase(pending.begin());
            ++frontier;
        }
        if (o.checkpoint && elapsed() - last_checkpoint >= o.checkpoint_seconds) take_checkpoint();
    };
    auto worker = [&] {
        for (;;) {
            if (o.stop != nullptr && o.stop->load()) return;
            if (o.seconds > 0 && elapsed() >= o.seconds) return;
            const std::uint64_t n = next.fetch_add(1);
            if (o.walks != 0 && n >= o.walks) {
                next.store(o.walks);
                return;
            }
            if (o.stop_at_first && n == o.known_violation) {  // walked before the resume
                std::lock_guard<std::mutex> guard(lock);
                commit(n, std::nullopt);
                continue;
            }
            if (o.stop_at_first && n > first_violation.load()) return;  // past the first violation: never committed
            const std::uint64_t index = n * o.shard_count + o.shard_index;
            const Scope scope = o.swarm ? swarm_scope(o.seed, index, o.model) : o.base;
            Walk w = walk_once(scope, policy->defenses, hash_combine(o.seed, index), o.depth);
            steps += w.steps;
            std::optional<FoundViolation> found;
            if (w.violated) found = shrunk(scope, policy->defenses, w, index);
            // Walks are committed in order when the result depends on it (stop at first) or a
            // checkpoint needs a frontier below which every walk is done.
            if (found || o.stop_at_first || o.checkpoint) {
                std::lock_guard<std::mutex> guard(lock);
                if (found) {
                    report.violations.push_back(std::move(*found));
                    std::uint64_t current = first_violation.load();
                    while (n < current && !first_violation.compare_exchange_weak(current, n)) {}
                }
                if (o.stop_at_first || o.checkpoint) commit(n, w.steps);
            }
            const std::uint64_t finished = ++done;
            if (o.progress && o.threads <= 1) o.progress(finished);
        }
    };
    std::vector<std::thread> pool;
    for (std::uint32_t t = 1; t < o.threads; ++t) pool.emplace_back(worker);
    worker();
    for (std::thread& t : pool) t.join();
    std::sort(report.violations.begin(), report.violations.end(),
              [](const FoundViolation& a, const FoundViolation& b) { return a.walk < b.walk; });
    if (o.stop_at_first && report.violations.size() > 1) report.violations.resize(1);
    report.walks = o.stop_at_first ? committed_walks : done.load();
    // Workers stop claiming before they stop running, so every claimed walk has completed.
    report.next_walk = o.stop_at_first ? frontier : std::min(next.load(), o.walks == 0 ? next.load() : o.walks);
    report.interrupted = o.stop != nullptr && o.stop->load();
    report.steps = o.stop_at_first ? committed_steps : steps.load();
    report.seconds = elapsed();
    return report;
}

std::optional<FoundViolation> rewalk(const FuzzOptions& o, std::uint64_t index) {
    const model::PolicyInfo* policy = model::find_policy(o.policy);
    KV_ASSERT(policy != nullptr, "rewalk needs a known policy");
    const Scope scope = o.swarm ? swarm_scope(o.seed, index, o.model) : o.base;
    const Walk w = walk_once(scope, policy->defenses, hash_combine(o.seed, index), o.depth);
    if (!w.violated) return std::nullopt;
    return shrunk(scope, policy->defenses, w, index);
}

std::optional<FoundViolation> rewalk_carried(const nlohmann::json& violations, const FuzzOptions& o,
                                             const std::string& file) {
    std::optional<FoundViolation> lowest;
    for (std::size_t i = 0; i < violations.size(); ++i) {
        const std::uint64_t walk = violations[i].at("walk").get<std::uint64_t>();
        std::optional<FoundViolation> again = rewalk(o, walk);
        if (!again || violation_json(*again, o.policy) != violations[i])
            throw InputError(file, "/violations/" + std::to_string(i),
                             "walk " + std::to_string(walk) +
                                 " does not give this violation when walked again: the file is damaged, of another "
                                 "campaign or written by another kvcheck version");
        if (!lowest || walk < lowest->walk) lowest = std::move(again);
    }
    return lowest;
}

nlohmann::json violation_json(const FoundViolation& v, const std::string& policy) {
    nlohmann::json steps = nlohmann::json::array();
    for (const std::string& line : v.counterexample.described) steps.push_back(line);
    return {
        {"walk", v.walk},
        {"invariant", v.invariant},
        {"steps", steps},
        {"scenario", steps_scenario_json(v.scope, policy, v.counterexample.steps, "found by kvcheck fuzz", nullptr)}};
}

nlohmann::json fuzz_json(const FuzzReport& r) {
    nlohmann::json found = nlohmann::json::array();
    for (const FoundViolation& v : r.violations) found.push_back(violation_json(v, r.policy));
    return {{"kind", "kvcheck.fuzz/1"},
            {"policy", r.policy},
            {"model", r.model},
            {"seed", r.seed},
            {"shard", {r.shard_index, r.shard_count}},
            {"walks", r.walks},
            {"steps", r.steps},
            {"next_walk", r.next_walk},
            {"interrupted", r.interrupted},
            {"walk_budget", r.walk_budget},
            {"depth", r.depth},
            {"swarm", r.swarm},
            {"keep_going", r.keep_going},
            {"violations", found}};
}

void check_fuzz_json(const nlohmann::json& result, const std::string& file) {
    const auto fail = [&](const std::string& pointer, const std::string& what) {
        throw InputError(file, pointer, what);
    };
    if (!result.is_object() || result.value("kind", nlohmann::json()) != "kvcheck.fuzz/1")
        fail("/kind", "expected a kvcheck fuzz result (\"kind\": \"kvcheck.fuzz/1\")");
    const auto count = [&](const nlohmann::json& parent, const std::string& pointer, const char* key) {
        if (!parent.contains(key) || !parent.at(key).is_number_unsigned())
            fail(pointer + "/" + key, "expected a whole number of 0 or more");
    };
    if (!result.contains("policy") || !result["policy"].is_string() ||
        model::find_policy(result["policy"].get<std::string>()) == nullptr)
        fail("/policy", "expected the name of a policy (known: " + model::policy_names() + ")");
    // Files from before --model have no "model": their walks are toy's.
    if (result.contains("model") &&
        (!result["model"].is_string() || model::find_preset(result["model"].get<std::string>()) == nullptr))
        fail("/model", "expected the name of a model preset");
    count(result, "", "seed");
    const nlohmann::json* shard = result.contains("shard") ? &result["shard"] : nullptr;
    if (shard == nullptr || !shard->is_array() || shard->size() != 2 || !(*shard)[0].is_number_unsigned() ||
        !(*shard)[1].is_number_unsigned() || (*shard)[0].get<std::uint64_t>() >= (*shard)[1].get<std::uint64_t>() ||
        (*shard)[1].get<std::uint64_t>() > UINT32_MAX)
        fail(
            "/shard",
            "expected [i, n] with 0 <= i < n, the one shard the file comes from (a merged result is not merged again)");
    count(result, "", "walks");
    count(result, "", "steps");
    count(result, "", "next_walk");
    count(result, "", "walk_budget");
    count(result, "", "depth");
    if (result["depth"].get<std::uint64_t>() < 1 || result["depth"].get<std::uint64_t>() > kFuzzDepthMax)
        fail("/depth", "expected the steps per walk, 1 to " + std::to_string(kFuzzDepthMax));
    for (const char* flag : {"swarm", "keep_going", "interrupted"})
        if (!result.contains(flag) || !result[flag].is_boolean())
            fail(std::string("/") + flag, "expected true or false");
    // What a run writes always holds these: the walks it took lie below next_walk, which stops at
    // the budget, and no walk takes more than depth steps.
    const std::uint64_t walks = result["walks"].get<std::uint64_t>();
    const std::uint64_t next_walk = result["next_walk"].get<std::uint64_t>();
    const std::uint64_t budget = result["walk_budget"].get<std::uint64_t>();
    if (walks > next_walk)
        fail("/walks", std::to_string(walks) + " walks, but only walks below next_walk " + std::to_string(next_walk) +
                           " can have been taken");
    if (budget != 0 && next_walk > budget)
        fail("/next_walk", std::to_string(next_walk) + " is beyond the walk budget " + std::to_string(budget));
    if (walks != 0 && result["steps"].get<std::uint64_t>() / walks > result["depth"].get<std::uint64_t>())
        fail("/steps", brief(result["steps"]) + " steps in " + std::to_string(walks) + " walks of at most " +
                           brief(result["depth"]) + " steps each");
    // A time-bounded campaign also records its budget and what its runs spent of it, both or neither.
    if (result.contains("seconds_budget") != result.contains("seconds_spent"))
        fail(result.contains("seconds_budget") ? "/seconds_budget" : "/seconds_spent",
             "expected seconds_budget and seconds_spent together");
    for (const char* key : {"seconds_budget", "seconds_spent"})
        if (result.contains(key) &&
            (!result[key].is_number() || !std::isfinite(result[key].get<double>()) || result[key].get<double>() < 0))
            fail(std::string("/") + key, "expected a number of seconds, 0 or more");
    if (result.contains("seconds_budget") && result["seconds_budget"].get<double>() <= 0)
        fail("/seconds_budget", "expected a budget above 0 seconds");
    static const std::set<std::string> kKeys = {
        "kind",        "policy",      "model", "seed",  "shard",      "walks",      "steps",          "next_walk",
        "interrupted", "walk_budget", "depth", "swarm", "keep_going", "violations", "seconds_budget", "seconds_spent"};
    for (const auto& [key, value] : result.items())
        if (kKeys.count(key) == 0) fail("/" + pointer_escape(key), "unknown key in a kvcheck fuzz result");
    if (!result.contains("violations") || !result["violations"].is_array()) fail("/violations", "expected an array");
    const nlohmann::json& found = result["violations"];
    if (!result["keep_going"].get<bool>() && found.size() > 1)
        fail("/violations/1", "a campaign that stops at the first violation (\"keep_going\": false) holds one at most");
    const std::uint64_t shards = (*shard)[1].get<std::uint64_t>();
    std::set<std::uint64_t> walks_seen;
    for (std::size_t i = 0; i < found.size(); ++i) {
        const nlohmann::json& v = found[i];
        const std::string at = "/violations/" + std::to_string(i);
        if (!v.is_object()) fail(at, "expected an object with walk, invariant, steps and scenario");
        for (const auto& [key, value] : v.items())
            if (key != "walk" && key != "invariant" && key != "steps" && key != "scenario")
                fail(at + "/" + pointer_escape(key),
                     "unknown key in a violation (expected walk, invariant, steps and scenario)");
        count(v, at, "walk");
        const std::uint64_t walk = v["walk"].get<std::uint64_t>();
        if (walk % shards != (*shard)[0].get<std::uint64_t>())
            fail(at + "/walk",
                 "walk " + brief(v["walk"]) + " is not one of shard " + brief((*shard)[0]) + "/" + brief((*shard)[1]));
        if (walk / shards >= result["next_walk"].get<std::uint64_t>())
            fail(at + "/walk", "walk " + brief(v["walk"]) + " is the shard's walk " + std::to_string(walk / shards) +
                                   ", not below its next_walk " + brief(result["next_walk"]) +
                                   " (every walk found was taken before it)");
        if (!walks_seen.insert(walk).second)
            fail(at + "/walk", "walk " + brief(v["walk"]) + " is listed twice; a walk stops at its first violation");
        if (!v.contains("invariant") || !v["invariant"].is_string() ||
            !model::is_invariant(v["invariant"].get<std::string>()))
            fail(at + "/invariant", "expected the name of an invariant");
        const auto is_text = [](const nlohmann::json& step) { return step.is_string(); };
        if (!v.contains("steps") || !v["steps"].is_array() || v["steps"].empty() ||
            !std::all_of(v["steps"].begin(), v["steps"].end(), is_text))
            fail(at + "/steps", "expected a non-empty array of step descriptions (strings)");
        if (!v.contains("scenario") || !v["scenario"].is_object())
            fail(at + "/scenario", "expected the counterexample as a scenario object");
        const nlohmann::json& scenario = v["scenario"];
        if (!scenario.contains("steps") || !scenario["steps"].is_array() ||
            scenario["steps"].size() != v["steps"].size())
            fail(at + "/scenario/steps", "expected the counterexample's " + std::to_string(v["steps"].size()) +
                                             " steps, one for each description");
        if (scenario.value("policy", nlohmann::json()) != result["policy"])
            fail(at + "/scenario/policy", "expected the campaign's policy " + brief(result["policy"]));
    }
}

nlohmann::json resume_point(const nlohmann::json& previous, FuzzOptions& options) {
    options.first_walk = previous.at("next_walk").get<std::uint64_t>();
    options.seed = previous.at("seed").get<std::uint64_t>();
    options.policy = previous.at("policy").get<std::string>();
    options.model = previous.value("model", std::string("toy"));
    options.shard_index = previous.at("shard").at(0).get<std::uint32_t>();
    options.shard_count = previous.at("shard").at(1).get<std::uint32_t>();
    options.walks = previous.at("walk_budget").get<std::uint64_t>();
    options.depth = previous.at("depth").get<std::uint32_t>();
    options.swarm = previous.at("swarm").get<bool>();
    options.stop_at_first = !previous.at("keep_going").get<bool>();
    const nlohmann::json& found = previous.at("violations");
    if (options.stop_at_first)
        for (const nlohmann::json& v : found)
            options.known_violation =
                std::min(options.known_violation, v.at("walk").get<std::uint64_t>() / options.shard_count);
    return found;
}

nlohmann::json merge_fuzz_json(const std::vector<FuzzResultFile>& shards) {
    nlohmann::json merged = {{"kind", "kvcheck.fuzz/1"}, {"walks", 0}, {"steps", 0}};
    const auto model_of = [](const nlohmann::json& s) { return s.value("model", std::string("toy")); };
    std::vector<nlohmann::json> found;
    nlohmann::json covered = nlohmann::json::array();
    std::map<std::uint64_t, const std::string*> seen;  // shard index -> the file it came from
    for (const FuzzResultFile& file : shards) {
        const nlohmann::json& s = file.result;
        // One campaign only: shards of another policy, seed or shard count do not add up.
        const FuzzResultFile& first = shards.front();
        for (const char* key : {"policy", "seed", "depth", "swarm", "keep_going", "walk_budget"})
            if (s.at(key) != first.result.at(key))
                throw InputError(file.path, std::string("/") + key,
                                 "from another campaign: " + brief(s.at(key)) + " here, " +
                                     brief(first.result.at(key)) + " in " + first.path);
        if (model_of(s) != model_of(first.result))
            throw InputError(file.path, "/model",
                             "from another campaign: model " + model_of(s) + " here, " + model_of(first.result) +
                                 " in " + first.path);
        if (s.at("shard").at(1) != first.result.at("shard").at(1))
            throw InputError(file.path, "/shard/1",
                             "from another campaign: shard count " + brief(s.at("shard").at(1)) + " here, " +
                                 brief(first.result.at("shard").at(1)) + " in " + first.path);
        const auto [at, fresh] = seen.emplace(s.at("shard").at(0).get<std::uint64_t>(), &file.path);
        if (!fresh)
            throw InputError(file.path, "/shard/0",
                             "shard " + brief(s.at("shard").at(0)) + " is already merged from " + *at->second);
        // Every violation is walked again, as a resume does: a merged result reports only what
        // its campaign reproduces.
        FuzzOptions campaign;
        resume_point(s, campaign);
        rewalk_carried(s.at("violations"), campaign, file.path);
        for (const char* key : {"policy", "seed", "depth", "swarm", "keep_going", "walk_budget"})
            merged[key] = s.at(key);
        merged["model"] = model_of(s);
        merged["walks"] = merged["walks"].get<std::uint64_t>() + s.at("walks").get<std::uint64_t>();
        merged["steps"] = merged["steps"].get<std::uint64_t>() + s.at("steps").get<std::uint64_t>();
        covered.push_back(s.at("shard"));
        for (const nlohmann::json& v : s.at("violations")) found.push_back(v);
    }
    std::sort(found.begin(), found.end(),
              [](const nlohmann::json& a, const nlohmann::json& b) { return a["walk"] < b["walk"]; });
    std::sort(covered.begin(), covered.end());
    merged["shards"] = covered;
    merged["interrupted"] = std::any_of(shards.begin(), shards.end(),
                                        [](const FuzzResultFile& f) { return f.result.at("interrupted").get<bool>(); });
    merged["violations"] = found;
    return merged;
}

}  // namespace kvcheck::sim
