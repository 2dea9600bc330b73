// The CPU backend's fast path (cpu_backend.cpp's file comment says how it keeps the scalar
// path's bits): keys mirrored feature-major, attention splits, and the kernels that run
// independent results in SIMD lanes. Defined in cpu_lanes.cpp, compiled for AVX-512, AVX2 and
// baseline x86-64 and picked at run time.
#pragma once

#include <cstddef>
#include <vector>

#include "cuda_replay/kernel_math.hpp"

namespace kvcheck::replay::lanes {

// Keys mirrored feature-major: column(f)[r] is feature f of row r. kSplitEntries zero columns
// follow the last row, so a split's 64 lanes can always be loaded whole.
struct KeysT {
    std::vector<float> data;
    std::size_t stride = 0;

    void reset(std::size_t rows) {
        stride = rows + kSplitEntries;
        data.assign(stride * kModel, 0.0f);
    }
    void put(int r, const float* k) {
        for (int f = 0; f < kModel; ++f)
            data[static_cast<std::size_t>(f) * stride + static_cast<std::size_t>(r)] = k[f];
    }
    void rebuild(const std::vector<float>& rows) {
        reset(rows.size() / kModel);
        for (std::size_t r = 0; r < rows.size() / kModel; ++r) put(static_cast<int>(r), rows.data() + r * kModel);
    }
    const float* column(int feature) const { return data.data() + static_cast<std::size_t>(feature) * stride; }
};

// Consecutive entries [row, row + n) of one array: transposed keys and row-major values.
struct Run {
    const KeysT* keys = nullptr;
    const float* values = nullptr;  // [row][kModel]
    int row = 0;
    int n = 0;
};

// One split: at most kSplitEntries entries from at most two runs (a full layer's split may span
// the last compressed entries and the first raw rows).
struct Split {
    Run part[2];
    int parts = 0;
    int n = 0;
};

// The splits of the entry list made of `a` followed by `b`, appended in split order.
void split_runs(const Run& a, const Run& b, std::vector<Split>& out);

// Partials of `count` splits for both heads: out[split * kHeads + head], with the widest vector
// width the CPU supports (KVCHECK_REPLAY_ISA=avx2 or baseline lowers it; every width gives the
// same bits).
void partials_of(const float* q, const Split* splits, int count, Partial* out);

// q, k, v and qi of `count` tokens: wt holds the four matrices transposed, [i][matrix * 32 + j].
void project_tokens(const float* wt, const float* h, int count, float* q, float* k, float* v, float* qi);

// h[t][j] += dot(wo[j], a[t], kModel), with wot = wo transposed.
void output_tokens(const float* wot, const float* a, int count, float* h);

// logits[j] = dot(u[j], xn, kModel), with ut = u transposed.
void logits_of(const float* ut, const float* xn, float* logits);

// [rows][kModel] -> [kModel][rows], appended at column `offset` of a [kModel][width] matrix.
void transpose_into(const std::vector<float>& m, int rows, int width, int offset, std::vector<float>& out);

}  // namespace kvcheck::replay::lanes
