// Expectations: an `expect` block read and checked against what a run can report, and a run's
// report.json judged by it.
#include "sim/scenario/expect.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <sstream>

#include "model/invariants.hpp"
#include "sim/io/json_fields.hpp"
#include "sim/io/suggest.hpp"
#include "sim/report/metrics.hpp"

namespace kvcheck::sim {

namespace {

// A bound as the scenario wrote it: a whole number without ".0" (bounds are read as doubles).
std::string bound_text(double x) {
    if (x == std::floor(x) && std::fabs(x) < 9.0e15) return std::to_string(static_cast<long long>(x));
    return nlohmann::json(x).dump();
}

// What a report number is, which decides the bounds it can meet: every number in report.json is
// zero or more; a count is whole; a rate (a key ending in _rate) lies in [0, 1].
enum class Figure { count, rate, measure };

Bound parse_bound(const nlohmann::json& value, const std::string& pointer, Figure figure, Problems& problems) {
    Fields f(value, pointer, problems);
    Bound b;
    b.min = f.optional_number("min", -1e18, 1e18);
    b.max = f.optional_number("max", -1e18, 1e18);
    f.finish();
    if (value.is_object() && !b.min && !b.max) problems.add(pointer, "expected a bound: \"min\", \"max\" or both");
    if (b.min && b.max && *b.min > *b.max)
        problems.add(pointer, "min " + nlohmann::json(*b.min).dump() + " is above max " +
                                  nlohmann::json(*b.max).dump() + "; no value can pass");
    // A bound no run can meet would fail every run like a regression, so it is refused here, where
    // the pointer can name it: a negative one, a fraction on a count, a rate's min above 1.
    for (const auto& [name, bound] : {std::pair{"min", b.min}, std::pair{"max", b.max}}) {
        if (!bound) continue;
        const std::string at = pointer + "/" + name;
        const std::string text = std::string(name) + " " + bound_text(*bound);
        std::string why;
        if (*bound < 0)
            why = " is below 0; every number in report.json is 0 or more";
        else if (figure == Figure::count && *bound != std::floor(*bound))
            why = " is not a whole number; this figure is a count";
        else if (figure == Figure::rate && *bound > 1 && name == std::string_view("min"))
            why = " is above 1; this figure is a rate between 0 and 1";
        if (!why.empty()) {
            problems.add(at, text + why);
            break;  // one message per bound
        }
    }
    return b;
}

// miss_reasons.FORM.REASON (and miss_tokens.FORM.REASON) must name a pair the run can count: a form and a reason the
// matcher files under it (model::miss_form), or any.stale_epoch. Any other pair would stay 0 for ever, so a bound on it
// would test nothing.
void check_miss_reason_path(const std::string& path, const std::string& pointer, Problems& problems) {
    const std::size_t first = path.find('.');
    const std::string rest = first == std::string::npos ? "" : path.substr(first + 1);
    const std::size_t dot = rest.find('.');
    const std::string form = rest.substr(0, dot);
    const std::string reason = dot == std::string::npos ? "" : rest.substr(dot + 1);
    const std::string figure = path.substr(0, first);  // miss_reasons or miss_tokens
    if (form == "any" && figure == "miss_tokens") {
        problems.add(pointer,
                     "\"" + path + "\" is never counted: a stale revalidation cuts no tokens at a first lookup");
        return;
    }
    if (form == "any") {
        if (reason != "stale_epoch")
            problems.add(pointer, "\"" + path + "\" is never counted: the only reason filed under any is stale_epoch");
        return;
    }
    const std::optional<model::Form> f = model::form_from_name(form);
    if (!f) {
        std::string forms = "any";
        for (model::Form each : model::kAllForms) forms += ", " + std::string(model::form_name(each));
        problems.add(pointer, "\"" + path + "\": expected " + figure + ".FORM.REASON with FORM one of " + forms);
        return;
    }
    std::optional<model::MissReason> r;
    std::string reasons;
    std::string on_disk;  // the reasons filed under on_disk_prefix
    for (int i = 0; i < model::kMissReasonCount; ++i) {
        const auto each = static_cast<model::MissReason>(i);
        const std::string name(model::miss_reason_name(each));
        reasons += (reasons.empty() ? "" : ", ") + name;
        if (model::miss_form(model::Form::compressed_kv, each) == model::Form::on_disk_prefix)
            on_disk += (on_disk.empty() ? "" : " and ") + name;
        if (name == reason) r = each;
    }
    if (!r) {
        problems.add(pointer, "\"" + path + "\": expected a reason after " + form + ", one of " + reasons +
                                  " (stale_epoch only under any)");
        return;
    }
    if (*f == model::Form::on_disk_prefix &&
        model::miss_form(model::Form::compressed_kv, *r) != model::Form::on_disk_prefix)
        problems.add(pointer, "\"" + path + "\" is never counted: only " + on_disk + " are filed under on_disk_prefix");
    else if (*f != model::Form::on_disk_prefix && model::miss_form(*f, *r) != *f)
        problems.add(pointer, "\"" + path + "\" is never counted: " + reason +
                                  " is filed under on_disk_prefix, whichever group's entry is off the GPU");
}

// A bound's key must name a number in report.json. The shape is that of an empty run's report;
// the keys of miss_reasons, empty there, are checked against the pairs a run can count.
// `sessions` and `samples_forked` are in the reports of runs with sessions and with parallel
// sampling only.
// Returns what the number at `path` is (for the bounds parse_bound accepts).
Figure check_report_path(const std::string& path, const std::string& pointer, const Scenario& s, Problems& problems) {
    static const std::array<nlohmann::json, 4> kShapes = [] {
        std::array<nlohmann::json, 4> out;
        for (int bits = 0; bits < 4; ++bits) {
            Metrics m;
            if (bits & 1) m.sessions = SessionCounts{};
            if (bits & 2) m.samples_forked = 0;
            // The maps a report fills only with what a run counted, filled with every name they can hold.
            m.evictions.fill(1);
            m.evictions_last_copy.fill(1);
            for (auto& by_form : m.evictions_by_cause) by_form.fill(1);
            m.faults.fill(1);
            for (const model::InvariantInfo& info : model::invariant_catalogue())
                m.first_violation[std::string(info.name)] = "";
            out[bits] = report_json(RunInfo{}, m);
        }
        return out;
    }();
    for (const std::string_view by_reason : {"miss_reasons", "miss_tokens"})
        if (path.compare(0, by_reason.size(), by_reason) == 0 &&
            (path.size() == by_reason.size() || path[by_reason.size()] == '.')) {
            check_miss_reason_path(path, pointer, problems);
            return Figure::count;
        }
    const bool sessions = s.sessions.enabled;
    const bool samples = s.samples > 1;
    const nlohmann::json* node = &kShapes[(sessions ? 1 : 0) | (samples ? 2 : 0)];
    std::string walked;
    std::size_t from = 0;
    while (true) {
        const std::size_t dot = path.find('.', from);
        const std::string key = path.substr(from, dot == std::string::npos ? std::string::npos : dot - from);
        if (node->is_object() && node->empty()) return Figure::count;  // a map of counts a run fills
        // Report keys of some runs only (not scenario keys): say which option brings them.
        static constexpr std::string_view kSessionsKey = "sessions";
        static constexpr std::string_view kSamplesKey = "samples_forked";
        if (walked.empty() && ((!sessions && key == kSessionsKey) || (!samples && key == kSamplesKey))) {
            problems.add(pointer,
                         "\"" + path + "\" is in report.json only when " +
                             (key == kSessionsKey ? "workload.sessions is on" : "workload.samples is above 1"));
            return Figure::measure;
        }
        if (key.empty() || !node->is_object() || !node->contains(key)) {
            std::string known;
            if (node->is_object())
                for (const auto& [name, child] : node->items())
                    if (child.is_number() || child.is_object()) known += (known.empty() ? "" : ", ") + name;
            problems.add(pointer, "\"" + path + "\" names no number in report.json" +
                                      (known.empty() ? std::string()
                                                     : " (known" + (walked.empty() ? "" : " under " + walked) + ": " +
                                                           known + ")"));
            return Figure::measure;
        }
        node = &(*node)[key];
        walked += (walked.empty() ? "" : ".") + key;
        if (dot == std::string::npos) break;
        from = dot + 1;
    }
    if (!node->is_number() && !(node->is_object() && node->empty()))
        problems.add(pointer, "\"" + path + "\" is " + json_type_name(*node) + " in report.json, expected a number");
    if (path.ends_with("_rate")) return Figure::rate;
    return node->is_number_float() ? Figure::measure : Figure::count;
}

std::vector<std::string> invariant_list(const nlohmann::json& value, const std::string& pointer, Problems& problems) {
    std::vector<std::string> out;
    if (!value.is_array()) {
        problems.add(pointer, "expected an array of invariant names");
        return out;
    }
    for (std::size_t i = 0; i < value.size(); ++i) {
        const std::string name = value[i].is_string() ? value[i].get<std::string>() : "";
        if (!model::is_invariant(name))
            problems.add(pointer + "/" + std::to_string(i),
                         "unknown invariant " + brief(value[i]) + did_you_mean(name, invariant_name_list()));
        else
            out.push_back(name);
    }
    return out;
}

}  // namespace

Expectation parse_expectation(const nlohmann::json& value, const std::string& pointer, const Scenario& s,
                              Problems& problems) {
    Expectation e;
    if (!value.is_object()) {
        problems.add(pointer, "expected an object of expectations");
        return e;
    }
    if (value.empty())
        problems.add(pointer, "an empty expectation checks nothing; expected \"violates\", \"holds\" or a bound "
                              "such as {\"silent_corruptions\": {\"max\": 0}}");
    for (const auto& [key, item] : value.items()) {
        const std::string at = pointer + "/" + pointer_escape(key);
        if (key == "violates")
            e.violates = invariant_list(item, at, problems);
        else if (key == "holds")
            e.holds = invariant_list(item, at, problems);
        else {
            const Figure figure = check_report_path(key, at, s, problems);
            e.metrics[key] = parse_bound(item, at, figure, problems);
        }
    }
    for (std::size_t i = 0; i < e.violates.size(); ++i)
        if (std::find(e.holds.begin(), e.holds.end(), e.violates[i]) != e.holds.end())
            problems.add(pointer + "/violates",
                         e.violates[i] + " is in holds too; expected each invariant in holds or in violates, not both");
    return e;
}

const Expectation* expectation_for(const Scenario& scenario, const std::string& policy) {
    if (auto it = scenario.expect.find(policy); it != scenario.expect.end()) return &it->second;
    if (auto it = scenario.expect.find("*"); it != scenario.expect.end()) return &it->second;
    return nullptr;
}

std::vector<std::string> judge_run(const Expectation* expect, const nlohmann::json& report) {
    std::vector<std::string> failures;
    const auto& violations = report["invariant_violations"];
    if (expect == nullptr) {
        for (const auto& [name, count] : violations.items())
            if (count.get<std::uint64_t>() > 0)
                failures.push_back(name + " violated " + std::to_string(count.get<std::uint64_t>()) + " times");
        if (report["silent_corruptions"].get<std::uint64_t>() > 0)
            failures.push_back(std::to_string(report["silent_corruptions"].get<std::uint64_t>()) +
                               " silent corruptions");
        return failures;
    }
    for (const std::string& name : expect->violates)
        if (violations.value(name, 0ULL) == 0) failures.push_back("expected " + name + " to be violated, it held");
    for (const std::string& name : expect->holds)
        if (violations.value(name, 0ULL) > 0)
            failures.push_back("expected " + name + " to hold, it was violated " +
                               std::to_string(violations[name].get<std::uint64_t>()) + " times");
    // The maps a report fills with what a run counted: a name the loader took (one a run can count)
    // that this run never counted is 0, not absent.
    static const nlohmann::json kNotCounted = 0;
    const auto counted_map = [](const std::string& key) {
        const std::string map = key.substr(0, key.find('.'));
        return map != key && (map == "faults_injected" || map == "evictions" || map == "evictions_by_cause" ||
                              map == "evictions_last_copy" || map == "miss_reasons" || map == "miss_tokens");
    };
    for (const auto& [key, bound] : expect->metrics) {
        const nlohmann::json* v = report_value(report, key);
        if (v == nullptr && counted_map(key)) v = &kNotCounted;
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
