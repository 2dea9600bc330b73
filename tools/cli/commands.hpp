// Subcommand registration for the kvcheck CLI. Each command file adds one subcommand to the app;
// its callback stores the exit code (0 held, 1 violation or failed expectation, 2 bad input).
// InputError thrown from a callback is printed as one line by main() and exits 2.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "sim/check/explorer.hpp"
#include "sim/check/scope.hpp"

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

// The named scope for a --scope value; InputError naming the known ones otherwise.
sim::Scope scope_or_throw(const std::string& name);
// The named scopes, comma-separated (for --scope help lines and messages).
std::string known_scopes();
// The --order flag's value: bfs or dfs, else InputError naming the flag.
sim::Order order_or_throw(const std::string& name);
// `word` as a shell would read it back: unchanged when plain, single-quoted otherwise (printed
// reproduce and continue lines name user paths).
std::string shell_word(const std::string& word);

// `--out DIR` of a command whose result is one JSON document (what --json prints): checked before
// any work (InputError when DIR or DIR/NAME cannot take it), written atomically at the end.
void require_result_file(const std::string& dir, const std::string& name);
void write_result_file(const std::string& dir, const std::string& name, const nlohmann::json& doc);

}  // namespace kvcheck::cli
