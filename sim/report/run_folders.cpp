// Reading what `kvcheck run` and `kvcheck compare` leave in an --out folder: the compare manifest
// DIR/compare.json (written here too) and the report.json files, each checked against its shape.
#include "sim/report/run_folders.hpp"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "sim/io/files.hpp"
#include "sim/io/input_error.hpp"
#include "sim/io/json_fields.hpp"
#include "sim/report/metrics.hpp"

namespace kvcheck::sim {

std::string compare_manifest_path(const std::string& dir) { return dir + "/compare.json"; }

std::string compare_manifest_text(const CompareManifest& manifest) {
    const nlohmann::json j = {
        {"scenario", valid_utf8(manifest.scenario)}, {"seed", manifest.seed}, {"policies", manifest.policies}};
    return j.dump(2) + "\n";
}

namespace {

// What a wrong value is called in a message: a number by itself, anything else by its type.
std::string described(const nlohmann::json& value) { return value.is_number() ? value.dump() : json_type_name(value); }

}  // namespace

CompareManifest read_compare_manifest(const std::string& file) {
    const nlohmann::json j = parse_json_text(read_file(file), file);
    if (!j.is_object()) throw InputError(file, "/", "expected an object, got " + json_type_name(j));
    using Test = bool (nlohmann::json::*)() const noexcept;
    const auto member = [&](const std::string& key, Test is_expected,
                            const std::string& expected) -> const nlohmann::json& {
        if (!j.contains(key)) throw InputError(file, "/" + key, "missing from the compare manifest");
        const nlohmann::json& value = j.at(key);
        if (!(value.*is_expected)())
            throw InputError(file, "/" + key, "expected " + expected + ", got " + described(value));
        return value;
    };
    CompareManifest m;
    m.scenario = member("scenario", &nlohmann::json::is_string, "a string").get<std::string>();
    m.seed = member("seed", &nlohmann::json::is_number_unsigned, "a whole number of 0 or more").get<std::uint64_t>();
    const nlohmann::json& policies = member("policies", &nlohmann::json::is_array, "an array of policy names");
    if (policies.empty()) throw InputError(file, "/policies", "expected at least one policy");
    std::set<std::string> seen;
    for (std::size_t i = 0; i < policies.size(); ++i) {
        const std::string pointer = "/policies/" + std::to_string(i);
        if (!policies[i].is_string())
            throw InputError(file, pointer, "expected a policy name, got " + described(policies[i]));
        const std::string name = policies[i].get<std::string>();
        // Each name is a folder next to the manifest, never a path that leads elsewhere.
        if (name.empty() || name == "." || name == ".." ||
            name.find_first_of(std::string("/\0", 2)) != std::string::npos)
            throw InputError(file, pointer, "\"" + name + "\" is not a folder name");
        if (!seen.insert(name).second) throw InputError(file, pointer, "\"" + name + "\" is listed twice");
        m.policies.push_back(name);
    }
    return m;
}

namespace {

using nlohmann::json;

// What every report.json must hold: "*" stands for any key, a one-element array for any length;
// 0 is a count (a whole number of 0 or more), 0.0 a real of 0 or more and 0.5 a share from 0 to 1.
// Keys beyond these are allowed, so a newer writer with extra figures still renders.
constexpr const char* kReportShape = R"({
  "schema_version": 0, "scenario": "", "preset": "", "policy": "", "seed": 0, "requests": 0, "lookups": 0, "hits": 0,
  "hit_rate": 0.5, "post_hit_fallbacks": 0, "post_hit_fallback_rate": 0.5,
  "verdicts": {"resumable": 0, "io_wait": 0, "partial_recompute": 0, "full_recompute": 0},
  "miss_reasons": {"*": {"*": 0}}, "hit_tokens": 0, "reused_tokens": 0, "recomputed_tokens": 0, "computed_tokens": 0,
  "stale_revalidations": 0, "admission_refusals": 0, "graph_recaptures": 0, "offloads": 0, "loads": 0, "load_failures": 0,
  "evictions": {"*": 0}, "faults_injected": {"*": 0}, "silent_corruptions": 0,
  "corruption_examples": [{"request": 0, "group": "", "form": "", "start": 0, "end": 0, "invariant": "", "cause": ""}],
  "invariant_violations": {"*": 0}, "first_violations": {"*": ""},
  "ttft_ms": {"p50": 0.0, "p99": 0.0}, "io_wait_ms": {"p50": 0.0, "p99": 0.0, "waits": 0}, "memory_bytes": {"*": 0},
  "series": {"t_s": [0.0], "lookups": [0], "hits": [0], "post_hit_fallbacks": [0], "silent_corruptions": [0],
             "io_wait_us": [0], "state_table_bytes": [0], "gpu_bytes_by_form": {"*": [0]}},
  "events": 0, "event_bound_hit": false, "sim_time_s": 0.0, "final_state_hash": "", "unseed": ""
})";

