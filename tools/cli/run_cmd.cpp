// `kvcheck run`, `kvcheck compare` and `kvcheck validate`: the simulator's front door. A folder of
// scenarios is a test suite (`--junit FILE` writes JUnit XML); every failure prints the command
// that reproduces it.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "sim/run_folders.hpp"
#include "sim/engine.hpp"
#include "sim/expect.hpp"
#include "sim/files.hpp"
#include "sim/report_html.hpp"
#include "sim/report_svg.hpp"
#include "sim/schedules.hpp"
#include "sim/shrink.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/progress.hpp"
#include "tools/cli/report_text.hpp"

namespace kvcheck::cli {

namespace {

struct RunArgs {
    std::string target;
    std::string policy;
    std::uint64_t seed = 0;
    std::string out;
    std::string schedules;
    std::string junit;
    bool json = false;
    bool quiet = false;
    bool html = false;
    bool expected_policies = false;  // every policy the expect block names, each in DIR[/NAME]/POLICY/
    std::vector<std::string> sets;   // --set POINTER=VALUE, as given
    std::vector<sim::Override> overrides;  // the same, read
};

struct CaseResult {
    std::string name;
    std::string policy_tag;  // "[POLICY]" when a scenario runs under several policies
    std::string path;
    std::vector<std::string> failures;
    std::vector<std::string> warnings;  // the messages of report.json's warnings
    std::string error;  // bad input
    std::string reproduce;
    std::string policy;
    std::uint64_t seed = 0;
    double seconds = 0;
    nlohmann::json report;  // kept for a suite's --json document
};

std::string reproduce_command(const std::string& path, const std::string& policy, std::uint64_t seed,
                              const std::vector<sim::Override>& overrides) {
    std::string out = "kvcheck run " + shell_word(path) + " --policy " + shell_word(policy) + " --seed " + std::to_string(seed);
    for (const sim::Override& o : overrides) out += " --set " + shell_word(o.text);
    return out;
}

// --set POINTER=VALUE on run, compare and validate: a scenario value replaced for this command.
void add_set_option(CLI::App* cmd, std::vector<std::string>& sets) {
    cmd->add_option("--set", sets,
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

// Where a scenario's outputs (or schedules) go under `base`: base itself for a single run, a
// folder named after the scenario in a suite.
std::string case_folder(const std::string& base, const std::string& name, bool in_suite) {
    return base.empty() || !in_suite ? base : base + "/" + name;
}

// The files one run writes into its folder.
constexpr const char* kRunFiles[] = {"/report.json", "/metrics.prom", "/timeline.json", "/report.html", "/counterexample.json"};

// Throws InputError before any work when `dir` cannot take a run's files, or one of them is an
// input (a scenario or trace named report.json in the output folder).
void require_run_folder(const std::string& dir, const std::vector<std::string>& inputs) {
    sim::require_output_folder(dir);
    for (const char* name : kRunFiles) sim::require_output_file(dir + name, inputs);
}

// A run's files are written as one group (sim::write_files_atomic): Ctrl-C or a full disk leaves
// the folder's earlier files or all new ones. Without `html` an earlier report.html goes, as it
// would show another run.
void write_outputs(const std::string& dir, const sim::RunResult& r, const nlohmann::json& report, bool html) {
    const sim::HeldSignals held;
    const std::string report_text = report.dump(2) + "\n";
    const std::string metrics_text = sim::prometheus_text(r.info, r.metrics);
    const std::string html_text = html ? sim::report_html({{report["policy"].get<std::string>(), report, dir + "/report.json"}}) : "";
    std::vector<std::pair<std::string, sim::FileWriter>> files = {
        {dir + "/report.json", sim::text_writer(report_text)},
        {dir + "/metrics.prom", sim::text_writer(metrics_text)},
        {dir + "/timeline.json", [&r](std::ostream& out) { r.timeline.write(out); }}};
    if (html) files.emplace_back(dir + "/report.html", sim::text_writer(html_text));
    else sim::remove_stale(dir + "/report.html");
    sim::write_files_atomic(files);
}

// Removes what earlier runs left in `dir` that this one does not replace: the run files of each
// subfolder (one holding report.json) not named in `keep`, the subfolder too once empty, and with
// `top` the run files and an earlier compare's manifest in `dir` itself. `kvcheck report DIR`
// then shows this run only, never in an order or with names of another.
void clear_other_results(const std::string& dir, const std::set<std::string>& keep, bool top) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) return;
    if (top) {
        for (const char* name : kRunFiles) sim::remove_stale(dir + name);
        sim::remove_stale(sim::compare_manifest_path(dir));
    }
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        if (!entry.is_directory(ec) || keep.count(entry.path().filename().string()) > 0 || !fs::exists(entry.path() / "report.json", ec))
            continue;
        for (const char* name : kRunFiles) sim::remove_stale(entry.path().string() + name);
        if (fs::is_empty(entry.path(), ec)) fs::remove(entry.path(), ec);
    }
}

// A failed run that violated an invariant leaves DIR/counterexample.json: the run shrunk to a
// small scenario (sim/shrink.hpp) that still violates it, checked by loading the written file
// and running it again. Any other run removes an earlier one. Returns the line to print.
std::string write_counterexample(const std::string& dir, const sim::Scenario& scenario, const std::string& policy, std::uint64_t seed,
                                 const sim::RunResult& result, bool failed) {
    const std::string file = dir + "/counterexample.json";
    const std::string invariant = failed ? sim::shrink_target(scenario, result, sim::expectation_for(scenario, policy)) : "";
    if (invariant.empty()) {
        sim::remove_stale(file);
        return "";
    }
    const std::optional<sim::ShrunkRun> shrunk = sim::shrink_run(scenario, policy, seed, invariant);
    if (!shrunk) {
        sim::remove_stale(file);
        return "counterexample: none written (the workload written out inline does not violate " + invariant + ")";
    }
    sim::write_file_atomic(file, shrunk->scenario.dump(2) + "\n");
    sim::RunOptions options;
    options.policy = policy;
    options.seed = seed;
    options.seed_given = true;
    if (!sim::violates(sim::run_scenario(sim::load_scenario(file), options), invariant)) {
        sim::remove_stale(file);
        return "counterexample: none written (the shrunk scenario did not violate " + invariant + " when loaded again)";
    }
    return "counterexample: " + file + " (" + std::to_string(shrunk->requests_after) + " of " + std::to_string(shrunk->requests_before) +
           " requests, " + std::to_string(shrunk->faults_after) + " of " + std::to_string(shrunk->faults_before) + " fault entries, " +
           invariant + "; " + std::to_string(shrunk->runs) + " runs); replay: kvcheck run " + shell_word(file);
}

// Runs one scenario file; prints what a person needs and returns the case result.
// `policy` overrides the scenario's; with `per_policy` the outputs go into a subfolder named after it.
CaseResult run_one(const std::string& path, const RunArgs& args, bool in_suite, const std::string& policy_name, bool per_policy) {
    CaseResult c;
    c.path = path;
    c.name = std::filesystem::path(path).stem().string();
    if (per_policy) c.policy_tag = "[" + policy_name + "]";
    const auto started = std::chrono::steady_clock::now();
    sim::Scenario scenario;
    try {
        scenario = sim::load_scenario(path, args.overrides);
    } catch (const sim::InputError& e) {
        c.error = e.what();
        return c;
    }
    sim::RunOptions options;
    options.policy = policy_name;
    options.seed = args.seed;
    options.seed_given = args.seed != 0;
    // A suite exports each scenario's schedules into a folder of its own, as its outputs.
    options.schedules_dir = case_folder(args.schedules, c.name, in_suite);
    const std::string policy = policy_name.empty() ? scenario.policy : policy_name;
    const std::uint64_t seed = options.seed_given ? args.seed : scenario.seed;
    FILE* info = args.json ? stderr : stdout;
    // Also in a quiet suite: it names the scenario the final_state_hash line below belongs to.
    std::fprintf(info, "seed=%llu scenario=%s policy=%s\n", static_cast<unsigned long long>(seed), path.c_str(), policy.c_str());
    Progress progress(args.quiet, "run " + scenario.name);
    options.progress = [&](std::uint64_t finished, std::uint64_t events) { progress.update(finished, 0, "requests, " + std::to_string(events) + " events"); };
    sim::RunResult result;
    try {
        result = sim::run_scenario(scenario, options);
    } catch (const sim::InputError& e) {
        progress.done();
        c.error = e.what();
        return c;
    }
    progress.done();
    const nlohmann::json report = sim::report_json(result.info, result.metrics);
    const std::string out_dir = args.out.empty() || !per_policy ? case_folder(args.out, c.name, in_suite)
                                                                : case_folder(args.out, c.name, in_suite) + "/" + policy;
    if (!out_dir.empty()) write_outputs(out_dir, result, report, args.html);
    c.failures = sim::judge_run(sim::expectation_for(scenario, policy), report);
    c.reproduce = reproduce_command(path, policy, seed, args.overrides);
    std::string counterexample_note;
    if (!out_dir.empty()) counterexample_note = write_counterexample(out_dir, scenario, policy, seed, result, !c.failures.empty());
    c.policy = policy;
    c.seed = seed;
    if (args.json && (in_suite || per_policy)) c.report = report;
    else if (args.json) std::cout << report.dump(2) << "\n";
    else if (!args.quiet && scenario.steps_mode)
        std::printf("replayed %llu steps of %s under %s\n", static_cast<unsigned long long>(result.metrics.events), path.c_str(), policy.c_str());
    else if (!args.quiet) print_summary(report, stdout);
    if (!args.json && !args.quiet && scenario.steps_mode)
        for (const auto& [name, message] : result.metrics.first_violation) std::printf("violated %s: %s\n", name.c_str(), message.c_str());
    for (const auto& w : report["warnings"]) c.warnings.push_back(w["message"].get<std::string>());
    if (!args.quiet)
        for (const std::string& w : c.warnings) std::fprintf(info, "warning: %s\n", w.c_str());
    for (const std::string& f : c.failures) std::fprintf(info, "FAIL %s%s: %s\n", c.name.c_str(), c.policy_tag.c_str(), f.c_str());
    if (!c.failures.empty()) std::fprintf(info, "reproduce: %s\n", c.reproduce.c_str());
    if (!counterexample_note.empty()) std::fprintf(info, "%s\n", counterexample_note.c_str());
    if (!out_dir.empty() && !args.quiet)
        std::fprintf(info, "outputs in %s (report.json, metrics.prom, timeline.json%s)\n", out_dir.c_str(), args.html ? ", report.html" : "");
    if (!args.schedules.empty() && !args.quiet)
        std::fprintf(info, "schedules exported: %llu to %s\n", static_cast<unsigned long long>(result.schedules_written), options.schedules_dir.c_str());
    std::fprintf(info, "final_state_hash=%s\n", report["final_state_hash"].get<std::string>().c_str());
    c.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return c;
}

void write_junit(const std::string& file, const std::vector<CaseResult>& cases) {
    std::size_t failures = 0;
    std::size_t errors = 0;
    for (const CaseResult& c : cases) {
        failures += c.failures.empty() ? 0 : 1;
        errors += c.error.empty() ? 0 : 1;
    }
    std::ostringstream x;
    x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuite name=\"kvcheck\" tests=\"" << cases.size() << "\" failures=\""
      << failures << "\" errors=\"" << errors << "\">\n";
    for (const CaseResult& c : cases) {
        x << "  <testcase classname=\"kvcheck.scenarios\" name=\"" << sim::svg::escape(c.name + c.policy_tag) << "\" file=\"" << sim::svg::escape(c.path)
          << "\" time=\"" << c.seconds << "\">\n";
        if (!c.error.empty()) x << "    <error message=\"" << sim::svg::escape(c.error) << "\"/>\n";
        if (!c.failures.empty()) {
            std::string text;
            for (const std::string& f : c.failures) text += f + "\n";
            x << "    <failure message=\"" << sim::svg::escape(c.failures.front()) << "\">" << sim::svg::escape(text)
              << "reproduce: " << sim::svg::escape(c.reproduce) << "</failure>\n";
        }
        if (!c.warnings.empty()) {
            std::string text;
            for (const std::string& w : c.warnings) text += "warning: " + w + "\n";
            x << "    <system-out>" << sim::svg::escape(text) << "</system-out>\n";
        }
        x << "  </testcase>\n";
    }
    x << "</testsuite>\n";
    sim::write_file_atomic(file, x.str());
}

// The policies a scenario runs under: --policy or its own, and with --expected-policies also each
// policy its expect block names (its own first, the others by name). A scenario that does not
// load runs once, so that run_one reports the problem as usual.
// The policies to run the scenario at `path` under, and its trace file (empty for a steps-mode
// scenario or one that does not load, whose error its run reports).
std::vector<std::string> policies_for(const std::string& path, const RunArgs& args, std::string& trace) {
    sim::Scenario scenario;
    try {
        scenario = sim::load_scenario(path, args.overrides);
    } catch (const sim::InputError&) {
        return {args.expected_policies ? "" : args.policy};
    }
    trace = scenario.trace_path;
    if (!args.expected_policies) return {args.policy};
    std::vector<std::string> out = {scenario.policy};
    for (const auto& [key, expectation] : scenario.expect)
        if (key != "*" && key != scenario.policy) out.push_back(key);
    return out;
}

int run_command(const RunArgs& args) {
    std::vector<std::string> paths;
    std::error_code ec;
    const bool folder = std::filesystem::is_directory(args.target, ec);
    if (folder) {
        for (const auto& entry : std::filesystem::directory_iterator(args.target)) {
            if (entry.path().extension() != ".json") continue;
            if (!entry.is_regular_file(ec))  // a folder, FIFO or device named *.json: no scenario to skip silently
                throw sim::InputError(entry.path().string(), "", "is not a regular file, expected a scenario of the suite");
            paths.push_back(entry.path().string());
        }
        std::sort(paths.begin(), paths.end());
        if (paths.empty()) throw sim::InputError(args.target, "", "no *.json scenarios in this folder");
    } else {
        paths.push_back(args.target);
    }
    // Output paths are checked before anything runs, so a bad one costs no work and leaves nothing behind.
    std::set<std::string> names;
    for (const std::string& p : paths) names.insert(std::filesystem::path(p).stem().string());
    std::vector<std::vector<std::string>> policies;
    std::vector<std::string> inputs = paths;  // the scenarios and their traces: no output may be one of them
    for (const std::string& p : paths) {
        std::string trace;
        policies.push_back(policies_for(p, args, trace));
        if (!trace.empty()) inputs.push_back(trace);
    }
    if (!args.junit.empty()) sim::require_output_file(args.junit, inputs);
    if (!args.out.empty()) {
        sim::require_output_folder(args.out);
        for (std::size_t i = 0; i < paths.size(); ++i) {
            const std::string base = case_folder(args.out, std::filesystem::path(paths[i]).stem().string(), folder);
            if (!args.expected_policies) {
                require_run_folder(base, inputs);
                continue;
            }
            sim::require_output_folder(base);
            sim::require_output_file(sim::compare_manifest_path(base), inputs);
            for (const std::string& policy : policies[i])
                if (!policy.empty()) require_run_folder(base + "/" + policy, inputs);
        }
    }
    if (!args.schedules.empty()) {
        sim::require_output_folder(args.schedules);
        for (const std::string& name : names) sim::require_output_folder(case_folder(args.schedules, name, folder));
    }
    // What earlier runs left and this one would not replace goes first: an interrupted run must
    // not leave an old JUnit file or an old scenario's results looking like this run's.
    if (!args.junit.empty()) sim::remove_stale(args.junit);
    if (!args.out.empty() && folder) clear_other_results(args.out, names, true);
    // A single run leaves an earlier compare's subfolders (`kvcheck report` reads its report.json
    // first) but not that compare's manifest, which describes another run.
    if (!args.out.empty() && !folder && !args.expected_policies) sim::remove_stale(sim::compare_manifest_path(args.out));
    // Under several policies a scenario's folder is laid out as a compare's: one subfolder per
    // policy and the manifest, nothing of an earlier layout or policy list beside them.
    if (!args.out.empty() && args.expected_policies)
        for (std::size_t i = 0; i < paths.size(); ++i)
            clear_other_results(case_folder(args.out, std::filesystem::path(paths[i]).stem().string(), folder),
                                std::set<std::string>(policies[i].begin(), policies[i].end()), true);
    // Every earlier export goes, also where this run exports nothing (a steps-mode scenario, one
    // that fails to load) and, in a suite, that of a scenario the suite no longer has.
    if (!args.schedules.empty() && std::filesystem::is_directory(args.schedules, ec)) {
        sim::remove_schedules(args.schedules);
        for (const auto& entry : std::filesystem::directory_iterator(args.schedules, ec)) {
            if (!folder || !entry.is_directory(ec)) continue;
            sim::remove_schedules(entry.path().string());
            if (names.count(entry.path().filename().string()) == 0 && std::filesystem::is_empty(entry.path(), ec))
                std::filesystem::remove(entry.path(), ec);
        }
    }
    std::vector<CaseResult> cases;
    for (std::size_t i = 0; i < paths.size(); ++i) {
        const std::size_t first = cases.size();
        for (const std::string& policy : policies[i])
            cases.push_back(run_one(paths[i], args, folder, policy, args.expected_policies));
        // The manifest last, once every policy's results are there (as compare writes it), so
        // that `kvcheck report` draws the scenario's policies in this order.
        const bool all_ran = std::all_of(cases.begin() + static_cast<std::ptrdiff_t>(first), cases.end(),
                                         [](const CaseResult& c) { return c.error.empty(); });
        if (!args.out.empty() && args.expected_policies && all_ran) {
            std::vector<std::string> ran;
            for (std::size_t k = first; k < cases.size(); ++k) ran.push_back(cases[k].policy);
            sim::write_file_atomic(sim::compare_manifest_path(case_folder(args.out, cases[first].name, folder)),
                                   sim::compare_manifest_text({paths[i], cases[first].seed, ran}));
        }
    }
    if (!args.junit.empty()) write_junit(args.junit, cases);
    int code = 0;
    for (const CaseResult& c : cases) {
        if (!c.error.empty()) {
            std::fprintf(stderr, "kvcheck: %s\n", c.error.c_str());
            code = 2;
        } else if (!c.failures.empty() && code == 0) {
            code = 1;
        }
    }
    if (folder || args.expected_policies) {
        std::size_t passed = 0;
        for (const CaseResult& c : cases) passed += c.error.empty() && c.failures.empty() ? 1 : 0;
        if (args.json) {  // one JSON document on stdout: the report of every scenario (and policy) that ran
            nlohmann::json all = nlohmann::json::object();
            for (const CaseResult& c : cases) {
                if (!c.error.empty()) continue;
                if (args.expected_policies) all[sim::valid_utf8(c.name)]["policies"][c.policy] = c.report;
                else all[sim::valid_utf8(c.name)] = c.report;
            }
            std::cout << nlohmann::json{{"scenarios", all}}.dump(2) << "\n";
        }
        std::fprintf(args.json ? stderr : stdout, "%zu passed, %zu failed\n", passed, cases.size() - passed);
    }
    return code;
}

}  // namespace

