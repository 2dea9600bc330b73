// One streaming pass over a trace. Blocks are compared by chained keys (a hash of ids 0..i), as the
// model does, so a block only counts as reused when its whole prefix was seen before too.
#include "sim/workload/stats.hpp"

#include <unordered_map>
#include <unordered_set>

#include "sim/workload/sessions.hpp"

namespace kvcheck::sim {

namespace {

constexpr std::uint64_t kChainSeed = 0x7472616365ULL;  // "trace"

// The latest request that held a block key, and how many whole blocks that request had.
struct Holder {
    std::uint64_t request = 0;
    std::uint32_t full_blocks = 0;
};

}  // namespace

TraceStats compute_trace_stats(TraceReader& reader) {
    TraceStats stats;
    // Only looked up, never iterated, so its order cannot reach any output.
    std::unordered_map<std::uint64_t, Holder> latest_holder;
    std::unordered_set<std::uint64_t> ids;  // counted only
    SessionLinker sessions;
    TraceRecord record;
    std::uint64_t previous_ns = 0;
    while (reader.next(record)) {
        const std::uint64_t index = stats.requests;
        if (index == 0) {
            stats.block_tokens = record.block_tokens;
        } else {
            KV_ASSERT(record.arrival_ns >= previous_ns, "readers deliver arrivals in order");
            stats.arrival_gap_ns.add(record.arrival_ns - previous_ns);
        }
        KV_ASSERT_EQ(record.block_tokens, stats.block_tokens, "one block size per trace");
        previous_ns = record.arrival_ns;
        ++stats.requests;
        stats.input_tokens += record.input_tokens;
        stats.output_tokens += record.output_tokens;
        stats.input_length.add(record.input_tokens);
        stats.output_length.add(record.output_tokens);
        if (sessions.link(record)) ++stats.session_turns;

        const Holder self{index, record.input_tokens / record.block_tokens};
        stats.full_blocks.add(self.full_blocks);
        std::uint64_t key = kChainSeed;
        std::uint32_t shared = 0;
        Holder parent;
        for (std::size_t j = 0; j < record.block_ids.size(); ++j) {
            ids.insert(record.block_ids[j]);
            key = hash_combine(key, record.block_ids[j]);
            const auto [it, inserted] = latest_holder.try_emplace(key, self);
            if (inserted) continue;
            ++stats.reused_blocks;
            if (shared == j) {
                ++shared;
                parent = it->second;
            }
            it->second = self;
        }
        stats.block_references += record.block_ids.size();

        const std::uint64_t shared_tokens = static_cast<std::uint64_t>(shared) * record.block_tokens;
        const std::uint64_t new_tokens = record.input_tokens > shared_tokens ? record.input_tokens - shared_tokens : 0;
        SharingStats& sharing = stats.sharing;
        if (shared == 0) {
            ++sharing.fresh;
            sharing.fresh_input_tokens.add(record.input_tokens);
        } else if (shared >= parent.full_blocks) {
            ++sharing.continuing;
            sharing.continue_distance.add(index - parent.request);
            sharing.continue_parent_blocks.add(parent.full_blocks);
            sharing.continue_new_tokens.add(new_tokens);
        } else {
            ++sharing.branching;
            sharing.branch_distance.add(index - parent.request);
            sharing.branch_shared_blocks.add(shared);
            sharing.branch_new_tokens.add(new_tokens);
        }
    }
    stats.unique_prefixes = latest_holder.size();
    stats.unique_ids = ids.size();
    stats.id_counts = reader.id_count_mismatches();
    stats.span_s = static_cast<double>(previous_ns) / 1e9;
    stats.reuse_ratio = stats.block_references == 0
                            ? 0.0
                            : static_cast<double>(stats.reused_blocks) / static_cast<double>(stats.block_references);
    KV_ASSERT_EQ(stats.sharing.fresh + stats.sharing.continuing + stats.sharing.branching, stats.requests,
                 "every request falls in one sharing class");
    return stats;
}

TraceStats compute_trace_stats(const std::string& path, const TraceOptions& options) {
    const std::unique_ptr<TraceReader> reader = TraceReader::open(path, options);
    return compute_trace_stats(*reader);
}

}  // namespace kvcheck::sim
