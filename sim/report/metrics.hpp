// Run metrics: what a run measured, accumulated by the engine, written as report.json (versioned
// schema) and metrics.prom (Prometheus text). Every figure here is defined in docs/metrics.md.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/alloc.hpp"
#include "model/fault_class.hpp"
#include "model/match.hpp"
#include "model/steps.hpp"
#include "model/world.hpp"
#include "sim/report/entry_ages.hpp"

namespace kvcheck::sim {

inline constexpr int kReportSchemaVersion = 1;

// Upper bounds, in percent, of the buckets of `Metrics::reads_by_reuse`: bucket i counts the reads
// that resumed at most kReuseBoundsPct[i] % of their prompt and more than the bound before it.
inline constexpr std::array<std::uint32_t, 7> kReuseBoundsPct{0, 10, 25, 50, 75, 90, 100};

struct Corruption {
    std::uint32_t request = 0;  // request uid (trace order)
    std::string form;
    std::string group;
    std::uint32_t start = 0;
    std::uint32_t end = 0;
    std::string invariant;
    std::string cause;
};

// Exact percentiles from a sample kept whole (4 bytes per request).
class Percentiles {
public:
    // Times are never negative, so adding 0.5 and truncating rounds half up, as it always has here.
    void add(double value_ms) {
        sorted_ = false;
        values_us_.push_back(
            static_cast<std::uint32_t>(value_ms * 1000.0 + 0.5));  // NOLINT(bugprone-incorrect-roundings)
    }
    double at(double fraction) const;  // nearest-rank, in ms; 0 when empty
    std::size_t count() const { return values_us_.size(); }
    std::uint64_t at_most_us(std::uint64_t bound_us) const;  // values of at most bound_us (histogram buckets)
    double sum_s() const;                                    // the sum of all values, in seconds

private:
    void sort() const;
    mutable std::vector<std::uint32_t> values_us_;
    mutable bool sorted_ = false;
};

// A bounded time series: one point per interval of simulated time; when full, every other point
// is dropped and the interval doubles, so any run fits in kMaxPoints.
struct SeriesPoint {
    double t_s = 0;
    std::uint64_t lookups = 0;  // cumulative
    std::uint64_t hits = 0;
    std::uint64_t post_hit_fallbacks = 0;
    std::uint64_t silent_corruptions = 0;
    std::uint64_t io_wait_us = 0;
    std::array<std::uint64_t, model::kFormCount> gpu_bytes{};
    std::uint64_t state_table_bytes = 0;
};

class Series {
public:
    static constexpr std::size_t kMaxPoints = 512;
    // Whether offer() at now_ns would keep its point: callers build the point only then.
    bool due(std::uint64_t now_ns) const { return now_ns >= next_ns_; }
    void offer(std::uint64_t now_ns, const SeriesPoint& point);
    const std::vector<SeriesPoint>& points() const { return points_; }

private:
    std::uint64_t interval_ns_ = 100'000'000;  // 100 ms to start with
    std::uint64_t next_ns_ = 0;
    std::vector<SeriesPoint> points_;
};

// Where a read's resumed tokens were when the request looked up (`reused_tokens_by_source`).
inline constexpr std::array<const char*, 3> kReuseSources{"gpu", "host", "disk"};
inline constexpr std::size_t kFromGpu = 0, kFromHost = 1, kFromDisk = 2;  // indices of kReuseSources

// A finding about the run as a whole that no invariant covers: prefix caching that did nothing
// or little (docs/metrics.md, *Warnings*). `code` is stable; `message` says why, with figures.
struct RunWarning {
    std::string code;
    std::string message;
};

// With sessions (docs/traces.md): requests that continued an earlier turn, and those of them that
// arrived later than their trace time because that turn had not finished.
struct SessionCounts {
    std::uint64_t turns = 0;
    std::uint64_t waited = 0;
};

struct Metrics {
    std::uint64_t requests = 0;
    std::uint64_t lookups = 0;
    std::uint64_t hits = 0;
    std::uint64_t post_hit_fallbacks = 0;
    std::array<std::uint64_t, 4> verdicts{};
    std::map<std::string, std::map<std::string, std::uint64_t>> miss_reasons;  // form -> reason -> count
    std::array<std::array<std::uint64_t, model::kMissReasonCount>, model::kFormCount>
        miss_tokens{};                    // by form, then reason: tokens cut at first lookups
    std::uint64_t prompt_tokens = 0;      // prompt tokens of the first lookups: hit_tokens' denominator
    std::uint64_t hit_tokens = 0;         // tokens a plain hash lookup reported
    std::uint64_t reused_tokens = 0;      // tokens read from cache
    std::uint64_t recomputed_tokens = 0;  // hit tokens computed again because they were not resumable
    std::uint64_t trimmed_tokens = 0;     // of those, cut by the resume grain (below a multiple of it)
    std::uint64_t computed_tokens = 0;    // prefill tokens computed
    std::array<std::uint64_t, kReuseSources.size()> reused_by_source{};  // reused_tokens by kReuseSources
    std::uint32_t resume_grain_tokens = 0;  // the policy's resume grain (model::resume_grain)
    std::array<std::uint64_t, kReuseBoundsPct.size()> reads_by_reuse{};  // reads by the share of the prompt resumed
    double reuse_share_sum = 0;  // the sum of those shares (Prometheus histogram _sum)
    std::uint64_t stale_revalidations = 0;
    std::uint64_t admission_refusals = 0;
    std::uint64_t recaptures = 0;
    std::uint64_t offloads = 0;
    std::uint64_t demotions = 0;  // host/disk copies moved from host memory to disk for room
    std::uint64_t loads = 0;
    std::uint64_t load_failures = 0;
    std::uint64_t load_waits_stopped = 0;  // waits for loads cut off at compute.max_load_wait_us
    std::uint64_t requests_failed = 0;     // ended at a failed load (compute.load_failure_policy fail)
    std::array<std::uint64_t, model::kFormCount> evictions{};  // by form
    std::array<std::array<std::uint64_t, model::kFormCount>, model::kEvictionCauseCount>
        evictions_by_cause{};  // by cause, then form
    std::array<std::uint64_t, model::kFormCount>
        evictions_last_copy{};                                    // by form: evictions that left no copy anywhere
    std::array<std::uint64_t, model::kFaultClassCount> faults{};  // injected, by class
    std::uint64_t silent_corruptions = 0;                         // resumes whose output would be wrong
    std::vector<Corruption> corruption_examples;                  // the first few, explained
    std::map<std::string, std::uint64_t> invariant_violations;
    std::map<std::string, std::string> first_violation;  // invariant -> its first message
    Percentiles ttft;
    Percentiles io_wait;
    std::uint64_t io_wait_us_total = 0;
    AgeHistograms ages;  // entry ages (sim/entry_ages.hpp), by age and form
    Series series;
    std::array<std::uint64_t, model::kFormCount> peak_form_bytes{};  // GPU by form (on_disk_prefix: disk)
    std::uint64_t peak_state_table_bytes = 0;
    std::uint64_t peak_gpu_bytes = 0;
    std::uint64_t peak_disk_bytes = 0;  // the host/disk tier
    std::uint64_t peak_host_bytes = 0;  // its part in host memory
    std::uint64_t events = 0;
    std::uint64_t sim_time_ns = 0;
    bool event_bound_hit = false;
    std::uint64_t timeline_untracked_requests = 0;  // requests timeline.json drew no track for (its cap)
    std::string trace_id_count_warning;             // the trace's hash_ids counts that disagreed (id_count_warning)
    std::vector<std::string> unfired_faults;  // scheduled or aimed fault entries that never fired, as /faults/N (...)
    std::optional<SessionCounts> sessions;    // only in runs with sessions
    std::optional<std::uint64_t> samples_forked;  // only with parallel sampling: requests forked for answers 1..n-1

