#include "sim/check/mutation.hpp"

#include <charconv>

#include "sim/check/scope.hpp"
#include "sim/check/steps_json.hpp"
#include "sim/io/files.hpp"
#include "sim/io/shell_word.hpp"

namespace kvcheck::sim {

bool MutationScore::all_good() const {
    for (const MutantRow& r : rows)
        if (!r.good) return false;
    return true;
}

nlohmann::json MutationScore::rows_json() const {
    nlohmann::json out = nlohmann::json::array();
    for (const MutantRow& r : rows)
        out.push_back({{"policy", r.policy->name},
                       {"removes", r.policy->removes},
                       {"detected", r.detected},
                       {"invariant", r.invariant},
                       {"counterexample_steps", r.steps},
                       {"seconds", r.seconds},
                       {"states", r.states},
                       {"exhausted", r.exhausted},
                       {"scope", r.scope}});
    return out;
}

std::string regression_file(const std::string& dir, const std::string& scope, const std::string& policy) {
    return dir + "/" + (scope == "reference" ? "" : scope + "-") + policy + ".json";
}

MutationScore mutation_score(const MutationRequest& q, const std::function<void(const MutantRow&)>& finished) {
    const auto scope_of = [&](const model::PolicyInfo& p) { return q.home_scopes ? home_scope(p) : q.scope; };
    if (!q.regress.empty()) {  // before any exploration: a bad path costs no work
        require_output_folder(q.regress);
        for (const model::PolicyInfo& p : model::policies())
            if (q.only.empty() || p.name == q.only)
                require_output_file(regression_file(q.regress, scope_of(p), p.name));
    }
    MutationScore score;
    for (const model::PolicyInfo& p : model::policies()) {
        if (!q.only.empty() && p.name != q.only) continue;
        ExploreOptions options;
        options.max_seconds = q.max_seconds;
        options.target = p.breaks;
        options.reduction = q.reduction;
        options.order = q.order;
        options.progress = q.progress;
        if (q.started) q.started(p);
        MutantRow row;
        row.policy = &p;
        row.scope = scope_of(p);
        const Scope scope = named_scope(row.scope);
        const ExploreReport r = explore(scope, p.defenses, options);
        const bool is_validated = p.name == "validated";
        row.detected = r.counterexample.has_value();
        row.good = is_validated ? (!row.detected && r.exhausted) : row.detected;
        row.seconds = r.seconds;
        row.states = r.states;
        row.exhausted = r.exhausted;
        if (is_validated) {
            score.validated_said =
                row.detected
                    ? "validated VIOLATED"
                    : (r.exhausted ? "validated clean" : "validated stopped at the bound") + std::string(" over ") +
                          std::to_string(r.states) + " states" +
                          (row.detected || r.exhausted ? "" : " (raise --max-seconds to explore it to the end)");
        } else {
            ++score.broken;
            if (row.detected) ++score.caught;
        }
        if (row.detected) {
            row.invariant = p.breaks.empty() ? r.counterexample->violations.front().invariant : p.breaks;
            row.steps = r.counterexample->steps.size();
        }
        if (row.detected && !q.regress.empty()) {
            ensure_directory(q.regress);
            InvariantExpectation expect;
            expect.violates = {row.invariant};
            const std::string note = "regression: " + p.name + " breaks " + row.invariant +
                                     " (found by kvcheck mutants --scope " + row.scope + ")";
            nlohmann::json doc = steps_scenario_json(r.counterexample_scope.value_or(scope), p.name,
                                                     r.counterexample->steps, note, &expect);
            doc["name"] = "regress-" + p.name;
            write_file_atomic(regression_file(q.regress, row.scope, p.name), doc.dump(2) + "\n");
        }
        score.rows.push_back(row);
        if (finished) finished(score.rows.back());
    }
    return score;
}

std::string mutant_reproduce(const MutantRow& row, const MutationRequest& q) {
    char bound[64] = {};
    std::to_chars(bound, bound + sizeof bound - 1, q.max_seconds);  // the shortest form that reads back the same
    return kvcheck_command() + " mutants --scope " + shell_word(row.scope) + " --policy " +
           shell_word(row.policy->name) + " --max-seconds " + bound +
           (q.reduction == Reduction::none ? "" : std::string(" --reduction ") + reduction_name(q.reduction)) +
           (q.order == Order::breadth_first ? "" : " --order dfs");
}

}  // namespace kvcheck::sim
