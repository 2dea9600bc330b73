// The Azure prefix-sharing model: draws each request's shared prefix with integer arithmetic only,
// so the ids are identical on every platform for a given seed.
#include "sim/workload/sharing.hpp"

#include <algorithm>

namespace kvcheck::sim {

namespace {

constexpr std::uint64_t kPopularityScale = 1ULL << 32;
constexpr std::uint64_t kSharingSalt = 0x73686172696e67ULL;  // "sharing"

std::uint64_t integer_power(std::uint64_t base, std::uint32_t exponent) {
    std::uint64_t result = 1;
    for (std::uint32_t i = 0; i < exponent; ++i) result *= base;
    return result;
}

}  // namespace

PrefixSharing::PrefixSharing(const AzureSharing& params, std::uint32_t block_tokens, std::uint64_t seed)
    : params_(params), block_tokens_(block_tokens), rng_(hash_combine(seed, kSharingSalt)) {
    KV_ASSERT(block_tokens_ > 0, "blocks need a size");
    KV_ASSERT(params_.prefix_blocks_min >= 1 && params_.prefix_blocks_min <= params_.prefix_blocks_max,
              "shared prefixes need 1 <= prefix_blocks_min <= prefix_blocks_max");
    KV_ASSERT(params_.zipf_power <= 3, "zipf_power above 3 overflows the integer weights");
    KV_ASSERT(params_.unshared_ppm <= 1'000'000, "unshared_ppm is a fraction of a million");
    const std::uint32_t spread = params_.prefix_blocks_max - params_.prefix_blocks_min + 1;
    std::uint64_t running = 0;
    for (std::uint32_t rank = 0; rank < params_.prefixes; ++rank) {
        prefix_blocks_.push_back(params_.prefix_blocks_min + static_cast<std::uint32_t>(rng_.below(spread)));
        // Integer Zipf weight: 2^32 / (rank+1)^power, at least 1 so every prefix can be drawn.
        running += std::max<std::uint64_t>(1, kPopularityScale / integer_power(rank + 1, params_.zipf_power));
        popularity_cumulative_.push_back(running);
    }
    next_unique_id_ = static_cast<std::uint64_t>(params_.prefixes) * params_.prefix_blocks_max;
}

void PrefixSharing::assign(std::uint32_t input_tokens, std::vector<std::uint64_t>& ids) {
    ids.clear();
    const std::uint32_t blocks = (input_tokens + block_tokens_ - 1) / block_tokens_;
    std::uint32_t shared = 0;
    std::uint64_t prefix = 0;
    // Both draws happen for every request so that a request's ids depend only on the seed and its
    // position, not on the lengths of the requests before it.
    const bool unshared = rng_.chance_ppm(params_.unshared_ppm);
    const std::uint64_t pick = rng_.below(popularity_cumulative_.empty() ? 0 : popularity_cumulative_.back());
    if (!unshared && !popularity_cumulative_.empty()) {
        const auto it = std::upper_bound(popularity_cumulative_.begin(), popularity_cumulative_.end(), pick);
        prefix = static_cast<std::uint64_t>(it - popularity_cumulative_.begin());
        // Only whole blocks are shared: a partial last block holds this request's own tokens.
        shared = std::min(prefix_blocks_[prefix], input_tokens / block_tokens_);
    }
    for (std::uint32_t j = 0; j < shared; ++j) ids.push_back(prefix * params_.prefix_blocks_max + j);
    while (ids.size() < blocks) ids.push_back(next_unique_id_++);
    KV_ASSERT_EQ(ids.size(), static_cast<std::size_t>(blocks), "one id per block");
}

}  // namespace kvcheck::sim
