// report.html from report.json files: a comparison table and, per run, the same charts in the same
// grid rows so columns line up. Inline SVG only; two short inline scripts record page errors and
// mark the charts the browser laid out, which is what the headless-browser test looks for.
#include "sim/report/report_html.hpp"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "sim/io/files.hpp"
#include "sim/io/input_error.hpp"
#include "sim/report/metrics.hpp"
#include "sim/report/page_parts.hpp"
#include "sim/report/report_svg.hpp"
#include "sim/report/run_folders.hpp"

namespace kvcheck::sim {

namespace {

using nlohmann::json;
using svg::Unit;

double number(const json& report, const std::string& dotted) {
    const json* v = report_value(report, dotted);
    return v != nullptr && v->is_number() ? v->get<double>() : 0.0;
}

std::vector<double> values(const json& list) {
    std::vector<double> out;
    for (const json& v : list) out.push_back(v.get<double>());
    return out;
}

double max_of(const std::vector<double>& list) {
    double m = 0;
    for (double v : list) m = std::max(m, v);
    return m;
}

std::string color_of(const std::string& name) {
    static const std::map<std::string, std::string> kColors = {
        {"compressed_kv", "#4e79a7"},     {"uncompressed_tail", "#f28e2b"},
        {"swa_window", "#59a14f"},        {"indexer_state", "#b07aa1"},
        {"linear_state", "#edc948"},      {"on_disk_prefix", "#9c755f"},
        {"state_table", "#bab0ac"},       {"any", "#e15759"},
        {"resumable", "#59a14f"},         {"io_wait", "#edc948"},
        {"partial_recompute", "#f28e2b"}, {"full_recompute", "#e15759"}};
    const auto it = kColors.find(name);
    return it == kColors.end() ? "#76b7b2" : it->second;
}

// Axes shared by every column, so a glance across a row compares like with like.
struct Scales {
    double t_max = 0;
    double gpu_max = 0;
    double offloaded_max = 0;
    double corruptions_max = 0;
    double io_total_us_max = 0;
    double lookups_max = 0;
    double reused_max = 0;
    double miss_max = 0;
    double miss_tokens_max = 0;
    double ttft_max = 0;
    double io_wait_max = 0;
    double violations_max = 0;
    std::vector<std::string> memory_forms;                 // GPU forms non-zero somewhere, in report key order
    std::set<std::pair<std::string, std::string>> misses;  // (form, reason) seen in any column
    std::set<std::string> invariants;
    std::set<std::string> evictions;  // keys of "evictions", "faults_injected" and "memory_bytes" in any column
    std::set<std::pair<std::string, std::string>>
        eviction_causes;  // (form, cause) of "evictions_by_cause" in any column
    std::set<std::string> faults;
    std::set<std::string> memory;
    std::vector<std::string> workload_counts;  // of kWorkloadCounts, those some column's run has
};

// Figures a report has only when its workload forks samples or runs sessions.
constexpr const char* kWorkloadCounts[] = {"samples_forked", "sessions.turns", "sessions.waited"};

Scales scales_of(const std::vector<NamedReport>& reports) {
    Scales s;
    std::set<std::string> forms;
    for (const NamedReport& nr : reports) {
        const json& r = nr.report;
        const json& series = r["series"];
        s.t_max = std::max(s.t_max, max_of(values(series["t_s"])));
        std::vector<double> gpu = values(series["state_table_bytes"]);
        for (const auto& [form, list] : series["gpu_bytes_by_form"].items()) {
            const std::vector<double> bytes = values(list);
            if (form == "on_disk_prefix") {
                s.offloaded_max = std::max(s.offloaded_max, max_of(bytes));
                continue;
            }
            if (max_of(bytes) > 0) forms.insert(form);
            for (std::size_t i = 0; i < gpu.size(); ++i) gpu[i] += bytes[i];
        }
        s.gpu_max = std::max(s.gpu_max, max_of(gpu));
        s.corruptions_max = std::max(s.corruptions_max, max_of(values(series["silent_corruptions"])));
        s.io_total_us_max = std::max(s.io_total_us_max, max_of(values(series["io_wait_us"])));
        s.lookups_max = std::max(s.lookups_max, number(r, "lookups"));
        s.reused_max = std::max(s.reused_max, number(r, "reused_tokens"));
        for (const auto& [form, reasons] : r["miss_reasons"].items())
            for (const auto& [reason, count] : reasons.items()) {
                s.misses.insert({form, reason});
                s.miss_max = std::max(s.miss_max, count.get<double>());
                s.miss_tokens_max = std::max(s.miss_tokens_max, number(r, "miss_tokens." + form + "." + reason));
            }
        s.ttft_max = std::max(s.ttft_max, number(r, "ttft_ms.p99"));
        s.io_wait_max = std::max(s.io_wait_max, number(r, "io_wait_ms.p99"));
        for (const auto& [name, count] : r["evictions"].items()) s.evictions.insert(name);
        if (r.contains("evictions_by_cause"))
            for (const auto& [cause, counts] : r["evictions_by_cause"].items())
                for (const auto& [form, count] : counts.items()) s.eviction_causes.insert({form, cause});
        for (const auto& [name, count] : r["faults_injected"].items()) s.faults.insert(name);
        for (const auto& [name, count] : r["memory_bytes"].items()) s.memory.insert(name);
        for (const char* key : kWorkloadCounts)
            if (report_value(r, key) &&
                std::find(s.workload_counts.begin(), s.workload_counts.end(), key) == s.workload_counts.end())
                s.workload_counts.push_back(key);
        for (const auto& [name, count] : r["invariant_violations"].items()) {
            s.invariants.insert(name);
            s.violations_max = std::max(s.violations_max, count.get<double>());
        }
    }
    for (const auto& [form, list] : reports.front().report["series"]["gpu_bytes_by_form"].items())
        if (forms.count(form) > 0) s.memory_forms.push_back(form);
    for (const std::string& form : forms)  // forms only later columns have
        if (std::find(s.memory_forms.begin(), s.memory_forms.end(), form) == s.memory_forms.end())
            s.memory_forms.push_back(form);
    return s;
}

std::string figure(const std::string& caption, const std::string& body, const std::string& note = "") {
    return "<figure><figcaption>" + svg::escape(caption) + "</figcaption>" + body +
           (note.empty() ? "" : "<p class=\"note\">" + svg::escape(note) + "</p>") + "</figure>";
}

std::uint64_t total_violations(const json& r) {
    std::uint64_t n = 0;
    for (const auto& [name, count] : r["invariant_violations"].items()) n += count.get<std::uint64_t>();
    return n;
}

// The run's verdict, from report.json's "verdict" (a report from before it has none): passed or
// failed by which expectation, its failures, its reproduce line and its counterexample's link.
std::string verdict_lines(const NamedReport& nr, const std::string& page_dir) {
    const json* v = report_value(nr.report, "verdict");
    if (v == nullptr || !v->is_object()) return "<p class=\"meta\">This report predates verdicts.</p>";
    const bool passed = v->value("passed", false);
    std::string out = std::string("<p class=\"verdict ") + (passed ? "pass" : "fail") + "\">" +
                      (passed ? "PASS" : "FAIL") + "<span> judged by " + svg::escape(v->value("judged_by", "")) +
                      "</span></p>";
    if (!passed) {
        out += "<ul class=\"failures\">";
        for (const json& f : v->value("failures", json::array()))
            out += "<li>" + svg::escape(f.get<std::string>()) + "</li>";
        out += "</ul>";
    }
    out += "<p class=\"meta\">reproduce: <code>" + svg::escape(v->value("reproduce", "")) + "</code></p>";
    if (const std::string file = v->value("counterexample", ""); !file.empty()) {
        const std::filesystem::path target = std::filesystem::path(nr.file).parent_path() / file;
        const std::string href =
            page_dir.empty() ? target.string() : target.lexically_relative(page_dir).generic_string();
        out += "<p class=\"meta\">counterexample: <a href=\"" + svg::escape(href) + "\">" + svg::escape(href) +
               "</a>, the run shrunk to a few requests (replay it with kvcheck run)</p>";
    }
    return out;
}

std::string cell_header(const NamedReport& nr, const Scales&, const std::string& page_dir) {
    const json& r = nr.report;
    const auto corruptions = r["silent_corruptions"].get<std::uint64_t>();
    const std::uint64_t violations = total_violations(r);
    const json* verdict = report_value(r, "verdict");
    const bool allowed = verdict != nullptr && verdict->is_object() && verdict->value("passed", false);
    std::string out = "<h3>" + svg::escape(nr.name) + "</h3><p class=\"meta\">scenario " +
                      svg::escape(r["scenario"].get<std::string>()) + " · policy " +
                      svg::escape(r["policy"].get<std::string>()) + " · preset " +
                      svg::escape(r["preset"].get<std::string>().empty() ? "custom" : r["preset"].get<std::string>()) +
                      " · seed " + r["seed"].dump();
    for (const json& o : r.value("overrides", json::array())) out += " · --set " + svg::escape(o.get<std::string>());
    if (r.contains("run_id")) out += " · run " + svg::escape(r["run_id"].get<std::string>());
    out += "</p>" + verdict_lines(nr, page_dir);
    // What the scenario expects of this policy is no alarm: a passing run's corruptions are grey.
    if (corruptions + violations == 0)
        out += "<p class=\"badge ok\">No silent corruption, no invariant violated</p>";
    else
        out += std::string("<p class=\"badge ") + (allowed ? "allowed" : "bad") + "\">" +
               svg::format_value(static_cast<double>(corruptions), Unit::count) + " silent corruptions · " +
               svg::format_value(static_cast<double>(violations), Unit::count) + " invariant violations" +
               (allowed ? ", as " + svg::escape(verdict->value("judged_by", "")) + " expects" : std::string()) + "</p>";
    if (r["event_bound_hit"].get<bool>())
        out += "<p class=\"badge warn\">The event bound was hit: this run stopped early.</p>";
    if (r.contains("warnings"))
        for (const json& w : r["warnings"])
            out += "<p class=\"badge warn\">" + svg::escape(w["message"].get<std::string>()) + "</p>";
    return out;
}

std::string cell_rates(const NamedReport& nr, const Scales& s) {
    const json& series = nr.report["series"];
    const std::vector<double> lookups = values(series["lookups"]), hits = values(series["hits"]);
    const std::vector<double> fallbacks = values(series["post_hit_fallbacks"]);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    svg::Line hit{"request hit rate", "#4e79a7", {}}, fallback{"post-hit fallback rate", "#e15759", {}};
    for (std::size_t i = 0; i < lookups.size(); ++i) {
        hit.y.push_back(lookups[i] > 0 ? hits[i] / lookups[i] : nan);
        fallback.y.push_back(hits[i] > 0 ? fallbacks[i] / hits[i] : nan);
    }
    const std::string final_rates =
        "At the end: request hit rate " + svg::format_value(number(nr.report, "hit_rate"), Unit::ratio) +
        ", post-hit fallback rate " + svg::format_value(number(nr.report, "post_hit_fallback_rate"), Unit::ratio) +
        ". Rates are cumulative since the start of the run.";
    const std::vector<svg::Line> lines = {hit, fallback};
    return figure("Request hit rate and post-hit fallback rate",
                  svg::line_chart("rates over time", values(series["t_s"]), s.t_max, lines, 1, Unit::ratio) +
                      svg::legend(lines),
                  final_rates);
}

std::string cell_verdicts(const NamedReport& nr, const Scales& s) {
    std::vector<svg::Bar> bars;
    for (const char* v : {"resumable", "io_wait", "partial_recompute", "full_recompute"})
        bars.push_back({v, number(nr.report, std::string("verdicts.") + v), color_of(v)});
    return figure("Verdict of each first lookup",
                  svg::bar_chart("verdict mix", bars, s.lookups_max, Unit::count, number(nr.report, "lookups")),
                  "Shares are of " + svg::format_value(number(nr.report, "lookups"), Unit::count) + " lookups.");
}

// A figure newer than report schema 1's first writers: absent from older reports.
std::string predates(const char* caption) {
    return figure(caption, "<p class=\"empty\">Not in this report: it predates the figure.</p>");
}

std::string reuse_per_request(const NamedReport& nr, const Scales& s) {
    const char* caption = "Share of each prompt resumed from the cache";
    const auto it = nr.report.find("requests_by_reuse_pct");
    if (it == nr.report.end()) return predates(caption);
    std::vector<svg::Bar> bars;
    double reads = 0;
    for (const auto& [range, count] : it->items()) {
        const double n = count.get<double>();  // load_report checked it is a count
        bars.push_back({range + " %", n, "#4e79a7"});
        reads += n;
    }
    return figure(caption, svg::bar_chart("reuse per request", bars, s.lookups_max, Unit::count, reads),
                  "Requests by the share of their prompt read from the cache at their read, of " +
                      svg::format_value(reads, Unit::count) + " reads; \"0 %\" resumed nothing.");
}

std::string cell_reuse(const NamedReport& nr, const Scales& s) {
    const char* caption = "Reused tokens by source";
    if (!nr.report.contains("reused_tokens_by_source")) return reuse_per_request(nr, s) + predates(caption);
    std::vector<svg::Bar> sources;
    for (const char* source : kReuseSources)
        sources.push_back({source, number(nr.report, std::string("reused_tokens_by_source.") + source), "#59a14f"});
    return reuse_per_request(nr, s) +
           figure(caption,
                  svg::bar_chart("reused tokens by source", sources, s.reused_max, Unit::count,
                                 number(nr.report, "reused_tokens")),
                  "Where the resumed tokens were when the request looked up: on the GPU, or loaded back from host or "
                  "disk. Token hit rate " +
                      svg::format_value(number(nr.report, "token_hit_rate"), Unit::ratio) + ", token reuse rate " +
                      svg::format_value(number(nr.report, "token_reuse_rate"), Unit::ratio) +
                      " (of the prompt tokens).");
}

std::string cell_misses(const NamedReport& nr, const Scales& s) {
    if (s.misses.empty())
        return figure("Miss reasons by form", "<p class=\"empty\">No lookup in any column had a miss reason.</p>");
    std::vector<svg::Bar> bars;
    const json& misses = nr.report["miss_reasons"];
    for (const auto& [form, reason] : s.misses) {
        const double n = misses.contains(form) ? misses[form].value(reason, 0.0) : 0.0;
        bars.push_back({form + " · " + reason, n, color_of(form)});
    }
    const std::string counts =
        figure("Miss reasons by form", svg::bar_chart("miss reasons", bars, s.miss_max, Unit::count),
               "Why hit ranges were not resumable, counted at every lookup; form \"any\" counts stale epochs found at "
               "revalidation.");
    const char* caption = "Tokens cut by form and reason";
    if (!nr.report.contains("miss_tokens")) return counts + predates(caption);
    bars.clear();
    for (const auto& [form, reason] : s.misses)
        if (form != "any")
            bars.push_back(
                {form + " · " + reason, number(nr.report, "miss_tokens." + form + "." + reason), color_of(form)});
    return counts + figure(caption, svg::bar_chart("miss tokens", bars, s.miss_tokens_max, Unit::count),
                           "Tokens each reason cut from the usable length at the first lookups (miss_tokens); some "
                           "come back by loads.");
}

std::string cell_memory(const NamedReport& nr, const Scales& s) {
    const json& series = nr.report["series"];
    const std::vector<double> t = values(series["t_s"]);
    std::vector<svg::Line> layers;
    for (const std::string& form : s.memory_forms)
        layers.push_back({form, color_of(form),
                          series["gpu_bytes_by_form"].contains(form) ? values(series["gpu_bytes_by_form"][form])
                                                                     : std::vector<double>(t.size(), 0.0)});
    layers.push_back({"state_table", color_of("state_table"), values(series["state_table_bytes"])});
    std::string out =
        figure("GPU memory by form",
               svg::stacked_chart("GPU memory by form", t, s.t_max, layers, svg::nice_ceiling(s.gpu_max, Unit::bytes),
                                  Unit::bytes) +
                   svg::legend(layers),
               "Peak GPU use " + svg::format_value(number(nr.report, "memory_bytes.gpu_total"), Unit::bytes) + ".");
    const std::vector<svg::Line> disk = {{"on_disk_prefix", color_of("on_disk_prefix"),
                                          series["gpu_bytes_by_form"].contains("on_disk_prefix")
                                              ? values(series["gpu_bytes_by_form"]["on_disk_prefix"])
                                              : std::vector<double>(t.size(), 0.0)}};
    return out + figure("Offloaded copies on host and disk",
                        svg::line_chart("offloaded bytes", t, s.t_max, disk,
                                        svg::nice_ceiling(s.offloaded_max, Unit::bytes), Unit::bytes),
                        "series.gpu_bytes_by_form.on_disk_prefix: bytes of segments copied to the host/disk tiers.");
}

std::string cell_latency(const NamedReport& nr, const Scales& s) {
    const json& r = nr.report;
    const std::vector<svg::Bar> ttft = {{"TTFT p50", number(r, "ttft_ms.p50"), "#4e79a7"},
                                        {"TTFT p99", number(r, "ttft_ms.p99"), "#2b4c70"}};
    const std::vector<svg::Bar> io = {{"I/O wait p50", number(r, "io_wait_ms.p50"), "#edc948"},
                                      {"I/O wait p99", number(r, "io_wait_ms.p99"), "#b8972a"}};
    const std::vector<svg::Line> total = {{"I/O wait, all requests", "#b8972a", values(r["series"]["io_wait_us"])}};
    return figure("Time to first token",
                  svg::bar_chart("TTFT percentiles", ttft, svg::nice_ceiling(s.ttft_max, Unit::ms), Unit::ms)) +
           figure("I/O wait of requests that waited",
                  svg::bar_chart("I/O wait percentiles", io, svg::nice_ceiling(s.io_wait_max, Unit::ms), Unit::ms),
                  svg::format_value(number(r, "io_wait_ms.waits"), Unit::count) +
                      " waits. report.json keeps the p50 and p99 of these distributions, not the whole distribution.") +
           figure("I/O wait summed over requests",
                  svg::line_chart("cumulative I/O wait", values(r["series"]["t_s"]), s.t_max, total,
                                  svg::nice_ceiling(s.io_total_us_max, Unit::us), Unit::us, true));
}

std::string cell_corruptions(const NamedReport& nr, const Scales& s) {
    const json& r = nr.report;
    const std::vector<svg::Line> line = {{"silent corruptions", "#e15759", values(r["series"]["silent_corruptions"])}};
    std::string out = s.corruptions_max > 0
                          ? svg::line_chart("silent corruptions over time", values(r["series"]["t_s"]), s.t_max, line,
                                            svg::nice_ceiling(s.corruptions_max, Unit::count), Unit::count, true)
                          : "";
    const json& examples = r["corruption_examples"];
    if (number(r, "silent_corruptions") == 0)
        return figure("Silent corruptions",
                      out + "<p class=\"empty\">None: every resume read ground-truth content.</p>");
    if (examples.empty())  // steps-mode runs count corruptions without explaining them
        return figure("Silent corruptions",
                      out + "<p class=\"empty\">" + svg::format_value(number(r, "silent_corruptions"), Unit::count) +
                          " silent corruptions; this report explains none (see the invariant violations).</p>");
    // Examples that differ only in the request are one row listing every such request.
    std::vector<std::pair<std::string, std::string>> rows;  // (explanation cells, requests)
    for (const json& c : examples) {
        const std::string cells =
            "<td>" + svg::escape(c["group"].get<std::string>() + " · " + c["form"].get<std::string>()) + " [" +
            c["start"].dump() + ", " + c["end"].dump() + ")</td><td>" + svg::escape(c["invariant"].get<std::string>()) +
            "</td><td>" + svg::escape(c["cause"].get<std::string>()) + "</td>";
        const auto same = std::find_if(rows.begin(), rows.end(), [&](const auto& row) { return row.first == cells; });
        if (same == rows.end())
            rows.emplace_back(cells, c["request"].dump());
        else
            same->second += ", " + c["request"].dump();
    }
    out += "<table><tr><th>requests</th><th>group · form [tokens)</th><th>invariant</th><th>cause</th></tr>";
    for (const auto& [cells, requests] : rows) out += "<tr><td>" + requests + "</td>" + cells + "</tr>";
    return figure("Silent corruptions", out + "</table>",
                  svg::format_value(number(r, "silent_corruptions"), Unit::count) +
                      " resumes would have produced wrong output; the first " + std::to_string(examples.size()) +
                      " are explained above.");
}

std::string cell_violations(const NamedReport& nr, const Scales& s) {
    const json& r = nr.report;
    std::vector<svg::Bar> bars;
    for (const std::string& name : s.invariants) {
        const double n = r["invariant_violations"].value(name, 0.0);
        bars.push_back({name, n, n > 0 ? "#e15759" : "#bab0ac"});
    }
    std::string out = svg::bar_chart("invariant violations", bars, s.violations_max, Unit::count);
    if (!r["first_violations"].empty()) {
        out += "<table><tr><th>invariant</th><th>first violation</th></tr>";
        for (const auto& [name, message] : r["first_violations"].items())
            out +=
                "<tr><td>" + svg::escape(name) + "</td><td>" + svg::escape(message.get<std::string>()) + "</td></tr>";
        out += "</table>";
    }
    return figure("Invariant violations by name", out);
}

std::string cell_counters(const NamedReport& nr, const Scales& s) {
    const json& r = nr.report;
    std::string out = "<table class=\"counters\">";
    const auto row = [&](const std::string& label, const std::string& value) {
        out += "<tr><th>" + svg::escape(label) + "</th><td>" + svg::escape(value) + "</td></tr>";
    };
    for (const char* key : {"requests",
                            "lookups",
                            "hits",
                            "post_hit_fallbacks",
                            "prompt_tokens",
                            "hit_tokens",
                            "reused_tokens",
                            "recomputed_tokens",
                            "trimmed_tokens",
                            "resume_grain_tokens",
                            "computed_tokens",
                            "stale_revalidations",
                            "admission_refusals",
                            "graph_recaptures",
                            "offloads",
                            "demotions",
                            "loads",
                            "load_failures",
                            "load_waits_stopped",
                            "requests_failed",
                            "events"})
        row(key, r.contains(key) ? svg::format_value(number(r, key), Unit::count)
                                 : "-");  // "-": a figure newer than the report
    // A run without sessions (or samples) beside one with them took no turns (forked nothing).
    for (const std::string& key : s.workload_counts)
        row(key, svg::format_value(report_value(r, key) ? number(r, key) : 0.0, Unit::count));
    // The union of every column's keys, so the rows line up across columns.
    for (const std::string& name : s.evictions)
        row("evictions " + name, svg::format_value(r["evictions"].value(name, 0.0), Unit::count));
    for (const std::string& name : s.evictions)
        row("evictions " + name + " · last copy",
            r.contains("evictions_last_copy") ? svg::format_value(number(r, "evictions_last_copy." + name), Unit::count)
                                              : "-");
    for (const auto& [form, cause] : s.eviction_causes) {
        const double n = number(r, "evictions_by_cause." + cause + "." + form);
        row("evictions " + form + " · " + cause,
            r.contains("evictions_by_cause") ? svg::format_value(n, Unit::count) : "-");
    }
    for (const std::string& name : s.faults)
        row("faults_injected " + name, svg::format_value(r["faults_injected"].value(name, 0.0), Unit::count));
    for (const std::string& name : s.memory)
        row("peak " + name, svg::format_value(r["memory_bytes"].value(name, 0.0), Unit::bytes));
    for (const char* age : kAgeNames)
        for (const char* p : {"p50", "p99"}) {
            const std::string key = std::string("entry_ages_ms.") + age + ".all." + p;
            row(std::string("entry ") + age + " " + p,
                report_value(r, key) ? svg::format_value(number(r, key), Unit::ms) : "-");
        }
    row("simulated time", svg::format_value(number(r, "sim_time_s") * 1000, Unit::ms));
    row("final_state_hash", r["final_state_hash"].get<std::string>());
    row("unseed", r["unseed"].get<std::string>());
    return figure("Counters", out + "</table>");
}

std::string comparison_table(const std::vector<NamedReport>& reports) {
    struct Row {
        const char* key;
        const char* label;
        Unit unit;
    };
    static const Row kRows[] = {
        {"requests", "requests", Unit::count},
        {"token_hit_rate", "token hit rate (vLLM's)", Unit::ratio},
        {"hit_rate", "request hit rate", Unit::ratio},
        {"post_hit_fallback_rate", "post-hit fallback rate", Unit::ratio},
        {"verdicts.resumable", "verdict resumable", Unit::count},
        {"verdicts.io_wait", "verdict io_wait", Unit::count},
        {"verdicts.partial_recompute", "verdict partial_recompute", Unit::count},
        {"verdicts.full_recompute", "verdict full_recompute", Unit::count},
        {"silent_corruptions", "silent corruptions", Unit::count},
        {"reused_tokens", "reused tokens", Unit::count},
        {"recomputed_tokens", "recomputed tokens", Unit::count},
        {"ttft_ms.p50", "TTFT p50", Unit::ms},
        {"ttft_ms.p99", "TTFT p99", Unit::ms},
        {"io_wait_ms.p50", "I/O wait p50", Unit::ms},
        {"io_wait_ms.p99", "I/O wait p99", Unit::ms},
        {"entry_ages_ms.lifetime.all.p50", "entry lifetime p50", Unit::ms},
        {"entry_ages_ms.reuse_gap.all.p50", "entry reuse gap p50", Unit::ms},
        {"memory_bytes.gpu_total", "peak GPU memory", Unit::bytes},
    };
    std::string out = "<table class=\"comparison\"><tr><th>metric</th>";
    for (const NamedReport& nr : reports) out += "<th>" + svg::escape(nr.name) + "</th>";
    out += "</tr>";
    for (const Row& row : kRows) {
        out += "<tr><td>" + std::string(row.label) + "</td>";
        for (const NamedReport& nr : reports)
            out += "<td>" +
                   (report_value(nr.report, row.key) ? svg::format_value(number(nr.report, row.key), row.unit) : "-") +
                   "</td>";
        out += "</tr>";
    }
    out += "<tr><td>invariant violations</td>";
    for (const NamedReport& nr : reports)
        out += "<td>" + svg::format_value(static_cast<double>(total_violations(nr.report)), Unit::count) + "</td>";
    return out + "</tr></table>";
}

}  // namespace

// The page's verdict, first thing on it: every run passed, or how many failed and which.
std::string page_verdict(const std::vector<NamedReport>& reports) {
    std::vector<std::string> failed;
    std::size_t judged = 0;
    for (const NamedReport& nr : reports) {
        const json* v = report_value(nr.report, "verdict");
        if (v == nullptr || !v->is_object()) continue;
        ++judged;
        if (!v->value("passed", false)) failed.push_back(nr.name);
    }
    if (judged == 0) return "";
    std::string names;
    for (const std::string& n : failed) names += (names.empty() ? "" : ", ") + n;
    const std::string of = std::to_string(judged) + (judged == 1 ? " run" : " runs");
    return failed.empty() ? "<p class=\"verdict pass\">PASS<span> every expectation of the " + of + " held</span></p>"
                          : "<p class=\"verdict fail\">FAIL<span> " + std::to_string(failed.size()) + " of the " + of +
                                " failed: " + svg::escape(names) + "</span></p>";
}

std::string report_html(const std::vector<NamedReport>& reports, const std::string& page_dir) {
    if (reports.empty()) throw InputError("", "", "no reports to render");
    std::set<std::string> scenarios;
    for (const NamedReport& nr : reports) scenarios.insert(nr.report["scenario"].get<std::string>());
    const std::string title = scenarios.size() == 1 ? "kvcheck report: " + *scenarios.begin()
                                                    : "kvcheck report: " + std::to_string(reports.size()) + " runs";
    std::string names;
    for (const NamedReport& nr : reports) names += (names.empty() ? "" : ", ") + nr.name;
    const json* first = report_value(reports.front().report, "verdict");
    const bool has_verdict = first != nullptr && first->is_object();
    const std::string description = has_verdict ? first->value("description", "") : "";
    const std::string made_by = has_verdict ? first->value("kvcheck", "") : "";
    std::string page = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + svg::escape(title) +
                       "</title>\n" + page::kErrorTrap + "\n" + page::kStyle + "\n</head><body>\n<h1>" +
                       svg::escape(title) + "</h1>\n<p class=\"meta\">" + std::to_string(reports.size()) +
                       (reports.size() == 1 ? " run: " : " runs side by side: ") + svg::escape(names) +
                       " · report schema " + std::to_string(kReportSchemaVersion) +
                       (made_by.empty() ? "" : " · " + svg::escape(made_by)) +
                       " · every rate and count below is defined in docs/metrics.md</p>\n" +
                       (description.empty() ? "" : "<p class=\"description\">" + svg::escape(description) + "</p>\n") +
                       page_verdict(reports) + "<pre id=\"page-errors\"></pre>\n";
    if (reports.size() > 1) page += "<h2>Comparison</h2>\n" + comparison_table(reports) + "\n";
    const Scales scales = scales_of(reports);
    using Cell = std::function<std::string(const NamedReport&, const Scales&)>;
    const std::vector<std::pair<std::string, Cell>> rows = {
        {"", [&page_dir](const NamedReport& nr, const Scales& s) { return cell_header(nr, s, page_dir); }},
        {"Hits and post-hit fallbacks", cell_rates},
        {"Verdicts", cell_verdicts},
        {"Reuse per request", cell_reuse},
        {"Misses", cell_misses},
        {"Memory", cell_memory},
        {"Latency", cell_latency},
        {"Silent corruptions", cell_corruptions},
        {"Invariants", cell_violations},
        {"Counters", cell_counters},
    };
    page += "<div class=\"grid\" style=\"--columns:" + std::to_string(reports.size()) + "\">\n";
    for (const auto& [heading, cell] : rows) {
        if (!heading.empty()) page += "<h2>" + svg::escape(heading) + "</h2>\n";
        for (const NamedReport& nr : reports) page += "<div class=\"cell\">" + cell(nr, scales) + "</div>\n";
    }
    return page + "</div>\n" + page::kDrawCheck + "\n</body></html>\n";
}

void write_report_html(const std::string& run_dir, const std::string& out_path) {
    const std::vector<NamedReport> reports = load_run_reports(run_dir);
    require_output_file(out_path);
    std::error_code ec;
    for (const NamedReport& nr : reports)
        if (std::filesystem::equivalent(out_path, nr.file, ec))
            throw InputError(out_path, "",
                             "is " + nr.file + ", a report this page is drawn from; expected another output file");
    const std::string manifest = compare_manifest_path(run_dir);
    if (std::filesystem::equivalent(out_path, manifest, ec))
        throw InputError(out_path, "",
                         "is " + manifest +
                             ", the manifest this page's column order comes from; expected another file");
    write_file_atomic(out_path, report_html(reports, std::filesystem::path(out_path).parent_path().string()));
}

}  // namespace kvcheck::sim
