// `kvcheck run`, `kvcheck compare` and `kvcheck validate`: the simulator's front door. A folder of
// scenarios is a test suite (`--junit FILE` writes JUnit XML); every failure prints the command
// that reproduces it.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/policy.hpp"
#include "sim/io/input_error.hpp"
#include "sim/io/suggest.hpp"
#include "sim/run/suite.hpp"
#include "sim/scenario/scenario.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/progress.hpp"
#include "tools/cli/report_text.hpp"

namespace kvcheck::cli {

namespace {

struct RunArgs {
    sim::SuiteOptions suite;
    bool json = false;
    bool quiet = false;
    std::vector<std::string> sets;  // --set POINTER=VALUE, as given
};

// --set POINTER=VALUE on run, compare and validate: a scenario value replaced for this command.
void add_set_option(CLI::App* cmd, std::vector<std::string>& sets) {
    cmd->add_option(
           "--set", sets,
           "POINTER=VALUE: replace the scenario's value at this JSON pointer (VALUE as JSON, else as a string), "
           "e.g. --set /compute/max_load_wait_us=5000; repeatable, applied in order")
        ->expected(1)
        ->allow_extra_args(false)  // one value an occurrence: a positional after it stays positional
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

std::vector<sim::Override> read_overrides(const std::vector<std::string>& sets) {
    std::vector<sim::Override> out;
    for (const std::string& text : sets) out.push_back(sim::parse_override(text));
    return out;
}

// What a person needs of one case, printed once it ran.
void print_case(const sim::CaseResult& c, const RunArgs& args, bool in_suite) {
    if (!c.error.empty()) return;  // printed with the exit code, after the suite
    const bool per_policy = args.suite.expected_policies;
    FILE* info = args.json ? stderr : stdout;
    if (args.json && !in_suite && !per_policy)
        std::cout << c.report.dump(2) << "\n";
    else if (args.json) {
    } else if (!args.quiet && c.steps_mode)
        std::printf("replayed %llu steps of %s under %s\n", static_cast<unsigned long long>(c.steps), c.path.c_str(),
                    c.policy.c_str());
    else if (!args.quiet)
        print_summary(c.report, stdout);
    if (!args.json && !args.quiet && c.steps_mode)
        for (const auto& [name, message] : c.first_violation)
            std::printf("violated %s: %s\n", name.c_str(), message.c_str());
    if (!args.quiet)
        for (const std::string& w : c.warnings) std::fprintf(info, "warning: %s\n", w.c_str());
    for (const std::string& f : c.failures)
        std::fprintf(info, "FAIL %s%s: %s\n", c.name.c_str(), c.policy_tag.c_str(), f.c_str());
    if (!c.failures.empty()) std::fprintf(info, "reproduce: %s\n", c.reproduce.c_str());
    if (!c.counterexample_note.empty()) std::fprintf(info, "%s\n", c.counterexample_note.c_str());
    if (!c.out_dir.empty() && !args.quiet)
        std::fprintf(info, "outputs in %s (report.json, metrics.prom, timeline.json%s)\n", c.out_dir.c_str(),
                     args.suite.html ? ", report.html" : "");
    if (!args.suite.schedules.empty() && !args.quiet)
        std::fprintf(info, "schedules exported: %llu to %s\n", static_cast<unsigned long long>(c.schedules_written),
                     c.schedules_dir.c_str());
    std::fprintf(info, "final_state_hash=%s\n", c.report["final_state_hash"].get<std::string>().c_str());
}

int run_command(const RunArgs& args) {
    std::error_code ec;
    const bool in_suite = args.suite.targets.size() > 1 || std::filesystem::is_directory(args.suite.targets.at(0), ec);
    FILE* info = args.json ? stderr : stdout;
    std::optional<Progress> progress;
    sim::CaseHooks hooks;
    hooks.started = [&](const std::string& path, const std::string& name, const std::string& policy,
                        std::uint64_t seed) {
        // Also in a quiet suite: it names the scenario the final_state_hash line below belongs to.
        std::fprintf(info, "seed=%llu scenario=%s policy=%s\n", static_cast<unsigned long long>(seed), path.c_str(),
                     policy.c_str());
        progress.emplace(args.quiet, "run " + name);
    };
    hooks.progress = [&](std::uint64_t finished, std::uint64_t events) {
        if (progress) progress->update(finished, 0, "requests, " + std::to_string(events) + " events");
    };
    hooks.finished = [&](const sim::CaseResult& c) {
        progress.reset();
        print_case(c, args, in_suite);
    };
    const sim::SuiteResult suite = sim::run_suite(args.suite, hooks);
    for (const sim::CaseResult& c : suite.cases)
        if (!c.error.empty()) std::fprintf(stderr, "kvcheck: %s\n", c.error.c_str());
    if (suite.folder || args.suite.expected_policies) {
        // One JSON document on stdout: the report of every scenario (and policy) that ran.
        if (args.json) std::cout << suite.reports_json(args.suite.expected_policies).dump(2) << "\n";
        std::fputs(suite.summary_text().c_str(), info);
    }
    return suite.exit_code();
}

}  // namespace

void register_compare(CLI::App& app, Common& common) {
    auto args = std::make_shared<sim::CompareOptions>();
    args->policies = {"naive", "validated"};
    auto sets = std::make_shared<std::vector<std::string>>();
    auto json = std::make_shared<bool>(false);
    auto quiet = std::make_shared<bool>(false);
    auto* cmd = app.add_subcommand("compare", "Run one scenario under several policies and print them side by side");
    cmd->add_option("scenario", args->target, "Scenario file")->required();
    cmd->add_option("--policies", args->policies, "Comma-separated policies (default naive,validated)")
        ->delimiter(',')
        ->allow_extra_args(false);
    cmd->add_option("--seed", args->seed, "Seed (default, or 0: the scenario's)");
    cmd->add_option("--out", args->out,
                    "Write each policy's outputs under DIR/POLICY/ and the policy order to DIR/compare.json");
    cmd->add_flag("--json", *json, "Print {\"policies\": {NAME: report}}");
    cmd->add_flag("--html", args->html, "Also write DIR/report.html, the policies side by side")->needs("--out");
    cmd->add_flag("--quiet", *quiet, "No progress line");
    add_set_option(cmd, *sets);
    cmd->callback([=, &common] {
        args->overrides = read_overrides(*sets);
        std::optional<Progress> progress;
        sim::CompareHooks hooks;
        hooks.started = [&](std::uint64_t seed) {
            std::fprintf(*json ? stderr : stdout, "seed=%llu scenario=%s\n", static_cast<unsigned long long>(seed),
                         args->target.c_str());
            std::fflush(stdout);  // before the FAIL lines on stderr, also when both go to one file
        };
        hooks.progress = [&](const std::string& name, std::uint64_t finished) {
            if (!progress) progress.emplace(*quiet, "compare " + name);
            progress->update(finished, 0, "requests");
        };
        hooks.finished = [&](const sim::ComparedPolicy& p) {
            progress.reset();
            for (const std::string& f : p.failures) std::fprintf(stderr, "FAIL %s: %s\n", p.policy.c_str(), f.c_str());
            if (!p.failures.empty()) std::fprintf(stderr, "reproduce: %s\n", p.reproduce.c_str());
            if (!p.counterexample_note.empty()) std::fprintf(stderr, "%s\n", p.counterexample_note.c_str());
        };
        const std::vector<sim::ComparedPolicy> ran = sim::run_compare(*args, hooks);
        std::vector<nlohmann::json> reports;
        nlohmann::json all = nlohmann::json::object();
        for (const sim::ComparedPolicy& p : ran) {
            all[p.policy] = p.report;
            reports.push_back(p.report);
        }
        if (*json)
            std::cout << nlohmann::json{{"policies", all}}.dump(2) << "\n";
        else
            print_comparison(reports);
        for (const auto& r : reports)
            std::fprintf(*json ? stderr : stdout, "final_state_hash[%s]=%s\n", r["policy"].get<std::string>().c_str(),
                         r["final_state_hash"].get<std::string>().c_str());
        const bool failed =
            std::any_of(ran.begin(), ran.end(), [](const sim::ComparedPolicy& p) { return !p.failures.empty(); });
        common.exit_code = failed ? 1 : 0;
    });
}

void register_validate(CLI::App& app, Common& common) {
    auto path = std::make_shared<std::string>();
    auto* cmd = app.add_subcommand("validate", "Check a scenario file and report every problem with its JSON pointer");
    cmd->add_option("scenario", *path, "Scenario file")->required();
    auto sets = std::make_shared<std::vector<std::string>>();
    add_set_option(cmd, *sets);
    cmd->callback([path, sets, &common] {
        const std::vector<sim::InputError> problems = sim::validate_scenario(*path, read_overrides(*sets));
        for (const sim::InputError& e : problems) std::fprintf(stderr, "kvcheck: %s\n", e.what());
        if (problems.empty()) std::printf("%s: valid\n", path->c_str());
        common.exit_code = problems.empty() ? 0 : 2;
    });
}

void register_run(CLI::App& app, Common& common) {
    auto args = std::make_shared<RunArgs>();
    auto* cmd =
        app.add_subcommand("run", "Run a scenario (or every *.json scenario in a folder) through the simulator");
    cmd->add_option("scenario", args->suite.targets,
                    "Scenario files and folders; one file is a single run, anything more a suite")
        ->required();
    cmd->add_option("-k,--match", args->suite.match,
                    "Run only the scenarios whose name (file stem) matches this glob, e.g. 'fault-f2*'; repeatable")
        ->expected(1)
        ->allow_extra_args(false)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    cmd->add_option("--policy", args->suite.policy, "Policy to run (default: the scenario's)");
    cmd->add_option("--seed", args->suite.seed, "Seed (default, or 0: the scenario's)");
    cmd->add_option("--out", args->suite.out, "Write report.json, metrics.prom and timeline.json here");
    cmd->add_option("--export-schedules", args->suite.schedules, "Write replay schedules of resumed requests here");
    cmd->add_option("--junit", args->suite.junit, "Write JUnit XML (one test case per scenario)");
    cmd->add_flag("--json", args->json, "Print report.json to stdout (a folder: {\"scenarios\": {NAME: report}})");
    cmd->add_flag("--quiet", args->quiet, "No summary and no progress line");
    cmd->add_flag("--html", args->suite.html, "Also write report.html next to report.json")->needs("--out");
    auto* every =
        cmd->add_flag("--expected-policies", args->suite.expected_policies,
                      "Also run each policy the scenario's expect block names, each judged by its own expectation "
                      "(outputs in DIR[/NAME]/POLICY/, one JUnit case per scenario and policy)");
    every->excludes(cmd->get_option("--policy"));
    every->excludes(cmd->get_option("--export-schedules"));
    add_set_option(cmd, args->sets);
    cmd->callback([args, &common] {
        args->suite.overrides = read_overrides(args->sets);
        if (!args->suite.policy.empty() && model::find_policy(args->suite.policy) == nullptr)
            throw sim::InputError("", "--policy", sim::unknown_policy(args->suite.policy));
        common.exit_code = run_command(*args);
    });
}

}  // namespace kvcheck::cli
