// `kvcheck check`, `kvcheck fuzz`, `kvcheck merge` and `kvcheck mutants`: the model checker's
// front door. Counterexamples come out as a numbered step list, counterexample.json (a scenario
// `kvcheck run` reproduces without the checker) and counterexample.dot.
#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/check/campaign.hpp"
#include "sim/check/check_run.hpp"
#include "sim/check/explorer.hpp"
#include "sim/check/walker.hpp"
#include "sim/io/files.hpp"
#include "sim/io/shell_word.hpp"
#include "sim/run/counterexample_schedules.hpp"
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

// "1 step", "12 steps".
std::string counted_steps(std::size_t n) { return std::to_string(n) + (n == 1 ? " step" : " steps"); }

// The human-readable result of a check run.
void print_check(const sim::CheckOutcome& o) {
    const sim::CheckRequest& a = o.asked;
    const sim::ExploreReport& r = o.report;
    const std::string ended = r.exhausted            ? "exhausted"
                              : !r.bound_hit.empty() ? "bound hit: " + r.bound_hit
                                                     : "stopped at the first counterexample";
    std::printf("scope=%s policy=%s order=%s reduction=%s states=%llu transitions=%llu depth=%u seconds=%.2f "
                "states_per_s=%.0f %s\n",
                a.scope.c_str(), a.policy.c_str(), a.order.c_str(), a.reduction.c_str(),
                static_cast<unsigned long long>(r.states), static_cast<unsigned long long>(r.transitions), r.depth,
                r.seconds, r.states_per_s, ended.c_str());
    if (a.liveness)
        std::printf("liveness: cycles=%llu stuck_states=%llu\n", static_cast<unsigned long long>(r.nontrivial_sccs),
                    static_cast<unsigned long long>(r.stuck_states));
    if (r.stuck_states > 0)
        std::printf("LV1_progress: %llu terminal states leave a request unfinished\n",
                    static_cast<unsigned long long>(r.stuck_states));
    if (!r.counterexample) return;
    std::printf("counterexample (%s", counted_steps(r.counterexample->steps.size()).c_str());
    // A warm-up's counterexample replays from the scope with the violating request cold.
    const sim::Scope& from = r.counterexample_scope.value_or(o.scope);
    for (std::size_t i = 0; i < from.requests.size(); ++i) {
        if (from.requests[i].warm) {
            std::printf(", after warm request %zu ran to the end", i);
        } else if (o.scope.requests[i].warm) {
            std::printf(": warm request %zu warming up alone", i);
            break;
        }
    }
    std::printf("):\n%s", sim::format_counterexample(*r.counterexample).c_str());
}

}  // namespace

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

void register_check(CLI::App& app, Common& common) {
    auto a = std::make_shared<sim::CheckRequest>();
    auto json = std::make_shared<bool>(false);
    auto quiet = std::make_shared<bool>(false);
    auto* cmd = app.add_subcommand(
        "check", "Explore every interleaving at a bounded scope (breadth- or depth-first, state hashing)");
    cmd->add_option("--scope", a->scope, "Named scope (default reference): " + sim::known_scopes());
    cmd->add_option("--policy", a->policy, "Policy to check (default validated)");
    cmd->add_option("--invariant", a->target, "Stop only at violations of this invariant");
    cmd->add_option("--max-states", a->max_states, "State bound (reported when hit)")
        ->check(CLI::Range(std::uint64_t{1}, UINT64_MAX));
    cmd->add_option("--max-seconds", a->max_seconds, "Time bound (reported when hit)");
    cmd->add_option(
        "--out", a->out,
        "Write counterexample.json, counterexample.dot and the counterexample's replay schedules (schedules/) here");
    cmd->add_option(
        "--order", a->order,
        "bfs (default: breadth first, shortest counterexamples) or dfs (depth first: less memory, deep states early, "
        "counterexamples shrunk)");
    cmd->add_option("--reduction", a->reduction,
                    "none (default) or symmetry: merge states that differ only by segment ids");
    cmd->add_option("--resume", a->resume,
                    "Continue from a checkpoint written when a run was interrupted or hit a bound");
    cmd->add_option(
        "--checkpoint", a->checkpoint,
        "Where a stopped run writes its checkpoint (default: the --resume file, else DIR/check.checkpoint with --out, "
        "else check.checkpoint)");
    cmd->add_flag("--liveness", a->liveness,
                  "Keep the explored graph and look for cycles (strongly connected components)");
    cmd->add_flag("--json", *json, "Print the result as JSON");
    cmd->add_flag("--quiet", *quiet, "No progress line");
    cmd->callback([=, &common] {
        catch_interrupt();  // before a checkpoint is read: a stop meanwhile leaves it as it was
        sim::CheckRequest request = *a;
        request.given = [cmd](const char* flag) { return cmd->count(flag) > 0; };
        request.stop = &interrupted;
        std::optional<Progress> progress;
        request.started = [&](const sim::CheckRequest& asked) { progress.emplace(*quiet, "check " + asked.policy); };
        request.progress = [&](std::uint64_t states, std::uint32_t depth, double) {
            progress->update(states, 0, "states, depth " + std::to_string(depth));
        };
        const sim::CheckOutcome o = sim::run_check(std::move(request));
        progress.reset();
        const sim::CheckRequest& q = o.asked;
        const sim::ExploreReport& r = o.report;
        if (r.checkpoint)
            std::fprintf(stderr, "stopped (%s) at %llu states; wrote %s; continue with: %s check --resume %s%s\n",
                         r.bound_hit.c_str(), static_cast<unsigned long long>(r.states), o.checkpoint_path.c_str(),
                         sim::kvcheck_command().c_str(), sim::shell_word(o.checkpoint_path).c_str(),
                         q.out.empty() ? "" : (" --out " + sim::shell_word(q.out)).c_str());
        if (*json)
            std::cout << o.result.dump(2) << "\n";
        else
            print_check(o);
        FILE* info = *json ? stderr : stdout;
        const std::string schedules =
            q.out.empty() ? "" : sim::refresh_counterexample_schedules(q.out, o.wrote_counterexample);
        if (o.wrote_counterexample) {
            std::fprintf(info, "wrote %s/counterexample.json and counterexample.dot; reproduce: %s run %s\n",
                         q.out.c_str(), sim::kvcheck_command().c_str(),
                         sim::shell_word(q.out + "/counterexample.json").c_str());
            std::fprintf(info, "%s\n", schedules.c_str());
        } else if (r.counterexample) {
            std::fprintf(info, "reproduce: %s\n(add --out DIR for counterexample.json, which kvcheck run replays)\n",
                         o.reproduce.c_str());
        }
        // A run stopped by a signal proved nothing yet: 130 (the shell's code for SIGINT), unless it
        // already found a violation.
        common.exit_code = r.counterexample || r.stuck_states > 0 ? 1 : interrupted.load() ? 130 : 0;
    });
}

