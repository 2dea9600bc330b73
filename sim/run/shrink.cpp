// Shrinking a failing run (see shrink.hpp): every candidate is a full simulator run of a smaller
// workload, judged only by whether the invariant is still violated.
#include "sim/run/shrink.hpp"

#include <algorithm>

#include "sim/io/files.hpp"
#include "sim/io/json_fields.hpp"
#include "sim/workload/trace.hpp"

namespace kvcheck::sim {

namespace {

// An inline request's at_ms and back, as the loader converts it: the runs below use the times the
// written scenario will load with.
double to_ms(std::uint64_t ns) { return static_cast<double>(ns) / 1e6; }
std::uint64_t from_ms(double ms) { return static_cast<std::uint64_t>(ms * 1e6); }

// The requests a run of `s` arrives with, in its order (the simulator's own ArrivalStream).
std::vector<TraceRecord> workload_of(const Scenario& s, std::uint64_t seed) {
    TraceOptions options = s.trace;
    options.seed = seed;
    ArrivalStream arrivals(s.trace_path, options, s.requests);
    std::vector<TraceRecord> out;
    for (TraceRecord record; arrivals.next(record);) out.push_back(std::move(record));
    // A time the loader gives back unchanged (ms to ns truncates, so a round trip can lose 1 ns).
    for (TraceRecord& r : out)
        for (int k = 0; k < 8 && from_ms(to_ms(r.arrival_ns)) != r.arrival_ns; ++k)
            r.arrival_ns = from_ms(to_ms(r.arrival_ns));
    return out;
}

class Shrinker {
public:
    Shrinker(const Scenario& s, std::string policy, std::uint64_t seed, std::string invariant)
        : base_(s), policy_(std::move(policy)), seed_(seed), invariant_(std::move(invariant)) {
        base_.trace_path.clear();
        base_.expect.clear();
        keep_.assign(s.faults.size(), true);
    }

    bool budget_left() const { return runs_ < kShrinkRunBudget; }
    std::uint32_t runs() const { return runs_; }

    // A fault aimed at a request the workload no longer has goes with it (the loader refuses it);
    // each listed request counts once per sampled answer.
    bool fault_applies(std::size_t i, std::size_t requests) const {
        const FaultSpec& f = base_.faults[i];
        return keep_[i] && !(f.at_request && *f.at_request >= requests * base_.samples);
    }

    // A candidate the loader would refuse (an F2 entry or a tier failure rate left without the
    // offloading fault that gave it transfers) is no counterexample, whatever it violates.
    bool fails(const std::vector<TraceRecord>& requests) {
        Scenario candidate = base_;
        candidate.requests = requests;
        candidate.faults.clear();
        for (std::size_t i = 0; i < base_.faults.size(); ++i)
            if (fault_applies(i, requests.size())) candidate.faults.push_back(base_.faults[i]);
        if (!faults_can_act(candidate)) return false;
        ++runs_;
        RunOptions options;
        options.policy = policy_;
        options.seed = seed_;
        options.seed_given = true;
        return violates(run_scenario(candidate, options), invariant_);
    }

    // The shortest failing prefix (binary search; `list` fails whole).
    std::vector<TraceRecord> shortest_prefix(const std::vector<TraceRecord>& list) {
        std::size_t lo = 1;
        std::size_t hi = list.size();
        while (lo < hi && budget_left()) {
            const std::size_t mid = lo + (hi - lo) / 2;
            if (fails({list.begin(), list.begin() + static_cast<std::ptrdiff_t>(mid)}))
                hi = mid;
            else
                lo = mid + 1;
        }
        return {list.begin(), list.begin() + static_cast<std::ptrdiff_t>(hi)};
    }

    // Delta debugging by complements: drop one of n chunks while the rest still fails; refine n
    // when none can go.
    std::vector<TraceRecord> ddmin(std::vector<TraceRecord> list) {
        std::size_t n = 2;
        while (list.size() >= 2 && budget_left()) {
            const std::size_t chunk = (list.size() + n - 1) / n;
            bool reduced = false;
            for (std::size_t start = 0; start < list.size() && budget_left(); start += chunk) {
                const std::size_t end = std::min(start + chunk, list.size());
                std::vector<TraceRecord> rest(list.begin(), list.begin() + static_cast<std::ptrdiff_t>(start));
                rest.insert(rest.end(), list.begin() + static_cast<std::ptrdiff_t>(end), list.end());
                if (fails(rest)) {
                    list = std::move(rest);
                    n = std::max<std::size_t>(n - 1, 2);
                    reduced = true;
                    break;
                }
            }
            if (!reduced) {
                if (n >= list.size()) break;
                n = std::min(n * 2, list.size());
            }
        }
        return list;
    }

