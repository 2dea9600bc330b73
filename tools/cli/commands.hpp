// Subcommand registration for the kvcheck CLI. Each command file adds one subcommand to the app;
// its callback stores the exit code (0 held, 1 violation or failed expectation, 2 bad input).
// InputError thrown from a callback is printed as one line by main() and exits 2.
#pragma once

#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

namespace kvcheck::cli {

struct Common {
    int exit_code = 0;
};

void register_presets(CLI::App& app, Common& common);
void register_policies(CLI::App& app, Common& common);
void register_replay(CLI::App& app, Common& common);
void register_trace(CLI::App& app, Common& common);
void register_bench(CLI::App& app, Common& common);
void register_run(CLI::App& app, Common& common);
void register_compare(CLI::App& app, Common& common);
void register_validate(CLI::App& app, Common& common);
void register_check(CLI::App& app, Common& common);
void register_fuzz(CLI::App& app, Common& common);
void register_merge(CLI::App& app, Common& common);
void register_mutants(CLI::App& app, Common& common);
void register_report(CLI::App& app, Common& common);

// `--out DIR` of a command whose result is one JSON document (what --json prints): checked before
// any work (InputError when DIR or DIR/NAME cannot take it), written atomically at the end.
void require_result_file(const std::string& dir, const std::string& name);
void write_result_file(const std::string& dir, const std::string& name, const nlohmann::json& doc);

}  // namespace kvcheck::cli
