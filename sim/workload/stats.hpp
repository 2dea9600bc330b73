// Trace statistics computed in one streaming pass: totals, reuse, and the arrival, length and
// prefix-sharing distributions that `kvcheck trace synth` fits its generator to.
#pragma once

#include <cstdint>
#include <string>

#include "sim/workload/histogram.hpp"
#include "sim/workload/trace.hpp"

namespace kvcheck::sim {

// How each request relates to the requests before it. A request's shared prefix is its leading
// blocks whose chained keys (ids 0..i) appeared before; its parent is the latest earlier request
// holding the last shared block. docs/traces.md explains the three classes.
struct SharingStats {
    std::uint64_t fresh = 0;       // shares no block with any earlier request
    std::uint64_t continuing = 0;  // reuses every whole block of its parent: the next turn of a conversation
    std::uint64_t branching = 0;   // reuses a shorter prefix of its parent, e.g. only a system prompt
    LogHistogram fresh_input_tokens;
    LogHistogram continue_distance;       // requests from the parent to this one
    LogHistogram continue_parent_blocks;  // whole blocks of the parent, i.e. the blocks reused
    LogHistogram continue_new_tokens;     // input tokens after the reused blocks
    LogHistogram branch_distance;
    LogHistogram branch_shared_blocks;
    LogHistogram branch_new_tokens;
};

struct TraceStats {
    std::uint64_t requests = 0;
    double span_s = 0;  // arrival of the last request; the first arrives at 0
    std::uint64_t input_tokens = 0;
    std::uint64_t output_tokens = 0;
    std::uint64_t block_references = 0;  // sum over requests of their block count
    std::uint64_t unique_prefixes = 0;   // distinct chained block keys: ids 0..i of a request, for every i
    std::uint64_t unique_ids = 0;        // distinct hash ids as the trace writes them
    std::uint64_t reused_blocks = 0;     // references to a key seen in an earlier request
    double reuse_ratio = 0;              // reused_blocks / block_references
    std::uint32_t block_tokens = 0;
    LogHistogram arrival_gap_ns;  // between consecutive requests
    LogHistogram input_length;
    LogHistogram output_length;
    LogHistogram full_blocks;  // whole blocks per request (input_tokens / block_tokens)
    SharingStats sharing;
    std::uint64_t session_turns = 0;  // requests workload.sessions replays as turns (SessionLinker)
    IdCountMismatches id_counts;      // lines whose hash_ids count disagreed with input_length
};

// Reads the reader to its end (or its limit). Memory grows with the number of distinct blocks only.
TraceStats compute_trace_stats(TraceReader& reader);
TraceStats compute_trace_stats(const std::string& path, const TraceOptions& options);

}  // namespace kvcheck::sim
