// `kvcheck mutants`: checks every mutant policy and `validated` at a scope: the one --scope names,
// else each policy's home scope (sim::home_scope). A mutant is detected when exploration reaches a
// violation of the invariant it is expected to break; the table gives the counterexample length and
// the time to detect. Exit 0 only when every mutant is detected and validated is clean.
#include <charconv>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/check/dot.hpp"
#include "sim/check/explorer.hpp"
#include "sim/files.hpp"
#include "sim/scenario.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/progress.hpp"

namespace kvcheck::cli {

void register_mutants(CLI::App& app, Common& common) {
    auto scope_name = std::make_shared<std::string>("reference");
    auto regress = std::make_shared<std::string>();
    auto seconds = std::make_shared<double>(120);
    auto json = std::make_shared<bool>(false);
    auto quiet = std::make_shared<bool>(false);
    auto only = std::make_shared<std::string>();
    auto reduction = std::make_shared<std::string>("none");
    auto order = std::make_shared<std::string>("bfs");
    auto* cmd = app.add_subcommand("mutants", "Check every mutant policy and validated; print the mutation score");
    cmd->add_option("--scope", *scope_name,
                    "Check every policy at this named scope (" + known_scopes() +
                        "); without it, each at its home scope: rollout for a policy that ignores the rollout mode (rollout-leak), "
                        "reference for every other");
    cmd->add_option("--policy", *only, "Check only this policy");
    cmd->add_option("--max-seconds", *seconds, "Time bound per policy, in seconds (default 120)");
    cmd->add_option("--reduction", *reduction, "none (default) or symmetry (see kvcheck check --help)");
    cmd->add_option("--order", *order, "bfs (default) or dfs (see kvcheck check --help)");
    cmd->add_option("--regress", *regress, "Write each counterexample as a regression scenario (with its expect block) here, named POLICY.json (SCOPE-POLICY.json outside the reference scope); files of policies not detected in this run are kept");
    cmd->add_flag("--json", *json, "Print a JSON list of {policy, removes, detected, invariant, counterexample_steps, seconds, states, exhausted, scope}");
    cmd->add_flag("--quiet", *quiet, "No progress line");
    auto out = std::make_shared<std::string>();
    cmd->add_option("--out", *out, "Also write the results (the --json list) to DIR/mutants.json");
    cmd->callback([=, &common] {
        if (!only->empty() && model::find_policy(*only) == nullptr)
            throw sim::InputError("", "--policy", "unknown policy \"" + *only + "\" (known: " + model::policy_names() + ")");
        const std::optional<sim::Reduction> chosen = sim::reduction_from_name(*reduction);
        if (!chosen) throw sim::InputError("", "--reduction", "unknown reduction \"" + *reduction + "\" (known: none, symmetry)");
        const sim::Order search = order_or_throw(*order);
        scope_or_throw(*scope_name);
        const bool home = cmd->count("--scope") == 0;
        const auto scope_of = [&](const model::PolicyInfo& p) { return home ? sim::home_scope(p) : *scope_name; };
        require_result_file(*out, "mutants.json");
        const auto regress_file = [&](const model::PolicyInfo& p) {
            const std::string at = scope_of(p);
            return *regress + "/" + (at == "reference" ? "" : at + "-") + p.name + ".json";
        };
        if (!regress->empty()) {  // before any exploration: a bad path costs no work
            sim::require_output_folder(*regress);
            for (const model::PolicyInfo& p : model::policies())
                if (only->empty() || p.name == *only) sim::require_output_file(regress_file(p));
        }
        std::vector<std::pair<std::string, std::string>> failed;  // (policy, scope) that did not fare as they should, in table order
        nlohmann::json rows = nlohmann::json::array();
        bool all_good = true;
        std::size_t broken = 0;
        std::size_t caught = 0;
        std::string validated_said;  // how validated fared, empty when it was not checked
        if (!*json) std::printf("%-26s %-9s %-24s %6s %9s  %s\n", "policy", "detected", "invariant", "steps", "seconds", "defense removed");
        for (const model::PolicyInfo& p : model::policies()) {
            if (!only->empty() && p.name != *only) continue;
            sim::ExploreOptions options;
            options.max_seconds = *seconds;
            options.target = p.breaks;
            options.reduction = *chosen;
            options.order = search;
            Progress progress(*quiet, "mutants " + p.name);
            options.progress = [&](std::uint64_t states, std::uint32_t depth, double) {
                progress.update(states, 0, "states, depth " + std::to_string(depth));
            };
            const std::string at = scope_of(p);
            const sim::Scope scope = sim::named_scope(at);
            const sim::ExploreReport r = sim::explore(scope, p.defenses, options);
            progress.done();
            const bool is_validated = p.name == "validated";
            const bool detected = r.counterexample.has_value();
            const bool good = is_validated ? (!detected && r.exhausted) : detected;
            all_good = all_good && good;
            if (!good) failed.emplace_back(p.name, at);
            if (is_validated)
                validated_said = detected ? "validated VIOLATED" : (r.exhausted ? "validated clean" : "validated stopped at the bound") +
                                                                    std::string(" over ") + std::to_string(r.states) + " states" +
                                                                    (detected || r.exhausted ? "" : " (raise --max-seconds to explore it to the end)");
            else {
                ++broken;
                if (detected) ++caught;
            }
            const std::string invariant = detected ? (p.breaks.empty() ? r.counterexample->violations.front().invariant : p.breaks) : "";
            const std::size_t steps = detected ? r.counterexample->steps.size() : 0;
            rows.push_back({{"policy", p.name}, {"removes", p.removes}, {"detected", detected}, {"invariant", invariant},
                            {"counterexample_steps", steps}, {"seconds", r.seconds}, {"states", r.states}, {"exhausted", r.exhausted},
                            {"scope", at}});
            if (!*json)
                std::printf("%-26s %-9s %-24s %6zu %9.2f  %s\n", p.name.c_str(),
                            detected ? (is_validated ? "VIOLATED" : "yes") : !r.exhausted ? "bound hit" : is_validated ? "clean" : "NO",
                            invariant.empty() ? "-" : invariant.c_str(), steps, r.seconds,
                            is_validated ? ("(none; " + std::to_string(r.states) + (r.exhausted ? " states, exhaustive)" : " states)")).c_str()
                                         : (p.removes + (home && at != "reference" ? " [scope " + at + "]" : "")).c_str());
            if (detected && !regress->empty()) {
                sim::ensure_directory(*regress);
                sim::Expectation expect;
                expect.violates = {invariant};
                const std::string note = "regression: " + p.name + " breaks " + invariant + " (found by kvcheck mutants --scope " + at + ")";
                nlohmann::json doc = sim::steps_scenario_json(r.counterexample_scope.value_or(scope), p.name, r.counterexample->steps, note, &expect);
                doc["name"] = "regress-" + p.name;
                sim::write_file_atomic(regress_file(p), doc.dump(2) + "\n");
            }
        }
        write_result_file(*out, "mutants.json", rows);
        if (*json)
            std::cout << rows.dump(2) << "\n";
        else {
            std::string score = broken == 0 ? "" : std::to_string(caught) + "/" + std::to_string(broken) + " broken policies detected";
            if (!validated_said.empty()) score += (score.empty() ? "" : "; ") + validated_said;
            std::printf("mutation score: %s\n", score.c_str());
        }
        std::fflush(stdout);  // the score before the reproduce lines, also when both go to one file
        for (const auto& [name, at] : failed) {
            char bound[64] = {};
            std::to_chars(bound, bound + sizeof bound - 1, *seconds);  // the shortest form that reads back the same
            std::fprintf(stderr, "%s: reproduce: kvcheck mutants --scope %s --policy %s --max-seconds %s%s%s\n", name.c_str(),
                         shell_word(at).c_str(), shell_word(name).c_str(), bound,
                         *chosen == sim::Reduction::none ? "" : (" --reduction " + *reduction).c_str(),
                         search == sim::Order::breadth_first ? "" : " --order dfs");
        }
        common.exit_code = all_good ? 0 : 1;
    });
}

}  // namespace kvcheck::cli
