// kvcheck's seeded trace generator, fitted to a real trace's statistics (stats.hpp): arrival gaps,
// output lengths and the three sharing classes with their distances and lengths. docs/traces.md
// describes the model; the same statistics and seed always give the same requests.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/workload/histogram.hpp"
#include "sim/workload/stats.hpp"

namespace kvcheck::sim {

struct SynthOptions {
    std::uint64_t seed = 1;
    std::uint32_t block_tokens = 0;  // block size of the output; 0 keeps the fitted trace's
};

// Parents are looked up among this many most recent requests, which bounds memory for any length.
inline constexpr std::uint64_t kSynthWindowRequests = 1 << 16;

class TraceSynthesizer {
public:
    // `fitted` must describe at least one request.
    TraceSynthesizer(const TraceStats& fitted, const SynthOptions& options);

    // The next request; the stream has no end, the caller decides how many to take.
    void next(TraceRecord& out);

private:
    struct Recent {
        std::vector<std::uint64_t> block_ids;
        std::uint32_t full_blocks = 0;
    };
    const Recent* pick_parent(const HistogramSampler& distance);
    const Recent* pick_continued_parent();
    const Recent* pick_branched_parent(std::uint64_t shared_blocks);
    std::uint32_t continue_accept_ppm(std::uint32_t full_blocks) const;
    // Token counts in the output block size: every count scales by block_tokens / source block.
    std::uint32_t scaled_input(std::uint64_t source_tokens) const;
    std::uint32_t scaled_output(std::uint64_t source_tokens) const;

    Rng rng_;
    std::uint32_t source_block_tokens_;
    std::uint32_t block_tokens_;
    std::uint64_t input_tokens_max_;
    std::uint64_t weight_fresh_;
    std::uint64_t weight_continuing_;
    std::uint64_t weight_branching_;
    LogHistogram full_blocks_;             // fitted: whole blocks of every request
    LogHistogram continue_parent_blocks_;  // fitted: whole blocks of the requests that were continued
    double continue_ratio_max_ = 0;        // the largest continued/all frequency ratio over lengths
    HistogramSampler gap_ns_;
    HistogramSampler output_length_;
    HistogramSampler fresh_input_tokens_;
    HistogramSampler continue_distance_;
    HistogramSampler continue_new_tokens_;
    HistogramSampler branch_distance_;
    HistogramSampler branch_shared_blocks_;
    HistogramSampler branch_new_tokens_;
    std::vector<Recent> recent_;  // ring buffer over the last kSynthWindowRequests requests, grown on demand
    std::vector<std::uint64_t> scratch_ids_;
    std::uint64_t produced_ = 0;
    std::uint64_t clock_ns_ = 0;
    std::uint64_t next_block_id_ = 0;
};

}  // namespace kvcheck::sim