    // Shortens each request while the failure stays: no output, then its prompt halved (whole
    // content blocks, the first ones kept) as long as it still fails.
    std::vector<TraceRecord> shorten(std::vector<TraceRecord> list) {
        for (std::size_t i = 0; i < list.size() && budget_left(); ++i) {
            if (list[i].output_tokens > 0) {
                std::vector<TraceRecord> candidate = list;
                candidate[i].output_tokens = 0;
                if (fails(candidate)) list = std::move(candidate);
            }
            while (list[i].block_ids.size() > 1 && budget_left()) {
                std::vector<TraceRecord> candidate = list;
                TraceRecord& r = candidate[i];
                r.block_ids.resize(r.block_ids.size() / 2);
                r.input_tokens = static_cast<std::uint32_t>(r.block_ids.size()) * r.block_tokens;
                if (!fails(candidate)) break;
                list = std::move(candidate);
            }
        }
        return list;
    }

    // Drops each fault entry the failure does not need, in order.
    void drop_faults(const std::vector<TraceRecord>& list) {
        for (std::size_t i = 0; i < keep_.size() && budget_left(); ++i) {
            if (!keep_[i]) continue;
            keep_[i] = false;
            if (!fails(list)) keep_[i] = true;
        }
    }

private:
    Scenario base_;
    std::string policy_;
    std::uint64_t seed_;
    std::string invariant_;
    std::vector<bool> keep_;
    std::uint32_t runs_ = 0;
};

nlohmann::json request_json(const TraceRecord& r) {
    return {{"at_ms", to_ms(r.arrival_ns)},
            {"input_tokens", r.input_tokens},
            {"output_tokens", r.output_tokens},
            {"block_tokens", r.block_tokens},
            {"blocks", r.block_ids}};
}

}  // namespace

bool violates(const RunResult& run, const std::string& invariant) {
    const auto it = run.metrics.invariant_violations.find(invariant);
    return it != run.metrics.invariant_violations.end() && it->second > 0;
}

std::string shrink_target(const Scenario& scenario, const RunResult& failed, const Expectation* expect) {
    if (scenario.steps_mode) return "";
    const auto failing = [&](const std::string& name) {
        return expect == nullptr || std::find(expect->holds.begin(), expect->holds.end(), name) != expect->holds.end();
    };
    const auto& violations = failed.metrics.invariant_violations;
    if (const auto it = violations.find("OR1_ground_truth");
        it != violations.end() && it->second > 0 && failing(it->first))
        return it->first;
    for (const auto& [name, count] : violations)
        if (count > 0 && failing(name)) return name;
    return "";
}

std::optional<ShrunkRun> shrink_run(const Scenario& scenario, const std::string& policy, std::uint64_t seed,
                                    const std::string& invariant) {
    const std::vector<TraceRecord> all = workload_of(scenario, seed);
    Shrinker shrinker(scenario, policy, seed, invariant);
    if (all.empty() || !shrinker.fails(all)) return std::nullopt;
    std::vector<TraceRecord> list = shrinker.ddmin(shrinker.shortest_prefix(all));
    shrinker.drop_faults(list);
    list = shrinker.shorten(std::move(list));

    // The scenario file as written, with the workload inline and what no longer applies gone.
    nlohmann::json doc = scenario_document(scenario);
    nlohmann::json requests = nlohmann::json::array();
    for (const TraceRecord& r : list) requests.push_back(request_json(r));
    nlohmann::json workload = {{"requests", requests}};
    // The turns, their waits and their reuse, and the sampled answers, go with the requests.
    if (const auto it = doc.find("workload"); it != doc.end() && it->is_object())
        for (const char* key : {"sessions", "samples"})
            if (it->contains(key)) workload[key] = (*it)[key];
    doc["workload"] = std::move(workload);
    nlohmann::json faults = nlohmann::json::array();
    for (std::size_t i = 0; i < scenario.faults.size(); ++i)
        if (shrinker.fault_applies(i, list.size())) faults.push_back(doc.at("faults").at(i));
    if (doc.contains("faults")) doc["faults"] = faults;
    doc.erase("expect");
    doc["name"] = scenario.name + "-counterexample";
    doc["policy"] = policy;
    doc["seed"] = seed;
    doc["description"] = "Shrunk by kvcheck run from " + scenario.path + " under " + policy + ", seed " +
                         std::to_string(seed) + ": " + std::to_string(list.size()) + " of " +
                         std::to_string(all.size()) + " requests and " + std::to_string(faults.size()) + " of " +
                         std::to_string(scenario.faults.size()) + " fault entries, still violating " + invariant + ".";

    ShrunkRun out;
    out.scenario = std::move(doc);
    out.invariant = invariant;
    out.requests_before = all.size();
    out.requests_after = list.size();
    out.faults_before = scenario.faults.size();
    out.faults_after = faults.size();
    out.runs = shrinker.runs();
    return out;
}

}  // namespace kvcheck::sim
