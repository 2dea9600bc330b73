// Schedules shared by the CPU and CUDA replay tests: clean resumes of the toy and DeepSeek-V4
// presets over fixed-seed prompts.
#pragma once

#include <cstdint>
#include <vector>

#include "cuda_replay/clean_reads.hpp"
#include "cuda_replay/kernel_math.hpp"
#include "model/core.hpp"
#include "model/preset.hpp"

namespace kvcheck::replay::fixtures {

inline std::vector<int> random_tokens(std::uint64_t seed, int count) {
    Rng rng(seed);
    std::vector<int> out;
    for (int i = 0; i < count; ++i) out.push_back(static_cast<int>(rng.below(kVocab)));
    return out;
}

// Toy: 16-token blocks, c4 with 64-token segments, SWA 32, an indexer (top 4) over c1, a linear
// state. A 160-token prompt resumed at 96 has a compressed segment, a tail, and 6 index blocks.
inline Schedule toy(int resume_len, int prompt = 160) {
    return clean_schedule(*model::find_preset("toy"), random_tokens(7, prompt), resume_len, 3, 48, 4);
}

// DeepSeek-V4: c4 (256-token segments), c128 (1024-token segments: only a tail here), SWA 128
// and an indexer over c4 with 256-token blocks.
inline Schedule deepseek(int resume_len) {
    return clean_schedule(*model::find_preset("deepseek-v4"), random_tokens(11, 560), resume_len, 5, 200, 3);
}

}  // namespace kvcheck::replay::fixtures
