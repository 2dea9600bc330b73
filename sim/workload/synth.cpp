// The fitted generator. Each request draws a gap, a sharing class (fresh, continuing, branching)
// with the fitted frequencies, a parent at a fitted distance, and its new tokens; ids after the
// shared prefix are fresh, so the output is prefix-chained exactly like a Mooncake trace.
#include "sim/workload/synth.hpp"

#include <algorithm>
#include <string>

#include "sim/io/input_error.hpp"

namespace kvcheck::sim {

namespace {

constexpr std::uint64_t kSynthSalt = 0x73796e7468ULL;  // "synth"
constexpr int kParentTries = 8;

// How much more often requests of this length are continued than they occur: the ratio of the
// two frequencies in the length's bucket, 0 when the length was never seen.
double frequency_ratio(const LogHistogram& part, const LogHistogram& all, std::uint64_t value) {
    const std::uint64_t all_count = all.bucket_count(value);
    if (all_count == 0 || part.count() == 0) return 0;
    return (static_cast<double>(part.bucket_count(value)) / static_cast<double>(part.count())) /
           (static_cast<double>(all_count) / static_cast<double>(all.count()));
}

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

}  // namespace

TraceSynthesizer::TraceSynthesizer(const TraceStats& fitted, const SynthOptions& options)
    : rng_(hash_combine(options.seed, kSynthSalt)), source_block_tokens_(fitted.block_tokens),
      block_tokens_(options.block_tokens == 0 ? fitted.block_tokens : options.block_tokens),
      weight_fresh_(fitted.sharing.fresh), weight_continuing_(fitted.sharing.continuing),
      weight_branching_(fitted.sharing.branching), full_blocks_(fitted.full_blocks),
      continue_parent_blocks_(fitted.sharing.continue_parent_blocks), gap_ns_(fitted.arrival_gap_ns),
      output_length_(fitted.output_length), fresh_input_tokens_(fitted.sharing.fresh_input_tokens),
      continue_distance_(fitted.sharing.continue_distance), continue_new_tokens_(fitted.sharing.continue_new_tokens),
      branch_distance_(fitted.sharing.branch_distance), branch_shared_blocks_(fitted.sharing.branch_shared_blocks),
      branch_new_tokens_(fitted.sharing.branch_new_tokens) {
    KV_ASSERT(fitted.requests > 0, "a synthesizer is fitted to at least one request");
    KV_ASSERT(source_block_tokens_ > 0 && block_tokens_ > 0, "blocks need a size");
    // Keep prompts within the fitted maximum, and small enough that scaling to the output block
    // size stays within kInputTokensMax.
    const std::uint64_t blocks_allowed = kInputTokensMax / block_tokens_;
    input_tokens_max_ = std::min<std::uint64_t>(fitted.input_length.max(), blocks_allowed * source_block_tokens_);
    for (const LogHistogram::Bucket& bucket : full_blocks_.nonempty_buckets())
        continue_ratio_max_ =
            std::max(continue_ratio_max_, frequency_ratio(continue_parent_blocks_, full_blocks_, bucket.low));
}

const TraceSynthesizer::Recent* TraceSynthesizer::pick_parent(const HistogramSampler& distance) {
    const std::uint64_t available = std::min(produced_, kSynthWindowRequests);
    if (available == 0) return nullptr;
    std::uint64_t back = distance.sample(rng_);
    // A fitted distance that reaches before the first request (or out of the window) picks a
    // parent uniformly instead, so short traces keep the fitted share of continuations.
    if (back == 0 || back > available) back = 1 + rng_.below(available);
    return &recent_[static_cast<std::size_t>((produced_ - back) % kSynthWindowRequests)];
}

// Continued requests are not a uniform sample: in conversation traces, short requests are
// continued more often than long ones. A parent drawn at the fitted distance is therefore kept
// with probability proportional to that ratio for its length (thinning), redrawn otherwise.
std::uint32_t TraceSynthesizer::continue_accept_ppm(std::uint32_t full_blocks) const {
    if (continue_ratio_max_ <= 0) return 1'000'000;
    const double ratio = frequency_ratio(continue_parent_blocks_, full_blocks_, full_blocks) / continue_ratio_max_;
    return static_cast<std::uint32_t>(std::min(1.0, ratio) * 1e6);
}

const TraceSynthesizer::Recent* TraceSynthesizer::pick_continued_parent() {
    const Recent* parent = nullptr;
    for (int attempt = 0; attempt < kParentTries; ++attempt) {
        parent = pick_parent(continue_distance_);
        if (parent == nullptr || rng_.chance_ppm(continue_accept_ppm(parent->full_blocks))) break;
    }
    return parent;
}

// A branching request shares a prefix of its parent, so in the source its parent always had more
// whole blocks than were shared. The parent is redrawn (up to kParentTries) until it is that long.
const TraceSynthesizer::Recent* TraceSynthesizer::pick_branched_parent(std::uint64_t shared_blocks) {
    const Recent* parent = nullptr;
    for (int attempt = 0; attempt < kParentTries; ++attempt) {
        parent = pick_parent(branch_distance_);
        if (parent == nullptr || parent->full_blocks > shared_blocks) break;
    }
    return parent;
}

std::uint32_t TraceSynthesizer::scaled_input(std::uint64_t source_tokens) const {
    if (block_tokens_ == source_block_tokens_ || source_tokens == 0) return static_cast<std::uint32_t>(source_tokens);
    // Scale block by block so that the output has exactly as many blocks as the source request.
    const std::uint64_t blocks = ceil_div(source_tokens, source_block_tokens_);
    const std::uint64_t last_fill = source_tokens - (blocks - 1) * source_block_tokens_;
    return static_cast<std::uint32_t>((blocks - 1) * block_tokens_ +
                                      ceil_div(last_fill * block_tokens_, source_block_tokens_));
}

std::uint32_t TraceSynthesizer::scaled_output(std::uint64_t source_tokens) const {
    const std::uint64_t scaled = ceil_div(source_tokens * block_tokens_, source_block_tokens_);
    return static_cast<std::uint32_t>(std::min<std::uint64_t>(scaled, kOutputTokensMax));
}

void TraceSynthesizer::next(TraceRecord& out) {
    if (produced_ > 0) {
        const std::uint64_t gap = gap_ns_.sample(rng_);
        // Past the readers' bound the trace could not be read back (and the clock would wrap).
        if (gap > kArrivalMaxNs - clock_ns_)
            throw InputError("", "--requests",
                             "request " + std::to_string(produced_ + 1) +
                                 " of the synthetic trace would arrive more than " +
                                 std::to_string(kArrivalMaxNs / 1'000'000'000) +
                                 " s after the first (the most a trace may span), drawing the source's arrival gaps; "
                                 "expected fewer requests or a source with shorter gaps");
        clock_ns_ += gap;
    }
    const std::uint64_t pick = rng_.below(weight_fresh_ + weight_continuing_ + weight_branching_);
    const Recent* parent = nullptr;
    std::uint64_t shared_blocks = 0;
    std::uint64_t new_tokens = 0;
    if (pick >= weight_fresh_ + weight_continuing_) {
        shared_blocks = branch_shared_blocks_.sample(rng_);
        parent = pick_branched_parent(shared_blocks);
        if (parent != nullptr) {
            shared_blocks = std::min<std::uint64_t>(shared_blocks, parent->full_blocks);
            new_tokens = branch_new_tokens_.sample(rng_);
        }
    } else if (pick >= weight_fresh_) {
        parent = pick_continued_parent();
        if (parent != nullptr) {
            shared_blocks = parent->full_blocks;
            new_tokens = continue_new_tokens_.sample(rng_);
        }
    }
    // The fresh class, and any request that found no parent yet, shares nothing.
    if (parent == nullptr) new_tokens = fresh_input_tokens_.sample(rng_);

    shared_blocks = std::min(shared_blocks, input_tokens_max_ / source_block_tokens_);
    // A prompt has at least one token, as every trace reader requires: a continuation of a parent
    // shorter than one block that draws no new tokens would otherwise be empty.
    const std::uint64_t input =
        std::max<std::uint64_t>(1, std::min(shared_blocks * source_block_tokens_ + new_tokens, input_tokens_max_));
    const auto blocks = static_cast<std::size_t>(ceil_div(input, source_block_tokens_));
    KV_ASSERT(shared_blocks <= blocks, "the shared prefix fits in the prompt");
    scratch_ids_.clear();
    if (parent != nullptr)
        scratch_ids_.assign(parent->block_ids.begin(),
                            parent->block_ids.begin() + static_cast<std::ptrdiff_t>(shared_blocks));
    while (scratch_ids_.size() < blocks) scratch_ids_.push_back(next_block_id_++);

    out.arrival_ns = clock_ns_;
    out.input_tokens = scaled_input(input);
    out.output_tokens = scaled_output(output_length_.sample(rng_));
    out.block_tokens = block_tokens_;
    out.block_ids = scratch_ids_;
    out.line = produced_ + 1;
    KV_ASSERT_EQ(out.block_ids.size(), static_cast<std::size_t>(blocks_for(out.input_tokens, block_tokens_)),
                 "one id per output block");

    // The parent may live in the slot this request takes (or move when the ring grows), so the
    // ring is written only after the parent's ids were copied. The slot gets a vector of exactly
    // this request's size: reused buffers would drift towards the longest prompt's capacity.
    if (recent_.size() < kSynthWindowRequests) recent_.emplace_back();
    Recent& slot = recent_[static_cast<std::size_t>(produced_ % kSynthWindowRequests)];
    slot.block_ids = std::vector<std::uint64_t>(scratch_ids_.begin(), scratch_ids_.end());
    slot.full_blocks = static_cast<std::uint32_t>(input / source_block_tokens_);
    ++produced_;
}

}  // namespace kvcheck::sim
