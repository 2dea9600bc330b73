// The steps-mode scenario writer: a checker counterexample as a scenario file that `kvcheck run`
// replays step for step (docs/scenarios.md, *Steps mode*).
#include "sim/check/steps_json.hpp"

#include "model/policy.hpp"
#include "sim/io/json_fields.hpp"

namespace kvcheck::sim {

nlohmann::json steps_scenario_json(const Scope& scope, const std::string& policy, const std::vector<model::Step>& steps,
                                   const std::string& description, const InvariantExpectation* expect) {
    nlohmann::json groups = nlohmann::json::array();
    for (const model::CacheGroup& g : scope.model.groups) groups.push_back(cache_group_json(g));
    nlohmann::json requests = nlohmann::json::array();
    for (const RequestTemplate& t : scope.requests) {
        requests.push_back({{"blocks", t.ids}, {"input_tokens", t.input_tokens}, {"output_tokens", t.output_tokens}});
        if (t.warm) requests.back()["warm"] = true;
        if (t.continues >= 0) requests.back()["continues"] = t.continues;
        if (t.sample != 0) requests.back()["sample"] = t.sample;
    }
    nlohmann::json list = nlohmann::json::array();
    model::World w = initial_world(scope, model::find_policy(policy)->defenses);
    for (const model::Step& step : steps) {
        nlohmann::json item = {{"step", model::step_kind_name(step.kind)}, {"target", step.target}};
        if (step.arg != 0) item["arg"] = step.arg;
        item["describe"] = model::describe(w, step);
        if (model::enabled(w, step)) model::apply(w, step);
        list.push_back(item);
    }
    nlohmann::json scope_json = {{"name", scope.name},
                                 {"content_block_tokens", scope.content_block_tokens},
                                 {"gpu_budget_bytes", scope.limits.gpu_budget_bytes},
                                 {"requests", requests}};
    if (scope.limits.extent_tokens != 0) scope_json["extent_tokens"] = scope.limits.extent_tokens;
    if (scope.limits.disk_capacity_bytes != model::Limits{}.disk_capacity_bytes)
        scope_json["disk_capacity_bytes"] = scope.limits.disk_capacity_bytes;
    if (scope.limits.tier_eviction) scope_json["tier_eviction"] = "lru";
    nlohmann::json doc = {
        {"name", "counterexample"},
        {"description", description},
        {"policy", policy},
        {"model",
         {{"name", scope.model.name}, {"prefill_tokens_per_s", scope.model.prefill_tokens_per_s}, {"groups", groups}}},
        {"scope", scope_json},
        {"steps", list}};
    if (scope.rollout != model::Rollout::cross_request)
        doc["rollout"] = scope.rollout == model::Rollout::off ? "off" : "intra-request";
    if (expect != nullptr) {
        nlohmann::json e = nlohmann::json::object();
        if (!expect->violates.empty()) e["violates"] = expect->violates;
        if (!expect->holds.empty()) e["holds"] = expect->holds;
        doc["expect"] = {{policy, e}};
    }
    return doc;
}

}  // namespace kvcheck::sim
