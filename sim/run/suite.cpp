#include "sim/run/suite.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

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
#include "sim/report/report_svg.hpp"
#include "sim/report/run_folders.hpp"
#include "sim/report/suite_index.hpp"
#include "sim/run/shrink.hpp"
#include "sim/scenario/expect.hpp"

namespace kvcheck::sim {

namespace {

// Where a scenario's outputs (or schedules) go under `base`: base itself for a single run, a
// folder named after the scenario in a suite.
std::string case_folder(const std::string& base, const std::string& name, bool in_suite) {
    return base.empty() || !in_suite ? base : base + "/" + name;
}

// The files one run writes into its folder.
constexpr const char* kRunFiles[] = {"/report.json", "/metrics.prom", "/timeline.json", "/report.html",
                                     "/counterexample.json"};

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

// The subfolders an earlier run into `dir` says it wrote: a compare's policies (compare.json)
// and a suite's case folders (suite.json). A manifest that does not read is no list at all, and
// an entry that is not a plain relative path inside `dir` is skipped.
std::vector<std::string> folders_written_before(const std::string& dir) {
    std::vector<std::string> out;
    std::error_code ec;
    if (std::filesystem::exists(compare_manifest_path(dir), ec)) try {
            for (const std::string& p : read_compare_manifest(compare_manifest_path(dir)).policies) out.push_back(p);
        } catch (const InputError&) {}
    try {
        const nlohmann::json suite = nlohmann::json::parse(read_file(suite_manifest_path(dir)));
        for (const auto& c : suite.at("cases")) {
            const std::string folder = c.at("folder").get<std::string>();
            const std::filesystem::path relative(folder);
            const bool inside = !folder.empty() && relative.is_relative() &&
                                std::none_of(relative.begin(), relative.end(), [](const std::filesystem::path& part) {
                                    return part == ".." || part == ".";
                                });
            if (inside) out.push_back(relative.begin()->string());  // its top folder: DIR/NAME of DIR/NAME/POLICY
        }
    } catch (const std::exception&) {}
    return out;
}

// Removes what an earlier run into `dir` left that this one does not replace: its run files and
// manifests in `dir` itself, and the run files of each subfolder its manifests name and `keep`
// does not (the subfolder too once empty). A folder no earlier run into `dir` wrote (the --out
// of a run of its own, say) stays whatever it holds. `kvcheck report DIR` then shows this run only.
void clear_earlier_run(const std::string& dir, const std::set<std::string>& keep) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) return;
    const std::vector<std::string> earlier = folders_written_before(dir);
    for (const char* name : kRunFiles) remove_stale(dir + name);
    remove_stale(compare_manifest_path(dir));
    remove_stale(suite_manifest_path(dir));
    remove_stale(dir + "/index.html");
    for (const std::string& name : earlier) {
        const fs::path folder = fs::path(dir) / name;
        if (keep.count(name) > 0 || !fs::is_directory(folder, ec)) continue;
        // A suite's case folder may hold a compare's layout (--expected-policies): its policies too.
        for (const std::string& inner : folders_written_before(folder.string())) {
            for (const char* file : kRunFiles) remove_stale((folder / inner).string() + file);
            if (fs::is_empty(folder / inner, ec)) fs::remove(folder / inner, ec);
        }
        for (const char* file : kRunFiles) remove_stale(folder.string() + file);
        remove_stale(compare_manifest_path(folder.string()));
        if (fs::is_empty(folder, ec)) fs::remove(folder, ec);
    }
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

// Seconds as JUnit's schemas take them: plain decimal, never an exponent.
std::string junit_time(double seconds) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3f", seconds);
    return text;
}

