// The files a suite writes beside its runs' (JUnit XML, DIR/suite.json, DIR/index.html) and how a
// new run into a folder clears what an earlier run into it left there (and nothing else).
#pragma once

#include <set>
#include <string>

#include "sim/run/suite.hpp"

namespace kvcheck::sim {

// The files one run writes into its folder.
inline constexpr const char* kRunFiles[] = {"/report.json", "/metrics.prom", "/timeline.json", "/report.html",
                                            "/counterexample.json"};

// "passed", "failed" (an expectation did not hold) or "error" (the case did not run).
const char* case_status(const CaseResult& c);

// Removes what an earlier run into `dir` left that this one does not replace: its run files and
// manifests in `dir` itself, and the run files of each subfolder its manifests (compare.json,
// suite.json) name and `keep` does not (the subfolder too once empty). A folder no earlier run
// into `dir` wrote (the --out of a run of its own, say) stays whatever it holds.
void clear_earlier_run(const std::string& dir, const std::set<std::string>& keep);

// JUnit XML valid against the Jenkins xUnit plugin's junit-10.xsd.
void write_junit(const std::string& file, const SuiteResult& suite);

// DIR/suite.json and DIR/index.html, written together; with `per_policy` a case's folder is
// NAME/POLICY.
void write_suite_manifest(const std::string& dir, const SuiteResult& suite, bool per_policy);

}  // namespace kvcheck::sim
