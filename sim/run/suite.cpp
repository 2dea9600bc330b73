#include "sim/run/suite.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>

#include <fnmatch.h>

#include "model/policy.hpp"
#include "sim/des/schedules.hpp"
#include "sim/io/files.hpp"
#include "sim/io/input_error.hpp"
#include "sim/io/shell_word.hpp"
#include "sim/io/suggest.hpp"
#include "sim/io/version.hpp"
#include "sim/report/metrics.hpp"
#include "sim/report/report_html.hpp"
#include "sim/report/run_folders.hpp"
#include "sim/run/shrink.hpp"
#include "sim/run/suite_files.hpp"
#include "sim/scenario/expect.hpp"

namespace kvcheck::sim {

namespace {

// Where a scenario's outputs (or schedules) go under `base`: base itself for a single run, a
// folder named after the scenario in a suite.
std::string case_folder(const std::string& base, const std::string& name, bool in_suite) {
    return base.empty() || !in_suite ? base : base + "/" + name;
}

// Throws InputError before any work when `dir` cannot take a run's files, or one of them is an
// input (a scenario or trace named report.json in the output folder).
void require_run_folder(const std::string& dir, const std::vector<std::string>& inputs) {
    require_output_folder(dir);
    for (const char* name : kRunFiles) require_output_file(dir + name, inputs);
}

// A run's files are written as one group (write_files_atomic): Ctrl-C or a full disk leaves
// the folder's earlier files or all new ones. Without `html` an earlier report.html goes, as it
// would show another run.
void write_outputs(const std::string& dir, const RunResult& r, const nlohmann::json& report, bool html) {
    const HeldSignals held;
    const std::string report_text = report.dump(2) + "\n";
    const std::string metrics_text = prometheus_text(r.info, r.metrics);
    const std::string html_text =
        html ? report_html({{report["policy"].get<std::string>(), report, dir + "/report.json"}}, dir) : "";
    std::vector<std::pair<std::string, FileWriter>> files = {
        {dir + "/report.json", text_writer(report_text)},
        {dir + "/metrics.prom", text_writer(metrics_text)},
        {dir + "/timeline.json", [&r](std::ostream& out) { r.timeline.write(out); }}};
    if (html)
        files.emplace_back(dir + "/report.html", text_writer(html_text));
    else
        remove_stale(dir + "/report.html");
    write_files_atomic(files);
}

// A failed run that violated an invariant leaves DIR/counterexample.json: the run shrunk to a
// small scenario (sim/run/shrink.hpp) that still violates it, checked by loading the written file
// and running it again. Any other run removes an earlier one. Returns the line to print.
std::string write_counterexample(const std::string& dir, const Scenario& scenario, const std::string& policy,
                                 std::uint64_t seed, const RunResult& result, bool failed) {
    const std::string file = dir + "/counterexample.json";
    const std::string invariant = failed ? shrink_target(scenario, result, expectation_for(scenario, policy)) : "";
    if (invariant.empty()) {
        remove_stale(file);
        return "";
    }
    const std::optional<ShrunkRun> shrunk = shrink_run(scenario, policy, seed, invariant);
    if (!shrunk) {
        remove_stale(file);
        return "counterexample: none written (the workload written out inline does not violate " + invariant + ")";
    }
    write_file_atomic(file, shrunk->scenario.dump(2) + "\n");
    RunOptions options;
    options.policy = policy;
    options.seed = seed;
    options.seed_given = true;
    if (!violates(run_scenario(load_scenario(file), options), invariant)) {
        remove_stale(file);
        return "counterexample: none written (the shrunk scenario did not violate " + invariant + " when loaded again)";
    }
    return "counterexample: " + file + " (" + std::to_string(shrunk->requests_after) + " of " +
           std::to_string(shrunk->requests_before) + " requests, " + std::to_string(shrunk->faults_after) + " of " +
           std::to_string(shrunk->faults_before) + " fault entries, " + invariant + "; " +
           std::to_string(shrunk->runs) + " runs); replay: " + kvcheck_command() + " run " + shell_word(file);
}

// What report.json (and so report.html) says of the run's verdict: passed or not, judged by which
// expectation, its failures, the line that reproduces it, the scenario's description, the
// counterexample written beside it (its file name, "" for none), and the kvcheck that ran.
nlohmann::json verdict_json(const Scenario& scenario, const std::string& policy,
                            const std::vector<std::string>& failures, const std::string& reproduce,
                            const std::string& counterexample_note) {
    const std::string judged_by = scenario.expect.count(policy) > 0 ? "expect." + policy
                                  : scenario.expect.count("*") > 0
                                      ? std::string("expect.*")
                                      : std::string("strict: no expect entry for this policy, so any invariant "
                                                    "violation or silent corruption fails");
    return {{"passed", failures.empty()},
            {"judged_by", valid_utf8(judged_by)},
            {"failures", failures},
            {"reproduce", valid_utf8(reproduce)},
            {"description", valid_utf8(scenario.description)},
            {"counterexample", counterexample_note.starts_with("counterexample: ") ? "counterexample.json" : ""},
            {"kvcheck", kvcheck_version_line()}};
}

// Runs one scenario file under `policy_name` ("" = its own); with `per_policy` the outputs go
// into a subfolder named after the policy.
CaseResult run_case(const std::string& path, const SuiteOptions& args, bool in_suite, const std::string& policy_name,
                    bool per_policy, const CaseHooks& hooks) {
    CaseResult c;
    c.path = path;
    c.name = std::filesystem::path(path).stem().string();
    if (per_policy) c.policy_tag = "[" + policy_name + "]";
    const auto started = std::chrono::steady_clock::now();
    Scenario scenario;
    try {
        scenario = load_scenario(path, args.overrides);
    } catch (const InputError& e) {
        c.error = e.what();
        return c;
    }
    RunOptions options;
    options.policy = policy_name;
    options.seed = args.seed;
    options.seed_given = args.seed != 0;
    // A suite exports each scenario's schedules into a folder of its own, as its outputs.
    options.schedules_dir = case_folder(args.schedules, c.name, in_suite);
    c.schedules_dir = options.schedules_dir;
    c.policy = policy_name.empty() ? scenario.policy : policy_name;
    c.seed = options.seed_given ? args.seed : scenario.seed;
    c.steps_mode = scenario.steps_mode;
    if (hooks.started) hooks.started(path, scenario.name, c.policy, c.seed);
    options.progress = hooks.progress;
    RunResult result;
    try {
        result = run_scenario(scenario, options);
    } catch (const InputError& e) {
        c.error = e.what();
        return c;
    }
    c.report = report_json(result.info, result.metrics);
    c.out_dir = args.out.empty() || !per_policy ? case_folder(args.out, c.name, in_suite)
                                                : case_folder(args.out, c.name, in_suite) + "/" + c.policy;
    c.failures = judge_run(expectation_for(scenario, c.policy), c.report);
    c.reproduce = reproduce_command(path, c.policy, c.seed, args.overrides);
    // The counterexample first, so that the report beside it can name it.
    if (!c.out_dir.empty()) {
        c.counterexample_note =
            write_counterexample(c.out_dir, scenario, c.policy, c.seed, result, !c.failures.empty());
    }
    c.report["verdict"] = verdict_json(scenario, c.policy, c.failures, c.reproduce, c.counterexample_note);
    if (!c.out_dir.empty()) write_outputs(c.out_dir, result, c.report, args.html);
    c.steps = result.metrics.events;
    c.first_violation = result.metrics.first_violation;
    c.schedules_written = result.schedules_written;
    for (const auto& w : c.report["warnings"]) c.warnings.push_back(w["message"].get<std::string>());
    c.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return c;
}

// The policies a scenario runs under: --policy or its own, and with --expected-policies also each
// policy its expect block names (its own first, the others by name). A scenario that does not
// load runs once, so that run_one reports the problem as usual.
// The policies to run the scenario at `path` under, and its trace file (empty for a steps-mode
// scenario or one that does not load, whose error its run reports).
std::vector<std::string> policies_for(const std::string& path, const SuiteOptions& args, std::string& trace) {
    Scenario scenario;
    try {
        scenario = load_scenario(path, args.overrides);
    } catch (const InputError&) {
        return {args.expected_policies ? "" : args.policy};
    }
    trace = scenario.trace_path;
    if (!args.expected_policies) return {args.policy};
    std::vector<std::string> out = {scenario.policy};
    for (const auto& [key, expectation] : scenario.expect)
        if (key != "*" && key != scenario.policy) out.push_back(key);
    return out;
}

// The scenario files of the targets, in the order given (a folder's *.json in name order), those
// whose name matches one of `match` (all without). Two scenarios of one name would share their
// output folder: refused, as is a selection that leaves nothing.
std::vector<std::string> suite_paths(const std::vector<std::string>& targets, const std::vector<std::string>& match) {
    std::vector<std::string> all;
    std::error_code ec;
    for (const std::string& target : targets) {
        if (!std::filesystem::is_directory(target, ec)) {
            all.push_back(target);  // a file, or nothing there: its case says so
            continue;
        }
        std::vector<std::string> paths;
        for (const auto& entry : std::filesystem::directory_iterator(target)) {
            if (entry.path().extension() != ".json") continue;
            if (!entry.is_regular_file(ec))  // a folder, FIFO or device named *.json: no scenario to skip silently
                throw InputError(entry.path().string(), "", "is not a regular file, expected a scenario of the suite");
            paths.push_back(entry.path().string());
        }
        std::sort(paths.begin(), paths.end());
        if (paths.empty()) throw InputError(target, "", "no *.json scenarios in this folder");
        all.insert(all.end(), paths.begin(), paths.end());
    }
    std::vector<std::string> chosen;
    std::map<std::string, std::string> by_name;
    for (const std::string& path : all) {
        const std::string name = std::filesystem::path(path).stem().string();
        if (!match.empty() && std::none_of(match.begin(), match.end(), [&](const std::string& pattern) {
                return ::fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
            }))
            continue;
        if (const auto [it, fresh] = by_name.emplace(name, path); !fresh)
            throw InputError(path, "",
                             "has the name \"" + name + "\" of " + it->second +
                                 " too; a suite writes each scenario's outputs to DIR/NAME, so names must differ");
        chosen.push_back(path);
    }
    if (chosen.empty()) {
        std::string names;
        for (std::size_t i = 0; i < all.size() && i < 8; ++i)
            names += (i == 0 ? "" : ", ") + std::filesystem::path(all[i]).stem().string();
        throw InputError("", "--match",
                         "no scenario's name matches (" + std::to_string(all.size()) + " scenarios: " + names +
                             (all.size() > 8 ? ", ..." : "") + ")");
    }
    return chosen;
}

}  // namespace

std::string reproduce_command(const std::string& path, const std::string& policy, std::uint64_t seed,
                              const std::vector<Override>& overrides) {
    std::string out = kvcheck_command() + " run " + shell_word(path) + " --policy " + shell_word(policy) + " --seed " +
                      std::to_string(seed);
    for (const Override& o : overrides) out += " --set " + shell_word(o.text);
    return out;
}

SuiteResult run_suite(const SuiteOptions& args, const CaseHooks& hooks) {
    SuiteResult suite;
    const auto suite_started = std::chrono::steady_clock::now();
    std::error_code ec;
    const bool folder = args.targets.size() > 1 || std::filesystem::is_directory(args.targets.at(0), ec);
    suite.folder = folder;
    const std::vector<std::string> paths = suite_paths(args.targets, args.match);
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
    if (!args.junit.empty()) require_output_file(args.junit, inputs);
    if (!args.out.empty()) {
        require_output_folder(args.out);
        if (folder) {
            require_output_file(suite_manifest_path(args.out), inputs);
            require_output_file(args.out + "/index.html", inputs);
        }
        for (std::size_t i = 0; i < paths.size(); ++i) {
            const std::string base = case_folder(args.out, std::filesystem::path(paths[i]).stem().string(), folder);
            if (!args.expected_policies) {
                require_run_folder(base, inputs);
                continue;
            }
            require_output_folder(base);
            require_output_file(compare_manifest_path(base), inputs);
            for (const std::string& policy : policies[i])
                if (!policy.empty()) require_run_folder(base + "/" + policy, inputs);
        }
    }
    if (!args.schedules.empty()) {
        require_output_folder(args.schedules);
        for (const std::string& name : names) require_output_folder(case_folder(args.schedules, name, folder));
    }
    std::optional<OutputLock> lock;
    if (!args.out.empty()) lock.emplace(args.out);
    // What earlier runs left and this one would not replace goes first: an interrupted run must
    // not leave an old JUnit file or an old scenario's results looking like this run's.
    if (!args.junit.empty()) remove_stale(args.junit);
    if (!args.out.empty() && folder) clear_earlier_run(args.out, names);
    // A single run leaves an earlier compare's subfolders (`kvcheck report` reads its report.json
    // first) but not that compare's manifest, which describes another run.
    // Its own files go too, so a run that fails halfway (a bad trace line) leaves none of an earlier run's.
    if (!args.out.empty() && !folder && !args.expected_policies) {
        for (const char* name : kRunFiles) remove_stale(args.out + name);
        remove_stale(compare_manifest_path(args.out));
        remove_stale(suite_manifest_path(args.out));
        remove_stale(args.out + "/index.html");
    }
    // Under several policies a scenario's folder is laid out as a compare's: one subfolder per
    // policy and the manifest, nothing of an earlier layout or policy list beside them.
    if (!args.out.empty() && args.expected_policies)
        for (std::size_t i = 0; i < paths.size(); ++i)
            clear_earlier_run(case_folder(args.out, std::filesystem::path(paths[i]).stem().string(), folder),
                              std::set<std::string>(policies[i].begin(), policies[i].end()));
    // Every earlier export goes, also where this run exports nothing (a steps-mode scenario, one
    // that fails to load) and, in a suite, that of a scenario the suite no longer has.
    if (!args.schedules.empty() && std::filesystem::is_directory(args.schedules, ec)) {
        remove_schedules(args.schedules);
        for (const auto& entry : std::filesystem::directory_iterator(args.schedules, ec)) {
            if (!folder || !entry.is_directory(ec)) continue;
            remove_schedules(entry.path().string());
            if (names.count(entry.path().filename().string()) == 0 && std::filesystem::is_empty(entry.path(), ec))
                std::filesystem::remove(entry.path(), ec);
        }
    }
    std::vector<CaseResult>& cases = suite.cases;
    for (std::size_t i = 0; i < paths.size(); ++i) {
        const std::size_t first = cases.size();
        for (const std::string& policy : policies[i]) {
            cases.push_back(run_case(paths[i], args, folder, policy, args.expected_policies, hooks));
            if (hooks.finished) hooks.finished(cases.back());
        }
        // The manifest last, once every policy's results are there (as compare writes it), so
        // that `kvcheck report` draws the scenario's policies in this order.
        const bool all_ran = std::all_of(cases.begin() + static_cast<std::ptrdiff_t>(first), cases.end(),
                                         [](const CaseResult& c) { return c.error.empty(); });
        if (!args.out.empty() && args.expected_policies && all_ran) {
            std::vector<std::string> ran;
            for (std::size_t k = first; k < cases.size(); ++k) ran.push_back(cases[k].policy);
            write_file_atomic(compare_manifest_path(case_folder(args.out, cases[first].name, folder)),
                              compare_manifest_text({paths[i], cases[first].seed, ran}));
        }
    }
    suite.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - suite_started).count();
    if (!args.out.empty() && folder) write_suite_manifest(args.out, suite, args.expected_policies);
    if (!args.junit.empty()) write_junit(args.junit, suite);
    return suite;
}

