// `kvcheck check`, `kvcheck fuzz`, `kvcheck merge` and `kvcheck mutants`: the model checker's
// front door. Counterexamples come out as a numbered step list, counterexample.json (a scenario
// `kvcheck run` reproduces without the checker) and counterexample.dot.
#include <atomic>
#include <charconv>
#include <cstdint>
#include <csignal>
#include <cstdio>
#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "sim/check/checkpoint.hpp"
#include "sim/check/dot.hpp"
#include "sim/check/explorer.hpp"
#include "sim/check/walker.hpp"
#include "sim/json_fields.hpp"
#include "sim/files.hpp"
#include "sim/scenario.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/progress.hpp"

namespace kvcheck::cli {

namespace {

// Ctrl-C (or SIGTERM, SIGHUP) during check or fuzz: the work stops where it is and keeps what it found.
std::atomic<bool> interrupted{false};

extern "C" void on_interrupt(int) { interrupted.store(true); }

void catch_interrupt() {
    interrupted.store(false);
    for (const int signal : sim::kStopSignals) std::signal(signal, on_interrupt);
}

// The fuzz command that walks a campaign's shard up to walk `walk` (a global walk index), from the
// campaign's fuzz.json (or merged) fields: the violation found there comes out again.
std::string fuzz_reproduce(const nlohmann::json& campaign, std::uint64_t walk) {
    const std::string model = campaign.at("model").get<std::string>();
    const std::uint64_t shards = campaign.contains("shard") ? campaign.at("shard").at(1).get<std::uint64_t>()
                                                            : campaign.at("shards").at(0).at(1).get<std::uint64_t>();
    return "kvcheck fuzz --policy " + shell_word(campaign.at("policy").get<std::string>()) + (model == "toy" ? "" : " --model " + model) +
           " --seed " + std::to_string(campaign.at("seed").get<std::uint64_t>()) + " --walks " + std::to_string(walk / shards + 1) +
           " --shard " + std::to_string(walk % shards) + "/" + std::to_string(shards) + " --depth " +
           std::to_string(campaign.at("depth").get<std::uint64_t>()) + (campaign.at("swarm").get<bool>() ? "" : " --no-swarm");
}

const model::PolicyInfo& policy_or_throw(const std::string& name) {
    const model::PolicyInfo* p = model::find_policy(name);
    if (p == nullptr) throw sim::InputError("", "--policy", "unknown policy \"" + name + "\" (known: " + model::policy_names() + ")");
    return *p;
}


sim::Reduction reduction_or_throw(const std::string& name) {
    const std::optional<sim::Reduction> r = sim::reduction_from_name(name);
    if (!r) throw sim::InputError("", "--reduction", "unknown reduction \"" + name + "\" (known: none, symmetry)");
    return *r;
}

// A folder's counterexample files belong to the result beside them: a run that found none
// removes those an earlier run left.
void remove_counterexample(const std::string& dir) {
    for (const char* name : {"/counterexample.json", "/counterexample.dot"}) sim::remove_stale(dir + name);
}

// "1 step", "12 steps".
std::string counted_steps(std::size_t n) { return std::to_string(n) + (n == 1 ? " step" : " steps"); }

void write_counterexample(const std::string& dir, const sim::Scope& scope, const std::string& policy, const sim::Counterexample& c) {
    sim::ensure_directory(dir);
    const std::string note = "counterexample for policy " + policy + ": " + (c.violations.empty() ? "" : c.violations.front().invariant);
    sim::write_file_atomic(dir + "/counterexample.json", sim::steps_scenario_json(scope, policy, c.steps, note, nullptr).dump(2) + "\n");
    sim::write_file_atomic(dir + "/counterexample.dot", sim::counterexample_dot(c));
}

struct CheckArgs {
    std::string scope = "reference";
    std::string policy = "validated";
    std::string out;
    std::string target;
    std::string resume;
    std::string checkpoint;
    std::string reduction = "none";
    std::string order = "bfs";
    std::uint64_t max_states = 50'000'000;
    double max_seconds = 600;
    bool json = false;
    bool quiet = false;
    bool liveness = false;
};
}  // namespace

std::string known_scopes() {
    std::string names;
    for (const std::string& known : sim::scope_names()) names += (names.empty() ? "" : ", ") + known;
    return names;
}

// A word for a printed command line: as it is when the shell would read it back unchanged,
// single-quoted otherwise.
std::string shell_word(const std::string& word) {
    const bool plain = !word.empty() && word.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:=@%+,-") == std::string::npos;
    if (plain) return word;
    std::string quoted = "'";
    for (const char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return quoted + "'";
}

void require_result_file(const std::string& dir, const std::string& name) {
    if (dir.empty()) return;
    sim::require_output_folder(dir);
    sim::require_output_file(dir + "/" + name);
}

void write_result_file(const std::string& dir, const std::string& name, const nlohmann::json& doc) {
    if (dir.empty()) return;
    sim::ensure_directory(dir);
    sim::write_file_atomic(dir + "/" + name, doc.dump(2) + "\n");
}

sim::Scope scope_or_throw(const std::string& name) {
    for (const std::string& known : sim::scope_names())
        if (known == name) return sim::named_scope(name);
    throw sim::InputError("", "--scope", "unknown scope \"" + name + "\" (known: " + known_scopes() + ")");
}

sim::Order order_or_throw(const std::string& name) {
    const std::optional<sim::Order> o = sim::order_from_name(name);
    if (!o) throw sim::InputError("", "--order", "unknown search order \"" + name + "\" (known: bfs, dfs)");
    return *o;
}

void register_check(CLI::App& app, Common& common) {
    auto a = std::make_shared<CheckArgs>();
    auto* cmd = app.add_subcommand("check", "Explore every interleaving at a bounded scope (breadth- or depth-first, state hashing)");
    cmd->add_option("--scope", a->scope, "Named scope (default reference): " + known_scopes());
    cmd->add_option("--policy", a->policy, "Policy to check (default validated)");
    cmd->add_option("--invariant", a->target, "Stop only at violations of this invariant");
    cmd->add_option("--max-states", a->max_states, "State bound (reported when hit)")->check(CLI::Range(std::uint64_t{1}, UINT64_MAX));
    cmd->add_option("--max-seconds", a->max_seconds, "Time bound (reported when hit)");
    cmd->add_option("--out", a->out, "Write counterexample.json and counterexample.dot here");
    cmd->add_option("--order", a->order,
                    "bfs (default: breadth first, shortest counterexamples) or dfs (depth first: less memory, deep states early, "
                    "counterexamples shrunk)");
    cmd->add_option("--reduction", a->reduction, "none (default) or symmetry: merge states that differ only by segment ids");
    cmd->add_option("--resume", a->resume, "Continue from a checkpoint written when a run was interrupted or hit a bound");
    cmd->add_option("--checkpoint", a->checkpoint,
                    "Where a stopped run writes its checkpoint (default: the --resume file, else DIR/check.checkpoint with --out, "
                    "else check.checkpoint)");
    cmd->add_flag("--liveness", a->liveness, "Keep the explored graph and look for cycles (strongly connected components)");
    cmd->add_flag("--json", a->json, "Print the result as JSON");
    cmd->add_flag("--quiet", a->quiet, "No progress line");
    cmd->callback([a, cmd, &common] {
        catch_interrupt();  // before a checkpoint is read: a stop meanwhile leaves it as it was
        if (!a->resume.empty()) sim::require_input_file(a->resume);  // read first, and maybe written back
        // Every file the run may write is checked before the work.
        const std::string checkpoint_path = !a->checkpoint.empty() ? a->checkpoint
                                            : !a->resume.empty()   ? a->resume
                                            : !a->out.empty()      ? a->out + "/check.checkpoint"
                                                                   : "check.checkpoint";
        sim::require_output_file(checkpoint_path);
        if (!a->out.empty()) {
            sim::require_output_folder(a->out);
            for (const char* name : {"/check.checkpoint", "/counterexample.json", "/counterexample.dot"}) sim::require_output_file(a->out + name);
            for (const char* name : {"/counterexample.json", "/counterexample.dot"})
                if (sim::same_file(checkpoint_path, a->out + name))
                    throw sim::InputError(checkpoint_path, "--checkpoint", "is the run's " + std::string(name + 1) +
                                                                               " too; give the checkpoint another file");
        }
        // A run writes its checkpoint over these files, or removes them once it finishes: each
        // must be missing or a checkpoint already (the --resume file is read as one below).
        for (const std::string& path : {checkpoint_path, a->checkpoint, a->out.empty() ? std::string() : a->out + "/check.checkpoint"})
            if (!path.empty() && (a->resume.empty() || !sim::same_file(path, a->resume)) && !sim::may_hold_checkpoint(path))
                throw sim::InputError(path, "", "exists and is not a kvcheck checkpoint, which a run would write over or remove here");
        // A resumed run answers the checkpoint's question; a flag that asks another is an input error.
        std::optional<sim::ExploreCheckpoint> resumed;
        if (!a->resume.empty()) {
            resumed = sim::decode_checkpoint(sim::read_file(a->resume), a->resume);
            const std::vector<std::string> scopes = sim::scope_names();
            if (model::find_policy(resumed->policy) == nullptr || std::find(scopes.begin(), scopes.end(), resumed->scope) == scopes.end())
                throw sim::InputError(a->resume, "", "names a policy or scope this kvcheck does not know (\"" + resumed->policy + "\", \"" +
                                                         resumed->scope + "\")");
            auto same = [&](const char* flag, const std::string& given, const std::string& saved) {
                if (cmd->count(flag) > 0 && given != saved)
                    throw sim::InputError(a->resume, flag, "the checkpoint is for " + std::string(flag) + " \"" + saved + "\", not \"" + given + "\"");
            };
            same("--scope", a->scope, resumed->scope);
            same("--policy", a->policy, resumed->policy);
            same("--invariant", a->target, resumed->target);
            same("--reduction", a->reduction, sim::reduction_name(static_cast<sim::Reduction>(resumed->reduction)));
            same("--order", a->order, sim::order_name(static_cast<sim::Order>(resumed->order)));
            if (cmd->count("--liveness") > 0 && !resumed->keep_graph)
                throw sim::InputError(a->resume, "--liveness", "the checkpoint was written without --liveness");
            a->scope = resumed->scope;
            a->policy = resumed->policy;
            a->target = resumed->target;
            a->reduction = sim::reduction_name(static_cast<sim::Reduction>(resumed->reduction));
            a->order = sim::order_name(static_cast<sim::Order>(resumed->order));
            a->liveness = resumed->keep_graph;
        }
        const model::PolicyInfo& policy = policy_or_throw(a->policy);
        const sim::Scope scope = scope_or_throw(a->scope);
        if (!a->target.empty() && !model::is_invariant(a->target)) {
            const std::string what = "unknown invariant \"" + a->target + "\" (known: " + model::invariant_names() + ")";
            if (resumed && cmd->count("--invariant") == 0) throw sim::InputError(a->resume, "", "names an " + what);
            throw sim::InputError("", "--invariant", what);
        }
        sim::ExploreOptions options;
        if (resumed) options.resume = &*resumed;
        options.reduction = reduction_or_throw(a->reduction);
        options.order = order_or_throw(a->order);
        if (options.order == sim::Order::depth_first && a->liveness)
            throw sim::InputError("", "--liveness", "keeps the explored graph, which only the breadth-first search does (use --order bfs)");
        options.max_states = a->max_states;
        options.max_seconds = a->max_seconds;
        options.target = a->target;
        options.keep_graph = a->liveness;
        options.stop = &interrupted;
        Progress progress(a->quiet, "check " + a->policy);
        options.progress = [&](std::uint64_t states, std::uint32_t depth, double) { progress.update(states, 0, "states, depth " + std::to_string(depth)); };
        sim::ExploreReport r;
        try {
            r = sim::explore(scope, policy.defenses, options);
        } catch (const sim::InputError& e) {  // what the explorer found wrong in the checkpoint, said of its file
            if (e.file().empty() && e.place() == "--resume") throw sim::InputError(a->resume, "", e.message());
            throw;
        }
        progress.done();
        if (r.checkpoint) {
            r.checkpoint->policy = a->policy;
            sim::write_file_atomic(checkpoint_path, sim::encode_checkpoint(*r.checkpoint));
            std::fprintf(stderr, "stopped (%s) at %llu states; wrote %s; continue with: kvcheck check --resume %s%s\n", r.bound_hit.c_str(),
                         static_cast<unsigned long long>(r.states), checkpoint_path.c_str(), shell_word(checkpoint_path).c_str(),
                         a->out.empty() ? "" : (" --out " + shell_word(a->out)).c_str());
        } else {
            // Finished: the checkpoint it resumed, the one it was told to write and the one in its
            // output folder are of a run now done (./check.checkpoint may be another question's).
            for (const std::string* path : {&a->resume, &a->checkpoint})
                if (!path->empty()) sim::remove_stale(*path);
            if (!a->out.empty()) sim::remove_stale(a->out + "/check.checkpoint");
        }
        nlohmann::json j = {{"scope", a->scope},     {"policy", a->policy},         {"order", a->order},
                            {"reduction", a->reduction},         {"states", r.states},
                            {"transitions", r.transitions}, {"depth", r.depth},     {"seconds", r.seconds},
                            {"states_per_s", r.states_per_s}, {"exhausted", r.exhausted}, {"bound_hit", r.bound_hit},
                            {"stuck_states", r.stuck_states}, {"cycles", r.nontrivial_sccs}};
        if (r.checkpoint) j["checkpoint"] = checkpoint_path;
        if (r.counterexample) {
            j["violated"] = r.counterexample->violations.front().invariant;
            j["counterexample_steps"] = r.counterexample->steps.size();
            j["steps"] = r.counterexample->described;
        }
        if (a->json) {
            std::cout << j.dump(2) << "\n";
        } else {
            const std::string ended = r.exhausted ? "exhausted" : !r.bound_hit.empty() ? "bound hit: " + r.bound_hit : "stopped at the first counterexample";
            std::printf("scope=%s policy=%s order=%s reduction=%s states=%llu transitions=%llu depth=%u seconds=%.2f states_per_s=%.0f %s\n",
                        a->scope.c_str(), a->policy.c_str(), a->order.c_str(), a->reduction.c_str(), static_cast<unsigned long long>(r.states), static_cast<unsigned long long>(r.transitions), r.depth,
                        r.seconds, r.states_per_s, ended.c_str());
            if (a->liveness)
                std::printf("liveness: cycles=%llu stuck_states=%llu\n", static_cast<unsigned long long>(r.nontrivial_sccs),
                            static_cast<unsigned long long>(r.stuck_states));
            if (r.stuck_states > 0) std::printf("LV1_progress: %llu terminal states leave a request unfinished\n", static_cast<unsigned long long>(r.stuck_states));
            if (r.counterexample) {
                std::printf("counterexample (%s", counted_steps(r.counterexample->steps.size()).c_str());
                // A warm-up's counterexample replays from the scope with the violating request cold.
                const sim::Scope& from = r.counterexample_scope.value_or(scope);
                for (std::size_t i = 0; i < from.requests.size(); ++i) {
                    if (from.requests[i].warm) {
                        std::printf(", after warm request %zu ran to the end", i);
                    } else if (scope.requests[i].warm) {
                        std::printf(": warm request %zu warming up alone", i);
                        break;
                    }
                }
                std::printf("):\n%s", sim::format_counterexample(*r.counterexample).c_str());
            }
        }
        if (r.counterexample && !a->out.empty()) {
            write_counterexample(a->out, r.counterexample_scope.value_or(scope), a->policy, *r.counterexample);
            std::fprintf(a->json ? stderr : stdout, "wrote %s/counterexample.json and counterexample.dot; reproduce: kvcheck run %s\n",
                         a->out.c_str(), shell_word(a->out + "/counterexample.json").c_str());
        } else if (r.counterexample) {
            // Either search order is fixed, so the same question finds the same counterexample.
            std::string again = "kvcheck check --scope " + shell_word(a->scope) + " --policy " + shell_word(a->policy);
            if (a->order != "bfs") again += " --order " + shell_word(a->order);
            if (!a->target.empty()) again += " --invariant " + shell_word(a->target);
            if (a->reduction != "none") again += " --reduction " + shell_word(a->reduction);
            std::fprintf(a->json ? stderr : stdout, "reproduce: %s\n(add --out DIR for counterexample.json, which kvcheck run replays)\n", again.c_str());
        } else if (!a->out.empty()) {
            remove_counterexample(a->out);
        }
        // A run stopped by a signal proved nothing yet: 130 (the shell's code for SIGINT), unless it
        // already found a violation.
        common.exit_code = r.counterexample || r.stuck_states > 0 ? 1 : interrupted.load() ? 130 : 0;
    });
}

void register_fuzz(CLI::App& app, Common& common) {
    auto o = std::make_shared<sim::FuzzOptions>();
    auto shard = std::make_shared<std::string>("0/1");
    auto out = std::make_shared<std::string>();
    auto json = std::make_shared<bool>(false);
    auto quiet = std::make_shared<bool>(false);
    auto keep_going = std::make_shared<bool>(false);
    auto no_swarm = std::make_shared<bool>(false);
    auto resume = std::make_shared<std::string>();
    auto* cmd = app.add_subcommand("fuzz", "Seeded random walks with swarm testing over larger scopes");
    cmd->add_option("--policy", o->policy, "Policy (default validated)");
    cmd->add_option("--model", o->model, "Model preset the swarm scopes are drawn for (default toy; see kvcheck presets)");
    cmd->add_option("--seed", o->seed, "Root seed (walk i uses a seed derived from it and i)");
    cmd->add_option("--walks", o->walks, "Budget in walks (default 1000, none when a --seconds bound is given; 0 = no walk bound)");
    cmd->add_option("--seconds", o->seconds, "Budget in seconds (0 = no time bound)");
    cmd->add_option("--threads", o->threads, "Worker threads")->check(CLI::Range(1u, 256u));
    cmd->add_option("--shard", *shard, "Run shard i of n (i/n): walks with index % n == i");
    cmd->add_option("--depth", o->depth, "Steps per walk")->check(CLI::Range(1u, sim::kFuzzDepthMax));
    cmd->add_option("--out", *out, "Write fuzz.json (for kvcheck merge) and the first counterexample here");
    cmd->add_flag("--keep-going", *keep_going, "Run to the budget instead of stopping at the first violation");
    cmd->add_option("--resume", *resume, "Continue from a fuzz.json written by an interrupted run (same budget flags)");
    cmd->add_flag("--no-swarm", *no_swarm, "Walk the reference scope instead of drawing a scope per walk");
    cmd->add_flag("--json", *json, "Print fuzz.json to stdout");
    cmd->add_flag("--quiet", *quiet, "No progress line");
    cmd->callback([=, &common] {
        catch_interrupt();  // before a fuzz.json's violations are walked again: a stop then ends the run at once
        policy_or_throw(o->policy);
        if (model::find_preset(o->model) == nullptr) {
            std::string names;
            for (const auto& c : model::presets()) names += (names.empty() ? "" : ", ") + c.name;
            throw sim::InputError("", "--model", "unknown preset \"" + o->model + "\" (known: " + names + ")");
        }
        if (*no_swarm && o->model != "toy")
            throw sim::InputError("", "--no-swarm", "walks the toy reference scope; --model " + o->model + " needs swarm walks");
        // i/n exactly: two decimal numbers and one slash, nothing else.
        static const std::regex kShard("([0-9]+)/([0-9]+)");
        std::smatch parts;
        const auto number = [](const std::string& digits, std::uint32_t& value) {
            return std::from_chars(digits.data(), digits.data() + digits.size(), value).ec == std::errc();
        };
        if (!std::regex_match(*shard, parts, kShard) || !number(parts[1], o->shard_index) || !number(parts[2], o->shard_count))
            throw sim::InputError("", "--shard", "expected i/n such as 0/4, got \"" + *shard + "\"");
        if (o->shard_count == 0 || o->shard_index >= o->shard_count)
            throw sim::InputError("", "--shard", "expected 0 <= i < n, got \"" + *shard + "\"");
        if (!out->empty()) {
            sim::require_output_folder(*out);
            for (const char* name : {"/fuzz.json", "/counterexample.json", "/counterexample.dot"}) sim::require_output_file(*out + name);
        }
        o->stop_at_first = !*keep_going;
        o->swarm = !*no_swarm;
        if (cmd->count("--seconds") > 0 && o->seconds > 0 && cmd->count("--walks") == 0) o->walks = 0;  // a time-bounded campaign
        nlohmann::json carried = nlohmann::json::array();
        std::uint64_t walks_before = 0;
        std::uint64_t steps_before = 0;
        std::optional<sim::FoundViolation> carried_first;  // the lowest carried violation, walked again
        if (!resume->empty()) {
            // The continued campaign is written to --out (the continue line names it), never only printed.
            if (out->empty()) throw sim::InputError(*resume, "--resume", "needs --out DIR for the continued campaign's fuzz.json (DIR may be this file's folder)");
            const nlohmann::json previous = sim::parse_json_text(sim::read_file(*resume), *resume);
            sim::check_fuzz_json(previous, *resume);
            const sim::FuzzOptions given = *o;
            carried = sim::resume_point(previous, *o);
            // A resumed run continues the file's campaign; a flag that asks for another is an input error.
            const auto same = [&](const char* flag, const std::string& asked, const std::string& saved) {
                if (cmd->count(flag) > 0 && asked != saved)
                    throw sim::InputError(*resume, flag, "the fuzz.json is for " + std::string(flag) + " " + saved + ", not " + asked);
            };
            const auto shard_name = [](const sim::FuzzOptions& f) { return std::to_string(f.shard_index) + "/" + std::to_string(f.shard_count); };
            same("--policy", given.policy, o->policy);
            same("--model", given.model, o->model);
            same("--seed", std::to_string(given.seed), std::to_string(o->seed));
            same("--shard", shard_name(given), shard_name(*o));
            same("--walks", std::to_string(given.walks), std::to_string(o->walks));
            same("--depth", std::to_string(given.depth), std::to_string(o->depth));
            if (*no_swarm && o->swarm) throw sim::InputError(*resume, "--no-swarm", "the fuzz.json is for swarm walks (without --no-swarm)");
            if (*keep_going && o->stop_at_first)
                throw sim::InputError(*resume, "--keep-going", "the fuzz.json stops at the first violation (without --keep-going)");
            *shard = shard_name(*o);
            walks_before = previous.at("walks").get<std::uint64_t>();
            steps_before = previous.at("steps").get<std::uint64_t>();
            if (o->walks == 0 && o->seconds <= 0)  // before any walk
                throw sim::InputError(*resume, "--seconds", "the fuzz.json is of a campaign bounded by time alone (walk_budget 0): give its --seconds again");
            carried_first = sim::rewalk_carried(carried, *o, *resume);
        }
        if (o->walks == 0 && o->seconds <= 0) throw sim::InputError("", "--walks", "give a budget: --walks N or --seconds S");
        o->stop = &interrupted;
        std::fprintf(*json ? stderr : stdout, "seed=%llu policy=%s%s shard=%s threads=%u\n", static_cast<unsigned long long>(o->seed),
                     o->policy.c_str(), o->model == "toy" ? "" : (" model=" + o->model).c_str(), shard->c_str(), o->threads);
        Progress progress(*quiet, "fuzz " + o->policy);
        o->progress = [&](std::uint64_t walks) { progress.update(walks, o->walks, "walks"); };
        const sim::FuzzReport r = sim::fuzz(*o);
        progress.done();
        nlohmann::json j = sim::fuzz_json(r);
        for (const nlohmann::json& v : carried) j["violations"].push_back(v);
        std::sort(j["violations"].begin(), j["violations"].end(),
                  [](const nlohmann::json& x, const nlohmann::json& y) { return x["walk"] < y["walk"]; });
        // Stopping at the first violation keeps one: a walk below the carried one may have found another.
        if (o->stop_at_first && j["violations"].size() > 1) j["violations"].erase(j["violations"].begin() + 1, j["violations"].end());
        const std::uint64_t walks = r.walks + walks_before;
        j["walks"] = walks;
        j["steps"] = r.steps + steps_before;
        // The counterexample and the reproduce line are for the first violation of the whole campaign.
        const sim::FoundViolation* first = nullptr;
        if (!j["violations"].empty()) {
            const std::uint64_t walk = j["violations"].front().at("walk").get<std::uint64_t>();
            first = !r.violations.empty() && r.violations.front().walk == walk ? &r.violations.front() : &*carried_first;
        }
        if (r.interrupted) {
            std::fflush(stdout);
            if (out->empty())
                std::fprintf(stderr, "interrupted after %llu walks; nothing was written (give --out DIR to keep a checkpoint)\n",
                             static_cast<unsigned long long>(walks));
            else
                // A campaign bounded by time alone needs its --seconds again (the file records walks, not time).
                std::fprintf(stderr, "interrupted after %llu walks; continue with: kvcheck fuzz --resume %s --out %s%s\n",
                             static_cast<unsigned long long>(walks), shell_word(*out + "/fuzz.json").c_str(), shell_word(*out).c_str(),
                             o->walks == 0 ? (" --seconds " + nlohmann::json(o->seconds).dump()).c_str() : "");
        }
        if (!out->empty()) {
            sim::ensure_directory(*out);
            sim::write_file_atomic(*out + "/fuzz.json", j.dump(2) + "\n");
            if (first != nullptr) write_counterexample(*out, first->scope, o->policy, first->counterexample);
            else remove_counterexample(*out);
        }
        if (*json) {
            std::cout << j.dump(2) << "\n";
        } else {
            std::printf("walks=%llu steps=%llu seconds=%.2f violations=%zu\n", static_cast<unsigned long long>(walks),
                        static_cast<unsigned long long>(j["steps"].get<std::uint64_t>()), r.seconds, j["violations"].size());
            for (const nlohmann::json& v : j["violations"]) {
                const auto found = std::find_if(r.violations.begin(), r.violations.end(),
                                                [&](const sim::FoundViolation& f) { return f.walk == v["walk"].get<std::uint64_t>(); });
                if (found != r.violations.end())
                    std::printf("walk %llu violates %s (shrunk to %s):\n%s", static_cast<unsigned long long>(found->walk),
                                found->invariant.c_str(), counted_steps(found->counterexample.steps.size()).c_str(), sim::format_counterexample(found->counterexample).c_str());
                else
                    std::printf("walk %llu violates %s (found before the resume)\n", static_cast<unsigned long long>(v["walk"].get<std::uint64_t>()),
                                v["invariant"].get<std::string>().c_str());
            }
        }
        std::fflush(stdout);  // the listing before the reproduce line, also when both go to one file
        if (first != nullptr)
            std::fprintf(stderr, "reproduce: %s\n", fuzz_reproduce(j, first->walk).c_str());
        common.exit_code = !j["violations"].empty() ? 1 : r.interrupted ? 130 : 0;
    });
}

void register_merge(CLI::App& app, Common& common) {
    auto files = std::make_shared<std::vector<std::string>>();
    auto out = std::make_shared<std::string>();
    auto* cmd = app.add_subcommand("merge", "Merge fuzz.json files from shards deterministically");
    cmd->add_option("files", *files, "fuzz.json files")->required();
    cmd->add_option("--out", *out, "Write the merged result here (default: stdout)");
    cmd->callback([files, out, &common] {
        if (!out->empty()) sim::require_output_file(*out, *files);
        std::vector<sim::FuzzResultFile> shards;
        for (const std::string& f : *files) {
            nlohmann::json j = sim::parse_json_text(sim::read_file(f), f);
            sim::check_fuzz_json(j, f);
            shards.push_back({f, std::move(j)});
        }
        const nlohmann::json merged = sim::merge_fuzz_json(shards);
        for (const sim::FuzzResultFile& f : shards)
            if (f.result.at("interrupted").get<bool>())
                std::fprintf(stderr, "kvcheck merge: %s was interrupted after walk %llu of %llu; resume it for the rest\n", f.path.c_str(),
                             static_cast<unsigned long long>(f.result.at("next_walk").get<std::uint64_t>()),
                             static_cast<unsigned long long>(f.result.at("walk_budget").get<std::uint64_t>()));
        const std::uint64_t count = merged["shards"].front().at(1).get<std::uint64_t>();
        if (merged["shards"].size() < count)
            std::fprintf(stderr, "kvcheck merge: %zu of %llu shards merged; the walks of the others did not run\n", merged["shards"].size(),
                         static_cast<unsigned long long>(count));
        if (out->empty()) std::cout << merged.dump(2) << "\n";
        else sim::write_file_atomic(*out, merged.dump(2) + "\n");
        // What fuzz prints of a campaign, for the merged one: on stdout beside --out, else after the
        // JSON on stderr.
        std::fflush(stdout);
        std::FILE* summary = out->empty() ? stderr : stdout;
        const nlohmann::json& found = merged["violations"];
        std::fprintf(summary, "merged %zu of %llu shards: walks=%llu steps=%llu violations=%zu\n", merged["shards"].size(),
                     static_cast<unsigned long long>(count), static_cast<unsigned long long>(merged["walks"].get<std::uint64_t>()),
                     static_cast<unsigned long long>(merged["steps"].get<std::uint64_t>()), found.size());
        for (const nlohmann::json& v : found)
            std::fprintf(summary, "walk %llu violates %s (%s)\n", static_cast<unsigned long long>(v["walk"].get<std::uint64_t>()),
                         v["invariant"].get<std::string>().c_str(), counted_steps(v["steps"].size()).c_str());
        if (!found.empty()) {
            std::fflush(summary);
            std::fprintf(stderr, "reproduce: %s\n", fuzz_reproduce(merged, found.front()["walk"].get<std::uint64_t>()).c_str());
        }
        // A campaign with a shard missing or interrupted is not clean yet: as fuzz exits for an
        // interrupted shard, so the merge job of a CI pipeline does not pass on part of the walks.
        const bool incomplete = merged["shards"].size() < count || merged["interrupted"].get<bool>();
        common.exit_code = !found.empty() ? 1 : incomplete ? 130 : 0;
    });
}

}  // namespace kvcheck::cli
