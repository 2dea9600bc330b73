// `kvcheck bench`: the end-to-end performance figures, all from one process — the Mooncake
// conversation trace replayed under deepseek-v4 with faults (validated and naive), timed
// explorations of the reference and pin/epoch scopes, the state table's bytes per entry and the
// peak RSS.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <numeric>
#include <string>
#include <thread>

#include <malloc.h>
#include <sys/resource.h>

#include <nlohmann/json.hpp>

#include "bench/bench_scenario.hpp"
#include "bench/warm_world.hpp"
#include "sim/check/explorer.hpp"
#include "sim/engine.hpp"
#include "tools/cli/commands.hpp"

namespace kvcheck::cli {

namespace {

struct BenchArgs {
    std::string trace = "traces/mooncake/conversation_trace.jsonl";
    std::uint32_t repeats = 3;
    double explore_seconds = 3;
    bool json = false;
    bool quiet = false;  // no progress lines
};

// The targets of the "Performance and reliability" issue; docs/performance.md tracks them.
constexpr double kRequestsPerSecondMin = 100'000;
constexpr double kValidatedOverNaiveMax = 1.3;
constexpr double kStateTableBytesPerEntryMax = 64;
// The checker issue's speed target: SPIN's rate on a pin/epoch race model (docs/checker.md).
constexpr double kPinEpochStatesPerSecondMin = 1'200'000;

struct Timing {
    double wall_s = 0;
    double cpu_s = 0;  // this thread's CPU time: what the wall time would be on an idle core
    std::uint64_t page_faults = 0;  // minor faults of this thread: fresh memory touched
};

std::uint64_t thread_page_faults() {
    rusage usage{};
    getrusage(RUSAGE_THREAD, &usage);
    return static_cast<std::uint64_t>(usage.ru_minflt);
}

double thread_cpu_s() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

template <typename Work>
Timing timed(Work&& work) {
    const auto wall_start = std::chrono::steady_clock::now();
    const double cpu_start = thread_cpu_s();
    const std::uint64_t faults_start = thread_page_faults();
    work();
    return {std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count(), thread_cpu_s() - cpu_start,
            thread_page_faults() - faults_start};
}


// The fastest of the repeats of one policy's replay, and what the replay did.
struct Replay {
    Timing best{std::numeric_limits<double>::max(), std::numeric_limits<double>::max()};
    Timing first;                    // the first repeat: the process had to fetch all its memory fresh
    std::uint64_t requests = 0;
    std::uint64_t events = 0;        // simulator events: arrivals, request steps, I/O completions, faults
    std::uint64_t block_events = 0;  // see block_events() below
    std::uint64_t final_state_hash = 0;
    bool deterministic = true;       // every repeat ended in the same state
};

// Block events: state-table transitions that move one block between tiers or out of the table —
// evictions of every form (rolling tails a slide released included), offloads started, loads
// completed and loads failed. Creations are not counted: sim::Metrics does not record them.
std::uint64_t block_events(const sim::Metrics& m) {
    return std::accumulate(m.evictions.begin(), m.evictions.end(), std::uint64_t{0}) + m.offloads + m.loads + m.load_failures;
}

void replay_once(const sim::Scenario& scenario, const std::string& policy, Replay& into) {
    sim::RunOptions options;
    options.policy = policy;
    sim::RunResult result;
    const Timing t = timed([&] { result = sim::run_scenario(scenario, options); });
    if (into.requests == 0) into.first = t;
    if (t.cpu_s < into.best.cpu_s) into.best.page_faults = t.page_faults;
    into.best.wall_s = std::min(into.best.wall_s, t.wall_s);
    into.best.cpu_s = std::min(into.best.cpu_s, t.cpu_s);
    if (into.requests > 0 && into.final_state_hash != result.info.final_state_hash) into.deterministic = false;
    into.requests = result.metrics.requests;
    into.events = result.metrics.events;
    into.block_events = block_events(result.metrics);
    into.final_state_hash = result.info.final_state_hash;
}

// The state table's cost per entry at its fullest point of a model-only replay (no offload, so
// every entry is GPU-resident): sizeof(Segment) plus the prefix index's heap bytes per index entry.
// The index never shrinks, so its final size is its size at that point; it is measured as what a
// copy of it allocates.
struct TableFigures {
    Timing replay;
    std::uint64_t requests = 0;
    bench::ReplayCounts counts;
    std::uint64_t index_heap_bytes = 0;
    std::uint64_t table_heap_bytes = 0;  // segment rows (capacity), free-id list and index together
};

std::uint64_t heap_in_use() {
    const struct mallinfo2 info = mallinfo2();
    return info.uordblks + info.hblkhd;
}

TableFigures measure_table(const std::string& trace) {
    TableFigures f;
    std::unique_ptr<bench::WarmWorld> warm;
    f.replay = timed([&] {
        warm = std::make_unique<bench::WarmWorld>(
            bench::warm_world(trace, "deepseek-v4", model::find_policy("validated")->defenses, 6ULL << 30, 0, 0));
    });
    const model::World& w = warm->world;
    const std::uint64_t before = heap_in_use();
    const model::FlatIndex copy = w.index;
    f.index_heap_bytes = heap_in_use() - before;
    KV_ASSERT_EQ(copy.size(), w.index.size(), "a copied index holds the same entries");
    f.requests = warm->replayed;
    f.counts = warm->counts;
    f.table_heap_bytes = w.segments.capacity() * sizeof(model::Segment) +
                         w.free_segment_ids.capacity() * sizeof(std::uint32_t) + f.index_heap_bytes;
    return f;
}

std::string cpu_model() {
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("model name", 0) != 0) continue;
        const auto colon = line.find(':');
        return colon == std::string::npos ? line : line.substr(line.find_first_not_of(" \t", colon + 1));
    }
    return "unknown";
}

