// Scenario loading. Every problem is recorded with its JSON pointer; `load_scenario` raises the
// first, `validate_scenario` returns them all. docs/scenario.schema.json mirrors these rules.
#include "sim/scenario/scenario.hpp"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <regex>

#include "model/invariants.hpp"
#include "sim/io/files.hpp"
#include "sim/io/json_fields.hpp"
#include "sim/io/suggest.hpp"
#include "sim/report/metrics.hpp"
#include "sim/scenario/expect.hpp"

namespace kvcheck::sim {

namespace {

const std::vector<std::string> kKinds = {"full", "swa", "chunked", "indexer", "linear"};

model::CacheGroup parse_group(const nlohmann::json& value, const std::string& pointer, Problems& problems) {
    Fields f(value, pointer, problems);
    model::CacheGroup g;
    g.name = f.text("name", "group");
    g.kind = *model::group_kind_from_name(f.choice("kind", "full", kKinds));
    g.layers = static_cast<std::uint32_t>(f.unsigned_number("layers", 1, 1, 1024));
    g.block_tokens = static_cast<std::uint32_t>(f.unsigned_number("block_tokens", 16, 1, 1 << 20));
    g.segment_tokens = static_cast<std::uint32_t>(f.unsigned_number("segment_tokens", g.block_tokens, 1, 1 << 24));
    g.window_tokens = static_cast<std::uint32_t>(f.unsigned_number("window_tokens", 0, 0, 1 << 24));
    g.compress_ratio = static_cast<std::uint32_t>(f.unsigned_number("compress_ratio", 1, 1, 1 << 16));
    g.bytes_per_token_layer = static_cast<std::uint32_t>(f.unsigned_number("bytes_per_token_layer", 64, 0, 1 << 24));
    g.state_bytes_layer = static_cast<std::uint32_t>(f.unsigned_number("state_bytes_layer", 0, 0, 1ULL << 31));
    g.indexer_top_k = static_cast<std::uint32_t>(f.unsigned_number("indexer_top_k", 0, 0, 1 << 24));
    g.indexed_group = static_cast<int>(f.unsigned_number("indexed_group", 0, 0, 15));
    if (g.kind != model::GroupKind::indexer) g.indexed_group = -1;
    g.layout_id = static_cast<std::uint16_t>(f.unsigned_number("layout_id", 1, 0, 1000));
    f.finish();
    return g;
}

void parse_model(const nlohmann::json& value, Scenario& s, Problems& problems) {
    if (value.is_string()) {
        s.preset = value.get<std::string>();
        if (const model::ModelConfig* p = model::find_preset(s.preset))
            s.model = *p;
        else
            problems.add("/model", unknown_preset(s.preset));
        return;
    }
    Fields f(value, "/model", problems);
    s.model.name = f.text("name", "custom");
    s.model.prefill_tokens_per_s = f.unsigned_number("prefill_tokens_per_s", 20'000, 1, 1'000'000'000);
    const nlohmann::json* groups = f.raw("groups");
    if (groups == nullptr || !groups->is_array() || groups->empty()) {
        problems.add("/model/groups", "expected a non-empty array of cache groups");
    } else {
        for (std::size_t i = 0; i < groups->size(); ++i)
            s.model.groups.push_back(parse_group((*groups)[i], "/model/groups/" + std::to_string(i), problems));
    }
    f.finish();
    if (problems.list.empty()) {
        const std::string why = model::config_problem(s.model);
        if (!why.empty()) problems.add("/model", "impossible model: " + why);
    }
}

std::uint64_t ms_to_ns(double ms) { return static_cast<std::uint64_t>(ms * 1e6); }

// A scenario's times end where a trace's arrivals do (1e12 ms): the simulated clock cannot wrap.
constexpr double kArrivalMaxMs = static_cast<double>(kArrivalMaxNs) / 1e6;  // 1e12, exactly

void parse_workload(const nlohmann::json& value, Scenario& s, Problems& problems) {
    Fields f(value, "/workload", problems);
    const std::string trace = f.text("trace", "");
    if (!trace.empty()) {
        const std::filesystem::path base = std::filesystem::path(s.path).parent_path();
        s.trace_path = (base / trace).lexically_normal().string();
        std::error_code ec;
        const std::filesystem::file_status status = std::filesystem::status(s.trace_path, ec);
        if (!std::filesystem::exists(status))
            problems.add("/workload/trace",
                         "trace file " + s.trace_path + " does not exist (for public traces run tools/fetch-traces)");
        else if (!std::filesystem::is_regular_file(status))
            problems.add("/workload/trace", "trace file " + s.trace_path +
                                                (std::filesystem::is_directory(status)
                                                     ? " is a directory"
                                                     : " is not a regular file (a FIFO, device or socket)") +
                                                ", expected a trace file");
    }
    // As on the command line, a .csv trace is Azure unless the format is named.
    const std::string format = std::string(trace_format_name(guess_trace_format(trace)));
    s.trace.format = parse_trace_format(f.choice("format", format, {"mooncake", "azure", "jsonl"}));
    s.trace.time_unit = parse_time_unit(f.choice("time_unit", "ms", {"s", "ms", "us", "ns"}));
    s.trace.block_tokens = static_cast<std::uint32_t>(f.unsigned_number("block_size", 512, 1, kBlockTokensMax));
    if (const TraceOptionsProblem problem = trace_options_problem(s.trace); !trace.empty() && !problem.why.empty())
        problems.add("/workload/" + problem.option, problem.why);
    s.trace.limit = f.unsigned_number("limit", 0, 0, 1ULL << 40);
    s.trace.id_count =
        parse_id_count_rule(f.choice("hash_id_count", "trust-length", {"trust-length", "keep-ids", "strict"}));
    s.trace.seed = s.seed;
    if (trace.empty())  // they say how to read a trace; the requests list is replayed whole
        for (const std::string key : {"format", "time_unit", "limit", "hash_id_count"})
            if (f.has(key))
                problems.add("/workload/" + key, "only a trace takes \"" + key + "\", and this workload has none");
    if (const nlohmann::json* list = f.raw("requests")) {
        if (!list->is_array())
            problems.add("/workload/requests", "expected an array of requests");
        else
            for (std::size_t i = 0; i < list->size(); ++i) {
                const std::string at = "/workload/requests/" + std::to_string(i);
                Fields r((*list)[i], at, problems);
                TraceRecord rec;
                rec.arrival_ns = ms_to_ns(r.number("at_ms", 0, 0, kArrivalMaxMs));
                rec.input_tokens = static_cast<std::uint32_t>(r.unsigned_number("input_tokens", 1, 1, kInputTokensMax));
                rec.output_tokens =
                    static_cast<std::uint32_t>(r.unsigned_number("output_tokens", 0, 0, kOutputTokensMax));
                rec.block_tokens = static_cast<std::uint32_t>(
                    r.unsigned_number("block_tokens", s.trace.block_tokens, 1, kBlockTokensMax));
                rec.block_ids = r.unsigned_list("blocks", ~0ULL);
                rec.line = i;
                const std::uint32_t needed = blocks_for(rec.input_tokens, rec.block_tokens);
                if (rec.block_ids.empty())  // no ids given: the request shares nothing
                    for (std::uint32_t b = 0; b < needed; ++b)
                        rec.block_ids.push_back((std::uint64_t{i + 1} << 40) | b);
                if (rec.block_ids.size() != needed)
                    problems.add(at + "/blocks", "expected " + std::to_string(needed) +
                                                     (needed == 1 ? " block id" : " block ids") + " for " +
                                                     std::to_string(rec.input_tokens) +
                                                     (rec.input_tokens == 1 ? " token" : " tokens") + ", got " +
                                                     std::to_string(rec.block_ids.size()));
                s.requests.push_back(std::move(rec));
                r.finish();
            }
    }
    s.samples = static_cast<std::uint32_t>(f.unsigned_number("samples", 1, 1, kSamplesMax));
    if (const nlohmann::json* sessions = f.raw("sessions")) {
        // true, false, or an object of options (an empty one takes the defaults).
        if (sessions->is_boolean()) {
            s.sessions.enabled = sessions->get<bool>();
        } else if (!sessions->is_object()) {
            problems.add("/workload/sessions",
                         "expected true, false or an object of session options, got " + json_type_name(*sessions));
        } else {
            Fields o(*sessions, "/workload/sessions", problems);
            s.sessions.enabled = o.flag("enabled", true);
            s.sessions.think_ns = ms_to_ns(o.number("think_ms", 0, 0, 1e9));
            o.finish();
        }
    }
    f.finish();
    if (s.trace_path.empty() && s.requests.empty())
        problems.add("/workload", "expected a \"trace\" or a non-empty \"requests\" list");
}

TierConfig parse_tier(const nlohmann::json& value, const std::string& pointer, TierConfig t, Problems& problems) {
    Fields f(value, pointer, problems);
    t.capacity_bytes = f.unsigned_number("capacity_bytes", t.capacity_bytes, 0, 1ULL << 56);
    t.bandwidth_gb_per_s = f.number("bandwidth_gb_per_s", t.bandwidth_gb_per_s, 1e-6, 1e6);
    t.latency_us = f.unsigned_number("latency_us", t.latency_us, 0, 1ULL << 32);
    t.jitter_us = f.unsigned_number("jitter_us", t.jitter_us, 0, 1ULL << 32);
    t.failure_ppm = static_cast<std::uint32_t>(f.unsigned_number("failure_ppm", t.failure_ppm, 0, 1'000'000));
    f.finish();
    return t;
}

void parse_storage(const nlohmann::json& value, Scenario& s, Problems& problems) {
    Fields f(value, "/storage", problems);
    // One budget: with both, one would be dropped without a word (a --set of the other key too).
    if (f.has("gpu_budget_gib") && f.has("gpu_budget_bytes"))
        problems.add("/storage/gpu_budget_bytes",
                     "the GPU budget is given twice, in gpu_budget_gib and gpu_budget_bytes; expected one of them");
    if (auto gib = f.optional_number("gpu_budget_gib", 1e-9, 1e6))
        s.gpu_budget_bytes = static_cast<std::uint64_t>(*gib * (1ULL << 30));
    s.gpu_budget_bytes = f.unsigned_number("gpu_budget_bytes", s.gpu_budget_bytes, 1, 1ULL << 56);
    if (const nlohmann::json* h = f.raw("host")) s.host = parse_tier(*h, "/storage/host", s.host, problems);
    if (const nlohmann::json* d = f.raw("disk")) s.disk = parse_tier(*d, "/storage/disk", s.disk, problems);
    s.offload = f.flag("offload", s.offload);
    s.offload_watermark = f.number("offload_watermark", s.offload_watermark, 0.05, 1.0);
    s.extent_tokens = static_cast<std::uint32_t>(f.unsigned_number("extent_tokens", s.extent_tokens, 0, 1 << 20));
    s.tier_eviction = f.choice("tier_eviction", s.tier_eviction ? "lru" : "none", {"lru", "none"}) == "lru";
    f.finish();
}

void parse_compute(const nlohmann::json& value, Scenario& s, Problems& problems) {
    Fields f(value, "/compute", problems);
    s.prefill_tokens_per_s = f.number("prefill_tokens_per_s", s.prefill_tokens_per_s, 1, 1e12);
    s.decode_ms_per_token = f.number("decode_ms_per_token", s.decode_ms_per_token, 0, 1e6);
    s.validate_gap_us = f.unsigned_number("validate_gap_us", s.validate_gap_us, 0, 1ULL << 32);
    if (const std::optional<std::uint64_t> wait = f.optional_unsigned("max_load_wait_us", 0, 1ULL << 40))
        s.max_load_wait_us = wait;
    s.fail_on_load_failure =
        f.choice("load_failure_policy", s.fail_on_load_failure ? "fail" : "recompute", {"recompute", "fail"}) == "fail";
    s.capture_graphs = f.flag("capture_graphs", s.capture_graphs);
    f.finish();
}

void parse_faults(const nlohmann::json& value, Scenario& s, Problems& problems) {
    if (!value.is_array()) {
        problems.add("/faults", "expected an array of faults");
        return;
    }
    std::vector<std::string> names;
    for (int i = 0; i < model::kFaultClassCount; ++i)
        names.emplace_back(model::fault_name(static_cast<model::FaultClass>(i)));
    for (std::size_t i = 0; i < value.size(); ++i) {
        const std::string at = "/faults/" + std::to_string(i);
        Fields f(value[i], at, problems);
        FaultSpec spec;
        const std::string name = f.choice("fault", "F1", names);
        for (int k = 0; k < model::kFaultClassCount; ++k)
            if (name == model::fault_name(static_cast<model::FaultClass>(k)))
                spec.fault = static_cast<model::FaultClass>(k);
        spec.rate_ppm = static_cast<std::uint32_t>(f.unsigned_number("rate_ppm", 0, 0, 1'000'000));
        // F2 says how a transfer fails; F5 which change it makes; F6 and F10 what happens to the
        // segment they hit.
        if (f.raw("mode") != nullptr) {
            if (spec.fault != model::FaultClass::F2)
                problems.add(at + "/mode", name + " has no modes (only F2 takes \"mode\")");
            else if (const std::string mode = f.choice("mode", "error", {"error", "partial", "timeout"});
                     mode != "error")
                spec.action = mode == "partial" ? FaultAction::partial : FaultAction::timeout;
        }
        if (f.raw("change") != nullptr) {
            if (spec.fault != model::FaultClass::F5)
                problems.add(at + "/change", name + " makes no model change (only F5 takes \"change\")");
            else
                spec.action = f.choice("change", "weights", {"weights", "layout"}) == "weights" ? FaultAction::weights
                                                                                                : FaultAction::layout;
        }
        if (f.raw("action") != nullptr) {
            if (spec.fault != model::FaultClass::F6 && spec.fault != model::FaultClass::F10) {
                problems.add(at + "/action", name + " has no actions to choose from (only F6 and F10 take \"action\")");
            } else {
                const std::string action = f.choice("action", spec.fault == model::FaultClass::F6 ? "evict" : "migrate",
                                                    {"evict", "offload", "migrate"});
                spec.action = action == "evict"     ? FaultAction::evict
                              : action == "offload" ? FaultAction::offload
                                                    : FaultAction::migrate;
            }
        }
        if (auto ms = f.optional_number("at_ms", 0, kArrivalMaxMs)) spec.at_ns = ms_to_ns(*ms);
        spec.at_event = f.optional_unsigned("at_event", 1, 1ULL << 48);  // the counter is 1 at the first event
        if (auto r = f.optional_unsigned("at_request", 0, 0xFFFFFFFEu))
            spec.at_request = static_cast<std::uint32_t>(*r);
        spec.count = static_cast<std::uint32_t>(f.unsigned_number("count", 1, 1, 1'000'000));
        if (f.raw("target") != nullptr) {
            const bool damages = spec.fault == model::FaultClass::F1 || spec.fault == model::FaultClass::F3 ||
                                 spec.fault == model::FaultClass::F11;
            if (!damages)
                problems.add(at + "/target",
                             name + " chooses no segment by recency (only F1, F3 and F11 take \"target\")");
            else if (!spec.at_ns && !spec.at_event)
                problems.add(at + "/target", "only a scheduled firing (at_ms or at_event) takes \"target\"; a rate or "
                                             "at_request firing aims at the request's plan");
            else if (f.choice("target", "coldest", {"coldest", "hottest"}) == "hottest")
                spec.target = FaultTarget::hottest;
        }
        if (f.raw("extra_latency_us") != nullptr && spec.fault != model::FaultClass::F4)
            problems.add(at + "/extra_latency_us",
                         name + " makes no transfer late (only F4 takes \"extra_latency_us\")");
        else
            spec.extra_latency_us = f.optional_unsigned("extra_latency_us", 0, 1ULL << 32);
        if (f.raw("timeout_us") != nullptr && spec.action != FaultAction::timeout)
            problems.add(at + "/timeout_us", "only F2 with \"mode\": \"timeout\" takes \"timeout_us\", not " +
                                                 (spec.fault == model::FaultClass::F2
                                                      ? std::string("F2 in mode ") +
                                                            (spec.action == FaultAction::partial ? "partial" : "error")
                                                      : name));
        else
            spec.timeout_us = f.optional_unsigned("timeout_us", 1, 1ULL << 32);
        // A trigger given with a bad value has its own problem above; these say what is missing.
        const bool scheduled_or_aimed = f.has("at_ms") || f.has("at_event") || f.has("at_request");
        if (spec.rate_ppm == 0 && !scheduled_or_aimed)
            problems.add(at, "a fault needs a rate_ppm, an at_ms, an at_event or an at_request");
        if (spec.at_request && (spec.at_ns || spec.at_event))
            problems.add(at + "/at_request",
                         "a fault aimed at a request fires at that request's opportunities; drop at_ms and at_event");
        if (spec.at_request && spec.rate_ppm > 0)
            problems.add(at + "/at_request",
                         "a fault aimed at a request fires at that request's opportunities only; drop rate_ppm, "
                         "which fires at every request's (or give each its own entry)");
        if (f.has("count") && spec.count != 1 && !scheduled_or_aimed)
            problems.add(at + "/count",
                         "only a scheduled (at_ms or at_event) or at_request firing takes \"count\"; a rate fires at "
                         "each opportunity by its chance");
        f.finish();
        s.faults.push_back(spec);
    }
}

// A fault whose target the scenario can never hold would be accepted and never fire, so a fault
// job would pass without testing anything: each class needs a form of the model or a transfer.
void check_faults_can_act(const Scenario& s, Problems& problems) {
    const model::Derived derived = model::derive(s.model);
    // Transfers start at offloads: the offloader's, while the GPU is above the watermark (never at
    // 1: admission keeps it within its budget), or an F6 or F10 firing's with action offload.
    const bool fault_offloads = std::any_of(s.faults.begin(), s.faults.end(),
                                            [](const FaultSpec& f) { return f.action == FaultAction::offload; });
    const bool tiers = s.host.capacity_bytes + s.disk.capacity_bytes > 0;
    const bool transfers = s.offload && tiers && (s.offload_watermark < 1.0 || fault_offloads);
    const std::string no_transfers =
        std::string(!s.offload ? "storage.offload is false"
                    : !tiers   ? "the host and disk tiers have no capacity"
                               : "storage.offload_watermark is 1, which the GPU never exceeds, and no fault offloads") +
        ", so no transfer ever runs";
    for (const auto& [tier, name] : {std::pair{&s.host, "host"}, std::pair{&s.disk, "disk"}})
        if (tier->failure_ppm > 0 && !transfers)
            problems.add(std::string("/storage/") + name + "/failure_ppm",
                         "a tier failure can never happen here: " + no_transfers);
    for (std::size_t i = 0; i < s.faults.size(); ++i) {
        const model::FaultClass fault = s.faults[i].fault;
        std::optional<model::Form> needs;
        switch (fault) {
            case model::FaultClass::F1:
            case model::FaultClass::F11: needs = model::Form::compressed_kv; break;
            case model::FaultClass::F3: needs = model::Form::indexer_state; break;
            case model::FaultClass::F7: needs = model::Form::uncompressed_tail; break;
            case model::FaultClass::F8: needs = model::Form::swa_window; break;
            default: break;
        }
        const std::string what = std::string(model::fault_name(fault)) + " (" +
                                 std::string(model::fault_summary(fault)) + ") can never fire here: ";
        const std::string at = "/faults/" + std::to_string(i) + "/fault";
        if (needs && !derived.form_present[static_cast<int>(*needs)]) {
            std::string forms;
            for (int f = 0; f < model::kFormCount; ++f)
                if (derived.form_present[f])
                    forms += (forms.empty() ? "" : ", ") + std::string(model::form_name(static_cast<model::Form>(f)));
            problems.add(at, what + "model " + s.model.name + " has no " + std::string(model::form_name(*needs)) +
                                 " segments (its forms: " + forms + ")");
        }
        // Each listed request counts once per sampled answer: the forked ones are numbered too.
        const std::uint64_t numbered = std::uint64_t{s.requests.size()} * s.samples;
        if (s.faults[i].at_request && s.trace_path.empty() && *s.faults[i].at_request >= numbered)
            problems.add("/faults/" + std::to_string(i) + "/at_request",
                         what + "the workload has " + std::to_string(numbered) + " requests, numbered from 0" +
                             (s.samples > 1 ? " (" + std::to_string(s.requests.size()) + " listed, " +
                                                  std::to_string(s.samples) + " sampled answers each)"
                                            : ""));
        const bool needs_transfer = fault == model::FaultClass::F2 || fault == model::FaultClass::F4 ||
                                    fault == model::FaultClass::F9 || s.faults[i].action == FaultAction::offload;
        if (needs_transfer && !transfers) problems.add(at, what + no_transfers);
    }
}

void parse_steps_mode(Fields& top, const nlohmann::json& steps, Scenario& s, Problems& problems) {
    s.steps_mode = true;
    s.scope.model = s.model;
    if (const nlohmann::json* scope = top.raw("scope")) {
        Fields f(*scope, "/scope", problems);
        s.scope.name = f.text("name", "custom");
        s.scope.content_block_tokens =
            static_cast<std::uint32_t>(f.unsigned_number("content_block_tokens", 16, 1, 1 << 20));
        s.scope.limits.gpu_budget_bytes =
            f.unsigned_number("gpu_budget_bytes", s.scope.limits.gpu_budget_bytes, 1, 1ULL << 56);
        s.scope.limits.extent_tokens =
            static_cast<std::uint32_t>(f.unsigned_number("extent_tokens", s.scope.limits.extent_tokens, 0, 1 << 20));
        s.scope.limits.disk_capacity_bytes =
            f.unsigned_number("disk_capacity_bytes", s.scope.limits.disk_capacity_bytes, 0, 1ULL << 56);
        s.scope.limits.tier_eviction = f.choice("tier_eviction", "none", {"lru", "none"}) == "lru";
        if (const nlohmann::json* reqs = f.raw("requests"); reqs != nullptr && reqs->is_array()) {
            for (std::size_t i = 0; i < reqs->size(); ++i) {
                const std::string at = "/scope/requests/" + std::to_string(i);
                Fields r((*reqs)[i], at, problems);
                RequestTemplate t;
                t.ids = r.unsigned_list("blocks", ~0ULL);
                t.input_tokens = static_cast<std::uint32_t>(r.unsigned_number("input_tokens", 16, 1, kInputTokensMax));
                t.output_tokens =
                    static_cast<std::uint32_t>(r.unsigned_number("output_tokens", 0, 0, kOutputTokensMax));
                t.warm = r.flag("warm", false);
                if (const auto c = r.optional_unsigned("continues", 0, 1 << 20))
                    t.continues = static_cast<std::int32_t>(*c);
                t.sample = static_cast<std::uint32_t>(r.unsigned_number("sample", 0, 0, kSamplesMax - 1));
                if (t.ids.size() < blocks_for(t.input_tokens, s.scope.content_block_tokens))
                    problems.add(at + "/blocks", "too few block ids for the prompt");
                r.finish();
                s.scope.requests.push_back(std::move(t));
                // A cross-key rule (the request named, the prompt's length, the ids), so at the request.
                if (const std::string why = turn_problem(s.scope, i); !why.empty())
                    problems.add(at, "\"continues\": " + why);
            }
        } else {
            problems.add("/scope/requests", "expected an array of requests");
        }
        f.finish();
    } else {
        problems.add("/scope", "a scenario with \"steps\" needs a \"scope\"");
    }
    if (!steps.is_array()) {
        problems.add("/steps", "expected an array of steps");
        return;
    }
    for (std::size_t i = 0; i < steps.size(); ++i) {
        const std::string at = "/steps/" + std::to_string(i);
        Fields f(steps[i], at, problems);
        model::Step step;
        const std::string kind = f.text("step", "");
        if (auto k = model::step_kind_from_name(kind))
            step.kind = *k;
        else
            problems.add(at + "/step", "unknown step \"" + kind + "\"");
        step.target = static_cast<std::uint32_t>(f.unsigned_number("target", 0, 0, 0xFFFFFFFEu));
        step.arg = static_cast<std::uint32_t>(f.unsigned_number("arg", 0, 0, 0xFFFFFFFEu));
        f.text("describe", "");  // a human-readable note, ignored on load
        f.finish();
        s.steps.push_back(step);
    }
}

// Puts `o`'s value at its pointer in `doc`. Missing object members on the way are created (a
// file without "compute" takes --set /compute/...), array elements are not: an index must name
// an element the file has, as a new fault entry would be one with defaults the user never wrote.
void apply_override(nlohmann::json& doc, const Override& o, const std::string& path) {
    // The pointer's tokens, unescaped, from the first: nlohmann's json_pointer hands them out last first.
    std::vector<std::string> tokens;
    for (nlohmann::json::json_pointer rest(o.pointer); !rest.empty(); rest.pop_back()) tokens.push_back(rest.back());
    nlohmann::json* at = &doc;
    std::string reached;
    for (auto it = tokens.rbegin(); it != tokens.rend(); ++it) {
        const std::string& token = *it;
        // An array index as RFC 6901 writes it: digits, without a leading zero.
        const bool index = !token.empty() && token.size() < 10 &&
                           token.find_first_not_of("0123456789") == std::string::npos &&
                           (token == "0" || token[0] != '0');
        if (at->is_null() && index)
            throw InputError(path, reached.empty() ? "/" : reached,
                             "--set cannot put a value here: the file has no array to index");
        reached.push_back('/');
        reached += pointer_escape(token);
        if (at->is_array()) {
            if (!index || std::stoul(token) >= at->size())
                throw InputError(path, reached,
                                 "--set cannot put a value here: " +
                                     (at->empty() ? std::string("the array is empty")
                                                  : "expected an index from 0 to " + std::to_string(at->size() - 1)));
            at = &(*at)[std::stoul(token)];
        } else if (at->is_object() || at->is_null()) {
            at = &(*at)[token];
        } else {
            throw InputError(path, reached,
                             std::string("--set cannot put a value here: its parent is a ") + at->type_name());
        }
    }
    *at = o.value;
}

nlohmann::json read_document(const std::string& path, const std::vector<Override>& overrides) {
    nlohmann::json doc = parse_json_text(read_file(path), path);
    for (const Override& o : overrides) apply_override(doc, o, path);
    return doc;
}

Scenario parse(const std::string& path, const std::vector<Override>& overrides, Problems& problems) {
    Scenario s;
    s.path = path;
    s.overrides = overrides;
    for (const Override& o : overrides) problems.overridden.push_back(o.pointer);
    const nlohmann::json doc = read_document(path, overrides);
    Fields top(doc, "", problems);
    s.name = top.text("name", valid_utf8(std::filesystem::path(path).stem().string()));
    s.description = top.text("description", "");
    s.seed = top.unsigned_number("seed", 1, 0, ~0ULL);
    const std::string policy = top.text("policy", "validated");
    if (model::find_policy(policy) == nullptr)
        problems.add("/policy", unknown_policy(policy));
    else
        s.policy = policy;
    const std::string rollout = top.choice("rollout", "cross-request", {"off", "intra-request", "cross-request"});
    s.rollout = rollout == "off"             ? model::Rollout::off
                : rollout == "intra-request" ? model::Rollout::intra_request
                                             : model::Rollout::cross_request;
    if (const nlohmann::json* m = top.raw("model"))
        parse_model(*m, s, problems);
    else
        problems.add("/model", "expected a model: a preset name or an object with \"groups\"");
    if (const nlohmann::json* steps = top.raw("steps")) {
        parse_steps_mode(top, *steps, s, problems);
    } else if (const nlohmann::json* w = top.raw("workload")) {
        parse_workload(*w, s, problems);
    } else {
        problems.add("/workload", "expected a \"workload\" (or \"steps\" with a \"scope\")");
    }
    // A steps-mode scenario is the model's steps alone: budgets come from its scope, faults are
    // among its steps, and there is no clock. These keys would be read and never used.
    if (s.steps_mode)
        for (const char* key : {"storage", "compute", "faults", "limits"})
            if (top.raw(key) != nullptr)
                problems.add(std::string("/") + key,
                             std::string("\"") + key +
                                 "\" applies to a workload run; a scenario with \"steps\" takes its budgets from "
                                 "\"scope\" and its faults from its steps");
    if (const nlohmann::json* st = top.raw("storage")) parse_storage(*st, s, problems);
    if (const nlohmann::json* c = top.raw("compute")) parse_compute(*c, s, problems);
    if (const nlohmann::json* f = top.raw("faults")) parse_faults(*f, s, problems);
    if (const nlohmann::json* l = top.raw("limits")) {
        Fields f(*l, "/limits", problems);
        s.max_events = f.unsigned_number("max_events", s.max_events, 1, 1ULL << 40);
        s.structural_checks = f.flag("structural_checks", s.structural_checks);
        s.timeline_requests =
            static_cast<std::uint32_t>(f.unsigned_number("timeline_requests", s.timeline_requests, 0, 1'000'000));
        f.finish();
    }
    if (const nlohmann::json* e = top.raw("expect")) {
        if (!e->is_object())
            problems.add("/expect", "expected an object keyed by policy name (or \"*\")");
        else
            for (const auto& [key, item] : e->items()) {
                if (key != "*" && model::find_policy(key) == nullptr)
                    problems.add("/expect/" + pointer_escape(key), "unknown policy \"" + key + "\"" +
                                                                       did_you_mean(key, policy_name_list()) +
                                                                       " (use \"*\" for any policy)");
                s.expect[key] = parse_expectation(item, "/expect/" + pointer_escape(key), s, problems);
            }
    }
    top.finish();
    if (problems.list.empty() && !s.steps_mode) check_faults_can_act(s, problems);
    if (s.prefill_tokens_per_s == 0) s.prefill_tokens_per_s = static_cast<double>(s.model.prefill_tokens_per_s);
    if (s.steps_mode) {
        s.scope.model = s.model;
        s.scope.rollout = s.rollout;
    }
    return s;
}

}  // namespace

bool faults_can_act(const Scenario& scenario) {
    Problems problems;
    check_faults_can_act(scenario, problems);
    return problems.list.empty();
}

Override parse_override(const std::string& text) {
    const std::size_t eq = text.find('=');
    if (eq == std::string::npos || eq == 0 || text[0] != '/')
        throw InputError("", "--set",
                         "expected POINTER=VALUE with a JSON pointer such as /storage/gpu_budget_gib, got \"" + text +
                             "\"");
    Override o{text.substr(0, eq), nullptr, text};
    try {
        (void)nlohmann::json::json_pointer(o.pointer);
    } catch (const nlohmann::json::exception& e) {
        throw InputError("", "--set",
                         "\"" + o.pointer + "\" is not a JSON pointer (a \"~\" must be followed by 0 or 1)");
    }
    // The text goes into reports and reproduce lines, which are UTF-8.
    if (valid_utf8(text) != text)
        throw InputError("", "--set",
                         "expected UTF-8 text, got a byte that is not UTF-8 in \"" + valid_utf8(text) + "\"");
    const std::string value = text.substr(eq + 1);
    if (!nlohmann::json::accept(value)) {
        // A number JSON cannot hold ("1e400") would otherwise be taken as a string.
        static const std::regex kNumber(R"(-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?)");
        if (std::regex_match(value, kNumber))
            throw InputError("", "--set", o.pointer + ": number out of range; expected a finite number");
        o.value = value;
        return o;
    }
    try {
        o.value = parse_json_text(value, "");
    } catch (const InputError& e) {  // a duplicate key, as in a file
        throw InputError("", "--set", o.pointer + ": " + e.message() + " (at " + e.place() + " in the value)");
    }
    return o;
}

Scenario load_scenario(const std::string& path, const std::vector<Override>& overrides) {
    Problems problems{path, {}, {}};
    Scenario s = parse(path, overrides, problems);
    problems.raise();
    return s;
}

nlohmann::json scenario_document(const Scenario& scenario) { return read_document(scenario.path, scenario.overrides); }

std::vector<InputError> validate_scenario(const std::string& path, const std::vector<Override>& overrides) {
    Problems problems{path, {}, {}};
    try {
        parse(path, overrides, problems);
    } catch (const InputError& e) {
        problems.list.push_back(e);
    }
    return problems.list;
}

std::vector<std::string> override_texts(const Scenario& s) {
    std::vector<std::string> out;
    for (const Override& o : s.overrides) out.push_back(o.text);
    return out;
}

}  // namespace kvcheck::sim
