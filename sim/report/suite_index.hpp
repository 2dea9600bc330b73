// DIR/index.html of a suite run (`kvcheck run DIR|FILES... --out OUT`): one row per case with its
// verdict, time, first failure or error and reproduce line, linking to its report.
#pragma once

#include <string>
#include <vector>

namespace kvcheck::sim {

struct IndexEntry {
    std::string name;    // the scenario's name, with "[POLICY]" when it runs under several
    std::string folder;  // its outputs, relative to the index ("" when it did not run)
    std::string status;  // "passed", "failed" or "error"
    double seconds = 0;
    std::string first_failure;  // or the error
    std::string reproduce;
    bool has_html = false;  // FOLDER/report.html exists (run --html), else the link is to report.json
};

struct IndexSummary {
    std::size_t passed = 0;
    std::size_t failed = 0;
    std::size_t errors = 0;
    double seconds = 0;
    std::string made_by;  // kvcheck_version_line()
};

// Seconds as a suite prints them in its summary and index: "1.25 s".
std::string seconds_text(double seconds);

// The page: failures and errors first, then the rest in run order.
std::string suite_index_html(const std::vector<IndexEntry>& entries, const IndexSummary& summary);

}  // namespace kvcheck::sim
