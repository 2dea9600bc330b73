// Expectation checks over report.json values.
#include "sim/expect.hpp"

#include <cmath>
#include <sstream>

namespace kvcheck::sim {

const nlohmann::json* report_value(const nlohmann::json& report, const std::string& path) {
    const nlohmann::json* node = &report;
    std::stringstream parts(path);
    std::string part;
    while (std::getline(parts, part, '.')) {
        if (!node->is_object() || !node->contains(part)) return nullptr;
        node = &(*node)[part];
    }
    return node;
}

namespace {

// A bound as the scenario wrote it: a whole number without ".0" (bounds are read as doubles).
std::string bound_text(double x) {
    if (x == std::floor(x) && std::fabs(x) < 9.0e15) return std::to_string(static_cast<long long>(x));
    return nlohmann::json(x).dump();
}

}  // namespace

std::vector<std::string> judge_run(const Expectation* expect, const nlohmann::json& report) {
    std::vector<std::string> failures;
    const auto& violations = report["invariant_violations"];
    if (expect == nullptr) {
        for (const auto& [name, count] : violations.items())
            if (count.get<std::uint64_t>() > 0)
                failures.push_back(name + " violated " + std::to_string(count.get<std::uint64_t>()) + " times");
        if (report["silent_corruptions"].get<std::uint64_t>() > 0)
            failures.push_back(std::to_string(report["silent_corruptions"].get<std::uint64_t>()) + " silent corruptions");
        return failures;
    }
    for (const std::string& name : expect->violates)
        if (violations.value(name, 0ULL) == 0) failures.push_back("expected " + name + " to be violated, it held");
    for (const std::string& name : expect->holds)
        if (violations.value(name, 0ULL) > 0)
            failures.push_back("expected " + name + " to hold, it was violated " + std::to_string(violations[name].get<std::uint64_t>()) + " times");
    for (const auto& [key, bound] : expect->metrics) {
        const nlohmann::json* v = report_value(report, key);
        if (v == nullptr || !v->is_number()) {
            failures.push_back("expected a number at \"" + key + "\" in the report, found none");
            continue;
        }
        const double x = v->get<double>();
        if (bound.min && x < *bound.min)
            failures.push_back(key + " = " + v->dump() + ", expected at least " + bound_text(*bound.min));
        if (bound.max && x > *bound.max)
            failures.push_back(key + " = " + v->dump() + ", expected at most " + bound_text(*bound.max));
    }
    return failures;
}

}  // namespace kvcheck::sim
