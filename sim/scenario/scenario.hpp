// Scenario files: the model, the workload (a trace or explicit requests), storage tiers, the
// compute model, faults, expectations — or, in steps mode, an exact step list (counterexamples).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/fault_class.hpp"
#include "model/steps.hpp"
#include "sim/check/scope.hpp"
#include "sim/io/input_error.hpp"
#include "sim/workload/sessions.hpp"
#include "sim/workload/trace.hpp"

namespace kvcheck::sim {

struct TierConfig {
    std::uint64_t capacity_bytes = 0;
    double bandwidth_gb_per_s = 1;  // GB/s (1e9 bytes per second)
    std::uint64_t latency_us = 0;
    std::uint64_t jitter_us = 0;    // uniform extra latency in [0, jitter]
    std::uint32_t failure_ppm = 0;  // chance that a transfer on this tier fails (counted as F2)
};

// What a firing of F2, F5, F6 or F10 does, when the entry names it (docs/faults.md, "Actions").
enum class FaultAction : std::uint8_t { usual, weights, layout, evict, offload, migrate, partial, timeout };

// Which segment a scheduled F1, F3 or F11 firing damages ("target"): the least or the most
// recently used one of its form that it can still act on.
enum class FaultTarget : std::uint8_t { coldest, hottest };

struct FaultSpec {
    model::FaultClass fault = model::FaultClass::F1;
    // F2 ("mode"): partial or timeout (usual is an error); F5 ("change"): weights or layout; F6, F10
    // ("action"): evict, offload or migrate.
    FaultAction action = FaultAction::usual;
    std::uint32_t rate_ppm = 0;                 // per opportunity (see docs/faults.md), 0 = scheduled only
    std::optional<std::uint64_t> at_ns;         // scheduled at a virtual time ...
    std::optional<std::uint64_t> at_event;      // ... or when the event counter reaches this ...
    std::optional<std::uint32_t> at_request;    // ... or at this request's opportunities (arrival order, from 0)
    std::uint32_t count = 1;                    // scheduled: how many times to fire
    FaultTarget target = FaultTarget::coldest;  // scheduled F1, F3, F11: which segment they damage
    // F4: how late a late I/O is; F2 timeout: how long after its start a hung transfer fails. The
    // last entry of the class that gives one sets it for all (docs/faults.md has the defaults).
    std::optional<std::uint64_t> extra_latency_us;
    std::optional<std::uint64_t> timeout_us;
};

struct Bound {
    std::optional<double> min;
    std::optional<double> max;
};

struct Expectation {
    std::map<std::string, Bound> metrics;  // report keys such as silent_corruptions, hit_rate
    std::vector<std::string> violates;     // invariants that must be violated at least once
    std::vector<std::string> holds;        // invariants that must never be violated
};

inline constexpr std::uint32_t kSamplesMax = 64;  // sampled answers a request may ask for

// A scenario value given on the command line, `--set POINTER=VALUE`: VALUE, read as JSON (or as a
// string when it is not JSON), replaces what the file holds at the JSON pointer, creating missing
// object members on the way (not array elements).
struct Override {
    std::string pointer;
    nlohmann::json value;
    std::string text;  // POINTER=VALUE as given, for reproduce lines
};

// Reads POINTER=VALUE; throws an InputError (place "--set") when it is malformed.
Override parse_override(const std::string& text);

struct Scenario {
    std::string path;
    std::string name;
    std::string description;
    std::string preset;  // "" for a custom model
    model::ModelConfig model;
    std::string policy = "validated";
    std::uint64_t seed = 1;
    model::Rollout rollout = model::Rollout::cross_request;

    // Workload: a trace file (streamed) and/or explicit requests.
    std::string trace_path;  // resolved against the scenario's folder
    TraceOptions trace;
    std::vector<TraceRecord> requests;
    SessionOptions sessions;    // multi-turn sessions found in the ids (docs/traces.md)
    std::uint32_t samples = 1;  // sampled answers per request (parallel sampling, forked after prefill)

    std::uint64_t gpu_budget_bytes = 80ULL << 30;
    TierConfig host{256ULL << 30, 20, 5, 2};
    TierConfig disk{4ULL << 40, 2, 200, 100};
    bool offload = true;              // spill cold blocks to host/disk instead of dropping them
    double offload_watermark = 0.9;   // start offloading above this share of the GPU budget
    std::uint32_t extent_tokens = 0;  // tokens one state-table entry may cover (model::Limits)
    bool tier_eviction = true;        // a full host/disk tier drops its coldest on-disk entries (model::Limits)
    bool capture_graphs = true;

    double prefill_tokens_per_s = 0;  // 0: the preset's figure
    double decode_ms_per_token = 20;
    std::uint64_t validate_gap_us = 50;  // time between lookup and pin: the TOCTOU window
    // How long a request waits for its loads before it stops waiting (model::StepKind::stop_waiting)
    // and recomputes what they would have given; none: until they end.
    std::optional<std::uint64_t> max_load_wait_us;
    // compute.load_failure_policy `fail`: a request whose load fails ends there, counted in
    // requests_failed (model::StepKind::abort); `recompute` (the default): it recomputes.
    bool fail_on_load_failure = false;
    std::vector<FaultSpec> faults;

    std::uint64_t max_events = 50'000'000;
    bool structural_checks = false;  // O(state) invariants after every step (debug runs)
    // Requests drawn in timeline.json: enough for the largest public trace (the Mooncake
    // conversation trace's 12,031 make a 9.2 MB file).
    std::uint32_t timeline_requests = 50'000;

    std::map<std::string, Expectation> expect;  // by policy name, "*" for any policy

    // Steps mode: replay of an exact step list from a scope (counterexamples, regressions).
    bool steps_mode = false;
    Scope scope;
    std::vector<model::Step> steps;

    std::vector<Override> overrides;  // applied to the file's JSON before it was read
};

// Loads and checks a scenario, with `overrides` applied to the file's JSON first; throws the first
// InputError (file and JSON pointer; a problem inside an overridden value says so).
Scenario load_scenario(const std::string& path, const std::vector<Override>& overrides = {});

// The scenario's JSON as it was read: its file with its overrides applied.
nlohmann::json scenario_document(const Scenario& scenario);

// Whether every fault entry and tier failure rate of a loaded (or edited) workload scenario can
// act: the check the loader makes last. A shrunk counterexample must pass it to load again.
bool faults_can_act(const Scenario& scenario);

// Every problem in the file, for `kvcheck validate`; empty when it is valid.
std::vector<InputError> validate_scenario(const std::string& path, const std::vector<Override>& overrides = {});

// The run's --set POINTER=VALUE texts, as given (for reports and reproduce lines).
std::vector<std::string> override_texts(const Scenario& scenario);

}  // namespace kvcheck::sim
