// What `kvcheck run` and `kvcheck compare` leave in an --out folder, read back for `kvcheck
// report`: the manifest compare writes as DIR/compare.json (the scenario, the seed and the
// policies in --policies order, the order of the page's columns) and the report.json files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kvcheck::sim {

struct CompareManifest {
    std::string scenario;               // the scenario path as given to compare
    std::uint64_t seed = 0;             // the seed every policy ran with
    std::vector<std::string> policies;  // in --policies order; each one's results are in DIR/POLICY/
};

// DIR/compare.json.
std::string compare_manifest_path(const std::string& dir);

// The manifest as JSON text. A scenario path that is not UTF-8 gets U+FFFD, as in report.json.
std::string compare_manifest_text(const CompareManifest& manifest);

// Reads a manifest. Broken JSON, a missing or mistyped key, no policy, a policy that is not a
// plain folder name or one listed twice throws InputError naming the file and the JSON pointer.
// Keys beyond these are allowed, as in report.json.
CompareManifest read_compare_manifest(const std::string& file);

struct NamedReport {
    std::string name;  // the column title: the subfolder's name, or the policy of a single run
    nlohmann::json report;
    std::string file;  // the report.json it was read from
};

// Reads RUN_DIR/report.json, or else RUN_DIR/*/report.json: in the order of the compare manifest
// RUN_DIR/compare.json when there is one (above; subfolders it does not name
// follow by name), else in folder-name order. A missing folder, no report, broken JSON, a report
// of another shape, a malformed manifest or one naming a folder without report.json throws
// InputError (file and JSON pointer).
std::vector<NamedReport> load_run_reports(const std::string& run_dir);

}  // namespace kvcheck::sim
