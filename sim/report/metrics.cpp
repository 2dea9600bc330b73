// Metrics aggregation and the two machine-readable outputs (report.json, metrics.prom).
#include "sim/report/metrics.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <sstream>

#include "model/invariants.hpp"
#include "sim/io/version.hpp"

namespace kvcheck::sim {

double Percentiles::at(double fraction) const {
    if (values_us_.empty()) return 0;
    sort();
    const auto n = values_us_.size();
    auto rank = static_cast<std::size_t>(fraction * static_cast<double>(n) + 0.999999);
    rank = std::clamp<std::size_t>(rank, 1, n);
    return static_cast<double>(values_us_[rank - 1]) / 1000.0;
}

std::uint64_t Percentiles::at_most_us(std::uint64_t bound_us) const {
    sort();
    return static_cast<std::uint64_t>(std::upper_bound(values_us_.begin(), values_us_.end(), bound_us) -
                                      values_us_.begin());
}

double Percentiles::sum_s() const {
    std::uint64_t sum_us = 0;
    for (const std::uint32_t v : values_us_) sum_us += v;
    return static_cast<double>(sum_us) / 1e6;
}

void Percentiles::sort() const {
    if (sorted_) return;
    std::sort(values_us_.begin(), values_us_.end());
    sorted_ = true;
}

void Series::offer(std::uint64_t now_ns, const SeriesPoint& point) {
    if (!due(now_ns)) return;
    if (points_.size() >= kMaxPoints) {
        std::vector<SeriesPoint> kept;
        for (std::size_t i = 0; i < points_.size(); i += 2) kept.push_back(points_[i]);
        points_.swap(kept);
        interval_ns_ *= 2;
    }
    points_.push_back(point);
    next_ns_ = now_ns + interval_ns_;
}

void Metrics::sample_memory(const model::World& w) {
    for (int f = 0; f < model::kFormCount; ++f) peak_form_bytes[f] = std::max(peak_form_bytes[f], w.bytes_by_form[f]);
    peak_state_table_bytes = std::max(peak_state_table_bytes, std::uint64_t{w.live_segments} * model::kStateEntryBytes);
    peak_gpu_bytes = std::max(peak_gpu_bytes, w.gpu_used_bytes);
    peak_disk_bytes = std::max(peak_disk_bytes, w.disk_used_bytes);
    peak_host_bytes = std::max(peak_host_bytes, w.host_used_bytes);
}

namespace {

nlohmann::json age_summary(const DurationHistogram& h) {
    return {{"count", h.count()},        {"mean", h.mean_ms()},        {"p50", h.quantile_ms(0.5)},
            {"p90", h.quantile_ms(0.9)}, {"p99", h.quantile_ms(0.99)}, {"max", h.max_ms()}};
}

// Each age over all forms ("all") and by form, every form (zeros for one that has none), so that
// an expectation may bound any of them.
nlohmann::json entry_ages(const Metrics& m) {
    nlohmann::json out = nlohmann::json::object();
    for (std::size_t a = 0; a < kAgeNames.size(); ++a) {
        DurationHistogram all;
        nlohmann::json forms = nlohmann::json::object();
        for (model::Form f : model::kAllForms) {
            const DurationHistogram& h = m.ages[a][static_cast<std::size_t>(f)];
            all.merge(h);
            forms[std::string(model::form_name(f))] = age_summary(h);
        }
        forms["all"] = age_summary(all);
        out[kAgeNames[a]] = forms;
    }
    return out;
}

std::map<std::string, std::uint64_t> by_form(const std::array<std::uint64_t, model::kFormCount>& counts) {
    std::map<std::string, std::uint64_t> out;
    for (model::Form f : model::kAllForms)
        if (counts[static_cast<int>(f)] > 0) out[std::string(model::form_name(f))] = counts[static_cast<int>(f)];
    return out;
}

// Evictions by cause, then form; causes and forms that never happened left out.
std::map<std::string, std::map<std::string, std::uint64_t>> by_cause(const Metrics& m) {
    std::map<std::string, std::map<std::string, std::uint64_t>> out;
    for (int c = 0; c < model::kEvictionCauseCount; ++c) {
        std::map<std::string, std::uint64_t> forms = by_form(m.evictions_by_cause[static_cast<std::size_t>(c)]);
        if (!forms.empty())
            out[std::string(model::eviction_cause_name(static_cast<model::EvictionCause>(c)))] = std::move(forms);
    }
    return out;
}

std::map<std::string, std::uint64_t> by_fault(const std::array<std::uint64_t, model::kFaultClassCount>& counts) {
    std::map<std::string, std::uint64_t> out;
    for (int k = 0; k < model::kFaultClassCount; ++k)
        if (counts[k] > 0) out[std::string(model::fault_name(static_cast<model::FaultClass>(k)))] = counts[k];
    return out;
}

// Reads by the share of the prompt resumed: "0" (nothing), then "0-10" (above 0 %, at most 10 %)
// and so on to "90-100"; names that sort in the order of the buckets.
std::map<std::string, std::uint64_t> reuse_buckets(const Metrics& m) {
    std::map<std::string, std::uint64_t> out;
    for (std::size_t b = 0; b < kReuseBoundsPct.size(); ++b)
        out[(b == 0 ? "" : std::to_string(kReuseBoundsPct[b - 1]) + "-") + std::to_string(kReuseBoundsPct[b])] =
            m.reads_by_reuse[b];
    return out;
}

// Tokens cut by form, then reason; pairs that cut nothing left out.
std::map<std::string, std::map<std::string, std::uint64_t>> miss_tokens(const Metrics& m) {
    std::map<std::string, std::map<std::string, std::uint64_t>> out;
    for (model::Form f : model::kAllForms)
        for (int r = 0; r < model::kMissReasonCount; ++r)
            if (const std::uint64_t n = m.miss_tokens[static_cast<std::size_t>(f)][static_cast<std::size_t>(r)]; n > 0)
                out[std::string(model::form_name(f))]
                   [std::string(model::miss_reason_name(static_cast<model::MissReason>(r)))] = n;
    return out;
}

std::map<std::string, std::uint64_t> by_source(const Metrics& m) {
    std::map<std::string, std::uint64_t> out;
    for (std::size_t k = 0; k < kReuseSources.size(); ++k) out[kReuseSources[k]] = m.reused_by_source[k];
    return out;
}

double share(std::uint64_t part, std::uint64_t whole) {
    return whole == 0 ? 0.0 : static_cast<double>(part) / static_cast<double>(whole);
}

std::map<std::string, std::uint64_t> peaks(const Metrics& m) {
    std::map<std::string, std::uint64_t> out;
    for (model::Form f : model::kAllForms)
        out[std::string(model::form_name(f))] = m.peak_form_bytes[static_cast<int>(f)];
    out["state_table"] = m.peak_state_table_bytes;
    out["gpu_total"] = m.peak_gpu_bytes;
    out["disk_total"] = m.peak_disk_bytes;
    out["host_total"] = m.peak_host_bytes;
    return out;
}

nlohmann::json series_json(const Series& series) {
    nlohmann::json t = nlohmann::json::array(), lookups = t, hits = t, fallbacks = t, corruptions = t, io = t,
                   table = t;
    nlohmann::json forms = nlohmann::json::object();
    for (const SeriesPoint& p : series.points()) {
        t.push_back(p.t_s);
        lookups.push_back(p.lookups);
        hits.push_back(p.hits);
        fallbacks.push_back(p.post_hit_fallbacks);
        corruptions.push_back(p.silent_corruptions);
        io.push_back(p.io_wait_us);
        table.push_back(p.state_table_bytes);
        for (model::Form f : model::kAllForms)
            forms[std::string(model::form_name(f))].push_back(p.gpu_bytes[static_cast<int>(f)]);
    }
    return {{"t_s", t},
            {"lookups", lookups},
            {"hits", hits},
            {"post_hit_fallbacks", fallbacks},
            {"silent_corruptions", corruptions},
            {"io_wait_us", io},
            {"state_table_bytes", table},
            {"gpu_bytes_by_form", forms}};
}

std::string counted(std::uint64_t n, const std::string& noun) {
    return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

// Why hash hits were not resumed, in a clause: the grain when it cut at least half of what was
// recomputed, else the miss reason that cut the most tokens, else the most frequent one.
std::string why_not_resumed(const Metrics& m) {
    if (m.recomputed_tokens > 0 && m.trimmed_tokens * 2 >= m.recomputed_tokens)
        return std::to_string(m.trimmed_tokens) + " of the " + std::to_string(m.recomputed_tokens) +
               " recomputed hit tokens were cut down to a multiple of the resume grain (resume_grain_tokens " +
               std::to_string(m.resume_grain_tokens) + "): hits shorter than it resume nothing";
    const auto top = [](const std::map<std::string, std::map<std::string, std::uint64_t>>& by_form) {
        std::pair<std::string, std::uint64_t> best{"", 0};
        for (const auto& [form, reasons] : by_form)
            for (const auto& [reason, n] : reasons)
                if (n > best.second) best = {form + "." + reason, n};
        return best;
    };
    if (const auto [name, tokens] = top(miss_tokens(m)); tokens > 0)
        return "the miss reason that cut the most tokens is " + name + " (" + std::to_string(tokens) +
               " tokens at first lookups; see miss_tokens)";
    if (const auto [name, count] = top(m.miss_reasons); count > 0)
        return "the most frequent miss reason is " + name + " (" + std::to_string(count) + " times; see miss_reasons)";
    return "no miss reason was recorded";
}

nlohmann::json warnings_json(const Metrics& m) {
    nlohmann::json out = nlohmann::json::array();
    for (const RunWarning& w : run_warnings(m)) out.push_back({{"code", w.code}, {"message", w.message}});
    return out;
}

}  // namespace

void Metrics::count_lookup(const model::LookupResult& lookup, std::uint32_t prompt_length) {
    ++lookups;
    if (lookup.hash_hit_len > 0) ++hits;
    hit_tokens += lookup.hash_hit_len;
    prompt_tokens += prompt_length;
    ++verdicts[static_cast<int>(lookup.verdict)];
    count_misses(lookup);
    for (const model::Miss& m : lookup.misses)
        miss_tokens[static_cast<std::size_t>(m.form)][static_cast<std::size_t>(m.reason)] += m.tokens;
}

void Metrics::count_misses(const model::LookupResult& lookup) {
    for (const model::Miss& m : lookup.misses)
        ++miss_reasons[std::string(model::form_name(m.form))][std::string(model::miss_reason_name(m.reason))];
}

void Metrics::count_outcome(const model::StepOutcome& out) {
    demotions += out.demotions;
    for (const model::Eviction& e : out.evicted) {
        ++evictions[static_cast<std::size_t>(e.form)];
        ++evictions_by_cause[static_cast<std::size_t>(e.cause)][static_cast<std::size_t>(e.form)];
        if (!e.copy_kept) ++evictions_last_copy[static_cast<std::size_t>(e.form)];
    }
    recaptures += out.recaptures;
    if (out.admission_refused) ++admission_refusals;
}

void Metrics::count_reuse(std::uint32_t resumed_tokens, std::uint32_t prompt_length) {
    const std::uint64_t resumed = std::min(resumed_tokens, prompt_length);
    std::size_t b = 0;
    while (resumed * 100 > std::uint64_t{kReuseBoundsPct[b]} * prompt_length) ++b;  // the last bound, 100 %, holds
    ++reads_by_reuse[b];
    reuse_share_sum += prompt_length == 0 ? 0.0 : static_cast<double>(resumed) / static_cast<double>(prompt_length);
}

std::vector<RunWarning> run_warnings(const Metrics& m) {
    std::vector<RunWarning> out;
    if (m.event_bound_hit)
        out.push_back({"event_bound", "the run stopped at limits.max_events after " + counted(m.events, "event") +
                                          "; its figures cover only the " + counted(m.requests, "request") +
                                          " that arrived by then"});
    if (!m.trace_id_count_warning.empty()) out.push_back({"trace_hash_ids", m.trace_id_count_warning});
    if (!m.unfired_faults.empty()) {
        std::string entries;
        for (const std::string& f : m.unfired_faults) entries += (entries.empty() ? "" : ", ") + f;
        const std::size_t n = m.unfired_faults.size();
        out.push_back({"fault_unfired",
                       std::to_string(n) + (n == 1 ? " fault entry" : " fault entries") + " never acted: " + entries +
                           "; an entry aimed at a request fires only at that request's opportunities of its class "
                           "(there are " +
                           std::to_string(m.requests) +
                           " requests, numbered from 0), one at an event "
                           "count only if the run gets that far (" +
                           counted(m.events, "event") +
                           "), an armed one (F2, F4, F6-F9) only at a later opportunity of its class, and each acts "
                           "only on something it can change there (F1, F3, F6-F8, F10, F11: a segment that no "
                           "reader has pinned; F5: a moment without a read in flight)"});
    }
    if (m.lookups < 2 || m.resume_grain_tokens == 0) return out;  // one request, or a steps-mode run
    if (m.hits == 0) {
        out.push_back({"no_hits", "prefix caching found nothing to reuse: none of the " + std::to_string(m.lookups) +
                                      " requests began with a block an earlier request had cached (hit_rate 0)" +
                                      (m.admission_refusals > 0
                                           ? "; admission_refusals is " + std::to_string(m.admission_refusals) +
                                                 ": what did not fit the GPU budget was never cached"
                                           : std::string())});
    } else if (m.reused_tokens == 0) {
        out.push_back({"nothing_resumed", "prefix caching resumed nothing: " + counted(m.hits, "request") +
                                              " hit the cache for " + std::to_string(m.hit_tokens) +
                                              " tokens, and no token was read from it; " + why_not_resumed(m)});
    } else if (m.reused_tokens * 10 < m.hit_tokens) {
        char pct[32];
        std::snprintf(pct, sizeof pct, "%.1f", 100.0 * share(m.reused_tokens, m.hit_tokens));
        out.push_back({"little_resumed", "prefix caching resumed " + std::string(pct) + " % of the " +
                                             std::to_string(m.hit_tokens) + " tokens its " + counted(m.hits, "hit") +
                                             " reported; " + why_not_resumed(m)});
    }
    return out;
}

std::uint64_t Metrics::total_violations() const {
    std::uint64_t n = 0;
    for (const auto& [name, count] : invariant_violations) n += count;
    return n;
}

std::string run_id(const RunInfo& info) {
    std::uint64_t h = 0x72756e6964ULL;  // "runid"
    const auto text = [&h](const std::string& s) {
        for (const char c : s) h = hash_combine(h, static_cast<unsigned char>(c));
        h = hash_combine(h, s.size());
    };
    text(info.scenario);
    text(info.preset);
    text(info.policy);
    for (const std::string& o : info.overrides) text(o);
    text(kvcheck_commit());
    for (const std::uint64_t v : {info.seed, info.final_state_hash, info.unseed}) h = hash_combine(h, v);
    char out[17];
    std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
    return out;
}

nlohmann::json report_json(const RunInfo& info, const Metrics& m) {
    nlohmann::json verdicts = nlohmann::json::object();
    for (int v = 0; v < 4; ++v)
        verdicts[std::string(model::verdict_name(static_cast<model::VerdictKind>(v)))] = m.verdicts[v];
    nlohmann::json corruptions = nlohmann::json::array();
    for (const Corruption& c : m.corruption_examples)
        corruptions.push_back({{"request", c.request},
                               {"group", c.group},
                               {"form", c.form},
                               {"start", c.start},
                               {"end", c.end},
                               {"invariant", c.invariant},
                               {"cause", c.cause}});
    nlohmann::json violations = nlohmann::json::object();
    for (const auto& info_item : model::invariant_catalogue()) {
        const auto it = m.invariant_violations.find(std::string(info_item.name));
        violations[std::string(info_item.name)] = it == m.invariant_violations.end() ? 0 : it->second;
    }
    char hash[32];
    std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(info.final_state_hash));
    char unseed[32];
    std::snprintf(unseed, sizeof unseed, "%016llx", static_cast<unsigned long long>(info.unseed));
    nlohmann::json report = {
        {"schema_version", kReportSchemaVersion},
        {"scenario", info.scenario},
        {"preset", info.preset},
        {"policy", info.policy},
        {"seed", info.seed},
        {"requests", m.requests},
        {"lookups", m.lookups},
        {"hits", m.hits},
        {"hit_rate", m.hit_rate()},
        {"post_hit_fallbacks", m.post_hit_fallbacks},
        {"post_hit_fallback_rate", m.fallback_rate()},
        {"verdicts", verdicts},
        {"miss_reasons", m.miss_reasons},
        {"miss_tokens", miss_tokens(m)},
        {"prompt_tokens", m.prompt_tokens},
        {"hit_tokens", m.hit_tokens},
        {"token_hit_rate", share(m.hit_tokens, m.prompt_tokens)},
        {"reused_tokens", m.reused_tokens},
        {"reused_tokens_by_source", by_source(m)},
        {"token_reuse_rate", share(m.reused_tokens, m.prompt_tokens)},
        {"recomputed_tokens", m.recomputed_tokens},
        {"trimmed_tokens", m.trimmed_tokens},
        {"resume_grain_tokens", m.resume_grain_tokens},
        {"computed_tokens", m.computed_tokens},
        {"requests_by_reuse_pct", reuse_buckets(m)},
        {"stale_revalidations", m.stale_revalidations},
        {"admission_refusals", m.admission_refusals},
        {"graph_recaptures", m.recaptures},
        {"offloads", m.offloads},
        {"demotions", m.demotions},
        {"loads", m.loads},
        {"load_failures", m.load_failures},
        {"load_waits_stopped", m.load_waits_stopped},
        {"requests_failed", m.requests_failed},
        {"evictions", by_form(m.evictions)},
        {"evictions_by_cause", by_cause(m)},
        {"evictions_last_copy", by_form(m.evictions_last_copy)},
        {"faults_injected", by_fault(m.faults)},
        {"silent_corruptions", m.silent_corruptions},
        {"corruption_examples", corruptions},
        {"invariant_violations", violations},
        {"first_violations", m.first_violation},
        {"ttft_ms", {{"p50", m.ttft.at(0.5)}, {"p99", m.ttft.at(0.99)}}},
        {"io_wait_ms", {{"p50", m.io_wait.at(0.5)}, {"p99", m.io_wait.at(0.99)}, {"waits", m.io_wait.count()}}},
        {"entry_ages_ms", entry_ages(m)},
        {"memory_bytes", peaks(m)},
        {"series", series_json(m.series)},
        {"events", m.events},
        {"event_bound_hit", m.event_bound_hit},
        {"sim_time_s", static_cast<double>(m.sim_time_ns) / 1e9},
        {"final_state_hash", hash},
        {"unseed", unseed},
        {"warnings", warnings_json(m)},
        {"timeline_untracked_requests", m.timeline_untracked_requests},
        {"run_id", run_id(info)}};
    if (m.sessions) report["sessions"] = {{"turns", m.sessions->turns}, {"waited", m.sessions->waited}};
    if (m.samples_forked) report["samples_forked"] = *m.samples_forked;
    if (!info.overrides.empty())
        report["overrides"] = info.overrides;  // absent without --set: reports stay as they were
    return report;
}

namespace {

// The shortest text that reads back as `value`, as report.json writes its numbers: a stream's
// default six significant digits would give 1.01004e+06 for 1010040.9.
std::string shortest(double value) {
    char text[32];  // room for any double's shortest form
    return std::string(text, std::to_chars(text, text + sizeof text, value).ptr);
}

// A label value as the text format writes it: backslash, double quote and line feed escaped.
std::string label_value(const std::string& text) {
    std::string out;
    for (const char c : text) {
        if (c == '\\' || c == '"') out += '\\';
        if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
    return out;
}

}  // namespace

// vLLM's time_to_first_token_seconds buckets, so that a dashboard's panels carry over.
constexpr std::array<double, 22> kTtftBoundsS{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
                                              1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
// Loads take tens of µs to seconds: a 1-2.5-5 series over that span.
constexpr std::array<double, 15> kIoWaitBoundsS{0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025,
                                                0.005,   0.01,     0.025,   0.05,   0.1,     1.0,    10.0};

std::string prometheus_text(const RunInfo& info, const Metrics& m) {
    std::ostringstream out;
    // Every sample names its run, so that the files of a suite's runs can sit side by side in one
    // textfile collector's folder without two series colliding.
    // The seed and the --set overrides name it too, so that a sweep's runs write distinct series.
    std::string overrides;
    for (const std::string& o : info.overrides) overrides += (overrides.empty() ? "" : " ") + o;
    const std::string policy = "scenario=\"" + label_value(info.scenario) + "\",policy=\"" + label_value(info.policy) +
                               "\",seed=\"" + std::to_string(info.seed) + "\"" +
                               (overrides.empty() ? "" : ",set=\"" + label_value(overrides) + "\"");
    auto counter = [&](const char* name, const char* help, std::uint64_t value) {
        out << "# HELP kvcheck_" << name << " " << help << "\n# TYPE kvcheck_" << name << " counter\n";
        out << "kvcheck_" << name << "{" << policy << "} " << value << "\n";
    };
    auto gauge = [&](const char* name, const char* help, double value) {
        out << "# HELP kvcheck_" << name << " " << help << "\n# TYPE kvcheck_" << name << " gauge\n";
        out << "kvcheck_" << name << "{" << policy << "} " << shortest(value) << "\n";
    };
    // A histogram of times kept in µs; bounds in seconds, each a whole number of µs.
    auto seconds_histogram = [&](const char* name, const char* help, const Percentiles& values, const auto& bounds_s) {
        out << "# HELP kvcheck_" << name << " " << help << "\n# TYPE kvcheck_" << name << " histogram\n";
        for (const double bound : bounds_s)
            out << "kvcheck_" << name << "_bucket{" << policy << ",le=\"" << shortest(bound) << "\"} "
                << values.at_most_us(static_cast<std::uint64_t>(bound * 1e6 + 0.5)) << "\n";
        out << "kvcheck_" << name << "_bucket{" << policy << ",le=\"+Inf\"} " << values.count() << "\n";
        out << "kvcheck_" << name << "_sum{" << policy << "} " << shortest(values.sum_s()) << "\n";
        out << "kvcheck_" << name << "_count{" << policy << "} " << values.count() << "\n";
    };
    counter("lookups_total", "Requests looked up in the prefix cache.", m.lookups);
    counter("hits_total", "Lookups with a prefix hash hit.", m.hits);
    counter("post_hit_fallbacks_total", "Hits that failed validation and fell back to recompute.",
            m.post_hit_fallbacks);
    gauge("hit_rate", "Hits over lookups.", m.hit_rate());
    gauge("post_hit_fallback_rate", "Post-hit fallbacks over hits.", m.fallback_rate());
    counter("prompt_tokens_total", "Prompt tokens of the first lookups.", m.prompt_tokens);
    // vLLM's token-based prefix-cache counters (vllm:prefix_cache_queries, vllm:prefix_cache_hits).
    counter("prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache (first lookups).",
            m.prompt_tokens);
    counter("prefix_cache_hits_total", "Prompt tokens a plain prefix-hash lookup reported cached.", m.hit_tokens);
    gauge("token_hit_rate", "Hit tokens over prompt tokens.", share(m.hit_tokens, m.prompt_tokens));
    gauge("token_reuse_rate", "Reused tokens over prompt tokens.", share(m.reused_tokens, m.prompt_tokens));
    out << "# HELP kvcheck_reused_tokens_total Tokens read from cache, by where they were when the request looked up.\n"
           "# TYPE kvcheck_reused_tokens_total counter\n";
    for (std::size_t k = 0; k < kReuseSources.size(); ++k)
        out << "kvcheck_reused_tokens_total{" << policy << ",source=\"" << kReuseSources[k] << "\"} "
            << m.reused_by_source[k] << "\n";
    counter("recomputed_tokens_total", "Hit tokens recomputed because they were not resumable.", m.recomputed_tokens);
    counter("trimmed_tokens_total", "Recomputed hit tokens cut by the resume grain.", m.trimmed_tokens);
    counter("silent_corruptions_total", "Resumes that read content differing from the ground truth.",
            m.silent_corruptions);
    out << "# HELP kvcheck_verdicts_total Lookup verdicts.\n# TYPE kvcheck_verdicts_total counter\n";
    for (int v = 0; v < 4; ++v)
        out << "kvcheck_verdicts_total{" << policy << ",verdict=\""
            << model::verdict_name(static_cast<model::VerdictKind>(v)) << "\"} " << m.verdicts[v] << "\n";
    out << "# HELP kvcheck_miss_reasons_total Why hits were not resumable, per form and reason.\n"
           "# TYPE kvcheck_miss_reasons_total counter\n";
    for (const auto& [form, reasons] : m.miss_reasons)
        for (const auto& [reason, count] : reasons)
            out << "kvcheck_miss_reasons_total{" << policy << ",form=\"" << form << "\",reason=\"" << reason << "\"} "
                << count << "\n";
    out << "# HELP kvcheck_miss_tokens_total Tokens each form and reason cut from the usable length at first lookups.\n"
           "# TYPE kvcheck_miss_tokens_total counter\n";
    for (const auto& [form, reasons] : miss_tokens(m))
        for (const auto& [reason, tokens] : reasons)
            out << "kvcheck_miss_tokens_total{" << policy << ",form=\"" << form << "\",reason=\"" << reason << "\"} "
                << tokens << "\n";
    out << "# HELP kvcheck_request_reuse_ratio Share of each request's prompt resumed from cache, at its read.\n"
           "# TYPE kvcheck_request_reuse_ratio histogram\n";
    std::uint64_t reads = 0;
    for (std::size_t b = 0; b < kReuseBoundsPct.size(); ++b) {
        reads += m.reads_by_reuse[b];
        out << "kvcheck_request_reuse_ratio_bucket{" << policy << ",le=\""
            << shortest(static_cast<double>(kReuseBoundsPct[b]) / 100) << "\"} " << reads << "\n";
    }
    out << "kvcheck_request_reuse_ratio_bucket{" << policy << ",le=\"+Inf\"} " << reads << "\n";
    out << "kvcheck_request_reuse_ratio_sum{" << policy << "} " << shortest(m.reuse_share_sum) << "\n";
    out << "kvcheck_request_reuse_ratio_count{" << policy << "} " << reads << "\n";
    out << "# HELP kvcheck_evictions_total Evictions per form and cause.\n# TYPE kvcheck_evictions_total counter\n";
    for (const auto& [cause, forms] : by_cause(m))
        for (const auto& [form, count] : forms)
            out << "kvcheck_evictions_total{" << policy << ",form=\"" << form << "\",cause=\"" << cause << "\"} "
                << count << "\n";
    out << "# HELP kvcheck_evictions_last_copy_total Evictions that left no copy of the entry on any tier, per form.\n"
           "# TYPE kvcheck_evictions_last_copy_total counter\n";
    for (const auto& [form, count] : by_form(m.evictions_last_copy))
        out << "kvcheck_evictions_last_copy_total{" << policy << ",form=\"" << form << "\"} " << count << "\n";
    out << "# HELP kvcheck_invariant_violations_total Invariant violations by name.\n"
           "# TYPE kvcheck_invariant_violations_total counter\n";
    // Every catalogued invariant, 0 included, so that an alert on a clean run's series can fire.
    for (const auto& item : model::invariant_catalogue()) {
        const auto it = m.invariant_violations.find(std::string(item.name));
        out << "kvcheck_invariant_violations_total{" << policy << ",invariant=\"" << item.name << "\"} "
            << (it == m.invariant_violations.end() ? 0 : it->second) << "\n";
    }
    out << "# HELP kvcheck_faults_injected_total Faults injected per class.\n# TYPE kvcheck_faults_injected_total "
           "counter\n";
    for (int k = 0; k < model::kFaultClassCount; ++k)
        out << "kvcheck_faults_injected_total{" << policy << ",fault=\""
            << model::fault_name(static_cast<model::FaultClass>(k)) << "\"} " << m.faults[k] << "\n";
    if (m.samples_forked)
        counter("samples_forked_total", "Requests forked after a prefill for a prompt's further sampled answers.",
                *m.samples_forked);
    if (m.sessions) {
        counter("session_turns_total", "Requests that continued an earlier turn of their session.", m.sessions->turns);
        counter("session_waits_total", "Session turns that arrived late: the earlier turn had not finished.",
                m.sessions->waited);
    }
    counter("offloads_total", "Offload copies started (GPU to host/disk).", m.offloads);
    counter("demotions_total", "Host/disk copies moved from host memory to disk to make room.", m.demotions);
    counter("loads_total", "Loads from host/disk that completed, misaligned reloads included.", m.loads);
    counter("load_failures_total", "Loads that failed (F2).", m.load_failures);
    counter("load_waits_stopped_total",
            "Waits for loads that reached compute.max_load_wait_us: the request recomputed the rest.",
            m.load_waits_stopped);
    counter("requests_failed_total", "Requests ended at a failed load (compute.load_failure_policy fail).",
            m.requests_failed);
    counter("stale_revalidations_total",
            "Revalidations that found a segment's epoch or the model version changed (RL3).", m.stale_revalidations);
    counter("admission_refusals_total", "Allocations or loads that did not fit the GPU budget (RL1).",
            m.admission_refusals);
    counter("graph_recaptures_total", "Decode-graph recaptures forced by a moved address (RL4).", m.recaptures);
    counter("io_waits_total", "Waits of a request for its loads.", m.io_wait.count());
    seconds_histogram("io_wait_seconds", "Waits of requests for their loads from host or disk.", m.io_wait,
                      kIoWaitBoundsS);
    // Entry ages on decade buckets, 1 ms to 10,000 s (bounds of DurationHistogram, so exact).
    static constexpr std::array<const char*, 3> kAgeHelp{
        "Time entries stayed on the GPU, from arrival (written or loaded) to eviction or offload, per form.",
        "Time entries sat on the GPU since their last read (or arrival) when they went, per form.",
        "Time from an entry's creation or last read to its next read, per form."};
    for (std::size_t a = 0; a < kAgeNames.size(); ++a) {
        const std::string name = std::string("kvcheck_entry_") + kAgeNames[a] + "_seconds";
        out << "# HELP " << name << " " << kAgeHelp[a] << "\n# TYPE " << name << " histogram\n";
        for (model::Form f : model::kAllForms) {
            const DurationHistogram& h = m.ages[a][static_cast<std::size_t>(f)];
            if (h.count() == 0) continue;
            const std::string labels = policy + ",form=\"" + std::string(model::form_name(f)) + "\"";
            std::uint64_t ns = 1'000'000;
            for (const char* le : {"0.001", "0.01", "0.1", "1", "10", "100", "1000", "10000"}) {
                out << name << "_bucket{" << labels << ",le=\"" << le << "\"} " << h.at_most(ns) << "\n";
                ns *= 10;
            }
            out << name << "_bucket{" << labels << ",le=\"+Inf\"} " << h.count() << "\n";
            out << name << "_sum{" << labels << "} " << shortest(h.sum_ms() / 1000) << "\n";
            out << name << "_count{" << labels << "} " << h.count() << "\n";
        }
    }
    out << "# HELP kvcheck_memory_peak_bytes Peak bytes per form (GPU), state table and tiers.\n"
           "# TYPE kvcheck_memory_peak_bytes gauge\n";
    for (const auto& [form, bytes] : peaks(m))
        out << "kvcheck_memory_peak_bytes{" << policy << ",form=\"" << form << "\"} " << bytes << "\n";
    out << "# HELP kvcheck_warning A run-wide finding (report.json warnings): prefix caching did little, the event "
           "bound was hit, a fault never acted; 1 when raised.\n"
           "# TYPE kvcheck_warning gauge\n";
    for (const RunWarning& w : run_warnings(m))
        out << "kvcheck_warning{" << policy << ",code=\"" << w.code << "\"} 1\n";
    seconds_histogram("time_to_first_token_seconds", "Time to first token.", m.ttft, kTtftBoundsS);
    out << "# HELP kvcheck_run_info The kvcheck that wrote this file; always 1.\n# TYPE kvcheck_run_info gauge\n"
        << "kvcheck_run_info{" << policy << ",version=\"" << kvcheck_version() << "\",commit=\"" << kvcheck_commit()
        << "\",run_id=\"" << run_id(info) << "\"} 1\n";
    return out.str();
}

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

}  // namespace kvcheck::sim
