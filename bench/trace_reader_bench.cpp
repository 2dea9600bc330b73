// Reading a trace: TraceReader over the Mooncake conversation trace, records only (no statistics,
// no model), so the figure is the reader's own cost per line. KVCHECK_BENCH_TRACE replaces the
// trace; it is read as Mooncake.
#include <cstdlib>
#include <filesystem>
#include <string>

#include <benchmark/benchmark.h>

#include "sim/workload/trace.hpp"

namespace {

std::string trace_path() {
    const char* chosen = std::getenv("KVCHECK_BENCH_TRACE");
    return chosen != nullptr ? chosen : KVCHECK_SOURCE_DIR "/traces/mooncake/conversation_trace.jsonl";
}

// One iteration reads the whole file; an item is one line.
void BM_read_trace(benchmark::State& state) {
    const std::string path = trace_path();
    if (!std::filesystem::exists(path)) {
        state.SkipWithError("the trace is missing (run tools/fetch-traces)");
        return;
    }
    std::uint64_t records = 0;
    std::uint64_t ids = 0;
    for (auto _ : state) {
        const auto reader = kvcheck::sim::TraceReader::open(path, kvcheck::sim::TraceOptions{});
        kvcheck::sim::TraceRecord record;
        while (reader->next(record)) {
            ++records;
            ids += record.block_ids.size();
        }
        benchmark::DoNotOptimize(ids);
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(records));
    state.counters["lines"] = static_cast<double>(records) / static_cast<double>(state.iterations());
}

BENCHMARK(BM_read_trace)->Unit(benchmark::kMillisecond);

}  // namespace
