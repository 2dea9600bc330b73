// `kvcheck bench`: the end-to-end performance figures, all from one process — the Mooncake
// conversation trace replayed under deepseek-v4 with faults (validated and naive), timed
// explorations of the reference and pin/epoch scopes, the state table's bytes per entry and the
// peak RSS.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/run/bench_harness.hpp"
#include "tools/cli/commands.hpp"

namespace kvcheck::cli {

namespace {

struct BenchArgs {
    sim::BenchOptions options;
    bool json = false;
    bool quiet = false;  // no progress lines
};

void print_text(const nlohmann::json& j) {
    const nlohmann::json& r = j["replay"];
    const nlohmann::json& e = j["explorer"];
    const nlohmann::json& pe = j["explorer_pin_epoch"];
    const nlohmann::json& t = j["state_table"];
    std::printf("requests_per_s              %.0f  (%llu requests in %.3f cpu s; best wall %.3f s)\n",
                j["requests_per_s"].get<double>(), static_cast<unsigned long long>(r["requests"].get<std::uint64_t>()),
                r["validated_cpu_s"].get<double>(), r["validated_wall_s"].get<double>());
    std::printf("  first repeat                %.0f  (%llu page faults; the fastest repeat %llu)\n",
                r["first_repeat"]["requests_per_s"].get<double>(),
                static_cast<unsigned long long>(r["first_repeat"]["page_faults"].get<std::uint64_t>()),
                static_cast<unsigned long long>(r["validated_page_faults"].get<std::uint64_t>()));
    std::printf(
        "  of which reading the trace  %.3f cpu s (%.0f requests per cpu s without it); one entry per block: %.0f\n",
        r["trace_read_cpu_s"].get<double>(), r["requests_per_s_without_trace_reading"].get<double>(),
        r["one_entry_per_block"]["requests_per_s"].get<double>());
    std::printf("block_events_per_s          %.0f  (%llu evictions, offloads, loads and failed loads)\n",
                j["block_events_per_s"].get<double>(),
                static_cast<unsigned long long>(r["block_events"].get<std::uint64_t>()));
    std::printf("validated_over_naive        %.3f  (naive best wall %.3f s; cpu ratio %.3f)\n",
                j["validated_over_naive"].get<double>(), r["naive_wall_s"].get<double>(),
                r["validated_over_naive_cpu"].get<double>());
    std::printf("explorer_states_per_s       %.0f  (%llu states in %.2f s, %.0f per cpu s)\n",
                j["explorer_states_per_s"].get<double>(),
                static_cast<unsigned long long>(e["states"].get<std::uint64_t>()), e["wall_s"].get<double>(),
                e["states_per_cpu_s"].get<double>());
    std::printf("  pin-epoch scope             %.0f per cpu s  (%llu states in %.2f cpu s%s)\n",
                pe["states_per_cpu_s"].get<double>(),
                static_cast<unsigned long long>(pe["states"].get<std::uint64_t>()), pe["cpu_s"].get<double>(),
                pe["exhausted"].get<bool>() ? ", exhausted" : "");
    std::printf(
        "state_table_bytes_per_entry %.1f  (Segment %llu B + index %.1f B per entry, %llu entries at the fullest)\n",
        j["state_table_bytes_per_entry"].get<double>(),
        static_cast<unsigned long long>(t["segment_bytes"].get<std::uint64_t>()),
        t["index_bytes_per_entry"].get<double>(),
        static_cast<unsigned long long>(t["index_entries_max"].get<std::uint64_t>()));
    std::printf("peak_rss_bytes              %llu  (%llu after the replays, before the explorer)\n",
                static_cast<unsigned long long>(j["peak_rss_bytes"].get<std::uint64_t>()),
                static_cast<unsigned long long>(r["peak_rss_bytes"].get<std::uint64_t>()));
    if (!r["deterministic"].get<bool>()) std::printf("WARNING: repeats of one replay ended in different states\n");
    for (const auto& [name, goal] : j["targets"].items())
        std::printf("target %-28s %-7s %.3f (target %s %.3f)\n", name.c_str(),
                    goal["met"].get<bool>() ? "met" : "NOT met", goal["value"].get<double>(),
                    goal["at_least"].get<bool>() ? ">=" : "<=", goal["bound"].get<double>());
}

}  // namespace

void register_bench(CLI::App& app, Common& common) {
    auto a = std::make_shared<BenchArgs>();
    auto* cmd = app.add_subcommand(
        "bench", "Measure simulator, validation, explorer and state-table performance (docs/performance.md)");
    cmd->add_option("--trace", a->options.trace,
                    "Mooncake trace to replay (default traces/mooncake/conversation_trace.jsonl)");
    cmd->add_option("--repeats", a->options.repeats, "Replays per policy; the fastest counts (default 3)")
        ->check(CLI::Range(1u, 100u));
    cmd->add_option(
           "--explore-seconds", a->options.explore_seconds,
           "Seconds of exploration of the reference scope (default 3; the pin-epoch scope is explored to the end)")
        ->check(CLI::Range(0.1, 3600.0));
    cmd->add_flag("--json", a->json, "Print the figures as JSON");
    cmd->add_flag("--quiet", a->quiet, "No progress lines");
    auto out = std::make_shared<std::string>();
    cmd->add_option("--out", *out, "Also write the figures (the --json document) to DIR/bench.json");
    cmd->callback([a, out, &common] {
        require_result_file(*out, "bench.json");
        // The seed line also when quiet: it names what the figures are of.
        a->options.note = [quiet = a->quiet](const std::string& line) {
            if (!quiet || line.starts_with("seed=")) std::fprintf(stderr, "%s\n", line.c_str());
        };
        const nlohmann::json j = sim::run_bench(a->options);
        write_result_file(*out, "bench.json", j);
        if (a->json)
            std::cout << j.dump(2) << "\n";
        else
            print_text(j);
        common.exit_code = 0;
    });
}

}  // namespace kvcheck::cli