std::uint64_t peak_rss_bytes() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<std::uint64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
}

double rate(std::uint64_t count, double seconds) { return static_cast<double>(count) / std::max(seconds, 1e-9); }

nlohmann::json target(double value, double bound, bool at_least) {
    return {{"value", value}, {"bound", bound}, {"at_least", at_least}, {"met", at_least ? value >= bound : value <= bound}};
}

nlohmann::json run_bench(const BenchArgs& a) {
    if (!std::filesystem::is_regular_file(a.trace))
        throw sim::InputError(a.trace, "", "trace not found: run tools/fetch-traces first (or pass --trace FILE)");
    const sim::Scenario scenario = bench::bench_scenario(a.trace);
    std::fprintf(stderr, "seed=%llu trace=%s preset=%s repeats=%u\n", static_cast<unsigned long long>(scenario.seed),
                 a.trace.c_str(), scenario.preset.c_str(), a.repeats);
    // The same validated replay with one state-table entry per block (extent_tokens 0): the
    // model without extents, for comparison.
    sim::Scenario per_block = scenario;
    per_block.extent_tokens = 0;
    Replay validated;
    Replay naive;
    Replay blocks;
    // Alternating the replays exposes each to the same drift in machine load.
    for (std::uint32_t i = 0; i < a.repeats; ++i) {
        if (!a.quiet) std::fprintf(stderr, "bench: replay %u/%u (validated, naive, validated with one entry per block)\n", i + 1, a.repeats);
        replay_once(scenario, "validated", validated);
        replay_once(scenario, "naive", naive);
        replay_once(per_block, "validated", blocks);
    }
    // How much of a replay is reading the trace: the same reader alone, fastest of the repeats.
    if (!a.quiet) std::fprintf(stderr, "bench: reading the trace alone\n");
    std::uint64_t records = 0;
    Timing read_time{std::numeric_limits<double>::max(), std::numeric_limits<double>::max()};
    for (std::uint32_t i = 0; i < a.repeats; ++i) {
        records = 0;
        const Timing t = timed([&] {
            const std::unique_ptr<sim::TraceReader> reader = sim::TraceReader::open(scenario.trace_path, scenario.trace);
            for (sim::TraceRecord record; reader->next(record);) ++records;
        });
        read_time.wall_s = std::min(read_time.wall_s, t.wall_s);
        read_time.cpu_s = std::min(read_time.cpu_s, t.cpu_s);
    }
    const std::uint64_t replay_peak_rss_bytes = peak_rss_bytes();  // the replays run first
    auto explore_for = [&](const char* scope, double seconds, sim::ExploreReport& report) {
        if (!a.quiet && seconds > 0) std::fprintf(stderr, "bench: exploring the %s scope for %.1f s\n", scope, seconds);
        if (!a.quiet && seconds <= 0) std::fprintf(stderr, "bench: exploring the %s scope to the end\n", scope);
        sim::ExploreOptions explore_options;
        if (seconds > 0) explore_options.max_seconds = seconds;
        explore_options.stop_at_first = false;
        return timed([&] { report = sim::explore(sim::named_scope(scope), model::find_policy("validated")->defenses, explore_options); });
    };
    sim::ExploreReport explored;
    const Timing explore_time = explore_for("reference", a.explore_seconds, explored);
    // SPIN's figure is for a whole run, so the comparable protocol is explored to the end (7.6 M
    // states): a window of its first seconds sees only the early levels, which have more
    // successors per state.
    sim::ExploreReport pin_epoch;
    const Timing pin_epoch_time = explore_for("pin-epoch", 0, pin_epoch);
    const double pin_epoch_rate = rate(pin_epoch.states, pin_epoch_time.cpu_s);
    if (!a.quiet) std::fprintf(stderr, "bench: model-only replay for the state table\n");
    const TableFigures table = measure_table(a.trace);

    // Rates are per second of this thread's CPU time ("on one core"): on a shared machine the wall
    // clock also counts the time other processes held the core. The ratio is on wall time, as asked.
    const double requests_per_s = rate(validated.requests, validated.best.cpu_s);
    const double over_naive = validated.best.wall_s / naive.best.wall_s;
    const double index_share = static_cast<double>(table.index_heap_bytes) / static_cast<double>(std::max<std::uint64_t>(table.counts.index_entries_max, 1));
    const double bytes_per_entry = static_cast<double>(sizeof(model::Segment)) + index_share;

    return {
        {"requests_per_s", requests_per_s},
        {"block_events_per_s", rate(validated.block_events, validated.best.cpu_s)},
        {"validated_over_naive", over_naive},
        {"explorer_states_per_s", explored.states_per_s},
        {"state_table_bytes_per_entry", bytes_per_entry},
        {"peak_rss_bytes", peak_rss_bytes()},
        {"replay",
         {{"trace", a.trace}, {"preset", scenario.preset}, {"seed", scenario.seed}, {"repeats", a.repeats},
          {"requests", validated.requests}, {"sim_events", validated.events}, {"block_events", validated.block_events},
          {"sim_events_per_s", rate(validated.events, validated.best.cpu_s)},
          {"validated_wall_s", validated.best.wall_s}, {"validated_cpu_s", validated.best.cpu_s},
          {"naive_wall_s", naive.best.wall_s}, {"naive_cpu_s", naive.best.cpu_s},
          {"requests_per_wall_s", rate(validated.requests, validated.best.wall_s)},
          {"validated_over_naive_cpu", validated.best.cpu_s / naive.best.cpu_s},
          {"extent_tokens", scenario.extent_tokens},
          {"trace_read_cpu_s", read_time.cpu_s}, {"trace_records", records},
          {"requests_per_s_without_trace_reading", rate(validated.requests, validated.best.cpu_s - read_time.cpu_s)},
          {"validated_page_faults", validated.best.page_faults},
          {"first_repeat", {{"cpu_s", validated.first.cpu_s}, {"requests_per_s", rate(validated.requests, validated.first.cpu_s)},
                            {"page_faults", validated.first.page_faults}}},
          {"one_entry_per_block", {{"cpu_s", blocks.best.cpu_s}, {"requests_per_s", rate(blocks.requests, blocks.best.cpu_s)},
                                   {"sim_events", blocks.events}, {"block_events", blocks.block_events}}},
          {"peak_rss_bytes", replay_peak_rss_bytes}, {"deterministic", validated.deterministic && naive.deterministic}}},
        {"explorer",
         {{"scope", "reference"}, {"states", explored.states}, {"transitions", explored.transitions},
          {"wall_s", explore_time.wall_s}, {"cpu_s", explore_time.cpu_s},
          {"states_per_cpu_s", rate(explored.states, explore_time.cpu_s)}, {"exhausted", explored.exhausted}}},
        {"explorer_pin_epoch",
         {{"scope", "pin-epoch"}, {"states", pin_epoch.states}, {"transitions", pin_epoch.transitions},
          {"wall_s", pin_epoch_time.wall_s}, {"cpu_s", pin_epoch_time.cpu_s},
          {"states_per_cpu_s", pin_epoch_rate}, {"exhausted", pin_epoch.exhausted}}},
        {"state_table",
         {{"segment_bytes", sizeof(model::Segment)}, {"index_bytes_per_entry", index_share},
          {"heap_bytes_per_live_entry", static_cast<double>(table.table_heap_bytes) / static_cast<double>(std::max<std::uint64_t>(table.counts.live_segments_max, 1))},
          {"live_entries_max", table.counts.live_segments_max}, {"index_entries_max", table.counts.index_entries_max},
          {"index_heap_bytes", table.index_heap_bytes},
          {"model_only_requests", table.requests}, {"model_only_steps", table.counts.steps},
          {"model_only_requests_per_s", rate(table.requests, table.replay.wall_s)},
          {"model_only_requests_per_cpu_s", rate(table.requests, table.replay.cpu_s)}}},
        {"targets",
         {{"requests_per_s", target(requests_per_s, kRequestsPerSecondMin, true)},
          {"validated_over_naive", target(over_naive, kValidatedOverNaiveMax, false)},
          {"state_table_bytes_per_entry", target(bytes_per_entry, kStateTableBytesPerEntryMax, false)},
          {"pin_epoch_states_per_cpu_s", target(pin_epoch_rate, kPinEpochStatesPerSecondMin, true)}}},
        {"machine", {{"cpus", std::thread::hardware_concurrency()}, {"cpu_model", cpu_model()}}},
    };
}

