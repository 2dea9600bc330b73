// `kvcheck mutants`: checks every mutant policy and `validated` at a scope: the one --scope names,
// else each policy's home scope (sim::home_scope). A mutant is detected when exploration reaches a
// violation of the invariant it is expected to break; the table gives the counterexample length and
// the time to detect. Exit 0 only when every mutant is detected and validated is clean.
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "model/policy.hpp"
#include "sim/check/check_run.hpp"
#include "sim/check/mutation.hpp"
#include "sim/io/input_error.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/progress.hpp"

namespace kvcheck::cli {

void register_mutants(CLI::App& app, Common& common) {
    auto q = std::make_shared<sim::MutationRequest>();
    auto json = std::make_shared<bool>(false);
    auto quiet = std::make_shared<bool>(false);
    auto reduction = std::make_shared<std::string>("none");
    auto order = std::make_shared<std::string>("bfs");
    auto out = std::make_shared<std::string>();
    auto* cmd = app.add_subcommand("mutants", "Check every mutant policy and validated; print the mutation score");
    cmd->add_option(
        "--scope", q->scope,
        "Check every policy at this named scope (" + sim::known_scopes() +
            "); without it, each at its home scope: rollout for a policy that ignores the rollout mode (rollout-leak), "
            "reference for every other");
    cmd->add_option("--policy", q->only, "Check only this policy");
    cmd->add_option("--max-seconds", q->max_seconds, "Time bound per policy, in seconds (default 120)");
    cmd->add_option("--reduction", *reduction, "none (default) or symmetry (see kvcheck check --help)");
    cmd->add_option("--order", *order, "bfs (default) or dfs (see kvcheck check --help)");
    cmd->add_option(
        "--regress", q->regress,
        "Write each counterexample as a regression scenario (with its expect block) here, named POLICY.json "
        "(SCOPE-POLICY.json outside the reference scope); files of policies not detected in this run are kept");
    cmd->add_flag("--json", *json,
                  "Print a JSON list of {policy, removes, detected, invariant, counterexample_steps, seconds, states, "
                  "exhausted, scope}");
    cmd->add_flag("--quiet", *quiet, "No progress line");
    cmd->add_option("--out", *out, "Also write the results (the --json list) to DIR/mutants.json");
    cmd->callback([=, &common] {
        if (!q->only.empty()) sim::policy_named(q->only);
        sim::MutationRequest request = *q;
        request.reduction = sim::reduction_named(*reduction);
        request.order = sim::order_named(*order);
        sim::scope_named(q->scope);
        request.home_scopes = cmd->count("--scope") == 0;
        require_result_file(*out, "mutants.json");
        std::optional<Progress> progress;
        bool header = !*json;  // printed once the output paths passed their checks
        request.started = [&](const model::PolicyInfo& p) {
            if (header)
                std::printf("%-26s %-9s %-24s %6s %9s  %s\n", "policy", "detected", "invariant", "steps", "seconds",
                            "defense removed");
            header = false;
            progress.emplace(*quiet, "mutants " + p.name);
        };
        request.progress = [&](std::uint64_t states, std::uint32_t depth, double) {
            progress->update(states, 0, "states, depth " + std::to_string(depth));
        };
        const sim::MutationScore score = sim::mutation_score(request, [&](const sim::MutantRow& r) {
            progress.reset();
            if (*json) return;
            const bool is_validated = r.policy->name == "validated";
            std::printf(
                "%-26s %-9s %-24s %6zu %9.2f  %s\n", r.policy->name.c_str(),
                r.detected     ? (is_validated ? "VIOLATED" : "yes")
                : !r.exhausted ? "bound hit"
                : is_validated ? "clean"
                               : "NO",
                r.invariant.empty() ? "-" : r.invariant.c_str(), r.steps, r.seconds,
                is_validated
                    ? ("(none; " + std::to_string(r.states) + (r.exhausted ? " states, exhaustive)" : " states)"))
                          .c_str()
                    : (r.policy->removes +
                       (request.home_scopes && r.scope != "reference" ? " [scope " + r.scope + "]" : ""))
                          .c_str());
        });
        const nlohmann::json rows = score.rows_json();
        write_result_file(*out, "mutants.json", rows);
        if (*json) {
            std::cout << rows.dump(2) << "\n";
        } else {
            std::string said = score.broken == 0 ? ""
                                                 : std::to_string(score.caught) + "/" + std::to_string(score.broken) +
                                                       " broken policies detected";
            if (!score.validated_said.empty()) said += (said.empty() ? "" : "; ") + score.validated_said;
            std::printf("mutation score: %s\n", said.c_str());
        }
        std::fflush(stdout);  // the score before the reproduce lines, also when both go to one file
        for (const sim::MutantRow& r : score.rows)
            if (!r.good)
                std::fprintf(stderr, "%s: reproduce: %s\n", r.policy->name.c_str(),
                             sim::mutant_reproduce(r, request).c_str());
        common.exit_code = score.all_good() ? 0 : 1;
    });
}

}  // namespace kvcheck::cli