void register_compare(CLI::App& app, Common& common) {
    auto args = std::make_shared<RunArgs>();
    auto policies = std::make_shared<std::vector<std::string>>(std::vector<std::string>{"naive", "validated"});
    auto* cmd = app.add_subcommand("compare", "Run one scenario under several policies and print them side by side");
    cmd->add_option("scenario", args->target, "Scenario file")->required();
    cmd->add_option("--policies", *policies, "Comma-separated policies (default naive,validated)")->delimiter(',')->allow_extra_args(false);
    cmd->add_option("--seed", args->seed, "Seed (default, or 0: the scenario's)");
    cmd->add_option("--out", args->out, "Write each policy's outputs under DIR/POLICY/ and the policy order to DIR/compare.json");
    cmd->add_flag("--json", args->json, "Print {\"policies\": {NAME: report}}");
    cmd->add_flag("--quiet", args->quiet, "No progress line");
    add_set_option(cmd, args->sets);
    cmd->callback([args, policies, &common] {
        args->overrides = read_overrides(args->sets);
        const std::vector<std::string>& names = *policies;
        std::set<std::string> seen;
        for (const std::string& n : names) {
            if (model::find_policy(n) == nullptr)
                throw sim::InputError("", "--policies", "unknown policy \"" + n + "\" (known: " + model::policy_names() + ")");
            if (!seen.insert(n).second) throw sim::InputError("", "--policies", "\"" + n + "\" is listed twice");
        }
        const sim::Scenario scenario = sim::load_scenario(args->target, args->overrides);
        if (!args->out.empty()) {
            const std::vector<std::string> inputs = {args->target, scenario.trace_path};
            require_run_folder(args->out, inputs);  // an earlier single run's files there go
            sim::require_output_file(sim::compare_manifest_path(args->out), inputs);
            for (const std::string& name : names) require_run_folder(args->out + "/" + name, inputs);
        }
        if (!args->out.empty()) clear_other_results(args->out, seen, true);
        const std::uint64_t seed = args->seed != 0 ? args->seed : scenario.seed;
        std::fprintf(args->json ? stderr : stdout, "seed=%llu scenario=%s\n", static_cast<unsigned long long>(seed), args->target.c_str());
        std::fflush(stdout);  // before the FAIL lines on stderr, also when both go to one file
        std::vector<nlohmann::json> reports;
        nlohmann::json all = nlohmann::json::object();
        int code = 0;
        for (const std::string& name : names) {
            sim::RunOptions options;
            options.policy = name;
            options.seed = seed;
            options.seed_given = true;
            Progress progress(args->quiet, "compare " + name);
            options.progress = [&](std::uint64_t finished, std::uint64_t) { progress.update(finished, 0, "requests"); };
            const sim::RunResult result = sim::run_scenario(scenario, options);
            progress.done();
            nlohmann::json report = sim::report_json(result.info, result.metrics);
            if (!args->out.empty()) write_outputs(args->out + "/" + name, result, report, false);
            // Judged as `run` judges it: by the policy's expectation, else strictly.
            const std::vector<std::string> failures = sim::judge_run(sim::expectation_for(scenario, name), report);
            for (const std::string& f : failures) std::fprintf(stderr, "FAIL %s: %s\n", name.c_str(), f.c_str());
            if (!failures.empty()) {
                std::fprintf(stderr, "reproduce: %s\n", reproduce_command(args->target, name, seed, args->overrides).c_str());
                code = 1;
            }
            if (!args->out.empty()) {
                const std::string note = write_counterexample(args->out + "/" + name, scenario, name, seed, result, !failures.empty());
                if (!note.empty()) std::fprintf(stderr, "%s\n", note.c_str());
            }
            all[name] = report;
            reports.push_back(std::move(report));
        }
        // The manifest comes last, once every policy's results are there: `kvcheck report DIR`
        // draws the columns in --policies order by it, and an interrupted compare leaves none.
        if (!args->out.empty())
            sim::write_file_atomic(sim::compare_manifest_path(args->out), sim::compare_manifest_text({args->target, seed, names}));
        if (args->json) std::cout << nlohmann::json{{"policies", all}}.dump(2) << "\n";
        else print_comparison(reports);
        for (const auto& r : reports)
            std::fprintf(args->json ? stderr : stdout, "final_state_hash[%s]=%s\n", r["policy"].get<std::string>().c_str(),
                         r["final_state_hash"].get<std::string>().c_str());
        common.exit_code = code;
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
    auto* cmd = app.add_subcommand("run", "Run a scenario (or every *.json scenario in a folder) through the simulator");
    cmd->add_option("scenario", args->target, "Scenario file or folder")->required();
    cmd->add_option("--policy", args->policy, "Policy to run (default: the scenario's)");
    cmd->add_option("--seed", args->seed, "Seed (default, or 0: the scenario's)");
    cmd->add_option("--out", args->out, "Write report.json, metrics.prom and timeline.json here");
    cmd->add_option("--export-schedules", args->schedules, "Write replay schedules of resumed requests here");
    cmd->add_option("--junit", args->junit, "Write JUnit XML (one test case per scenario)");
    cmd->add_flag("--json", args->json, "Print report.json to stdout (a folder: {\"scenarios\": {NAME: report}})");
    cmd->add_flag("--quiet", args->quiet, "No summary and no progress line");
    cmd->add_flag("--html", args->html, "Also write report.html next to report.json")->needs("--out");
    auto* every = cmd->add_flag("--expected-policies", args->expected_policies,
                                "Also run each policy the scenario's expect block names, each judged by its own expectation "
                                "(outputs in DIR[/NAME]/POLICY/, one JUnit case per scenario and policy)");
    every->excludes(cmd->get_option("--policy"));
    every->excludes(cmd->get_option("--export-schedules"));
    add_set_option(cmd, args->sets);
    cmd->callback([args, &common] {
        args->overrides = read_overrides(args->sets);
        if (!args->policy.empty() && model::find_policy(args->policy) == nullptr)
            throw sim::InputError("", "--policy", "unknown policy \"" + args->policy + "\" (known: " + model::policy_names() + ")");
        common.exit_code = run_command(*args);
    });
}

}  // namespace kvcheck::cli