void print_text(const nlohmann::json& j) {
    const nlohmann::json& r = j["replay"];
    const nlohmann::json& e = j["explorer"];
    const nlohmann::json& pe = j["explorer_pin_epoch"];
    const nlohmann::json& t = j["state_table"];
    std::printf("requests_per_s              %.0f  (%llu requests in %.3f cpu s; best wall %.3f s)\n", j["requests_per_s"].get<double>(),
                static_cast<unsigned long long>(r["requests"].get<std::uint64_t>()), r["validated_cpu_s"].get<double>(),
                r["validated_wall_s"].get<double>());
    std::printf("  first repeat                %.0f  (%llu page faults; the fastest repeat %llu)\n",
                r["first_repeat"]["requests_per_s"].get<double>(),
                static_cast<unsigned long long>(r["first_repeat"]["page_faults"].get<std::uint64_t>()),
                static_cast<unsigned long long>(r["validated_page_faults"].get<std::uint64_t>()));
    std::printf("  of which reading the trace  %.3f cpu s (%.0f requests per cpu s without it); one entry per block: %.0f\n",
                r["trace_read_cpu_s"].get<double>(), r["requests_per_s_without_trace_reading"].get<double>(),
                r["one_entry_per_block"]["requests_per_s"].get<double>());
    std::printf("block_events_per_s          %.0f  (%llu evictions, offloads, loads and failed loads)\n", j["block_events_per_s"].get<double>(),
                static_cast<unsigned long long>(r["block_events"].get<std::uint64_t>()));
    std::printf("validated_over_naive        %.3f  (naive best wall %.3f s; cpu ratio %.3f)\n", j["validated_over_naive"].get<double>(),
                r["naive_wall_s"].get<double>(), r["validated_over_naive_cpu"].get<double>());
    std::printf("explorer_states_per_s       %.0f  (%llu states in %.2f s, %.0f per cpu s)\n", j["explorer_states_per_s"].get<double>(),
                static_cast<unsigned long long>(e["states"].get<std::uint64_t>()), e["wall_s"].get<double>(), e["states_per_cpu_s"].get<double>());
    std::printf("  pin-epoch scope             %.0f per cpu s  (%llu states in %.2f cpu s%s)\n", pe["states_per_cpu_s"].get<double>(),
                static_cast<unsigned long long>(pe["states"].get<std::uint64_t>()), pe["cpu_s"].get<double>(),
                pe["exhausted"].get<bool>() ? ", exhausted" : "");
    std::printf("state_table_bytes_per_entry %.1f  (Segment %llu B + index %.1f B per entry, %llu entries at the fullest)\n",
                j["state_table_bytes_per_entry"].get<double>(), static_cast<unsigned long long>(t["segment_bytes"].get<std::uint64_t>()),
                t["index_bytes_per_entry"].get<double>(), static_cast<unsigned long long>(t["index_entries_max"].get<std::uint64_t>()));
    std::printf("peak_rss_bytes              %llu  (%llu after the replays, before the explorer)\n",
                static_cast<unsigned long long>(j["peak_rss_bytes"].get<std::uint64_t>()),
                static_cast<unsigned long long>(r["peak_rss_bytes"].get<std::uint64_t>()));
    if (!r["deterministic"].get<bool>()) std::printf("WARNING: repeats of one replay ended in different states\n");
    for (const auto& [name, goal] : j["targets"].items())
        std::printf("target %-28s %-7s %.3f (target %s %.3f)\n", name.c_str(), goal["met"].get<bool>() ? "met" : "NOT met", goal["value"].get<double>(),
                    goal["at_least"].get<bool>() ? ">=" : "<=", goal["bound"].get<double>());
}

}  // namespace

