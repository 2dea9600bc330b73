#include "sim/run/bench_harness.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <numeric>
#include <string>
#include <thread>

#include <malloc.h>
#include <sys/resource.h>

#include <nlohmann/json.hpp>

#include "sim/check/explorer.hpp"
#include "sim/des/engine.hpp"
#include "sim/io/input_error.hpp"
#include "sim/run/bench_scenario.hpp"
#include "sim/run/warm_world.hpp"

namespace kvcheck::sim {

namespace {

// The targets of the "Performance and reliability" issue; docs/performance.md tracks them.
constexpr double kRequestsPerSecondMin = 100'000;
constexpr double kValidatedOverNaiveMax = 1.3;
constexpr double kStateTableBytesPerEntryMax = 64;
// The checker issue's speed target: SPIN's rate on a pin/epoch race model (docs/checker.md).
constexpr double kPinEpochStatesPerSecondMin = 1'200'000;

struct Timing {
    double wall_s = 0;
    double cpu_s = 0;               // this thread's CPU time: what the wall time would be on an idle core
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
    return {std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count(),
            thread_cpu_s() - cpu_start, thread_page_faults() - faults_start};
}

// The fastest of the repeats of one policy's replay, and what the replay did.
struct Replay {
    Timing best{std::numeric_limits<double>::max(), std::numeric_limits<double>::max()};
    Timing first;  // the first repeat: the process had to fetch all its memory fresh
    std::uint64_t requests = 0;
    std::uint64_t events = 0;        // simulator events: arrivals, request steps, I/O completions, faults
    std::uint64_t block_events = 0;  // see block_events() below
    std::uint64_t final_state_hash = 0;
    bool deterministic = true;  // every repeat ended in the same state
};

// Block events: state-table transitions that move one block between tiers or out of the table —
// evictions of every form (rolling tails a slide released included), offloads started, loads
// completed and loads failed. Creations are not counted: Metrics does not record them.
std::uint64_t block_events(const Metrics& m) {
    return std::accumulate(m.evictions.begin(), m.evictions.end(), std::uint64_t{0}) + m.offloads + m.loads +
           m.load_failures;
}

void replay_once(const Scenario& scenario, const std::string& policy, Replay& into) {
    RunOptions options;
    options.policy = policy;
    RunResult result;
    const Timing t = timed([&] { result = run_scenario(scenario, options); });
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
    return {{"value", value},
            {"bound", bound},
            {"at_least", at_least},
            {"met", at_least ? value >= bound : value <= bound}};
}

}  // namespace

nlohmann::json run_bench(const BenchOptions& a) {
    if (!std::filesystem::is_regular_file(a.trace))
        throw InputError(a.trace, "", "trace not found: run tools/fetch-traces first (or pass --trace FILE)");
    const Scenario scenario = bench::bench_scenario(a.trace);
    a.note("seed=" + std::to_string(scenario.seed) + " trace=" + a.trace + " preset=" + scenario.preset +
           " repeats=" + std::to_string(a.repeats));
    // The same validated replay with one state-table entry per block (extent_tokens 0): the
    // model without extents, for comparison.
    Scenario per_block = scenario;
    per_block.extent_tokens = 0;
    Replay validated;
    Replay naive;
    Replay blocks;
    // Alternating the replays exposes each to the same drift in machine load.
    for (std::uint32_t i = 0; i < a.repeats; ++i) {
        a.note("bench: replay " + std::to_string(i + 1) + "/" + std::to_string(a.repeats) +
               " (validated, naive, validated with one entry per block)");
        replay_once(scenario, "validated", validated);
        replay_once(scenario, "naive", naive);
        replay_once(per_block, "validated", blocks);
    }
    // How much of a replay is reading the trace: the same reader alone, fastest of the repeats.
    a.note("bench: reading the trace alone");
    std::uint64_t records = 0;
    Timing read_time{std::numeric_limits<double>::max(), std::numeric_limits<double>::max()};
    for (std::uint32_t i = 0; i < a.repeats; ++i) {
        records = 0;
        const Timing t = timed([&] {
            const std::unique_ptr<TraceReader> reader = TraceReader::open(scenario.trace_path, scenario.trace);
            for (TraceRecord record; reader->next(record);) ++records;
        });
        read_time.wall_s = std::min(read_time.wall_s, t.wall_s);
        read_time.cpu_s = std::min(read_time.cpu_s, t.cpu_s);
    }
    const std::uint64_t replay_peak_rss_bytes = peak_rss_bytes();  // the replays run first
    auto explore_for = [&](const char* scope, double seconds, ExploreReport& report) {
        if (seconds > 0) {
            char text[96];
            std::snprintf(text, sizeof text, "bench: exploring the %s scope for %.1f s", scope, seconds);
            a.note(text);
        } else {
            a.note(std::string("bench: exploring the ") + scope + " scope to the end");
        }
        ExploreOptions explore_options;
        if (seconds > 0) explore_options.max_seconds = seconds;
        explore_options.stop_at_first = false;
        return timed(
            [&] { report = explore(named_scope(scope), model::find_policy("validated")->defenses, explore_options); });
    };
    ExploreReport explored;
    const Timing explore_time = explore_for("reference", a.explore_seconds, explored);
    // SPIN's figure is for a whole run, so the comparable protocol is explored to the end (7.6 M
    // states): a window of its first seconds sees only the early levels, which have more
    // successors per state.
    ExploreReport pin_epoch;
    const Timing pin_epoch_time = explore_for("pin-epoch", 0, pin_epoch);
    const double pin_epoch_rate = rate(pin_epoch.states, pin_epoch_time.cpu_s);
    a.note("bench: model-only replay for the state table");
    const TableFigures table = measure_table(a.trace);

    // Rates are per second of this thread's CPU time ("on one core"): on a shared machine the wall
    // clock also counts the time other processes held the core. The ratio is on wall time, as asked.
    const double requests_per_s = rate(validated.requests, validated.best.cpu_s);
    const double over_naive = validated.best.wall_s / naive.best.wall_s;
    const double index_share = static_cast<double>(table.index_heap_bytes) /
                               static_cast<double>(std::max<std::uint64_t>(table.counts.index_entries_max, 1));
    const double bytes_per_entry = static_cast<double>(sizeof(model::Segment)) + index_share;

    return {
        {"requests_per_s", requests_per_s},
        {"block_events_per_s", rate(validated.block_events, validated.best.cpu_s)},
        {"validated_over_naive", over_naive},
        {"explorer_states_per_s", explored.states_per_s},
        {"state_table_bytes_per_entry", bytes_per_entry},
        {"peak_rss_bytes", peak_rss_bytes()},
        {"replay",
         {{"trace", a.trace},
          {"preset", scenario.preset},
          {"seed", scenario.seed},
          {"repeats", a.repeats},
          {"requests", validated.requests},
          {"sim_events", validated.events},
          {"block_events", validated.block_events},
          {"sim_events_per_s", rate(validated.events, validated.best.cpu_s)},
          {"validated_wall_s", validated.best.wall_s},
          {"validated_cpu_s", validated.best.cpu_s},
          {"naive_wall_s", naive.best.wall_s},
          {"naive_cpu_s", naive.best.cpu_s},
          {"requests_per_wall_s", rate(validated.requests, validated.best.wall_s)},
          {"validated_over_naive_cpu", validated.best.cpu_s / naive.best.cpu_s},
          {"extent_tokens", scenario.extent_tokens},
          {"trace_read_cpu_s", read_time.cpu_s},
          {"trace_records", records},
          {"requests_per_s_without_trace_reading", rate(validated.requests, validated.best.cpu_s - read_time.cpu_s)},
          {"validated_page_faults", validated.best.page_faults},
          {"first_repeat",
           {{"cpu_s", validated.first.cpu_s},
            {"requests_per_s", rate(validated.requests, validated.first.cpu_s)},
            {"page_faults", validated.first.page_faults}}},
          {"one_entry_per_block",
           {{"cpu_s", blocks.best.cpu_s},
            {"requests_per_s", rate(blocks.requests, blocks.best.cpu_s)},
            {"sim_events", blocks.events},
            {"block_events", blocks.block_events}}},
          {"peak_rss_bytes", replay_peak_rss_bytes},
          {"deterministic", validated.deterministic && naive.deterministic}}},
        {"explorer",
         {{"scope", "reference"},
          {"states", explored.states},
          {"transitions", explored.transitions},
          {"wall_s", explore_time.wall_s},
          {"cpu_s", explore_time.cpu_s},
          {"states_per_cpu_s", rate(explored.states, explore_time.cpu_s)},
          {"exhausted", explored.exhausted}}},
        {"explorer_pin_epoch",
         {{"scope", "pin-epoch"},
          {"states", pin_epoch.states},
          {"transitions", pin_epoch.transitions},
          {"wall_s", pin_epoch_time.wall_s},
          {"cpu_s", pin_epoch_time.cpu_s},
          {"states_per_cpu_s", pin_epoch_rate},
          {"exhausted", pin_epoch.exhausted}}},
        {"state_table",
         {{"segment_bytes", sizeof(model::Segment)},
          {"index_bytes_per_entry", index_share},
          {"heap_bytes_per_live_entry",
           static_cast<double>(table.table_heap_bytes) /
               static_cast<double>(std::max<std::uint64_t>(table.counts.live_segments_max, 1))},
          {"live_entries_max", table.counts.live_segments_max},
          {"index_entries_max", table.counts.index_entries_max},
          {"index_heap_bytes", table.index_heap_bytes},
          {"model_only_requests", table.requests},
          {"model_only_steps", table.counts.steps},
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

}  // namespace kvcheck::sim
