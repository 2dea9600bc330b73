// report.html: one self-contained page (inline SVG charts, no network) drawn from the report.json of
// a run folder, or from every policy folder that `kvcheck compare --out DIR` wrote, side by side.
#pragma once

#include <string>
#include <vector>

#include "sim/report/run_folders.hpp"

namespace kvcheck::sim {

// The page: the verdict first (from each report's "verdict"), then a comparison table and the
// charts. Links (a run's counterexample) are relative to `page_dir`, the page's folder.
// Deterministic: the same reports give the same bytes.
std::string report_html(const std::vector<NamedReport>& reports, const std::string& page_dir = "");

// Loads `run_dir` and writes the page to `out_path` atomically; an output path that is one of the
// report.json files read, or the compare manifest, is an InputError.
void write_report_html(const std::string& run_dir, const std::string& out_path);

}  // namespace kvcheck::sim