// JUnit XML valid against the Jenkins xUnit plugin's junit-10.xsd, which every common reader
// takes: a testcase has only name, classname and time, so its scenario file goes in system-out.
void write_junit(const std::string& file, const SuiteResult& suite) {
    std::ostringstream x;
    x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuite name=\"kvcheck\" tests=\"" << suite.cases.size()
      << "\" failures=\"" << suite.failed() << "\" errors=\"" << suite.errors() << "\" time=\""
      << junit_time(suite.seconds) << "\">\n";
    for (const CaseResult& c : suite.cases) {
        x << "  <testcase classname=\"kvcheck.scenarios\" name=\"" << svg::escape(c.name + c.policy_tag) << "\" time=\""
          << junit_time(c.seconds) << "\">\n";
        if (!c.error.empty()) x << "    <error message=\"" << svg::escape(c.error) << "\"/>\n";
        if (!c.failures.empty()) {
            std::string text;
            for (const std::string& f : c.failures) text += f + "\n";
            x << "    <failure message=\"" << svg::escape(c.failures.front()) << "\">" << svg::escape(text)
              << "reproduce: " << svg::escape(c.reproduce) << "</failure>\n";
        }
        std::string text = "scenario: " + c.path + "\n";
        for (const std::string& w : c.warnings) text += "warning: " + w + "\n";
        x << "    <system-out>" << svg::escape(text) << "</system-out>\n";
        x << "  </testcase>\n";
    }
    x << "</testsuite>\n";
    write_file_atomic(file, x.str());
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

const char* case_status(const CaseResult& c) {
    return !c.error.empty() ? "error" : c.failures.empty() ? "passed" : "failed";
}

std::string seconds_text(double seconds) {
    char text[32];
    std::snprintf(text, sizeof text, "%.2f s", seconds);
    return text;
}

// DIR/suite.json: each case's folder relative to DIR, its verdict and time, and the counts.
void write_suite_manifest(const std::string& dir, const SuiteResult& suite, bool per_policy) {
    nlohmann::json cases = nlohmann::json::array();
    for (const CaseResult& c : suite.cases) {
        nlohmann::json one = {
            {"name", valid_utf8(c.name)}, {"scenario", valid_utf8(c.path)},
            {"policy", c.policy},         {"folder", valid_utf8(per_policy ? c.name + "/" + c.policy : c.name)},
            {"status", case_status(c)},   {"seconds", c.seconds}};
        if (!c.error.empty()) one["error"] = valid_utf8(c.error);
        if (!c.failures.empty()) {
            one["failures"] = c.failures;
            one["reproduce"] = valid_utf8(c.reproduce);
        }
        cases.push_back(std::move(one));
    }
    const nlohmann::json manifest = {{"kind", "kvcheck.suite/1"}, {"passed", suite.passed()},
                                     {"failed", suite.failed()},  {"errors", suite.errors()},
                                     {"seconds", suite.seconds},  {"cases", cases}};
    std::vector<IndexEntry> entries;
    for (const CaseResult& c : suite.cases) {
        std::error_code ec;
        const std::string folder = c.error.empty() ? (per_policy ? c.name + "/" + c.policy : c.name) : "";
        entries.push_back({c.name + c.policy_tag, folder, case_status(c), c.seconds,
                           !c.error.empty()     ? c.error
                           : c.failures.empty() ? ""
                                                : c.failures.front(),
                           c.reproduce,
                           !folder.empty() && std::filesystem::exists(dir + "/" + folder + "/report.html", ec)});
    }
    const std::string index = suite_index_html(
        entries, {suite.passed(), suite.failed(), suite.errors(), suite.seconds, kvcheck_version_line()});
    write_files_atomic(
        {{suite_manifest_path(dir), text_writer(manifest.dump(2) + "\n")}, {dir + "/index.html", text_writer(index)}});
}

}  // namespace

void remove_passing_junit(const std::string& file) {
    std::error_code ec;
    if (file.empty() || !std::filesystem::is_regular_file(file, ec)) return;
    std::ifstream in(file, std::ios::binary);
    std::string head(256, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<std::size_t>(in.gcount()));
    const std::size_t suite = head.find("<testsuite name=\"kvcheck\" tests=\"");
    if (suite == std::string::npos || head.find("\" failures=\"0\" errors=\"0\"", suite) == std::string::npos) return;
    std::filesystem::remove(file, ec);
}