void register_bench(CLI::App& app, Common& common) {
    auto a = std::make_shared<BenchArgs>();
    auto* cmd = app.add_subcommand("bench", "Measure simulator, validation, explorer and state-table performance (docs/performance.md)");
    cmd->add_option("--trace", a->trace, "Mooncake trace to replay (default traces/mooncake/conversation_trace.jsonl)");
    cmd->add_option("--repeats", a->repeats, "Replays per policy; the fastest counts (default 3)")->check(CLI::Range(1u, 100u));
    cmd->add_option("--explore-seconds", a->explore_seconds, "Seconds of exploration of the reference scope (default 3; the pin-epoch scope is explored to the end)")
        ->check(CLI::Range(0.1, 3600.0));
    cmd->add_flag("--json", a->json, "Print the figures as JSON");
    cmd->add_flag("--quiet", a->quiet, "No progress lines");
    auto out = std::make_shared<std::string>();
    cmd->add_option("--out", *out, "Also write the figures (the --json document) to DIR/bench.json");
    cmd->callback([a, out, &common] {
        require_result_file(*out, "bench.json");
        const nlohmann::json j = run_bench(*a);
        write_result_file(*out, "bench.json", j);
        if (a->json) std::cout << j.dump(2) << "\n";
        else print_text(j);
        common.exit_code = 0;
    });
}

}  // namespace kvcheck::cli