std::vector<ComparedPolicy> run_compare(const CompareOptions& args, const CompareHooks& hooks) {
    std::set<std::string> seen;
    for (const std::string& n : args.policies) {
        if (model::find_policy(n) == nullptr) throw InputError("", "--policies", unknown_policy(n));
        if (!seen.insert(n).second) throw InputError("", "--policies", "\"" + n + "\" is listed twice");
    }
    const Scenario scenario = load_scenario(args.target, args.overrides);
    std::optional<OutputLock> lock;
    if (!args.out.empty()) {
        const std::vector<std::string> inputs = {args.target, scenario.trace_path};
        require_run_folder(args.out, inputs);  // an earlier single run's files there go
        require_output_file(compare_manifest_path(args.out), inputs);
        for (const std::string& name : args.policies) require_run_folder(args.out + "/" + name, inputs);
        lock.emplace(args.out);
        clear_earlier_run(args.out, seen);
    }
    const std::uint64_t seed = args.seed != 0 ? args.seed : scenario.seed;
    if (hooks.started) hooks.started(seed);
    std::vector<ComparedPolicy> out;
    for (const std::string& name : args.policies) {
        RunOptions options;
        options.policy = name;
        options.seed = seed;
        options.seed_given = true;
        if (hooks.progress)
            options.progress = [&](std::uint64_t finished, std::uint64_t) { hooks.progress(name, finished); };
        const RunResult result = run_scenario(scenario, options);
        ComparedPolicy p;
        p.policy = name;
        p.report = report_json(result.info, result.metrics);
        // Judged as `run` judges it: by the policy's expectation, else strictly.
        p.failures = judge_run(expectation_for(scenario, name), p.report);
        const std::string reproduce = reproduce_command(args.target, name, seed, args.overrides);
        if (!p.failures.empty()) p.reproduce = reproduce;
        if (!args.out.empty()) {
            p.counterexample_note =
                write_counterexample(args.out + "/" + name, scenario, name, seed, result, !p.failures.empty());
        }
        p.report["verdict"] = verdict_json(scenario, name, p.failures, reproduce, p.counterexample_note);
        if (!args.out.empty()) write_outputs(args.out + "/" + name, result, p.report, false);
        if (hooks.finished) hooks.finished(p);
        out.push_back(std::move(p));
    }
    if (!args.out.empty()) {
        write_file_atomic(compare_manifest_path(args.out), compare_manifest_text({args.target, seed, args.policies}));
        if (args.html) write_report_html(args.out, args.out + "/report.html");
    }
    return out;
}

}  // namespace kvcheck::sim