void register_fuzz(CLI::App& app, Common& common) {
    auto a = std::make_shared<sim::CampaignRequest>();
    sim::FuzzOptions* o = &a->options;
    auto json = std::make_shared<bool>(false);
    auto quiet = std::make_shared<bool>(false);
    auto* cmd = app.add_subcommand("fuzz", "Seeded random walks with swarm testing over larger scopes");
    cmd->add_option("--policy", o->policy, "Policy (default validated)");
    cmd->add_option("--model", o->model,
                    "Model preset the swarm scopes are drawn for (default toy; see kvcheck presets)");
    cmd->add_option("--seed", o->seed, "Root seed (walk i uses a seed derived from it and i)");
    cmd->add_option("--walks", o->walks,
                    "Budget in walks (default 1000, none when a --seconds bound is given; 0 = no walk bound)");
    cmd->add_option("--seconds", o->seconds, "Budget in seconds (0 = no time bound)");
    cmd->add_option("--threads", o->threads, "Worker threads")->check(CLI::Range(1u, 256u));
    cmd->add_option("--shard", a->shard, "Run shard i of n (i/n): walks with index % n == i");
    cmd->add_option("--depth", o->depth, "Steps per walk")->check(CLI::Range(1u, sim::kFuzzDepthMax));
    cmd->add_option("--out", a->out, "Write fuzz.json (for kvcheck merge) and the first counterexample here");
    cmd->add_option("--checkpoint-seconds", o->checkpoint_seconds,
                    "With --out: also write fuzz.json every S seconds while walking, so a killed campaign resumes "
                    "from it (default 10; 0 = at the end only)");
    cmd->add_flag("--keep-going", a->keep_going, "Run to the budget instead of stopping at the first violation");
    cmd->add_option("--resume", a->resume,
                    "Continue from a fuzz.json written by an interrupted run (same budget flags)");
    cmd->add_flag("--no-swarm", a->no_swarm, "Walk the reference scope instead of drawing a scope per walk");
    cmd->add_flag("--json", *json, "Print fuzz.json to stdout");
    cmd->add_flag("--quiet", *quiet, "No progress line");
    cmd->callback([=, &common] {
        catch_interrupt();  // before a fuzz.json's violations are walked again: a stop then ends the run at once
        sim::CampaignRequest request = *a;
        request.given = [cmd](const char* flag) { return cmd->count(flag) > 0; };
        request.options.stop = &interrupted;
        std::optional<Progress> progress;
        std::uint64_t budget = 0;
        request.started = [&](const sim::FuzzOptions& f, const std::string& shard) {
            std::fprintf(*json ? stderr : stdout, "seed=%llu policy=%s%s shard=%s threads=%u\n",
                         static_cast<unsigned long long>(f.seed), f.policy.c_str(),
                         f.model == "toy" ? "" : (" model=" + f.model).c_str(), shard.c_str(), f.threads);
            progress.emplace(*quiet, "fuzz " + f.policy);
            budget = f.walks;
        };
        request.options.progress = [&](std::uint64_t walks) { progress->update(walks, budget, "walks"); };
        const sim::CampaignOutcome c = sim::run_campaign(std::move(request));
        progress.reset();
        const sim::FuzzReport& r = c.report;
        const nlohmann::json& j = c.result;
        if (r.interrupted) {
            std::fflush(stdout);
            if (a->out.empty())
                std::fprintf(
                    stderr, "interrupted after %llu walks; nothing was written (give --out DIR to keep a checkpoint)\n",
                    static_cast<unsigned long long>(c.walks));
            else  // the file records the campaign's budget, time included
                std::fprintf(stderr, "interrupted after %llu walks; continue with: %s fuzz --resume %s --out %s\n",
                             static_cast<unsigned long long>(c.walks), sim::kvcheck_command().c_str(),
                             sim::shell_word(a->out + "/fuzz.json").c_str(), sim::shell_word(a->out).c_str());
        }
        if (*json) {
            std::cout << j.dump(2) << "\n";
        } else {
            std::printf("walks=%llu steps=%llu seconds=%.2f violations=%zu\n", static_cast<unsigned long long>(c.walks),
                        static_cast<unsigned long long>(j["steps"].get<std::uint64_t>()), r.seconds,
                        j["violations"].size());
            for (const nlohmann::json& v : j["violations"]) {
                const auto found =
                    std::find_if(r.violations.begin(), r.violations.end(), [&](const sim::FoundViolation& f) {
                        return f.walk == v["walk"].get<std::uint64_t>();
                    });
                if (found != r.violations.end())
                    std::printf("walk %llu violates %s (shrunk to %s):\n%s",
                                static_cast<unsigned long long>(found->walk), found->invariant.c_str(),
                                counted_steps(found->counterexample.steps.size()).c_str(),
                                sim::format_counterexample(found->counterexample).c_str());
                else
                    std::printf("walk %llu violates %s (found before the resume)\n",
                                static_cast<unsigned long long>(v["walk"].get<std::uint64_t>()),
                                v["invariant"].get<std::string>().c_str());
            }
        }
        std::fflush(stdout);  // the listing before the reproduce line, also when both go to one file
        if (c.first) std::fprintf(stderr, "reproduce: %s\n", c.reproduce.c_str());
        common.exit_code = !j["violations"].empty() ? 1 : r.interrupted ? 130 : 0;
        if (c.write_error) {  // after the findings, which hold whatever the disk did
            std::fprintf(stderr, "kvcheck: %s\n", c.write_error->what());
            common.exit_code = 2;
        }
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
        const nlohmann::json merged = sim::merge_fuzz_files(*files, shards);
        for (const sim::FuzzResultFile& f : shards)
            if (f.result.at("interrupted").get<bool>())
                std::fprintf(
                    stderr, "kvcheck merge: %s was interrupted after walk %llu of %llu; resume it for the rest\n",
                    f.path.c_str(), static_cast<unsigned long long>(f.result.at("next_walk").get<std::uint64_t>()),
                    static_cast<unsigned long long>(f.result.at("walk_budget").get<std::uint64_t>()));
        const std::uint64_t count = merged["shards"].front().at(1).get<std::uint64_t>();
        if (merged["shards"].size() < count)
            std::fprintf(stderr, "kvcheck merge: %zu of %llu shards merged; the walks of the others did not run\n",
                         merged["shards"].size(), static_cast<unsigned long long>(count));
        if (out->empty())
            std::cout << merged.dump(2) << "\n";
        else
            sim::write_file_atomic(*out, merged.dump(2) + "\n");
        // What fuzz prints of a campaign, for the merged one: on stdout beside --out, else after the
        // JSON on stderr.
        std::fflush(stdout);
        std::FILE* summary = out->empty() ? stderr : stdout;
        const nlohmann::json& found = merged["violations"];
        std::fprintf(summary, "merged %zu of %llu shards: walks=%llu steps=%llu violations=%zu\n",
                     merged["shards"].size(), static_cast<unsigned long long>(count),
                     static_cast<unsigned long long>(merged["walks"].get<std::uint64_t>()),
                     static_cast<unsigned long long>(merged["steps"].get<std::uint64_t>()), found.size());
        for (const nlohmann::json& v : found)
            std::fprintf(summary, "walk %llu violates %s (%s)\n",
                         static_cast<unsigned long long>(v["walk"].get<std::uint64_t>()),
                         v["invariant"].get<std::string>().c_str(), counted_steps(v["steps"].size()).c_str());
        if (!found.empty()) {
            std::fflush(summary);
            std::fprintf(stderr, "reproduce: %s\n",
                         sim::fuzz_reproduce(merged, found.front()["walk"].get<std::uint64_t>()).c_str());
        }
        // A campaign with a shard missing or interrupted is not clean yet: as fuzz exits for an
        // interrupted shard, so the merge job of a CI pipeline does not pass on part of the walks.
        const bool incomplete = merged["shards"].size() < count || merged["interrupted"].get<bool>();
        common.exit_code = !found.empty() ? 1 : incomplete ? 130 : 0;
    });
}

}  // namespace kvcheck::cli
