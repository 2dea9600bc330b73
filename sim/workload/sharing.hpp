// The seeded prefix-sharing model that gives block ids to traces without hash ids (Azure LLM 2023):
// a pool of shared prefixes (system prompts) with Zipf-like popularity, unique blocks after them.
#pragma once

#include <cstdint>
#include <vector>

#include "model/core.hpp"

namespace kvcheck::sim {

// Parameters of the sharing model; docs/traces.md explains each and why the defaults.
struct AzureSharing {
    std::uint32_t prefixes = 32;          // shared prefixes (system prompts) in the pool
    std::uint32_t prefix_blocks_min = 1;  // length of a shared prefix, in whole blocks
    std::uint32_t prefix_blocks_max = 8;
    std::uint32_t zipf_power = 1;          // popularity of rank r is proportional to 1/(r+1)^zipf_power
    std::uint32_t unshared_ppm = 200'000;  // requests that take no shared prefix, per million
};

// Assigns block ids request by request. Prefix p's block j has id p * prefix_blocks_max + j; every
// other block gets the next id from a counter starting above all prefix ids, so ids are
// prefix-chained like Mooncake's. The same seed and the same requests give the same ids.
class PrefixSharing {
public:
    PrefixSharing(const AzureSharing& params, std::uint32_t block_tokens, std::uint64_t seed);

    // Fills `ids` with ceil(input_tokens / block_tokens) ids for the next request.
    void assign(std::uint32_t input_tokens, std::vector<std::uint64_t>& ids);

    std::uint32_t prefix_blocks(std::uint32_t prefix) const { return prefix_blocks_.at(prefix); }

private:
    AzureSharing params_;
    std::uint32_t block_tokens_;
    Rng rng_;
    std::vector<std::uint32_t> prefix_blocks_;          // length of each pooled prefix
    std::vector<std::uint64_t> popularity_cumulative_;  // running sum of the Zipf weights by rank
    std::uint64_t next_unique_id_;
};

}  // namespace kvcheck::sim
