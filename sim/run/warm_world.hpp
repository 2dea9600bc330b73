// A warm World for measurements: trace requests replayed one after another through the request
// lifecycle (no clock, no I/O, no faults). Shared by the Google Benchmark programs and `kvcheck bench`.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/core.hpp"
#include "model/steps.hpp"
#include "sim/workload/trace.hpp"

namespace kvcheck::bench {

// The request spec the engine builds for a trace record (sim/des/engine.cpp, arrive()).
inline std::shared_ptr<const model::RequestSpec> spec_of(const sim::TraceRecord& record, std::uint32_t uid) {
    return std::make_shared<model::RequestSpec>(model::make_request_spec(uid, record.block_ids, record.block_tokens,
                                                                         record.input_tokens, record.output_tokens));
}

// What a replay did: model steps applied, and the state table's fullest point after any step.
struct ReplayCounts {
    std::uint64_t steps = 0;
    std::uint64_t live_segments_max = 0;
    std::uint64_t index_entries_max = 0;
};

// Takes request r from arrival to finish and frees its slot, adding to `counts`.
// Without offloads no segment is ever on disk, so a lookup never waits for I/O.
inline void run_to_completion(model::World& world, std::uint32_t r, ReplayCounts& counts) {
    using model::StepKind;
    constexpr StepKind kLifecycle[] = {StepKind::lookup, StepKind::pin,    StepKind::revalidate, StepKind::allocate,
                                       StepKind::read,   StepKind::commit, StepKind::decode,     StepKind::finish};
    // A revalidation may send the request back to lookup, and lookups are bounded by max_lookups.
    const std::uint64_t steps_max = std::size(kLifecycle) * (std::uint64_t{world.limits.max_lookups} + 2);
    std::uint64_t steps = 0;
    while (world.requests[r].phase != model::Phase::done) {
        KV_ASSERT(steps < steps_max, "request " + std::to_string(r) + " did not finish within the lifecycle bound");
        bool moved = false;
        for (StepKind kind : kLifecycle) {
            const std::uint32_t arg = kind == StepKind::decode ? world.requests[r].spec->output_tokens : 0;
            const model::Step step{kind, r, arg};
            if (!model::enabled(world, step)) continue;
            model::apply(world, step);
            counts.live_segments_max = std::max<std::uint64_t>(counts.live_segments_max, world.live_segments);
            counts.index_entries_max = std::max<std::uint64_t>(counts.index_entries_max, world.index.size());
            moved = true;
            break;
        }
        KV_ASSERT(moved, "request " + std::to_string(r) + " is stuck in phase " +
                             std::string(model::phase_name(world.requests[r].phase)));
        ++steps;
    }
    counts.steps += steps;
    world.release_request(r);
}

struct WarmWorld {
    model::World world;
    std::vector<std::uint32_t> probes;  // requests added after warm-up, not yet looked up
    ReplayCounts counts;                // of the warm-up
    std::uint64_t replayed = 0;         // requests replayed during warm-up
};

// Replays up to `warm_requests` requests of the trace (0: all of them), then adds up to
// `probe_requests` more as arrived requests for lookups to be measured on.
inline WarmWorld warm_world(const std::string& trace_path, const std::string& preset, const model::Defenses& defenses,
                            std::uint64_t gpu_budget_bytes, std::uint64_t warm_requests, std::uint64_t probe_requests) {
    const model::ModelConfig* config = model::find_preset(preset);
    KV_ASSERT(config != nullptr, "unknown preset " + preset);
    model::Limits limits;
    limits.gpu_budget_bytes = gpu_budget_bytes;
    WarmWorld warm{
        model::World(std::make_shared<model::ModelConfig>(*config), defenses, limits, model::Rollout::cross_request),
        {},
        {},
        0};
    sim::TraceOptions options;
    options.format = sim::guess_trace_format(trace_path);
    const auto reader = sim::TraceReader::open(trace_path, options);
    sim::TraceRecord record;
    std::uint32_t uid = 0;
    while ((warm_requests == 0 || warm.replayed < warm_requests) && reader->next(record)) {
        const std::uint32_t r = warm.world.add_request(spec_of(record, uid++));
        run_to_completion(warm.world, r, warm.counts);
        ++warm.replayed;
    }
    while (warm.probes.size() < probe_requests && reader->next(record))
        warm.probes.push_back(warm.world.add_request(spec_of(record, uid++)));
    return warm;
}

}  // namespace kvcheck::bench
