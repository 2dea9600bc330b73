// Runs of scenario files as a user asks for them: one scenario, a folder of them (a suite), each
// under its own or several policies, or one under a list of policies (compare). A run writes its
// outputs as one group, judges itself by its expectation, shrinks a violating run to a replayable
// counterexample, and a suite writes JUnit XML. Nothing here prints: the hooks tell the caller
// what happened, in order, so the CLI (or a test) says it as it likes.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/des/engine.hpp"
#include "sim/scenario/scenario.hpp"

namespace kvcheck::sim {

struct SuiteOptions {
    // Scenario files and folders of *.json scenarios. One file alone is a single run; anything
    // more (a folder, several targets) is a suite, each scenario's outputs in DIR/NAME/.
    std::vector<std::string> targets;
    std::vector<std::string> match;  // glob patterns on scenario names (file stems); empty: all
    std::string policy;              // "" = each scenario's own
    std::uint64_t seed = 0;          // 0 = each scenario's own
    std::string out;
    std::string schedules;  // --export-schedules
    std::string junit;
    bool html = false;
    bool expected_policies = false;  // every policy the expect block names, each in DIR[/NAME]/POLICY/
    std::vector<Override> overrides;
};

// One scenario under one policy, as it ran.
struct CaseResult {
    std::string name;        // the file's stem
    std::string policy_tag;  // "[POLICY]" when a scenario runs under several policies
    std::string path;
    std::string policy;
    std::uint64_t seed = 0;
    std::string error;                  // bad input: the case did not run
    std::vector<std::string> failures;  // expectations that did not hold
    std::vector<std::string> warnings;  // the messages of report.json's warnings
    std::string reproduce;
    std::string counterexample_note;  // what write_run_counterexample said, if anything
    std::string out_dir;              // "" when no --out
    std::string schedules_dir;
    std::uint64_t schedules_written = 0;
    bool steps_mode = false;
    std::uint64_t steps = 0;  // events replayed (steps mode)
    std::map<std::string, std::string> first_violation;
    nlohmann::json report;
    double seconds = 0;
};

struct CaseHooks {
    // The scenario loaded and is about to run (path, scenario name, policy, seed).
    std::function<void(const std::string&, const std::string&, const std::string&, std::uint64_t)> started;
    std::function<void(std::uint64_t, std::uint64_t)> progress;  // (requests finished, events)
    std::function<void(const CaseResult&)> finished;             // also for a case that did not run
};

struct SuiteResult {
    std::vector<CaseResult> cases;
    bool folder = false;  // a suite: a folder, or more than one scenario
    double seconds = 0;   // the whole suite
    // 2 when a case had bad input, else 1 when one failed, else 0.
    int exit_code() const;
    std::size_t passed() const;
    std::size_t failed() const;  // ran, and an expectation did not hold
    std::size_t errors() const;  // did not run: bad input
    // {"scenarios": {NAME: report}} (with expected_policies {NAME: {"policies": {POLICY: report}}}),
    // "errors": {NAME: message} for the scenarios that did not run, and "summary".
    nlohmann::json reports_json(bool expected_policies) const;
    // The closing summary, as pytest's: the counts and time, the slowest cases, then each failing
    // case with its first failure and reproduce line, then each error.
    std::string summary_text() const;
};

// DIR/suite.json: what a suite run wrote into DIR (each case's folder, verdict and time), read by
// the next suite run into DIR (which removes only the folders listed there) and by the index page.
std::string suite_manifest_path(const std::string& dir);

// Checks every output path first (InputError before any work), removes what earlier runs left
// that this one would not replace, then runs each case in file-name order.
SuiteResult run_suite(const SuiteOptions& options, const CaseHooks& hooks);

// For a run that stops before its suite starts (a bad flag, an unknown policy): removes `file`
// when it is a JUnit file kvcheck wrote that says every case passed, so a CI job that reads it
// cannot show the earlier run's green. Any other file, or one with failures, stays.
void remove_passing_junit(const std::string& file);

// The command that runs a scenario again with the same policy, seed and overrides.
std::string reproduce_command(const std::string& path, const std::string& policy, std::uint64_t seed,
                              const std::vector<Override>& overrides);

struct CompareOptions {
    std::string target;
    std::vector<std::string> policies;
    std::uint64_t seed = 0;
    std::string out;
    bool html = false;  // also DIR/report.html, the policies side by side
    std::vector<Override> overrides;
};

struct ComparedPolicy {
    std::string policy;
    nlohmann::json report;
    std::vector<std::string> failures;
    std::string reproduce;            // when it failed
    std::string counterexample_note;  // with --out
};

struct CompareHooks {
    std::function<void(std::uint64_t)> started;                       // the seed every policy runs with
    std::function<void(const std::string&, std::uint64_t)> progress;  // (policy, requests finished)
    std::function<void(const ComparedPolicy&)> finished;
};

// One scenario under each policy with one seed; the manifest last, so `kvcheck report DIR` draws
// the columns in this order and an interrupted compare leaves none.
std::vector<ComparedPolicy> run_compare(const CompareOptions& options, const CompareHooks& hooks);

}  // namespace kvcheck::sim