std::string reproduce_command(const std::string& path, const std::string& policy, std::uint64_t seed,
                              const std::vector<Override>& overrides) {
    std::string out = kvcheck_command() + " run " + shell_word(path) + " --policy " + shell_word(policy) + " --seed " +
                      std::to_string(seed);
    for (const Override& o : overrides) out += " --set " + shell_word(o.text);
    return out;
}

int SuiteResult::exit_code() const {
    int code = 0;
    for (const CaseResult& c : cases) {
        if (!c.error.empty())
            code = 2;
        else if (!c.failures.empty() && code == 0)
            code = 1;
    }
    return code;
}

std::size_t SuiteResult::passed() const {
    return static_cast<std::size_t>(std::count_if(
        cases.begin(), cases.end(), [](const CaseResult& c) { return c.error.empty() && c.failures.empty(); }));
}

std::size_t SuiteResult::failed() const {
    return static_cast<std::size_t>(std::count_if(
        cases.begin(), cases.end(), [](const CaseResult& c) { return c.error.empty() && !c.failures.empty(); }));
}

std::size_t SuiteResult::errors() const {
    return static_cast<std::size_t>(
        std::count_if(cases.begin(), cases.end(), [](const CaseResult& c) { return !c.error.empty(); }));
}

std::string SuiteResult::summary_text() const {
    std::string out = "summary: " + std::to_string(passed()) + " passed, " + std::to_string(failed()) + " failed, " +
                      std::to_string(errors()) + (errors() == 1 ? " error" : " errors") + " in " +
                      seconds_text(seconds) + "\n";
    std::vector<const CaseResult*> slowest;
    for (const CaseResult& c : cases)
        if (c.error.empty()) slowest.push_back(&c);
    std::stable_sort(slowest.begin(), slowest.end(),
                     [](const CaseResult* a, const CaseResult* b) { return a->seconds > b->seconds; });
    if (slowest.size() > 3) slowest.resize(3);
    if (!slowest.empty()) {
        out += "slowest:";
        for (const CaseResult* c : slowest) out += " " + c->name + c->policy_tag + " " + seconds_text(c->seconds);
        out += "\n";
    }
    for (const CaseResult& c : cases) {
        if (!c.error.empty() || c.failures.empty()) continue;
        out += "FAILED " + c.name + c.policy_tag + " (" + seconds_text(c.seconds) + "): " + c.failures.front() +
               (c.failures.size() > 1 ? " (and " + std::to_string(c.failures.size() - 1) + " more)" : "") +
               "\n  reproduce: " + c.reproduce + "\n";
    }
    for (const CaseResult& c : cases)
        if (!c.error.empty()) out += "ERROR " + c.name + c.policy_tag + ": " + c.error + "\n";
    return out;
}

std::string suite_manifest_path(const std::string& dir) { return dir + "/suite.json"; }

nlohmann::json SuiteResult::reports_json(bool expected_policies) const {
    nlohmann::json all = nlohmann::json::object();
    nlohmann::json errors_by_name = nlohmann::json::object();
    for (const CaseResult& c : cases) {
        if (!c.error.empty()) {
            errors_by_name[valid_utf8(c.name + c.policy_tag)] = valid_utf8(c.error);
            continue;
        }
        if (expected_policies)
            all[valid_utf8(c.name)]["policies"][c.policy] = c.report;
        else
            all[valid_utf8(c.name)] = c.report;
    }
    return nlohmann::json{
        {"scenarios", all},
        {"errors", errors_by_name},
        {"summary", {{"passed", passed()}, {"failed", failed()}, {"errors", errors()}, {"seconds", seconds}}}};
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
