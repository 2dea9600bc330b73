// The terminal's view of report.json: the summary `kvcheck run` prints and the table `kvcheck
// compare` prints. Every figure is defined in docs/metrics.md.
#pragma once

#include <cstdio>
#include <vector>

#include <nlohmann/json.hpp>

namespace kvcheck::cli {

// A run's summary: rates, verdicts, tokens, miss reasons and tokens, violated invariants.
void print_summary(const nlohmann::json& report, FILE* to);

// One column a policy, one row a figure; the reports of one scenario under several policies.
void print_comparison(const std::vector<nlohmann::json>& reports);

}  // namespace kvcheck::cli
