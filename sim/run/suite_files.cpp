// What a suite leaves beside its runs, and how it reads what an earlier one left: the JUnit file,
// DIR/suite.json and DIR/index.html, the closing summary, and the clearing of an earlier run.
#include "sim/run/suite_files.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/io/files.hpp"
#include "sim/io/input_error.hpp"
#include "sim/io/version.hpp"
#include "sim/report/report_svg.hpp"
#include "sim/report/run_folders.hpp"
#include "sim/report/suite_index.hpp"

namespace kvcheck::sim {

namespace {

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

// Seconds as JUnit's schemas take them: plain decimal, never an exponent.
std::string junit_time(double seconds) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3f", seconds);
    return text;
}

}  // namespace

const char* case_status(const CaseResult& c) {
    return !c.error.empty() ? "error" : c.failures.empty() ? "passed" : "failed";
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

}  // namespace kvcheck::sim