void check_shape(const json& value, const json& shape, const std::string& pointer, const std::string& file) {
    const auto fail = [&](const std::string& expected) {
        throw InputError(file, pointer.empty() ? "/" : pointer,
                         "expected " + expected + ", got " + json_type_name(value));
    };
    if (shape.is_object()) {
        if (!value.is_object()) fail("an object");
        for (const auto& [key, item] : shape.items()) {
            if (key == "*") {
                for (const auto& [k, v] : value.items()) check_shape(v, item, pointer + "/" + pointer_escape(k), file);
            } else if (!value.contains(key)) {
                throw InputError(file, pointer + "/" + pointer_escape(key), "missing from the report");
            } else {
                check_shape(value[key], item, pointer + "/" + pointer_escape(key), file);
            }
        }
    } else if (shape.is_array()) {
        if (!value.is_array()) fail("an array");
        for (std::size_t i = 0; i < value.size(); ++i)
            check_shape(value[i], shape[0], pointer + "/" + std::to_string(i), file);
    } else if (shape.is_number()) {
        if (!value.is_number()) fail("a number");
        const auto out_of_range = [&](const std::string& expected) {
            throw InputError(file, pointer, "expected " + expected + ", got " + value.dump());
        };
        if (shape.is_number_integer()) {
            if (!value.is_number_unsigned() && !(value.is_number_integer() && value.get<std::int64_t>() >= 0))
                out_of_range("a whole number of 0 or more");
        } else if (!(value.get<double>() >= 0)) {
            out_of_range("a number of 0 or more");
        } else if (shape.get<double>() > 0 && value.get<double>() > 1) {
            out_of_range("a share from 0 to 1");
        }
    } else if (shape.is_string() && !value.is_string()) {
        fail("a string");
    } else if (shape.is_boolean() && !value.is_boolean()) {
        fail("true or false");
    }
}

json load_report(const std::filesystem::path& file) {
    static const json kShape = json::parse(kReportShape);
    const std::string name = file.string();
    json report = parse_json_text(read_file(name), name);
    if (report.is_object() && report.contains("schema_version") && report["schema_version"] != kReportSchemaVersion)
        throw InputError(name, "/schema_version",
                         "report schema " + report["schema_version"].dump() + "; this kvcheck reads " +
                             std::to_string(kReportSchemaVersion));
    check_shape(report, kShape, "", name);
    // Figures added after schema 1 was fixed: optional (older reports lack them), checked when there.
    static const json kLater = json::parse(R"({"requests_by_reuse_pct": {"*": 0}, "evictions_by_cause": {"*": {"*": 0}},
        "evictions_last_copy": {"*": 0}, "prompt_tokens": 0, "token_hit_rate": 0.5, "timeline_untracked_requests": 0, "run_id": "",
        "verdict": {"passed": true, "judged_by": "", "failures": [""], "reproduce": "", "description": "", "counterexample": "", "kvcheck": ""}, "token_reuse_rate": 0.5,
        "reused_tokens_by_source": {"*": 0}, "trimmed_tokens": 0, "resume_grain_tokens": 0, "miss_tokens": {"*": {"*": 0}},
        "warnings": [{"code": "", "message": ""}], "overrides": [""], "entry_ages_ms": {"*": {"*": {"count": 0, "mean": 0.0, "p50": 0.0, "p90": 0.0, "p99": 0.0, "max": 0.0}}}})");
    for (const auto& [key, item] : kLater.items())
        if (report.contains(key)) check_shape(report[key], item, "/" + key, name);
    const json& series = report["series"];
    const std::size_t points = series["t_s"].size();
    for (const auto& [key, values] : series.items()) {
        const auto check = [&](const json& list, const std::string& pointer) {
            if (list.size() != points)
                throw InputError(name, pointer,
                                 std::to_string(list.size()) + " points where t_s has " + std::to_string(points));
        };
        if (values.is_array())
            check(values, "/series/" + key);
        else
            for (const auto& [form, list] : values.items()) check(list, "/series/" + key + "/" + pointer_escape(form));
    }
    return report;
}

// The columns of a compare folder with a manifest: the policies it names, in --policies order,
// then any other subfolder holding report.json (one added by hand later) by name. A named policy
// without DIR/POLICY/report.json means the manifest describes another compare: an InputError.
using Folders = std::vector<std::filesystem::path>;
Folders in_manifest_order(const std::string& manifest_file, const Folders& by_name) {
    const CompareManifest manifest = read_compare_manifest(manifest_file);
    Folders out;
    for (std::size_t i = 0; i < manifest.policies.size(); ++i) {
        const std::string& policy = manifest.policies[i];
        const auto named = std::find_if(by_name.begin(), by_name.end(),
                                        [&](const auto& folder) { return folder.filename() == policy; });
        if (named == by_name.end())
            throw InputError(manifest_file, "/policies/" + std::to_string(i),
                             "names policy \"" + policy + "\", but there is no " + policy +
                                 "/report.json next to this manifest");
        out.push_back(*named);
    }
    for (const std::filesystem::path& folder : by_name)
        if (std::find(out.begin(), out.end(), folder) == out.end()) out.push_back(folder);
    return out;
}

}  // namespace

std::vector<NamedReport> load_run_reports(const std::string& run_dir) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::is_directory(run_dir, ec))
        throw InputError(run_dir, "",
                         fs::exists(run_dir, ec) ? "not a folder (expected a run folder holding report.json)"
                                                 : "no such folder");
    const fs::path single = fs::path(run_dir) / "report.json";
    if (fs::exists(single, ec)) {
        json report = load_report(single);
        std::string name = report["policy"].get<std::string>();
        return {{std::move(name), std::move(report), single.string()}};
    }
    Folders folders;
    for (const auto& entry : fs::directory_iterator(run_dir, ec))
        if (entry.is_directory() && fs::exists(entry.path() / "report.json")) folders.push_back(entry.path());
    std::sort(folders.begin(), folders.end());
    const std::string manifest = compare_manifest_path(run_dir);
    if (fs::exists(manifest, ec)) folders = in_manifest_order(manifest, folders);
    if (folders.empty())
        throw InputError(
            run_dir, "",
            "no report.json here or in its subfolders (expected the --out folder of kvcheck run or kvcheck compare)");
    std::vector<NamedReport> out;
    for (const fs::path& folder : folders)
        out.push_back(
            {folder.filename().string(), load_report(folder / "report.json"), (folder / "report.json").string()});
    return out;
}

}  // namespace kvcheck::sim
