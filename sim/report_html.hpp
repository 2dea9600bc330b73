// report.html: one self-contained page (inline SVG charts, no network) drawn from the report.json of
// a run folder, or from every policy folder that `kvcheck compare --out DIR` wrote, side by side.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kvcheck::sim {

struct NamedReport {
    std::string name;  // the column title: the subfolder's name, or the policy of a single run
    nlohmann::json report;
    std::string file;  // the report.json it was read from
};

// Reads RUN_DIR/report.json, or else RUN_DIR/*/report.json: in the order of the compare manifest
// RUN_DIR/compare.json when there is one (sim/compare_manifest.hpp; subfolders it does not name
// follow by name), else in folder-name order. A missing folder, no report, broken JSON, a report
// of another shape, a malformed manifest or one naming a folder without report.json throws
// InputError (file and JSON pointer).
std::vector<NamedReport> load_run_reports(const std::string& run_dir);

// The page. Deterministic: the same reports give the same bytes.
std::string report_html(const std::vector<NamedReport>& reports);

// Loads `run_dir` and writes the page to `out_path` atomically; an output path that is one of the
// report.json files read, or the compare manifest, is an InputError.
void write_report_html(const std::string& run_dir, const std::string& out_path);

}  // namespace kvcheck::sim
