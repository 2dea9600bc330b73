// The terminal's view of report.json (docs/metrics.md): `kvcheck run`'s summary and `kvcheck
// compare`'s table.
#include "tools/cli/report_text.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "sim/report/entry_ages.hpp"
#include "sim/report/metrics.hpp"
#include "sim/scenario/expect.hpp"

namespace kvcheck::cli {

namespace {

// A report's miss reasons (`key` miss_reasons) or miss tokens (miss_tokens) as (FORM.REASON,
// count), in the report's (alphabetical) order.
std::vector<std::pair<std::string, std::uint64_t>> miss_counts(const nlohmann::json& report, const char* key) {
    std::vector<std::pair<std::string, std::uint64_t>> out;
    for (const auto& [form, by_reason] : report[key].items())
        for (const auto& [reason, count] : by_reason.items())
            out.emplace_back(form + "." + reason, count.get<std::uint64_t>());
    return out;
}

}  // namespace

void print_summary(const nlohmann::json& j, FILE* to) {
    // Two hit rates, each named for what it divides: vLLM's prefix-cache hit rate counts tokens.
    const auto rate = [&](const char* key) {
        const nlohmann::json* v = sim::report_value(j, key);
        return v != nullptr ? v->get<double>() : 0.0;
    };
    std::fprintf(to,
                 "policy=%s requests=%llu token_hit_rate=%.4f request_hit_rate=%.4f token_reuse_rate=%.4f "
                 "post_hit_fallback_rate=%.4f silent_corruptions=%llu\n",
                 j["policy"].get<std::string>().c_str(),
                 static_cast<unsigned long long>(j["requests"].get<std::uint64_t>()), rate("token_hit_rate"),
                 j["hit_rate"].get<double>(), rate("token_reuse_rate"), j["post_hit_fallback_rate"].get<double>(),
                 static_cast<unsigned long long>(j["silent_corruptions"].get<std::uint64_t>()));
    std::fprintf(to, "verdicts: resumable=%llu io_wait=%llu partial_recompute=%llu full_recompute=%llu\n",
                 static_cast<unsigned long long>(j["verdicts"]["resumable"].get<std::uint64_t>()),
                 static_cast<unsigned long long>(j["verdicts"]["io_wait"].get<std::uint64_t>()),
                 static_cast<unsigned long long>(j["verdicts"]["partial_recompute"].get<std::uint64_t>()),
                 static_cast<unsigned long long>(j["verdicts"]["full_recompute"].get<std::uint64_t>()));
    const auto tokens = [&](const char* key) {
        return static_cast<unsigned long long>(sim::report_value(j, key)->get<std::uint64_t>());
    };
    std::fprintf(
        to,
        "tokens: reused=%llu (gpu=%llu host=%llu disk=%llu) recomputed=%llu trimmed=%llu  ttft_ms p50=%.1f p99=%.1f\n",
        tokens("reused_tokens"), tokens("reused_tokens_by_source.gpu"), tokens("reused_tokens_by_source.host"),
        tokens("reused_tokens_by_source.disk"), tokens("recomputed_tokens"), tokens("trimmed_tokens"),
        j["ttft_ms"]["p50"].get<double>(), j["ttft_ms"]["p99"].get<double>());
    if (const std::uint64_t waits = j["io_wait_ms"]["waits"].get<std::uint64_t>(); waits > 0) {
        const auto count = [&](const char* key) {
            const nlohmann::json* v = sim::report_value(j, key);
            return static_cast<unsigned long long>(v != nullptr ? v->get<std::uint64_t>() : 0);
        };
        std::fprintf(to, "io_wait_ms p50=%.1f p99=%.1f waits=%llu stopped=%llu requests_failed=%llu\n",
                     j["io_wait_ms"]["p50"].get<double>(), j["io_wait_ms"]["p99"].get<double>(),
                     static_cast<unsigned long long>(waits), count("load_waits_stopped"), count("requests_failed"));
    }
    if (const nlohmann::json* ages = sim::report_value(j, "entry_ages_ms")) {
        std::fprintf(to, "entry_ages_ms p50/p99:");
        for (const char* age : sim::kAgeNames)
            std::fprintf(to, " %s=%.1f/%.1f", age, (*ages)[age]["all"]["p50"].get<double>(),
                         (*ages)[age]["all"]["p99"].get<double>());
        std::fprintf(to, "\n");
    }
    for (const char* key : {"miss_reasons", "miss_tokens"}) {
        std::vector<std::pair<std::string, std::uint64_t>> misses = miss_counts(j, key);
        if (misses.empty()) continue;
        std::stable_sort(misses.begin(), misses.end(),
                         [](const auto& a, const auto& b) { return a.second > b.second; });
        std::fprintf(to, "%s:", key);
        for (const auto& [name, count] : misses)
            std::fprintf(to, " %s=%llu", name.c_str(), static_cast<unsigned long long>(count));
        std::fprintf(to, "\n");
    }
    for (const auto& [name, count] : j["invariant_violations"].items())
        if (count.get<std::uint64_t>() > 0)
            std::fprintf(to, "violated %s x%llu\n", name.c_str(),
                         static_cast<unsigned long long>(count.get<std::uint64_t>()));
}

void print_comparison(const std::vector<nlohmann::json>& reports) {
    // Each row: a label and one cell per policy. The label column widens for long miss reasons.
    std::vector<std::pair<std::string, std::vector<std::string>>> rows;
    const std::vector<std::pair<const char*, const char*>> figures = {
        {"token_hit_rate", "token hit rate (vLLM's)"},
        {"hit_rate", "request hit rate"},
        {"token_reuse_rate", "token reuse rate"},
        {"post_hit_fallback_rate", "post-hit fallback rate"},
        {"verdicts.resumable", "verdict resumable"},
        {"verdicts.io_wait", "verdict io_wait"},
        {"verdicts.partial_recompute", "verdict partial_recompute"},
        {"verdicts.full_recompute", "verdict full_recompute"},
        {"silent_corruptions", "silent corruptions"},
        {"reused_tokens", "reused tokens"},
        {"reused_tokens_by_source.gpu", "reused tokens from gpu"},
        {"reused_tokens_by_source.host", "reused tokens from host"},
        {"reused_tokens_by_source.disk", "reused tokens from disk"},
        {"recomputed_tokens", "recomputed tokens"},
        {"trimmed_tokens", "trimmed tokens"},
        {"requests_by_reuse_pct.0", "requests reusing 0 %"},
        {"requests_by_reuse_pct.0-10", "requests reusing 0-10 %"},
        {"requests_by_reuse_pct.10-25", "requests reusing 10-25 %"},
        {"requests_by_reuse_pct.25-50", "requests reusing 25-50 %"},
        {"requests_by_reuse_pct.50-75", "requests reusing 50-75 %"},
        {"requests_by_reuse_pct.75-90", "requests reusing 75-90 %"},
        {"requests_by_reuse_pct.90-100", "requests reusing 90-100 %"},
        {"ttft_ms.p50", "TTFT p50 (ms)"},
        {"ttft_ms.p99", "TTFT p99 (ms)"},
        {"io_wait_ms.p99", "I/O wait p99 (ms)"},
        {"load_waits_stopped", "load waits stopped"},
        {"requests_failed", "requests failed"},
        {"entry_ages_ms.lifetime.all.p50", "entry lifetime p50 (ms)"},
        {"entry_ages_ms.reuse_gap.all.p50", "entry reuse gap p50 (ms)"},
    };
    for (const auto& [key, label] : figures) {
        std::vector<std::string> cells;
        for (const auto& r : reports) {
            const nlohmann::json* v = sim::report_value(r, key);
            char buf[32];
            if (v != nullptr && v->is_number_float()) std::snprintf(buf, sizeof buf, "%.4f", v->get<double>());
            cells.push_back(v == nullptr ? "-" : v->is_number_float() ? buf : v->dump());
        }
        rows.emplace_back(label, std::move(cells));
    }
    std::vector<std::string> violations;
    for (const auto& r : reports) {
        std::uint64_t n = 0;
        for (const auto& [name, count] : r["invariant_violations"].items()) n += count.get<std::uint64_t>();
        violations.push_back(std::to_string(n));
    }
    rows.emplace_back("invariant violations", std::move(violations));
    std::vector<std::string> warnings;
    for (const auto& r : reports) {
        std::string codes;
        for (const auto& w : r["warnings"]) {
            if (!codes.empty()) codes += ',';
            codes += w["code"].get<std::string>();
        }
        warnings.push_back(codes.empty() ? "-" : codes);
    }
    rows.emplace_back("warnings", std::move(warnings));
    // Every miss reason any policy recorded, 0 where another did not; then the tokens each cut.
    for (const auto& [key, label] : {std::pair{"miss_reasons", "miss "}, std::pair{"miss_tokens", "miss tokens "}}) {
        std::map<std::string, std::vector<std::string>> misses;
        for (std::size_t i = 0; i < reports.size(); ++i)
            for (const auto& [name, count] : miss_counts(reports[i], key)) {
                std::vector<std::string>& cells = misses[name];
                cells.resize(reports.size(), "0");
                cells[i] = std::to_string(count);
            }
        for (auto& [name, cells] : misses) rows.emplace_back(label + name, std::move(cells));
    }
    int width = 28;
    for (const auto& row : rows) width = std::max(width, static_cast<int>(row.first.size()));
    std::printf("%-*s", width, "metric");
    for (const auto& r : reports) std::printf(" %16s", r["policy"].get<std::string>().c_str());
    std::printf("\n");
    for (const auto& [label, cells] : rows) {
        std::printf("%-*s", width, label.c_str());
        for (const std::string& cell : cells) std::printf(" %16s", cell.c_str());
        std::printf("\n");
    }
}

}  // namespace kvcheck::cli