    void sample_memory(const model::World& world);
    void count_reuse(std::uint32_t resumed_tokens, std::uint32_t prompt_length);
    // A request's first lookup: the hit, the verdict and the tokens it fell short by, by form and reason.
    void count_lookup(const model::LookupResult& lookup, std::uint32_t prompt_length);
    // The reasons a lookup fell short (a later lookup, after loads or a stale revalidation, too).
    void count_misses(const model::LookupResult& lookup);
    // What any step did to the cache: evictions by form and cause, demotions, recaptures, refusals.
    void count_outcome(const model::StepOutcome& out);
    double hit_rate() const { return lookups == 0 ? 0.0 : static_cast<double>(hits) / static_cast<double>(lookups); }
    double fallback_rate() const {
        return hits == 0 ? 0.0 : static_cast<double>(post_hit_fallbacks) / static_cast<double>(hits);
    }
    std::uint64_t total_violations() const;
};

// What the run's figures say about prefix caching as a whole (steps-mode runs: none).
std::vector<RunWarning> run_warnings(const Metrics& m);

struct RunInfo {
    std::string scenario;
    std::string preset;
    std::string policy;
    std::uint64_t seed = 0;
    std::uint64_t final_state_hash = 0;
    std::uint64_t unseed = 0;            // one more draw of the root generator: a second run must match it
    std::vector<std::string> overrides;  // the run's --set POINTER=VALUE, as given (Scenario::overrides)
};

// One id for everything a run writes (report.json's run_id, metrics.prom's kvcheck_run_info,
// timeline.json's metadata), so files of two runs left side by side are told apart: a hash of
// the run's identity, its final state and the kvcheck commit. The same run gives the same id.
std::string run_id(const RunInfo& info);

nlohmann::json report_json(const RunInfo& info, const Metrics& m);
std::string prometheus_text(const RunInfo& info, const Metrics& m);

// A report value by dotted path ("ttft_ms.p99", "invariant_violations.RL3_toctou"); null if absent.
const nlohmann::json* report_value(const nlohmann::json& report, const std::string& path);

}  // namespace kvcheck::sim
